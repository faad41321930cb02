// The fleet a `warden serve` process governs: its state store (LMDB in the state directory
// by default, or a Redis several servers share), the Supervisor over it, and the one loop
// thread that keeps the fleet moving: every tick it fails the agents whose heartbeats stopped
// (or whose claims lapsed) and assigns queued tasks to idle agents. It also knows which
// runner streams are open to this process (RunnerSessions), so that an operator's forget and
// a runner enrolling again elsewhere end the stream the agent had.
//
// Readiness: ready() is true while the loop runs and its last tick reached the store; the
// server reports it as the health of warden.v1.Agents and warden.v1.Runners.
//
// Ownership: a Fleet owns its store, supervisor and loop thread; it borrows the clock and
// random source given at open(), which must outlive it. The destructor stops the loop.
// Thread-safe: every method may be called from any thread, but start() and stop() from the
// owner's thread only.
#pragma once

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/random_source.h"
#include "store/state_store.h"
#include "supervisor/supervisor.h"

namespace warden::service {

struct FleetOptions {
  // "lmdb" (the default: STATE/fleet, an embedded store this process alone writes to),
  // "redis://HOST:PORT[/DB]" or "unix:PATH" (a Redis server several `warden serve` share).
  std::string store = "lmdb";
  std::filesystem::path state_dir;
  std::string redis_prefix = "warden:";
  supervisor::SupervisorConfig supervisor;
  // How often the loop looks for failed agents and queued tasks when nothing wakes it.
  std::chrono::milliseconds tick{100};
  // A runner task queued this long ago and still not done is expired by whichever server
  // sweeps first: its server is gone for good (a server that restarts expires its own at
  // once), or no runner took it in all that time.
  std::chrono::milliseconds task_expiry{std::chrono::hours(1)};
  // How often the loop sweeps the store for such tasks.
  std::chrono::milliseconds sweep_every{std::chrono::seconds(2)};
};

// invalid_argument naming the bad store spec, io_error (store unreachable), corrupt.
Result<std::unique_ptr<store::StateStore>> open_fleet_store(const FleetOptions& options);

// Which runner streams are open here, by agent id. A stream registers itself when its runner
// has enrolled and leaves when it ends; a newer stream for the same id supersedes the older,
// which is cancelled. Thread-safe.
class RunnerSessions {
 public:
  // The stream of `context` now speaks for `agent_id`; any earlier one of that id is
  // cancelled. Returns the session's number, for leave(); 0 once disconnect_all() has run
  // (the server is stopping: a runner that reconnects at once must not enrol again here).
  uint64_t enter(const std::string& agent_id, grpc::ServerContext* context);
  // The session ends; true when it was still the agent's current one (no newer stream took
  // the agent over), so the caller may fail the agent for its stream's end.
  bool leave(const std::string& agent_id, uint64_t session);
  bool connected(const std::string& agent_id) const;
  // Cancels the agent's stream, if one is open (the agent was forgotten).
  void disconnect(const std::string& agent_id);
  // Cancels every stream and refuses new ones (the server stops).
  void disconnect_all();
  // Why this registry cancelled `session`'s stream (superseded, forgotten, the server
  // stopping), or empty when it did not: a stream cancelled otherwise was cut by its runner
  // or the network. Forgotten once read.
  std::string cut_reason(uint64_t session);

 private:
  struct Session {
    uint64_t number = 0;
    grpc::ServerContext* context = nullptr;
  };
  void cut_locked(const Session& session, std::string why);
  mutable std::mutex mu_;
  std::map<std::string, Session> live_;  // guarded by mu_
  std::map<uint64_t, std::string> cut_;  // guarded by mu_: why each cancelled session was, until read
  uint64_t next_ = 1;                    // guarded by mu_
  bool closing_ = false;                 // guarded by mu_
};

class Fleet {
 public:
  // Opens the store and makes the supervisor; start() starts the loop. `on_ready` is called
  // from the loop whenever readiness changes (true after the first tick that reached the
  // store and whose `after_tick` succeeded), with the reason when it is false because something
  // failed (empty when stop() ends the loop).
  static Result<std::unique_ptr<Fleet>> open(const FleetOptions& options, Clock& clock, RandomSource& random,
                                             std::function<void(bool ready, const std::string& why)> on_ready);
  // Starts the loop (once). `after_tick`, if given, runs on the loop's thread after each pass
  // (the fleet's recorder copies the pass's events into the ledger); its error counts as the
  // pass's. `on_assigned`, if given, gets each pass's assignments on the loop's thread (the
  // remote runners' tasks go out on their streams).
  void start(std::function<Status()> after_tick = {},
             std::function<void(const std::vector<supervisor::Assignment>&)> on_assigned = {},
             std::function<void(const std::vector<store::Task>&)> on_expired = {});
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  supervisor::Supervisor& supervisor() { return *supervisor_; }
  store::StateStore& store() { return *store_; }
  RunnerSessions& sessions() { return sessions_; }
  const FleetOptions& options() const { return options_; }
  // Runs the next tick now (a task was enqueued, an agent became idle).
  void wake();
  // The fleet's clock: what a queued task's enqueued_ms is read from.
  int64_t now_ms() { return clock_.now_ms(); }
  // Stops the loop (idempotent); ready() is false from then on.
  void stop();
  bool ready() const { return ready_.load(); }
  // "lmdb STATE/fleet" or the Redis address, for logs and errors.
  std::string describe() const;
  // The store as the ledger's fleet_event records name it: "lmdb" (the state directory's own)
  // or the Redis address with its key prefix.
  std::string store_name() const;
  // The kind of the check tasks this server queues for its runners: "runner.<instance>", or
  // with an owner "runner.<instance>:<owner>" (one member of a quorum; empty when the owner
  // cannot be part of a kind). Only runners connected to this server take them, and this
  // server assigns only those: a task's result must come back through the server whose build
  // waits for it, which several servers on one Redis would otherwise break.
  std::string runner_task_kind(std::string_view owner = {}) const;

 private:
  Fleet(FleetOptions options, std::string instance, Clock& clock, std::unique_ptr<store::StateStore> store,
        std::unique_ptr<supervisor::Supervisor> sup, std::function<void(bool, const std::string&)> on_ready);
  void loop();
  // One pass: detect failures, assign, and when due sweep; the first error, or ok.
  Status tick();
  // Expires the runner tasks nobody will take: this server's own queued before this process
  // started (their builds died with it), and anyone's past options_.task_expiry. Each gets an
  // `expired` fleet event; on_expired_ hears of them.
  Status sweep();

  const FleetOptions options_;
  std::string instance_;  // made once per state directory (STATE/server.id): names this server's runner tasks
  Clock& clock_;
  const int64_t started_ms_;     // when this process opened the fleet, by clock_
  int64_t next_sweep_ms_ = 0;    // the loop thread's alone
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<supervisor::Supervisor> supervisor_;
  std::function<void(bool, const std::string&)> on_ready_;
  std::function<Status()> after_tick_;  // set by start(), before the loop runs
  std::function<void(const std::vector<supervisor::Assignment>&)> on_assigned_;  // likewise
  std::function<void(const std::vector<store::Task>&)> on_expired_;             // likewise
  RunnerSessions sessions_;
  std::atomic<bool> ready_{false};

  std::mutex mu_;
  std::condition_variable wake_cv_;
  bool woken_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread loop_;       // started by start(); joined by stop()
};

}  // namespace warden::service
