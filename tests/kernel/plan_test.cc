// Plan generation (deterministic, expected order and dependencies) and plan verification
// (each reason code), against the builtin python policy and the examples' blueprints.
#include <gtest/gtest.h>

#include <pthread.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "kernel/judge/plan_generate.h"
#include "kernel/record/replan.h"
#include "kernel/judge/plan_verify.h"

namespace warden::kernel {
namespace {

const Policy& python_policy() {
  static const Policy policy = [] {
    auto p = Policy::load("python");
    if (!p) throw std::runtime_error(p.error().message);
    return *p;
  }();
  return policy;
}

BlueprintSpec small_blueprint() {
  auto b = BlueprintSpec::from_json(Json::parse(R"({
    "format": "warden.blueprint/v1", "name": "calc", "language": "python",
    "intent": {"name": "pkg", "artifacts": ["module", "test_suite"]},
    "modules": [{"name": "calc", "path": "src/calc/__init__.py", "content": ""}],
    "functions": [{"names": ["add", "sub"], "module": "calc", "path": "src/calc/ops.py", "content": "ops",
                   "drafts": ["bad ops"]},
                  {"names": ["mul"], "module": "calc", "path": "src/calc/mul.py", "content": "mul"}],
    "tests": [{"name": "test_ops", "path": "tests/test_ops.py", "covers": ["add", "mul"], "content": "t"}],
    "dependencies": [{"name": "attrs", "manifest": "requirements.txt", "content": "attrs\n"},
                     {"name": "idna", "manifest": "requirements.txt", "content": "attrs\nidna\n"}],
    "changes": [{"path": "README.md", "content": "# calc\n", "produces": "document", "after": ["tests/test_ops.py"]},
                {"path": "src/calc/ops.py", "content": "ops v2"}],
    "checks": [{"name": "lint", "argv": ["true"]}],
    "constraints": {"max_retries": 2, "step_timeout_ms": 5000}
  })"));
  if (!b) throw std::runtime_error(b.error().message);
  return *b;
}

std::vector<std::string> codes(const std::vector<Reason>& reasons) {
  std::vector<std::string> out;
  for (const Reason& r : reasons) out.push_back(r.code);
  return out;
}

TEST(PlanGenerate, IsDeterministic) {
  auto a = generate_plan(small_blueprint(), python_policy());
  auto b = generate_plan(small_blueprint(), python_policy());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*canonicalize(a->to_json()), *canonicalize(b->to_json()));
  EXPECT_EQ(a->digest(), b->digest());
}

TEST(PlanGenerate, OrdersStepsAndDependencies) {
  BlueprintSpec blueprint = small_blueprint();
  auto plan = generate_plan(blueprint, python_policy());
  ASSERT_TRUE(plan) << plan.error().message;
  struct Expected {
    std::string id, action, target;
    std::vector<std::string> deps, symbols, produces;
  };
  std::vector<Expected> expected = {
      {"s1", "add_dependency", "requirements.txt", {}, {"attrs"}, {"dependency"}},
      {"s2", "add_dependency", "requirements.txt", {"s1"}, {"idna"}, {"dependency"}},
      {"s3", "create_module", "src/calc/__init__.py", {}, {}, {"module"}},
      {"s4", "create_function", "src/calc/ops.py", {"s3"}, {"add", "sub"}, {"function"}},
      {"s5", "create_function", "src/calc/mul.py", {"s3"}, {"mul"}, {"function"}},
      {"s6", "create_test", "tests/test_ops.py", {"s4", "s5"}, {}, {"test_suite"}},
      {"s7", "modify", "README.md", {"s6"}, {}, {"document"}},
      {"s8", "modify", "src/calc/ops.py", {"s4"}, {}, {}},
  };
  ASSERT_EQ(plan->steps.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const BuildStep& s = plan->steps[i];
    EXPECT_EQ(s.id, expected[i].id);
    EXPECT_EQ(step_action_name(s.action), expected[i].action) << s.id;
    EXPECT_EQ(s.targets, std::vector<std::string>{expected[i].target}) << s.id;
    EXPECT_EQ(s.dependencies, expected[i].deps) << s.id;
    EXPECT_EQ(s.symbols, expected[i].symbols) << s.id;
    EXPECT_EQ(s.produces, expected[i].produces) << s.id;
    ASSERT_TRUE(s.content);
    EXPECT_EQ(s.content->size(), 1u);
  }
  EXPECT_EQ(plan->steps[3].content->at("src/calc/ops.py"), "ops");
  ASSERT_EQ(plan->steps[3].drafts.size(), 1u);
  EXPECT_EQ(plan->steps[3].drafts[0].at("src/calc/ops.py"), "bad ops");

  EXPECT_EQ(plan->blueprint_sha256, blueprint.digest());
  EXPECT_EQ(plan->policy, "python");
  EXPECT_EQ(plan->branch, "warden/calc");
  EXPECT_EQ(plan->allowed_paths, python_policy().allow_paths);  // the blueprint names none
  EXPECT_EQ(plan->max_retries, 2);
  EXPECT_EQ(plan->step_timeout_ms, 5000);
  ASSERT_EQ(plan->checks.size(), 1u);
  EXPECT_EQ(plan->checks[0].name, "lint");
  EXPECT_EQ(plan->invariants, (std::vector<std::string>{"dependencies_satisfied", "no_dangerous_operations",
                                                        "no_import_cycles", "type_hints_required"}));
  ASSERT_EQ(plan->verification_checkpoints.size(), 1u);
  const VerificationCheckpoint& cp = plan->verification_checkpoints[0];
  EXPECT_EQ(cp.id, "final");
  EXPECT_EQ(cp.after.size(), 8u);
  EXPECT_EQ(cp.checks, (std::vector<std::string>{"lint", "tests"}));
  EXPECT_EQ(cp.invariants, std::vector<std::string>{"all_functions_have_tests"});
  EXPECT_TRUE(verify_plan(*plan, python_policy()).empty()) << codes(verify_plan(*plan, python_policy()))[0];
}

TEST(PlanGenerate, ExamplesGenerateValidPlans) {
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(WARDEN_SOURCE_DIR) + "/examples")) {
    auto path = entry.path() / "blueprint.json";
    if (!std::filesystem::exists(path)) continue;
    ++found;
    auto blueprint = BlueprintSpec::load(path.string());
    ASSERT_TRUE(blueprint) << blueprint.error().message;
    auto policy_name = blueprint_policy(*blueprint);
    ASSERT_TRUE(policy_name) << policy_name.error().message;
    auto policy = Policy::load(*policy_name);
    ASSERT_TRUE(policy) << policy.error().message;
    auto plan = generate_plan(*blueprint, *policy);
    ASSERT_TRUE(plan) << plan.error().message;
    auto reasons = verify_plan(*plan, *policy);
    EXPECT_TRUE(reasons.empty()) << path << ": " << reasons[0].code << " " << reasons[0].detail;
  }
  EXPECT_GT(found, 0);
}

