// `warden plan generate|verify|commit` through the real binary, with a real ledger.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/canonical_json.h"
#include "common/sha256.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

std::string calculator() { return std::string(WARDEN_SOURCE_DIR) + "/examples/calculator/blueprint.json"; }

// The calculator's plan written to `dir`/plan.json; returns its path.
std::string generated_plan(const TempDir& dir) {
  std::string path = (dir / "plan.json").string();
  auto r = warden({"plan", "generate", calculator(), "-o", path});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return path;
}

// The plan at `path` with a dangling dependency and a target outside the repository.
std::string broken_plan(const TempDir& dir, const std::string& path) {
  auto plan = nlohmann::json::parse(read_file(path));
  plan["steps"][1]["dependencies"] = {"s99"};
  plan["steps"][0]["targets"] = {"../outside.py"};
  plan["steps"][0].erase("content");
  plan["steps"][0]["drafts"] = nlohmann::json::array();
  std::string out = (dir / "broken.json").string();
  write_file(out, plan.dump());
  return out;
}

// The payload of record `seq` of `ledger`, as `warden ledger show` prints it.
nlohmann::json payload_at(const std::string& ledger, int seq) {
  auto r = warden({"ledger", "show", ledger, std::to_string(seq), "--json"});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return stdout_json(r)["record"]["payload"];
}

// What a writer of the ledger can do: append any record (`warden ledger append`); its seq.
int append_record(const TempDir& dir, const std::string& ledger, const std::string& kind, const nlohmann::json& payload) {
  write_file(dir / "payload.json", payload.dump());
  auto r = warden({"ledger", "append", ledger, "--kind", kind, "--payload", (dir / "payload.json").string(), "--json"});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return stdout_json(r)["seq"].get<int>();
}

// A forged plan commit as a writer of the ledger would append it: `policy` (a policy record's
// payload), then a copy of the proposal at `proposal`, then a copy of the commit at `commit`
// pointing at that copy. Replay must refuse the ledger, saying `says`.
void expect_forged_commit_refused(const TempDir& dir, const std::string& ledger, const nlohmann::json& policy,
                                  int proposal, int commit, const std::string& says) {
  append_record(dir, ledger, "policy", policy);
  const int copied = append_record(dir, ledger, "plan_proposal", payload_at(ledger, proposal));
  auto forged = payload_at(ledger, commit);
  forged["proposal_seq"] = copied;
  append_record(dir, ledger, "plan_commit", forged);
  auto caught = warden({"replay", ledger});
  EXPECT_TRUE(caught.exited_with(1)) << describe(caught);
  EXPECT_NE(caught.out.find(says), std::string::npos) << caught.out;
}

TEST(PlanCli, GenerateIsDeterministic) {
  auto a = warden({"plan", "generate", calculator()});
  auto b = warden({"plan", "generate", calculator()});
  ASSERT_TRUE(a.exited_with(0)) << describe(a);
  EXPECT_EQ(a.out, b.out);
  auto plan = nlohmann::json::parse(a.out);
  EXPECT_EQ(plan["format"], "warden.plan/v1");
  EXPECT_EQ(plan["policy"], "python");
  EXPECT_EQ(plan["steps"][0]["action"], "create_module");
  EXPECT_EQ(plan["verification_checkpoints"][0]["invariants"], nlohmann::json::array({"all_functions_have_tests"}));

  TempDir dir;
  std::string path = generated_plan(dir);
  EXPECT_EQ(read_file(path), a.out);
  auto json = warden({"plan", "generate", calculator(), "--json"});
  ASSERT_TRUE(json.exited_with(0)) << describe(json);
  EXPECT_EQ(stdout_json(json)["plan"], plan);
}

