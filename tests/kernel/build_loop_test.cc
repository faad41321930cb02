// The build loop through its Runner seam: a real repository and a real ledger, with a fake
// runner standing in for the sandbox (as Ninja's tests swap the CommandRunner). It shows
// what the kernel asks a runner for and that the verdict is the kernel's own: a runner that
// reports success on a tree other than the one asked for, or without a working sandbox,
// does not get the proposal accepted.
#include <gtest/gtest.h>

#include "kernel/build/propose.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"
#include "tests/support/git_fixture.h"

namespace warden::kernel {
namespace {

// Answers every request with the checks' verdicts it is told to give; remembers requests.
class FakeRunner final : public Runner {
 public:
  std::string verdict = kPassed;
  bool preflight_ok = true;
  bool wrong_diff = false;  // claim to have tested another diff
  bool wrong_tree = false;  // claim to have tested another tree
  bool wrong_base = false;  // claim to have layered the tree over another base
  bool wrong_base_run_base = false;  // the base's own run (no diff) names a base it was not given
  // Tests each run reports (a check with a report format): the base's (no diff) and the
  // proposal's.
  std::vector<TestCase> base_tests, proposal_tests;
  std::string output = "the check's output\n";  // every run's stdout
  bool withhold_output = false;  // name the stdout blob without delivering its bytes
  bool forge_output = false;     // deliver other bytes under its name
  std::vector<RunRequest> requests;
  std::vector<ObjectId> trees;

  Checked<RunOutcome> run(GitRepo&, const RunRequest& request) override {
    requests.push_back(request);
    RunOutcome out;
    RunResult& r = out.result;
    r.tree = wrong_tree ? request.base_tree.hex() : request.tree ? request.tree->hex() : request.base_tree.hex();
    r.base_tree = wrong_base && request.tree ? request.tree->hex() : request.base_tree.hex();
    if (wrong_base_run_base && !request.diff) r.base_tree = std::string(40, 'a');
    if (request.diff) r.diff_sha256 = wrong_diff ? sha256("another diff") : request.diff->digest();
    r.profile = "fake";
    r.preflight.ok = preflight_ok;
    for (const CheckSpec& spec : request.checks) {
      CheckResult c;
      c.name = spec.name;
      c.argv = spec.argv;
      c.verdict = verdict;
      CheckRun run;
      run.exit_code = verdict == kPassed ? 0 : 1;
      run.outcome = verdict;
      run.out.blob = sha256(output);
      if (spec.report_format != "none") {
        run.report = "parsed";
        run.tests = c.tests = request.diff ? proposal_tests : base_tests;
      }
      c.runs.push_back(run);
      r.checks.push_back(std::move(c));
    }
    if (!withhold_output) out.bodies[sha256(output)] = forge_output ? "other bytes" : output;
    return out;
  }
};

class BuildLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("lib/ops.py", "def add(a, b):\n    return a + b\n");
    base_ = repo_.commit_all("base");
    signer_ = NoteSigner::generate("warden.test/build-loop").value();
  }

  ProposeRequest request() {
    ProposeRequest r;
    r.proposal = R"(--- a/lib/ops.py
+++ b/lib/ops.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return b + a
)";
    r.source = "swap.patch";
    r.branch = "warden/propose";
    r.repo = repo_.repo();
    r.base = base_;
    r.checks = {CheckSpec::shell("check1", "python3 -m unittest")};
    r.ledger = repo_.scratch("ledger");
    return r;
  }

  Result<ProposeOutcome> run(FakeRunner& runner) {
    KernelSession session(clock_, ids_, signer_);
    session.cache_dir = repo_.scratch("cache");
    session.runner = &runner;
    return propose(request(), session);
  }

  std::vector<std::string> kinds() {
    SystemClock clock;
    auto ledger = Ledger::open(repo_.scratch("ledger"), Ledger::Mode::read_only, clock).value();
    auto snap = ledger.snapshot().value();
    std::vector<std::string> out;
    for (uint64_t seq = 0; seq < snap.size(); ++seq) out.push_back(snap.record(seq).value().kind);
    return out;
  }

  test::GitRepoFixture repo_;
  std::string base_;
  LogicalClock clock_;
  SequentialIdSource ids_;
  NoteSigner signer_ = NoteSigner::generate("unused").value();
};

