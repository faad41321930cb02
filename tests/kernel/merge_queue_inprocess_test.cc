// The merge queue (kernel/build/merge_queue.h) driven in-process: kernel::run_build on a
// blueprint that sets merge_queue_depth, with a FakeRunner (inprocess_build.h) behind
// KernelSession::runner. The queue's pool shares a runner that says it takes concurrent runs
// between all its jobs, so the fake sees the window's runs as the queue prefetches them, from
// several worker threads, and can make them finish in any order.
//
// What merge_queue.h promises, and these tests hold it to:
//   - a round's window is the uncommitted steps in commit order (commit_order.h), up to the
//     first whose dependencies are not all committed;
//   - the window's steps are checked at once, yet land one by one in commit order, each
//     commit checked on exactly the tree it creates;
//   - a refused step is not merged; every speculation built on it is thrown away and recorded,
//     and the steps behind it keep their proposals and land once checked on the corrected tree;
//   - the ledger does not depend on timing or on the number of jobs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "tests/kernel/inprocess_build.h"

namespace warden::test {
namespace {

using kernel::CommitRecord;
using kernel::DecisionRecord;
using kernel::RunEvent;
using kernel::RunEventType;
using kernel::RunStatus;
using kernel::SpeculationRecord;
using namespace std::chrono_literals;

const std::string kBranch = "refs/heads/warden/inprocess";

// The files under src/ a tree holds: the further back in commit order a step is, the more.
size_t src_files(const SeenRun& run) {
  return static_cast<size_t>(std::count_if(run.files.begin(), run.files.end(), [](const auto& f) { return f.first.starts_with("src/"); }));
}

// Runs on trees with fewer steps in them take longer: the steps behind finish first, the
// reverse of the order they must land in.
std::chrono::milliseconds later_steps_finish_first(const SeenRun& run) {
  return std::chrono::milliseconds(40 * (6 - static_cast<int64_t>(std::min<size_t>(src_files(run), 5))));
}

// One queue build in its own temp dir; the run's events kept (the queue emits them from the
// build's thread, the one that calls run_build).
class MergeQueueInProcess : public ::testing::Test {
 protected:
  Result<kernel::BuildSummary> build_queue(const std::vector<Change>& changes, FakeRunner& runner, int jobs,
                                           const BlueprintShape& shape) {
    blueprint_ = write_blueprint(dir_.path(), changes, shape);
    executor::PlanProposer proposer;
    return build(*blueprint_, dir_.path(), place_, signer_, runner, proposer, jobs,
                 [this](const RunEvent& e) { events_.push_back(e); });
  }

  // The data of each queue_updated event that says what a round put in flight, in order.
  std::vector<Json> rounds() const {
    std::vector<Json> out;
    for (const RunEvent& e : events_) {
      if (e.type == RunEventType::queue_updated && e.data.contains("in_flight")) out.push_back(e.data);
    }
    return out;
  }

  static std::vector<std::string> step_ids(const Json& list) {
    std::vector<std::string> out;
    for (const Json& entry : list) out.push_back(entry.is_string() ? entry.get<std::string>() : entry.at("step_id").get<std::string>());
    return out;
  }

  TempDir dir_;
  BuildPlace place_{dir_ / "repo", dir_ / "ledger"};
  NoteSigner signer_ = NoteSigner::generate("warden.test/merge-queue-inprocess").value();
  std::optional<kernel::BlueprintSpec> blueprint_;
  std::vector<RunEvent> events_;
};

// s1 waits for s4, so the commit order is s2, s3, s4, s1 (dependencies, then plan order).
// Round one's window is s2, s3, s4 (it ends at s1, whose dependency is not committed), run at
// once and made to finish back to front; they still land in commit order on a linear branch.
TEST_F(MergeQueueInProcess, ReadyStepsRunAtOnceAndLandOneByOneInCommitOrder) {
  FakeRunner runner(/*concurrent=*/true);
  runner.latency = later_steps_finish_first;
  auto summary = build_queue({{"src/a.txt", "a\n", {"src/d.txt"}}, {"src/b.txt", "b\n"}, {"src/c.txt", "c\n"}, {"src/d.txt", "d\n"}},
                             runner, 4, {.merge_queue_depth = 4});
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);
  EXPECT_EQ(summary->jobs, 4);

  const std::vector<Json> r = rounds();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(step_ids(r[0].at("in_flight")), (std::vector<std::string>{"s2", "s3", "s4"}));
  EXPECT_EQ(step_ids(r[1].at("in_flight")), std::vector<std::string>{"s1"});
  EXPECT_GE(runner.max_in_flight(), 2) << "the window's runs were prefetched on the pool, not run one by one";

