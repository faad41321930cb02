// `warden pipeline` end to end with the real binary: the shipped examples, interrupts resumed
// from the ledger, a run SIGKILLed mid-way and resumed, golden (deterministic) runs, bad
// input with meaningful exit codes, and a command stage that attacks the host from its
// sandbox.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/file.h"
#include "tests/support/process.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must name examples/pipelines"
#endif

namespace warden::test {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string example(const char* name) { return std::string(EXAMPLES_DIR) + "/" + name; }

std::vector<Json> json_lines(const std::string& out) {
  std::vector<Json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(Json::parse(line));
  }
  return lines;
}

// A ledger for the test, created by `warden ledger init`.
fs::path new_ledger(const TempDir& tmp, const char* name = "ledger") {
  fs::path dir = tmp / name;
  ProcessResult r = warden({"ledger", "init", dir.string()});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return dir;
}

std::vector<std::string> moves_of(const Json& shown) {
  std::vector<std::string> out;
  for (const auto& t : shown["transitions"]) {
    out.push_back(t["from"].get<std::string>() + ">" + t["to"].get<std::string>() + ":" + t["reason"].get<std::string>());
  }
  return out;
}

TEST(PipelineCli, ExamplesValidate) {
  for (const char* name : {"critic_loop.json", "fan_out.json", "approval.json"}) {
    ProcessResult r = warden({"pipeline", "validate", example(name), "--json"});
    ASSERT_TRUE(r.exited_with(0)) << name << "\n" << describe(r);
    EXPECT_EQ(stdout_json(r)["ok"], true);
  }
  ProcessResult r = warden({"pipeline", "validate", example("critic_loop.json"), "--json"});
  EXPECT_EQ(stdout_json(r)["cycle_edges"], (Json::parse(R"([{"from": "critic", "to": "planner", "max_count": 2}])")));
}

TEST(PipelineCli, BadConfigsAreRefusedNamingTheField) {
  TempDir tmp;
  auto check = [&](const std::string& text, int code, const std::string& message) {
    ASSERT_TRUE(write_file_atomic(tmp / "bad.json", text));
    ProcessResult r = warden({"pipeline", "validate", (tmp / "bad.json").string()});
    EXPECT_TRUE(r.exited_with(code)) << describe(r);
    EXPECT_NE(r.err.find(message), std::string::npos) << describe(r);
  };
  check(R"({"name": "x", "stages": [{"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "b"}]})",
        3, "stages[0].default_next: unknown stage \"b\"");
  check(R"({"name": "x", "stages": [{"name": "a", "kind": "gpt"}]})", 3, "unknown stage kind \"gpt\"");
  check(R"({"name": "x", "stages": [)", 3, "pipeline config");
  ProcessResult missing = warden({"pipeline", "validate", (tmp / "none.json").string()});
  EXPECT_TRUE(missing.exited_with(4)) << describe(missing);
  ProcessResult run = warden({"pipeline", "run", (tmp / "bad.json").string(), "--input", "x"});
  EXPECT_TRUE(run.exited_with(3)) << describe(run);
}

TEST(PipelineCli, CriticLoopEndsAtItsEdgeLimit) {
  ProcessResult r = warden({"pipeline", "run", example("critic_loop.json"), "--input", "add a cache", "--json"});
  ASSERT_TRUE(r.exited_with(1)) << describe(r);  // ended, not completed
  auto lines = json_lines(r.out);
  ASSERT_FALSE(lines.empty());
  const Json& result = lines.back();
  EXPECT_EQ(result["type"], "result");
  EXPECT_EQ(result["status"], "ended");
  EXPECT_EQ(result["terminal_reason"], "edge_limit_exceeded");
  EXPECT_EQ(result["iteration"], 2);
  EXPECT_EQ(result["llm_call_count"], 12);
  size_t transitions = 0, checkpoints = 0;
  for (const auto& e : lines) {
    transitions += e["type"] == "transition";
    checkpoints += e["type"] == "checkpoint_created";
    if (e["type"] == "stage_completed" && e["tool_name"] == "planner") {
      EXPECT_EQ(e["data"]["output"]["steps"], 3);
    }
  }
  EXPECT_EQ(transitions, 9u);
  EXPECT_EQ(checkpoints, 2u);
}

