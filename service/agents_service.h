// warden.v1.Agents (proto/fleet.proto): operators list, inspect, drain and forget the fleet's
// agents. List and Get need the observer role, Drain and Forget admin. What it answers is the
// store's record decoded by the supervisor, plus whether a runner stream of that id is open
// to this server.
//
// Thread-safe: every call works on its own request and the Fleet, which is.
#pragma once

#include <fleet.grpc.pb.h>  // generated from proto/fleet.proto

#include "service/fleet.h"
#include "service/in_flight.h"
#include "service/tokens.h"

namespace warden::service {

// One agent as the service shows it.
v1::AgentInfo agent_info(const supervisor::AgentView& view, bool connected);

class AgentsService final : public v1::Agents::Service {
 public:
  // Borrows everything; all must outlive it.
  AgentsService(Fleet& fleet, InFlight& in_flight, const TokenTable& tokens)
      : fleet_(fleet), in_flight_(in_flight), tokens_(tokens) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListAgentsRequest*, v1::ListAgentsResponse*) override;
  grpc::Status Get(grpc::ServerContext*, const v1::GetAgentRequest*, v1::AgentInfo*) override;
  grpc::Status Drain(grpc::ServerContext*, const v1::DrainAgentRequest*, v1::AgentInfo*) override;
  grpc::Status Forget(grpc::ServerContext*, const v1::ForgetAgentRequest*, v1::ForgetAgentResponse*) override;

 private:
  Fleet& fleet_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
};

}  // namespace warden::service
