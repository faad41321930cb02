// Signed notes, note keys and tlog-checkpoints, against golang.org/x/mod/sumdb/note's
// published test vectors and the C2SP specs.
#include "ledger/note.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/encoding.h"
#include "common/sha256.h"
#include "ledger/checkpoint.h"

namespace warden {
namespace {

constexpr const char* kPeterSigner = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
constexpr const char* kPeterVerifier = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
constexpr const char* kEnochVerifier = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
constexpr const char* kText =
    "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
constexpr const char* kPeterSig =
    "\xE2\x80\x94 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
constexpr const char* kEnochSig =
    "\xE2\x80\x94 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

TEST(NoteKeys, ParseTheGoVectors) {
  auto signer = NoteSigner::parse(kPeterSigner);
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_EQ(signer->name(), "PeterNeumann");
  EXPECT_EQ(signer->key_hash(), 0xc74f20a3u);
  EXPECT_EQ(signer->encoded(), kPeterSigner);
  EXPECT_EQ(signer->verifier().encoded(), kPeterVerifier);
  auto verifier = NoteVerifier::parse(kPeterVerifier);
  ASSERT_TRUE(verifier);
  EXPECT_EQ(verifier->encoded(), kPeterVerifier);
}

TEST(NoteKeys, RefuseEveryManglingOfAVerifierKey) {
  std::string key = kPeterVerifier;
  for (size_t i = 0; i < key.size(); ++i) {
    std::string bad = key;
    bad[i] = static_cast<char>(bad[i] + 1);
    EXPECT_FALSE(NoteVerifier::parse(bad)) << bad;
    EXPECT_FALSE(NoteVerifier::parse(key.substr(0, i))) << i;
  }
  EXPECT_FALSE(NoteVerifier::parse("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="));
  EXPECT_FALSE(NoteVerifier::parse("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"));
}

// A verifier key of small order, with a key hash that matches: under the identity, one signature
// anyone can write (R = the identity, S = 0) would verify every checkpoint, so a replay against
// such a key would agree with any ledger. Refused when parsed, with the reason.
TEST(NoteKeys, RefuseAVerifierKeyOfSmallOrder) {
  std::string raw(1, '\x01');  // the Ed25519 algorithm byte
  raw += '\x01';
  raw += std::string(31, '\0');  // the identity point
  const std::string name = "forger";
  const Digest h = sha256(name + "\n" + raw);
  char hash[9];
  std::snprintf(hash, sizeof hash, "%02x%02x%02x%02x", h.bytes()[0], h.bytes()[1], h.bytes()[2], h.bytes()[3]);
  auto parsed = NoteVerifier::parse(name + "+" + hash + "+" + base64_encode(raw));
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("small order"), std::string::npos) << parsed.error().message;
  // The same spelling with an honest key parses: only the key's order was refused.
  const std::string honest = std::string(1, '\x01') + *from_hex("1a5cd907143c384c41e830c5bce12aa8817ec5649aaabf2c31388b35b2d744d6");
  const Digest hh = sha256("PeterNeumann\n" + honest);
  std::snprintf(hash, sizeof hash, "%02x%02x%02x%02x", hh.bytes()[0], hh.bytes()[1], hh.bytes()[2], hh.bytes()[3]);
  EXPECT_TRUE(NoteVerifier::parse("PeterNeumann+" + std::string(hash) + "+" + base64_encode(honest)));
}

TEST(NoteKeys, RefuseEveryManglingOfASignerKey) {
  std::string key = kPeterSigner;
  for (size_t i = 0; i < key.size(); ++i) {
    std::string bad = key;
    bad[i] = static_cast<char>(bad[i] + 1);
    EXPECT_FALSE(NoteSigner::parse(bad)) << bad;
  }
}

TEST(NoteKeys, GeneratedKeysAreSelfConsistent) {
  auto signer = NoteSigner::generate("example.com/log");
  ASSERT_TRUE(signer);
  auto reparsed = NoteSigner::parse(signer->encoded());
  ASSERT_TRUE(reparsed);
  EXPECT_EQ(reparsed->verifier().encoded(), signer->verifier().encoded());
  EXPECT_FALSE(NoteSigner::generate("has space"));
  EXPECT_FALSE(NoteSigner::generate("has+plus"));
  EXPECT_FALSE(NoteSigner::generate(""));
}

TEST(Note, SignIsByteIdenticalToGo) {
  auto signer = NoteSigner::parse(kPeterSigner);
  auto out = sign_note(kText, *signer);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, std::string(kText) + "\n" + kPeterSig);
  // An existing signature by the same key is replaced, others are kept in front.
  auto note = parse_note(std::string(kText) + "\n" + kEnochSig + kPeterSig);
  ASSERT_TRUE(note);
  auto resigned = sign_note(note->text, *signer, note->signatures);
  EXPECT_EQ(*resigned, std::string(kText) + "\n" + kEnochSig + kPeterSig);
  EXPECT_FALSE(sign_note("abc", *signer));  // no final newline
}