TEST_F(BuildLoopTest, TheRunnerIsAskedForTheTreeUnderTestAndTheStepsChecks) {
  FakeRunner runner;
  auto outcome = run(runner);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(outcome->accepted()) << outcome->summary.to_json().dump(2);
  ASSERT_EQ(runner.requests.size(), 1u);
  const RunRequest& asked = runner.requests.front();
  EXPECT_EQ(asked.base_tree.hex(), repo_.git_line({"rev-parse", base_ + "^{tree}"}));
  ASSERT_TRUE(asked.tree.has_value());
  // The tree under test is the commit's tree: what was checked is what landed.
  EXPECT_EQ(asked.tree->hex(), repo_.git_line({"rev-parse", "refs/heads/warden/propose^{tree}"}));
  ASSERT_EQ(asked.checks.size(), 1u);
  EXPECT_EQ(asked.checks.front().name, "check1");
  // Every record of the attempt is there, typed and in order.
  auto k = kinds();
  for (std::string_view want : {record_kind::proposal, record_kind::run_result, record_kind::decision, record_kind::commit}) {
    EXPECT_NE(std::find(k.begin(), k.end(), want), k.end()) << want;
  }
}

TEST_F(BuildLoopTest, AFailingCheckIsRefusedWithItsReason) {
  FakeRunner runner;
  runner.verdict = kFailed;
  auto outcome = run(runner);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  ASSERT_NE(outcome->verdict(), nullptr);
  EXPECT_EQ(outcome->verdict()->reason_codes(), std::vector<std::string>{"required_checks_failed"});
  EXPECT_FALSE(repo_.try_git({"rev-parse", "--verify", "refs/heads/warden/propose"}).exited_with(0));
}

// The runner only reports; the kernel judges. A runner claiming success for another diff,
// or without a working sandbox, is not believed.
TEST_F(BuildLoopTest, ARunnerCannotVouchForAnotherDiffOrABrokenSandbox) {
  FakeRunner liar;
  liar.wrong_diff = true;
  auto outcome = run(liar);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  ASSERT_NE(outcome->verdict(), nullptr);
  EXPECT_EQ(outcome->verdict()->reason_codes(), std::vector<std::string>{"hash_mismatch"});
}

// A result about another tree is no evidence about this proposal: the step fails as an
// execution error, nothing is committed.
TEST_F(BuildLoopTest, AResultAboutAnotherTreeEndsTheRunWithoutACommit) {
  FakeRunner liar;
  liar.wrong_tree = true;
  auto outcome = run(liar);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  EXPECT_EQ(outcome->summary.status, RunStatus::failed);
  EXPECT_NE(outcome->summary.error.find("not the tree under test"), std::string::npos) << outcome->summary.error;
  EXPECT_FALSE(repo_.try_git({"rev-parse", "--verify", "refs/heads/warden/propose"}).exited_with(0));
}

// Replay holds pre-images to the base the run results name: a runner naming another base
// (here the tree under test itself) is not believed either.
TEST_F(BuildLoopTest, AResultOverAnotherBaseEndsTheRunWithoutACommit) {
  FakeRunner liar;
  liar.wrong_base = true;
  auto outcome = run(liar);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->summary.status, RunStatus::failed);
  EXPECT_NE(outcome->summary.error.find("not the run's base"), std::string::npos) << outcome->summary.error;
  EXPECT_FALSE(repo_.try_git({"rev-parse", "--verify", "refs/heads/warden/propose"}).exited_with(0));
}

// Every run of a step is held to the base it was given, not only the proposal's: a runner
// that answers the base's own test run (the run pass-to-pass is derived from) with a result
// naming another base is not believed, and nothing is decided or committed on it.
TEST_F(BuildLoopTest, ABaseRunNamingAnotherBaseEndsTheRunWithoutACommit) {
  FakeRunner liar;
  liar.wrong_base_run_base = true;
  liar.base_tests = {{"t::a", "passed"}};
  liar.proposal_tests = {{"t::a", "passed"}};
  ProposeRequest r = request();
  r.checks.front().report_format = "tap";
  KernelSession session(clock_, ids_, signer_);
  session.cache_dir = repo_.scratch("cache");
  session.runner = &liar;
  auto outcome = propose(r, session);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  EXPECT_EQ(outcome->verdict(), nullptr) << "decided on a result about another base";
  EXPECT_EQ(outcome->summary.status, RunStatus::failed);
  EXPECT_NE(outcome->summary.error.find("not the run's base"), std::string::npos) << outcome->summary.error;
  ASSERT_FALSE(liar.requests.empty());
  EXPECT_EQ(liar.requests.front().diff, nullptr) << "the base's run comes first";
  EXPECT_FALSE(repo_.try_git({"rev-parse", "--verify", "refs/heads/warden/propose"}).exited_with(0));
}

