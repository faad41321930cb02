// `warden propose` end to end: a small real Python project with its own unittest suite, a
// good and a bad patch judged by that suite in the real sandbox, the verdict printed and in
// the ledger, the good one committed with trailers, the bad one leaving every ref alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kCheck = "python3 -B -m unittest -q";

class ProposeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    repo.write("test_calc.py",
               "import unittest\n\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
               "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n");
    base = repo.commit_all("base");
  }

  std::filesystem::path patch(const std::string& name, const std::map<std::string, std::string>& files) {
    return repo.patch_file(base, name, files);
  }

  ProcessResult propose(const std::filesystem::path& proposal, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"propose", proposal.string(), "--repo", repo.repo().string(), "--base", base,
                                     "--check", kCheck, "--branch", "warden/propose"};
    args.insert(args.end(), extra.begin(), extra.end());
    return warden(args);
  }

  std::filesystem::path ledger() const { return repo.repo() / ".git" / "warden-ledger"; }
  std::filesystem::path verifier() const { return repo.repo() / ".git" / "warden-ledger" / "signer.pub"; }

  GitRepoFixture repo;
  std::string base;
};

TEST_F(ProposeCliTest, GoodPatchIsAcceptedCommittedAndRecorded) {
  auto good = patch("good.patch", {{"calc.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"},
                                   // A new test file: the existing one is the oracle (oracle_cli_test.cc).
                                   {"test_mul.py",
                                    "import unittest\n\nfrom calc import mul\n\n\nclass MulTest(unittest.TestCase):\n"
                                    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"}});
  auto r = propose(good, {"--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto j = stdout_json(r);
  EXPECT_EQ(j["type"], "result");
  EXPECT_EQ(j["decision"], "accepted");
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["base_commit"], base);
  EXPECT_EQ(j["branch"], "refs/heads/warden/propose");
  EXPECT_FALSE(j.contains("refusal")) << j.dump();
  const std::string commit = j["commit"];

  EXPECT_EQ(repo.git_line({"rev-parse", "warden/propose"}), commit);
  EXPECT_EQ(repo.git_line({"rev-parse", "warden/propose^"}), base);
  EXPECT_EQ(repo.git_line({"rev-parse", "HEAD"}), base) << "the checked-out branch does not move";
  EXPECT_NE(repo.git({"show", "warden/propose:calc.py"}).find("def mul"), std::string::npos);
  EXPECT_NE(repo.git({"log", "-1", "--format=%B", "warden/propose"}).find("Warden-Step: propose\n"), std::string::npos);

  auto records = ledger_records(ledger());
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0]["verdict"]["accepted"], true);
  auto commits = payloads(records, "commit");
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(commits[0]["commit"], commit);
  auto checks = payloads(records, "run_result").at(0)["run_result"]["checks"];
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0]["name"], "check1");
  expect_branch_holds_only_accepted(repo.repo(), base, "warden/propose", records);
  expect_ledger_verifies(ledger(), verifier());
}

