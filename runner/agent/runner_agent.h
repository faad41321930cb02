// The remote runner: a runner that other machines start and the kernel governs. It enrols
// with a `warden serve` over warden.v1.Runners (proto/fleet.proto) by signing the server's
// challenge with its key (runner/agent/state_dir.h), then heartbeats until stopped. A lost
// server is retried with backoff (1 s doubling to 30 s, with jitter); an enrolment the server
// refuses for good (a pinned id, a token without the runner role) ends run() with the
// server's status.
//
// Check tasks (runner/check/remote_run.h): the runner fetches the git objects of the task's
// trees it lacks into STATE/objects.git (each checked against its id as it is stored), runs
// the checks with a LocalRunner in its own bubblewrap sandbox (its own preflight, base
// checkouts under STATE/cache), signs the result with its key over the claim's nonce, and
// answers; a task it cannot run is reported as failed. One task at a time, on a worker
// thread, while the calling thread heartbeats; a stream that ends stops the task's checks.
// The runner refuses a task whose profile it does not accept (runner/agent/
// profile_acceptance.h) and any tree naming "..", ".git" or a path with "/" (a hand-made tree
// that a checkout would write outside its directory).
//
// Threads: run() blocks the calling thread; stop() may be called from any thread (a signal
// handler's thread) and makes run() return. Progress goes to stderr, one line per event.
#pragma once

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "client/connection.h"
#include "runner/agent/state_dir.h"

namespace warden::agent {

struct AgentOptions {
  client::ConnectOptions connect;
  std::filesystem::path state;                // the runner's state directory, claimed
  std::map<std::string, std::string> labels;  // tasks may ask for them
  bool allow_network = false;                 // accept task profiles with the network on
};

class RunnerAgent {
 public:
  RunnerAgent(AgentOptions options, RunnerIdentity identity);
  ~RunnerAgent();
  RunnerAgent(const RunnerAgent&) = delete;
  RunnerAgent& operator=(const RunnerAgent&) = delete;

  // Serves until stop() (OK) or until the server refuses the runner for good (its status:
  // UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT or UNIMPLEMENTED).
  grpc::Status run();
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::agent
