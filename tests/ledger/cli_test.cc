// End-to-end flows through the `warden` binary: keys, proofs fed from one command into the
// verifier of another, checkpoints, the Go sumdb/note and RFC 6962 known answers, help and
// usage errors.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "ledger/note.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr int kVerificationFailed = 1, kUsage = 2;

std::string join(const nlohmann::json& hashes) {
  std::string out;
  for (const auto& h : hashes) out += (out.empty() ? "" : ",") + h.get<std::string>();
  return out;
}

// The same 64-hex hash with its last digit changed.
std::string altered(std::string hex) {
  hex.back() = hex.back() == '0' ? '1' : '0';
  return hex;
}

// A ledger of kRecords records made through the CLI, with its verifier key at hand.
class Cli : public ::testing::Test {
 protected:
  static constexpr int kRecords = 7;

  void SetUp() override {
    auto init = warden({"ledger", "init", dir_.string(), "--origin", "example.com/warden/cli", "--json"});
    ASSERT_TRUE(init.exited_with(0)) << describe(init);
    vkey_ = stdout_json(init)["verifier_key"];
    write_file(tmp_ / "verifier.key", vkey_ + "\n");
    for (int i = 0; i < kRecords; ++i) {
      write_file(tmp_ / "payload.json", R"({"step":)" + std::to_string(i) + "}");
      auto r = warden({"ledger", "append", dir_.string(), "--kind", "commit", "--payload", path("payload.json"), "--json"});
      ASSERT_TRUE(r.exited_with(0)) << describe(r);
      auto json = stdout_json(r);
      ASSERT_EQ(json["seq"], i);
      hashes_.push_back(json["hash"]);
    }
  }

  std::string path(const char* name) const { return (tmp_ / name).string(); }

  ProcessResult verify_inclusion(const nlohmann::json& p, const std::string& root) {
    return warden({"merkle", "verify-inclusion", "--leaf-hash", p["leaf_hash"], "--index",
                   std::to_string(p["index"].get<uint64_t>()), "--size", std::to_string(p["size"].get<uint64_t>()),
                   "--root", root, "--proof=" + join(p["proof"])});
  }

  ProcessResult verify_consistency(const nlohmann::json& p, const std::string& root1, const std::string& root2) {
    return warden({"merkle", "verify-consistency", "--size1", std::to_string(p["size1"].get<uint64_t>()), "--size2",
                   std::to_string(p["size2"].get<uint64_t>()), "--root1", root1, "--root2", root2,
                   "--proof=" + join(p["proof"])});
  }

  TempDir tmp_;
  fs::path dir_ = tmp_ / "ledger";
  std::string vkey_;
  std::vector<std::string> hashes_;  // as `ledger append` printed them
};

