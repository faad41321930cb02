// A fleet event as the ledger holds it: what the agent supervisor did to the fleet — an agent
// registered, a task assigned or delivered, an agent failed, a restart decided, a circuit that
// changed — copied from the fleet's state store into the server's ledger by `warden serve`
// (service/fleet_recorder.h), so auditors see the fleet's history beside the decisions.
// decide() never reads these records; replay checks their schema and that the events of each
// store follow one another without a gap.
//
// The kernel does not depend on the supervisor: the event is kept as the supervisor wrote it
// (supervisor/fleet_event.h), and checked here only for the fields every event has.
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::kernel {

namespace record_kind {
inline constexpr std::string_view fleet_event = "fleet_event";
}  // namespace record_kind

struct FleetEventRecord {
  static constexpr std::string_view kind = record_kind::fleet_event;
  std::string store;       // the store it came from: "lmdb", or the Redis address and key prefix
  uint64_t store_seq = 0;  // its sequence number in that store's event stream (from 1)
  Json event;              // an object: "type" and "agent" strings, "at_ms" an integer, and more

  Json to_json() const;
  // invalid_argument naming the field that does not hold.
  static Result<FleetEventRecord> from_json(const Json& json);
};

}  // namespace warden::kernel
