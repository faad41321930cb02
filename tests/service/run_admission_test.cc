// What the Kernel service admits (service/run_admission.h), in-process: a client's documents
// through the kernel's typed parsers, and the server's rules held on the parsed values, each
// shown on a document the kernel's parser accepts (so the rule, not the parser, refuses it);
// a StartRun request as one AdmittedRun.
#include "service/run_admission.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "kernel/judge/plan_generate.h"
#include "kernel/judge/policy.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// A self-contained blueprint the kernel accepts.
Json tiny_blueprint() {
  return Json::parse(R"({"format": "warden.blueprint/v1", "name": "tiny", "language": "python",
      "repository": {"seed": null, "base": "HEAD"}, "goals": ["a constant"], "policy": "python",
      "intent": {"name": "python_package", "artifacts": ["module"]},
      "modules": [{"name": "tiny", "path": "src/tiny/__init__.py", "content": "X = 1\n"}]})");
}

// `result` failed with `code`, its message starting with `field` (the request's field that broke a rule).
template <typename T>
void expect_refused(const Result<T>& result, Errc code, const std::string& field) {
  ASSERT_FALSE(result) << "admitted; expected a refusal naming " << field;
  EXPECT_EQ(result.error().code, code) << result.error().message;
  EXPECT_TRUE(result.error().message.starts_with(field + ":")) << result.error().message;
}

TEST(RunAdmission, AClientBlueprintIsTheKernelsTypedValue) {
  auto spec = admit_client_blueprint(tiny_blueprint().dump(), "blueprint_json");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->name, "tiny");
  EXPECT_EQ(spec->modules.size(), 1u);
  // What the typed parser refuses never reaches the server's rules: an unknown field, a
  // document that is not a blueprint, text that is not JSON.
  Json unknown = tiny_blueprint();
  unknown["evil"] = true;
  expect_refused(admit_client_blueprint(unknown.dump(), "blueprint_json"), Errc::invalid_argument, "blueprint_json");
  expect_refused(admit_client_blueprint(R"({"name": "x"})", "blueprint_json"), Errc::invalid_argument, "blueprint_json");
  expect_refused(admit_client_blueprint("[1]", "blueprint_json"), Errc::invalid_argument, "blueprint_json");
  expect_refused(admit_client_blueprint("{", "blueprint_json"), Errc::invalid_argument, "blueprint_json");
  expect_refused(admit_client_blueprint(std::string(kMaxClientBlueprintBytes + 1, ' '), "blueprint_json"),
                 Errc::limit_exceeded, "blueprint_json");
}

TEST(RunAdmission, AClientBlueprintNamesNothingOnTheServerAndCommitsOnlyOnWardensBranches) {
  struct Case {
    std::string what, field;
    std::function<void(Json&)> change;
  };
  const std::vector<Case> cases = {
      {"a seed directory", "blueprint_json.repository.seed", [](Json& b) { b["repository"]["seed"] = "/etc"; }},
      {"held-out tests", "blueprint_json.held_out",
       [](Json& b) {
         b["held_out"] = Json::parse(R"({"dir": "secrets", "checks": [{"name": "t", "argv": ["python3", "-m", "pytest"]}]})");
       }},
      {"a policy file", "blueprint_json.policy", [](Json& b) { b["policy"] = "/etc/passwd"; }},
      {"the base branch", "blueprint_json.repository.branch", [](Json& b) { b["repository"]["branch"] = "main"; }},
      // Parsed without a directory: the kernel's parser itself refuses a file to read.
      {"a content file", "blueprint_json",
       [](Json& b) {
         b["modules"][0].erase("content");
         b["modules"][0]["content_file"] = "../../etc/passwd";
       }},
      {"a name that is no path component", "blueprint_json.name", [](Json& b) { b["name"] = std::string(101, 'x'); }},
  };
  for (const Case& c : cases) {
    Json blueprint = tiny_blueprint();
    c.change(blueprint);
    SCOPED_TRACE(c.what);
    expect_refused(admit_client_blueprint(blueprint.dump(), "blueprint_json"), Errc::invalid_argument, c.field);
  }
  Json own_branch = tiny_blueprint();
  own_branch["repository"]["branch"] = "warden/tiny-2";
  EXPECT_TRUE(admit_client_blueprint(own_branch.dump(), "blueprint_json"));
}

