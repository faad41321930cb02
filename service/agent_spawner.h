// The agents `warden serve --agents agents.json` starts itself and keeps running: programs on
// the server's host (command executors, local tools) that the supervisor governs as it does
// remote runners, except that here the server also restarts them, OTP style. Each agent is
// registered when its process starts and heartbeats while the process lives; when it exits,
// the supervisor fails it and its RestartPolicy decides: start it again after the backoff
// (later still while its circuit is open), or give up for good past the restart intensity.
// Every start, exit, restart decision and circuit change is a fleet event, and so lands in
// the ledger (service/fleet_recorder.h).
//
// agents.json (invalid_argument naming the field for anything else):
//   {"agents": [{"id": "lint-bot", "command": ["/usr/bin/lint-bot", "--serve"],
//                "role": "executor", "labels": {"lang": "c"}, "env": {"K": "V"}}],
//    "restart": {"backoff": {"base_ms", "factor", "max_ms", "jitter"},
//                "intensity": {"max_restarts", "window_ms"},
//                "breaker": {"failure_threshold", "cool_off_ms"}}}
// `role` defaults to "executor"; `restart`, when given, replaces the server's restart policy
// (for every agent it supervises). The program runs in STATE/agents/<id>/ (made 0700), with
// PATH, HOME (that directory), WARDEN_AGENT_ID and WARDEN_SOCKET (the server's socket) and
// its `env`, nothing else of the server's environment; its stdout and stderr are appended to
// STATE/agents/<id>/log, up to 16 MiB a start. SIGTERM to the server stops every agent's
// process group; a server killed outright leaves them to be stopped by whoever kills it.
//
// Ownership: borrows the supervisor and its clock, which must outlive it; owns a thread per agent and one
// heartbeat thread, all joined by stop() (or the destructor). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <ostream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "supervisor/supervisor.h"

namespace warden::service {

struct SpawnedAgentSpec {
  std::string id;
  std::string role = "executor";
  std::vector<std::string> command;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> env;
};

struct AgentsFile {
  std::vector<SpawnedAgentSpec> agents;
  std::optional<supervisor::RestartPolicyConfig> restart;
};

// Reads agents.json (the format above). invalid_argument names the entry and field;
// not_found, io_error as read_file says.
Result<AgentsFile> load_agents_file(const std::filesystem::path& path);

class AgentSpawner {
 public:
  // The agents' directories go under `state_dir`/agents; `socket` is told to them;
  // progress lines ("agent X exited with status 3; restart in 200 ms") go to `log`, which
  // must be safe to write from several threads (std::cerr is).
  // `clock` is the supervisor's (restart decisions are on it).
  AgentSpawner(supervisor::Supervisor& supervisor, Clock& clock, std::filesystem::path state_dir,
               std::filesystem::path socket, std::ostream& log)
      : supervisor_(supervisor), clock_(clock), state_dir_(std::move(state_dir)), socket_(std::move(socket)), log_(log) {}
  ~AgentSpawner() { stop(); }
  AgentSpawner(const AgentSpawner&) = delete;
  AgentSpawner& operator=(const AgentSpawner&) = delete;

  // Starts every agent (each on a thread of its own). invalid_argument for two agents of one
  // id; io_error when an agent's directory cannot be made. Call once.
  Status start(const std::vector<SpawnedAgentSpec>& agents);
  // Stops every agent's process group and joins the threads.
  void stop();

  // How many times the agent's program was started (for tests and logs).
  int starts(const std::string& id) const;

 private:
  void supervise(const SpawnedAgentSpec& spec, std::stop_token stop);
  void heartbeats(std::stop_token stop);
  // Waits `wait`, or less when a stop comes; true when stopped.
  bool stopped_within(std::stop_token stop, std::chrono::milliseconds wait);
  void say(const std::string& line);

  supervisor::Supervisor& supervisor_;
  Clock& clock_;
  const std::filesystem::path state_dir_;
  const std::filesystem::path socket_;
  std::ostream& log_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::map<std::string, int> starts_;     // guarded by mu_
  std::map<std::string, bool> running_;   // guarded by mu_: whose process lives now
  std::vector<std::jthread> threads_;     // started by start(), joined by stop()
};

}  // namespace warden::service