TEST(Note, OpenVerifiesKnownKeysAndIgnoresUnknownOnes) {
  auto peter = *NoteVerifier::parse(kPeterVerifier);
  auto enoch = *NoteVerifier::parse(kEnochVerifier);
  std::string msg = std::string(kText) + "\n" + kPeterSig + kEnochSig;
  auto one = open_note(msg, {peter});
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->text, kText);
  ASSERT_EQ(one->verified.size(), 1u);
  ASSERT_EQ(one->unverified.size(), 1u);
  EXPECT_EQ(one->unverified[0].name, "EnochRoot");
  auto both = open_note(msg, {peter, enoch});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->verified.size(), 2u);
  auto none = open_note(msg, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::verification_failed);
  auto ambiguous = open_note(std::string(kText) + "\n" + kEnochSig, {enoch, peter, enoch});
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find("ambiguous key EnochRoot+af0cfe78"), std::string::npos);
}

TEST(Note, OpenRejectsBadSignaturesAndMalformedNotes) {
  auto peter = *NoteVerifier::parse(kPeterVerifier);
  std::string sig = kPeterSig;
  std::string bad = std::string(kText) + "\n" + sig.substr(0, 60) + "ABCD" + sig.substr(60);
  auto opened = open_note(bad, {peter});
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("invalid signature for key PeterNeumann+c74f20a3"), std::string::npos);
  std::string malformed[] = {
      kText,
      std::string(kText) + "\n",
      std::string(kText) + "\n" + sig.substr(0, sig.size() - 1),
      "\x01" + std::string(kText) + "\n" + sig,
      "\xff" + std::string(kText) + "\n" + sig,
      std::string(kText) + "\n\xE2\x80\x94 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
      std::string(kText) + "\n" + sig + "Unexpected line.\n",
  };
  for (const auto& m : malformed) EXPECT_FALSE(open_note(m, {peter})) << m;
  std::string many = std::string(kText) + "\n";
  for (int i = 0; i < 101; ++i) many += sig;
  EXPECT_FALSE(open_note(many, {peter}));
}

TEST(Checkpoint, BodyRoundTripsAndRefusesMalformedText) {
  Checkpoint cp{"example.com/behind-the-sofa", 20852163, {}, {}};
  auto root = base64_decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=");
  cp.root = *Digest::from_bytes(*root);
  std::string body = cp.body();
  EXPECT_EQ(body, "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n");
  auto parsed = Checkpoint::parse_body(body + "ext line\n");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->size, 20852163u);
  EXPECT_EQ(parsed->root, cp.root);
  EXPECT_EQ(parsed->extensions, std::vector<std::string>{"ext line"});
  EXPECT_FALSE(Checkpoint::parse_body("origin\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"));
  EXPECT_FALSE(Checkpoint::parse_body("origin\n12\nAAAA\n"));
  EXPECT_FALSE(Checkpoint::parse_body("origin\n12\n"));
  EXPECT_FALSE(Checkpoint::parse_body("origin\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"));
  EXPECT_TRUE(Checkpoint::parse_body("origin\n0\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"));
}

// Checkpoints as sum.golang.org (the Go checksum database) served them, with its published
// key: Warden must read another log's checkpoints, not only its own.
TEST(Checkpoint, VerifiesRealGoChecksumDatabaseCheckpoints) {
  auto sumdb = NoteVerifier::parse("sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8");
  ASSERT_TRUE(sumdb) << sumdb.error().message;
  struct Served {
    uint64_t size;
    const char* root;
    const char* sig;
  };
  const Served served[] = {
      {31700353, "qINS1GRFhWHwdkUeqLEoP4yEMkTBBzxBkGwGQlVlVcs=",
       "Az3grnmrIUEDFqHzAElIQCPNoRFRAAdFo47fooyWKMHb89k11GJh5zHIfNCOBmwn/C3YI8oW9/C8DJ87F61QqspBYwM="},
      {65209736, "5+uGFjx6xBZG8ip1+wi77v+grwbhhukIrxEUS8PXvRo=",
       "Az3grnbssgK7ubgFX36gVETtNv0U23qxyAhAMai2QUfeGa3nB/akvkMdlUErfcZz7l/R3cVtYspg3dxXABkGZZKdsQ8="},
      {3784599, "7uvxIZ67TZygcq/AehTD8iHYt81Ih+Zl2Y7vXZbfszQ=",
       "Az3grn972wXskjQrsZhVGc93fTU2uOsmSTiId1Wn1lxDCup5z4ggl1/4gaUqOkMa6cMbYvjB7hn7yemNr7Zqanol/go="},
  };
  for (const auto& s : served) {
    std::string body = "go.sum database tree\n" + std::to_string(s.size) + "\n" + s.root + "\n";
    std::string note = body + "\n\xE2\x80\x94 sum.golang.org " + s.sig + "\n";
    auto opened = open_note(note, {*sumdb});
    ASSERT_TRUE(opened) << s.size << ": " << opened.error().message;
    auto cp = Checkpoint::parse_body(opened->text);
    ASSERT_TRUE(cp);
    EXPECT_EQ(cp->origin, "go.sum database tree");
    EXPECT_EQ(cp->size, s.size);
    std::string forged = note;
    forged.replace(forged.find(std::to_string(s.size)), 1, "9");
    EXPECT_FALSE(open_note(forged, {*sumdb}));
  }
}

}  // namespace
}  // namespace warden
