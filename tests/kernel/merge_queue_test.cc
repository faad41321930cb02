// Parallel plans end to end: blueprints whose plans set merge_queue_depth, built by the real
// binary in the real sandbox. What must hold whatever the number of jobs: the branch is
// linear, in commit order (commit_order.h), and every commit on it was checked on exactly the
// tree it creates (replay --rerun re-derives each tree and runs its checks again); the ledger
// is byte-identical at --jobs 1 and --jobs 4, also when the executor answers out of order;
// speculations built on a refused step are recorded and checked again; a proposal whose files
// a committed step changed is proposed again with the new context; a build killed mid-round
// leaves a ledger that verifies and replays, and a branch of accepted commits only.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "tests/kernel/build_fixture.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// One file the blueprint writes: a `modify` step of the plan.
struct Change {
  std::string path;
  std::string content;
  std::vector<std::string> after = {};   // paths whose steps must be committed first
  std::vector<std::string> drafts = {};  // proposed first, one per attempt
};

// A blueprint of `changes` under a policy whose one check fails when any file under src/
// says BAD, after sleeping `check_sleep` seconds. Returns the blueprint's path.
fs::path write_blueprint(const fs::path& dir, const std::vector<Change>& changes, int depth,
                         const std::string& check_sleep = "0") {
  json list = json::array();
  for (const Change& c : changes) {
    json entry = {{"path", c.path}, {"content", c.content}};
    if (!c.after.empty()) entry["after"] = c.after;
    if (!c.drafts.empty()) entry["drafts"] = c.drafts;
    list.push_back(entry);
  }
  json blueprint = {{"format", "warden.blueprint/v1"},
                    {"name", "queue"},
                    {"language", "other"},
                    {"repository", {{"seed", "seed"}, {"base", "HEAD"}}},
                    {"goals", {"files built by a merge queue"}},
                    {"policy", "policy.json"},
                    {"changes", list},
                    {"constraints",
                     {{"allowed_paths", {"src/**"}},
                      {"max_retries", 3},
                      {"max_replans", 0},
                      {"step_timeout_ms", 60000},
                      {"merge_queue_depth", depth}}}};
  json policy = {{"format", "warden.policy/v1"},
                 {"name", "queue"},
                 {"language", "other"},
                 {"description", "one check: no file under src/ says BAD"},
                 {"sandbox_profile", "default"},
                 {"checks", {{{"name", "tests"}, {"argv", {"sh", "-c", "sleep " + check_sleep + "; ! grep -rqs BAD src"}}}}},
                 {"required_checks", {"tests"}},
                 {"allow_paths", {"**"}},
                 {"protected_paths", {".warden/**"}},
                 {"invariants", json::object()}};
  fs::create_directories(dir / "seed");
  write_file(dir / "seed" / "README.md", "files built by a merge queue\n");
  write_file(dir / "blueprint.json", blueprint.dump(2));
  write_file(dir / "policy.json", policy.dump(2));
  return dir / "blueprint.json";
}

std::vector<Change> independent(int n) {
  std::vector<Change> out;
  for (int i = 1; i <= n; ++i) out.push_back({"src/f" + std::to_string(i) + ".txt", "file " + std::to_string(i) + "\n"});
  return out;
}

// The golden runs' test key: two builds signed alike differ only in what they recorded.
fs::path test_key() { return fs::path(WARDEN_SOURCE_DIR) / "tests" / "golden" / "signer.key"; }

ProcessResult build(const fs::path& blueprint, const fs::path& out, int jobs, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"build",  blueprint.string(), "--out", out.string(), "--clock",
                                   "logical", "--jobs",          std::to_string(jobs),   "--policy",
                                   (blueprint.parent_path() / "policy.json").string(), "--key", test_key().string(),
                                   "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return warden(args);
}

std::string exported_records(const fs::path& ledger, const fs::path& out) {
  auto exported = warden({"ledger", "export", ledger.string(), out.string()});
  EXPECT_TRUE(exported.exited_with(0)) << describe(exported);
  return read_file(out / "records.jsonl");
}

