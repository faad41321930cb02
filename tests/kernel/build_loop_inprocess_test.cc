// The build loop (kernel/build/build_loop.h) driven in-process: kernel::run_build on a real
// repository seeded from a blueprint, a real ledger and the plan executor, with a FakeRunner
// (inprocess_build.h) standing in for the sandbox through KernelSession::runner. What is
// under test is the loop's own logic, which `warden build` only shows through bubblewrap:
// each step's attempts, what it asks the runner for, what it commits, what it records, and
// how a run ends when a step cannot be accepted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "kernel/audit/replay.h"
#include "tests/kernel/inprocess_build.h"

namespace warden::test {
namespace {

using kernel::BuildSummary;
using kernel::CommitRecord;
using kernel::DecisionRecord;
using kernel::ErrorType;
using kernel::ProposalRecord;
using kernel::RunResultRecord;
using kernel::RunStatus;
using kernel::RunStatusRecord;

const std::string kBranch = "refs/heads/warden/inprocess";

// A temp dir holding the blueprint, the repository and the ledger of one test's build.
class BuildLoopInProcess : public ::testing::Test {
 protected:
  Result<BuildSummary> build_with(const std::vector<Change>& changes, FakeRunner& runner, const BlueprintShape& shape = {},
                                  executor::Proposer* proposer = nullptr) {
    blueprint_ = write_blueprint(dir_.path(), changes, shape);
    executor::PlanProposer plan;
    return build(*blueprint_, dir_.path(), place_, signer_, runner, proposer ? *proposer : plan);
  }

  std::string seed_tree() { return git(place_.repo, {"rev-parse", "HEAD^{tree}"}); }  // HEAD stays at the seed

  // Replay (kernel/audit/replay.h) re-derives every decision from what the ledger recorded
  // and holds the branch to the last commit the ledger confirmed.
  void expect_replays(uint64_t decisions, uint64_t commits) {
    kernel::ReplayOptions options;
    options.verify.keys = {signer_.verifier()};
    options.repo = place_.repo;
    auto report = kernel::replay(place_.ledger, options);
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_TRUE(report->ok()) << report->problem->kind << " at " << report->problem->seq << ": " << report->problem->message;
    EXPECT_EQ(report->decisions, decisions);
    EXPECT_EQ(report->commits, commits);
  }

  TempDir dir_;
  BuildPlace place_{dir_ / "repo", dir_ / "ledger"};
  NoteSigner signer_ = NoteSigner::generate("warden.test/build-loop-inprocess").value();
  std::optional<kernel::BlueprintSpec> blueprint_;
};

// The executor of a replan test: the plan executor, whose replan() gives the plan back with
// the failed step's content replaced by `fixed` (and its drafts dropped).
class FixingProposer final : public executor::Proposer {
 public:
  explicit FixingProposer(std::string fixed) : fixed_(std::move(fixed)) {}
  std::string name() const override { return "plan"; }
  Checked<std::string> propose(const executor::ProposalRequest& request) override { return plan_.propose(request); }
  void learn(const Json& refusal) override { plan_.learn(refusal); }
  Result<std::string> replan(const Json& request, std::chrono::milliseconds) override {
    replan_requests.push_back(request);
    Json plan = request.at("plan");
    for (Json& step : plan.at("steps")) {
      if (step.at("id") != request.at("failed_step")) continue;
      const std::string path = step.at("targets").at(0);
      step["content"] = {{path, fixed_}};
      step.erase("drafts");
    }
    return plan.dump();
  }
  std::vector<Json> replan_requests;

