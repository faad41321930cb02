// decide() on tests: every test that passed on the step's base must exist and pass on the
// proposal (PASS_TO_PASS, derived from the base run, never from the proposal), a step may
// lose only the tests its plan says it removes, and a check that reports tests but ran none
// fails (no_tests_ran) except on steps building up a project that has no tests yet.
#include <gtest/gtest.h>

#include <algorithm>

#include "diff/diff.h"
#include "kernel/judge/decide.h"
#include "kernel/judge/oracle_run.h"

namespace warden::kernel {
namespace {

using Codes = std::vector<std::string>;

CheckResult tests_check(std::vector<TestCase> tests, std::string verdict = kPassed, int64_t exit_code = 0) {
  CheckResult c;
  c.name = "tests";
  c.verdict = std::move(verdict);
  CheckRun run;
  run.exit_code = exit_code;
  run.report = "parsed";
  run.tests = tests;
  run.outcome = c.verdict;
  c.runs = {run};
  c.tests = std::move(tests);
  return c;
}

class PassToPass : public ::testing::Test {
 protected:
  void SetUp() override {
    BuildStep change;
    change.id = "fix";
    change.action = StepAction::modify;
    change.targets = {"src/ops.py"};
    BuildStep module;
    module.id = "module";
    module.action = StepAction::create_module;
    module.targets = {"src/ops.py"};
    plan.name = "p";
    plan.allowed_paths = {"**"};
    plan.steps = {change, module};
    policy.name = "p";
    policy.required_checks = {"tests"};
    policy.dangerous_operations = false;
    use_step("fix");
    base.checks = {tests_check({{"t::a", "passed"}, {"t::b", "passed"}, {"t::c", "failed"}, {"t::d", "skipped"}}, kFailed, 1)};
  }

  void use_step(const std::string& step_id) {
    FileChange f;
    f.op = FileOp::add;
    f.path = "src/ops.py";
    f.new_mode = kModeFile;
    f.after_content = "x = 1\n";
    f.after_sha256 = sha256(*f.after_content);
    diff = Diff{step_id, {f}};
    proposal = ProposalEvidence{step_id, diff.to_json(), {{"src/ops.py", {}}}, std::nullopt, std::nullopt, std::nullopt};
    run = RunResult{};
    run.preflight.ok = true;
    run.diff_sha256 = diff.digest();
    run.checks = {tests_check({{"t::a", "passed"}, {"t::b", "passed"}, {"t::c", "passed"}})};
  }

  Verdict verdict(bool with_base = true) {
    return decide(DecisionInput{plan, done, proposal, &run, policy, with_base ? &base : nullptr});
  }
  std::string detail(std::string_view code) {
    for (const Reason& r : verdict().reasons) {
      if (r.code == code) return r.detail;
    }
    return "";
  }

