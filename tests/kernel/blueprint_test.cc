// BlueprintSpec and BuildPlan schemas: round trips, content_file resolution, and every kind
// of bad field refused with its JSON path.
#include <gtest/gtest.h>

#include <filesystem>

#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace warden::kernel {
namespace {

Json small_blueprint() {
  return Json::parse(R"({
    "format": "warden.blueprint/v1", "name": "calc", "language": "python",
    "repository": {"seed": "seed", "base": "HEAD"},
    "goals": ["add numbers"], "policy": "python",
    "intent": {"name": "pkg", "artifacts": ["module", "test_suite"]},
    "modules": [{"name": "calc", "path": "src/calc/__init__.py", "content": ""}],
    "functions": [{"names": ["add"], "module": "calc", "path": "src/calc/ops.py", "content": "def add(a, b): return a + b\n",
                   "drafts": ["def add(a, b): return eval('a+b')\n"]}],
    "tests": [{"name": "test_ops", "path": "tests/test_ops.py", "covers": ["add"], "content": "x"}],
    "dependencies": [{"name": "attrs", "manifest": "requirements.txt", "content": "attrs\n"}],
    "changes": [{"path": "README.md", "description": "document", "content": "# calc\n", "produces": "document",
                 "after": ["src/calc/ops.py"]}],
    "checks": [{"name": "lint", "argv": ["true"]}],
    "constraints": {"allowed_paths": ["src/**", "tests/**", "README.md", "requirements.txt"], "max_retries": 2}
  })");
}

std::string error_of(const Json& json, const std::string& base_dir = {}) {
  auto b = BlueprintSpec::from_json(json, base_dir);
  return b ? std::string("(accepted)") : b.error().message;
}

TEST(Blueprint, RoundTripsThroughCanonicalJson) {
  auto b = BlueprintSpec::from_json(small_blueprint());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->functions[0].drafts.size(), 1u);
  EXPECT_EQ(b->constraints.max_retries, 2);
  EXPECT_EQ(b->constraints.max_replans, 1);
  auto again = BlueprintSpec::from_json(b->to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*canonicalize(again->to_json()), *canonicalize(b->to_json()));
  EXPECT_EQ(again->digest(), b->digest());
  Json changed = small_blueprint();
  changed["goals"][0] = "subtract numbers";
  EXPECT_NE(BlueprintSpec::from_json(changed)->digest(), b->digest());
}

TEST(Blueprint, BadFieldsNameTheirPath) {
  struct Case {
    std::string pointer;
    Json value;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"/format", "warden.blueprint/v0", "blueprint.format: must be \"warden.blueprint/v1\""},
      {"/name", "has space", "blueprint.name:"},
      {"/language", "cobol", "blueprint.language: must be"},
      {"/functions/0/path", "../escape.py", "blueprint.functions[0].path: \"../escape.py\" must be a relative"},
      {"/functions/0/path", "/abs.py", "blueprint.functions[0].path:"},
      {"/functions/0/path", "a//b.py", "blueprint.functions[0].path:"},
      {"/functions/0/path", ".git/hooks/x", "blueprint.functions[0].path:"},
      {"/functions/0/names", Json::array(), "blueprint.functions[0].names: must name at least one"},
      {"/functions/0/module", "nope", "blueprint.functions[0].module: no module named \"nope\""},
      {"/functions/0/unknown", 1, "blueprint.functions[0].unknown: unknown field"},
      {"/tests/0/covers/0", "sub", "blueprint.tests[0].covers: no function named \"sub\""},
      {"/tests/0/path", "src/calc/ops.py", "blueprint.tests[0].path: \"src/calc/ops.py\" is already created by functions[0]"},
      {"/modules/0/content_file", "x.py", "blueprint.modules[0].content_file: give content or content_file, not both"},
      {"/changes/0/after/0", "nowhere.py", "blueprint.changes[0].after: \"nowhere.py\" is not the path"},
      {"/changes/0/produces", "poem", "blueprint.changes[0].produces: \"poem\" is not an artifact type"},
      {"/intent/artifacts/0", "poem", "blueprint.intent.artifacts:"},
      {"/checks/0/argv", Json::array(), "blueprint.checks[0].argv: must name a command"},
      {"/constraints/max_retries", 0, "blueprint.constraints.max_retries: must be between 1 and 100"},
      {"/constraints/step_timeout_ms", "fast", "blueprint.constraints.step_timeout_ms: must be an integer"},
      {"/repository/base", "", "blueprint.repository.base: must not be empty"},
      {"/surprise", true, "blueprint.surprise: unknown field"},
  };
  for (const Case& c : cases) {
    Json j = small_blueprint();
    j[Json::json_pointer(c.pointer)] = c.value;
    EXPECT_NE(error_of(j).find(c.expected), std::string::npos) << c.pointer << " gave: " << error_of(j);
  }
  Json no_content = small_blueprint();
  no_content["tests"][0].erase("content");
  EXPECT_NE(error_of(no_content).find("blueprint.tests[0].content: missing"), std::string::npos) << error_of(no_content);
  Json no_format = small_blueprint();
  no_format.erase("format");
  EXPECT_NE(error_of(no_format).find("blueprint.format: missing"), std::string::npos);
  Json duplicate_check = small_blueprint();
  duplicate_check["checks"].push_back(duplicate_check["checks"][0]);
  EXPECT_NE(error_of(duplicate_check).find("blueprint.checks[1].name: \"lint\" is given twice"), std::string::npos);
}

