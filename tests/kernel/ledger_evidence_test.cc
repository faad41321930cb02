// Every ledger Warden writes replays, and holds what an auditor needs to see why: `warden
// propose` ledgers (accepted and refused) and `warden pipeline run` ledgers pass `warden
// replay`; a refused check's full output is a blob in the ledger, named in the refusal,
// readable with `warden ledger blob get`, and still there after export and import into
// another directory; a second proposal on the same base reuses the base's recorded test run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kCheck = "python3 -B -m unittest discover -s tests -t . -v";

class LedgerEvidence : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("mathlib/__init__.py", "");
    repo.write("mathlib/ops.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n");
    repo.write("tests/__init__.py", "");
    repo.write("tests/test_ops.py",
               "import unittest\n\nfrom mathlib.ops import add, mul\n\n\nclass TestOps(unittest.TestCase):\n"
               "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
               "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n");
    base = repo.commit_all("base");
  }

  std::filesystem::path patch(const std::string& name, const std::string& ops) {
    repo.write("mathlib/ops.py", ops);
    std::filesystem::path out = repo.scratch(name);
    write_file(out, repo.staged_patch());
    repo.reset_hard(base);
    return out;
  }

  ProcessResult propose(const std::filesystem::path& proposal, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"propose", proposal.string(), "--repo", repo.repo().string(), "--base", base,
                                     "--check", kCheck, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return warden(args);
  }

  void expect_replays(const std::filesystem::path& ledger_or_export) {
    auto r = warden({"replay", ledger_or_export.string(), "--key", verifier().string(), "--json"});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    EXPECT_GE(stdout_json(r)["decisions"].get<int>(), 1) << r.out;
  }

  std::filesystem::path ledger() const { return repo.repo() / ".git" / "warden-ledger"; }
  std::filesystem::path verifier() const { return repo.repo() / ".git" / "warden-ledger" / "signer.pub"; }

  GitRepoFixture repo;
  std::string base;
};