 private:
  executor::PlanProposer plan_;
  std::string fixed_;
};

TEST_F(BuildLoopInProcess, AllChecksPassingCompletesTheRunWithEveryStepCommittedAndRecorded) {
  FakeRunner runner;
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n"}, {"src/c.txt", "c\n"}}, runner);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);
  EXPECT_FALSE(summary->error_type.has_value());
  EXPECT_EQ(summary->steps_total, 3);
  EXPECT_EQ(summary->steps_completed, 3);
  ASSERT_EQ(summary->verdicts.size(), 3u);
  for (const auto& v : summary->verdicts) {
    EXPECT_TRUE(v.verdict.accepted) << v.step_id << ": " << v.verdict.to_json().dump();
    EXPECT_EQ(v.attempt, 1);
  }

  // The branch moved: one commit per step on top of the seed, in plan order, the last one
  // the summary's, each holding its step's file.
  EXPECT_EQ(summary->branch, kBranch);
  const std::vector<std::string> commits = branch_commits(place_.repo, kBranch);
  ASSERT_EQ(commits.size(), 3u);
  EXPECT_EQ(commits.back(), summary->commit);
  EXPECT_EQ(git(place_.repo, {"show", kBranch + ":src/a.txt"}), "a");
  EXPECT_EQ(git(place_.repo, {"show", kBranch + ":src/c.txt"}), "c");
  EXPECT_EQ(git(place_.repo, {"show", commits[0] + ":README.md"}), trim_newline(kSeedReadme));
  EXPECT_FALSE(run({find_program("git"), "-C", place_.repo.string(), "cat-file", "-e", commits[0] + ":src/b.txt"}).exited_with(0))
      << "the first commit holds only the first step's change";

  // The ledger holds one accepted decision per step, each commit record names the commit the
  // branch holds and the decision it rests on, and the run's last status is completed.
  auto records = ledger_records(place_.ledger);
  auto decisions = records_of<DecisionRecord>(records);
  auto commit_records = records_of<CommitRecord>(records);
  ASSERT_EQ(decisions.size(), 3u);
  ASSERT_EQ(commit_records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string step = "s" + std::to_string(i + 1);
    EXPECT_EQ(decisions[i].record.step_id, step);
    EXPECT_TRUE(decisions[i].record.verdict.accepted);
    const CommitRecord& c = commit_records[i].record;
    EXPECT_EQ(c.step_id, step);
    EXPECT_EQ(c.commit, commits[i]);
    EXPECT_EQ(c.tree, git(place_.repo, {"rev-parse", commits[i] + "^{tree}"}));
    EXPECT_EQ(c.parent, i == 0 ? git(place_.repo, {"rev-parse", "HEAD"}) : commits[i - 1]);
    EXPECT_EQ(c.decision_seq, decisions[i].seq);
  }
  auto statuses = records_of<RunStatusRecord>(records);
  ASSERT_FALSE(statuses.empty());
  EXPECT_EQ(statuses.back().record.status, RunStatus::completed);
  EXPECT_EQ(summary->ledger_size, records.size());
  EXPECT_FALSE(summary->checkpoint.empty());
  expect_replays(3, 3);
}

// One run per attempt, each on the tree the attempt's diff makes on the branch tip, layered
// over the run's start tree, with the policy's check; the runner is never asked about a step
// before the steps ahead of it are committed.
TEST_F(BuildLoopInProcess, TheRunnerIsAskedOncePerAttemptForExactlyTheTreeTheDiffMakes) {
  FakeRunner runner;
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n", {}, {"b BAD\n"}}}, runner);
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);

  auto records = ledger_records(place_.ledger);
  auto proposals = records_of<ProposalRecord>(records);
  auto results = records_of<RunResultRecord>(records);
  auto commit_records = records_of<CommitRecord>(records);
  const std::vector<SeenRun> seen = runner.seen();
  // s1 attempt 1, s2 attempt 1 (its BAD draft), s2 attempt 2.
  ASSERT_EQ(proposals.size(), 3u);
  ASSERT_EQ(seen.size(), proposals.size()) << "one run per proposal, nothing else (the check reports no tests)";
  ASSERT_EQ(results.size(), seen.size());
  ASSERT_EQ(commit_records.size(), 2u);

