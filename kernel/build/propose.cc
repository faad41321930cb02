#include "kernel/build/propose.h"
#include "kernel/build/run_environment.h"

#include <algorithm>
#include <set>

#include "diff/diff.h"
#include "diff/patch.h"
#include "kernel/judge/approval.h"
#include "common/clock.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/judge/held_out_vault.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "executor/proposer.h"
#include "runner/workspace/workspace.h"

namespace warden::kernel {
namespace {

// The given proposal, once: there is no executor to ask for another.
class GivenProposal final : public executor::Proposer {
 public:
  GivenProposal(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {}
  std::string name() const override { return name_; }
  Checked<std::string> propose(const executor::ProposalRequest&) override {
    if (given_) return refuse(RefusalCode::executor_failed, "", "warden propose has one proposal only");
    given_ = true;
    return text_;
  }
  void learn(const Json&) override {}

 private:
  std::string name_, text_;
  bool given_ = false;
};

struct Touched {
  std::vector<std::string> paths;  // sorted, unique: the step's targets
  std::string diff_step_id;        // a Diff JSON's own step id; empty for a patch
};

// The paths a Diff JSON or a patch names, read without the base: whether it applies there is
// for the kernel to decide (and record).
Result<Touched> touched_paths(const std::string& text, const std::string& what) {
  Touched out;
  std::set<std::string> paths;
  auto json = parse_json(text, what);
  // Text that opens like a JSON object is judged as JSON: its parse error is the reason
  // ("number 1e400 at line 3, column 9 is out of range"), not that it is no patch.
  auto first = text.find_first_not_of(" \t\r\n");
  if (!json && first != std::string::npos && text[first] == '{') return std::unexpected(json.error());
  if (json && json->is_object()) {
    auto diff = Diff::from_json(*json);
    if (!diff) return fail(Errc::invalid_argument, what + ": not a valid Diff: " + diff.error().message());
    for (const auto& f : diff->files) {
      paths.insert(f.path);
      if (f.old_path) paths.insert(*f.old_path);
    }
    out.diff_step_id = diff->step_id;
  } else {
    auto files = parse_patch(text);
    if (!files) return fail(Errc::invalid_argument, what + ": neither a Diff JSON nor a patch: " + files.error().message());
    for (const auto& f : *files) {
      for (const std::string* p : {&f.old_path, &f.new_path}) {
        if (!p->empty()) paths.insert(*p);
      }
    }
  }
  if (paths.empty()) return fail(Errc::invalid_argument, what + ": the proposal changes no file");
  out.paths.assign(paths.begin(), paths.end());
  return out;
}

Policy permissive_policy(const std::vector<CheckSpec>& checks) {
  Policy p;
  p.name = "propose";
  p.language = "any";
  // Only the dangerous-operation scan's safety rules (dangerous_ops.h): an existing project's
  // style (C's sprintf, say) is its own business; running a process, eval or a fetched script
  // that the change introduces is refused.
  p.description =
      "warden propose without --policy: the --check commands must pass; .git, .warden and the oracle (the tests, their "
      "runner's hooks, the test sections of build files) are protected; process execution, eval, unsafe "
      "deserialization, fetch-and-run and rm -rf / that the change introduces are refused";
  // The commands are the policy's own checks, so the recorded policy stands alone: replay
  // parses it, and a policy may only require checks it defines.
  p.checks = checks;
  for (const auto& c : checks) p.required_checks.push_back(c.name);
  p.protected_paths = {".git/**", ".warden/**"};
  return p;
}

// Whether the ledger at `dir` (when there is one) holds a reveal of `bundle`.
bool revealed_in_ledger(const std::filesystem::path& dir, const Digest& bundle) {
  LogicalClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  if (!ledger) return false;
  auto snap = ledger->snapshot();
  if (!snap) return false;
  auto found = find_reveal(*snap, bundle);
  return found && found->has_value();
}

BuildPlan one_step_plan(const ProposeRequest& r, const Touched& touched, const Policy& policy, const HeldOutBundle* held_out) {
  BuildPlan plan;
  plan.name = "propose";
  plan.language = policy.language;
  plan.policy = policy.name;
  plan.branch = propose_branch(r);
  plan.allowed_paths = {"**"};
  BuildStep step;
  step.id = !r.step_id.empty() ? r.step_id : !touched.diff_step_id.empty() ? touched.diff_step_id : "propose";
  step.action = StepAction::modify;
  step.description = "proposal " + std::filesystem::path(r.source).filename().string();
  step.targets = touched.paths;
  step.approvals = r.approvals;
  plan.steps.push_back(std::move(step));
  // One step completes the plan, so the policy's end-of-plan invariants apply to it too.
  for (const auto& [name, program] : policy.invariants) plan.invariants.push_back(name);
  plan.checks = r.checks;
  plan.max_retries = 1;
  plan.max_replans = 0;
  // A queue of one: its runs (base, proposal, oracle) are prefetched together, as many at once
  // as there are jobs, and the ledger is that of one job.
  plan.merge_queue_depth = 1;
  if (held_out) plan.held_out = HeldOutSpec{held_out->digest(), held_out->at, r.held_out_checks, HeldOutReveal::by_owner, {}};
  return plan;
}

// A branch past the base is a precondition that does not hold (exit 1, as `warden build` says
// it), the rest about the repository is not found or invalid input.
Error branch_refusal(const Refusal& r) {
  Errc code = r.code == RefusalCode::revision_not_found || r.code == RefusalCode::repository_not_found ? Errc::not_found
              : r.code == RefusalCode::branch_moved                                                    ? Errc::failed_precondition
                                                                                                        : Errc::invalid_argument;
  std::string hint = r.code == RefusalCode::branch_moved
                         ? " (name another --branch, or give none: each proposal then gets a branch of its own)"
                         : "";
  return Error{code, r.message() + hint};
}

// Refuses before anything is recorded when the commit could never land.
Status check_branch(const ProposeRequest& r) {
  auto workspace = Workspace::open(r.repo);
  if (!workspace) return std::unexpected(branch_refusal(workspace.error()));
  auto base = workspace->repo().resolve_commit(r.base);
  if (!base) return std::unexpected(branch_refusal(base.error()));
  const std::string branch = propose_branch(r);
  if (auto ok = workspace->check_branch(branch, r.base); !ok) return std::unexpected(branch_refusal(ok.error()));
  // check_branch lets a tip whose parent is the base through (it may be this very commit,
  // made again); a second proposal on the same base would be a different commit.
  if (auto tip = workspace->repo().resolve_commit("refs/heads/" + branch); tip && !(*tip == *base)) {
    return std::unexpected(
        branch_refusal(Refusal{RefusalCode::branch_moved, branch, "the branch is at " + tip->hex() + ", not at the base " + base->hex()}));
  }
  return {};
}

// --base as a commit and its tree, in hex.
Result<std::pair<std::string, std::string>> resolve_base(const ProposeRequest& r) {
  auto workspace = Workspace::open(r.repo);
  if (!workspace) return std::unexpected(branch_refusal(workspace.error()));
  auto commit = workspace->repo().resolve_commit(r.base);
  if (!commit) return std::unexpected(branch_refusal(commit.error()));
  auto tree = workspace->repo().tree_of(*commit);
  if (!tree) return std::unexpected(branch_refusal(tree.error()));
  return std::pair{commit->hex(), tree->hex()};
}

}  // namespace

std::string propose_branch(const ProposeRequest& r) {
  return r.branch.empty() ? "warden/propose-" + sha256(r.proposal).hex().substr(0, 12) : r.branch;
}

Result<std::filesystem::path> propose_ledger_dir(const ProposeRequest& r) {
  if (!r.ledger.empty()) return r.ledger;
  std::error_code ec;
  if (!std::filesystem::is_directory(r.repo / ".git", ec)) {
    return fail(Errc::invalid_argument, r.repo.string() + " has no .git directory to keep the ledger in: give --ledger");
  }
  return r.repo / ".git" / "warden-ledger";
}

Status check_proposal(const ProposeRequest& r) {
  auto touched = touched_paths(r.proposal, r.source);
  if (!touched) return std::unexpected(touched.error());
  for (const std::string& glob : r.oracle) {
    if (glob.empty()) return fail(Errc::invalid_argument, "--oracle: a glob may not be empty");
  }
  for (const std::string& vkey : r.approvers) {
    if (auto v = NoteVerifier::parse(vkey); !v) return fail(Errc::invalid_argument, "--approver: " + v.error().message);
  }
  for (const Json& a : r.approvals) {
    if (auto parsed = Approval::from_json(a); !parsed) return fail(Errc::invalid_argument, "--approval: " + parsed.error().message);
  }
  if (r.held_out.has_value() != !r.held_out_checks.empty()) {
    return fail(Errc::invalid_argument, r.held_out ? "--held-out needs --held-out-check 'CMD': the checks that run the bundle"
                                                   : "--held-out-check needs --held-out DIR: the bundle it runs");
  }
  if (!r.policy && r.checks.empty()) {
    return fail(Errc::invalid_argument, "nothing would judge the proposal: give --check 'CMD' or --policy");
  }
  auto ledger = propose_ledger_dir(r);
  if (!ledger) return std::unexpected(ledger.error());
  return check_branch(r);
}

Json ProposeOutcome::to_json() const {
  const BuildSummary& s = summary;
  Json j = {{"decision", accepted() ? "accepted" : refused() ? "refused" : "undecided"},
            {"accepted", accepted()},
            {"status", run_status_name(s.status)},
            {"run_id", s.run_id},
            {"step_id", s.verdicts.empty() ? Json(nullptr) : Json(s.verdicts.back().step_id)},
            {"base_commit", base_commit},
            {"base_tree", base_tree},
            {"ledger", ledger.string()},
            {"ledger_size", s.ledger_size},
            {"root", s.root_hex},
            {"checkpoint", s.checkpoint},
            {"plan_sha256", s.plan_sha256.str()},
            {"policy_sha256", s.policy_sha256.str()},
            {"oracle", oracle}};
  if (held_out) j["held_out"] = held_out->str();
  if (accepted()) {
    j["branch"] = s.branch;
    j["commit"] = s.commit;
    j["tree"] = s.tree;
  } else if (refused()) {
    const AttemptVerdict& last = s.verdicts.back();
    Json reasons = last.verdict.to_json().at("reasons");
    Json refusal = {{"codes", last.verdict.reason_codes()}, {"reasons", std::move(reasons)}};
    if (last.refusal_report) refusal["report"] = last.refusal_report->to_json();
    if (!last.checks_not_passing.empty()) {
      Json evidence = Json::array();
      for (const CheckEvidence& e : last.checks_not_passing) evidence.push_back(e.to_json());
      refusal["checks_not_passing"] = std::move(evidence);
    }
    j["refusal"] = std::move(refusal);
  } else {
    j["error_type"] = s.error_type ? Json(error_type_name(*s.error_type)) : Json(nullptr);
    j["error"] = s.error;
  }
  if (!s.recovered.empty()) {
    Json list = Json::array();
    for (const RecoveredRun& r : s.recovered) list.push_back(r.to_json());
    j["recovered_runs"] = std::move(list);
  }
  return j;
}

Result<ProposeOutcome> propose(const ProposeRequest& r, KernelSession& session) {
  if (Status st = check_proposal(r); !st) return std::unexpected(st.error());
  auto base = resolve_base(r);
  if (!base) return std::unexpected(base.error());
  auto touched = touched_paths(r.proposal, r.source);
  auto ledger = propose_ledger_dir(r);
  if (!touched || !ledger) return fail(Errc::internal, "the proposal changed while it was checked");
  Policy policy = r.policy ? *r.policy : permissive_policy(r.checks);
  policy.oracle.paths.insert(policy.oracle.paths.end(), r.oracle.begin(), r.oracle.end());
  policy.approvers.insert(policy.approvers.end(), r.approvers.begin(), r.approvers.end());
  if (Status st = settle_environment(policy, r.environment, std::filesystem::current_path(), session.env_store); !st) {
    return std::unexpected(st.error());
  }

  // Sealed before the run: the plan names it, and the run opens it from here. The same tests
  // sealed earlier and not revealed keep their salt, so they keep their digest.
  std::optional<HeldOutBundle> held_out;
  if (r.held_out) {
    const HeldOutVault vault(*ledger);
    held_out = vault.sealed_like(*r.held_out);
    // Revealed in the ledger but not marked in the vault (a crash between the two): public
    // tests judge nothing, so the proposal gets a fresh salt.
    if (held_out && revealed_in_ledger(*ledger, held_out->digest())) {
      (void)vault.mark_revealed(held_out->digest());
      held_out.reset();
    }
    if (!held_out) {
      held_out = *r.held_out;
      if (Status st = vault.seal(*held_out); !st) return std::unexpected(st.error().with_context("sealing the held-out bundle"));
    }
  }
  GivenProposal proposer("file:" + std::filesystem::path(r.source).filename().string(), r.proposal);
  BuildOptions options;
  options.repo_dir = r.repo;
  options.ledger_dir = *ledger;
  options.base = r.base;
  options.step_timeout_ms = r.step_timeout_ms;
  options.run_id = r.run_id;
  // All three at once by default: a test suite waits on more than the CPU (sleeps, I/O, a
  // build's linker), and on CPU-bound suites overlapping runs cost no more than running them in turn.
  options.jobs = r.jobs > 0 ? r.jobs : 3;
  auto summary = run_plan(one_step_plan(r, *touched, policy, held_out ? &*held_out : nullptr), policy, options, session, proposer);
  if (!summary) return std::unexpected(summary.error());
  ProposeOutcome out{std::move(*summary), *ledger, base->first, base->second, {}, std::nullopt};
  if (held_out) out.held_out = held_out->digest();
  for (const std::vector<CheckSpec>* checks : {&r.checks, static_cast<const std::vector<CheckSpec>*>(&policy.checks)}) {
    for (const CheckSpec& c : *checks) out.oracle[c.name] = c.report_format == "none" ? "exit_status" : "tests";
  }
  return out;
}

}  // namespace warden::kernel
