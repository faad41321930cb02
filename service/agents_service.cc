#include "service/agents_service.h"

#include "common/encoding.h"
#include "common/sha256.h"
#include "service/grpc_status.h"
#include "store/record_checks.h"

namespace warden::service {
namespace {

// An id the store could never hold is the caller's mistake, said before any store call.
grpc::Status check_agent_id(const std::string& id) {
  if (auto ok = store::check_id(id, "agent_id"); !ok) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ok.error().message);
  return grpc::Status::OK;
}

}  // namespace

v1::AgentInfo agent_info(const supervisor::AgentView& view, bool connected) {
  v1::AgentInfo info;
  info.set_id(view.record.id);
  info.set_role(view.record.role);
  for (const auto& [k, v] : view.record.labels) (*info.mutable_labels())[k] = v;
  info.set_state(std::string(supervisor::to_string(view.state)));
  info.set_down(view.down);
  info.set_drained(view.drained);
  info.set_given_up(view.given_up);
  info.set_given_up_reason(view.given_up_reason);
  info.set_breaker(std::string(supervisor::to_string(view.breaker)));
  info.set_task_id(view.task_id);
  info.set_last_heartbeat_ms(view.record.last_heartbeat_ms);
  info.set_claim_expires_ms(view.claim_expires_ms);
  info.set_owner(view.owner);
  if (auto key = from_hex(view.key); key && !view.key.empty()) info.set_key_sha256(sha256(*key).str());
  info.set_version(view.record.version);
  info.set_connected(connected);
  return info;
}

grpc::Status AgentsService::List(grpc::ServerContext* context, const v1::ListAgentsRequest*, v1::ListAgentsResponse* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  if (!tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto agents = fleet_.supervisor().agents();
  if (!agents) return to_status(agents.error());
  for (const auto& view : *agents) *out->add_agents() = agent_info(view, fleet_.sessions().connected(view.record.id));
  return grpc::Status::OK;
}

grpc::Status AgentsService::Get(grpc::ServerContext* context, const v1::GetAgentRequest* request, v1::AgentInfo* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  if (!tokens_.authorize(*context, Role::observer, denied)) return denied;
  if (auto bad = check_agent_id(request->agent_id()); !bad.ok()) return bad;
  auto view = fleet_.supervisor().agent(request->agent_id());
  if (!view) return to_status(view.error());
  if (!*view) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no agent " + request->agent_id());
  *out = agent_info(**view, fleet_.sessions().connected(request->agent_id()));
  return grpc::Status::OK;
}

grpc::Status AgentsService::Drain(grpc::ServerContext* context, const v1::DrainAgentRequest* request, v1::AgentInfo* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  if (!tokens_.authorize(*context, Role::admin, denied)) return denied;
  if (auto bad = check_agent_id(request->agent_id()); !bad.ok()) return bad;
  if (Status st = fleet_.supervisor().drain(request->agent_id(), request->drained()); !st) return to_status(st.error());
  if (!request->drained()) fleet_.wake();  // back in assignment: it may take a task now
  auto view = fleet_.supervisor().agent(request->agent_id());
  if (!view) return to_status(view.error());
  if (!*view) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no agent " + request->agent_id());
  *out = agent_info(**view, fleet_.sessions().connected(request->agent_id()));
  return grpc::Status::OK;
}

grpc::Status AgentsService::Forget(grpc::ServerContext* context, const v1::ForgetAgentRequest* request,
                                   v1::ForgetAgentResponse*) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  if (!tokens_.authorize(*context, Role::admin, denied)) return denied;
  if (auto bad = check_agent_id(request->agent_id()); !bad.ok()) return bad;
  if (Status st = fleet_.supervisor().forget(request->agent_id()); !st) return to_status(st.error());
  // A runner still connected under the forgotten id loses its stream: its pins are gone,
  // and whoever enrols the id next is pinned afresh.
  fleet_.sessions().disconnect(request->agent_id());
  return grpc::Status::OK;
}

}  // namespace warden::service
