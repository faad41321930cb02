// KernelSession: what every kernel entry point (build, propose, replay --rerun, pipeline)
// runs with, given once by its caller — the kernel's signing key, the clock and id source
// (system, or logical for golden runs), the runner's cache, a cancellation token and where
// progress goes. The kernel never reads time, randomness or ids from anywhere else, so a
// run's ledger bytes depend only on these and the run's inputs.
//
// The session holds references: the caller owns the clock, id source, signer and (when
// given) runner, and keeps them alive while the kernel runs. Not thread-safe: one kernel
// run at a time per session (clocks and id sources are not synchronized).
#pragma once

#include <filesystem>
#include <functional>
#include <stop_token>

#include "common/clock.h"
#include "common/file.h"
#include "common/random_source.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/build/work_ticker.h"
#include "ledger/note.h"
#include "runner/check/runner.h"

namespace warden::kernel {

struct KernelSession {
  KernelSession(Clock& clock, IdSource& ids, const NoteSigner& signer) : clock(clock), ids(ids), signer(signer) {}

  Clock& clock;
  IdSource& ids;
  // Draws the salts of held-out bundles (held_out.h); none: the kernel's CSPRNG. Golden runs
  // give a seeded one, so their ledgers repeat byte for byte.
  RandomSource* random = nullptr;
  const NoteSigner& signer;  // signs the ledger's checkpoints
  // The runner's base checkouts (searchable by the sandbox's uid); see RunnerOptions.
  std::filesystem::path cache_dir;
  // Where environments are found and built (runner/environment); empty: the default store.
  std::filesystem::path env_store;
  std::stop_token stop;                           // a stop request cancels the run
  std::function<void(const RunEvent&)> on_event;  // progress for people and machines
  // "Still working" notices while an executor or the checks run past a second: for people,
  // never recorded (work_ticker.h). Called from another thread than the build's.
  WorkingListener on_working;
  // Golden runs leave the host kernel's release out of the recorded toolchain, so their
  // ledgers are byte-identical on any host with the same packages.
  bool host_independent = false;
  // Who evaluates proposals. None: a LocalRunner (bwrap on this host) with the policy's
  // sandbox profile, or, with runner_channel, the runners `warden serve` governs. Tests give
  // a fake.
  Runner* runner = nullptr;
  // A connected unix socket to `warden serve` (runner/check/channel_runner.h): the build's checks
  // run on its remote runners, in the policy's sandbox profile. Taken by the build.
  UniqueFd runner_channel;
  // With runner_channel: the quorum the run asks for; the policy's (Policy::runner_quorum),
  // when stricter, holds instead.
  RunnerQuorum runner_quorum;
};

}  // namespace warden::kernel