  const std::string start = seed_tree();
  for (size_t i = 0; i < seen.size(); ++i) {
    SCOPED_TRACE("run " + std::to_string(i));
    EXPECT_EQ(seen[i].base_tree, start) << "every tree is layered over the run's start tree";
    ASSERT_TRUE(seen[i].tree.has_value()) << "the kernel builds the tree under test itself";
    ASSERT_TRUE(seen[i].diff_sha256.has_value());
    EXPECT_EQ(*seen[i].diff_sha256, proposals[i].record.diff_sha256.value()) << "the run is of this attempt's diff";
    EXPECT_EQ(seen[i].checks, std::vector<std::string>{"tests"});
    EXPECT_FALSE(seen[i].reuse) << "a proposal's run is never taken from a cache";
    EXPECT_EQ(results[i].record.run_result.at("tree"), *seen[i].tree) << "the ledger records the run of that tree";
  }

  // The tree under test is the tip plus the diff: exactly these files, nothing more.
  using Files = std::map<std::string, std::string>;
  EXPECT_EQ(seen[0].files, (Files{{"README.md", kSeedReadme}, {"src/a.txt", "a\n"}}));
  EXPECT_EQ(seen[1].files, (Files{{"README.md", kSeedReadme}, {"src/a.txt", "a\n"}, {"src/b.txt", "b BAD\n"}}));
  EXPECT_EQ(seen[2].files, (Files{{"README.md", kSeedReadme}, {"src/a.txt", "a\n"}, {"src/b.txt", "b\n"}}));
  // What was checked is what landed; the refused attempt's tree landed nowhere.
  EXPECT_EQ(*seen[0].tree, commit_records[0].record.tree);
  EXPECT_EQ(*seen[2].tree, commit_records[1].record.tree);
  EXPECT_EQ(*seen[2].tree, git(place_.repo, {"rev-parse", kBranch + "^{tree}"}));
  EXPECT_NE(*seen[1].tree, commit_records[1].record.tree);
}

// A check failing refuses the attempt with the check as the reason, the refusal is recorded
// and reaches the executor, and its next proposal is judged afresh and accepted.
TEST_F(BuildLoopInProcess, AFailingCheckRefusesTheAttemptAndTheRetryIsAccepted) {
  FakeRunner runner;
  auto summary = build_with({{"src/a.txt", "a\n", {}, {"a BAD\n"}}}, runner);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);
  ASSERT_EQ(summary->verdicts.size(), 2u);
  EXPECT_FALSE(summary->verdicts[0].verdict.accepted);
  EXPECT_EQ(summary->verdicts[0].verdict.reason_codes(), std::vector<std::string>{"required_checks_failed"});
  EXPECT_EQ(summary->verdicts[0].verdict.reasons.front().detail, "tests: failed");
  ASSERT_EQ(summary->verdicts[0].checks_not_passing.size(), 1u);
  EXPECT_TRUE(summary->verdicts[1].verdict.accepted);
  EXPECT_EQ(summary->verdicts[1].attempt, 2);

  auto records = ledger_records(place_.ledger);
  auto decisions = records_of<DecisionRecord>(records);
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_FALSE(decisions[0].record.verdict.accepted);
  EXPECT_TRUE(decisions[1].record.verdict.accepted);
  auto refusals = records_of<kernel::ProposalRefusalRecord>(records);
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].record.report.step_id, "s1");
  EXPECT_EQ(refusals[0].record.report.attempt, 1);
  auto commit_records = records_of<CommitRecord>(records);
  ASSERT_EQ(commit_records.size(), 1u);
  EXPECT_EQ(commit_records[0].record.attempt, 2u);
  EXPECT_EQ(commit_records[0].record.decision_seq, decisions[1].seq);
  auto evidence = records_of<kernel::StepEvidenceRecord>(records);
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_TRUE(evidence[0].record.completed);
  EXPECT_EQ(evidence[0].record.retry_count, 1);
  EXPECT_EQ(git(place_.repo, {"show", kBranch + ":src/a.txt"}), "a");
  expect_replays(2, 1);
}

