// One rule for ledgers and their keys across the kernel's commands, through the `warden`
// binary with real git repositories and the real sandbox: propose, pipeline run and plan
// commit create a missing --ledger (missing parents included) with LEDGER/signer.key and
// LEDGER/signer.pub, and checkpoint, receipt and replay find what they need there. Also the
// replay fixes: warnings on stderr, --rerun without --repo a usage error, a broken record
// named once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "tests/kernel/build_fixture.h"
#include "tests/support/files.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr int kUsage = 2;
constexpr const char* kCheck = "python3 -B -m unittest -q";

class LedgerRulesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    repo.write("test_calc.py",
               "import unittest\n\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
               "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n");
    base = repo.commit_all("base");
  }

  // An accepted proposal recorded in `ledger`; returns the commit.
  std::string propose_into(const fs::path& ledger) {
    auto patch = repo.patch_file(base, "good.patch",
                                 {{"calc.py", "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"}});
    auto r = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck,
                     "--ledger", ledger.string(), "--json"});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    return stdout_json(r)["commit"];
  }

  GitRepoFixture repo;
  std::string base;
};

// Once found: --ledger under a missing parent failed on `l1.key.tmp-PID`.
TEST_F(LedgerRulesCli, ProposeCreatesTheLedgerAndItsKeysThatCheckpointAndReceiptFind) {
  const fs::path ledger = repo.scratch("missing") / "parent" / "l1";
  const std::string commit = propose_into(ledger);
  ASSERT_FALSE(commit.empty());
  EXPECT_TRUE(fs::is_regular_file(ledger / "signer.key"));
  EXPECT_TRUE(fs::is_regular_file(ledger / "signer.pub"));
  EXPECT_FALSE(fs::exists(fs::path(ledger.string() + ".key"))) << "the key went beside the ledger again";
  expect_ledger_verifies(ledger, ledger / "signer.pub");

  // A second proposal into the same ledger finds its key (no new one, no mismatch).
  const std::string key_before = read_file(ledger / "signer.key");
  auto again = repo.patch_file(base, "again.patch", {{"calc.py", "def add(a, b):\n    return b + a\n"}});
  auto second = warden({"propose", again.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck,
                        "--ledger", ledger.string(), "--branch", "warden/second"});
  EXPECT_TRUE(second.exited_with(0)) << describe(second);
  EXPECT_EQ(read_file(ledger / "signer.key"), key_before);

  auto cp = warden({"ledger", "checkpoint", ledger.string()});
  EXPECT_TRUE(cp.exited_with(0)) << describe(cp);
  const fs::path receipt = repo.scratch("receipt.json");
  auto made = warden({"receipt", commit, "--ledger", ledger.string(), "-o", receipt.string()});
  ASSERT_TRUE(made.exited_with(0)) << describe(made);
  auto checked = warden({"receipt", "verify", receipt.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(checked.exited_with(0)) << describe(checked);
}

TEST_F(LedgerRulesCli, ReplayWarnsOnStderrAndRerunWithoutRepoIsAUsageError) {
  const fs::path ledger = repo.scratch("ledger");
  propose_into(ledger);
  auto r = warden({"replay", ledger.string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warden: warning: checkpoint signatures were checked against the key the ledger itself records"),
            std::string::npos)
      << r.err;

  auto rerun = warden({"replay", ledger.string(), "--rerun"});
  EXPECT_TRUE(rerun.exited_with(kUsage)) << describe(rerun);
  EXPECT_NE(rerun.err.find("--repo"), std::string::npos) << rerun.err;
}

TEST(LedgerRulesCliNoRepo, PipelineRunCreatesASignedLedgerUnderMissingParents) {
  TempDir tmp;
  write_file(tmp / "one.json", R"({"name": "one", "stages": [{"name": "only", "kind": "constant",
                                    "params": {"output": {"x": 1}}, "default_next": "end"}]})");
  const fs::path ledger = tmp / "no" / "such" / "ledger";
  auto r = warden({"pipeline", "run", (tmp / "one.json").string(), "--input", "x", "--ledger", ledger.string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  ASSERT_TRUE(fs::is_regular_file(ledger / "signer.key"));
  // Signed at the run's end with the key it was created with: no unsigned tail.
  auto verified = warden({"ledger", "verify", ledger.string(), "--key", (ledger / "signer.pub").string(), "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  EXPECT_EQ(stdout_json(verified)["unsigned_records"], 0);
}

// Several processes creating one ledger at once: the first key written is everyone's, so every
// run is signed by the key the ledger records and LEDGER/signer.key can sign it later.
TEST(LedgerRulesCliNoRepo, ProcessesCreatingOneLedgerAtOnceShareTheFirstKey) {
  TempDir tmp;
  write_file(tmp / "one.json", R"({"name": "one", "stages": [{"name": "only", "kind": "constant",
                                    "params": {"output": {"x": 1}}, "default_next": "end"}]})");
  const fs::path ledger = tmp / "shared" / "ledger";
  std::vector<Child> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(Child::spawn({warden_binary(), "pipeline", "run", (tmp / "one.json").string(), "--input",
                                 std::to_string(i), "--ledger", ledger.string()}));
  }
  for (auto& child : runs) {
    auto r = child.wait();
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
  }
  auto shown = warden({"ledger", "show", ledger.string(), "--json"});
  ASSERT_TRUE(shown.exited_with(0)) << describe(shown);
  EXPECT_EQ(read_file(ledger / "signer.pub"), stdout_json(shown)["verifier_key"].get<std::string>() + "\n");
  auto verified = warden({"ledger", "verify", ledger.string(), "--key", (ledger / "signer.pub").string(), "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  EXPECT_EQ(stdout_json(verified)["unsigned_records"], 0);
  EXPECT_TRUE(warden({"ledger", "checkpoint", ledger.string()}).exited_with(0));
}

TEST(LedgerRulesCliNoRepo, ATamperedRecordIsNamedOnce) {
  TempDir tmp;
  const fs::path golden = fs::path(WARDEN_SOURCE_DIR) / "tests" / "golden";
  copy_tree(golden / "calculator", tmp / "copy");
  // A blob its record names is gone: the integrity check names the record ("record N").
  fs::path blob = fs::directory_iterator(tmp / "copy" / "blobs")->path();
  fs::remove(blob);
  auto r = warden({"replay", (tmp / "copy").string(), "--key", (golden / "verifier.key").string()});
  EXPECT_TRUE(r.exited_with(1)) << describe(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("FAILED at record ([0-9]+)"))) << r.out;
  EXPECT_EQ(r.out.find("(record " + m[1].str() + ")"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace warden::test
