// The example executors in examples/, run exactly as their documentation says, end to end
// with the real binary: examples/calculator/agent.py builds the calculator through `warden
// build --executor 'command:python3 agent.py'` (its eval() draft refused, every step then
// accepted, the ledger verifying and replaying), and declines a replan cleanly; each pipeline
// config in examples/pipelines runs its example agents to its documented end in a ledger.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(WARDEN_SOURCE_DIR) / "examples";

TEST(ExampleExecutors, AgentPyBuildsTheCalculator) {
  TempDir tmp;
  // As the README and agent.py's own docstring say: the command is relative to the
  // blueprint's folder, which is where the executor's sandbox finds agent.py.
  auto r = warden({"build", (kExamples / "calculator" / "blueprint.json").string(), "--out", (tmp / "out").string(),
                   "--executor", "command:python3 agent.py"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("5/5 accepted, 6 proposals, 1 refused"), std::string::npos) << r.out;

  const fs::path ledger = tmp / "out" / "ledger";
  auto records = ledger_records(ledger);
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 6u);
  for (size_t i = 0; i < decisions.size(); ++i) {
    // Only the parser's eval() draft is refused, for what it does, never for its shape.
    const bool eval_draft = decisions[i]["step_id"] == "s3" && decisions[i]["attempt"] == 1;
    EXPECT_EQ(decisions[i]["verdict"]["accepted"], !eval_draft) << decisions[i].dump();
    if (eval_draft) {
      EXPECT_TRUE(has_code(reason_codes(decisions[i]), "dangerous_operation_detected")) << decisions[i].dump();
      EXPECT_FALSE(has_code(reason_codes(decisions[i]), "malformed_diff")) << decisions[i].dump();
    }
  }
  // agent.py sends no diff_sha256: the kernel computed the digest it recorded.
  for (const auto& p : payloads(records, "proposal")) {
    EXPECT_EQ(p["executor"], "command:python3 agent.py");
    EXPECT_TRUE(p["diff_sha256"].is_string()) << p.dump();
  }
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  expect_branch_holds_only_accepted(tmp / "out" / "repo", "main", "warden/calculator", records);
  auto replayed = warden({"replay", ledger.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
}

// Asked for a plan it cannot write, agent.py says so and exits 1: the run fails naming it,
// never a crash (a Python traceback) read as a refusal.
TEST(ExampleExecutors, AgentPyDeclinesAReplanWithItsReason) {
  TempDir tmp;
  const fs::path dir = tmp / "bp";
  fs::create_directories(dir);
  fs::copy(kExamples / "calculator", dir, fs::copy_options::recursive);
  // A blueprint whose parser has only drafts that are refused: retries run out, then a replan
  // is asked for.
  auto blueprint = nlohmann::json::parse(read_file(dir / "blueprint.json"));
  blueprint["constraints"]["max_retries"] = 1;
  write_file(dir / "blueprint.json", blueprint.dump());
  write_file(dir / "files" / "src" / "calculator" / "parse.py", read_file(dir / "files" / "drafts" / "parse_with_eval.py"));
  auto r = warden({"build", (dir / "blueprint.json").string(), "--out", (tmp / "out").string(), "--executor",
                   "command:python3 agent.py"});
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_NE(r.out.find("agent.py: cannot write a replacement plan for step s3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Traceback"), std::string::npos) << r.out;
  expect_ledger_verifies(tmp / "out" / "ledger", tmp / "out" / "ledger" / "signer.pub");
}

// Every pipeline config of examples/pipelines runs its example agents to its end: the critic
// loop to its edge limit, the fan-out to completion, the approval to its interrupt — all
// three in one ledger, listed by `warden runs list`.
TEST(ExampleExecutors, EveryPipelineExampleRunsItsAgents) {
  TempDir tmp;
  const fs::path ledger = tmp / "ledger";
  ASSERT_TRUE(warden({"ledger", "init", ledger.string()}).exited_with(0));
  struct Expected {
    const char* config;
    int exit_code;
    const char* status;  // as runs list says it
  };
  std::vector<std::string> ids;
  for (const Expected& e : {Expected{"critic_loop.json", 1, "failed"}, Expected{"fan_out.json", 0, "completed"},
                            Expected{"approval.json", 0, "waiting"}}) {
    auto r = warden({"pipeline", "run", (kExamples / "pipelines" / e.config).string(), "--input", "an example",
                     "--ledger", ledger.string(), "--json"});
    EXPECT_TRUE(r.exited_with(e.exit_code)) << e.config << ": " << describe(r);
    auto lines = complete_lines(r.out);
    ASSERT_FALSE(lines.empty()) << e.config;
    auto last = nlohmann::json::parse(lines.back());
    // The closing result names the run ("run"; "run_id" once every stream says it so).
    const char* key = last.contains("run_id") ? "run_id" : "run";
    ASSERT_TRUE(last.contains(key)) << e.config << ": " << lines.back();
    ids.push_back(last[key]);
    auto listed = warden({"runs", "list", ledger.string(), "--json"});
    ASSERT_TRUE(listed.exited_with(0)) << describe(listed);
    auto rows = complete_lines(listed.out);
    ASSERT_EQ(rows.size(), ids.size() + 1) << listed.out;  // one line per run, then the result line
    EXPECT_EQ(nlohmann::json::parse(rows.back())["runs"], ids.size()) << listed.out;
    auto row = nlohmann::json::parse(rows[rows.size() - 2]);
    EXPECT_EQ(row["run_id"], ids.back());
    EXPECT_EQ(row["kind"], "pipeline");
    EXPECT_EQ(row["status"], e.status) << e.config << ": " << row.dump();
  }
}

}  // namespace
}  // namespace warden::test
