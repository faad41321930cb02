// What a build needs before its first record: the ledger (created when missing, and signed
// by the session's key), the repository (seeded when new), the base commit, a branch that
// can still take the run's commits, a runner, and a run id the ledger has not seen. Each
// refusal here is an Error for the caller — nothing has been recorded yet.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernel/plan/blueprint.h"
#include "kernel/build/build_loop.h"
#include "kernel/judge/policy.h"
#include "kernel/build/repository.h"
#include "kernel/record/run_recovery.h"
#include "ledger/ledger.h"
#include "runner/check/local_runner.h"

namespace warden::kernel {

struct BuildSite {
  Ledger ledger;
  OpenedRepository repo;
  ObjectId base;                              // the commit the run starts from
  std::unique_ptr<Runner> own_runner;  // when the session gives no runner
  Runner* runner = nullptr;           // the session's, or own_runner
  // When own_runner is this host's sandbox: another runner like it, for a merge queue's
  // workers (a LocalRunner is a one-thread object). None for the session's or a channel runner.
  std::function<Result<std::unique_ptr<Runner>>()> another_runner;
  // Why a merge queue gets one job whatever --jobs says (none: it gets them).
  std::string one_job_why;
  // When the checks run on remote runners: a runner on this host's sandbox for held-out runs
  // (held_out.h), made when a plan holds them. Remote runners are never given a bundle.
  std::function<Result<std::unique_ptr<Runner>>()> held_out_runner;
  std::string run_id;
  std::vector<RecoveredRun> recovered;  // dead runs of this ledger whose end was recorded now
};

// `branch` is the branch the run's commits go on; `blueprint` (may be null) names the seed
// and the default base.
Result<BuildSite> prepare_build(const BlueprintSpec* blueprint, const std::string& branch, const Policy& policy,
                                const BuildOptions& options, KernelSession& session);

// The ledger at `dir`, created (with the signer's origin and key) when missing; refused when
// another key signs it.
Result<Ledger> open_kernel_ledger(const std::filesystem::path& dir, const NoteSigner& signer, Clock& clock);

}  // namespace warden::kernel