  auto records = ledger_records(place_.ledger);
  auto commits = records_of<CommitRecord>(records);
  std::vector<std::string> landed;
  for (const auto& c : commits) landed.push_back(c.record.step_id);
  EXPECT_EQ(landed, (std::vector<std::string>{"s2", "s3", "s4", "s1"}));

  // Linear: each commit's parent is the one before it, and the branch holds exactly these.
  const std::vector<std::string> on_branch = branch_commits(place_.repo, kBranch);
  ASSERT_EQ(on_branch.size(), commits.size());
  EXPECT_EQ(git(place_.repo, {"rev-list", "--min-parents=2", kBranch}), "") << "no merge commits";
  const std::vector<SeenRun> seen = runner.seen();
  for (size_t i = 0; i < commits.size(); ++i) {
    const CommitRecord& c = commits[i].record;
    SCOPED_TRACE(c.step_id);
    EXPECT_EQ(c.commit, on_branch[i]);
    if (i > 0) {
      EXPECT_EQ(c.parent, commits[i - 1].record.commit);
    }
    // Checked on exactly the tree it creates, with exactly its diff.
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const SeenRun& s) {
      return s.tree == c.tree && s.diff_sha256 == c.proposal_sha256;
    }));
  }
  // s1 was checked on a tree that holds every step ahead of it.
  const auto s1 = std::find_if(seen.begin(), seen.end(), [&](const SeenRun& s) { return s.tree == commits.back().record.tree; });
  ASSERT_NE(s1, seen.end());
  EXPECT_EQ(src_files(*s1), 4u);
}

// The window ends at the first step whose dependencies are not all committed, even when a
// step behind it is ready: s3 is independent but waits behind s2 (which waits for s1), so the
// executor is not asked for s3 until s1 has landed.
TEST_F(MergeQueueInProcess, TheWindowEndsAtTheFirstStepWaitingForAnUncommittedDependency) {
  FakeRunner runner(/*concurrent=*/true);
  auto summary = build_queue({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n", {"src/a.txt"}}, {"src/c.txt", "c\n"}}, runner, 4,
                             {.merge_queue_depth = 4});
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);

  const std::vector<Json> r = rounds();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(step_ids(r[0].at("in_flight")), std::vector<std::string>{"s1"});
  EXPECT_EQ(step_ids(r[1].at("in_flight")), (std::vector<std::string>{"s2", "s3"}));
  // Before round one's runs, the executor was called for s1 alone.
  std::vector<std::string> asked_first;
  for (const RunEvent& e : events_) {
    if (e.type == RunEventType::queue_updated) break;
    if (e.type == RunEventType::tool_called) asked_first.push_back(e.data.at("step_id"));
  }
  EXPECT_EQ(asked_first, std::vector<std::string>{"s1"});
  EXPECT_EQ(runner.seen().front().files.count("src/c.txt"), 0u);
}

