#include "tools/warden_grpc/client_events.h"

#include "common/canonical_json.h"

namespace warden::grpc_client {

Result<kernel::RunEvent> event_from_proto(const v1::RunEvent& e) {
  const std::string where = "the server's event at seq " + std::to_string(e.ledger_seq());
  kernel::RunEvent out;
  auto type = kernel::parse_run_event_type(e.type());
  if (!type) return fail(Errc::invalid_argument, where + ": unknown type \"" + e.type() + "\"");
  auto data = parse_json(e.data_json(), where);
  if (!data) return std::unexpected(data.error());
  if (!data->is_object()) return fail(Errc::invalid_argument, where + ": data_json is not a JSON object");
  out.event_id = e.event_id();
  out.run_id = e.run_id();
  out.type = *type;
  out.timestamp_ms = e.timestamp_ms();
  if (e.step_index() >= 0) out.step_index = e.step_index();
  if (!e.tool_name().empty()) out.tool = e.tool_name();
  out.data = std::move(*data);
  return out;
}

}  // namespace warden::grpc_client