TEST(PlanCli, GenerateRefusesBadBlueprints) {
  TempDir dir;
  write_file(dir / "bp.json", R"({"format": "warden.blueprint/v1", "name": "x", "language": "python",
                                  "functions": [{"names": ["f"], "path": "/etc/f.py", "content": ""}]})");
  auto r = warden({"plan", "generate", (dir / "bp.json").string()});
  EXPECT_TRUE(r.exited_with(3)) << describe(r);
  EXPECT_NE(r.err.find("blueprint.functions[0].path:"), std::string::npos) << r.err;
  auto missing = warden({"plan", "generate", (dir / "none.json").string()});
  EXPECT_TRUE(missing.exited_with(4)) << describe(missing);
  auto policy = warden({"plan", "generate", calculator(), "--policy", "nope"});
  EXPECT_TRUE(policy.exited_with(4)) << describe(policy);
}

TEST(PlanCli, VerifyListsEveryReason) {
  TempDir dir;
  std::string plan = generated_plan(dir);
  auto ok = warden({"plan", "verify", plan});
  EXPECT_TRUE(ok.exited_with(0)) << describe(ok);
  auto ok_json = warden({"plan", "verify", plan, "--json", "--policy", "python"});
  ASSERT_TRUE(ok_json.exited_with(0)) << describe(ok_json);
  EXPECT_EQ(stdout_json(ok_json)["ok"], true);

  auto bad = warden({"plan", "verify", broken_plan(dir, plan), "--json"});
  ASSERT_TRUE(bad.exited_with(1)) << describe(bad);
  auto out = stdout_json(bad);
  EXPECT_EQ(out["ok"], false);
  EXPECT_EQ(out["error_type"], "PLANNING_ERROR");
  std::vector<std::string> codes;
  for (const auto& r : out["reasons"]) codes.push_back(r["code"]);
  EXPECT_EQ(codes, (std::vector<std::string>{"plan_dependency_missing:s2->s99", "plan_invalid_target:../outside.py"}));
  EXPECT_NE(bad.err.find("plan_invalid_target:../outside.py"), std::string::npos) << bad.err;

  write_file(dir / "garbage.json", R"({"format": "warden.plan/v1", "name": "x", "policy": "python", "steps": [{}]})");
  auto garbage = warden({"plan", "verify", (dir / "garbage.json").string()});
  EXPECT_TRUE(garbage.exited_with(3)) << describe(garbage);
  EXPECT_NE(garbage.err.find("plan.steps[0].id: missing"), std::string::npos) << garbage.err;
}

TEST(PlanCli, CommitRecordsProposalThenCommitOrRefusal) {
  TempDir dir;
  std::string plan = generated_plan(dir);
  // A missing ledger (under a missing parent) is created, with its keys, as every --ledger does.
  std::string ledger = (dir / "new" / "ledger").string();

  auto ok = warden({"plan", "commit", plan, "--ledger", ledger, "--run-id", "run-1", "--json"});
  ASSERT_TRUE(ok.exited_with(0)) << describe(ok);
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(ledger) / "signer.key"));
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(ledger) / "signer.pub"));
  // Each commit records the policy it judged the plan under, then the proposal, then the verdict.
  auto committed = stdout_json(ok);
  EXPECT_EQ(committed["kind"], "plan_commit");
  EXPECT_EQ(committed["proposal_seq"], 1);
  EXPECT_EQ(committed["seq"], 2);

  auto bad = warden({"plan", "commit", broken_plan(dir, plan), "--ledger", ledger, "--json"});
  ASSERT_TRUE(bad.exited_with(1)) << describe(bad);
  auto refused = stdout_json(bad);
  EXPECT_EQ(refused["kind"], "refusal");
  EXPECT_EQ(refused["proposal_seq"], 4);
  EXPECT_EQ(refused["seq"], 5);

  auto show = [&](int seq) {
    auto r = warden({"ledger", "show", ledger, std::to_string(seq), "--json"});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    return stdout_json(r)["record"];
  };
  auto policy = show(0);
  EXPECT_EQ(policy["kind"], "policy");
  EXPECT_EQ(policy["payload"]["run_id"], "run-1");
  EXPECT_EQ(policy["payload"]["policy"]["name"], "python");
  auto proposal = show(1);
  EXPECT_EQ(proposal["kind"], "plan_proposal");
  EXPECT_EQ(proposal["payload"]["run_id"], "run-1");
  EXPECT_EQ(proposal["payload"]["source"], "file");
  EXPECT_EQ(proposal["payload"]["plan"], nlohmann::json::parse(read_file(plan)));
  auto commit = show(2);
  EXPECT_EQ(commit["kind"], "plan_commit");
  EXPECT_EQ(commit["payload"]["plan_sha256"], committed["plan_sha256"]);
  EXPECT_EQ(commit["payload"]["blueprint_sha256"], proposal["payload"]["plan"]["blueprint_sha256"]);
  EXPECT_EQ(commit["payload"]["proposal_seq"], 1);
  EXPECT_EQ(show(3)["payload"]["run_id"], nullptr);  // the policy of a plan committed outside a run
  auto refusal = show(5);
  EXPECT_EQ(refusal["kind"], "refusal");
  EXPECT_EQ(refusal["payload"]["subject"], "plan");
  EXPECT_EQ(refusal["payload"]["error_type"], "PLANNING_ERROR");
  EXPECT_EQ(refusal["payload"]["run_id"], nullptr);
  EXPECT_EQ(refusal["payload"]["reasons"].size(), 2u);
  EXPECT_EQ(show(4)["payload"]["plan_sha256"], refusal["payload"]["plan_sha256"]);

  // An auditor judges both verdicts again, each under the policy recorded with it.
  auto replay = warden({"replay", ledger});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  EXPECT_NE(replay.out.find("2 plan verdicts"), std::string::npos) << replay.out;

  auto verify = warden({"ledger", "verify", ledger});
  EXPECT_TRUE(verify.exited_with(0)) << describe(verify);
}

