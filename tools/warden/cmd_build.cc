// `warden build`: a blueprint to verified commits and a signed ledger — the kernel's main
// job. Progress goes to stdout as the run goes (steps done of total, the current step, every
// attempt's verdict); --json prints the run's events as JSON Lines instead (kernel/record/event_stream.h),
// then the summary as the result line.
// Ctrl-C (SIGINT) or SIGTERM cancels the run cleanly: sandboxes are killed, the ledger records
// the cancellation, and the branch keeps only accepted commits.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/clock.h"
#include "kernel/build/run_sources.h"
#include "kernel/build/build_loop.h"
#include "kernel/record/committed_plan.h"
#include "kernel/record/run_registry.h"
#include "tools/warden/cli.h"
#include "tools/warden/env_flags.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/run_view.h"
#include "tools/warden/signer_keys.h"
#include "tools/warden/working_line.h"

namespace warden::cli {

namespace {

struct BuildArgs {
  std::string blueprint, plan_sha256, out, repo, ledger, key, executor = "plan", policy, clock = "system", cache, run_id, environment, env_store;
  double step_timeout_s = 0;
  int jobs = 0;  // 0: one per CPU
  std::optional<int> executor_channel;
  std::optional<int> runner_channel;
  std::string runner_quorum;
  bool json = false;
  ExecutorSandboxOptions executor_sandbox;
};

// What the run builds: a blueprint's generated plan, or a plan committed to the ledger earlier.
struct BuildTarget {
  std::optional<kernel::BlueprintSpec> blueprint;
  std::optional<kernel::BuildPlan> plan;  // --plan
  std::string name;                       // the blueprint's or the plan's
  std::filesystem::path dir;              // where the blueprint's relative paths resolve
};

Result<BuildTarget> load_target(const BuildArgs& a, std::filesystem::path& ledger) {
  if (a.blueprint.empty() == a.plan_sha256.empty()) {
    return fail(Errc::invalid_argument, "give a BLUEPRINT or --plan SHA256 (a plan committed to the ledger), not both");
  }
  BuildTarget target;
  if (!a.blueprint.empty()) {
    auto blueprint = kernel::BlueprintSpec::load(a.blueprint);
    if (!blueprint) return std::unexpected(blueprint.error());
    target.name = blueprint->name;
    target.dir = std::filesystem::path(a.blueprint).parent_path();
    target.blueprint = std::move(*blueprint);
    return target;
  }
  // The plan is found in the ledger it was committed to, so that ledger must be named.
  if (ledger.empty()) return fail(Errc::invalid_argument, "--plan: name the ledger that holds the committed plan (--ledger or --out)");
  auto digest = Digest::parse(a.plan_sha256);
  if (!digest) return fail(Errc::invalid_argument, "--plan: " + a.plan_sha256 + " is not a SHA-256 digest (64 hex digits)");
  if (std::error_code ec; !std::filesystem::exists(ledger / "data.mdb", ec)) {
    return fail(Errc::not_found, "--plan: no ledger at " + ledger.string() + " to find plan " + a.plan_sha256 + " in");
  }
  LogicalClock clock;
  auto opened = Ledger::open(ledger, Ledger::Mode::read_only, clock);
  if (!opened) return std::unexpected(opened.error());
  auto plan = kernel::find_committed_plan(*opened, *digest);
  if (!plan) return std::unexpected(plan.error());
  target.name = plan->name;
  target.dir = std::filesystem::current_path();
  target.plan = std::move(*plan);
  return target;
}

int run(const BuildArgs& a) {
  std::filesystem::path ledger = !a.ledger.empty() ? std::filesystem::path(a.ledger)
                                 : !a.out.empty()  ? std::filesystem::path(a.out) / "ledger"
                                                   : std::filesystem::path();
  auto target = load_target(a, ledger);
  if (!target) return report_error(target.error(), a.json);
  const std::filesystem::path out = a.out.empty() ? std::filesystem::path("warden-out") / target->name : std::filesystem::path(a.out);
  const std::filesystem::path repo = a.repo.empty() ? out / "repo" : std::filesystem::path(a.repo);
  if (ledger.empty()) ledger = out / "ledger";
  // The out directory is made only when something goes in it: a build given its repository
  // and ledger (as `warden serve` gives its runs) leaves no empty warden-out/ behind.
  if (a.repo.empty() || a.ledger.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return report_error(Error{Errc::io_error, "creating " + out.string() + ": " + ec.message()}, a.json);
  }

  // A committed plan is built under the policy named here, else its own, else its language's.
  std::optional<kernel::Policy> plan_policy;
  if (target->plan) {
    const std::string name = !a.policy.empty()                ? a.policy
                             : !target->plan->policy.empty()  ? target->plan->policy
                                                              : std::string(kernel::default_policy_for(target->plan->language));
    auto loaded = kernel::Policy::load(name);
    if (!loaded) return report_error(loaded.error().with_context("policy " + name), a.json);
    plan_policy = std::move(*loaded);
  }

  auto sources = kernel::RunSources::for_build(a.clock);
  if (target->blueprint && target->blueprint->held_out) warn_logical_held_out(a.clock);
  if (!sources) return report_error(sources.error(), a.json);
  // Close-on-exec before any process starts.
  std::optional<UniqueFd> runner_channel;
  if (a.runner_channel) {
    auto adopted = adopt_channel(*a.runner_channel, "--runner-channel");
    if (!adopted) return report_error(adopted.error(), a.json);
    runner_channel.emplace(std::move(*adopted));
  }

  // The executor's sandbox passes its preflight before the ledger's directory or key is made.
  auto proposer = make_proposer(a.executor, target->dir, a.executor_sandbox, a.executor_channel);
  if (!proposer) return report_error(proposer.error(), a.json);
  auto signer = signer_for_ledger(ledger, a.key, "warden.local/" + target->name, "--key");
  if (!signer) return report_error(signer.error(), a.json);

  kernel::BuildOptions options;
  options.repo_dir = repo;
  options.ledger_dir = ledger;
  options.blueprint_dir = target->dir;
  options.create_empty_repo = target->plan.has_value();  // a plan has no seed
  options.policy = a.policy;
  if (a.step_timeout_s > 0) options.step_timeout_ms = static_cast<int64_t>(std::clamp(a.step_timeout_s, 0.001, 86400.0) * 1000);
  options.run_id = a.run_id;
  options.environment = a.environment;
  options.jobs = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  CancelOnSignal cancel;
  std::optional<kernel::RunRegistration> registration;
  kernel::KernelSession session(*sources->clock, *sources->ids, *signer);
  session.random = sources->random.get();
  if (runner_channel) session.runner_channel = std::move(*runner_channel);
  if (!a.runner_quorum.empty()) {
    if (!a.runner_channel) {
      return report_error(Error{Errc::invalid_argument, "--runner-quorum: only checks on remote runners (--runner-channel) have a quorum"}, a.json);
    }
    auto quorum = RunnerQuorum::parse(a.runner_quorum);
    if (!quorum) return report_error(quorum.error(), a.json);
    session.runner_quorum = *quorum;
  }
  session.cache_dir = a.cache.empty() ? default_cache_dir() : a.cache;
  session.env_store = a.env_store;
  session.stop = cancel.token();
  session.host_independent = a.clock == "logical";
  if (!a.json) session.on_working = working_lines();
  BuildProgress progress;
  session.on_event = [&](const kernel::RunEvent& ev) {
    if (ev.type == kernel::RunEventType::run_started && !registration) {
      if (auto r = kernel::RunRegistration::create(ledger, ev.run_id)) registration.emplace(std::move(*r));
    }
    if (ev.type == kernel::RunEventType::run_started && !a.json) {
      BuildHeader header{target->name, ev.run_id, (*proposer)->name(), std::nullopt, repo.string(), ledger.string()};
      if (auto sandbox = (*proposer)->confinement()) {
        header.executor_sandbox = "profile " + sandbox->profile + " " + sandbox->profile_sha256.str() + ", network " +
                                  (sandbox->network ? "on" : "off");
      }
      print_build_header(header);
    }
    print_build_event(ev, a.json, progress);
  };
  auto summary = target->plan ? kernel::run_plan(*target->plan, *plan_policy, options, session, **proposer)
                              : kernel::run_build(*target->blueprint, options, session, **proposer);
  if (!summary) return report_error(summary.error(), a.json);
  // The run's end is durable (the summary exists only after it was recorded and signed).
  if (registration) registration->ended();
  if (!a.json) print_recovered(summary->recovered);
  if (a.json) {
    print_json(summary->to_json());
  } else {
    print_build_summary(summary->to_json(), repo.string(), ledger.string());
    // Why the last refusal's checks did not pass, when a run ended refused.
    if (summary->status == kernel::RunStatus::refused && !summary->verdicts.empty()) {
      for (const auto& e : summary->verdicts.back().checks_not_passing) std::cout << kernel::describe(e, ledger.string());
    }
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
  cmd->add_option("blueprint", a->blueprint, "BlueprintSpec JSON (e.g. examples/calculator/blueprint.json)");
  cmd->add_option("--plan", a->plan_sha256,
                  "Instead of a blueprint: build the plan with this SHA-256 that `warden plan commit` (or an earlier "
                  "build) committed to the ledger (--ledger, or --out's); it is re-hashed, re-verified and recorded in "
                  "the run. The repository starts empty unless --repo names one");
  cmd->add_option("--out", a->out, "Where the repository and ledger go by default (default warden-out/<name>)");
  cmd->add_option("--repo", a->repo, "Git repository to build in (default <out>/repo; created from the blueprint's seed)");
  cmd->add_option("--ledger", a->ledger, "Ledger directory (default <out>/ledger; created when missing, with its parents)");
  cmd->add_option("--key", a->key,
                  "Signer key file (default: the ledger's LEDGER/signer.key, generated with a new ledger; a new ledger "
                  "keeps a copy of a given key there, and LEDGER/signer.pub either way)");
  cmd->add_option("--executor", a->executor,
                  "Who proposes: 'plan' (the plan's own content, no AI), 'command:CMD' (CMD reads the step as JSON "
                  "on stdin, writes a Diff JSON or a git patch) or 'remote:LABEL' (with --executor-channel)");
  cmd->add_option("--executor-channel", a->executor_channel,
                  "FD of a connected unix stream socket to a remote executor's relay: how `warden serve` runs builds "
                  "for executors attached over gRPC (JSON Lines; executor/channel_proposer.h). Not for direct use");
  cmd->add_option("--runner-channel", a->runner_channel,
                  "FD of a connected unix stream socket to `warden serve`: the build's checks run on the remote "
                  "runners it governs (JSON Lines; runner/check/channel_runner.h). Not for direct use");
  cmd->add_option("--runner-quorum", a->runner_quorum,
                  "K/N with --runner-channel: the checks run on N remote runners of distinct identities and count once "
                  "K of them return the same result (default 1/1; a policy's runner_quorum, if stricter, holds)");
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
  cmd->add_option("--jobs,-j", a->jobs,
                  "A merge-queue plan's (merge_queue_depth) concurrent proposals and sandbox runs (default: one per CPU). "
                  "It changes how long the build takes, never what the ledger records; a sequential plan ignores it")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--step-timeout", a->step_timeout_s, "Watchdog budget per step in seconds (default: the plan's, 30)");
  cmd->add_option("--cache", a->cache, "Runner cache for base checkouts (default /var/cache/warden as root, else ~/.cache/warden)");
  cmd->add_option("--environment", a->environment, std::string(kEnvironmentFlagHelp));
  cmd->add_option("--env-store", a->env_store, std::string(kEnvStoreFlagHelp));
  cmd->add_option("--run-id", a->run_id, "Run id (default: from the id source)");
  cmd->add_flag("--json", a->json, "Print the run's events as JSON Lines, then the summary as the result line (docs/commands.md: JSON Lines)");
  cmd->footer("Exit: 0 completed, 1 failed (a refused plan, retries exhausted, an execution error, a branch already past "
              "the base), 124 timeout "
              "(watchdog), 130 cancelled, 3/4/5 bad input, missing file, I/O error.\nWith --server ADDR [--token FILE]: "
              "the server builds (BLUEPRINT a name it serves or a self-contained file) and this prints its events and "
              "summary as here (warden-grpc client build --help lists the options).");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

}  // namespace warden::cli
