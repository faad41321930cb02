// `warden-grpc client agents-list|agents-show|agents-drain|agents-forget` (what `warden agents
// list|show|drain|forget --server ADDR` run): the fleet as a server's supervisor holds it
// (warden.v1.Agents, proto/fleet.proto). Text is one line per agent; --json is JSON Lines:
// an "agent" line per agent, then the result line.
#include <fleet.grpc.pb.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "common/exit_codes.h"
#include "tools/warden/json_lines.h"
#include "tools/warden/run_view.h"
#include "tools/warden_grpc/client_commands.h"

namespace warden::grpc_client {
namespace {

struct AgentsArgs {
  ConnectOptions connect;
  std::string agent_id;
  bool json = false;
  bool undrain = false;
};

Json agent_json(const v1::AgentInfo& a) {
  Json labels = Json::object();
  for (const auto& [k, v] : a.labels()) labels[k] = v;
  Json out = {{"id", a.id()},
              {"role", a.role()},
              {"labels", labels},
              {"state", a.state()},
              {"down", a.down()},
              {"drained", a.drained()},
              {"given_up", a.given_up()},
              {"breaker", a.breaker()},
              {"last_heartbeat_ms", a.last_heartbeat_ms()},
              {"owner", a.owner()},
              {"connected", a.connected()},
              {"version", a.version()}};
  if (!a.task_id().empty()) {
    out["task_id"] = a.task_id();
    out["claim_expires_ms"] = a.claim_expires_ms();
  }
  if (!a.key_sha256().empty()) out["key_sha256"] = a.key_sha256();
  if (a.given_up()) out["given_up_reason"] = a.given_up_reason();
  return out;
}

// What an operator reads first: given up, down, drained, circuit open, and for a runner
// whether its stream is open to this server.
std::string condition(const v1::AgentInfo& a) {
  if (a.given_up()) return "given-up";
  if (a.down()) return "down";
  if (a.drained()) return "drained";
  if (a.breaker() == "open") return "circuit-open";
  if (a.role() == "runner") return a.connected() ? "connected" : "not-connected";  // here; it may be to another server
  return "up";
}

void print_agent_line(const v1::AgentInfo& a) {
  std::cout << std::left << std::setw(24) << a.id() << " " << std::setw(8) << a.role() << " " << std::setw(9) << a.state()
            << " " << std::setw(12) << condition(a) << " " << (a.task_id().empty() ? "-" : a.task_id()) << "\n";
}

void print_agent_details(const v1::AgentInfo& a) {
  std::cout << "agent " << a.id() << "\n"
            << "  role       " << a.role() << "\n"
            << "  state      " << a.state() << " (" << condition(a) << ")\n"
            << (a.given_up() ? "  given up   " + a.given_up_reason() + "\n" : std::string())
            << "  breaker    " << a.breaker() << "\n"
            << "  heartbeat  " << cli::utc(a.last_heartbeat_ms()) << "\n"
            << "  owner      " << (a.owner().empty() ? "-" : a.owner()) << "\n"
            << "  key        " << (a.key_sha256().empty() ? "-" : a.key_sha256()) << "\n";
  if (!a.task_id().empty()) std::cout << "  task       " << a.task_id() << " (lease until " << cli::utc(a.claim_expires_ms()) << ")\n";
  for (const auto& [k, v] : a.labels()) std::cout << "  label      " << k << "=" << v << "\n";
}

template <typename Call>
int with_agents(const AgentsArgs& a, Call call) {
  auto connection = Connection::open(a.connect);
  if (!connection) return cli::report_error(connection.error(), a.json);
  auto agents = v1::Agents::NewStub(connection->channel());
  grpc::ClientContext context;
  connection->prepare(context, std::chrono::seconds(60));
  return call(*agents, context);
}

int list(const AgentsArgs& a) {
  return with_agents(a, [&](v1::Agents::Stub& agents, grpc::ClientContext& context) -> int {
    v1::ListAgentsResponse response;
    if (grpc::Status st = agents.List(&context, {}, &response); !st.ok()) return report_status(st, a.json);
    print_whole([&] {
      if (a.json) {
        for (const auto& agent : response.agents()) cli::print_item("agent", agent_json(agent));
        cli::print_json({{"count", response.agents_size()}});
        return;
      }
      if (response.agents().empty()) {
        std::cout << "no agents\n";
        return;
      }
      for (const auto& agent : response.agents()) print_agent_line(agent);
    });
    return kOk;
  });
}

int show(const AgentsArgs& a) {
  return with_agents(a, [&](v1::Agents::Stub& agents, grpc::ClientContext& context) -> int {
    v1::GetAgentRequest request;
    request.set_agent_id(a.agent_id);
    v1::AgentInfo info;
    if (grpc::Status st = agents.Get(&context, request, &info); !st.ok()) return report_status(st, a.json);
    print_whole([&] {
      if (a.json) return cli::print_json({{"agent", agent_json(info)}});
      print_agent_details(info);
    });
    return kOk;
  });
}

int drain(const AgentsArgs& a) {
  return with_agents(a, [&](v1::Agents::Stub& agents, grpc::ClientContext& context) -> int {
    v1::DrainAgentRequest request;
    request.set_agent_id(a.agent_id);
    request.set_drained(!a.undrain);
    v1::AgentInfo info;
    if (grpc::Status st = agents.Drain(&context, request, &info); !st.ok()) return report_status(st, a.json);
    print_whole([&] {
      if (a.json) return cli::print_json({{"agent", agent_json(info)}});
      std::cout << "agent " << info.id() << (a.undrain ? " takes tasks again" : " is drained: it takes no new task") << "\n";
    });
    return kOk;
  });
}

int forget(const AgentsArgs& a) {
  return with_agents(a, [&](v1::Agents::Stub& agents, grpc::ClientContext& context) -> int {
    v1::ForgetAgentRequest request;
    request.set_agent_id(a.agent_id);
    v1::ForgetAgentResponse response;
    if (grpc::Status st = agents.Forget(&context, request, &response); !st.ok()) return report_status(st, a.json);
    print_whole([&] {
      if (a.json) return cli::print_json({{"forgotten", a.agent_id}});
      std::cout << "agent " << a.agent_id << " forgotten: the next runner to enrol under its id is pinned afresh\n";
    });
    return kOk;
  });
}

void add(CLI::App& client, Action& action, const std::string& name, const std::string& help, bool takes_id,
         int (*run)(const AgentsArgs&), bool drain_flags = false) {
  auto args = std::make_shared<AgentsArgs>();
  auto* cmd = client.add_subcommand(name, help);
  if (takes_id) cmd->add_option("AGENT", args->agent_id, "The agent's id")->required();
  add_connect_options(*cmd, args->connect);
  if (drain_flags) cmd->add_flag("--undrain", args->undrain, "Put the agent back into assignment");
  cmd->add_flag("--json", args->json, "JSON Lines");
  cmd->callback([&action, args, run] { action = [args, run] { return guarded(args->json, [&] { return run(*args); }); }; });
}

}  // namespace

void add_client_agent_commands(CLI::App& client, Action& action) {
  add(client, action, "agents-list", "The fleet's agents: id, role, state, condition, task", false, list);
  add(client, action, "agents-show", "One agent in full: its state, breaker, heartbeat, owner, key and labels", true, show);
  add(client, action, "agents-drain", "Take an agent out of assignment (its current task finishes); --undrain puts it back",
      true, drain, true);
  add(client, action, "agents-forget", "Remove an idle agent's record and pins; a connected runner of that id is cut off",
      true, forget);
}

}  // namespace warden::grpc_client
