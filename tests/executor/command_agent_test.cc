// Command agents as real processes in the executor's sandbox (runner/sandbox/sandboxed_launcher.h,
// the launcher `warden pipeline` uses): the request they read, the answer they give, and
// every way one can misbehave (crash, non-zero exit, hang, flood, garbage, fork without end,
// leave children behind, ignore its input) ending as a stage failure with a clear reason,
// routed through error_next, with nothing left running.
#include "executor/command_agent.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/file.h"
#include "runner/sandbox/sandboxed_launcher.h"
#include "tests/executor/harness.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"

#ifndef TEST_AGENT
#error "TEST_AGENT must name the test agent program"
#endif

namespace warden::executor {
namespace {

using testing::Harness;
using testing::moves;
using testing::reason_of;
using Clock = std::chrono::steady_clock;

// One command stage running the test agent in `mode`, falling back to `recover` on failure.
std::string agent_config(std::vector<std::string> args, int timeout_seconds = 10, bool recovery = true) {
  Json command = Json::array({TEST_AGENT});
  for (auto& a : args) command.push_back(a);
  Json agent{{"name", "agent"}, {"kind", "command"},         {"command", command},
             {"timeout_seconds", timeout_seconds}, {"params", {{"p", 1}}}};
  Json stages = Json::array({agent});
  if (recovery) {
    stages[0]["error_next"] = "recover";
    stages.push_back({{"name", "recover"}, {"kind", "constant"}, {"params", {{"output", {{"recovered", true}}}}}});
  }
  return Json{{"name", "cmd"}, {"stages", stages}}.dump();
}

// The executor's sandbox, shared by every test here as by the stages of one pipeline.
std::shared_ptr<CommandLauncher> launcher() {
  static std::shared_ptr<CommandLauncher> shared = [] {
    auto made = SandboxedLauncher::create(SandboxProfile::load("executor").value());
    if (!made) throw std::runtime_error(made.error().message);
    return std::shared_ptr<CommandLauncher>(std::move(*made));
  }();
  return shared;
}

AgentEnvironment sandboxed(std::filesystem::path base_dir = {}) { return AgentEnvironment{std::move(base_dir), launcher()}; }

// Runs the single-agent pipeline; returns the run and how long it took.
std::pair<RunState, double> run_agent(std::vector<std::string> args, int timeout_seconds = 10, bool recovery = true,
                                      std::string input = "hello") {
  Harness h(agent_config(std::move(args), timeout_seconds, recovery), {}, sandboxed());
  auto start = Clock::now();
  RunState run = h.run(std::move(input));
  return {std::move(run), std::chrono::duration<double>(Clock::now() - start).count()};
}

// The failure the agent stage ended with, after checking it was routed to `recover`.
std::string routed_failure(const RunState& run) {
  EXPECT_EQ(moves(run), (std::vector<std::string>{"agent>recover:error", "recover>end:complete"}));
  EXPECT_EQ(run.envelope.outputs.at("recover")["recovered"], true);
  return run.transitions.empty() ? "" : run.transitions[0].detail;
}

// No process whose command line holds `marker` is left (SIGKILL is delivered
// asynchronously, so allow the kernel a moment). The agent cannot note its process group on
// the host any more: the path it is given does not exist in its sandbox.
bool none_left_with(const std::string& marker) {
  auto deadline = Clock::now() + std::chrono::seconds(3);
  while (warden::test::count_processes_with(marker) > 0) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(CommandAgent, ReadsTheRequestAndItsAnswerIsApplied) {
  auto [run, seconds] = run_agent({"answer", R"({"x": 1})", "2"});
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  const Json& out = run.envelope.outputs.at("agent");
  EXPECT_EQ(out["x"], 1);
  EXPECT_EQ(out["seen_stage"], "agent");
  EXPECT_EQ(out["seen_input"], "hello");
  EXPECT_EQ(out["seen_params"], (Json{{"p", 1}}));
  EXPECT_EQ(out["seen_iteration"], 0);
  EXPECT_EQ(out["seen_env_stage"], "agent");
  EXPECT_EQ(run.envelope.llm_call_count, 2);
  EXPECT_FALSE(run.envelope.outputs.contains("recover"));
}

TEST(CommandAgent, CrashIsAFailureNamingTheSignal) {
  auto [run, seconds] = run_agent({"crash"});
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("killed by signal 11 (SIGSEGV)"), std::string::npos) << why;
  EXPECT_NE(why.find("stderr: about to crash"), std::string::npos) << why;
}

TEST(CommandAgent, NonZeroExitIsAFailureAndItsLlmCallsCount) {
  auto [run, seconds] = run_agent({"exit", "3"});
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("exited with status 3; stderr: something went wrong"), std::string::npos) << why;
  EXPECT_EQ(run.envelope.llm_call_count, 4);
}

TEST(CommandAgent, HangTimesOutAndRoutesThroughErrorNext) {
  auto [run, seconds] = run_agent({"hang"}, 1);
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("timed out after 1000 ms; it was killed with every process it started"), std::string::npos) << why;
  EXPECT_GE(seconds, 0.9);
  EXPECT_LT(seconds, 5.0);
}