// Held-out checks: the plan commits to the sealed bundle's digest (an input: its salt is
// random), judges from the first step that defines a covered function on, and reveals at the
// run's end; the blueprint records the directory's name, never its files.
TEST(PlanGenerate, HeldOutChecksJudgeFromTheFirstCoveredStepOn) {
  Json json = small_blueprint().to_json();
  json["held_out"] = Json::parse(R"({"dir": "secret", "at": "tests/held", "covers": ["mul"],
                                     "checks": [{"name": "held", "argv": ["true"]}]})");
  auto blueprint = BlueprintSpec::from_json(json);
  ASSERT_TRUE(blueprint) << blueprint.error().message;
  EXPECT_EQ(blueprint->to_json()["held_out"]["dir"], "secret");
  EXPECT_FALSE(generate_plan(*blueprint, python_policy())) << "the digest of the sealed bundle is needed";
  const Digest bundle = sha256("bundle");
  auto plan = generate_plan(*blueprint, python_policy(), bundle);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_TRUE(plan->held_out);
  EXPECT_EQ(plan->held_out->sha256, bundle);
  EXPECT_EQ(plan->held_out->reveal, HeldOutReveal::at_run_end);
  std::vector<std::string> after_mul;
  bool seen = false;
  for (const BuildStep& s : plan->steps) {
    seen = seen || s.symbols == std::vector<std::string>{"mul"};
    if (seen) after_mul.push_back(s.id);
  }
  EXPECT_EQ(plan->held_out->steps, after_mul);
  EXPECT_FALSE(plan->held_out->judges(plan->steps.front().id));
  EXPECT_TRUE(verify_plan(*plan, python_policy()).empty());
  auto again = BuildPlan::from_json(plan->to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->digest(), plan->digest());

  json["held_out"]["covers"] = Json::array({"div"});
  EXPECT_FALSE(BlueprintSpec::from_json(json)) << "covers a function the blueprint does not define";
  json["held_out"]["covers"] = Json::array();
  json["held_out"]["checks"] = Json::array();
  EXPECT_FALSE(BlueprintSpec::from_json(json)) << "held-out tests with nothing to run them";
}

