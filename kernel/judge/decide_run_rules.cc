// decide()'s rules on the run of the proposal's checks (decide_rules.h): the tests the base
// passed kept, the tests it adds passing, the oracle run, the required checks and invariants,
// and the held-out checks.
#include <algorithm>
#include <set>

#include "kernel/judge/decide_rules.h"
#include "kernel/judge/glob.h"
#include "kernel/judge/oracle_run.h"
#include "kernel/plan/held_out.h"

namespace warden::kernel::detail {
namespace {

// Checkpoints this step completes: every step they wait for is done once it is, and they
// were not complete before.
std::vector<const VerificationCheckpoint*> completed_checkpoints(const DecisionInput& in, const BuildStep& step) {
  std::vector<const VerificationCheckpoint*> out;
  for (const VerificationCheckpoint& cp : in.plan.verification_checkpoints) {
    bool before = std::all_of(cp.after.begin(), cp.after.end(), [&](const auto& id) { return in.completed_steps.contains(id); });
    bool after = std::all_of(cp.after.begin(), cp.after.end(),
                             [&](const auto& id) { return id == step.id || in.completed_steps.contains(id); });
    if (after && !before) out.push_back(&cp);
  }
  return out;
}

// Whether a check reported tests at all (a report format), and ran none of them.
bool reports_tests(const CheckResult& c) {
  return std::any_of(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.report != "none"; });
}

const CheckResult* find_check(const RunResult& run, std::string_view name) {
  auto it = std::find_if(run.checks.begin(), run.checks.end(), [&](const CheckResult& c) { return c.name == name; });
  return it == run.checks.end() ? nullptr : &*it;
}

// Steps that build a project up from nothing may come before its first test: while the base
// ran no tests either, a test run of nothing holds such a step to nothing. Every other step
// (a change, a new test, `warden propose`) must run tests.
bool may_run_no_tests(const BuildStep& step, const CheckResult* base) {
  const bool builds_up = step.action == StepAction::create_module || step.action == StepAction::create_function ||
                         step.action == StepAction::add_dependency;
  return builds_up && base && base->tests.empty();
}

// Whether test id `id` is one of the base tests an approval admits ("path::Class.test"): the
// id, read as a dotted name (pytest's "tests/test_a.py::Class::test" as tests.test_a.Class.test,
// a parameter suffix "[...]" dropped), is exactly the file's module and the unit.
bool approved_id(std::string_view id, const std::set<std::string>& approved) {
  if (id.ends_with("]") && id.find('[') != std::string_view::npos) id = id.substr(0, id.find('['));
  auto dotted = [](std::string_view path) {
    if (path.ends_with(".py")) path.remove_suffix(3);
    std::string out(path);
    std::replace(out.begin(), out.end(), '/', '.');
    return out;
  };
  std::string norm;
  if (const size_t sep = id.find("::"); sep != std::string_view::npos) {
    norm = dotted(id.substr(0, sep));
    std::string rest(id.substr(sep));
    for (size_t at = 0; (at = rest.find("::", at)) != std::string::npos;) rest.replace(at, 2, ".");
    norm += rest;
  } else {
    norm = std::string(id);
  }
  for (const std::string& a : approved) {
    const size_t sep = a.find("::");
    if (sep == std::string::npos) continue;
    if (norm == dotted(std::string_view(a).substr(0, sep)) + "." + a.substr(sep + 2)) return true;
  }
  return false;
}

// Every test that passed in `base` and is missing or not passing in `now`, as reasons. A test
// an approval admits may be missing (the approved change removed it); in the oracle run
// (`may_fail`), which runs its base version on the new code, it may also fail.
void add_lost_tests(const BuildStep& step, const CheckResult& base, const CheckResult& now, std::string_view where,
                    const std::set<std::string>& approved, Reasons& reasons, bool may_fail = false) {
  constexpr size_t kMaxListed = 20;
  std::map<std::string_view, std::string_view> status;
  for (const TestCase& t : now.tests) status.emplace(t.id, t.status);
  std::vector<std::string> lost;
  for (const TestCase& t : base.tests) {
    if (t.status != "passed" || any_glob_match(step.removes_tests, t.id)) continue;
    auto it = status.find(t.id);
    if (it == status.end()) {
      if (!approved_id(t.id, approved)) lost.push_back(t.id + " (missing)");
    } else if (it->second != "passed" && may_fail && approved_id(t.id, approved)) {
      continue;
    }
    else if (it->second != "passed") lost.push_back(t.id + " (" + std::string(it->second) + ")");
  }
  for (size_t i = 0; i < lost.size() && i < kMaxListed; ++i) {
    reasons.add(reason::pass_to_pass_failed, now.name + ": " + lost[i] + " passed on the base" + std::string(where));
  }
  if (lost.size() > kMaxListed) {
    reasons.add(reason::pass_to_pass_failed, now.name + ": and " + std::to_string(lost.size() - kMaxListed) + " more" + std::string(where));
  }
}

// The tests the proposal adds (ids the base's run does not have) must pass: they are the
// change's FAIL_TO_PASS. A skipped new test proves nothing and refuses nothing.
void add_failing_new_tests(const CheckResult& base, const CheckResult& now, Reasons& reasons) {
  constexpr size_t kMaxListed = 20;
  std::set<std::string_view> known;
  for (const TestCase& t : base.tests) known.insert(t.id);
  std::vector<std::string> failing;
  for (const TestCase& t : now.tests) {
    if (known.contains(t.id) || t.status == "passed" || t.status == "skipped") continue;
    failing.push_back(t.id + " (" + t.status + ")");
  }
  for (size_t i = 0; i < failing.size() && i < kMaxListed; ++i) {
    reasons.add(reason::new_test_failed, now.name + ": " + failing[i] + ", a test the proposal adds");
  }
  if (failing.size() > kMaxListed) {
    reasons.add(reason::new_test_failed, now.name + ": and " + std::to_string(failing.size() - kMaxListed) + " more");
  }
}

// A proposal that adds tests or changes a test file is judged by the base's test files alone as
// well: the oracle run (oracle_run.h) must be of exactly the proposal's diff without its test
// files' changes, and keep every test the base passed.
void check_oracle_run(const DecisionInput& in, const BuildStep& step, const Diff* diff, const std::set<std::string>& approved,
                      Reasons& reasons) {
  if (!diff || !in.run) return;
  std::optional<Diff> without = oracle_diff(*diff, in.proposal, in.policy.oracle, approved);
  if (!without) return;
  // What the base's test files must still pass: the base's passing tests, and every check
  // judged by its exit status that passed with the proposal's files (oracle_checks()).
  const bool tests = in.base_run && base_passed_a_test(*in.base_run);
  std::vector<const CheckResult*> by_status;
  for (const std::vector<CheckSpec>* specs : {&in.plan.checks, &in.policy.checks}) {
    for (const CheckSpec& spec : *specs) {
      const CheckResult* c = judged_by_exit_status(spec) ? find_check(*in.run, spec.name) : nullptr;
      if (c && !reports_tests(*c) && c->verdict == kPassed &&
          std::find(by_status.begin(), by_status.end(), c) == by_status.end()) {
        by_status.push_back(c);
      }
    }
  }
  // Ledgers recorded before the oracle run repeated the checks judged by exit status hold no
  // such run, or one without them: their decisions replay as they were made.
  if (!tests && (by_status.empty() || !in.oracle_run)) return;
  if (!in.oracle_run || in.oracle_run->diff_sha256 != without->digest()) {
    reasons.add(reason::pass_to_pass_failed, "no run of the base's tests, with the base's test files, on the proposal's code");
    return;
  }
  for (const CheckResult* c : by_status) {
    const CheckResult* now = find_check(*in.oracle_run, c->name);
    if (now && now->verdict != kPassed) {
      reasons.add(reason::pass_to_pass_failed,
                  c->name + " passes with the proposal's test files but " + now->verdict + " with the base's (its exit status is all it reports)");
    }
  }
  if (!tests) return;
  for (const CheckResult& base : in.base_run->checks) {
    if (!reports_tests(base)) continue;
    const CheckResult* now = find_check(*in.oracle_run, base.name);
    if (!now) {
      reasons.add(reason::pass_to_pass_failed, base.name + ": not run with the base's test files");
      continue;
    }
    add_lost_tests(step, base, *now, " (run with the base's test files)", approved, reasons, true);
  }
}

}  // namespace