// s2's first proposal fails its check. s1 lands; s2 is not merged; the runs prefetched for s3
// and s4 on a tree holding s2's refused proposal are thrown away and recorded as built on it;
// next round s3 and s4 keep their proposals (still attempt 1) and land after s2's retry, each
// checked on the corrected tree.
TEST_F(MergeQueueInProcess, ARefusedStepIsNotMergedAndTheStepsBehindItLandOnTheCorrectedTree) {
  FakeRunner runner(/*concurrent=*/true);
  auto summary = build_queue({{"src/a.txt", "a\n"}, {"src/b.txt", "b\n", {}, {"b BAD\n"}}, {"src/c.txt", "c\n"}, {"src/d.txt", "d\n"}},
                             runner, 2, {.merge_queue_depth = 4});
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_EQ(summary->status, RunStatus::completed) << summary->to_json().dump(2);

  auto records = ledger_records(place_.ledger);
  auto commits = records_of<CommitRecord>(records);
  std::vector<std::pair<std::string, uint64_t>> landed;
  for (const auto& c : commits) landed.emplace_back(c.record.step_id, c.record.attempt);
  EXPECT_EQ(landed, (std::vector<std::pair<std::string, uint64_t>>{{"s1", 1}, {"s2", 2}, {"s3", 1}, {"s4", 1}}));

  // The refused attempt's tree is nowhere on the branch.
  std::set<std::string> committed_trees;
  for (const auto& c : commits) committed_trees.insert(c.record.tree);
  for (const std::string& commit : branch_commits(place_.repo, kBranch)) {
    ProcessResult grep = run({find_program("git"), "-C", place_.repo.string(), "grep", "-q", "BAD", commit, "--", "src"});
    EXPECT_TRUE(grep.exited_with(1)) << commit << " holds a file saying BAD (" << grep.status() << ")";
  }

  // Speculations behind s2 are recorded with the reason, on trees that held its refused draft.
  auto speculations = records_of<SpeculationRecord>(records);
  std::vector<std::string> thrown_away;
  const std::vector<SeenRun> seen = runner.seen();
  for (const auto& s : speculations) {
    thrown_away.push_back(s.record.step_id);
    EXPECT_EQ(s.record.run, "checks");
    EXPECT_EQ(s.record.attempt, 1);
    EXPECT_EQ(s.record.reason, "built on s2 attempt 1, which was refused");
    EXPECT_FALSE(committed_trees.contains(s.record.tree));
    const auto ran = std::find_if(seen.begin(), seen.end(), [&](const SeenRun& r) { return r.tree == s.record.tree; });
    ASSERT_NE(ran, seen.end()) << "a speculation names a run the runner was asked for";
    EXPECT_EQ(ran->files.at("src/b.txt"), "b BAD\n");
  }
  EXPECT_EQ(thrown_away, (std::vector<std::string>{"s3", "s4"}));

  // Decisions judge only runs on the trees that land: none for a thrown-away speculation.
  std::vector<std::pair<std::string, bool>> decided;
  for (const auto& d : records_of<DecisionRecord>(records)) decided.emplace_back(d.record.step_id, d.record.verdict.accepted);
  EXPECT_EQ(decided, (std::vector<std::pair<std::string, bool>>{{"s1", true}, {"s2", false}, {"s2", true}, {"s3", true}, {"s4", true}}));
  // s3 was asked about twice: on the speculative tree, then on the one it created.
  const std::string s3_tree = commits[2].record.tree;
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const SeenRun& r) { return r.files.contains("src/c.txt") && !r.files.contains("src/d.txt"); }), 2);
  const auto s3 = std::find_if(seen.begin(), seen.end(), [&](const SeenRun& r) { return r.tree == s3_tree; });
  ASSERT_NE(s3, seen.end());
  EXPECT_EQ(s3->files.at("src/b.txt"), "b\n");
}

// The same blueprint at one job (every run in turn) and at four (runs at once, finishing back
// to front) leaves the same ledger, byte for byte, and the same branch.
TEST_F(MergeQueueInProcess, TheLedgerIsTheSameAtOneJobAndAtFour) {
  const std::vector<Change> changes = {{"src/a.txt", "a\n"},
                                       {"src/b.txt", "b\n", {}, {"b BAD\n"}},
                                       {"src/c.txt", "c\n", {"src/a.txt"}},
                                       {"src/d.txt", "d\n"},
                                       {"src/e.txt", "e\n"}};
  const BlueprintShape shape{.merge_queue_depth = 4};
  const kernel::BlueprintSpec blueprint = write_blueprint(dir_.path(), changes, shape);
  struct Built {
    kernel::BuildSummary summary;
    std::vector<Record> records;
    int max_in_flight = 0;
  };
  auto build_at = [&](int jobs) -> Built {
    const BuildPlace place{dir_ / ("repo-" + std::to_string(jobs)), dir_ / ("ledger-" + std::to_string(jobs))};
    FakeRunner runner(/*concurrent=*/true);
    runner.latency = later_steps_finish_first;
    executor::PlanProposer proposer;
    auto summary = build(blueprint, dir_.path(), place, signer_, runner, proposer, jobs);
    if (!summary) throw std::runtime_error(summary.error().message);
    return Built{*summary, ledger_records(place.ledger), runner.max_in_flight()};
  };
  const Built one = build_at(1), four = build_at(4);
  ASSERT_EQ(one.summary.status, RunStatus::completed) << one.summary.to_json().dump(2);
  ASSERT_EQ(four.summary.status, RunStatus::completed) << four.summary.to_json().dump(2);
  EXPECT_EQ(one.summary.jobs, 1);
  EXPECT_EQ(four.summary.jobs, 4);
  EXPECT_EQ(one.max_in_flight, 1);
  EXPECT_GE(four.max_in_flight, 2) << "at four jobs the runs overlapped, so timing could have shown";

  ASSERT_EQ(one.records.size(), four.records.size());
  for (size_t i = 0; i < one.records.size(); ++i) {
    ASSERT_EQ(one.records[i].canonical_bytes(), four.records[i].canonical_bytes()) << "first difference at seq " << i;
  }
  EXPECT_EQ(one.summary.root_hex, four.summary.root_hex);
  EXPECT_EQ(one.summary.commit, four.summary.commit);
  EXPECT_EQ(one.summary.verdicts.size(), 6u) << "five steps and one refusal";
}

}  // namespace
}  // namespace warden::test
