#include "kernel/record/fleet_record.h"

#include <limits>

#include "common/json_reader.h"

namespace warden::kernel {

Json FleetEventRecord::to_json() const {
  return Json{{"store", store}, {"store_seq", store_seq}, {"event", event}};
}

Result<FleetEventRecord> FleetEventRecord::from_json(const Json& json) {
  JsonReader r(json, "fleet_event record");
  FleetEventRecord out;
  r.string("store", out.store);
  if (r.ok() && out.store.empty()) r.fail("store", "empty");
  r.unsigned_integer("store_seq", out.store_seq, 1, std::numeric_limits<uint64_t>::max());
  if (const Json* event = r.value("event", Json::value_t::object)) {
    out.event = *event;
    JsonReader e(*event, "fleet_event record: event", JsonDialect::null_is_value, Errc::invalid_argument);
    std::string type, agent;
    int64_t at = 0;
    e.string("type", type);
    e.string("agent", agent);
    e.integer("at_ms", at, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (e.ok() && (type.empty() || agent.empty())) e.fail(type.empty() ? "type" : "agent", "empty");
    // The other fields are the supervisor's to define: not judged here.
    if (!e.ok()) r.adopt(e.finish());
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden::kernel
