// `warden propose PATCH_OR_DIFF`: one proposal against an existing repository, judged by the
// repository's own tests. It is the build loop with a one-step plan — a `modify` step whose
// targets are the paths the proposal touches and whose checks are the --check commands — so
// the proposal gets everything a build step gets: the sandboxed run, decide(), a commit with
// trailers on the branch when accepted, and every record in the ledger either way.
#include <iostream>
#include <set>

#include "common/file.h"
#include "executor/proposer.h"
#include "kernel/build_loop.h"
#include "kernel/run_registry.h"
#include "diff/diff.h"
#include "diff/patch.h"
#include "runner/workspace.h"
#include "tools/warden/cli.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/run_report.h"

namespace warden::cli {

namespace {

struct ProposeArgs {
  std::string patch, repo, base, policy, ledger, key, branch = "warden/propose", step_id, clock = "system", cache, run_id;
  std::vector<std::string> checks;
  double step_timeout_s = 0;
  bool json = false;
};

// The given proposal, once: there is no executor to ask for another.
class GivenProposal final : public executor::Proposer {
 public:
  GivenProposal(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {}
  std::string name() const override { return name_; }
  Result<std::string> propose(const executor::ProposalRequest&) override {
    if (given_) return fail(Errc::invalid_argument, "warden propose has one proposal only");
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
  if (auto json = parse_json(text); json && json->is_object()) {
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

// Without --policy: the given checks must pass, .git and .warden are the kernel's, and the
// kernel's own dangerous-operation scan runs. Nothing else is assumed about the project.
kernel::Policy permissive_policy(const std::vector<CheckSpec>& checks) {
  kernel::Policy p;
  p.name = "propose";
  p.language = "any";
  p.description = "warden propose without --policy: the --check commands must pass; .git and .warden are protected";
  for (const auto& c : checks) p.required_checks.push_back(c.name);
  p.protected_paths = {".git/**", ".warden/**"};
  return p;
}

kernel::BuildPlan one_step_plan(const ProposeArgs& a, const Touched& touched, const std::vector<CheckSpec>& checks,
                                const kernel::Policy& policy) {
  kernel::BuildPlan plan;
  plan.name = "propose";
  plan.language = policy.language;
  plan.policy = policy.name;
  plan.branch = a.branch;
  plan.allowed_paths = {"**"};
  kernel::BuildStep step;
  step.id = !a.step_id.empty() ? a.step_id : !touched.diff_step_id.empty() ? touched.diff_step_id : "propose";
  step.action = kernel::StepAction::modify;
  step.description = "proposal " + std::filesystem::path(a.patch).filename().string();
  step.targets = touched.paths;
  plan.steps.push_back(std::move(step));
  // One step completes the plan, so the policy's end-of-plan invariants apply to it too.
  for (const auto& [name, program] : policy.invariants) plan.invariants.push_back(name);
  plan.checks = checks;
  plan.max_retries = 1;
  plan.max_replans = 0;
  return plan;
}

int refuse_branch(const Refusal& r, bool json) {
  Errc code = r.code == RefusalCode::revision_not_found || r.code == RefusalCode::repository_not_found ? Errc::not_found : Errc::invalid_argument;
  std::string hint = r.code == RefusalCode::branch_moved ? " (propose on top of it with --base, or name another --branch)" : "";
  return report_error(Error{code, r.message() + hint}, json);
}

void print_verdict(const kernel::BuildSummary& s, const RunReport* report) {
  const bool accepted = s.status == kernel::RunStatus::completed;
  if (accepted) {
    std::cout << "accepted: commit " << s.commit << " on " << s.branch << "\n";
  } else if (report && report->last_verdict.is_object() && !report->last_verdict.value("accepted", false)) {
    std::cout << "refused:\n";
    for (const auto& r : report->last_verdict.value("reasons", Json::array())) {
      std::cout << "  " << r.value("code", "") << ": " << r.value("detail", "") << "\n";
    }
  } else {
    std::cout << kernel::run_status_name(s.status) << ": "
              << (s.error_type ? std::string(kernel::error_type_name(*s.error_type)) + ": " : "") << s.error << "\n";
  }
  std::cout << "run " << s.run_id << "  ledger " << s.ledger_size << " records  root " << s.root_hex << "\n";
}

int run(ProposeArgs a) {
  auto text = read_file(a.patch, uint64_t{64} << 20);
  if (!text) return report_error(text.error(), a.json);
  auto touched = touched_paths(*text, a.patch);
  if (!touched) return report_error(touched.error(), a.json);

  std::vector<CheckSpec> checks;
  for (size_t i = 0; i < a.checks.size(); ++i) checks.push_back(CheckSpec::shell("check" + std::to_string(i + 1), a.checks[i]));
  kernel::Policy policy;
  if (a.policy.empty()) {
    if (checks.empty()) {
      return report_error(Error{Errc::invalid_argument, "nothing would judge the proposal: give --check 'CMD' or --policy"}, a.json);
    }
    policy = permissive_policy(checks);
  } else {
    auto loaded = kernel::Policy::load(a.policy);
    if (!loaded) return report_error(loaded.error().with_context("policy " + a.policy), a.json);
    policy = std::move(*loaded);
  }

  const std::filesystem::path repo(a.repo);
  if (a.ledger.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(repo / ".git", ec)) {
      return report_error(Error{Errc::invalid_argument, repo.string() + " has no .git directory to keep the ledger in: give --ledger"}, a.json);
    }
    a.ledger = (repo / ".git" / "warden-ledger").string();
  }
  const std::filesystem::path ledger(a.ledger);
  {
    // Refuse before anything is recorded when the commit could never land.
    auto workspace = Workspace::open(repo);
    if (!workspace) return refuse_branch(workspace.error(), a.json);
    auto base = workspace->repo().resolve_commit(a.base);
    if (!base) return refuse_branch(base.error(), a.json);
    if (auto ok = workspace->check_branch(a.branch, a.base); !ok) return refuse_branch(ok.error(), a.json);
    // check_branch lets a tip whose parent is the base through (it may be this very commit,
    // made again); a second proposal on the same base would be a different commit.
    if (auto tip = workspace->repo().resolve_commit("refs/heads/" + a.branch); tip && !(*tip == *base)) {
      return refuse_branch(Refusal{RefusalCode::branch_moved, a.branch, "the branch is at " + tip->hex() + ", not at the base " + base->hex()},
                           a.json);
    }
  }

  std::filesystem::path key = a.key.empty() ? std::filesystem::path(a.ledger + ".key") : std::filesystem::path(a.key);
  auto signer = load_or_create_kernel_key(key, "warden.local/propose", a.key.empty());
  if (!signer) return report_error(signer.error(), a.json);
  auto sources = make_sources(a.clock);
  if (!sources) return report_error(sources.error(), a.json);
  GivenProposal proposer("file:" + std::filesystem::path(a.patch).filename().string(), std::move(*text));

  kernel::BuildOptions options;
  options.repo_dir = repo;
  options.ledger_dir = ledger;
  options.cache_dir = std::filesystem::path(a.cache.empty() ? default_cache_dir() : a.cache);
  options.base = a.base;
  if (a.step_timeout_s > 0) options.step_timeout_ms = static_cast<int64_t>(a.step_timeout_s * 1000);
  options.run_id = a.run_id;

  CancelOnSignal cancel;
  std::optional<kernel::RunRegistration> registration;
  kernel::BuildEnvironment env{*sources->clock, *sources->ids, *signer, proposer, {}, cancel.token()};
  env.on_event = [&](const kernel::RunEvent& ev) {
    if (ev.type == kernel::RunEventType::run_started && !registration) {
      if (auto r = kernel::RunRegistration::create(ledger, ev.run_id)) registration.emplace(std::move(*r));
      if (!a.json) {
        std::cout << "warden propose: " << a.patch << "  run " << ev.run_id << "\n  repository " << repo.string()
                  << " at " << a.base << "\n  ledger     " << ledger.string() << std::endl;
      }
    }
    if (!a.json && ev.type == kernel::RunEventType::tool_output && ev.data.contains("checks")) {
      std::cout << "  checks:";
      for (const auto& [name, verdict] : ev.data["checks"].items()) std::cout << " " << name << "=" << verdict.get<std::string>();
      std::cout << std::endl;
    }
  };
  auto summary = kernel::run_plan(one_step_plan(a, *touched, checks, policy), policy, options, env);
  if (!summary) return report_error(summary.error(), a.json);
  registration.reset();
  // The verdict as recorded, every reason with its detail.
  auto report = read_run_report(ledger, summary->run_id);
  const RunReport* r = report ? &*report : nullptr;
  if (a.json) {
    print_json({{"accepted", summary->status == kernel::RunStatus::completed},
                {"verdict", r ? r->last_verdict : Json()},
                {"summary", summary->to_json()}});
  } else {
    print_verdict(*summary, r);
  }
  return run_exit_code(summary->status);
}

}  // namespace

void add_propose_commands(CLI::App& app, Action& action) {
  auto a = std::make_shared<ProposeArgs>();
  auto* cmd = app.add_subcommand(
      "propose",
      "Judge one proposal (a Diff JSON or a git patch) against an existing repository: a one-step build whose checks "
      "are the repository's own tests; commits it when accepted, records the decision in the ledger either way");
  cmd->add_option("proposal", a->patch, "Diff JSON (warden diff parse) or a git patch / unified diff")->required();
  cmd->add_option("--repo", a->repo, "The git repository")->required();
  cmd->add_option("--base", a->base, "Revision the proposal applies to (branch, tag, commit)")->required();
  cmd->add_option("--check", a->checks, "A shell command that must pass in the sandbox (repeatable; named check1, check2, ...)")
      ->allow_extra_args(false);
  cmd->add_option("--policy", a->policy,
                  "Policy: a built-in name (python, cpp) or a JSON file (default: the --check commands must pass, "
                  ".git/** and .warden/** are protected, dangerous operations refused, 1 MiB at most)");
  cmd->add_option("--ledger", a->ledger, "Ledger directory (default <repo>/.git/warden-ledger; created when missing)");
  cmd->add_option("--key", a->key, "The kernel's note signer key file (default <ledger>.key, generated on first use)");
  cmd->add_option("--branch", a->branch, "Branch the accepted commit goes on (new, or at --base)")->capture_default_str();
  cmd->add_option("--step-id", a->step_id, "The step's id (default: a Diff's own step_id, else \"propose\")");
  cmd->add_option("--clock", a->clock, "system, or logical (fixed timestamps and sequential ids)")
      ->check(CLI::IsMember({"system", "logical"}));
  cmd->add_option("--step-timeout", a->step_timeout_s, "Watchdog budget in seconds (default 30)");
  cmd->add_option("--cache", a->cache, "Runner cache for base checkouts (default /var/cache/warden as root, else ~/.cache/warden)");
  cmd->add_option("--run-id", a->run_id, "Run id (default: from the id source)");
  cmd->add_flag("--json", a->json, "Print {\"accepted\", \"verdict\", \"summary\"} as JSON");
  cmd->footer("Exit: 0 accepted and committed, 1 refused (the reasons are printed and in the ledger), 124 timeout, "
              "130 cancelled, 3 the proposal is neither a Diff nor a patch or the branch cannot take it, 4 missing "
              "file or revision, 5 I/O error.");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

}  // namespace warden::cli
