// The build loop end to end: the real `warden build` on real git repositories it seeds, the
// real sandbox and a real ledger. Each test checks the exit code, what the ledger recorded
// (read back through `warden ledger export`), that the ledger verifies with the kernel's key,
// and that the branch holds accepted commits only — after a completed run, a refusal of
// every reason code, exhausted retries, a refused plan, the watchdog, Ctrl-C and SIGKILL.
#include <signal.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "tests/support/temp_dir.h"
#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

using namespace std::chrono_literals;

class BuildE2ETest : public ::testing::Test {
 protected:
  std::vector<std::string> build_args(const std::filesystem::path& blueprint, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"build", blueprint.string(), "--out", out().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  ProcessResult build(const std::filesystem::path& blueprint, const std::vector<std::string>& extra = {}) {
    return warden(build_args(blueprint, extra));
  }
  ProcessResult build_plan(const std::string& digest, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"build", "--plan", digest, "--out", out().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return warden(args);
  }
  // The hang fixture in the background, once its second step's check hangs in the sandbox.
  Child start_hung_build() {
    std::vector<std::string> argv = {warden_binary()};
    auto args = build_args(fixture("hang/blueprint.json"), {"--policy", fixture("hang/policy.json").string(), "--run-id", "hung"});
    argv.insert(argv.end(), args.begin(), args.end());
    // A killed build's sandbox dies with it, but not at once: a check still going from the
    // test before would pass for this build's.
    EXPECT_TRUE(wait_until([] { return hung_checks_running() == 0; }, 10s)) << "an earlier test's hung check lingers";
    Child child = Child::spawn(argv);
    EXPECT_TRUE(wait_until([] { return hung_checks_running() > 0; }, 30s)) << "the hung check never started";
    return child;
  }
  static std::string agent(const std::string& mode) { return "command:python3 " + fixture("agent.py").string() + " " + mode; }

  std::filesystem::path out() const { return tmp / "out"; }
  std::filesystem::path repo() const { return out() / "repo"; }
  std::filesystem::path ledger() const { return out() / "ledger"; }
  std::filesystem::path verifier() const { return out() / "ledger" / "signer.pub"; }

  // The run's last status record.
  static json last_status(const std::vector<json>& records) { return payloads(records, "run_status").back(); }

  // After any run: the ledger verifies, and the branch holds only accepted commits, one per
  // step in `steps`, oldest first (none: the branch was never made). `sealed`: the run ended
  // and signed a checkpoint over its records; a killed one did not, so its records are an
  // unsigned tail, refused with the key until someone holding it signs.
  void expect_consistent(const std::string& branch, const std::vector<std::string>& steps, bool sealed = true) {
    if (!sealed) expect_unsigned_until_signed();
    expect_ledger_verifies(ledger(), verifier());
    if (!has_ref(repo(), branch)) {
      EXPECT_TRUE(steps.empty()) << branch << " does not exist";
      return;
    }
    expect_branch_holds_only_accepted(repo(), "main", branch, ledger_records(ledger()));
    auto commits = commits_since(repo(), "main", branch);
    ASSERT_EQ(commits.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      std::string message = git_in(repo(), {"log", "-1", "--format=%B", commits[steps.size() - 1 - i]});
      EXPECT_NE(message.find("Warden-Step: " + steps[i] + "\n"), std::string::npos) << message;
    }
  }

  void expect_unsigned_until_signed() {
    auto keyless = warden({"ledger", "verify", ledger().string(), "--json"});
    ASSERT_TRUE(keyless.exited_with(0)) << describe(keyless);
    EXPECT_GT(stdout_json(keyless)["unsigned_records"].get<uint64_t>(), 0u);
    auto refused = warden({"ledger", "verify", ledger().string(), "--key", verifier().string()});
    EXPECT_TRUE(refused.exited_with(1)) << describe(refused);
    auto signed_ = warden({"ledger", "checkpoint", ledger().string()});  // with the ledger's own signer.key
    ASSERT_TRUE(signed_.exited_with(0)) << describe(signed_);
  }

  TempDir tmp;
};

TEST_F(BuildE2ETest, CalculatorCompletesWithItsRefusalRecorded) {
  auto r = build(WARDEN_SOURCE_DIR "/examples/calculator/blueprint.json", {"--clock", "logical"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("5/5 accepted, 6 proposals, 1 refused"), std::string::npos) << r.out;
  expect_consistent("warden/calculator", {"s1", "s2", "s3", "s4", "s5"});

  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["status"], "completed");
  EXPECT_EQ(payloads(records, "commit").size(), 5u);
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 6u);
  EXPECT_EQ(decisions[2]["step_id"], "s3");
  EXPECT_EQ(decisions[2]["attempt"], 1);
  EXPECT_TRUE(has_code(reason_codes(decisions[2]), "dangerous_operation_detected")) << decisions[2].dump();
  EXPECT_EQ(decisions[3]["verdict"]["accepted"], true);
  auto refusals = payloads(records, "refusal");
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0]["report"]["step_id"], "s3");
  EXPECT_EQ(refusals[0]["report"]["attempt"], 1);
}