TEST(RunAdmission, AClientPlanIsTheKernelsTypedValueUnderTheSameRules) {
  auto blueprint = kernel::BlueprintSpec::from_json(tiny_blueprint());
  ASSERT_TRUE(blueprint) << blueprint.error().message;
  auto policy = kernel::Policy::load("python");
  ASSERT_TRUE(policy) << policy.error().message;
  auto plan = kernel::generate_plan(*blueprint, *policy);
  ASSERT_TRUE(plan) << plan.error().message;
  const Json good = plan->to_json();
  auto admitted = admit_client_plan(good.dump(), "plan_json");
  ASSERT_TRUE(admitted) << admitted.error().message;
  EXPECT_EQ(admitted->digest(), plan->digest());

  Json policy_file = good;
  policy_file["policy"] = "/etc/passwd";
  expect_refused(admit_client_plan(policy_file.dump(), "plan_json"), Errc::invalid_argument, "plan_json.policy");
  Json base_branch = good;
  base_branch["branch"] = "main";
  expect_refused(admit_client_plan(base_branch.dump(), "plan_json"), Errc::invalid_argument, "plan_json.branch");
  Json unknown = good;
  unknown["evil"] = true;
  expect_refused(admit_client_plan(unknown.dump(), "plan_json"), Errc::invalid_argument, "plan_json");
}

TEST(RunAdmission, AClientPolicyIsABuiltInNameOrAPolicyOnABuiltInProfile) {
  auto builtin = admit_client_policy("python", "policy");
  ASSERT_TRUE(builtin) << builtin.error().message;
  EXPECT_EQ(builtin->builtin, "python");

  Json own = Json::parse(std::string(kernel::builtin_policy_text("python")));
  own["name"] = "mine";
  auto json = admit_client_policy(own.dump(), "policy");
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_TRUE(json->builtin.empty());
  EXPECT_EQ(json->json, own.dump());

  Json profile_file = own;
  profile_file["sandbox_profile"] = "/tmp/profile.json";
  expect_refused(admit_client_policy(profile_file.dump(), "policy"), Errc::invalid_argument, "policy.sandbox_profile");
  Json unknown = own;
  unknown["evil"] = true;
  expect_refused(admit_client_policy(unknown.dump(), "policy"), Errc::invalid_argument, "policy");
  expect_refused(admit_client_policy("/etc/passwd", "policy"), Errc::invalid_argument, "policy");
}

class StartRunAdmission : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(blueprints);
    fs::create_directory_symlink(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", blueprints / "calculator");
    test::ProcessResult init = test::warden({"ledger", "init", (tmp / "ledger").string()});
    ASSERT_TRUE(init.exited_with(0)) << test::describe(init);
    auto opened = SharedLedger::open(tmp / "ledger");
    ASSERT_TRUE(opened) << opened.error().message;
    ledger = std::move(*opened);
  }

  Result<AdmittedRun> admit(const v1::StartRunRequest& request) {
    return admit_start_run(request, "alice", AdmissionScope{blueprints, *ledger});
  }

  TempDir tmp;
  fs::path blueprints = tmp / "blueprints";
  std::unique_ptr<SharedLedger> ledger;
};

TEST_F(StartRunAdmission, AServedBlueprintIsTheOperatorsAndMayNameItsSeed) {
  v1::StartRunRequest request;
  request.set_blueprint("calculator");
  auto run = admit(request);
  ASSERT_TRUE(run) << run.error().message;
  const auto* served = std::get_if<ServedBlueprint>(&run->source);
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->file, blueprints / "calculator" / "blueprint.json");
  EXPECT_TRUE(served->spec.seed.has_value());
  EXPECT_EQ(run->name, "calculator");
  EXPECT_EQ(run->repository, "calculator");
  EXPECT_TRUE(std::holds_alternative<PlanExecutor>(run->executor));
  EXPECT_EQ(run->clock, RunClock::system);
  EXPECT_EQ(run->owner, "alice");

  request.set_blueprint("../blueprints/calculator");
  expect_refused(admit(request), Errc::invalid_argument, "blueprint");
  request.set_blueprint("nothing");
  expect_refused(admit(request), Errc::not_found, "blueprint");
}

