// warden agents list|show|drain|forget and warden runner: the fleet's commands, which talk
// gRPC and so run as `warden-grpc client agents-...` and `warden-grpc runner`
// (tools/warden/warden_grpc_exec.h; tools/warden_grpc/client_agents.cc, runner_command.cc).
#include <algorithm>
#include <iostream>

#include "tools/warden/cli.h"
#include "tools/warden/warden_grpc_exec.h"

namespace warden::cli {
namespace {

constexpr const char* kAgentsUsage = R"(Usage: warden agents COMMAND --server ADDR [--token FILE] [--json]
  list              the fleet's agents: id, role, state, condition, task
  show AGENT        one agent in full: state, breaker, heartbeat, owner, key, labels
  drain AGENT       take it out of assignment (its current task finishes); --undrain puts it back
  forget AGENT      remove an idle agent's record and pins (a connected runner is cut off)
Each takes --help for its options.
)";

}  // namespace

void add_fleet_commands(CLI::App& app, Action& action) {
  auto* agents = app.add_subcommand("agents", "The fleet's agents on a server: list, show AGENT, drain AGENT [--undrain], "
                                              "forget AGENT (all with --server ADDR, --token FILE, --json)");
  agents->allow_extras();
  agents->prefix_command();
  agents->set_help_flag();  // each subcommand's --help is warden-grpc's
  agents->callback([&action, agents] {
    action = [args = agents->remaining()]() -> int {
      const std::string sub = args.empty() ? "" : args.front();
      if (sub == "list" || sub == "show" || sub == "drain" || sub == "forget") {
        std::vector<std::string> argv{"client", "agents-" + sub};
        argv.insert(argv.end(), args.begin() + 1, args.end());
        const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
        return exec_warden_grpc(argv, json);
      }
      if (sub == "--help" || sub == "-h") {
        std::cout << kAgentsUsage;
        return 0;
      }
      std::cerr << "warden: error: " << (sub.empty() ? "choose a command" : "unknown command " + sub) << "\n" << kAgentsUsage;
      return 2;
    };
  });

  auto* runner = app.add_subcommand(
      "runner", "Run a runner for a server, possibly on another machine: --server ADDR --token FILE [--state DIR] "
                "[--id ID] [--label K=V]...; it enrols with its own key, heartbeats, reconnects; SIGTERM stops it");
  runner->allow_extras();
  runner->prefix_command();
  runner->set_help_flag();
  runner->callback([&action, runner] {
    action = [args = runner->remaining()] {
      std::vector<std::string> argv{"runner"};
      argv.insert(argv.end(), args.begin(), args.end());
      return exec_warden_grpc(argv, false);
    };
  });
}

}  // namespace warden::cli