TEST_F(BuildE2ETest, EveryReasonCodeIsRefusedAndRecordedBeforeTheAcceptedRetry) {
  // The agent reads the fixture's test file: a confined executor sees it only when its
  // command names it.
  auto r = build(fixture("reasons/blueprint.json"), {"--executor", agent("reasons"), "--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  // JSON Lines: one event per line, then the summary as the result line.
  auto lines = stdout_json_lines(r);
  ASSERT_GE(lines.size(), 2u) << r.out;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(lines[i].contains("event_id") && lines[i].contains("step_index")) << lines[i].dump();
  }
  EXPECT_EQ(lines.front()["type"], "run_started");
  json summary = lines.back();
  EXPECT_EQ(summary["type"], "result");

  // The order of fixtures/agent.py's wrong proposals.
  const std::vector<std::string> expected = {"content_mismatch",
                                             "protected_path",
                                             "path_not_allowed",
                                             "hash_mismatch",
                                             "required_checks_failed",
                                             "invariant_not_proven:type_hints_required",
                                             "dangerous_operation_detected",
                                             "approval_required",
                                             "malformed_diff"};
  auto records = ledger_records(ledger());
  auto decisions = payloads(records, "decision");
  auto refusals = payloads(records, "refusal");
  auto proposals = payloads(records, "proposal");
  ASSERT_EQ(decisions.size(), expected.size() + 1);
  ASSERT_EQ(refusals.size(), expected.size());
  ASSERT_EQ(summary["verdicts"].size(), expected.size() + 1);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("attempt " + std::to_string(i + 1) + ": " + expected[i]);
    EXPECT_EQ(decisions[i]["attempt"], i + 1);
    EXPECT_EQ(decisions[i]["verdict"]["accepted"], false);
    EXPECT_TRUE(has_code(reason_codes(decisions[i]), expected[i])) << decisions[i]["verdict"].dump();
    std::vector<std::string> printed = summary["verdicts"][i]["reasons"];
    EXPECT_TRUE(has_code(printed, expected[i]));
    std::vector<std::string> reported;
    for (const auto& reason : refusals[i]["report"]["reasons"]) reported.push_back(reason["code"]);
    EXPECT_TRUE(has_code(reported, expected[i]));
    EXPECT_FALSE(refusals[i]["report"]["evidence"].empty());
  }
  EXPECT_TRUE(proposals[expected.size() - 1]["error"].is_string()) << "the garbage is recorded as such";
  EXPECT_EQ(decisions.back()["verdict"]["accepted"], true);
  // Nine refusals and the branch moved once, from the seed commit to the accepted change.
  expect_consistent("warden/reasons", {"s1"});
  EXPECT_EQ(git_in(repo(), {"rev-parse", "warden/reasons^"}), git_in(repo(), {"rev-parse", "main"}));
}

