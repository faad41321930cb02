// The runs a server starts. Each run is a `warden build --json` child process over the
// server's state directory: the child opens the shared ledger read-write (LMDB serializes the
// writers of several processes), records everything a CLI build records, and registers its
// run marker (kernel/record/run_registry.h) like any build. The server writes no run's
// records (only the fleet's, service/fleet_recorder.h); it reads the run's records (service/shared_ledger.h) and learns from the child's
// standard output only that something new was recorded (a doorbell, not a source of truth).
//
// Why processes and not threads: a run that crashes, leaks or hangs takes nothing else
// down; a run is cancelled the way a CLI build is (SIGTERM: it kills its sandboxes and
// records `cancelled`); and when the server dies, its runs die with it (PR_SET_PDEATHSIG),
// leaving markers that the next server start turns into recorded ends
// (recover_interrupted_runs below) before it serves.
//
// Each run has a thread of its own that forks the child, reads its output and reaps it; the
// thread lives exactly as long as the child (PR_SET_PDEATHSIG is tied to the forking thread).
// Thread-safe: every public member may be called from any thread; mu_ guards runs_ and
// generation_. The destructor ends every live run as stop_all() does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/file.h"

namespace warden::service {

// What `warden build` is asked to do; the server has checked and resolved every path.
struct RunRequest {
  std::filesystem::path blueprint;  // a blueprint file, or
  std::string plan_sha256;          // a plan committed to the ledger
  std::filesystem::path repo;
  std::string executor;             // plan, command:CMD, remote:LABEL
  std::string policy;               // empty: the blueprint's
  std::string clock = "system";     // system, or logical (golden runs)
  int64_t step_timeout_ms = 0;      // 0: the plan's
  std::string run_id;               // empty: the child's id source picks it
  std::string owner;                // the caller who started it (its token's name)
  UniqueFd channel;                 // remote:LABEL only: the child's end of the executor channel
  UniqueFd runner_channel;          // checks on remote runners only: the child's end of its channel
  std::string runner_quorum;        // with runner_channel: "K/N", or empty
};

struct RunManagerOptions {
  std::filesystem::path warden_binary;  // the `warden` CLI beside warden-grpc
  std::filesystem::path state_dir;      // runs/ (logs, repository notes) lives here
  std::filesystem::path ledger_dir;
  std::filesystem::path cache_dir;      // the runner's base checkouts
  // How long start() waits for a child to record its run's start.
  std::chrono::milliseconds start_timeout{120'000};
  // Runs live at once (each is a process with its sandboxes); past it start() refuses.
  size_t max_live = 32;
};

class RunManager {
 public:
  explicit RunManager(RunManagerOptions options);
  ~RunManager();
  RunManager(const RunManager&) = delete;
  RunManager& operator=(const RunManager&) = delete;

  // Starts a child and waits until it has recorded its run's start; returns the run id.
  // When the child exits first (a blueprint it refuses, a run id the ledger has, a ledger it
  // cannot open), its own error comes back with the code its exit status names. Refused
  // with unavailable once stop_all() has begun, with limit_exceeded when max_live runs are live.
  Result<std::string> start(RunRequest request);

  // Asks the run's process to cancel (SIGTERM): it kills its sandboxes and records the run
  // `cancelled`. Runs another process drives (a CLI build on this ledger) are reached through
  // their marker. not_found when no live process drives `run_id`.
  Status cancel(const std::string& run_id);
  // Who started the live run `run_id` through this server (RunRequest::owner); nullopt for a
  // run this server does not drive.
  std::optional<std::string> owner(const std::string& run_id);
  // Waits until the run's process has ended, at most `timeout`; true if it has. A run this
  // server does not drive counts as ended when no live marker names it.
  bool wait_ended(const std::string& run_id, std::chrono::milliseconds timeout);
  // Whether a live process (ours, or another's by its marker) drives `run_id`.
  bool live(const std::string& run_id);
  // The result line `warden build --json` printed last for a run this server drove (kept in
  // STATE/runs/<id>.result.json across restarts); nullopt for others and live runs.
  std::optional<std::string> result(const std::string& run_id);

  // A counter that moves whenever any run prints a line or ends: watchers wait for it to move
  // past what they saw, then re-read the ledger.
  uint64_t generation();
  uint64_t wait_change(uint64_t seen, std::chrono::milliseconds timeout);

  // Stops taking runs, SIGTERMs every live child (each records `cancelled`), waits up to
  // `grace` for them, SIGKILLs any left and joins every thread. Returns how many were live.
  size_t stop_all(std::chrono::milliseconds grace);

 private:
  struct Run {
    pid_t pid = 0;               // 0 until forked; -1 when fork failed
    std::filesystem::path repo;
    std::string owner;
    std::string run_id;          // known once the child printed run_started
    bool ended = false;          // reaped
    int exit_code = -1;          // its exit status (128+signal when killed)
    std::string error_message;   // from its JSON error line, when it printed one
    std::string error_code;      // that line's code (errc_name)
    std::jthread thread;
  };

  void drive(Run& run, UniqueFd out);
  void bump_locked();

  RunManagerOptions options_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;                    // guarded by mu_
  int starting_ = 0;                         // start() calls waiting on their run; guarded by mu_
  uint64_t generation_ = 0;                  // guarded by mu_
  // Guarded by mu_ (a Run's fields too). Ended runs are dropped (their threads joined) when a
  // run starts and no start() holds one.
  std::vector<std::unique_ptr<Run>> runs_;
};

// Before a server serves: records the end (`interrupted`, with a run_failed event saying
// where it stopped) of every run whose process died with an earlier server, moving a branch
// left at an unconfirmed commit back (`warden run recover`, run with each run's repository
// from STATE/runs/<id>.repo). Returns one line per run recovered, for the log.
Result<std::vector<std::string>> recover_interrupted_runs(const RunManagerOptions& options);

}  // namespace warden::service