TEST(PlanGenerate, RefusesMoreStepsThanAPlanMayHave) {
  BlueprintSpec blueprint = small_blueprint();  // 8 steps
  auto add_change = [&](std::string path) {
    BlueprintChange c;
    c.path = std::move(path);
    c.content = "x";
    blueprint.changes.push_back(std::move(c));
  };
  for (size_t i = 0; i + 8 < kMaxPlanSteps; ++i) add_change("docs/" + std::to_string(i) + ".md");
  ASSERT_TRUE(generate_plan(blueprint, python_policy()));
  add_change("docs/last.md");
  auto refused = generate_plan(blueprint, python_policy());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::limit_exceeded);
  EXPECT_EQ(refused.error().message, "blueprint calc gives 10001 steps; a plan may have at most 10000");
}

// A valid two-step plan the verification tests break one way at a time.
BuildPlan valid_plan() {
  BuildPlan p;
  p.name = "t";
  p.policy = "python";
  p.branch = "warden/t";
  p.allowed_paths = {"src/**"};
  BuildStep a;
  a.id = "s1";
  a.action = StepAction::create_module;
  a.targets = {"src/a.py"};
  a.content = FileContents{{"src/a.py", ""}};
  a.produces = {"module"};
  BuildStep b;
  b.id = "s2";
  b.action = StepAction::create_function;
  b.targets = {"src/b.py"};
  b.symbols = {"f"};
  b.dependencies = {"s1"};
  p.steps = {a, b};
  p.invariants = {"no_import_cycles"};
  p.verification_checkpoints = {{"final", {"s1", "s2"}, {"tests"}, {"all_functions_have_tests"}}};
  return p;
}

// An executor's replacement plan keeps the held-out checks, and they judge every step of it:
// renaming the judged steps would otherwise leave them judging nothing.
TEST(PlanReplace, KeepsTheHeldOutChecksJudgingEveryStep) {
  BuildPlan current = valid_plan();
  current.held_out = HeldOutSpec{sha256("bundle"), "held_out", {CheckSpec::shell("held", "true")}, HeldOutReveal::at_run_end,
                                 {current.steps.back().id}};
  BuildPlan replacement = valid_plan();
  replacement.held_out.reset();
  for (BuildStep& s : replacement.steps) s.id += "-renamed";
  keep_kernel_fields(current, replacement);
  ASSERT_TRUE(replacement.held_out);
  EXPECT_EQ(replacement.held_out->sha256, current.held_out->sha256);
  EXPECT_TRUE(replacement.held_out->steps.empty());
  for (const BuildStep& s : replacement.steps) EXPECT_TRUE(replacement.held_out->judges(s.id)) << s.id;
}

TEST(PlanVerify, ValidPlanHasNoReasons) { EXPECT_TRUE(verify_plan(valid_plan(), python_policy()).empty()); }

TEST(PlanVerify, EachReasonCode) {
  const Policy& policy = python_policy();
  auto reasons_of = [&](auto&& mutate) {
    BuildPlan p = valid_plan();
    mutate(p);
    return codes(verify_plan(p, policy));
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(reasons_of([](BuildPlan& p) {
              p.steps.clear();
              p.verification_checkpoints.clear();
            }),
            V{"plan_empty"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].id = "s1"; p.steps[1].dependencies.clear(); p.verification_checkpoints.clear(); }),
            V{"plan_duplicate_step:s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].dependencies = {"s9"}; }), V{"plan_dependency_missing:s2->s9"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) {
              p.held_out = HeldOutSpec{sha256("bundle"), "held_out", {}, HeldOutReveal::at_run_end, {"s9"}};
            }),
            V{"plan_held_out_step_missing:s9"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[0].dependencies = {"s2"}; }), V{"plan_dependency_cycle:s1->s2->s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].dependencies = {"s2"}; }), V{"plan_dependency_cycle:s2->s2"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].targets = {"src/../etc/passwd"}; }),
            V{"plan_invalid_target:src/../etc/passwd"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].targets = {".git/config"}; }),
            V{"plan_invalid_target:.git/config"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].targets = {"docs/b.py"}; }),
            V{"plan_target_not_allowed:docs/b.py"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].targets = {"src/server.pem"}; }),
            V{"plan_target_not_allowed:src/server.pem"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.invariants.push_back("is_fast"); }), V{"plan_unknown_invariant:is_fast"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[0].invariants = {"is_pretty"}; }),
            V{"plan_unknown_invariant:is_pretty"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.verification_checkpoints[0].invariants = {"is_done"}; }),
            V{"plan_unknown_invariant:is_done"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[1].symbols.clear(); }), V{"plan_invalid_step:s2"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[0].content = FileContents{{"src/other.py", ""}}; }),
            V{"plan_invalid_step:s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[0].drafts = {FileContents{}}; }), V{"plan_invalid_step:s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) {
              p.steps[0].action = StepAction::add_dependency;
              p.steps[0].targets = {"src/a.py", "src/req.txt"};
              p.steps[0].content.reset();
            }),
            V{"plan_invalid_step:s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.steps[0].targets.clear(); p.steps[0].content.reset(); }),
            V{"plan_invalid_step:s1"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.intent = Intent{"pkg", {"module", "test_suite"}}; }),
            V{"plan_missing_artifact:test_suite"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.verification_checkpoints[0].checks = {"tests", "benchmarks"}; }),
            V{"plan_unknown_check:benchmarks"});
  EXPECT_EQ(reasons_of([](BuildPlan& p) { p.verification_checkpoints[0].after = {"s1", "s7"}; }),
            V{"plan_dependency_missing:final->s7"});
}