TEST(Blueprint, LoadResolvesContentFilesIntoBytes) {
  test::TempDir dir;
  std::filesystem::create_directory(dir / "files");
  test::write_file(dir / "files/ops.py", "def add(a, b):\n    return a + b\n");
  test::write_file(dir / "files/draft.py", "def add(a, b): return eval('a + b')\n");
  Json j = small_blueprint();
  j["functions"][0].erase("content");
  j["functions"][0].erase("drafts");
  j["functions"][0]["content_file"] = "files/ops.py";
  j["functions"][0]["draft_files"] = {"files/draft.py"};
  test::write_file(dir / "blueprint.json", j.dump());
  auto b = BlueprintSpec::load((dir / "blueprint.json").string());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->functions[0].content, "def add(a, b):\n    return a + b\n");
  ASSERT_EQ(b->functions[0].drafts.size(), 1u);
  EXPECT_EQ(b->functions[0].drafts[0], "def add(a, b): return eval('a + b')\n");
  Json emitted = b->to_json();
  EXPECT_FALSE(emitted["functions"][0].contains("content_file"));
  EXPECT_EQ(emitted["functions"][0]["content"], b->functions[0].content);

  // Without a base directory, and with files that are missing, outside or not text.
  EXPECT_NE(error_of(j).find("blueprint.functions[0].content_file: needs the blueprint's own file"), std::string::npos);
  j["functions"][0]["content_file"] = "files/missing.py";
  EXPECT_NE(error_of(j, dir.path().string()).find("blueprint.functions[0].content_file:"), std::string::npos);
  j["functions"][0]["content_file"] = "../outside.py";
  EXPECT_NE(error_of(j, dir.path().string()).find("must be a relative"), std::string::npos);
  test::write_file(dir / "files/binary.bin", std::string("\xff\xfe", 2));
  j["functions"][0]["content_file"] = "files/binary.bin";
  EXPECT_NE(error_of(j, dir.path().string()).find("is not UTF-8 text"), std::string::npos);
}

Json small_plan() {
  return Json::parse(R"({
    "format": "warden.plan/v1", "name": "calc", "policy": "python",
    "steps": [{"id": "s1", "action": "create_module", "targets": ["a.py"], "content": {"a.py": "x"},
               "drafts": [{"a.py": "y"}], "produces": ["module"]},
              {"id": "s2", "action": "create_function", "targets": ["b.py"], "symbols": ["f"], "dependencies": ["s1"]}],
    "invariants": ["no_import_cycles"],
    "verification_checkpoints": [{"id": "final", "after": ["s1", "s2"], "checks": ["tests"]}]
  })");
}