TEST(CommandAgent, GarbageFloatsAndUnknownFieldsAreFailures) {
  EXPECT_NE(routed_failure(run_agent({"garbage"}).first).find("answered something that is not JSON"), std::string::npos);
  EXPECT_NE(routed_failure(run_agent({"float"}).first).find("invalid answer: answer: floating-point number at /output/score"),
            std::string::npos);
  EXPECT_NE(routed_failure(run_agent({"unknown"}).first).find("invalid answer: answer.confidence: unknown field"),
            std::string::npos);
}

TEST(CommandAgent, BytesThatAreNotUtf8BecomeARecordableMessage) {
  auto [run, seconds] = run_agent({"binary"});
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("exited with status 1; stderr: bad bytes \xEF\xBF\xBD("), std::string::npos) << why;
  EXPECT_TRUE(canonicalize(transition_to_json(run.transitions[0])));  // it can go in the ledger
  EXPECT_TRUE(canonicalize(envelope_to_json(run.envelope)));
}

TEST(CommandAgent, WithoutErrorNextAFailureEndsTheRun) {
  auto [run, seconds] = run_agent({"garbage"}, 10, false);
  EXPECT_EQ(reason_of(run), TerminalReason::stage_failed);
  EXPECT_NE(run.envelope.termination_reason->find("stage agent failed: command "), std::string::npos);
}

TEST(CommandAgent, FloodIsCutOffAtTheCap) {
  auto [run, seconds] = run_agent({"flood"}, 30);
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("wrote more than 1048576 bytes of output; it was killed with every process it started"), std::string::npos)
      << why;
  EXPECT_LT(seconds, 10.0);
}

TEST(CommandAgent, ForkingWithoutEndIsKilledWithItsWholeGroup) {
  warden::test::TempDir tmp;
  auto [run, seconds] = run_agent({"fork-forever", (tmp / "pgid").string()}, 1);
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("timed out"), std::string::npos) << why;
  EXPECT_TRUE(none_left_with((tmp / "pgid").string()));
}

TEST(CommandAgent, ChildrenLeftBehindDoNotHoldTheStage) {
  warden::test::TempDir tmp;
  auto [run, seconds] = run_agent({"background", (tmp / "pgid").string()}, 30);
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_LT(seconds, 5.0);  // not the sleeper's 60 s, not the 30 s timeout
  EXPECT_TRUE(none_left_with((tmp / "pgid").string()));
}

TEST(CommandAgent, MissingProgramIsAFailure) {
  Harness h(R"({"name": "m", "stages": [{"name": "agent", "kind": "command", "command": ["/nonexistent/agent"],
               "error_next": "recover"}, {"name": "recover", "kind": "constant", "params": {"output": {"recovered": true}}}]})",
            {}, sandboxed());
  RunState run = h.run();
  std::string why = routed_failure(run);
  EXPECT_NE(why.find("exited with status 1; stderr: bwrap: execvp /nonexistent/agent: No such file or directory"),
            std::string::npos) << why;
}

