// Finding and following runs with the real binary: `warden run status` shows a live build's
// step while its executor works (and --follow prints each event until the run ends), `warden
// runs list` lists build, propose and pipeline runs alike, `run status` and `pipeline show`
// point at each other for the other kind, an executor past the step's budget is refused
// executor_timeout (never malformed_diff) with "still working" lines on stderr, an executor
// that fails is refused executor_failed, and `warden run --help` explains both of its uses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCalculator = std::string(WARDEN_SOURCE_DIR) + "/examples/calculator/blueprint.json";

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  for (const auto& line : complete_lines(text)) out.push_back(json::parse(line));
  return out;
}

// The "run" lines of `runs list --json`, after checking its result line counts them.
std::vector<json> listed(const fs::path& ledger) {
  auto r = warden({"runs", "list", ledger.string(), "--json"});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  std::vector<json> lines = json_lines(r.out);
  if (lines.empty()) return {};
  json result = lines.back();
  lines.pop_back();
  EXPECT_EQ(result.value("type", ""), "result") << r.out;
  EXPECT_EQ(result.value("runs", size_t{0}), lines.size()) << r.out;
  for (const auto& line : lines) EXPECT_EQ(line.value("type", ""), "run") << line.dump();
  return lines;
}

TEST(RunsCli, StatusShowsTheStepWhileTheExecutorWorksAndFollowsItToItsEnd) {
  TempDir tmp;
  const fs::path ledger = tmp / "out" / "ledger";
  Child build = Child::spawn({warden_binary(), "build", kCalculator, "--out", (tmp / "out").string(), "--executor",
                              "command:sleep 60", "--run-id", "live-run"});
  json j;
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = warden({"run", "status", "live-run", "--ledger", ledger.string(), "--json"});
        if (!r.exited_with(0)) return false;
        j = stdout_json(r);
        return j["status"] == "running" && j["current_step"] == "s1";
      },
      30s))
      << j.dump();
  // What the build has printed ([1/5] s1 ...) the ledger says too, from another process.
  EXPECT_EQ(j["live"], true);
  EXPECT_EQ(j["kind"], "build");
  EXPECT_EQ(j["steps_total"], 5);
  EXPECT_EQ(j["steps_completed"], 0);
  auto human = warden({"run", "status", "live-run", "--ledger", ledger.string()});
  EXPECT_NE(human.out.find("0/5 accepted; on s1"), std::string::npos) << human.out;
  auto rows = listed(ledger);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "live");
  EXPECT_EQ(rows[0]["phase"], "running");

  Child follow = Child::spawn({warden_binary(), "run", "status", "live-run", "--ledger", ledger.string(), "--follow", "--json"});
  // The executor has been working for over a second: the build said so on stderr.
  ASSERT_TRUE(wait_until(
      [&] {
        build.pump(std::chrono::steady_clock::now() + 50ms);
        return build.err().find("[1/5] s1: executor working… 1s") != std::string::npos;
      },
      10s))
      << build.err();
  auto cancel = warden({"run", "cancel", "live-run", "--ledger", ledger.string()});
  ASSERT_TRUE(cancel.exited_with(0)) << describe(cancel);
  EXPECT_TRUE(build.wait().exited_with(130));
  auto followed = follow.wait();
  ASSERT_TRUE(followed.exited_with(0)) << describe(followed);
  auto lines = json_lines(followed.out);
  ASSERT_GE(lines.size(), 3u) << followed.out;
  EXPECT_EQ(lines.front()["event_type"], "run_started");
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const json& e) {
    return e.value("event_type", "") == "step_started" && e["data"]["step_id"] == "s1";
  })) << followed.out;
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const json& e) { return e.value("event_type", "") == "run_cancelled"; }))
      << followed.out;
  EXPECT_EQ(lines.back()["status"], "cancelled");
  EXPECT_EQ(lines.back()["live"], false);

  rows = listed(ledger);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["run_id"], "live-run");
  EXPECT_EQ(rows[0]["kind"], "build");
  EXPECT_EQ(rows[0]["status"], "cancelled");
  EXPECT_EQ(rows[0]["steps_done"], 0);
  EXPECT_EQ(rows[0]["steps_total"], 5);
  EXPECT_TRUE(rows[0]["started_ms"].get<int64_t>() > 0);
}