TEST(BuildPlanSchema, RoundTripsAndFillsDefaults) {
  auto p = BuildPlan::from_json(small_plan());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->branch, "warden/calc");
  EXPECT_EQ(p->max_retries, 3);
  EXPECT_FALSE(p->blueprint_sha256);
  ASSERT_NE(p->find("s2"), nullptr);
  EXPECT_EQ(p->find("s2")->action, StepAction::create_function);
  EXPECT_EQ(p->find("s3"), nullptr);
  EXPECT_FALSE(p->steps[1].content);
  auto again = BuildPlan::from_json(p->to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*canonicalize(again->to_json()), *canonicalize(p->to_json()));
  EXPECT_EQ(again->digest(), p->digest());
  EXPECT_EQ(again->steps[0].drafts, p->steps[0].drafts);
  EXPECT_EQ(again->steps[0].content, p->steps[0].content);
}

TEST(BuildPlanSchema, BadFieldsNameTheirPath) {
  std::vector<std::pair<std::string, Json>> cases = {
      {"/format", "warden.plan/v2"},
      {"/steps/1/action", "create_everything"},
      {"/steps/1/id", "s 2"},
      {"/steps/0/content/a.py", 7},
      {"/steps/0/drafts/0", "y"},
      {"/steps/1/targets", "b.py"},
      {"/steps/1/extra", 1},
      {"/max_retries", 0},
      {"/blueprint_sha256", "sha256:xyz"},
      {"/verification_checkpoints/0/after", nullptr},
  };
  std::vector<std::string> expected = {
      "plan.format: must be \"warden.plan/v1\"",
      "plan.steps[1].action: \"create_everything\" must be",
      "plan.steps[1].id:",
      "plan.steps[0].content: \"a.py\" must be a string",
      "plan.steps[0].drafts[0]: must be an object",
      "plan.steps[1].targets: must be an array",
      "plan.steps[1].extra: unknown field",
      "plan.max_retries: must be between 1 and 100",
      "plan.blueprint_sha256: must be sha256:",
      "plan.verification_checkpoints[0].after: must be an array",
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Json j = small_plan();
    j[Json::json_pointer(cases[i].first)] = cases[i].second;
    auto p = BuildPlan::from_json(j);
    ASSERT_FALSE(p) << cases[i].first;
    EXPECT_NE(p.error().message.find(expected[i]), std::string::npos) << p.error().message;
  }
  Json no_steps = small_plan();
  no_steps.erase("steps");
  EXPECT_EQ(BuildPlan::from_json(no_steps).error().message, "plan.steps: missing");
}

TEST(BuildPlanSchema, StepActionsHaveStableNames) {
  for (auto a : {StepAction::create_module, StepAction::create_function, StepAction::create_test,
                 StepAction::add_dependency, StepAction::modify}) {
    EXPECT_EQ(parse_step_action(step_action_name(a)), a);
  }
  EXPECT_FALSE(parse_step_action("delete"));
}

}  // namespace
}  // namespace warden::kernel

namespace warden::kernel {
namespace {

// A parallel plan's depth: absent for a sequential plan (whose digest it leaves alone), 1-64
// when set, kept through JSON; a blueprint's constraint reaches the generated plan.
TEST(BuildPlanSchema, MergeQueueDepthIsOptionalBoundedAndKept) {
  auto sequential = BuildPlan::from_json(small_plan());
  ASSERT_TRUE(sequential);
  EXPECT_FALSE(sequential->merge_queue_depth);
  EXPECT_FALSE(sequential->to_json().contains("merge_queue_depth"));
  Json queued = small_plan();
  queued["merge_queue_depth"] = 8;
  auto p = BuildPlan::from_json(queued);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->merge_queue_depth, 8);
  EXPECT_EQ(p->to_json()["merge_queue_depth"], 8);
  EXPECT_NE(p->digest(), sequential->digest());
  for (Json bad : {Json(0), Json(65), Json("8")}) {
    queued["merge_queue_depth"] = bad;
    auto refused = BuildPlan::from_json(queued);
    ASSERT_FALSE(refused) << bad.dump();
    EXPECT_NE(refused.error().message.find("plan.merge_queue_depth"), std::string::npos) << refused.error().message;
  }
}

}  // namespace
}  // namespace warden::kernel
