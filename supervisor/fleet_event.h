// What the supervisor did to the fleet, as typed records: an agent registered, a task
// assigned or delivered, an agent failed (missed heartbeats, a crash, a refused report), a
// restart decided, a circuit that changed state, an agent given up on, drained or forgotten.
// The supervisor appends each to the StateStore's event stream (one canonical JSON object per
// event), where operators and the ledger writer read them; decide() never does.
//
// Plain values; every function is safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden::supervisor {

enum class FleetEventType {
  registered,
  assigned,
  started,
  delivered,
  withdrawn,   // the task's claim was acked unrun: nobody waits for it any more; `reason` says why
  failed,      // the agent failed; `reason` says how, `task_id` names the task it held
  restart,     // a restart was decided: `delay_ms` of backoff, `attempt`
  given_up,    // past the restart intensity: never assigned again
  circuit,     // the agent's circuit breaker moved to `circuit`
  drained,     // an operator took the agent out of assignment
  forgotten,   // an operator removed the agent
  expired,     // a queued task removed unrun (its server restarted or is gone); `agent` names the
               // server that removed it ("server.<instance>"), `reason` why
};

std::string_view to_string(FleetEventType type);
std::optional<FleetEventType> parse_fleet_event_type(std::string_view name);

struct FleetEvent {
  FleetEventType type = FleetEventType::registered;
  std::string agent_id{};
  int64_t at_ms = 0;
  std::string task_id{};   // assigned, started, delivered, withdrawn, failed (when it held one)
  uint32_t attempt = 0;  // assigned: the claim's attempt; restart: the backoff's attempt
  bool started = false;  // assigned: the agent began at once (AssignScope::starts_at_once)
  int64_t delay_ms = 0;  // restart
  std::string circuit{};   // circuit: "closed", "open", "half_open"
  std::string reason{};    // withdrawn, failed, given_up, drained
  // registered, for an enrolled agent (a remote runner): its token's identity and its
  // Ed25519 public key (hex), so the ledger says which key each runner signs with.
  std::string owner{};
  std::string key{};

  bool operator==(const FleetEvent&) const = default;
};

// One canonical JSON object; fields that do not apply to the type are left out.
std::string encode(const FleetEvent& event);
// The inverse; invalid_argument for anything encode() would not have written.
Result<FleetEvent> decode_fleet_event(std::string_view bytes);

}  // namespace warden::supervisor
