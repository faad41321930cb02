#include "kernel/judge/plan_verify.h"

#include <algorithm>
#include <map>
#include <set>

#include "kernel/judge/glob.h"

namespace warden::kernel {
namespace {

class Reasons {
 public:
  void add(std::string code, std::string detail) { reasons_.emplace(std::move(code), std::move(detail)); }
  std::vector<Reason> sorted() const {
    std::vector<Reason> out;
    for (const auto& [code, detail] : reasons_) out.push_back(Reason{code, detail});
    return out;
  }

 private:
  std::map<std::string, std::string> reasons_;  // the first detail per code
};

std::string step_problem(const BuildStep& s) {
  if (!valid_identifier(s.id)) return "its id must be 1-128 of A-Z a-z 0-9 _ . -";
  if (s.targets.empty()) return "it has no targets";
  std::set<std::string> targets(s.targets.begin(), s.targets.end());
  if (targets.size() != s.targets.size()) return "it names a target twice";
  if (s.action == StepAction::create_function && s.symbols.empty()) return "create_function names no function (symbols)";
  if (s.action == StepAction::add_dependency && s.targets.size() != 1) return "add_dependency touches exactly one manifest";
  auto keys_are_targets = [&](const FileContents& files) {
    return files.size() == targets.size() &&
           std::all_of(files.begin(), files.end(), [&](const auto& f) { return targets.contains(f.first); });
  };
  if (s.content && !keys_are_targets(*s.content)) return "its content must give exactly its targets";
  for (const FileContents& d : s.drafts) {
    if (!keys_are_targets(d)) return "each draft must give exactly its targets";
  }
  return {};
}

// `cycle`: the steps in dependency order, each depending on the next and the last on the first.
void report_cycle(std::vector<std::string> cycle, Reasons& out) {
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string code = "plan_dependency_cycle:";
  for (const auto& id : cycle) code += id + "->";
  code += cycle.front();
  out.add(code, "steps depend on each other in a circle, so none of them can go first");
}

// Depth-first search in step order; each back edge closes one cycle, reported rotated to
// start at its smallest id so the code does not depend on where the search entered it.
// Iterative, with the path on the heap: a plan's dependency chain may be as long as the
// plan, far deeper than the call stack allows.
void find_cycles(const BuildPlan& plan, const std::map<std::string, const BuildStep*>& by_id, Reasons& out) {
  enum class Mark { none, active, done };
  std::map<std::string, Mark> mark;
  struct Frame {
    const BuildStep* step;
    size_t next_dep = 0;
  };
  std::vector<Frame> path;       // the active steps, the search's entry point first
  std::vector<std::string> ids;  // their ids, in the same order
  auto enter = [&](const BuildStep& s) {
    mark[s.id] = Mark::active;
    path.push_back(Frame{&s, 0});
    ids.push_back(s.id);
  };
  for (const BuildStep& root : plan.steps) {
    if (mark[root.id] != Mark::none) continue;
    enter(root);
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next_dep == top.step->dependencies.size()) {
        mark[top.step->id] = Mark::done;
        path.pop_back();
        ids.pop_back();
        continue;
      }
      const std::string& dep = top.step->dependencies[top.next_dep++];
      auto it = by_id.find(dep);
      if (it == by_id.end()) continue;
      Mark m = mark[dep];
      if (m == Mark::none) {
        enter(*it->second);
      } else if (m == Mark::active) {
        report_cycle({std::find(ids.begin(), ids.end(), dep), ids.end()}, out);
      }
    }
  }
}

void check_target(const std::string& path, const BuildPlan& plan, const Policy& policy, Reasons& out) {
  if (std::string why = unsafe_path_reason(path); !why.empty()) {
    return out.add("plan_invalid_target:" + path, "target \"" + path + "\" " + why);
  }
  if (!plan.allowed_paths.empty() && !any_glob_match(plan.allowed_paths, path)) {
    return out.add("plan_target_not_allowed:" + path, "\"" + path + "\" is outside the plan's allowed_paths");
  }
  if (!any_glob_match(policy.allow_paths, path)) {
    return out.add("plan_target_not_allowed:" + path, "\"" + path + "\" is outside policy " + policy.name + "'s allow_paths");
  }
  if (any_glob_match(policy.deny_paths, path, Case::folded)) {
    out.add("plan_target_not_allowed:" + path, "\"" + path + "\" matches policy " + policy.name + "'s deny_paths");
  }
}

void check_invariants(const std::vector<std::string>& names, const std::string& where, const Policy& policy,
                      Reasons& out) {
  for (const std::string& name : names) {
    if (!policy.knows_invariant(name)) {
      out.add("plan_unknown_invariant:" + name, where + " names invariant \"" + name + "\", unknown to policy " + policy.name);
    }
  }
}

}  // namespace

std::vector<Reason> verify_plan(const BuildPlan& plan, const Policy& policy) {
  Reasons out;
  if (plan.steps.empty()) out.add("plan_empty", "the plan has no steps");
  std::map<std::string, const BuildStep*> by_id;
  std::set<std::string> produced;
  for (const BuildStep& s : plan.steps) {
    if (!by_id.emplace(s.id, &s).second) out.add("plan_duplicate_step:" + s.id, "two steps have the id \"" + s.id + "\"");
    if (std::string problem = step_problem(s); !problem.empty()) out.add("plan_invalid_step:" + s.id, "step " + s.id + ": " + problem);
    for (const std::string& t : s.targets) check_target(t, plan, policy, out);
    check_invariants(s.invariants, "step " + s.id, policy, out);
    produced.insert(s.produces.begin(), s.produces.end());
  }
  for (const BuildStep& s : plan.steps) {
    for (const std::string& dep : s.dependencies) {
      if (!by_id.contains(dep)) {
        out.add("plan_dependency_missing:" + s.id + "->" + dep, "step " + s.id + " depends on \"" + dep + "\", which is not a step");
      }
    }
  }
  find_cycles(plan, by_id, out);
  check_invariants(plan.invariants, "the plan", policy, out);
  if (plan.intent) {
    for (const std::string& artifact : plan.intent->artifacts) {
      if (!produced.contains(artifact)) {
        out.add("plan_missing_artifact:" + artifact,
                "intent " + plan.intent->name + " needs a " + artifact + " and no step produces one");
      }
    }
  }
  std::set<std::string> checks;
  for (const CheckSpec& c : plan.checks) checks.insert(c.name);
  for (const CheckSpec& c : policy.checks) checks.insert(c.name);
  for (const VerificationCheckpoint& cp : plan.verification_checkpoints) {
    for (const std::string& id : cp.after) {
      if (!by_id.contains(id)) {
        out.add("plan_dependency_missing:" + cp.id + "->" + id, "checkpoint " + cp.id + " follows \"" + id + "\", which is not a step");
      }
    }
    for (const std::string& name : cp.checks) {
      if (!checks.contains(name)) {
        out.add("plan_unknown_check:" + name, "checkpoint " + cp.id + " names check \"" + name + "\", which neither the plan nor the policy has");
      }
    }
    check_invariants(cp.invariants, "checkpoint " + cp.id, policy, out);
  }
  // Held-out checks judge the steps they name: a name that is no step would judge nothing.
  if (plan.held_out) {
    for (const std::string& id : plan.held_out->steps) {
      if (!by_id.contains(id)) {
        out.add("plan_held_out_step_missing:" + id, "the held-out checks judge step \"" + id + "\", which is not a step");
      }
    }
  }
  return out.sorted();
}

}  // namespace warden::kernel