TEST(PlanVerify, ReportsEveryProblemSortedOnce) {
  BuildPlan p = valid_plan();
  p.steps[0].dependencies = {"s2"};
  p.steps[1].targets = {"/etc/passwd"};
  p.invariants.push_back("zzz");
  p.invariants.push_back("zzz");
  p.intent = Intent{"pkg", {"binary"}};
  auto reasons = verify_plan(p, python_policy());
  EXPECT_EQ(codes(reasons), (std::vector<std::string>{"plan_dependency_cycle:s1->s2->s1",
                                                      "plan_invalid_target:/etc/passwd",
                                                      "plan_missing_artifact:binary", "plan_unknown_invariant:zzz"}));
  for (const Reason& r : reasons) EXPECT_FALSE(r.detail.empty()) << r.code;
  EXPECT_EQ(verify_plan(p, python_policy()), reasons);
  // The plan's own checks count as known to its checkpoints.
  BuildPlan with_check = valid_plan();
  with_check.verification_checkpoints[0].checks = {"lint"};
  EXPECT_EQ(codes(verify_plan(with_check, python_policy())), std::vector<std::string>{"plan_unknown_check:lint"});
  with_check.checks = {CheckSpec::shell("lint", "true")};
  EXPECT_TRUE(verify_plan(with_check, python_policy()).empty());
}

// `steps` steps, each depending on the one before; with `closed`, the first depends on the
// last, making one cycle through all of them.
BuildPlan chain_plan(int steps, bool closed) {
  BuildPlan p;
  p.name = "chain";
  p.policy = "python";
  p.branch = "warden/chain";
  auto id = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "s%05d", i);
    return std::string(buf);
  };
  for (int i = 0; i < steps; ++i) {
    BuildStep s;
    s.id = id(i);
    s.action = StepAction::create_module;
    s.targets = {"src/m" + std::to_string(i) + ".py"};
    if (i > 0) s.dependencies = {id(i - 1)};
    p.steps.push_back(std::move(s));
  }
  if (closed) p.steps[0].dependencies = {id(steps - 1)};
  return p;
}

// Runs `fn` on a thread with a 1 MiB stack: a search that recursed once per step would
// overflow it long before 20,000 steps, whatever the process's stack limit.
void on_small_stack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, size_t{1} << 20), 0);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&fn)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(PlanVerify, LongDependencyChainsNeedNoDeepStack) {
  std::vector<std::string> open_codes, closed_codes;
  on_small_stack([&] {
    open_codes = codes(verify_plan(chain_plan(20'000, false), python_policy()));
    closed_codes = codes(verify_plan(chain_plan(20'000, true), python_policy()));
  });
  EXPECT_TRUE(open_codes.empty()) << open_codes[0];
  ASSERT_EQ(closed_codes.size(), 1u);
  const std::string& cycle = closed_codes[0];
  EXPECT_TRUE(cycle.starts_with("plan_dependency_cycle:s00000->s19999->s19998->")) << cycle.substr(0, 80);
  EXPECT_TRUE(cycle.ends_with("->s00002->s00001->s00000")) << cycle.substr(cycle.size() > 80 ? cycle.size() - 80 : 0);
  EXPECT_EQ(cycle.size(), std::string("plan_dependency_cycle:").size() + 20'001 * 6 + 20'000 * 2);
}

TEST(PlanJson, RefusesMoreStepsThanTheCap) {
  BuildPlan p = chain_plan(static_cast<int>(kMaxPlanSteps), false);
  Json at_cap = p.to_json();
  ASSERT_TRUE(BuildPlan::from_json(at_cap)) << BuildPlan::from_json(at_cap).error().message;
  Json over = at_cap;
  over["steps"].push_back(over["steps"][0]);
  auto refused = BuildPlan::from_json(over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "plan.steps: has 10001 steps; a plan may have at most 10000");
}

}  // namespace
}  // namespace warden::kernel