TEST_F(LedgerEvidence, AcceptedAndRefusedProposalsReplay) {
  auto good = patch("good.patch", "def add(a, b):\n    return b + a\n\n\ndef mul(a, b):\n    return a * b\n");
  auto accepted = propose(good, {"--branch", "good"});
  ASSERT_TRUE(accepted.exited_with(0)) << describe(accepted);
  expect_replays(ledger());

  auto bad = patch("bad.patch", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n");
  auto refused = propose(bad, {"--branch", "bad"});
  ASSERT_TRUE(refused.exited_with(1)) << describe(refused);
  expect_replays(ledger());

  // The base ran its two tests (recorded once per proposal as the base run); the refusal names
  // the test that no longer passes.
  auto records = ledger_records(ledger());
  auto bases = payloads(records, "base_run");
  ASSERT_EQ(bases.size(), 2u);
  EXPECT_EQ(bases[0]["tree"], bases[1]["tree"]);
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_TRUE(decisions[1].contains("base_run_seq"));
  json verdict = stdout_json(refused)["refusal"];
  bool named = false;
  for (const auto& reason : verdict["reasons"]) {
    if (reason["code"] == "pass_to_pass_failed") named = reason["detail"].get<std::string>().find("test_mul") != std::string::npos;
  }
  EXPECT_TRUE(named) << verdict.dump();
}

TEST_F(LedgerEvidence, ARefusedChecksFullOutputTravelsWithTheExport) {
  auto bad = patch("bad.patch", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n");
  auto refused = propose(bad);
  ASSERT_TRUE(refused.exited_with(1)) << describe(refused);
  json evidence = stdout_json(refused)["refusal"]["checks_not_passing"].at(0);
  EXPECT_EQ(evidence["check"], "check1");
  ASSERT_FALSE(evidence["failing_tests"].empty()) << evidence.dump();
  EXPECT_NE(evidence["failing_tests"][0]["id"].get<std::string>().find("test_mul"), std::string::npos) << evidence.dump();
  const std::string stderr_blob = evidence["stderr_blob"];

  // For people: the failing test, the end of its output, and where the rest is.
  auto human = warden({"propose", bad.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck,
                       "--branch", "again"});
  ASSERT_TRUE(human.exited_with(1)) << describe(human);
  EXPECT_NE(human.out.find("AssertionError: 5 != 6"), std::string::npos) << human.out;
  // (Another run: its output differs in unittest's timing line, so its blob does too.)
  EXPECT_NE(human.out.find("warden ledger blob get " + ledger().string() + " sha256:"), std::string::npos) << human.out;

  auto got = warden({"ledger", "blob", "get", ledger().string(), stderr_blob});
  ASSERT_TRUE(got.exited_with(0)) << describe(got);
  EXPECT_NE(got.out.find("FAIL: test_mul"), std::string::npos) << got.out;

  TempDir elsewhere;
  auto exported = warden({"ledger", "export", ledger().string(), (elsewhere / "export").string()});
  ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  auto imported = warden({"ledger", "import", (elsewhere / "export").string(), (elsewhere / "imported").string()});
  ASSERT_TRUE(imported.exited_with(0)) << describe(imported);
  auto again = warden({"ledger", "blob", "get", (elsewhere / "imported").string(), stderr_blob});
  ASSERT_TRUE(again.exited_with(0)) << describe(again);
  EXPECT_EQ(again.out, got.out);
  expect_replays(elsewhere / "export");

  // Every blob every run result names is there.
  for (const auto& kind : {"run_result", "base_run"}) {
    for (const auto& rr : payloads(ledger_records(elsewhere / "imported"), kind)) {
      for (const auto& check : rr["run_result"]["checks"]) {
        for (const auto& run : check["runs"]) {
          for (const char* stream : {"stdout", "stderr"}) {
            auto blob = warden({"ledger", "blob", "get", (elsewhere / "imported").string(), run[stream]["blob"]});
            EXPECT_TRUE(blob.exited_with(0)) << kind << " " << stream << ": " << describe(blob);
          }
        }
      }
    }
  }
}

TEST_F(LedgerEvidence, AProposalThatDeletesATestLosesItsTests) {
  // The default propose policy: whatever else refuses it, the kernel's own comparison with the
  // base names the tests that are gone.
  repo.write("mathlib/ops.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n");
  repo.write("tests/test_ops.py",
             "import unittest\n\nfrom mathlib.ops import add\n\n\nclass TestOps(unittest.TestCase):\n"
             "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n");
  std::filesystem::path p = repo.scratch("cheat.patch");
  write_file(p, repo.staged_patch());
  repo.reset_hard(base);
  auto r = propose(p);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  json verdict = stdout_json(r)["refusal"];
  bool named = false;
  for (const auto& reason : verdict["reasons"]) {
    if (reason["code"] == "pass_to_pass_failed") {
      named = reason["detail"].get<std::string>().find("test_mul (missing)") != std::string::npos;
    }
  }
  EXPECT_TRUE(named) << verdict.dump();
  expect_replays(ledger());
}

TEST(PipelineLedgers, Replay) {
  TempDir tmp;
  auto init = warden({"ledger", "init", (tmp / "ledger").string()});
  ASSERT_TRUE(init.exited_with(0)) << describe(init);
  for (const char* pipeline : {"fan_out.json", "approval.json", "critic_loop.json"}) {
    auto run = warden({"pipeline", "run", (std::filesystem::path(WARDEN_SOURCE_DIR) / "examples" / "pipelines" / pipeline).string(), "--input", "x", "--ledger",
                       (tmp / "ledger").string()});
    EXPECT_TRUE(run.exited_with(0) || run.exited_with(1)) << pipeline << ": " << describe(run);
  }
  auto replayed = warden({"replay", (tmp / "ledger").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  EXPECT_GT(stdout_json(replayed)["records"].get<int>(), 10);
}

}  // namespace
}  // namespace warden::test