// The held-out checks (held_out.h) must pass on every proposal that reached the runner. What
// is said is that they did not: a name, an output, an input or a count (which the tested program
// can inflate at will) would let the executor fit its next proposal to the tests it is not to see.
void check_held_out(const DecisionInput& in, const BuildStep& step, Reasons& reasons) {
  if (!in.plan.held_out || !in.run || !in.plan.held_out->judges(step.id)) return;
  if (!in.held_out_passed) {
    reasons.add(reason::held_out_failed, "the held-out checks did not run on the proposal");
  } else if (!*in.held_out_passed) {
    reasons.add(reason::held_out_failed, "the held-out tests do not all pass (which, how many and their output stay sealed until the bundle " +
                                             in.plan.held_out->sha256.str() + " is revealed)");
  }
}

namespace {

// Tests judged: a reporting check that ran no tests fails as no_tests_ran; every test that
// passed on the base must be there and pass. Returns the checks excused from their verdict
// (no tests, exit 0, on a step building up a project that has none yet).
std::set<std::string> check_tests(const DecisionInput& in, const BuildStep& step, const Diff* diff,
                                  const std::set<std::string>& approved, Reasons& reasons) {
  std::set<std::string> judged;
  const RunResult& run = *in.run;
  for (const CheckResult& c : run.checks) {
    if (!reports_tests(c)) continue;
    const CheckResult* base = in.base_run ? find_check(*in.base_run, c.name) : nullptr;
    if (c.tests.empty()) {
      const bool clean = std::all_of(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.exit_code == 0; });
      if (clean && may_run_no_tests(step, base)) {
        judged.insert(c.name);
      } else {
        reasons.add(reason::no_tests_ran, c.name + " ran no tests");
        // Which of the base's tests went missing (a deleted test file takes its tests along).
        if (base) add_lost_tests(step, *base, c, "", approved, reasons);
      }
      continue;
    }
    if (!in.base_run) {
      reasons.add(reason::pass_to_pass_failed, c.name + ": no run of the base to compare its tests with");
      continue;
    }
    if (!base) {
      reasons.add(reason::pass_to_pass_failed, c.name + ": the base run has no such check");
      continue;
    }
    add_lost_tests(step, *base, c, "", approved, reasons);
    add_failing_new_tests(*base, c, reasons);
  }
  check_oracle_run(in, step, diff, approved, reasons);
  return judged;
}

}  // namespace