// The branch's steps, oldest first, from the commits' Warden-Step trailers.
std::vector<std::string> branch_steps(const fs::path& repo, const std::string& branch) {
  std::vector<std::string> out;
  for (const auto& line : complete_lines(git_in(repo, {"log", "--reverse", "--format=%(trailers:key=Warden-Step,valueonly)", "main.." + branch}))) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// The queue_updated events' in-flight steps, one list per round.
std::vector<std::vector<std::string>> rounds(const std::vector<json>& records) {
  std::vector<std::vector<std::string>> out;
  for (const json& e : payloads(records, "run_event")) {
    if (e["event_type"] != "queue_updated" || !e["data"].contains("in_flight")) continue;
    std::vector<std::string> steps;
    for (const json& f : e["data"]["in_flight"]) steps.push_back(f["step_id"]);
    out.push_back(steps);
  }
  return out;
}

// Replay recomputes every decision from the recorded inputs, holds each run result to the
// tree its commit made and each proposal's pre-images to the tree it was decided on, and the
// branch to the ledger's last commit. (--rerun needs a builtin policy: the textkit test.)
void expect_replays(const fs::path& out) {
  auto replayed = warden({"replay", (out / "ledger").string(), "--repo", (out / "repo").string(), "--key",
                          (fs::path(WARDEN_SOURCE_DIR) / "tests" / "golden" / "verifier.key").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  EXPECT_TRUE(stdout_json(replayed)["ok"].get<bool>()) << replayed.out;
}

TEST(MergeQueue, EightIndependentStepsLandInPlanOrderWithTheSameLedgerAtEveryJobs) {
  TempDir tmp;
  const fs::path bp = write_blueprint(tmp / "bp", independent(8), 8);
  auto one = build(bp, tmp / "j1", 1);
  ASSERT_TRUE(one.exited_with(0)) << describe(one);
  auto four = build(bp, tmp / "j4", 4);
  ASSERT_TRUE(four.exited_with(0)) << describe(four);
  EXPECT_EQ(stdout_json(four)["status"], "completed");
  EXPECT_EQ(exported_records(tmp / "j1" / "ledger", tmp / "e1"), exported_records(tmp / "j4" / "ledger", tmp / "e4"));

  EXPECT_EQ(branch_steps(tmp / "j4" / "repo", "warden/queue"),
            (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}));
  auto records = ledger_records(tmp / "j4" / "ledger");
  auto r = rounds(records);
  ASSERT_EQ(r.size(), 1u) << "all eight in one round";
  EXPECT_EQ(r[0].size(), 8u);
  EXPECT_EQ(payloads(records, "decision").size(), 8u);
  // The speculation held: no check ran twice, nothing was thrown away.
  EXPECT_EQ(payloads(records, "run_result").size(), 8u);
  EXPECT_TRUE(payloads(records, "speculation").empty());
  expect_branch_holds_only_accepted(tmp / "j4" / "repo", "main", "warden/queue", records);
  expect_replays(tmp / "j4");
}

TEST(MergeQueue, ADiamondLandsInDependencyOrderWhateverThePlanOrder) {
  TempDir tmp;
  // Listed last-first: d after b and c, b and c after a.
  const fs::path bp = write_blueprint(tmp / "bp",
                                      {{"src/d.txt", "d\n", {"src/b.txt", "src/c.txt"}},
                                       {"src/b.txt", "b\n", {"src/a.txt"}},
                                       {"src/c.txt", "c\n", {"src/a.txt"}},
                                       {"src/a.txt", "a\n"}},
                                      8);
  auto built = build(bp, tmp / "out", 4);
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  // s1 = d, s2 = b, s3 = c, s4 = a.
  EXPECT_EQ(branch_steps(tmp / "out" / "repo", "warden/queue"), (std::vector<std::string>{"s4", "s2", "s3", "s1"}));
  auto records = ledger_records(tmp / "out" / "ledger");
  EXPECT_EQ(rounds(records), (std::vector<std::vector<std::string>>{{"s4"}, {"s2", "s3"}, {"s1"}}));
  // `warden run status` shows the queue's latest round from the ledger.
  auto status = warden({"run", "status", stdout_json(built)["run_id"], "--ledger", (tmp / "out" / "ledger").string(), "--json"});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  json queue = stdout_json(status)["queue"];
  EXPECT_EQ(queue["round"], 3) << queue.dump();
  ASSERT_EQ(queue["in_flight"].size(), 1u) << queue.dump();
  EXPECT_EQ(queue["in_flight"][0]["step_id"], "s1");
  expect_replays(tmp / "out");
}

TEST(MergeQueue, ARefusedMiddleStepInvalidatesEverySpeculationBehindIt) {
  TempDir tmp;
  auto changes = independent(8);
  changes[2].drafts = {"BAD\n"};  // s3's first proposal fails the check
  const fs::path bp = write_blueprint(tmp / "bp", changes, 8);
  auto built = build(bp, tmp / "out", 4);
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  auto records = ledger_records(tmp / "out" / "ledger");

  std::vector<std::string> verdicts;
  for (const json& d : payloads(records, "decision")) {
    verdicts.push_back(d["step_id"].get<std::string>() + "#" + std::to_string(d["attempt"].get<int>()) + "=" +
                       (d["verdict"]["accepted"].get<bool>() ? "accepted" : "refused"));
  }
  EXPECT_EQ(verdicts, (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                "s4#1=accepted", "s5#1=accepted", "s6#1=accepted", "s7#1=accepted",
                                                "s8#1=accepted"}));
  // s4..s8 had been checked on a tree holding s3's refused draft: each of those runs is
  // recorded as thrown away, in the order started, and checked again on the corrected tree.
  std::vector<std::string> discarded;
  for (const json& s : payloads(records, "speculation")) {
    EXPECT_EQ(s["reason"], "built on s3 attempt 1, which was refused") << s.dump();
    EXPECT_EQ(s["run"], "checks");
    discarded.push_back(s["step_id"]);
  }
  EXPECT_EQ(discarded, (std::vector<std::string>{"s4", "s5", "s6", "s7", "s8"}));
  EXPECT_EQ(rounds(records), (std::vector<std::vector<std::string>>{{"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"},
                                                                    {"s3", "s4", "s5", "s6", "s7", "s8"}}));
  EXPECT_EQ(branch_steps(tmp / "out" / "repo", "warden/queue"),
            (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}));
  expect_replays(tmp / "out");
}

