// `warden build`: a blueprint to verified commits and a signed ledger — the kernel's main
// job. Progress goes to stdout as the run goes (steps done of total, the current step, every
// attempt's verdict); --json prints the run's events as JSON Lines instead (kernel/event_stream.h),
// then the summary as the result line.
// Ctrl-C (SIGINT) or SIGTERM cancels the run cleanly: sandboxes are killed, the ledger records
// the cancellation, and the branch keeps only accepted commits.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "kernel/build_loop.h"
#include "kernel/event_stream.h"
#include "kernel/run_registry.h"
#include "tools/warden/cli.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/signer_keys.h"
#include "tools/warden/working_line.h"

namespace warden::cli {

namespace {

struct BuildArgs {
  std::string blueprint, out, repo, ledger, key, executor = "plan", policy, clock = "system", cache, run_id;
  double step_timeout_s = 0;
  bool json = false;
  ExecutorSandboxOptions executor_sandbox;
};


// Human progress, one line per thing that happened.
class Progress {
 public:
  void operator()(const kernel::RunEvent& ev) {
    using kernel::RunEventType;
    const Json& d = ev.data;
    switch (ev.type) {
      case RunEventType::step_started:
        std::cout << "[" << d.value("steps_completed", 0) + 1 << "/" << d.value("steps_total", 0) << "] " << d.value("step_id", "") << " " << d.value("action", "");
        for (const auto& t : d.value("targets", Json::array())) std::cout << " " << t.get<std::string>();
        std::cout << std::endl;
        break;
      case RunEventType::tool_output:
        if (d.contains("base_checkout_attributes")) {
          for (const auto& a : d["base_checkout_attributes"]) {
            std::cout << "      note: the base's " << a.value("path", "") << ":" << a.value("line", 0) << " `" << a.value("text", "")
                      << "` sets " << a.value("attribute", "") << ": a checkout of what is accepted may differ from the bytes tested"
                      << std::endl;
          }
        } else if (ev.tool && *ev.tool == "kernel") {
          std::cout << "      attempt " << d.value("attempt", 0) << ": ";
          if (d.value("accepted", false)) {
            std::cout << "accepted";
          } else {
            std::cout << "refused:";
            for (const auto& r : d.value("reasons", Json::array())) std::cout << " " << r.get<std::string>();
          }
          std::cout << std::endl;
        } else if (d.contains("base_checkout_discarded")) {
          const Json& b = d["base_checkout_discarded"];
          std::cout << "      warning: the cached base checkout of tree " << b.value("tree", "") << " was discarded and rebuilt: "
                    << b.value("reason", "") << std::endl;
        } else if (d.contains("checks")) {
          std::cout << "      attempt " << d.value("attempt", 0) << " checks:";
          for (const auto& [name, verdict] : d["checks"].items()) std::cout << " " << name << "=" << verdict.get<std::string>();
          std::cout << std::endl;
        }
        break;
      case RunEventType::replan_triggered:
        std::cout << "      retries exhausted for " << d.value("failed_step", "") << ": asking the executor for a new plan"
                  << std::endl;
        break;
      case RunEventType::timeout_error:
        std::cout << "      watchdog: " << d.value("error", "") << std::endl;
        break;
      case RunEventType::run_cancelled:
        std::cout << "cancelled: " << d.value("error", "") << std::endl;
        break;
      default:
        break;
    }
  }
};

void print_summary(const kernel::BuildSummary& s, const std::filesystem::path& repo, const std::filesystem::path& ledger) {
  std::cout << "\nrun        " << s.run_id << "  " << kernel::run_status_name(s.status);
  if (s.error_type) std::cout << "  " << kernel::error_type_name(*s.error_type) << ": " << s.error;
  std::cout << "\nsteps      " << s.steps_completed << "/" << s.steps_total << " accepted";
  int64_t refused = 0;
  for (const auto& v : s.verdicts) refused += v.verdict.accepted ? 0 : 1;
  std::cout << ", " << s.verdicts.size() << " proposals, " << refused << " refused";
  if (s.replans) std::cout << ", " << s.replans << " replans";
  std::cout << "\nverdicts  ";
  for (const auto& v : s.verdicts) {
    std::cout << " " << v.step_id << "#" << v.attempt << "=" << (v.verdict.accepted ? "accepted" : "refused");
  }
  std::cout << "\nrepository " << repo.string() << "  " << s.branch;
  std::cout << "\ncommit     " << s.commit << "\ntree       " << s.tree;
  std::cout << "\nplan       " << s.plan_sha256.str() << "\npolicy     " << s.policy_sha256.str();
  std::cout << "\nledger     " << ledger.string() << "  " << s.ledger_size << " records  root " << s.root_hex;
  std::cout << "\ncheckpoint\n" << s.checkpoint;
}

int run(const BuildArgs& a) {
  auto blueprint = kernel::BlueprintSpec::load(a.blueprint);
  if (!blueprint) return report_error(blueprint.error(), a.json);
  const std::filesystem::path out = a.out.empty() ? std::filesystem::path("warden-out") / blueprint->name : std::filesystem::path(a.out);
  const std::filesystem::path repo = a.repo.empty() ? out / "repo" : std::filesystem::path(a.repo);
  const std::filesystem::path ledger = a.ledger.empty() ? out / "ledger" : std::filesystem::path(a.ledger);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return report_error(Error{Errc::io_error, "creating " + out.string() + ": " + ec.message()}, a.json);

  auto sources = make_sources(a.clock);
  if (!sources) return report_error(sources.error(), a.json);
  // The executor's sandbox passes its preflight before the ledger's directory or key is made.
  auto proposer = make_proposer(a.executor, std::filesystem::path(a.blueprint).parent_path(), a.executor_sandbox);
  if (!proposer) return report_error(proposer.error(), a.json);
  auto signer = signer_for_ledger(ledger, a.key, "warden.local/" + blueprint->name, "--key");
  if (!signer) return report_error(signer.error(), a.json);

  kernel::BuildOptions options;
  options.repo_dir = repo;
  options.ledger_dir = ledger;
  options.blueprint_dir = std::filesystem::path(a.blueprint).parent_path();
  options.policy = a.policy;
  if (a.step_timeout_s > 0) options.step_timeout_ms = static_cast<int64_t>(std::clamp(a.step_timeout_s, 0.001, 86400.0) * 1000);
  options.run_id = a.run_id;

  CancelOnSignal cancel;
  Progress progress;
  std::optional<kernel::RunRegistration> registration;
  kernel::KernelSession session(*sources->clock, *sources->ids, *signer);
  session.cache_dir = a.cache.empty() ? default_cache_dir() : a.cache;
  session.stop = cancel.token();
  session.host_independent = a.clock == "logical";
  if (!a.json) session.on_working = working_lines();
  session.on_event = [&](const kernel::RunEvent& ev) {
    if (ev.type == kernel::RunEventType::run_started && !registration) {
      if (auto r = kernel::RunRegistration::create(ledger, ev.run_id)) registration.emplace(std::move(*r));
    }
    if (a.json) {
      print_event(kernel::stream_event_json(ev));
      return;
    }
    if (ev.type == kernel::RunEventType::run_started) {
      std::cout << "warden build: " << blueprint->name << "  run " << ev.run_id << "  executor " << (*proposer)->name();
      if (auto sandbox = (*proposer)->confinement()) {
        std::cout << "\n  executor sandbox: profile " << sandbox->profile << " " << sandbox->profile_sha256.str()
                  << ", network " << (sandbox->network ? "on" : "off");
      }
      std::cout << "\n  repository " << repo.string() << "\n  ledger     " << ledger.string() << std::endl;
    }
    progress(ev);
  };
  auto summary = kernel::run_build(*blueprint, options, session, **proposer);
  if (!summary) return report_error(summary.error(), a.json);
  // The run's end is durable (the summary exists only after it was recorded and signed).
  if (registration) registration->ended();
  if (!a.json) print_recovered(summary->recovered);
  if (a.json) {
    print_json(summary->to_json());
  } else {
    print_summary(*summary, repo, ledger);
  }
  return run_exit_code(summary->status);
}

}  // namespace

void add_build_commands(CLI::App& app, Action& action) {
  auto a = std::make_shared<BuildArgs>();
  auto* cmd = app.add_subcommand(
      "build",
      "Build a blueprint: generate and commit its plan, then for every step have the executor propose a diff, run the "
      "checks in the sandbox, decide, and commit what is accepted to git and the ledger");
  cmd->add_option("blueprint", a->blueprint, "BlueprintSpec JSON (e.g. examples/calculator/blueprint.json)")->required();
  cmd->add_option("--out", a->out, "Where the repository and ledger go by default (default warden-out/<name>)");
  cmd->add_option("--repo", a->repo, "Git repository to build in (default <out>/repo; created from the blueprint's seed)");
  cmd->add_option("--ledger", a->ledger, "Ledger directory (default <out>/ledger; created when missing, with its parents)");
  cmd->add_option("--key", a->key,
                  "Signer key file (default: the ledger's LEDGER/signer.key, generated with a new ledger; a new ledger "
                  "keeps a copy of a given key there, and LEDGER/signer.pub either way)");
  cmd->add_option("--executor", a->executor,
                  "Who proposes: 'plan' (the plan's own content, no AI) or 'command:CMD' (CMD reads the step as JSON "
                  "on stdin, writes a Diff JSON or a git patch)");
  cmd->add_option("--executor-profile", a->executor_sandbox.profile,
                  "Sandbox profile a command executor runs in: a built-in name or a JSON file (default executor: an "
                  "empty private workspace, the files its command names read-only, no network; recorded with every "
                  "proposal)")
      ->capture_default_str();
  cmd->add_flag("--executor-network", a->executor_sandbox.network,
                "Give a command executor the host's network (an LLM agent's API endpoint); recorded with every proposal");
  cmd->add_option("--policy", a->policy, "Policy: a built-in name (python, cpp) or a JSON file (default: the blueprint's)");
  cmd->add_option("--clock", a->clock, "system, or logical for golden runs (fixed timestamps, sequential ids, and no host kernel release in the "
                  "recorded toolchain)")
      ->check(CLI::IsMember({"system", "logical"}));
  cmd->add_option("--step-timeout", a->step_timeout_s, "Watchdog budget per step in seconds (default: the plan's, 30)");
  cmd->add_option("--cache", a->cache, "Runner cache for base checkouts (default /var/cache/warden as root, else ~/.cache/warden)");
  cmd->add_option("--run-id", a->run_id, "Run id (default: from the id source)");
  cmd->add_flag("--json", a->json, "Print the run's events as JSON Lines, then the summary as the result line (README: JSON Lines)");
  cmd->footer("Exit: 0 completed, 1 failed (a refused plan, retries exhausted, an execution error), 124 timeout "
              "(watchdog), 130 cancelled, 3/4/5 bad input, missing file, I/O error.");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

}  // namespace warden::cli