TEST_F(StartRunAdmission, AClientBlueprintIsAdmittedWithTheBytesItSent) {
  v1::StartRunRequest request;
  request.set_blueprint_json(tiny_blueprint().dump());
  request.set_repository("tiny-1");
  request.set_clock("logical");
  request.set_policy("python");
  request.set_step_timeout_ms(5000);
  auto run = admit(request);
  ASSERT_TRUE(run) << run.error().message;
  const auto* client = std::get_if<ClientBlueprint>(&run->source);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->text, request.blueprint_json());
  EXPECT_EQ(client->spec.name, "tiny");
  EXPECT_EQ(run->name, "tiny");
  EXPECT_EQ(run->repository, "tiny-1");
  EXPECT_EQ(run->clock, RunClock::logical);
  EXPECT_EQ(run->policy, "python");
  EXPECT_EQ(run->step_timeout_ms, 5000);

  Json seeded = tiny_blueprint();
  seeded["repository"]["seed"] = "/etc";
  request.set_blueprint_json(seeded.dump());
  expect_refused(admit(request), Errc::invalid_argument, "blueprint_json.repository.seed");
}

TEST_F(StartRunAdmission, ExecutorsChecksPoliciesAndClocks) {
  v1::StartRunRequest request;
  request.set_blueprint("calculator");
  EXPECT_EQ(start_run_role(request), Role::executor);

  request.set_executor("command:./agent.py");
  EXPECT_EQ(start_run_role(request), Role::admin);
  auto command = admit(request);
  ASSERT_TRUE(command) << command.error().message;
  EXPECT_EQ(std::get<CommandExecutor>(command->executor).command, "./agent.py");
  request.set_executor("command:");
  expect_refused(admit(request), Errc::invalid_argument, "executor");

  request.set_executor("remote");
  expect_refused(admit(request), Errc::invalid_argument, "executor_label");
  request.set_executor_label("agents");
  auto remote = admit(request);
  ASSERT_TRUE(remote) << remote.error().message;
  EXPECT_EQ(std::get<RemoteExecutor>(remote->executor).served_by, "alice");
  request.set_executor_identity("bob");
  EXPECT_EQ(std::get<RemoteExecutor>(admit(request)->executor).served_by, "bob");
  request.set_executor("plan");
  expect_refused(admit(request), Errc::invalid_argument, "executor_label");
  request.clear_executor_label();
  request.clear_executor_identity();
  request.set_executor("shell");
  expect_refused(admit(request), Errc::invalid_argument, "executor");
  request.clear_executor();

  request.set_runner_quorum("2/3");
  expect_refused(admit(request), Errc::invalid_argument, "runner_quorum");
  request.set_checks_on("runners");
  auto quorum = admit(request);
  ASSERT_TRUE(quorum) << quorum.error().message;
  EXPECT_TRUE(quorum->checks_on_runners);
  EXPECT_EQ(quorum->runner_quorum, RunnerQuorum::make(2, 3).value());
  request.set_checks_on("somewhere");
  expect_refused(admit(request), Errc::invalid_argument, "runner_quorum");
  request.clear_runner_quorum();
  expect_refused(admit(request), Errc::invalid_argument, "checks_on");
  request.clear_checks_on();

  request.set_policy("/etc/passwd");
  expect_refused(admit(request), Errc::invalid_argument, "policy");
  request.clear_policy();
  request.set_clock("sundial");
  expect_refused(admit(request), Errc::invalid_argument, "clock");
  request.clear_clock();
  request.set_repository("../../tmp");
  expect_refused(admit(request), Errc::invalid_argument, "repository");
}

TEST_F(StartRunAdmission, ACommittedPlanIsFoundInTheLedger) {
  v1::StartRunRequest request;
  request.set_plan_sha256("sha256:00");
  expect_refused(admit(request), Errc::invalid_argument, "plan_sha256");
  request.set_plan_sha256("sha256:" + std::string(64, 'a'));
  auto missing = admit(request);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found) << missing.error().message;
  expect_refused(admit(v1::StartRunRequest()), Errc::invalid_argument, "plan");
}

}  // namespace
}  // namespace warden::service
