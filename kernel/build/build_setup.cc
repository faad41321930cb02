#include "kernel/build/build_setup.h"

#include "kernel/record/records.h"
#include "runner/check/channel_runner.h"
#include "kernel/record/run_recovery.h"

namespace warden::kernel {
namespace {

// Run ids name runs in the ledger; two runs under one id would be one run to replay.
Result<bool> run_id_taken(const Ledger& ledger, const std::string& run_id) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  auto seqs = snap->run_records(run_id);  // the per-run index: no scan of the ledger
  if (!seqs) return std::unexpected(seqs.error());
  for (uint64_t seq : *seqs) {
    auto rec = snap->record_view(seq);
    if (!rec) return std::unexpected(rec.error());
    if (rec->kind == record_kind::run_status) return true;
  }
  return false;
}

}  // namespace

Result<Ledger> open_kernel_ledger(const std::filesystem::path& dir, const NoteSigner& signer, Clock& clock) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / "data.mdb", ec)) {
    LedgerCreateOptions create;
    create.origin = signer.name();
    create.verifier_key = signer.verifier().encoded();
    create.max_payload_bytes = uint64_t{8} << 20;
    create.signer = &signer;
    // Another process may create it first (several may share a ledger): then open theirs.
    if (Status st = Ledger::create(dir, create); !st && st.error().code != Errc::already_exists) {
      return std::unexpected(st.error());
    }
  }
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
  if (!ledger) return std::unexpected(ledger.error());
  if (ledger->verifier_key() != signer.verifier().encoded()) {
    return fail(Errc::verification_failed, "the ledger " + dir.string() + " is signed by another key than the one given (" +
                                               ledger->verifier_key() + ")");
  }
  return ledger;
}

Result<BuildSite> prepare_build(const BlueprintSpec* blueprint, const std::string& branch, const Policy& policy,
                                const BuildOptions& options, KernelSession& session) {
  auto ledger = open_kernel_ledger(options.ledger_dir, session.signer, session.clock);
  if (!ledger) return std::unexpected(ledger.error());
  std::optional<RepositorySeed> seed;
  if (blueprint && blueprint->seed) {
    seed = RepositorySeed{options.blueprint_dir / *blueprint->seed};
  } else if (options.create_empty_repo) {
    seed = RepositorySeed{};
  }
  auto repo = open_or_seed_repository(options.repo_dir, seed, session.clock);
  if (!repo) return std::unexpected(repo.error());
  // Runs of this ledger whose process died get their end recorded (and a branch left at an
  // unconfirmed commit moved back) before this run looks at the branch.
  auto recovered = recover_runs(*ledger, session.clock, session.ids, &repo->workspace.repo());
  if (!recovered) return std::unexpected(recovered.error().with_context("recording the end of interrupted runs"));
  const std::string base_rev = !options.base.empty() ? options.base : blueprint ? blueprint->base : std::string("HEAD");
  auto base = repo->workspace.repo().resolve_commit(base_rev);
  if (!base) return fail(Errc::not_found, "base revision: " + base.error().message());
  // A branch that already moved past the base (an earlier build) would only be refused at
  // the first commit; say so before anything runs or is recorded.
  if (auto tip = repo->workspace.repo().resolve_commit("refs/heads/" + branch); tip && !(*tip == *base)) {
    return fail(Errc::failed_precondition, "branch " + branch + " in " + options.repo_dir.string() + " is at " + tip->hex() +
                                          ", not at the base " + base->hex() +
                                          " (an earlier build?): build into a new repository or delete the branch");
  }

  std::unique_ptr<Runner> local;
  std::function<Result<std::unique_ptr<Runner>>()> another, held_out_runner;
  std::string one_job_why;
  // This host's sandbox under the policy's profile.
  auto local_runner = [&policy, cache = session.cache_dir, store = session.env_store,
                       independent = session.host_independent]() -> Result<LocalRunner> {
    auto profile = policy.sandbox_profile_with_programs();
    if (!profile) return std::unexpected(profile.error());
    RunnerOptions runner_options;
    runner_options.cache_dir = cache;
    runner_options.environment = policy.environment;
    runner_options.env_store = store;
    // Results are not reused across builds: a cached result would name output blobs this
    // ledger does not hold, and a golden run must record the same bytes cold or warm.
    runner_options.use_cache = false;
    runner_options.kernel_release_in_toolchain = !independent;
    return LocalRunner::create(std::move(*profile), runner_options);
  };
  if (!session.runner && session.runner_channel) {
    auto profile = policy.sandbox_profile_with_programs();
    if (!profile) return std::unexpected(profile.error());
    // The stricter of the run's and the policy's: a run may ask for more than its policy, never less.
    RunnerQuorum quorum = session.runner_quorum;
    if (policy.runner_quorum && policy.runner_quorum->k > quorum.k) quorum = *policy.runner_quorum;
    local = std::make_unique<ChannelRunner>(std::move(session.runner_channel), std::move(*profile), session.host_independent,
                                            quorum, policy.environment);
    held_out_runner = [local_runner]() -> Result<std::unique_ptr<Runner>> {
      auto made = local_runner();
      if (!made) return std::unexpected(made.error());
      return std::make_unique<LocalRunner>(std::move(*made));
    };
  } else if (!session.runner) {
    auto runner = local_runner();
    if (!runner) return std::unexpected(runner.error());
    auto first = std::make_unique<LocalRunner>(std::move(*runner));
    // Concurrent runs only where each has a pids cgroup: otherwise they would share one
    // process budget, and one check's forks could make another's fail.
    if (first->isolates_concurrent_runs()) {
      another = [first = first.get()]() -> Result<std::unique_ptr<Runner>> {
        auto made = first->sibling();
        if (!made) return std::unexpected(made.error());
        return std::make_unique<LocalRunner>(std::move(*made));
      };
    } else {
      one_job_why = "this host gives sandbox runs no pids cgroup of their own, so runs at once would share one process budget";
    }
    local = std::move(first);
  }

  std::string run_id = options.run_id.empty() ? session.ids.next_id("run") : options.run_id;
  auto taken = run_id_taken(*ledger, run_id);
  if (!taken) return std::unexpected(taken.error());
  if (*taken) {
    return fail(Errc::already_exists, "run " + run_id + " is already in the ledger " + options.ledger_dir.string() +
                                          " (a logical clock numbers runs from 1 in every process): give --run-id");
  }
  Runner* runner = session.runner ? session.runner : local.get();
  if (!another && !runner->concurrent() && one_job_why.empty()) one_job_why = "the runner takes one run at a time";
  return BuildSite{std::move(*ledger),      std::move(*repo),        *base,
                   std::move(local),        runner,                  std::move(another),
                   std::move(one_job_why),  std::move(held_out_runner), std::move(run_id),
                   std::move(*recovered)};
}

}  // namespace warden::kernel
