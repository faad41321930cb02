// `warden plan generate|verify|commit` through the real binary, with a real ledger.
#include <gtest/gtest.h>

#include <filesystem>

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
  auto committed = stdout_json(ok);
  EXPECT_EQ(committed["kind"], "plan_commit");
  EXPECT_EQ(committed["proposal_seq"], 0);
  EXPECT_EQ(committed["seq"], 1);

  auto bad = warden({"plan", "commit", broken_plan(dir, plan), "--ledger", ledger, "--json"});
  ASSERT_TRUE(bad.exited_with(1)) << describe(bad);
  auto refused = stdout_json(bad);
  EXPECT_EQ(refused["kind"], "refusal");
  EXPECT_EQ(refused["proposal_seq"], 2);
  EXPECT_EQ(refused["seq"], 3);

  auto show = [&](int seq) {
    auto r = warden({"ledger", "show", ledger, std::to_string(seq), "--json"});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    return stdout_json(r)["record"];
  };
  auto proposal = show(0);
  EXPECT_EQ(proposal["kind"], "plan_proposal");
  EXPECT_EQ(proposal["payload"]["run_id"], "run-1");
  EXPECT_EQ(proposal["payload"]["source"], "file");
  EXPECT_EQ(proposal["payload"]["plan"], nlohmann::json::parse(read_file(plan)));
  auto commit = show(1);
  EXPECT_EQ(commit["kind"], "plan_commit");
  EXPECT_EQ(commit["payload"]["plan_sha256"], committed["plan_sha256"]);
  EXPECT_EQ(commit["payload"]["blueprint_sha256"], proposal["payload"]["plan"]["blueprint_sha256"]);
  EXPECT_EQ(commit["payload"]["proposal_seq"], 0);
  auto refusal = show(3);
  EXPECT_EQ(refusal["kind"], "refusal");
  EXPECT_EQ(refusal["payload"]["subject"], "plan");
  EXPECT_EQ(refusal["payload"]["error_type"], "PLANNING_ERROR");
  EXPECT_EQ(refusal["payload"]["run_id"], nullptr);
  EXPECT_EQ(refusal["payload"]["reasons"].size(), 2u);
  EXPECT_EQ(show(2)["payload"]["plan_sha256"], refusal["payload"]["plan_sha256"]);

  auto verify = warden({"ledger", "verify", ledger});
  EXPECT_TRUE(verify.exited_with(0)) << describe(verify);
}

}  // namespace
}  // namespace warden::test