TEST(MergeQueue, AProposalWhoseFilesAStepAheadChangedIsProposedAgainOnTheNewHead) {
  TempDir tmp;
  // s1 and s2 both rewrite src/shared.txt and neither depends on the other: s2's first
  // proposal is made against the seed's file, which s1 changes before s2 lands.
  const fs::path bp = write_blueprint(tmp / "bp", {{"src/shared.txt", "from s1\n"}, {"src/shared.txt", "from s2\n"}}, 8);
  fs::create_directories(tmp / "bp" / "seed" / "src");
  write_file(tmp / "bp" / "seed" / "src" / "shared.txt", "seed\n");
  auto built = build(bp, tmp / "out", 2);
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  auto records = ledger_records(tmp / "out" / "ledger");
  std::vector<std::string> decided;
  for (const json& d : payloads(records, "decision")) {
    decided.push_back(d["step_id"].get<std::string>() + "#" + std::to_string(d["attempt"].get<int>()));
    EXPECT_TRUE(d["verdict"]["accepted"].get<bool>()) << d.dump();
  }
  // Not an attempt of s2's: the executor was shown the head it had.
  EXPECT_EQ(decided, (std::vector<std::string>{"s1#1", "s2#1"}));
  EXPECT_EQ(rounds(records), (std::vector<std::vector<std::string>>{{"s1"}, {"s2"}}))
      << "s2's proposal does not apply on s1's tree, so it is not checked there";
  EXPECT_EQ(git_in(tmp / "out" / "repo", {"show", "warden/queue:src/shared.txt"}), "from s2\n");
  expect_replays(tmp / "out");
}