TEST(CliKeys, GeneratePrintsASignerAndItsVerifier) {
  auto r = warden({"key", "generate", "example.com/log"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto lines = complete_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(lines[0].starts_with("PRIVATE+KEY+example.com/log+")) << lines[0];
  EXPECT_TRUE(lines[1].starts_with("example.com/log+")) << lines[1];
  // The second line is the first one's verifier, not just a well-formed string.
  auto signer = NoteSigner::parse(lines[0]);
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_EQ(signer->verifier().encoded(), lines[1]);
  // Two runs, two keys.
  auto again = warden({"key", "generate", "example.com/log"});
  EXPECT_NE(complete_lines(again.out).at(0), lines[0]);
}

TEST_F(Cli, InclusionProofsFromTheLedgerVerifyAndATamperedRootDoesNot) {
  auto root = stdout_json(warden({"ledger", "show", dir_.string(), "--json"}))["root"].get<std::string>();
  for (int seq : {0, 3, kRecords - 1}) {
    SCOPED_TRACE("seq " + std::to_string(seq));
    auto proved = warden({"ledger", "prove", dir_.string(), std::to_string(seq), "--json"});
    ASSERT_TRUE(proved.exited_with(0)) << describe(proved);
    auto p = stdout_json(proved);
    EXPECT_EQ(p["leaf_hash"], hashes_[seq]);
    EXPECT_EQ(p["root"], root);
    EXPECT_EQ(p["size"], kRecords);
    auto ok = verify_inclusion(p, p["root"]);
    EXPECT_TRUE(ok.exited_with(0)) << describe(ok);
    auto bad = verify_inclusion(p, altered(p["root"]));
    EXPECT_TRUE(bad.exited_with(kVerificationFailed)) << describe(bad);
    EXPECT_NE(bad.out.find("FAILED"), std::string::npos) << bad.out;
  }
  // Against an older tree size, and with a leaf that is not in the tree.
  auto old = stdout_json(warden({"ledger", "prove", dir_.string(), "2", "--size", "5", "--json"}));
  EXPECT_EQ(old["size"], 5);
  EXPECT_TRUE(verify_inclusion(old, old["root"]).exited_with(0));
  old["leaf_hash"] = hashes_[3];
  EXPECT_TRUE(verify_inclusion(old, old["root"]).exited_with(kVerificationFailed));
}

TEST_F(Cli, ConsistencyProofsFromTheLedgerVerifyAndTamperedRootsDoNot) {
  auto root = stdout_json(warden({"ledger", "show", dir_.string(), "--json"}))["root"];
  for (auto [m, n] : {std::pair{1, kRecords}, std::pair{3, kRecords}, std::pair{4, 6}}) {
    SCOPED_TRACE(std::to_string(m) + " -> " + std::to_string(n));
    auto r = warden({"ledger", "consistency", dir_.string(), std::to_string(m), std::to_string(n), "--json"});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    auto p = stdout_json(r);
    if (n == kRecords) {
      EXPECT_EQ(p["root2"], root);
    }
    auto ok = verify_consistency(p, p["root1"], p["root2"]);
    EXPECT_TRUE(ok.exited_with(0)) << describe(ok);
    EXPECT_TRUE(verify_consistency(p, altered(p["root1"]), p["root2"]).exited_with(kVerificationFailed));
    EXPECT_TRUE(verify_consistency(p, p["root1"], altered(p["root2"])).exited_with(kVerificationFailed));
  }
}

TEST_F(Cli, CheckpointVerifiesWithTheLedgerKeyOnly) {
  auto cp = warden({"ledger", "checkpoint", dir_.string()});
  ASSERT_TRUE(cp.exited_with(0)) << describe(cp);
  write_file(tmp_ / "checkpoint.note", cp.out);
  EXPECT_TRUE(cp.out.starts_with("example.com/warden/cli\n" + std::to_string(kRecords) + "\n")) << cp.out;

  // FILE before --key: see KeyOptionDoesNotSwallowTheFollowingPositional for the other order.
  auto ok = warden({"checkpoint", "verify", path("checkpoint.note"), "--key", path("verifier.key"), "--json"});
  ASSERT_TRUE(ok.exited_with(0)) << describe(ok);
  auto json = stdout_json(ok);
  EXPECT_EQ(json["size"], kRecords);
  EXPECT_EQ(json["origin"], "example.com/warden/cli");
  EXPECT_EQ(json["root"], stdout_json(warden({"ledger", "show", dir_.string(), "--json"}))["root"]);

  auto other = warden({"key", "generate", "example.com/warden/cli"});
  ASSERT_TRUE(other.exited_with(0)) << describe(other);
  auto wrong = warden({"checkpoint", "verify", path("checkpoint.note"), "--key", complete_lines(other.out).at(1)});
  EXPECT_TRUE(wrong.exited_with(kVerificationFailed)) << describe(wrong);
  EXPECT_NE(wrong.err.find("no verifiable signatures"), std::string::npos) << wrong.err;

  // The stored checkpoint is the one printed, and the ledger verifies with it.
  auto shown = stdout_json(warden({"ledger", "show", dir_.string(), "--json"}));
  EXPECT_EQ(shown["checkpoint_sizes"], nlohmann::json::array({kRecords}));
  auto verified = warden({"ledger", "verify", dir_.string(), "--key", path("verifier.key"), "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  EXPECT_EQ(stdout_json(verified)["checkpoints"], 1);
}

// `--key KEY FILE --json` is the natural order, and `--help` presents --key as taking one
// key (repeat the flag for more). CLI11 lets a vector option swallow the positional after
// it when more arguments follow, so FILE/PATH/DIR goes missing and warden exits 2.
TEST_F(Cli, KeyOptionDoesNotSwallowTheFollowingPositional) {
  auto cp = warden({"ledger", "checkpoint", dir_.string()});
  ASSERT_TRUE(cp.exited_with(0)) << describe(cp);
  write_file(tmp_ / "checkpoint.note", cp.out);
  const std::string key = path("verifier.key"), note = path("checkpoint.note");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"checkpoint", "verify", "--key", key, note, "--json"},
           {"note", "verify", "--key", key, note, "--json"},
           {"ledger", "verify", "--key", key, dir_.string(), "--json"},
           {"ledger", "verify", "--key", key, "--key", key, dir_.string(), "--json"}}) {
    auto r = warden(args);
    EXPECT_TRUE(r.exited_with(0)) << args[0] << " " << args[1] << ": " << describe(r);
  }
  auto exported = warden({"ledger", "export", dir_.string(), path("export")});
  ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  auto imported = warden({"ledger", "import", "--key", key, path("export"), path("imported"), "--json"});
  EXPECT_TRUE(imported.exited_with(0)) << describe(imported);
}

// golang.org/x/mod/sumdb/note's TestSign vector: Ed25519 is deterministic, so the signed
// note must match Go's byte for byte.
TEST(CliNote, SignMatchesTheGoSumdbNoteVectorAndVerifies) {
  TempDir tmp;
  const std::string text =
      "If you think cryptography is the answer to your problem,\n"
      "then you don't know what your problem is.\n";
  const std::string expected = text + "\n" +
                               "\xe2\x80\x94 PeterNeumann "
                               "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
  write_file(tmp / "signer.key", "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz\n");
  write_file(tmp / "text", text);
  auto signed_note = warden({"note", "sign", "--key", (tmp / "signer.key").string(), (tmp / "text").string()});
  ASSERT_TRUE(signed_note.exited_with(0)) << describe(signed_note);
  EXPECT_EQ(signed_note.out, expected);

  const std::string vkey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
  write_file(tmp / "note", signed_note.out);
  auto ok = warden({"note", "verify", "--key", vkey, (tmp / "note").string()});
  EXPECT_TRUE(ok.exited_with(0)) << describe(ok);
  EXPECT_NE(ok.out.find("verified: PeterNeumann+c74f20a3"), std::string::npos) << ok.out;

  // One changed letter in the text breaks the signature.
  std::string forged = signed_note.out;
  forged[forged.find("answer")] = 'A';
  write_file(tmp / "forged", forged);
  auto bad = warden({"note", "verify", "--key", vkey, (tmp / "forged").string()});
  EXPECT_TRUE(bad.exited_with(kVerificationFailed)) << describe(bad);
}

// The RFC 6962 test leaves used by Certificate Transparency's reference implementations.
TEST(CliMerkle, RootOfTheRfc6962TestLeaves) {
  TempDir tmp;
  write_file(tmp / "leaves", "\n00\n10\n2021\n3031\n40414243\n5051525354555657\n606162636465666768696a6b6c6d6e6f\n");
  auto r = warden({"merkle", "root", "--leaves", (tmp / "leaves").string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_EQ(r.out, "size 8\nroot 5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328\n");
  // The same leaves on standard input.
  SpawnOptions in;
  in.stdin_data = read_file(tmp / "leaves");
  auto piped = warden({"merkle", "root", "--leaves", "-", "--json"}, in);
  ASSERT_TRUE(piped.exited_with(0)) << describe(piped);
  EXPECT_EQ(stdout_json(piped)["root"], "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328");
  EXPECT_EQ(stdout_json(piped)["size"], 8);
}

struct HelpCase {
  std::vector<std::string> command;
  std::vector<std::string> mentions;
};

class CliHelp : public ::testing::TestWithParam<HelpCase> {};

TEST_P(CliHelp, ExitsZeroAndDescribesItsOptions) {
  auto args = GetParam().command;
  args.push_back("--help");
  auto r = warden(args);
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  for (const auto& m : GetParam().mentions) EXPECT_NE(r.out.find(m), std::string::npos) << "no " << m << " in:\n" << r.out;
}

std::string name_of(const std::vector<std::string>& args) {
  std::string name;
  for (const auto& a : args) {
    for (char c : a) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    name += '_';
  }
  return name.empty() ? "none" : name.substr(0, name.size() - 1);
}

INSTANTIATE_TEST_SUITE_P(
    EverySubcommand, CliHelp,
    ::testing::Values(
        HelpCase{{}, {"key", "ledger", "merkle", "note", "checkpoint", "Exit codes"}},
        HelpCase{{"key"}, {"generate"}},
        HelpCase{{"key", "generate"}, {"NAME", "--signer-out", "--verifier-out", "--json"}},
        HelpCase{{"ledger"}, {"init", "append", "show", "verify", "prove", "consistency", "checkpoint", "export", "import", "blob"}},
        HelpCase{{"ledger", "init"}, {"DIR", "--signer-key", "--origin", "--max-payload-bytes", "--json"}},
        HelpCase{{"ledger", "append"}, {"DIR", "--kind", "--payload", "--json"}},
        HelpCase{{"ledger", "show"}, {"DIR", "SEQ", "--json"}},
        HelpCase{{"ledger", "verify"}, {"PATH", "--key", "--json"}},
        HelpCase{{"ledger", "prove"}, {"DIR", "SEQ", "--size", "--json"}},
        HelpCase{{"ledger", "consistency"}, {"DIR", "SIZE1", "SIZE2", "--json"}},
        HelpCase{{"ledger", "checkpoint"}, {"DIR", "--signer-key", "--json"}},
        HelpCase{{"ledger", "export"}, {"DIR", "OUT", "--json"}},
        HelpCase{{"ledger", "import"}, {"EXPORT", "DIR", "--key", "--json"}},
        HelpCase{{"ledger", "blob"}, {"put", "get"}},
        HelpCase{{"ledger", "blob", "put"}, {"DIR", "FILE", "--json"}},
        HelpCase{{"ledger", "blob", "get"}, {"DIR", "DIGEST"}},
        HelpCase{{"merkle"}, {"root", "inclusion", "consistency", "verify-inclusion", "verify-consistency"}},
        HelpCase{{"merkle", "root"}, {"--leaves", "--json"}},
        HelpCase{{"merkle", "inclusion"}, {"--leaves", "INDEX", "--size", "--json"}},
        HelpCase{{"merkle", "consistency"}, {"--leaves", "SIZE1", "SIZE2", "--json"}},
        HelpCase{{"merkle", "verify-inclusion"}, {"--leaf-hash", "--index", "--size", "--root", "--proof", "--json"}},
        HelpCase{{"merkle", "verify-consistency"}, {"--size1", "--size2", "--root1", "--root2", "--proof", "--json"}},
        HelpCase{{"note"}, {"sign", "verify"}},
        HelpCase{{"note", "sign"}, {"--key", "FILE"}},
        HelpCase{{"note", "verify"}, {"--key", "FILE", "--json"}},
        HelpCase{{"checkpoint"}, {"verify"}},
        HelpCase{{"checkpoint", "verify"}, {"--key", "FILE", "--json"}}),
    [](const auto& info) { return "warden_" + name_of(info.param.command); });

class CliUsage : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(CliUsage, BadFlagsAndArgumentsExitTwo) {
  auto r = warden(GetParam());
  EXPECT_TRUE(r.exited_with(kUsage)) << describe(r);
  EXPECT_FALSE(r.err.empty()) << "a usage error must say what was wrong";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliUsage,
    ::testing::Values(std::vector<std::string>{"ledger", "show", "/nonexistent", "--bogus"},
                      std::vector<std::string>{"ledger", "verify", "/nonexistent", "--no-such-flag"},
                      std::vector<std::string>{"merkle", "root", "--leaves", "/dev/null", "--frobnicate"},
                      std::vector<std::string>{"key", "generate", "name", "--unknown"},
                      std::vector<std::string>{"--what"},
                      std::vector<std::string>{"frobnicate"},
                      std::vector<std::string>{"ledger", "append", "/nonexistent"},  // --kind is required
                      std::vector<std::string>{"ledger", "prove", "/nonexistent", "not-a-number"},
                      std::vector<std::string>{}),
    [](const auto& info) { return name_of(info.param); });

}  // namespace
}  // namespace warden::test