// A step that is refused max_retries times, with no replan left, ends the run REFUSED there:
// the steps after it are never proposed or run, and the branch stays at the last accepted
// commit.
TEST_F(BuildLoopInProcess, AStepWhoseChecksNeverPassEndsTheRunRefusedAfterItsRetries) {
  FakeRunner runner;
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b BAD\n", {}, {"b BAD 1\n"}}, {"src/c.txt", "c\n"}}, runner,
                            {.max_retries = 2, .max_replans = 0});
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::refused) << summary->to_json().dump(2);
  EXPECT_EQ(summary->error_type, ErrorType::refused);
  EXPECT_EQ(summary->error, "step s2 was refused 2 times; no replans left");
  EXPECT_EQ(summary->steps_completed, 1);

  const std::vector<SeenRun> seen = runner.seen();
  ASSERT_EQ(seen.size(), 3u) << "s1 once, s2 once per retry, s3 never";
  for (const SeenRun& s : seen) EXPECT_FALSE(s.files.contains("src/c.txt"));

  auto records = ledger_records(place_.ledger);
  auto commit_records = records_of<CommitRecord>(records);
  ASSERT_EQ(commit_records.size(), 1u);
  EXPECT_EQ(commit_records[0].record.step_id, "s1");
  EXPECT_EQ(git(place_.repo, {"rev-parse", kBranch}), commit_records[0].record.commit);
  std::set<std::string> proposed;
  for (const auto& p : records_of<ProposalRecord>(records)) proposed.insert(p.record.step_id);
  EXPECT_EQ(proposed, (std::set<std::string>{"s1", "s2"}));
  auto decisions = records_of<DecisionRecord>(records);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_FALSE(decisions[1].record.verdict.accepted);
  EXPECT_FALSE(decisions[2].record.verdict.accepted);
  auto evidence = records_of<kernel::StepEvidenceRecord>(records);
  ASSERT_EQ(evidence.size(), 2u);
  EXPECT_EQ(evidence[1].record.step_id, "s2");
  EXPECT_FALSE(evidence[1].record.completed);
  EXPECT_EQ(evidence[1].record.retry_count, 1);
  EXPECT_EQ(records_of<RunStatusRecord>(records).back().record.status, RunStatus::refused);
  expect_replays(3, 1);
}

// With a replan left, the step out of retries goes to the executor for a replacement plan;
// the kernel commits it and walks it from its first step not done, so the steps already
// committed are not run again.
TEST_F(BuildLoopInProcess, AReplacementPlanTakesOverFromTheStepThatRanOutOfRetries) {
  FakeRunner runner;
  FixingProposer proposer("b fixed\n");
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b BAD\n", {}, {"b BAD 1\n"}}, {"src/c.txt", "c\n"}}, runner,
                            {.max_retries = 2, .max_replans = 1}, &proposer);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);
  EXPECT_EQ(summary->replans, 1);
  EXPECT_EQ(summary->steps_completed, 3);

  ASSERT_EQ(proposer.replan_requests.size(), 1u);
  EXPECT_EQ(proposer.replan_requests[0].at("failed_step"), "s2");
  EXPECT_EQ(proposer.replan_requests[0].at("completed_steps"), Json::array({"s1"}));
  EXPECT_EQ(proposer.replan_requests[0].at("refusals").size(), 2u) << "both of s2's refusals, for the executor to learn from";

  // s1, s2 twice, then the replacement's s2 and s3: s1 is not run again.
  const std::vector<SeenRun> seen = runner.seen();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[3].files.at("src/b.txt"), "b fixed\n");
  auto records = ledger_records(place_.ledger);
  EXPECT_EQ(records_of<kernel::PlanCommitRecord>(records).size(), 2u) << "the generated plan and the replacement";
  std::vector<std::string> committed;
  for (const auto& c : records_of<CommitRecord>(records)) committed.push_back(c.record.step_id);
  EXPECT_EQ(committed, (std::vector<std::string>{"s1", "s2", "s3"}));
  EXPECT_EQ(git(place_.repo, {"show", kBranch + ":src/b.txt"}), "b fixed");
}

