// `warden runner --server ADDR --token FILE [--state DIR] [--id ID] [--label K=V ...]`: the
// remote runner (runner/agent/runner_agent.h) on this machine, until SIGTERM or SIGINT.
#include <iostream>

#include "common/exit_codes.h"
#include "common/interrupts.h"
#include "runner/agent/runner_agent.h"
#include "runner/agent/state_dir.h"
#include "tools/warden/json_lines.h"
#include "tools/warden_grpc/client_commands.h"

namespace warden::grpc_client {
namespace {

struct RunnerArgs {
  ConnectOptions connect;
  std::string state;
  std::string id;
  std::vector<std::string> labels;  // K=V
  bool allow_network = false;
};

int run_runner(const RunnerArgs& a) {
  std::map<std::string, std::string> labels;
  for (const std::string& l : a.labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return cli::report_error(Error{Errc::invalid_argument, "--label " + l + ": expected KEY=VALUE"}, false, kUsage);
    labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  const std::string state = a.state.empty() ? agent::default_state_dir() : a.state;
  if (state.empty()) return cli::report_error(Error{Errc::invalid_argument, "--state: no HOME to keep the runner's key under; name a directory"}, false, kUsage);
  auto lock = agent::claim_state_dir(state);
  if (!lock) return cli::report_error(lock.error(), false);
  auto identity = agent::load_identity(state, a.id);
  if (!identity) return cli::report_error(identity.error(), false);
  InterruptToCancel interrupt;  // before any gRPC thread starts
  const std::string agent_id = identity->agent_id;
  agent::RunnerAgent runner(agent::AgentOptions{a.connect, state, std::move(labels), a.allow_network}, std::move(*identity));
  interrupt.on_interrupt([&runner] { runner.stop(); });
  const grpc::Status status = runner.run();
  if (status.ok()) return kOk;
  std::cerr << "warden runner: the server refused " << agent_id << "\n";
  return report_status(status, false);
}

}  // namespace

void add_runner_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunnerArgs>();
  auto* cmd = app.add_subcommand(
      "runner", "Run a runner for a `warden serve` (possibly on another machine): it enrols with its own Ed25519 key "
                "(kept in --state), heartbeats, and reconnects when the server goes away; SIGTERM or SIGINT stop it");
  add_connect_options(*cmd, args->connect);
  cmd->add_option("--state", args->state,
                  "Directory for the runner's key and id (created 0700; default $XDG_STATE_HOME/warden/runner or "
                  "~/.local/state/warden/runner)");
  cmd->add_option("--id", args->id,
                  "The runner's agent id, 1-128 of [A-Za-z0-9._:-] (default: made once from the host name and kept in --state)");
  cmd->add_option("--label", args->labels, "A label tasks may ask for, KEY=VALUE (repeatable)");
  cmd->add_flag("--allow-network", args->allow_network,
                "Run tasks whose sandbox profile has the network on (refused otherwise: the server picks the profile)");
  cmd->callback([&action, args] { action = [args] { return guarded(false, [&] { return run_runner(*args); }); }; });
}

}  // namespace warden::grpc_client