TEST(CommandAgent, AnAgentThatIgnoresALargeRequestStillAnswers) {
  auto [run, seconds] = run_agent({"ignore-stdin"}, 10, true, std::string(3 << 20, 'i'));
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.envelope.outputs.at("agent")["ignored"], true);
}

TEST(CommandAgent, RaisesAnInterruptAndSeesTheResponse) {
  Harness h(agent_config({"approve"}), {}, sandboxed());
  RunState run = h.run();
  ASSERT_TRUE(run.waiting());
  EXPECT_EQ(run.envelope.interrupt->question, "merge?");
  EXPECT_EQ(run.envelope.interrupt->payload, (Json{{"files", 2}}));
  EXPECT_EQ(run.envelope.llm_call_count, 1);
  ASSERT_TRUE(h.exec.resume(run, "yes"));
  ASSERT_TRUE(h.exec.run(run));
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.envelope.outputs.at("agent")["approved"], true);
}

TEST(CommandAgent, ParallelAgentsOverlap) {
  Json stages = Json::array();
  stages.push_back({{"name", "split"}, {"kind", "constant"}, {"params", {{"output", Json::object()}}},
                    {"default_next", {"a", "b", "c"}}});
  for (const char* s : {"a", "b", "c"}) {
    stages.push_back({{"name", s}, {"kind", "command"}, {"command", {TEST_AGENT, "slow", "600"}}, {"default_next", "join"}});
  }
  stages.push_back({{"name", "join"}, {"kind", "join"}, {"requires", {"a", "b", "c"}}});
  Harness h(Json{{"name", "par"}, {"stages", stages}, {"max_llm_calls", 50}}.dump(), {}, sandboxed());
  auto start = Clock::now();
  RunState run = h.run();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.envelope.llm_call_count, 3);
  EXPECT_LT(seconds, 1.5);  // one after another would take at least 1.8 s
  EXPECT_EQ(run.envelope.outputs.at("join")["joined"]["b"]["seen_stage"], "b");
}

// A relative program resolves as it did from the config's directory, but the agent runs in
// its own empty workspace: of that directory it sees only the files its argv names, read-only.
TEST(CommandAgent, RelativeProgramsResolveFromTheConfigDirectoryAndSeeNothingElseOfIt) {
  warden::test::TempDir tmp;
  std::filesystem::create_directory(tmp / "agents");
  ASSERT_TRUE(write_file_atomic(tmp / "agents" / "where.sh", R"sh(#!/bin/sh
cat >/dev/null
writable=no; (echo x > agents/where.sh) 2>/dev/null && writable=yes
sibling=no; [ -e ../secret.txt ] || [ -e secret.txt ] || [ -e agents/../secret.txt ] || sibling=unseen
printf '{"output":{"cwd":"%s","listing":"%s","sibling":"%s","writable":"%s"}}' "$(pwd)" "$(ls -A | tr '\n' ' ')" "$sibling" "$writable"
)sh", 0755));
  ASSERT_TRUE(write_file_atomic(tmp / "secret.txt", "not for agents\n", 0644));
  auto config = testing::parse_config(
      R"({"name": "rel", "stages": [{"name": "where", "kind": "command", "command": ["agents/where.sh"]}]})");
  LogicalClock clock;
  SequentialIdSource ids;
  PipelineExecutor exec(config, testing::make_agents(config, {}, sandboxed(tmp.path())), clock, ids);
  auto run = exec.start(RunInput{});
  ASSERT_TRUE(run);
  ASSERT_TRUE(exec.run(*run));
  ASSERT_EQ(reason_of(*run), TerminalReason::completed) << run->envelope.termination_reason.value_or("");
  const Json& out = run->envelope.outputs.at("where");
  EXPECT_EQ(out["cwd"], "/workspace");
  EXPECT_EQ(out["listing"], "agents ");
  EXPECT_EQ(out["sibling"], "unseen");
  EXPECT_EQ(out["writable"], "no");
  EXPECT_EQ(read_file(tmp / "agents" / "where.sh").value().substr(0, 9), "#!/bin/sh");
}

}  // namespace
}  // namespace warden::executor
