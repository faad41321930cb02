#include "kernel/judge/plan_generate.h"

#include <algorithm>
#include <map>
#include <set>

namespace warden::kernel {
namespace {

// Appends steps in order, numbering them and keeping the per-path bookkeeping that later
// steps depend on.
class StepList {
 public:
  explicit StepList(std::vector<BuildStep>& steps) : steps_(steps) {}

  BuildStep& add(StepAction action, std::string description, const std::string& target, const std::string& content,
                 const std::vector<std::string>& drafts, std::vector<std::string> produces) {
    BuildStep s;
    s.id = "s" + std::to_string(steps_.size() + 1);
    s.action = action;
    s.description = std::move(description);
    s.targets = {target};
    s.content = FileContents{{target, content}};
    for (const std::string& d : drafts) s.drafts.push_back(FileContents{{target, d}});
    s.produces = std::move(produces);
    if (auto it = writer_.find(target); it != writer_.end()) s.dependencies.push_back(it->second);
    writer_[target] = s.id;
    steps_.push_back(std::move(s));
    return steps_.back();
  }

  // The step that last wrote `path`, if any.
  const std::string* writer_of(const std::string& path) const {
    auto it = writer_.find(path);
    return it == writer_.end() ? nullptr : &it->second;
  }

 private:
  std::vector<BuildStep>& steps_;
  std::map<std::string, std::string> writer_;
};

void depend_on(BuildStep& step, const std::string& id) {
  if (id != step.id && std::find(step.dependencies.begin(), step.dependencies.end(), id) == step.dependencies.end()) {
    step.dependencies.push_back(id);
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Result<std::string> blueprint_policy(const BlueprintSpec& blueprint) {
  if (!blueprint.policy.empty()) return blueprint.policy;
  std::string_view name = default_policy_for(blueprint.language);
  if (name.empty()) {
    return fail(Errc::invalid_argument, "blueprint.policy: language \"" + blueprint.language + "\" has no default policy; name one");
  }
  return std::string(name);
}

Result<BuildPlan> generate_plan(const BlueprintSpec& b, const Policy& policy, const std::optional<Digest>& held_out) {
  if (b.held_out.has_value() != held_out.has_value()) {
    return fail(Errc::invalid_argument, b.held_out ? "the blueprint's held-out checks need their sealed bundle's digest"
                                                   : "a held-out digest for a blueprint without held-out checks");
  }
  BuildPlan plan;
  plan.name = b.name;
  plan.blueprint_sha256 = b.digest();
  plan.language = b.language;
  plan.policy = policy.name;
  plan.branch = b.branch.value_or("warden/" + b.name);
  plan.intent = b.intent;
  plan.allowed_paths = b.constraints.allowed_paths.empty() ? policy.allow_paths : b.constraints.allowed_paths;
  plan.max_retries = b.constraints.max_retries;
  plan.max_replans = b.constraints.max_replans;
  plan.step_timeout_ms = b.constraints.step_timeout_ms;
  plan.merge_queue_depth = b.constraints.merge_queue_depth;
  plan.checks = b.checks;
  if (b.held_out) plan.held_out = HeldOutSpec{*held_out, b.held_out->at, b.held_out->checks, HeldOutReveal::at_run_end, {}};

  StepList steps(plan.steps);
  for (const auto& d : b.dependencies) {
    steps.add(StepAction::add_dependency, "add dependency " + d.name + " to " + d.manifest, d.manifest, d.content,
              d.drafts, {"dependency"})
        .symbols = {d.name};
  }
  std::map<std::string, std::string> module_step;  // module name -> step id
  for (const auto& m : b.modules) {
    module_step[m.name] =
        steps.add(StepAction::create_module, "create module " + m.name + " (" + m.path + ")", m.path, m.content,
                  m.drafts, {"module"})
            .id;
  }
  std::map<std::string, std::string> function_step;  // function name -> step id
  for (const auto& f : b.functions) {
    BuildStep& s = steps.add(StepAction::create_function, "define " + join(f.names) + " in " + f.path, f.path,
                             f.content, f.drafts, {"function"});
    s.symbols = f.names;
    if (auto it = module_step.find(f.module); it != module_step.end()) depend_on(s, it->second);
    for (const auto& name : f.names) function_step[name] = s.id;
  }
  for (const auto& t : b.tests) {
    std::string what = t.covers.empty() ? "" : " covering " + join(t.covers);
    BuildStep& s = steps.add(StepAction::create_test, "add test " + t.name + what + " (" + t.path + ")", t.path,
                             t.content, t.drafts, {"test_suite"});
    // The blueprint's test name names the suite, not a function the file must define; that
    // the suite really tests what it covers is all_functions_have_tests' job at the end.
    for (const auto& name : t.covers) {
      if (auto it = function_step.find(name); it != function_step.end()) depend_on(s, it->second);
    }
  }
  // `after` may name a change further down; those ids are only known once every change has one.
  for (const auto& c : b.changes) {
    std::string description = c.description.empty() ? "modify " + c.path : c.description;
    std::vector<std::string> produces;
    if (c.produces) produces.push_back(*c.produces);
    steps.add(StepAction::modify, description, c.path, c.content, c.drafts, produces);
  }
  size_t first_change = plan.steps.size() - b.changes.size();
  for (size_t i = 0; i < b.changes.size(); ++i) {
    BuildStep& s = plan.steps[first_change + i];
    for (const auto& path : b.changes[i].after) {
      if (const std::string* writer = steps.writer_of(path)) depend_on(s, *writer);
    }
  }

  if (plan.held_out && !b.held_out->covers.empty()) {
    // From the first step that defines a covered function on, in the order the steps run.
    bool judged = false;
    for (const BuildStep& s : plan.steps) {
      for (const auto& name : b.held_out->covers) {
        judged = judged || std::find(s.symbols.begin(), s.symbols.end(), name) != s.symbols.end();
      }
      if (judged) plan.held_out->steps.push_back(s.id);
    }
  }
  // A plan the kernel could not read back from its own ledger is no plan.
  if (plan.steps.size() > kMaxPlanSteps) {
    return fail(Errc::limit_exceeded, "blueprint " + b.name + " gives " + std::to_string(plan.steps.size()) +
                                          " steps; a plan may have at most " + std::to_string(kMaxPlanSteps));
  }
  std::set<std::string> checkpoint_only(policy.checkpoint_invariants.begin(), policy.checkpoint_invariants.end());
  for (const auto& [name, program] : policy.invariants) {
    if (!checkpoint_only.contains(name)) plan.invariants.push_back(name);
  }
  if (!plan.steps.empty()) {
    VerificationCheckpoint final_cp;
    final_cp.id = "final";
    for (const auto& s : plan.steps) final_cp.after.push_back(s.id);
    std::set<std::string> checks(policy.required_checks.begin(), policy.required_checks.end());
    for (const auto& c : plan.checks) checks.insert(c.name);
    final_cp.checks.assign(checks.begin(), checks.end());
    final_cp.invariants.assign(checkpoint_only.begin(), checkpoint_only.end());
    plan.verification_checkpoints.push_back(std::move(final_cp));
  }
  return plan;
}

}  // namespace warden::kernel