// The python policy's test runner imports the code under test into its own process. A module
// that prints a passing TAP stream to descriptor 1 and exits at import time must not pass:
// the report comes through the runner's authenticated channel, which it never wrote to.
TEST_F(BuildE2ETest, ATapStreamForgedByTheCodeUnderTestIsRefusedAndTheRealChangeAccepted) {
  auto r = build(fixture("reasons/blueprint.json"), {"--executor", agent("forge")});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto records = ledger_records(ledger());
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0]["verdict"]["accepted"], false);
  EXPECT_TRUE(has_code(reason_codes(decisions[0]), "required_checks_failed")) << decisions[0]["verdict"].dump();
  auto results = payloads(records, "run_result");
  ASSERT_EQ(results.size(), 2u);
  const json& forged = results[0]["run_result"]["checks"][0];
  ASSERT_EQ(forged["name"], "tests");
  EXPECT_EQ(forged["verdict"], "failed");
  EXPECT_EQ(forged["runs"][0]["exit_code"], 0) << "the forger exited 0";
  EXPECT_EQ(forged["runs"][0]["report"], "missing") << forged.dump();
  EXPECT_NE(forged["runs"][0]["report_detail"].get<std::string>().find("report channel"), std::string::npos);
  EXPECT_TRUE(forged["tests"].empty());
  EXPECT_EQ(decisions[1]["verdict"]["accepted"], true) << decisions[1]["verdict"].dump();
  const json& real = results[1]["run_result"]["checks"][0];
  EXPECT_EQ(real["verdict"], "passed");
  EXPECT_EQ(real["tests"], json::parse(R"([{"id": "tests/test_ops.py::test_double", "status": "passed"}])"));
  expect_consistent("warden/reasons", {"s1"});
  auto replayed = warden({"replay", ledger().string(), "--key", verifier().string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
}

// Refused, not failed: every attempt was judged and refused, which is the verdict working.
TEST_F(BuildE2ETest, AStepThatExhaustsItsRetriesEndsTheRunRefused) {
  auto r = build(WARDEN_SOURCE_DIR "/examples/calculator/blueprint.json", {"--executor", agent("garbage-from s2")});
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_NE(r.out.find("refused  REFUSED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("EXECUTION_ERROR"), std::string::npos) << r.out;

  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["status"], "refused");
  EXPECT_EQ(last_status(records)["error_type"], "REFUSED");
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 4u) << "s1 once, s2 max_retries (3) times";
  for (size_t i = 1; i < decisions.size(); ++i) EXPECT_EQ(reason_codes(decisions[i]), std::vector<std::string>{"malformed_diff"});
  auto events = payloads(records, "run_event");
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const json& e) { return e["event_type"] == "replan_triggered"; }))
      << "past its retries the kernel asks for a new plan (agent.py cannot give one)";
  expect_consistent("warden/calculator", {"s1"});
}

TEST_F(BuildE2ETest, ARefusedPlanIsAPlanningError) {
  copy_tree(fixture("reasons"), tmp / "blueprint");
  json blueprint = json::parse(read_file(tmp / "blueprint/blueprint.json"));
  blueprint["intent"] = {{"name", "tool"}, {"artifacts", {"binary"}}};  // no step makes a binary
  write_file(tmp / "blueprint/blueprint.json", blueprint.dump(2));
  auto r = build(tmp / "blueprint/blueprint.json");
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_NE(r.out.find("PLANNING_ERROR"), std::string::npos) << r.out;

  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["error_type"], "PLANNING_ERROR");
  auto refusals = payloads(records, "refusal");
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0]["subject"], "plan");
  EXPECT_NE(refusals[0].dump().find("plan_missing_artifact:binary"), std::string::npos) << refusals[0].dump();
  EXPECT_TRUE(payloads(records, "decision").empty());
  EXPECT_TRUE(payloads(records, "plan_commit").empty());
  expect_consistent("warden/reasons", {});
}