// A slow executor and a short budget: the attempt is refused executor_timeout (or the
// watchdog ends the step first); malformed_diff never appears.
TEST(RunsCli, AnExecutorPastItsBudgetIsATimeoutNotAMalformedDiff) {
  TempDir tmp;
  auto r = warden({"build", kCalculator, "--out", (tmp / "out").string(), "--executor", "command:sleep 60",
                   "--step-timeout", "2", "--run-id", "slow"});
  ASSERT_TRUE(r.exited_with(124)) << describe(r);
  EXPECT_EQ(r.out.find("malformed_diff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("watchdog: step s1 ran past its 2000 ms budget"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[1/5] s1: executor working… 1s"), std::string::npos) << r.err;
  const fs::path ledger = tmp / "out" / "ledger";
  auto records = ledger_records(ledger);
  for (const auto& d : payloads(records, "decision")) {
    EXPECT_EQ(reason_codes(d), std::vector<std::string>{"executor_timeout"}) << d.dump();
  }
  for (const auto& p : payloads(records, "proposal")) {
    EXPECT_NE(p["error"].get<std::string>().find("executor timed out after"), std::string::npos) << p.dump();
  }
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  auto replayed = warden({"replay", ledger.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  auto rows = listed(ledger);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "timeout");
}

// The same rule for an executor that exits non-zero: refused executor_failed, with its words.
TEST(RunsCli, AnExecutorThatFailsIsRefusedExecutorFailed) {
  TempDir tmp;
  auto r = warden({"build", kCalculator, "--out", (tmp / "out").string(), "--executor",
                   "command:echo no idea >&2; exit 3", "--json"});
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  auto records = ledger_records(tmp / "out" / "ledger");
  auto decisions = payloads(records, "decision");
  ASSERT_FALSE(decisions.empty());
  for (const auto& d : decisions) {
    EXPECT_EQ(reason_codes(d), std::vector<std::string>{"executor_failed"}) << d.dump();
    EXPECT_NE(d["verdict"]["reasons"][0]["detail"].get<std::string>().find("exited with status 3: no idea"), std::string::npos);
  }
  auto replayed = warden({"replay", (tmp / "out" / "ledger").string(), "--key", (tmp / "out" / "ledger" / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
}

// A propose run is listed as one, and `pipeline show` on it says which command reads it; a
// pipeline run named to `run status` gets its status and the converse command.
TEST(RunsCli, ListsProposeAndPipelineRunsAndPointsAtTheOtherCommand) {
  GitRepoFixture repo;
  repo.write("calc.py", "def add(a, b):\n    return a + b\n");
  const std::string base = repo.commit_all("base");
  auto patch = repo.patch_file(base, "mul.patch", {{"calc.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}});
  const fs::path ledger = repo.dir() / "ledger";
  auto proposed = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--check", "true",
                          "--ledger", ledger.string(), "--run-id", "prop-1"});
  ASSERT_TRUE(proposed.exited_with(0)) << describe(proposed);
  auto rows = listed(ledger);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["run_id"], "prop-1");
  EXPECT_EQ(rows[0]["kind"], "propose");
  EXPECT_EQ(rows[0]["status"], "completed");
  EXPECT_EQ(rows[0]["steps_done"], 1);
  EXPECT_EQ(rows[0]["steps_total"], 1);
  auto human = warden({"runs", "list", ledger.string()});
  ASSERT_TRUE(human.exited_with(0)) << describe(human);
  EXPECT_NE(human.out.find("prop-1"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("propose"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("1/1"), std::string::npos) << human.out;

  auto shown = warden({"pipeline", "show", "prop-1", "--ledger", ledger.string()});
  EXPECT_TRUE(shown.exited_with(kExitNotFound)) << describe(shown);
  EXPECT_NE(shown.err.find("is a build run, not a pipeline run: warden run status prop-1 --ledger"), std::string::npos) << shown.err;

  const fs::path pipelines = repo.dir() / "pipelines";
  ASSERT_TRUE(warden({"ledger", "init", pipelines.string()}).exited_with(0));
  auto ran = warden({"pipeline", "run", std::string(WARDEN_SOURCE_DIR) + "/examples/pipelines/fan_out.json", "--input", "x",
                     "--ledger", pipelines.string(), "--json"});
  ASSERT_TRUE(ran.exited_with(0)) << describe(ran);
  auto result = json_lines(ran.out).back();
  const std::string run_id = result.contains("run_id") ? result["run_id"] : result["run"];
  auto status = warden({"run", "status", run_id, "--ledger", pipelines.string()});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  EXPECT_NE(status.out.find("completed"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("warden pipeline show " + run_id + " --ledger " + pipelines.string()), std::string::npos)
      << status.out;

  auto none = warden({"run", "status", "nope", "--ledger", pipelines.string()});
  EXPECT_TRUE(none.exited_with(kExitNotFound)) << describe(none);
  EXPECT_NE(none.err.find("warden runs list"), std::string::npos) << none.err;
  auto missing = warden({"runs", "list", (repo.dir() / "absent").string()});
  EXPECT_TRUE(missing.exited_with(kExitNotFound)) << describe(missing);
}

TEST(RunsCli, RunHelpExplainsBothUsesAndEachSubcommandIsClean) {
  auto run = warden({"run", "--help"});
  ASSERT_TRUE(run.exited_with(0)) << describe(run);
  EXPECT_NE(run.out.find("Two uses"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Runner options"), std::string::npos) << run.out;
  for (const char* sub : {"status", "cancel", "recover"}) EXPECT_NE(run.out.find(sub), std::string::npos) << sub;
  for (const char* sub : {"status", "cancel"}) {
    auto help = warden({"run", sub, "--help"});
    ASSERT_TRUE(help.exited_with(0)) << describe(help);
    EXPECT_NE(help.out.find("RUN_ID"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--ledger"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("--repo"), std::string::npos) << sub << ":\n" << help.out;
    EXPECT_EQ(help.out.find("--check"), std::string::npos) << sub << ":\n" << help.out;
  }
  auto runs = warden({"runs", "list", "--help"});
  EXPECT_TRUE(runs.exited_with(0)) << describe(runs);
}

}  // namespace
}  // namespace warden::test