// Plans committed outside a run under different policies: replay judges each under its own,
// and a verdict whose recorded policy does not support it is caught.
TEST(PlanCli, ReplayJudgesEachPlanCommitUnderItsOwnPolicy) {
  TempDir dir;
  std::string plan = generated_plan(dir);
  std::string ledger = (dir / "ledger").string();
  ASSERT_TRUE(warden({"plan", "commit", plan, "--ledger", ledger}).exited_with(0));
  // Under cpp the python plan names invariants cpp does not know: refused, and recorded so.
  auto refused = warden({"plan", "commit", plan, "--ledger", ledger, "--policy", "cpp"});
  ASSERT_TRUE(refused.exited_with(1)) << describe(refused);
  ASSERT_TRUE(warden({"plan", "commit", plan, "--ledger", ledger}).exited_with(0));
  auto replay = warden({"replay", ledger});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  EXPECT_NE(replay.out.find("3 plan verdicts"), std::string::npos) << replay.out;

  // A writer of the ledger that claims the refused plan was committed under cpp: it copies
  // cpp's policy record and the plan's proposal, then appends a commit. Replay refuses it.
  ASSERT_EQ(payload_at(ledger, 3)["policy"]["name"], "cpp");
  expect_forged_commit_refused(dir, ledger, payload_at(ledger, 3), 4, 2, "the plan was committed, but verify_plan refuses it");
}

// Inside a run a plan is judged under the run's one policy. A writer of the ledger that
// appends a second, weaker policy to a run, then a plan proposed and committed right after
// it, must not get replay to judge that plan under the policy it chose: a run with two
// policies is a problem, wherever the second stands.
TEST(PlanCli, ASecondPolicyAppendedToARunDoesNotJudgeItsPlans) {
  TempDir dir;
  std::string plan = generated_plan(dir);
  std::string ledger = (dir / "ledger").string();
  ASSERT_TRUE(warden({"plan", "commit", plan, "--ledger", ledger, "--run-id", "run-1"}).exited_with(0));
  ASSERT_TRUE(warden({"replay", ledger}).exited_with(0));

  // The run's policy under another name, hashed right: a policy of the forger's choosing.
  auto weak = payload_at(ledger, 0);
  ASSERT_EQ(weak["run_id"], "run-1");
  weak["policy"]["name"] = "weak";
  auto canonical = canonicalize(weak["policy"]);
  ASSERT_TRUE(canonical);
  weak["policy_sha256"] = sha256(*canonical).str();
  expect_forged_commit_refused(dir, ledger, weak, 1, 2, "exactly one");
}

}  // namespace
}  // namespace warden::test
