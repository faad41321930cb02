#include "kernel/plan/build_plan.h"

#include <array>
#include <utility>

#include "common/json_reader.h"

namespace warden::kernel {
namespace {

constexpr std::array<std::pair<StepAction, std::string_view>, 5> kActions = {{
    {StepAction::create_module, "create_module"},
    {StepAction::create_function, "create_function"},
    {StepAction::create_test, "create_test"},
    {StepAction::add_dependency, "add_dependency"},
    {StepAction::modify, "modify"},
}};

}  // namespace

std::string_view step_action_name(StepAction action) {
  for (const auto& [a, name] : kActions) {
    if (a == action) return name;
  }
  return "modify";
}

std::optional<StepAction> parse_step_action(std::string_view name) {
  for (const auto& [a, n] : kActions) {
    if (n == name) return a;
  }
  return std::nullopt;
}

const BuildStep* BuildPlan::find(std::string_view id) const {
  for (const BuildStep& s : steps) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

// Only the shape is checked here: what a plan means (unique ids, dependencies that exist and
// are acyclic, safe and allowed targets, known invariants) is plan_verify.h's job, so an
// executor's bad plan is refused with reason codes and recorded rather than rejected as
// malformed input.
Result<BuildPlan> BuildPlan::from_json(const Json& json) {
  BuildPlan p;
  JsonReader r(json, "plan");
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kPlanFormat) r.fail("format", "must be \"" + std::string(kPlanFormat) + "\"");
  r.string("name", p.name);
  if (r.ok() && !valid_identifier(p.name)) r.fail("name", "\"" + p.name + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
  r.nullable_digest("blueprint_sha256", p.blueprint_sha256);
  r.string("language", p.language, false);
  r.string("policy", p.policy);
  if (r.ok() && p.policy.empty()) r.fail("policy", "must name a policy");
  p.branch = "warden/" + p.name;
  r.string("branch", p.branch, false);
  if (r.ok() && p.branch.empty()) r.fail("branch", "must not be empty");
  read_intent(r, p.intent);
  r.strings("allowed_paths", p.allowed_paths, false);
  if (const Json* steps = r.value("steps", Json::value_t::array); steps && steps->size() > kMaxPlanSteps) {
    r.fail("steps", "has " + std::to_string(steps->size()) + " steps; a plan may have at most " +
                        std::to_string(kMaxPlanSteps));
  }
  for_each_object(r, "steps", true, [&](JsonReader& s, size_t) {
    BuildStep step;
    s.string("id", step.id);
    if (s.ok() && !valid_identifier(step.id)) s.fail("id", "\"" + step.id + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
    std::string action;
    s.string("action", action);
    if (s.ok()) {
      auto parsed = parse_step_action(action);
      if (!parsed) s.fail("action", "\"" + action + "\" must be create_module, create_function, create_test, add_dependency or modify");
      else step.action = *parsed;
    }
    s.string("description", step.description, false);
    s.strings("targets", step.targets);
    if (s.has("content")) {
      FileContents content;
      s.string_map("content", content);
      step.content = std::move(content);
    }
    if (const Json* drafts = s.value("drafts", Json::value_t::array, false)) {
      for (size_t i = 0; i < drafts->size() && s.ok(); ++i) {
        const Json& d = (*drafts)[i];
        std::string key = "drafts[" + std::to_string(i) + "]";
        if (!d.is_object()) {
          s.fail(key, "must be an object of path -> content");
          break;
        }
        FileContents draft;
        for (const auto& [path, text] : d.items()) {
          if (!text.is_string()) {
            s.fail(key, "\"" + path + "\" must be a string");
            break;
          }
          draft[path] = text.get<std::string>();
        }
        step.drafts.push_back(std::move(draft));
      }
    }
    s.strings("symbols", step.symbols, false);
    s.strings("dependencies", step.dependencies, false);
    s.strings("invariants", step.invariants, false);
    s.strings("produces", step.produces, false);
    s.strings("removes_tests", step.removes_tests, false);
    if (const Json* approvals = s.value("approvals", Json::value_t::array, false)) {
      for (const Json& a : *approvals) step.approvals.push_back(a);
    }
    p.steps.push_back(std::move(step));
  });
  r.strings("invariants", p.invariants, false);
  read_checks(r, "checks", p.checks);
  for_each_object(r, "verification_checkpoints", false, [&](JsonReader& c, size_t) {
    VerificationCheckpoint cp;
    c.string("id", cp.id);
    if (c.ok() && !valid_identifier(cp.id)) c.fail("id", "\"" + cp.id + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
    c.strings("after", cp.after);
    c.strings("checks", cp.checks, false);
    c.strings("invariants", cp.invariants, false);
    p.verification_checkpoints.push_back(std::move(cp));
  });
  r.integer("max_retries", p.max_retries, 1, 100, false);
  r.integer("max_replans", p.max_replans, 0, 100, false);
  r.integer("step_timeout_ms", p.step_timeout_ms, 1, 86'400'000, false);
  p.merge_queue_depth = r.optional_integer("merge_queue_depth", 1, kMaxMergeQueueDepth);
  if (const Json* held_out = r.value("held_out", Json::value_t::object, false)) {
    auto spec = HeldOutSpec::from_json(*held_out, "plan.held_out");
    if (!spec) r.adopt(std::unexpected(spec.error()));
    else p.held_out = std::move(*spec);
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return p;
}

Json BuildStep::to_json() const {
  Json step = {{"id", id},
               {"action", step_action_name(action)},
               {"description", description},
               {"targets", targets},
               {"drafts", drafts},
               {"symbols", symbols},
               {"dependencies", dependencies},
               {"invariants", invariants},
               {"produces", produces}};
  if (content) step["content"] = *content;
  if (!removes_tests.empty()) step["removes_tests"] = removes_tests;  // absent otherwise: older plans keep their digest
  if (!approvals.empty()) step["approvals"] = approvals;              // likewise
  return step;
}

Json BuildPlan::to_json() const {
  Json steps_j = Json::array(), checks_j = Json::array(), checkpoints_j = Json::array();
  for (const BuildStep& s : steps) steps_j.push_back(s.to_json());
  for (const CheckSpec& c : checks) checks_j.push_back(c.to_json());
  for (const VerificationCheckpoint& c : verification_checkpoints) {
    checkpoints_j.push_back({{"id", c.id}, {"after", c.after}, {"checks", c.checks}, {"invariants", c.invariants}});
  }
  Json plan = {{"format", kPlanFormat},
          {"name", name},
          {"blueprint_sha256", blueprint_sha256 ? Json(blueprint_sha256->str()) : Json(nullptr)},
          {"language", language},
          {"policy", policy},
          {"branch", branch},
          {"intent", intent_json(intent)},
          {"allowed_paths", allowed_paths},
          {"steps", steps_j},
          {"invariants", invariants},
          {"checks", checks_j},
          {"verification_checkpoints", checkpoints_j},
          {"max_retries", max_retries},
          {"max_replans", max_replans},
          {"step_timeout_ms", step_timeout_ms}};
  if (merge_queue_depth) plan["merge_queue_depth"] = *merge_queue_depth;
  if (held_out) plan["held_out"] = held_out->to_json();  // absent otherwise: older plans keep their digest
  return plan;
}

Digest BuildPlan::digest() const { return sha256(canonicalize(to_json()).value()); }

}  // namespace warden::kernel