TEST_F(ProposeCliTest, BadPatchIsRefusedWithReasonsAndNothingMoves) {
  auto bad = patch("bad.patch", {{"calc.py", "def add(a, b):\n    return a - b\n"}});
  const auto before = repo.snapshot().refs;
  auto r = propose(bad);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  // unittest -q names no test; Warden's reporter does, so the refusal names the broken test.
  EXPECT_NE(r.out.find("refused:\n  pass_to_pass_failed: check1: test_calc.CalcTest.test_add (failed) passed on the base\n"
                       "  required_checks_failed: check1: failed"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(repo.snapshot().refs, before);
  EXPECT_FALSE(has_ref(repo.repo(), "warden/propose"));

  auto records = ledger_records(ledger());
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(reason_codes(decisions[0]), (std::vector<std::string>{"pass_to_pass_failed", "required_checks_failed"}));
  EXPECT_EQ(payloads(records, "proposal").size(), 1u) << "one proposal, one attempt: nothing asked for a second";
  auto refusals = payloads(records, "refusal");
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0]["report"]["step_id"], "propose");
  EXPECT_TRUE(payloads(records, "commit").empty());
  EXPECT_EQ(payloads(records, "run_status").back()["status"], "refused");
  expect_ledger_verifies(ledger(), verifier());
  // A refusal is the verdict working: listed as refused, not as a failed run or an error.
  auto listed = warden({"runs", "list", ledger().string()});
  ASSERT_TRUE(listed.exited_with(0)) << describe(listed);
  EXPECT_NE(listed.out.find("refused"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("failed"), std::string::npos) << listed.out;
  const std::string run_id = payloads(records, "run_status").back()["run_id"];
  auto status = warden({"run", "status", run_id, "--ledger", ledger().string()});
  EXPECT_EQ(status.out.find("EXECUTION_ERROR"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("REFUSED"), std::string::npos) << status.out;
}

TEST_F(ProposeCliTest, DiffJsonOnTopOfAnAcceptedOneAndADangerousOne) {
  // A Diff JSON keeps its own step id; the second proposal builds on the first's branch.
  repo.write("calc.py", "def add(a, b):\n    return a + b  # checked\n");
  auto first = parse_to_diff(repo, base, repo.staged_patch(), "tidy");
  repo.reset_hard(base);
  auto r = propose(first, {"--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_EQ(stdout_json(r)["step_id"], "tidy");
  const std::string tip = repo.git_line({"rev-parse", "warden/propose"});

  // On the old base the branch cannot take another commit: refused before anything runs.
  auto moved = propose(first);
  EXPECT_TRUE(moved.exited_with(1)) << describe(moved) << "a branch past the base is a precondition, as for build";
  EXPECT_NE(moved.err.find("name another --branch, or give none"), std::string::npos) << moved.err;

  repo.reset_hard(tip);
  repo.write("calc.py", "def add(a, b):\n    return eval(f\"{a} + {b}\")\n");
  std::filesystem::path dangerous = repo.scratch("dangerous.patch");
  write_file(dangerous, repo.staged_patch());
  repo.reset_hard(tip);
  auto refused = warden({"propose", dangerous.string(), "--repo", repo.repo().string(), "--base", "warden/propose",
                         "--check", kCheck, "--json"});
  ASSERT_TRUE(refused.exited_with(1)) << describe(refused);
  auto j = stdout_json(refused);
  // A refusal is a decision: its codes, reasons and report, the base it was judged on, and
  // no branch, commit or error (the branch did not move).
  EXPECT_EQ(j["decision"], "refused") << j.dump();
  EXPECT_EQ(j["refusal"]["codes"], nlohmann::json::array({"dangerous_operation_detected"})) << j.dump();
  EXPECT_EQ(j["refusal"]["reasons"][0]["code"], "dangerous_operation_detected") << j.dump();
  EXPECT_EQ(j["refusal"]["report"]["step_id"], j["step_id"]) << j.dump();
  EXPECT_FALSE(j["refusal"]["report"]["policy_suggestions"].empty()) << j.dump();
  EXPECT_EQ(j["base_commit"], tip);
  EXPECT_EQ(j["base_tree"], repo.git_line({"rev-parse", tip + "^{tree}"}));
  for (const char* absent : {"branch", "commit", "tree", "error_type", "error"}) {
    EXPECT_FALSE(j.contains(absent)) << absent << " in " << j.dump();
  }
  EXPECT_EQ(repo.git_line({"rev-parse", "warden/propose"}), tip);

  auto records = ledger_records(ledger());
  EXPECT_EQ(payloads(records, "decision").size(), 2u);
  expect_branch_holds_only_accepted(repo.repo(), base, "warden/propose", records);
  expect_ledger_verifies(ledger(), verifier());
}

// Without --branch, each proposal gets a branch of its own: two in a row on one repository
// and one base are both accepted, each on its branch, into the one ledger.
TEST_F(ProposeCliTest, TwoProposalsInARowEachGetABranchOfTheirOwn) {
  auto mul = patch("mul.patch", {{"calc.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}});
  auto sub = patch("sub.patch", {{"calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}});
  std::vector<std::string> branches;
  for (const auto& p : {mul, sub}) {
    auto r = warden({"propose", p.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck, "--json"});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    branches.push_back(stdout_json(r)["branch"]);
  }
  EXPECT_NE(branches[0], branches[1]);
  for (const std::string& b : branches) {
    EXPECT_TRUE(b.starts_with("refs/heads/warden/propose-")) << b;
    EXPECT_EQ(repo.git_line({"rev-parse", b + "^"}), base) << b;
  }
}

TEST_F(ProposeCliTest, BadInputRecordsNothing) {
  std::filesystem::path garbage = repo.scratch("garbage.txt");
  write_file(garbage, "this is neither a diff nor a patch\n");
  auto r = propose(garbage);
  EXPECT_TRUE(r.exited_with(kExitInvalidInput)) << describe(r);
  EXPECT_NE(r.err.find("neither a Diff JSON nor a patch"), std::string::npos) << r.err;

  auto good = patch("p.patch", {{"calc.py", "def add(a, b):\n    return b + a\n"}});
  auto no_check = warden({"propose", good.string(), "--repo", repo.repo().string(), "--base", base});
  EXPECT_TRUE(no_check.exited_with(2)) << describe(no_check) << "nothing to judge by is a missing flag: a usage error";
  auto no_base = warden({"propose", good.string(), "--repo", repo.repo().string(), "--base", "no-such-branch", "--check", kCheck});
  EXPECT_TRUE(no_base.exited_with(kExitNotFound)) << describe(no_base);
  EXPECT_FALSE(std::filesystem::exists(ledger()));
}

}  // namespace
}  // namespace warden::test