  BuildPlan plan;
  Policy policy;
  std::set<std::string> done;
  Diff diff;
  ProposalEvidence proposal;
  RunResult run, base;
};

TEST_F(PassToPass, KeepingEveryBaseTestPassingIsAccepted) {
  Verdict v = verdict();
  EXPECT_TRUE(v.accepted) << v.to_json().dump();
}

TEST_F(PassToPass, AMissingTestIsNamed) {
  run.checks = {tests_check({{"t::a", "passed"}, {"t::c", "passed"}})};
  EXPECT_EQ(verdict().reason_codes(), Codes{"pass_to_pass_failed"});
  EXPECT_EQ(detail("pass_to_pass_failed"), "tests: t::b (missing) passed on the base");
}

TEST_F(PassToPass, AFailingTestIsNamedWithItsStatus) {
  run.checks = {tests_check({{"t::a", "error"}, {"t::b", "skipped"}, {"t::c", "passed"}})};
  EXPECT_EQ(verdict().reason_codes(), Codes{"pass_to_pass_failed"});
  EXPECT_EQ(detail("pass_to_pass_failed"), "tests: t::a (error) passed on the base; tests: t::b (skipped) passed on the base");
}

TEST_F(PassToPass, TestsThatDidNotPassOnTheBaseMayGo) {
  run.checks = {tests_check({{"t::a", "passed"}, {"t::b", "passed"}})};  // t::c failed, t::d skipped there
  EXPECT_TRUE(verdict().accepted);
}

TEST_F(PassToPass, OnlyThePlanMayRemoveATest) {
  run.checks = {tests_check({{"t::a", "passed"}, {"t::c", "passed"}})};
  plan.steps[0].removes_tests = {"t::b"};
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  plan.steps[0].removes_tests = {"t::*"};
  EXPECT_TRUE(verdict().accepted);
  plan.steps[0].removes_tests = {"u::*"};
  EXPECT_EQ(verdict().reason_codes(), Codes{"pass_to_pass_failed"});
}

TEST_F(PassToPass, ReportedTestsWithoutABaseRunAreNotTakenOnTrust) {
  EXPECT_EQ(verdict(false).reason_codes(), Codes{"pass_to_pass_failed"});
  base.checks = {};
  EXPECT_EQ(verdict().reason_codes(), Codes{"pass_to_pass_failed"});
  EXPECT_NE(detail("pass_to_pass_failed").find("the base run has no such check"), std::string::npos);
}

TEST_F(PassToPass, ACheckThatRanNoTestsFails) {
  // The runner calls a run of nothing failed; decide() says why.
  run.checks = {tests_check({}, kFailed)};
  EXPECT_EQ(verdict().reason_codes(), (Codes{"no_tests_ran", "pass_to_pass_failed", "required_checks_failed"}));
  EXPECT_EQ(detail("no_tests_ran"), "tests ran no tests");
  // The base's tests that went missing are named (a deleted test file takes its tests along).
  EXPECT_NE(detail("pass_to_pass_failed").find("(missing) passed on the base"), std::string::npos) << detail("pass_to_pass_failed");
  // Even when a runner would call it passed, and even when the base ran none either: a
  // change to a project is held to its tests.
  run.checks = {tests_check({}, kPassed)};
  base.checks = {tests_check({}, kFailed)};
  EXPECT_EQ(verdict().reason_codes(), Codes{"no_tests_ran"});
}

TEST_F(PassToPass, AProjectBuiltUpFromNothingMayHaveNoTestsYet) {
  use_step("module");
  run.checks = {tests_check({}, kFailed)};
  base.checks = {tests_check({}, kFailed)};
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  // Not once the base has tests (each named as missing),
  base.checks = {tests_check({{"t::a", "passed"}})};
  EXPECT_EQ(verdict().reason_codes(), (Codes{"no_tests_ran", "pass_to_pass_failed", "required_checks_failed"}));
  EXPECT_EQ(detail("pass_to_pass_failed"), "tests: t::a (missing) passed on the base");
  // nor when the check crashed rather than found nothing.
  base.checks = {tests_check({}, kFailed)};
  run.checks = {tests_check({}, kFailed, 2)};
  EXPECT_EQ(verdict().reason_codes(), (Codes{"no_tests_ran", "required_checks_failed"}));
}

// A proposal that adds a test must also be judged by the base's tests alone: a runner (or a
// forged ledger) that leaves that run out, or hands in a run of another diff, is not believed.
TEST_F(PassToPass, ANewTestNeedsTheOracleRunOfExactlyTheDiffWithoutIt) {
  FileChange test;
  test.op = FileOp::add;
  test.path = "tests/test_new.py";
  test.new_mode = kModeFile;
  test.after_content = "import src.ops\nsrc.ops.x = 2\n";
  test.after_sha256 = sha256(*test.after_content);
  diff.files.push_back(test);
  plan.steps[0].targets.push_back(test.path);
  proposal.diff = diff.to_json();
  proposal.base["tests/test_new.py"] = {};
  run.diff_sha256 = diff.digest();
  auto judged = [&](const RunResult* oracle) {
    return decide(DecisionInput{plan, done, proposal, &run, policy, &base, oracle});
  };
  EXPECT_EQ(judged(nullptr).reason_codes(), Codes{"pass_to_pass_failed"});

  std::optional<Diff> without = oracle_diff(diff, proposal, policy.oracle);
  ASSERT_TRUE(without);
  ASSERT_EQ(without->files.size(), 1u);
  RunResult oracle = run;
  oracle.diff_sha256 = diff.digest();  // a run of the whole diff passed off as the oracle run
  EXPECT_EQ(judged(&oracle).reason_codes(), Codes{"pass_to_pass_failed"});
  oracle.diff_sha256 = without->digest();
  EXPECT_TRUE(judged(&oracle).accepted) << judged(&oracle).to_json().dump();
  // Without the new test, the base's t::b fails: the new file was what made it pass.
  oracle.checks = {tests_check({{"t::a", "passed"}, {"t::b", "failed"}, {"t::c", "passed"}}, kFailed, 1)};
  Verdict v = judged(&oracle);
  ASSERT_EQ(v.reason_codes(), Codes{"pass_to_pass_failed"});
  EXPECT_NE(v.reasons[0].detail.find("t::b (failed) passed on the base (run with the base's test files)"),
            std::string::npos) << v.reasons[0].detail;
}

// The oracle run is decided by path, whatever the ops: a base test file removed and added
// again (with tests appended) still runs as the base has it, and so does one only modified.
TEST_F(PassToPass, ABaseTestFileKeepsItsBaseContentInTheOracleRunWhateverTheOps) {
  const std::string old_test = "def test_a():\n    assert True\n";
  const std::string new_test = old_test + "\n\ndef test_b():\n    import src.ops\n    src.ops.x = 2\n";
  proposal.base["tests/test_ops.py"] = BaseFileImage{old_test, kModeFile};
  FileChange removed;
  removed.op = FileOp::remove;
  removed.path = "tests/test_ops.py";
  removed.before_sha256 = sha256(old_test);
  FileChange added;
  added.op = FileOp::add;
  added.path = "tests/test_ops.py";
  added.new_mode = kModeFile;
  added.after_content = new_test;
  added.after_sha256 = sha256(new_test);
  Diff swap = diff;
  swap.files.push_back(removed);
  swap.files.push_back(added);
  std::optional<Diff> without = oracle_diff(swap, proposal, policy.oracle);
  ASSERT_TRUE(without);
  EXPECT_EQ(without->files.size(), diff.files.size()) << "both the removal and the add are left out";
  FileChange modified;
  modified.op = FileOp::modify;
  modified.path = "tests/test_ops.py";
  modified.before_sha256 = sha256(old_test);
  modified.after_content = new_test;
  modified.after_sha256 = sha256(new_test);
  Diff plain = diff;
  plain.files.push_back(modified);
  std::optional<Diff> plain_without = oracle_diff(plain, proposal, policy.oracle);
  ASSERT_TRUE(plain_without);
  EXPECT_EQ(plain_without->digest(), without->digest());
}

// A test file whose units an approval admits runs as the proposal writes it (a ctest test is a
// whole program: its admitted helper cannot run in its base version beside the new code); a
// file admitted whole, and every other test file, stays the base's.
TEST_F(PassToPass, AnApprovedTestFileRunsAsTheProposalWritesItInTheOracleRun) {
  const std::string old_test = "static int check(int x) { return x == 1; }\n";
  const std::string new_test = "static int check(int x) { return x == 2; }\n";
  proposal.base["tests/parse.c"] = BaseFileImage{old_test, kModeFile};
  proposal.base["tests/CMakeLists.txt"] = BaseFileImage{"add_test(a a)\n", kModeFile};
  FileChange modified;
  modified.op = FileOp::modify;
  modified.path = "tests/parse.c";
  modified.before_sha256 = sha256(old_test);
  modified.after_content = new_test;
  modified.after_sha256 = sha256(new_test);
  FileChange cmake;
  cmake.op = FileOp::modify;
  cmake.path = "tests/CMakeLists.txt";
  cmake.before_sha256 = sha256("add_test(a a)\n");
  cmake.after_content = "add_test(a a)\nadd_test(b b)\n";
  cmake.after_sha256 = sha256(*cmake.after_content);
  Diff both = diff;
  both.files.push_back(modified);
  both.files.push_back(cmake);
  auto kept = [](const std::optional<Diff>& d, const std::string& path) {
    return d && std::any_of(d->files.begin(), d->files.end(), [&](const FileChange& f) { return f.path == path; });
  };
  std::optional<Diff> plain = oracle_diff(both, proposal, policy.oracle);
  EXPECT_FALSE(kept(plain, "tests/parse.c"));
  EXPECT_FALSE(kept(plain, "tests/CMakeLists.txt"));
  std::optional<Diff> approved = oracle_diff(both, proposal, policy.oracle, {"tests/parse.c::check", "tests/CMakeLists.txt"});
  EXPECT_TRUE(kept(approved, "tests/parse.c")) << "its admitted helper runs as written";
  EXPECT_FALSE(kept(approved, "tests/CMakeLists.txt")) << "a file admitted whole stays the base's";
  EXPECT_FALSE(kept(oracle_diff(both, proposal, policy.oracle, {"tests/parse.cc::check", "tests/parse.c"}), "tests/parse.c"))
      << "only a unit of exactly that file";
}

// A check judged by its exit status (node --test, make test) that passes with the proposal's
// test files must pass with the base's too: the oracle run repeats it. A ledger recorded before
// the oracle run repeated such checks holds none, and its decisions replay as they were made.
TEST_F(PassToPass, ACheckJudgedByItsExitStatusMustPassWithTheBaseTestFiles) {
  CheckSpec spec = CheckSpec::shell("check1", "node --test");
  plan.checks = {spec};
  policy.required_checks = {"check1"};
  const std::string old_test = "test('a', () => { assert.equal(f(), 1); });\n";
  proposal.base["test/a.test.js"] = BaseFileImage{old_test, kModeFile};
  FileChange weakened;
  weakened.op = FileOp::modify;
  weakened.path = "test/a.test.js";
  weakened.old_mode = weakened.new_mode = kModeFile;
  weakened.before_sha256 = sha256(old_test);
  weakened.after_content = old_test + "test('b', () => {});\n";
  weakened.after_sha256 = sha256(*weakened.after_content);
  diff.files.push_back(weakened);
  plan.steps[0].targets.push_back(weakened.path);
  proposal.diff = diff.to_json();
  CheckResult passed;
  passed.name = "check1";
  passed.verdict = kPassed;
  passed.spec_sha256 = spec.digest();
  passed.runs = {CheckRun{}};
  passed.runs[0].report = "none";
  run.checks = {passed};
  run.diff_sha256 = diff.digest();
  const std::optional<Diff> without = oracle_diff(diff, proposal, policy.oracle);
  ASSERT_TRUE(without);
  auto judged = [&](const RunResult* oracle) { return decide(DecisionInput{plan, done, proposal, &run, policy, nullptr, oracle}); };
  EXPECT_TRUE(judged(nullptr).accepted) << "a ledger from before such oracle runs";
  RunResult oracle = run;
  oracle.diff_sha256 = without->digest();
  EXPECT_TRUE(judged(&oracle).accepted) << judged(&oracle).to_json().dump();
  oracle.checks[0].verdict = kFailed;
  Verdict v = judged(&oracle);
  ASSERT_EQ(v.reason_codes(), Codes{"pass_to_pass_failed"}) << v.to_json().dump();
  EXPECT_NE(v.reasons[0].detail.find("check1 passes with the proposal's test files but failed with the base's"), std::string::npos)
      << v.reasons[0].detail;
  oracle.diff_sha256 = diff.digest();
  EXPECT_EQ(judged(&oracle).reason_codes(), Codes{"pass_to_pass_failed"}) << "a run of the whole diff is not the oracle run";
  // Which checks the oracle run repeats: test commands by exit status, the checks that report
  // tests when the base passed one, never an invariant or a check reading another's tests.
  CheckSpec invariant = CheckSpec::shell("invariant:all_functions_have_tests", "true");
  invariant.proves = {"all_functions_have_tests"};
  CheckSpec reporting = CheckSpec::shell("tests", "pytest");
  reporting.report_format = "pytest";
  CheckSpec reader = CheckSpec::shell("coverage", "true");
  reader.tests_from = {"tests"};
  auto names = [](const std::vector<CheckSpec>& checks) {
    std::vector<std::string> out;
    for (const CheckSpec& c : checks) out.push_back(c.name);
    return out;
  };
  EXPECT_EQ(names(oracle_checks({spec, invariant, reporting, reader}, false)), Codes{"check1"});
  EXPECT_EQ(names(oracle_checks({spec, invariant, reporting, reader}, true)), (Codes{"check1", "tests"}));
}

TEST_F(PassToPass, ChecksWithoutReportsAreJudgedByTheirVerdictAlone) {
  for (RunResult* r : {&run, &base}) {
    r->checks[0].runs[0].report = "none";
    r->checks[0].tests.clear();
  }
  EXPECT_TRUE(verdict(false).accepted);
  run.checks[0].verdict = kFailed;
  EXPECT_EQ(verdict(false).reason_codes(), Codes{"required_checks_failed"});
}

}  // namespace
}  // namespace warden::kernel