TEST(MergeQueue, AnExecutorAnsweringOutOfOrderLeavesTheLedgerAsAtOneJob) {
  TempDir tmp;
  const fs::path bp = write_blueprint(tmp / "bp", independent(6), 8);
  // Answers each step with a git patch, the later steps first: s6 sleeps least.
  write_file(tmp / "bp" / "agent.py", R"(import json, sys, time
req = json.load(sys.stdin)
step = req["step"]
n = int(step["id"][1:])
time.sleep(0.08 * (7 - n))
path = step["targets"][0]
body = step["content"][path]
lines = body.splitlines()
sys.stdout.write("diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n" % (path, path, path, len(lines)))
for l in lines:
    sys.stdout.write("+" + l + "\n")
)");
  const std::string executor = "command:/usr/bin/python3 agent.py";
  auto one = build(bp, tmp / "j1", 1, {"--executor", executor});
  ASSERT_TRUE(one.exited_with(0)) << describe(one);
  auto four = build(bp, tmp / "j4", 4, {"--executor", executor});
  ASSERT_TRUE(four.exited_with(0)) << describe(four);
  EXPECT_EQ(exported_records(tmp / "j1" / "ledger", tmp / "e1"), exported_records(tmp / "j4" / "ledger", tmp / "e4"));
  EXPECT_EQ(branch_steps(tmp / "j4" / "repo", "warden/queue"), (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5", "s6"}));
  expect_replays(tmp / "j4");
}

TEST(MergeQueue, ABuildKilledMidRoundLeavesALedgerThatReplaysAndABranchOfAcceptedCommits) {
  TempDir tmp;
  auto changes = independent(8);
  changes[4].drafts = {"BAD\n"};
  const fs::path bp = write_blueprint(tmp / "bp", changes, 8, "0.3");
  const fs::path out = tmp / "out";
  Child child = Child::spawn({warden_binary(), "build", bp.string(), "--out", out.string(), "--jobs", "2", "--policy",
                              (tmp / "bp" / "policy.json").string()});
  // Killed once some steps are on the branch and others are in flight.
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = run({find_program("git"), "-C", (out / "repo").string(), "rev-list", "--count", "main..warden/queue"});
        return r.exited_with(0) && std::stoi(r.out) >= 2;
      },
      60s))
      << "no commit landed";
  child.kill(SIGKILL);
  (void)child.wait();

  // Killed before it signed a checkpoint: the records verify as an unsigned tail.
  auto verified = warden({"ledger", "verify", (out / "ledger").string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
  auto replayed = warden({"replay", (out / "ledger").string(), "--repo", (out / "repo").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  auto records = ledger_records(out / "ledger");
  expect_branch_holds_only_accepted(out / "repo", "main", "warden/queue", records);
  // The branch holds a prefix of the commit order, each confirmed by a commit record.
  auto steps = branch_steps(out / "repo", "warden/queue");
  auto commits = payloads(records, "commit");
  ASSERT_LE(steps.size(), commits.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i], "s" + std::to_string(i + 1));
    EXPECT_EQ(commits[i]["step_id"], steps[i]);
  }
}

// A tested program's attack on speculation: checks that run at the same time try to reach
// each other through every place a sandbox might share (/tmp, /var/tmp, /dev/shm, $HOME, the
// workspace) — a test that passes because a neighbour wrote a file would be accepted on a
// tree that does not pass alone. Each check leaves a marker named after its own tree (its
// step's file count), waits while the others run, and fails if it sees anyone else's. At
// four jobs every check must still pass, and the ledger be the one of one job.
TEST(MergeQueue, ChecksRunningAtOnceCannotReachEachOther) {
  TempDir tmp;
  const fs::path bp = write_blueprint(tmp / "bp", independent(6), 8);
  json policy = json::parse(read_file(tmp / "bp" / "policy.json"));
  policy["checks"][0]["argv"] = {
      "sh", "-c",
      "me=marker-$(ls src | wc -l); for d in /tmp /var/tmp /dev/shm \"$HOME\" .; do "
      "[ -d \"$d\" ] && [ -w \"$d\" ] && : > \"$d/$me\" 2>/dev/null; done; sleep 0.5; "
      "for d in /tmp /var/tmp /dev/shm \"$HOME\" .; do "
      "for f in \"$d\"/marker-*; do [ -e \"$f\" ] || continue; [ \"${f##*/}\" = \"$me\" ] || { echo saw $f; exit 1; }; done; done"};
  write_file(tmp / "bp" / "policy.json", policy.dump(2));
  auto four = build(bp, tmp / "j4", 4);
  ASSERT_TRUE(four.exited_with(0)) << describe(four);
  auto records = ledger_records(tmp / "j4" / "ledger");
  for (const json& d : payloads(records, "decision")) EXPECT_TRUE(d["verdict"]["accepted"].get<bool>()) << d.dump();
  EXPECT_EQ(payloads(records, "commit").size(), 6u);
  auto one = build(bp, tmp / "j1", 1);
  ASSERT_TRUE(one.exited_with(0)) << describe(one);
  EXPECT_EQ(exported_records(tmp / "j1" / "ledger", tmp / "e1"), exported_records(tmp / "j4" / "ledger", tmp / "e4"));
}

// The parallel example, six independent Python packages with one refused draft, at four
// jobs: the golden's bytes (recorded at the default jobs), and every run again in the
// sandbox on the tree replay re-derives for it.
TEST(MergeQueue, TheTextkitExampleAtFourJobsIsItsGoldenAndRerunsOnEveryTree) {
  TempDir tmp;
  const fs::path source = WARDEN_SOURCE_DIR;
  auto built = warden({"build", (source / "examples" / "textkit" / "blueprint.json").string(), "--out", (tmp / "out").string(),
                       "--clock", "logical", "--key", test_key().string(), "--jobs", "4"});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  EXPECT_EQ(exported_records(tmp / "out" / "ledger", tmp / "export"),
            read_file(source / "tests" / "golden" / "textkit" / "records.jsonl"));
  auto replayed = warden({"replay", (tmp / "out" / "ledger").string(), "--repo", (tmp / "out" / "repo").string(), "--rerun",
                          "--cache", (tmp / "cache").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  json report = stdout_json(replayed);
  EXPECT_TRUE(report["ok"].get<bool>());
  EXPECT_EQ(report["reruns"], 19) << report.dump();
}

}  // namespace
}  // namespace warden::test
