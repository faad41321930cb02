// `warden propose PATCH_OR_DIFF`: the command line of kernel/build/propose.h — one proposal
// against an existing repository, judged by the repository's own tests.
#include <iostream>

#include "common/file.h"
#include "common/random_source.h"
#include "kernel/build/run_sources.h"
#include "kernel/plan/held_out.h"
#include "kernel/record/event_stream.h"
#include "kernel/build/propose.h"
#include "kernel/record/run_registry.h"
#include "tools/warden/cli.h"
#include "tools/warden/env_flags.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/signer_keys.h"
#include "tools/warden/working_line.h"

namespace warden::cli {

namespace {

struct ProposeArgs {
  std::string patch, repo, base, policy, ledger, key, branch, step_id, clock = "system", cache, run_id, environment, env_store;
  std::vector<std::string> checks, reports, oracle, approvers, approvals, held_out_checks;
  std::string held_out, held_out_at = "held_out";
  double step_timeout_s = 0;
  int jobs = 0;
  bool json = false;
};

void print_verdict(const kernel::ProposeOutcome& o) {
  const kernel::BuildSummary& s = o.summary;
  if (o.accepted()) {
    std::cout << "accepted: commit " << s.commit << " on " << s.branch << "\n";
  } else if (o.refused()) {
    std::cout << "refused:\n";
    for (const auto& r : o.verdict()->reasons) std::cout << "  " << r.code << ": " << r.detail << "\n";
    for (const auto& e : s.verdicts.back().checks_not_passing) std::cout << kernel::describe(e, o.ledger.string());
  } else {
    std::cout << kernel::run_status_name(s.status) << ": "
              << (s.error_type ? std::string(kernel::error_type_name(*s.error_type)) + ": " : "") << s.error << "\n";
  }
  for (const auto& [check, rests_on] : o.oracle) {
    if (rests_on == "exit_status") std::cout << check << ": judged by its exit status alone (it reports no test ids)\n";
  }
  if (o.held_out) {
    std::cout << "held-out checks: bundle " << o.held_out->str() << " sealed beside the ledger; reveal it with `warden held-out reveal "
              << o.held_out->str() << " --ledger " << o.ledger.string() << "` once no proposal is to be judged by it\n";
  }
  std::cout << "run " << s.run_id << "  ledger " << s.ledger_size << " records  root " << s.root_hex << "\n";
}

int run(ProposeArgs a) {
  kernel::ProposeRequest request;
  auto text = read_file(a.patch, uint64_t{64} << 20);
  if (!text) return report_error(text.error(), a.json);
  request.proposal = std::move(*text);
  request.source = a.patch;
  request.repo = a.repo;
  request.base = a.base;
  // Flags that leave nothing to judge the proposal, or give half of a pair, are usage errors
  // (exit 2); what the kernel refuses about their values is invalid input (3).
  if (a.checks.empty() && a.policy.empty()) {
    return report_error(Error{Errc::invalid_argument, "nothing would judge the proposal: give --check 'CMD' or --policy"}, a.json, kUsage);
  }
  if (a.held_out.empty() != a.held_out_checks.empty()) {
    return report_error(Error{Errc::invalid_argument, a.held_out.empty() ? "--held-out-check needs --held-out DIR: the bundle it runs"
                                                                         : "--held-out needs --held-out-check 'CMD': the checks that run the bundle"},
                        a.json, kUsage);
  }
  auto checks = command_checks(a.checks, a.reports, "check");
  if (!checks) return report_error(checks.error(), a.json);
  request.checks = std::move(*checks);
  if (!a.policy.empty()) {
    auto loaded = kernel::Policy::load(a.policy);
    if (!loaded) return report_error(loaded.error().with_context("policy " + a.policy), a.json);
    request.policy = std::move(*loaded);
  }
  request.oracle = a.oracle;
  for (const std::string& file : a.approvers) {
    auto vkey = read_file(file, 4096);
    if (!vkey) return report_error(vkey.error().with_context("--approver " + file), a.json);
    while (!vkey->empty() && (vkey->back() == '\n' || vkey->back() == '\r')) vkey->pop_back();
    request.approvers.push_back(std::move(*vkey));
  }
  for (const std::string& file : a.approvals) {
    auto text = read_file(file, 1 << 20);
    if (!text) return report_error(text.error().with_context("--approval " + file), a.json);
    auto json = parse_json(*text);
    if (!json) return report_error(json.error().with_context("--approval " + file), a.json);
    request.approvals.push_back(std::move(*json));
  }
  auto sources = kernel::RunSources::for_build(a.clock);
  if (!a.held_out.empty()) warn_logical_held_out(a.clock);
  if (!sources) return report_error(sources.error(), a.json);
  if (!a.held_out.empty()) {
    // The salt: unguessable (seeded only under --clock logical), so the digest tells nothing
    // of a small bundle.
    auto bundle = kernel::read_held_out_dir(a.held_out, a.held_out_at, *sources->random);
    if (!bundle) return report_error(bundle.error().with_context("--held-out " + a.held_out), a.json);
    request.held_out = std::move(*bundle);
  }
  auto held_out_checks = command_checks(a.held_out_checks, {}, "held_out");
  if (!held_out_checks) return report_error(held_out_checks.error().with_context("--held-out-check"), a.json);
  request.held_out_checks = std::move(*held_out_checks);
  request.ledger = a.ledger;
  request.branch = a.branch;
  request.step_id = a.step_id;
  if (a.step_timeout_s > 0) request.step_timeout_ms = static_cast<int64_t>(a.step_timeout_s * 1000);
  request.jobs = a.jobs;
  request.run_id = a.run_id;
  request.environment = a.environment;
  // Refused before a key is made or anything is recorded.
  if (Status st = kernel::check_proposal(request); !st) return report_error(st.error(), a.json);
  auto ledger = kernel::propose_ledger_dir(request);
  if (!ledger) return report_error(ledger.error(), a.json);

  auto signer = signer_for_ledger(*ledger, a.key, "warden.local/propose", "--key");
  if (!signer) return report_error(signer.error(), a.json);

  CancelOnSignal cancel;
  std::optional<kernel::RunRegistration> registration;
  kernel::KernelSession session(*sources->clock, *sources->ids, *signer);
  session.cache_dir = a.cache.empty() ? default_cache_dir() : a.cache;
  session.env_store = a.env_store;
  session.stop = cancel.token();
  if (!a.json) session.on_working = working_lines();
  session.on_event = [&](const kernel::RunEvent& ev) {
    if (a.json) print_event(kernel::stream_event_json(ev));
    if (ev.type == kernel::RunEventType::run_started && !registration) {
      if (auto r = kernel::RunRegistration::create(*ledger, ev.run_id)) registration.emplace(std::move(*r));
      if (!a.json) {
        std::cout << "warden propose: " << a.patch << "  run " << ev.run_id << "\n  repository " << a.repo << " at "
                  << a.base << "\n  ledger     " << ledger->string() << std::endl;
      }
    }
    if (ev.type == kernel::RunEventType::tool_output && ev.data.contains("base_checkout_attributes")) {
      for (const auto& at : ev.data["base_checkout_attributes"]) {
        std::cerr << "warden: note: the base's " << at.value("path", "") << ":" << at.value("line", 0) << " `" << at.value("text", "")
                  << "` sets " << at.value("attribute", "") << ": a checkout of what is accepted may differ from the bytes tested"
                  << std::endl;
      }
    }
    if (ev.type == kernel::RunEventType::tool_output && ev.data.contains("base_checkout_discarded")) {
      const Json& b = ev.data["base_checkout_discarded"];
      std::cerr << "warden: warning: the cached base checkout of tree " << b.value("tree", "") << " was discarded and rebuilt: "
                << b.value("reason", "") << std::endl;
    }
    if (!a.json && ev.type == kernel::RunEventType::tool_output && ev.data.contains("checks")) {
      std::cout << "  " << run_label(ev.data) << ":";
      for (const auto& [name, verdict] : ev.data["checks"].items()) std::cout << " " << name << "=" << verdict.get<std::string>();
      std::cout << std::endl;
    }
    if (!a.json && ev.type == kernel::RunEventType::tool_output && ev.data.value("held_out_run", false)) {
      std::cout << "  held-out run: " << (ev.data.value("passed", false) ? "passed" : "did not pass") << std::endl;
    }
  };
  auto outcome = kernel::propose(request, session);
  if (!outcome) return report_error(outcome.error(), a.json);
  // The run's end is durable (the outcome exists only after it was recorded and signed).
  if (registration) registration->ended();
  registration.reset();
  if (!a.json) print_recovered(outcome->summary.recovered);
  if (a.json) {
    print_json(outcome->to_json());
  } else {
    print_verdict(*outcome);
  }
  return run_exit_code(outcome->summary.status);
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
  cmd->add_option("--check", a->checks, "A shell command that must pass in the sandbox (repeatable; named check1, check2, ...; its test report is detected from the command, see --report)")
      ->allow_extra_args(false);
  cmd->add_option("--report", a->reports, kReportHelp)->allow_extra_args(false);
  cmd->add_option("--policy", a->policy,
                  "Policy: a built-in name (python, cpp) or a JSON file (default: the --check commands must pass, "
                  ".git/**, .warden/** and the oracle are protected, dangerous operations refused, 1 MiB at most)");
  cmd->add_option("--oracle", a->oracle,
                  "A glob of more files that judge the proposal (repeatable): added to the policy's oracle paths, so an "
                  "existing one may not change (the tests, their runner's hooks and the test sections of build files "
                  "are protected already)")
      ->allow_extra_args(false);
  cmd->add_option("--approver", a->approvers,
                  "A verifier key file (warden key generate) of a person whose approvals may admit changes to base tests "
                  "(repeatable): added to the policy's approvers, recorded with it");
  cmd->add_option("--approval", a->approvals,
                  "A signed approval (warden approve) admitting changes to named base tests for this proposal (repeatable); "
                  "recorded in the plan before the decision");
  cmd->add_option("--held-out", a->held_out,
                  "A directory of tests the proposal's author never sees (docs/held-out.md): laid over the tree "
                  "under test at --held-out-at in a run of its own, the plan holding only its salted digest; sealed "
                  "beside the ledger until `warden held-out reveal`");
  cmd->add_option("--held-out-check", a->held_out_checks,
                  "A shell command that runs the held-out tests (repeatable; named held_out1, ...); all must pass")
      ->allow_extra_args(false);
  cmd->add_option("--held-out-at", a->held_out_at, "Where the held-out directory is laid in the tree under test")->capture_default_str();
  cmd->add_option("--ledger", a->ledger,
                  "Ledger directory (default <repo>/.git/warden-ledger; created when missing, with its parents)");
  cmd->add_option("--key", a->key,
                  "Signer key file (default: the ledger's LEDGER/signer.key, generated with a new ledger; a new ledger "
                  "keeps a copy of a given key there, and LEDGER/signer.pub either way)");
  cmd->add_option("--branch", a->branch,
                  "Branch the accepted commit goes on (new, or at --base; default warden/propose-<12 hex of the "
                  "proposal's SHA-256>: each proposal gets its own)");
  cmd->add_option("--step-id", a->step_id, "The step's id (default: a Diff's own step_id, else \"propose\")");
  cmd->add_option("--clock", a->clock, "system, or logical (fixed timestamps and sequential ids)")
      ->check(CLI::IsMember({"system", "logical"}));
  cmd->add_option("--step-timeout", a->step_timeout_s, "Watchdog budget in seconds (default 30)");
  cmd->add_option("--jobs,-j", a->jobs,
                  "Sandbox runs at once: the base's run, the proposal's and the oracle run (default 3: all of them); "
                  "never changes what is recorded")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--cache", a->cache, "Runner cache for base checkouts (default /var/cache/warden as root, else ~/.cache/warden)");
  cmd->add_option("--environment", a->environment, std::string(kEnvironmentFlagHelp));
  cmd->add_option("--env-store", a->env_store, std::string(kEnvStoreFlagHelp));
  cmd->add_option("--run-id", a->run_id, "Run id (default: from the id source)");
  cmd->add_flag("--json", a->json,
                "Print the run's events as JSON Lines, then the decision as the result line: accepted (branch, commit), "
                "refused (the refusal's codes, reasons and report) or undecided (error_type, error); docs/commands.md: JSON Lines");
  cmd->footer("Exit: 0 accepted and committed, 1 refused (the reasons are printed and in the ledger), 124 timeout, "
              "130 cancelled, 3 the proposal is neither a Diff nor a patch or the branch cannot take it, 4 missing "
              "file or revision, 5 I/O error.");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

}  // namespace warden::cli