// `warden build --plan`: a plan committed earlier is built without its blueprint, into a
// repository that starts empty. The run records the plan again (re-hashed and re-verified),
// and an auditor replays it all. A plan is found only by a commit of its digest whose proposal
// really holds it: a ledger writer who commits a digest over another plan gets no build.
TEST_F(BuildE2ETest, ACommittedPlanBuildsWithoutItsBlueprint) {
  const std::string plan_file = (tmp / "plan.json").string();
  ASSERT_TRUE(warden({"plan", "generate", WARDEN_SOURCE_DIR "/examples/calculator/blueprint.json", "-o", plan_file}).exited_with(0));
  auto committed = warden({"plan", "commit", plan_file, "--ledger", ledger().string(), "--json"});
  ASSERT_TRUE(committed.exited_with(0)) << describe(committed);
  const std::string digest = stdout_json(committed)["plan_sha256"];

  auto r = build_plan(digest, {"--clock", "logical"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("5/5 accepted, 6 proposals, 1 refused"), std::string::npos) << r.out;
  EXPECT_EQ(git_in(repo(), {"log", "--format=%s", "main"}), "seed: (no files)\n");
  expect_consistent("warden/calculator", {"s1", "s2", "s3", "s4", "s5"});
  auto records = ledger_records(ledger());
  auto plan_commits = payloads(records, "plan_commit");
  ASSERT_EQ(plan_commits.size(), 2u);  // the commit named, and the run's own
  EXPECT_EQ(plan_commits[1]["plan_sha256"], digest);
  EXPECT_FALSE(plan_commits[1]["run_id"].is_null());
  EXPECT_EQ(last_status(records)["status"], "completed");
  auto replay = warden({"replay", ledger().string(), "--repo", repo().string(), "--key", verifier().string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);

  // Refused before anything is recorded: a digest no commit names, a malformed one, no ledger.
  const size_t size = records.size();
  auto unknown = build_plan("sha256:" + std::string(64, '0'), {"--repo", (tmp / "r2").string()});
  EXPECT_TRUE(unknown.exited_with(4)) << describe(unknown);
  EXPECT_NE(unknown.err.find("is committed to the ledger"), std::string::npos) << unknown.err;
  EXPECT_TRUE(build_plan("abc", {}).exited_with(3));
  auto nowhere = warden({"build", "--plan", digest});
  EXPECT_TRUE(nowhere.exited_with(3)) << describe(nowhere);
  EXPECT_NE(nowhere.err.find("--ledger"), std::string::npos) << nowhere.err;
  EXPECT_TRUE(warden({"build", WARDEN_SOURCE_DIR "/examples/calculator/blueprint.json", "--plan", digest}).exited_with(3));
  EXPECT_EQ(ledger_records(ledger()).size(), size);

  // A forged commit: a proposal that names the digest but holds a plan of one step (every
  // later step dropped), committed under that digest. It is the newest commit of the digest,
  // and its plan does not hash to it: corrupt, and no run starts.
  json forged_proposal;
  for (const json& rec : records) {
    if (rec["kind"] == "plan_proposal") forged_proposal = rec["payload"];
  }
  forged_proposal["plan"]["steps"] = json::array({forged_proposal["plan"]["steps"][0]});
  auto append = [&](const std::string& kind, const json& payload) {
    write_file(tmp / "payload.json", payload.dump());
    auto a = warden({"ledger", "append", ledger().string(), "--kind", kind, "--payload", (tmp / "payload.json").string(), "--json"});
    EXPECT_TRUE(a.exited_with(0)) << describe(a);
    return stdout_json(a)["seq"].get<uint64_t>();
  };
  const uint64_t proposal_seq = append("plan_proposal", forged_proposal);
  json forged_commit = plan_commits[0];
  forged_commit["proposal_seq"] = proposal_seq;
  append("plan_commit", forged_commit);
  auto refused = build_plan(digest, {"--repo", (tmp / "r3").string()});
  EXPECT_FALSE(refused.exited_with(0)) << describe(refused);
  EXPECT_NE(refused.err.find("holds a plan that hashes to"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "r3"));
}

TEST_F(BuildE2ETest, TheWatchdogEndsAHungCheck) {
  const auto started = std::chrono::steady_clock::now();
  auto r = build(fixture("hang/blueprint.json"), {"--policy", fixture("hang/policy.json").string(), "--step-timeout", "2"});
  ASSERT_TRUE(r.exited_with(124)) << describe(r);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
  EXPECT_TRUE(wait_until([] { return hung_checks_running() == 0; }, 5s)) << "a sandboxed check outlived the run";

  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["status"], "timeout");
  EXPECT_EQ(last_status(records)["error_type"], "TIMEOUT_ERROR");
  auto events = payloads(records, "run_event");
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const json& e) { return e["event_type"] == "timeout_error"; }));
  expect_consistent("warden/hang", {"s1"});
}

TEST_F(BuildE2ETest, CtrlCCancelsCleanly) {
  Child child = start_hung_build();
  child.kill(SIGINT);
  auto r = child.wait();
  ASSERT_TRUE(r.exited_with(130)) << describe(r);
  EXPECT_TRUE(wait_until([] { return hung_checks_running() == 0; }, 5s)) << "a sandboxed check outlived the run";

  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["status"], "cancelled");
  EXPECT_EQ(last_status(records)["error_type"], "CANCELLED");
  EXPECT_FALSE(std::filesystem::exists(ledger() / "runs" / "hung.pid")) << "the run let go of its pid file";
  expect_consistent("warden/hang", {"s1"});
}

TEST_F(BuildE2ETest, AProcessKilledMidRunLeavesAVerifiableLedgerAndOnlyAcceptedCommits) {
  Child child = start_hung_build();
  child.kill(SIGKILL);
  auto r = child.wait();
  ASSERT_EQ(r.term_signal, SIGKILL) << describe(r);
  EXPECT_TRUE(wait_until([] { return hung_checks_running() == 0; }, 5s)) << "the sandbox outlived its kernel";

  expect_consistent("warden/hang", {"s1"}, false);
  auto records = ledger_records(ledger());
  EXPECT_EQ(last_status(records)["status"], "running") << "nobody was left to record an end";
  auto status = warden({"run", "status", "hung", "--ledger", ledger().string(), "--json"});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  EXPECT_EQ(stdout_json(status)["live"], false);
  EXPECT_EQ(stdout_json(status)["steps_completed"], 1);
}

}  // namespace
}  // namespace warden::test