void check_run(const DecisionInput& in, const BuildStep& step, const Diff* diff, const std::set<std::string>& approved,
               Reasons& reasons) {
  if (!in.run) {
    if (reasons.empty()) reasons.add(reason::required_checks_failed, "not run: the proposal never reached the runner");
    return;
  }
  const RunResult& run = *in.run;
  if (!run.preflight.ok) reasons.add(reason::sandbox_unavailable, "the sandbox preflight failed: " + run.preflight.failures());
  if (diff && run.diff_sha256 != diff->digest()) {
    reasons.add(reason::hash_mismatch, "the run result tested " + (run.diff_sha256 ? run.diff_sha256->str() : "no diff") +
                                           ", not this proposal's diff " + diff->digest().str());
  }

  const std::set<std::string> judged = check_tests(in, step, diff, approved, reasons);
  std::set<std::string> checks(in.policy.required_checks.begin(), in.policy.required_checks.end());
  for (const CheckSpec& spec : in.plan.checks) checks.insert(spec.name);
  std::set<std::string> invariants(in.plan.invariants.begin(), in.plan.invariants.end());
  invariants.insert(step.invariants.begin(), step.invariants.end());
  for (const VerificationCheckpoint* cp : completed_checkpoints(in, step)) {
    checks.insert(cp->checks.begin(), cp->checks.end());
    invariants.insert(cp->invariants.begin(), cp->invariants.end());
  }

  for (const std::string& name : checks) {
    auto result = std::find_if(run.checks.begin(), run.checks.end(), [&](const CheckResult& c) { return c.name == name; });
    if (result == run.checks.end()) {
      reasons.add(reason::required_checks_failed, name + ": not run");
    } else if (judged.contains(name) && result->verdict == kFailed) {
      // Failed only for running no tests, which check_tests() excused.
    } else if (result->verdict != kPassed) {
      reasons.add(reason::required_checks_failed, name + ": " + result->verdict);
    }
  }
  for (const std::string& name : invariants) {
    auto verdict = run.invariants.find(name);
    if (verdict == run.invariants.end()) {
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name, "no check of the run proves " + name);
    } else if (verdict->second.check != "invariant:" + name) {
      // Only the policy's own program proves an invariant; a plan's check claiming to is not it.
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name,
                  "check " + verdict->second.check + " is not the policy's program for " + name);
    } else if (!verdict->second.proven) {
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name, "check " + verdict->second.check + " did not prove it");
    }
  }
}

}  // namespace warden::kernel::detail