TEST(PipelineCli, FanOutJoins) {
  TempDir tmp;
  fs::path ledger = new_ledger(tmp);
  ProcessResult r = warden({"pipeline", "run", example("fan_out.json"), "--input", "x", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  std::string run_id = json_lines(r.out).back()["run_id"];
  ProcessResult shown = warden({"pipeline", "show", run_id, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(shown.exited_with(0)) << describe(shown);
  Json joined = stdout_json(shown)["envelope"]["outputs"]["join"]["joined"];
  EXPECT_EQ(joined["test"]["passed"], 12);
  EXPECT_EQ(joined["lint"]["warnings"], 0);
  EXPECT_EQ(joined["docs"]["pages"], 3);
}

TEST(PipelineCli, ApprovalWaitsThenResumesFromTheLedger) {
  TempDir tmp;
  fs::path ledger = new_ledger(tmp);
  ProcessResult r = warden({"pipeline", "run", example("approval.json"), "--input", "notes", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  Json result = json_lines(r.out).back();
  EXPECT_EQ(result["status"], "waiting");
  EXPECT_EQ(result["interrupt"]["question"], "Publish the release notes?");
  std::string run_id = result["run_id"];

  ProcessResult no_answer = warden({"pipeline", "resume", run_id, "--ledger", ledger.string()});
  EXPECT_TRUE(no_answer.exited_with(3)) << describe(no_answer);
  EXPECT_NE(no_answer.err.find("waits for a response to its approval interrupt: Publish the release notes?"),
            std::string::npos);

  ProcessResult resumed = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--response", "yes"});
  ASSERT_TRUE(resumed.exited_with(0)) << describe(resumed);
  EXPECT_NE(resumed.out.find("completed"), std::string::npos);

  ProcessResult shown = warden({"pipeline", "show", run_id, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(shown.exited_with(0)) << describe(shown);
  Json s = stdout_json(shown);
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["envelope"]["outputs"]["publish"]["published"], true);
  EXPECT_EQ(moves_of(s), (std::vector<std::string>{"draft>approve:default", "approve>publish:routing", "publish>end:complete"}));

  ProcessResult again = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--response", "yes"});
  EXPECT_TRUE(again.exited_with(3)) << describe(again);
  EXPECT_NE(again.err.find("already ended: completed"), std::string::npos);
  EXPECT_TRUE(warden({"ledger", "verify", ledger.string()}).exited_with(0));
}

TEST(PipelineCli, InterruptWithoutALedgerSaysItCannotResume) {
  ProcessResult r = warden({"pipeline", "run", example("approval.json"), "--input", "x"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("cannot be resumed"), std::string::npos);
}

// A loop of slow command agents: long enough to be killed in the middle.
std::string slow_loop(const TempDir& tmp) {
  Json stages = Json::array();
  for (const char* s : {"a", "b", "c"}) {
    stages.push_back({{"name", s}, {"kind", "command"}, {"command", {TEST_AGENT, "slow", "150"}}});
  }
  stages[0]["default_next"] = "b";
  stages[1]["default_next"] = "c";
  stages[2]["default_next"] = "a";
  Json config{{"name", "slow-loop"}, {"stages", stages}, {"max_iterations", 2}, {"max_llm_calls", 100}};
  fs::path path = tmp / "slow_loop.json";
  EXPECT_TRUE(write_file_atomic(path, config.dump(2)));
  return path.string();
}

TEST(PipelineCli, KilledRunResumesFromTheLedger) {
  TempDir tmp;
  std::string config = slow_loop(tmp);
  // The reference: the same pipeline, never interrupted.
  fs::path reference = new_ledger(tmp, "reference");
  ProcessResult whole = warden({"pipeline", "run", config, "--input", "x", "--ledger", reference.string(), "--json"});
  ASSERT_TRUE(whole.exited_with(1)) << describe(whole);  // ends at max_iterations
  std::string reference_id = json_lines(whole.out).back()["run_id"];
  Json expected = stdout_json(warden({"pipeline", "show", reference_id, "--ledger", reference.string(), "--json"}));

  fs::path ledger = new_ledger(tmp);
  Child child = Child::spawn({warden_binary(), "pipeline", "run", config, "--input", "x", "--ledger", ledger.string(), "--json"});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto completed = [&] {
    size_t n = 0;
    for (size_t at = 0; (at = child.out().find("\"type\":\"stage_completed\"", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  while (completed() < 4 && child.output_open() && std::chrono::steady_clock::now() < deadline) {
    child.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
  }
  ASSERT_EQ(completed(), 4u) << child.out();
  child.kill(SIGKILL);
  ProcessResult killed = child.wait();
  ASSERT_EQ(killed.term_signal, SIGKILL);
  std::string run_id = json_lines(killed.out).front()["run_id"];

  // The ledger holds a consistent prefix of the run, and says it has not ended.
  ProcessResult mid = warden({"pipeline", "show", run_id, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(mid.exited_with(0)) << describe(mid);
  Json partial = stdout_json(mid);
  EXPECT_EQ(partial["status"], "running");
  EXPECT_GE(partial["steps"], 3);
  EXPECT_LE(partial["steps"], 5);

  ProcessResult resumed = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(resumed.exited_with(1)) << describe(resumed);
  EXPECT_EQ(json_lines(resumed.out).back()["terminal_reason"], "max_iterations_exceeded");

  Json finished = stdout_json(warden({"pipeline", "show", run_id, "--ledger", ledger.string(), "--json"}));
  EXPECT_EQ(moves_of(finished), moves_of(expected));
  EXPECT_EQ(finished["steps"], expected["steps"]);
  EXPECT_EQ(finished["envelope"]["agent_hop_count"], expected["envelope"]["agent_hop_count"]);
  EXPECT_EQ(finished["envelope"]["llm_call_count"], expected["envelope"]["llm_call_count"]);
  ProcessResult verified = warden({"ledger", "verify", ledger.string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
}

TEST(PipelineCli, DeterministicRunsGiveIdenticalLedgers) {
  TempDir tmp;
  auto root_after_run = [&](const char* name) {
    fs::path ledger = new_ledger(tmp, name);
    ProcessResult r = warden({"pipeline", "run", example("critic_loop.json"), "--input", "golden", "--ledger",
                              ledger.string(), "--deterministic", "--json"});
    EXPECT_TRUE(r.exited_with(1)) << describe(r);
    EXPECT_EQ(json_lines(r.out).back()["run_id"], "run-000001");
    return stdout_json(warden({"ledger", "show", ledger.string(), "--json"}))["root"].get<std::string>();
  };
  EXPECT_EQ(root_after_run("one"), root_after_run("two"));
}

TEST(PipelineCli, UnknownRunsAndLedgers) {
  TempDir tmp;
  fs::path ledger = new_ledger(tmp);
  ProcessResult r = warden({"pipeline", "show", "run-nope", "--ledger", ledger.string()});
  EXPECT_TRUE(r.exited_with(4)) << describe(r);
  EXPECT_NE(r.err.find("no pipeline run run-nope"), std::string::npos);
  ProcessResult no_ledger = warden({"pipeline", "resume", "run-nope", "--ledger", (tmp / "missing").string()});
  EXPECT_TRUE(no_ledger.exited_with(4)) << describe(no_ledger);
  ProcessResult usage = warden({"pipeline", "run", example("approval.json")});
  EXPECT_TRUE(usage.exited_with(2)) << describe(usage);
}

// A command stage that attacks (tests/kernel/fixtures/confined/attacker.sh, in its stage
// mode): it tries to read the run's ledger and its signer.key and Warden's environment, to
// find them, to write a repository and move its branch, and leaves a setsid daemon and a loop
// behind. Every attack fails, nothing it started survives the stage, the repository, the key
// and the ledger are untouched by it, and the run's start records how its stages were
// confined.
TEST(PipelineCli, CommandStagesAreConfined) {
  TempDir tmp;
  const fs::path target = tmp / "target";
  fs::create_directories(target);
  ProcessResult init = warden({"ledger", "init", (target / "ledger").string()});
  ASSERT_TRUE(init.exited_with(0)) << describe(init);
  ProcessResult repo = run({"/bin/sh", "-c", "git init -q -b main '" + (target / "repo").string() + "' && cd '" +
                                                 (target / "repo").string() + "' && echo one > f && git add f && "
                                                 "git -c user.name=t -c user.email=t@t commit -qm one && "
                                                 "git branch warden/reasons && echo two > f && "
                                                 "git -c user.name=t -c user.email=t@t commit -qam two"});
  ASSERT_TRUE(repo.exited_with(0)) << describe(repo);
  auto ref = [&] { return run({"/usr/bin/git", "-C", (target / "repo").string(), "rev-parse", "warden/reasons"}).out; };
  const std::string branch_before = ref();
  const std::string key_before = read_file(target / "ledger" / "signer.key").value();

  const std::string marker = "warden-stage-attack-" + tmp.path().filename().string();
  Json command = Json::array({"sh", std::string(WARDEN_SOURCE_DIR) + "/tests/kernel/fixtures/confined/attacker.sh", "stage",
                              "none", target.string(), marker});
  Json config{{"name", "attack"}, {"stages", Json::array({{{"name", "attacker"}, {"kind", "command"}, {"command", command}}})}};
  ASSERT_TRUE(write_file_atomic(tmp / "attack.json", config.dump()));

  ::setenv("WARDEN_TEST_SECRET", "hunter2-do-not-leak", 1);
  ProcessResult r = warden({"pipeline", "run", (tmp / "attack.json").string(), "--input", "x", "--ledger",
                            (target / "ledger").string(), "--json"});
  ::unsetenv("WARDEN_TEST_SECRET");
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  const std::string run_id = json_lines(r.out).back()["run_id"];
  Json shown = stdout_json(warden({"pipeline", "show", run_id, "--ledger", (target / "ledger").string(), "--json"}));
  const std::string findings = shown["envelope"]["outputs"]["attacker"]["findings"];
  for (const char* attack : {"read-ledger", "read-key", "find-ledger", "write-repo", "move-branch", "read-env", "read-env-proc"}) {
    EXPECT_NE(findings.find(std::string(attack) + ": blocked"), std::string::npos) << attack << "\n" << findings;
  }
  EXPECT_EQ(findings.find("SUCCEEDED"), std::string::npos) << findings;
  EXPECT_NE(findings.find("interfaces: lo,\n"), std::string::npos) << findings;

  // How the stage was confined is in the run's start.
  fs::path exported = tmp / "export";
  ASSERT_TRUE(warden({"ledger", "export", (target / "ledger").string(), exported.string()}).exited_with(0));
  std::ifstream records(exported / "records.jsonl");
  Json launch;
  for (std::string line; std::getline(records, line);) {
    Json record = Json::parse(line);
    if (record["kind"] == "pipeline_run") launch = record["payload"]["launch"];
  }
  ASSERT_TRUE(launch.contains("executor_sandbox")) << launch.dump();
  EXPECT_EQ(launch["executor_sandbox"]["profile"], "executor");
  EXPECT_EQ(launch["executor_sandbox"]["network"], false);

  // Nothing it started is left, and nothing happens after it: the daemon would act at 2 s.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (count_processes_with(marker) > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(count_processes_with(marker), 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (const char* left : {"daemon-was-here", "loop-was-here", "repo/pwned"}) EXPECT_FALSE(fs::exists(target / left)) << left;
  EXPECT_EQ(ref(), branch_before);
  EXPECT_EQ(read_file(target / "ledger" / "signer.key").value(), key_before);
  ProcessResult verified = warden({"ledger", "verify", (target / "ledger").string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
}

// A run resumes only in the sandbox it started in: its command stages' confinement is in
// its start, and a resume that would confine them otherwise is refused.
TEST(PipelineCli, AResumeKeepsTheRecordedConfinement) {
  TempDir tmp;
  fs::path ledger = new_ledger(tmp);
  Json config{{"name", "ask"},
              {"stages", Json::array({{{"name", "agent"}, {"kind", "command"}, {"command", {TEST_AGENT, "approve"}}}})}};
  ASSERT_TRUE(write_file_atomic(tmp / "ask.json", config.dump()));
  ProcessResult r = warden({"pipeline", "run", (tmp / "ask.json").string(), "--input", "x", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  std::string run_id = json_lines(r.out).back()["run_id"];

  ProcessResult other = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--response", "yes", "--executor-network"});
  EXPECT_TRUE(other.exited_with(3)) << describe(other);
  EXPECT_NE(other.err.find("resume with the same --executor-profile and --executor-network"), std::string::npos) << other.err;

  ProcessResult same = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--response", "yes"});
  ASSERT_TRUE(same.exited_with(0)) << describe(same);
  EXPECT_NE(same.out.find("completed"), std::string::npos) << same.out;
}

}  // namespace
}  // namespace warden::test
