#include "supervisor/fleet_event.h"

#include <array>
#include <limits>
#include <utility>

#include "common/canonical_json.h"
#include "common/json_reader.h"

namespace warden::supervisor {
namespace {

constexpr std::array<std::pair<FleetEventType, std::string_view>, 12> kNames{{
    {FleetEventType::registered, "registered"},
    {FleetEventType::assigned, "assigned"},
    {FleetEventType::started, "started"},
    {FleetEventType::delivered, "delivered"},
    {FleetEventType::withdrawn, "withdrawn"},
    {FleetEventType::failed, "failed"},
    {FleetEventType::restart, "restart"},
    {FleetEventType::given_up, "given_up"},
    {FleetEventType::circuit, "circuit"},
    {FleetEventType::drained, "drained"},
    {FleetEventType::forgotten, "forgotten"},
    {FleetEventType::expired, "expired"},
}};

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

}  // namespace

std::string_view to_string(FleetEventType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return "unknown";
}

std::optional<FleetEventType> parse_fleet_event_type(std::string_view name) {
  for (const auto& [t, n] : kNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

std::string encode(const FleetEvent& event) {
  Json json = {{"type", to_string(event.type)}, {"agent", event.agent_id}, {"at_ms", event.at_ms}};
  if (!event.task_id.empty()) json["task"] = event.task_id;
  if (event.attempt != 0) json["attempt"] = event.attempt;
  if (event.started) json["started"] = true;
  if (event.delay_ms != 0) json["delay_ms"] = event.delay_ms;
  if (!event.circuit.empty()) json["circuit"] = event.circuit;
  if (!event.reason.empty()) json["reason"] = event.reason;
  if (!event.owner.empty()) json["owner"] = event.owner;
  if (!event.key.empty()) json["key"] = event.key;
  // Ids reach here checked (store/record_checks.h) and reasons escaped, so canonicalization
  // succeeds; should a string still be invalid UTF-8, it is written with U+FFFD rather than
  // throwing from nlohmann's strict dump.
  auto canonical = canonicalize(json);
  if (canonical) return std::move(*canonical);
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<FleetEvent> decode_fleet_event(std::string_view bytes) {
  auto json = parse_json(bytes, "fleet event");
  if (!json) return std::unexpected(json.error());
  JsonReader r(*json, "fleet event");
  FleetEvent event;
  std::string type;
  r.string("type", type);
  r.string("agent", event.agent_id);
  r.integer("at_ms", event.at_ms, std::numeric_limits<int64_t>::min(), kMaxInt);
  r.string("task", event.task_id, false);
  uint64_t attempt = 0;
  r.unsigned_integer("attempt", attempt, 0, std::numeric_limits<uint32_t>::max(), false);
  event.attempt = static_cast<uint32_t>(attempt);
  r.boolean("started", event.started, false);
  r.integer("delay_ms", event.delay_ms, 0, kMaxInt, false);
  r.string("circuit", event.circuit, false);
  r.string("reason", event.reason, false);
  r.string("owner", event.owner, false);
  r.string("key", event.key, false);
  if (auto done = r.finish(); !done) return std::unexpected(done.error());
  auto parsed = parse_fleet_event_type(type);
  if (!parsed) return fail(Errc::invalid_argument, "fleet event.type: unknown type \"" + type + "\"");
  event.type = *parsed;
  return event;
}

}  // namespace warden::supervisor