TEST_F(BuildLoopTest, NoSandboxNoAcceptance) {
  FakeRunner broken;
  broken.preflight_ok = false;
  auto outcome = run(broken);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  ASSERT_NE(outcome->verdict(), nullptr);
  EXPECT_EQ(outcome->verdict()->reason_codes(), std::vector<std::string>{"sandbox_unavailable"});
}

// A check that reports tests is first run on the base (once, from the runner's cache if it
// can); the proposal must keep every test that passed there.
TEST_F(BuildLoopTest, TheBaseIsTestedFirstAndATestItPassedCannotGo) {
  FakeRunner runner;
  runner.base_tests = {{"t::a", "passed"}, {"t::b", "passed"}};
  runner.proposal_tests = {{"t::a", "passed"}};
  ProposeRequest r = request();
  r.checks.front().report_format = "tap";
  KernelSession session(clock_, ids_, signer_);
  session.cache_dir = repo_.scratch("cache");
  session.runner = &runner;
  auto outcome = propose(r, session);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->accepted());
  ASSERT_EQ(runner.requests.size(), 2u);
  const RunRequest& base = runner.requests.front();
  EXPECT_EQ(base.diff, nullptr);
  EXPECT_TRUE(base.reuse) << "a base's run may come from the cache";
  ASSERT_TRUE(base.tree.has_value());
  EXPECT_EQ(base.tree->hex(), repo_.git_line({"rev-parse", base_ + "^{tree}"}));
  EXPECT_FALSE(runner.requests.back().reuse);
  ASSERT_NE(outcome->verdict(), nullptr) << outcome->to_json().dump();
  EXPECT_EQ(outcome->verdict()->reason_codes(), std::vector<std::string>{"pass_to_pass_failed"});
  EXPECT_EQ(outcome->verdict()->reasons.front().detail, "check1: t::b (missing) passed on the base");
  auto k = kinds();
  EXPECT_NE(std::find(k.begin(), k.end(), record_kind::base_run), k.end());

  runner.proposal_tests = runner.base_tests;
  runner.requests.clear();
  r.branch = "second";
  r.run_id = "second";
  auto again = propose(r, session);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->accepted()) << again->summary.to_json().dump();
}

// Output a result names is evidence only when its bytes come with it, and are those bytes.
TEST_F(BuildLoopTest, ARunnerThatWithholdsOrForgesOutputIsNotEvidence) {
  for (bool forge : {false, true}) {
    FakeRunner runner;
    runner.withhold_output = !forge;
    runner.forge_output = forge;
    ProposeRequest r = request();
    r.run_id = forge ? "forge" : "withhold";
    r.branch = r.run_id;
    KernelSession session(clock_, ids_, signer_);
    session.cache_dir = repo_.scratch("cache");
    session.runner = &runner;
    auto outcome = propose(r, session);
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_FALSE(outcome->accepted());
    EXPECT_EQ(outcome->summary.status, RunStatus::failed);
    EXPECT_NE(outcome->summary.error.find(forge ? "hash to" : "did not deliver"), std::string::npos) << outcome->summary.error;
  }
}

// The summary carries the verdict with every reason's detail: no one rereads the ledger.
TEST_F(BuildLoopTest, TheSummaryCarriesTheFullVerdict) {
  FakeRunner runner;
  runner.verdict = kFailed;
  auto outcome = run(runner);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->summary.verdicts.size(), 1u);
  const Verdict& v = outcome->summary.verdicts.front().verdict;
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons.front().detail, "check1: failed");
  Json j = outcome->summary.to_json();
  EXPECT_EQ(j["verdicts"][0]["verdict"], v.to_json());
}

}  // namespace
}  // namespace warden::kernel
