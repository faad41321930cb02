// SHA-256, hex, base64 and Ed25519 against published test vectors.
#include <gtest/gtest.h>
#include <nettle/eddsa.h>

#include "common/clock.h"
#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/sha256.h"

namespace warden {
namespace {

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(sha256("").hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256("abc").str(), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").hex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, StreamingEqualsOneShotAndIsReusable) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  Sha256 h;
  for (size_t i = 0; i < data.size(); i += 777) h.update(std::string_view(data).substr(i, 777));
  EXPECT_EQ(h.finish(), sha256(data));
  h.update("abc");  // finish() reset the state
  EXPECT_EQ(h.finish(), sha256("abc"));
}

TEST(Digest, ParsesOnlyTheCanonicalSpelling) {
  std::string hex = sha256("abc").hex();
  EXPECT_EQ(Digest::parse("sha256:" + hex)->hex(), hex);
  EXPECT_FALSE(Digest::parse(hex));                       // no prefix
  EXPECT_FALSE(Digest::parse("SHA256:" + hex));           // wrong prefix
  EXPECT_FALSE(Digest::parse("sha256:" + hex.substr(1)));  // short
  std::string upper = hex;
  upper[0] = 'B';
  EXPECT_FALSE(Digest::from_hex(upper));  // uppercase is not the spelling
  EXPECT_FALSE(Digest::from_bytes("short"));
}

TEST(Encoding, HexRoundTripAndStrictness) {
  EXPECT_EQ(to_hex(std::string_view("\x00\xff\x10", 3)), "00ff10");
  EXPECT_EQ(*from_hex("00ff10"), std::string("\x00\xff\x10", 3));
  EXPECT_FALSE(from_hex("0"));
  EXPECT_FALSE(from_hex("0g"));
  EXPECT_FALSE(from_hex("FF"));
}

TEST(Encoding, Base64Rfc4648Vectors) {
  std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                   {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                   {"foobar", "Zm9vYmFy"}};
  for (auto [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(std::string_view(plain)), encoded);
    EXPECT_EQ(*base64_decode(encoded), plain);
  }
  EXPECT_FALSE(base64_decode("Zg="));    // length
  EXPECT_FALSE(base64_decode("Zh=="));   // non-zero padding bits
  EXPECT_FALSE(base64_decode("Z=g="));   // padding in the middle
  EXPECT_FALSE(base64_decode("Zm9v\n"));  // stray byte
}

TEST(Ed25519, Rfc8032TestVector1) {
  auto seed = from_hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
  auto key = Ed25519PrivateKey::from_seed(*seed);
  ASSERT_TRUE(key);
  EXPECT_EQ(to_hex(key->public_key()), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  auto sig = key->sign("");
  ASSERT_TRUE(sig);
  EXPECT_EQ(to_hex(*sig),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
  std::string raw(reinterpret_cast<const char*>(sig->data()), sig->size());
  EXPECT_TRUE(ed25519_verify(key->public_key(), "", raw));
  raw[10] ^= 1;
  EXPECT_FALSE(ed25519_verify(key->public_key(), "", raw));
  EXPECT_FALSE(ed25519_verify(key->public_key(), "", raw.substr(1)));
}

TEST(Ed25519, Rfc8032TestVector2) {
  auto key = Ed25519PrivateKey::from_seed(*from_hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"));
  ASSERT_TRUE(key);
  EXPECT_EQ(to_hex(key->public_key()), "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  auto sig = key->sign("\x72");
  ASSERT_TRUE(sig);
  EXPECT_EQ(to_hex(*sig),
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
}

// A signature has one encoding: S plus the group order L verifies the same equation, and a
// verifier that took it would let anyone mint a second, different signature of a signed
// checkpoint (RFC 8032 5.1.7 requires S < L). Nor does a signature verify under another key
// or for another message.
TEST(Ed25519, AMalleatedOrMisdirectedSignatureIsRefused) {
  auto key = Ed25519PrivateKey::from_seed(std::string(32, '\x07'));
  auto other = Ed25519PrivateKey::from_seed(std::string(32, '\x08'));
  ASSERT_TRUE(key && other);
  auto sig = key->sign("checkpoint");
  ASSERT_TRUE(sig);
  std::string raw(reinterpret_cast<const char*>(sig->data()), sig->size());
  ASSERT_TRUE(ed25519_verify(key->public_key(), "checkpoint", raw));
  EXPECT_FALSE(ed25519_verify(key->public_key(), "checkpoint.", raw));
  EXPECT_FALSE(ed25519_verify(other->public_key(), "checkpoint", raw));
  // L, little-endian, added to S (bytes 32..63) with carry: S < L < 2^253, so no overflow.
  const std::string order = *from_hex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
  std::string malleated = raw;
  unsigned carry = 0;
  for (size_t i = 0; i < 32; ++i) {
    unsigned sum = static_cast<uint8_t>(malleated[32 + i]) + static_cast<uint8_t>(order[i]) + carry;
    malleated[32 + i] = static_cast<char>(sum & 0xff);
    carry = sum >> 8;
  }
  ASSERT_EQ(carry, 0u);
  ASSERT_NE(malleated, raw);
  EXPECT_FALSE(ed25519_verify(key->public_key(), "checkpoint", malleated));
}

// The curve's eight points of small order, each spelled as a public key (x's sign in the top
// bit), and the two non-canonical spellings p and p + 1.
std::vector<std::string> small_order_keys() {
  std::vector<std::string> hex = {
      "0100000000000000000000000000000000000000000000000000000000000000",  // the identity
      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // order 2: y = p - 1
      "0000000000000000000000000000000000000000000000000000000000000000",  // order 4: y = 0
      "0000000000000000000000000000000000000000000000000000000000000080",
      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  // order 8
      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
      "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // p
      "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // p + 1
  };
  std::vector<std::string> raw;
  for (const auto& h : hex) raw.push_back(*from_hex(h));
  return raw;
}

// Under a key of small order the verification equation [S]B = R + [k]A holds for signatures no
// secret made: with A the identity, R = the identity and S = 0 verify every message, and with
// A of order 2, 4 or 8 the same signature verifies one message in 2, 4 or 8. A runner enrolled
// with such a key would sign every result at once, and a verifier key of small order would let
// anyone sign checkpoints. Nettle checks the equation only (the raw call below accepts the
// forgery); Warden refuses the keys.
TEST(Ed25519, AKeyOfSmallOrderVerifiesNothing) {
  std::string forged(64, '\0');
  forged[0] = 1;  // R = the identity, S = 0
  Ed25519PublicKey identity{};
  identity[0] = 1;
  EXPECT_EQ(ed25519_sha512_verify(identity.data(), 4, reinterpret_cast<const uint8_t*>("any "),
                                  reinterpret_cast<const uint8_t*>(forged.data())),
            1)
      << "the forgery this test guards against";
  for (const auto& raw : small_order_keys()) {
    Ed25519PublicKey key{};
    std::copy(raw.begin(), raw.end(), key.begin());
    EXPECT_TRUE(ed25519_small_order(key)) << to_hex(raw);
    for (int i = 0; i < 64; ++i) {
      // Each small-order point as R too: what a forger under a key of order 8 would try.
      for (const auto& r : small_order_keys()) {
        std::string sig = r + std::string(32, '\0');
        EXPECT_FALSE(ed25519_verify(key, "message " + std::to_string(i), sig)) << to_hex(raw) << " " << i;
      }
    }
  }
  // No honest key is one: a generated key is a multiple of the base point, of the group's
  // prime order.
  for (int i = 0; i < 200; ++i) {
    auto key = Ed25519PrivateKey::from_seed(std::string(31, '\x5a') + static_cast<char>(i));
    ASSERT_TRUE(key);
    EXPECT_FALSE(ed25519_small_order(key->public_key())) << i;
  }
}

TEST(Ed25519, AKeyMovedFromNoLongerSigns) {
  auto key = Ed25519PrivateKey::from_seed(std::string(32, '\x09'));
  ASSERT_TRUE(key);
  Ed25519PrivateKey taken = std::move(*key);
  EXPECT_FALSE(key->sign("m"));
  EXPECT_EQ(key->seed(), std::string(32, '\0'));
  auto sig = taken.sign("m");
  ASSERT_TRUE(sig);
  EXPECT_TRUE(ed25519_verify(taken.public_key(), "m", std::string_view(reinterpret_cast<const char*>(sig->data()), sig->size())));
}

TEST(Ed25519, GeneratedKeysRoundTripThroughTheirSeed) {
  auto key = Ed25519PrivateKey::generate();
  ASSERT_TRUE(key);
  auto again = Ed25519PrivateKey::from_seed(key->seed());
  ASSERT_TRUE(again);
  EXPECT_EQ(key->public_key(), again->public_key());
  auto sig = key->sign("message");
  EXPECT_TRUE(ed25519_verify(again->public_key(), "message",
                             std::string_view(reinterpret_cast<const char*>(sig->data()), sig->size())));
}

TEST(Clock, LogicalClockAndSequentialIdsAreDeterministic) {
  LogicalClock a(100, 5), b(100, 5);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.now_ms(), b.now_ms());
  EXPECT_EQ(a.now_ms(), 115);
  SequentialIdSource ids;
  EXPECT_EQ(ids.next_id("run"), "run-000001");
  EXPECT_EQ(ids.next_id("run"), "run-000002");
  RandomIdSource random;
  EXPECT_NE(random.next_id("run"), random.next_id("run"));
}

}  // namespace
}  // namespace warden