// A runner that cannot run (a Refusal, not a failed check) is no evidence either way: the run
// fails at that step as an execution error, nothing is decided or committed for it, and the
// executor is not asked again.
TEST_F(BuildLoopInProcess, ARunnerThatCannotRunFailsTheRunAtThatStep) {
  FakeRunner runner;
  runner.unavailable_from = 1;  // s1's run works, s2's does not
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n"}}, runner);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::failed) << summary->to_json().dump(2);
  EXPECT_EQ(summary->error_type, ErrorType::execution_error);
  EXPECT_NE(summary->error.find("the sandbox is gone"), std::string::npos) << summary->error;
  EXPECT_EQ(summary->steps_completed, 1);
  EXPECT_EQ(runner.seen().size(), 2u);

  auto records = ledger_records(place_.ledger);
  std::vector<std::string> proposed, decided;
  for (const auto& p : records_of<ProposalRecord>(records)) proposed.push_back(p.record.step_id);
  for (const auto& d : records_of<DecisionRecord>(records)) decided.push_back(d.record.step_id);
  EXPECT_EQ(proposed, (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(decided, std::vector<std::string>{"s1"});
  EXPECT_EQ(records_of<CommitRecord>(records).size(), 1u);
  EXPECT_EQ(branch_commits(place_.repo, kBranch).size(), 1u);
  EXPECT_EQ(records_of<RunStatusRecord>(records).back().record.status, RunStatus::failed);
}

// Results are comparable only within one environment: a runner whose result says its checks
// ran in an environment the policy does not name (here, any: the policy runs on the host's
// /usr) is not believed, and nothing is decided or committed on it.
TEST_F(BuildLoopInProcess, AResultFromAnotherEnvironmentThanThePolicysEndsTheRunWithoutACommit) {
  FakeRunner runner;
  runner.environment = sha256("some other root file system");
  auto summary = build_with({{"src/a.txt", "a\n"}}, runner);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, RunStatus::failed) << summary->to_json().dump(2);
  EXPECT_EQ(summary->error_type, ErrorType::execution_error);
  EXPECT_NE(summary->error.find("ran the checks in environment " + runner.environment->str() + ", not in the host's /usr"),
            std::string::npos)
      << summary->error;
  auto records = ledger_records(place_.ledger);
  EXPECT_TRUE(records_of<DecisionRecord>(records).empty());
  EXPECT_TRUE(records_of<CommitRecord>(records).empty());
}

// A check that reports tests makes the loop test each step's base too, so a proposal can be
// held to the tests that passed there. The run's start is tested once; after that the
// accepted run that made the branch tip is the next step's base run, and nothing runs twice.
TEST_F(BuildLoopInProcess, AReportingCheckTestsTheStartOnceThenEachAcceptedRunIsTheNextBase) {
  FakeRunner runner;
  auto summary = build_with({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n"}, {"src/c.txt", "c\n"}}, runner,
                            {.reports_tests = true});
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);

  const std::vector<SeenRun> seen = runner.seen();
  ASSERT_EQ(seen.size(), 4u) << "the start tree's tests, then one run per step";
  EXPECT_FALSE(seen[0].diff_sha256.has_value());
  EXPECT_EQ(seen[0].tree, seed_tree());
  EXPECT_TRUE(seen[0].reuse) << "the base's run may come from a cache";
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_TRUE(seen[i].diff_sha256.has_value());

  auto records = ledger_records(place_.ledger);
  auto base_runs = records_of<kernel::BaseRunRecord>(records);
  ASSERT_EQ(base_runs.size(), 1u);
  EXPECT_EQ(base_runs[0].record.step_id, "s1");
  auto results = records_of<RunResultRecord>(records);
  auto decisions = records_of<DecisionRecord>(records);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].record.base_run_seq, base_runs[0].seq);
  EXPECT_EQ(decisions[1].record.base_run_seq, results[0].seq) << "s1's accepted run is s2's base";
  EXPECT_EQ(decisions[2].record.base_run_seq, results[1].seq);
  expect_replays(3, 3);
}

}  // namespace
}  // namespace warden::test
