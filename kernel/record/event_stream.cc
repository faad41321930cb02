#include "kernel/record/event_stream.h"

#include <cstdio>
#include <ctime>

#include "common/sha256.h"
#include "kernel/record/records.h"

namespace warden::kernel {
namespace {

// The stream's spelling of an artifact; data that is not an artifact (a bug elsewhere, or a
// ledger older than this field set) shows as recorded.
Json artifact_data(const Json& data) {
  auto artifact = Artifact::from_json(data);
  if (!artifact) return data;
  Json j = {{"artifact_id", artifact->artifact_id},
            {"type", artifact->type},
            {"mime_type", artifact->mime_type},
            {"path", artifact->path},
            {"size_bytes", artifact->size_bytes},
            {"digest", artifact->digest.str()},
            {"created_at", artifact->created_at}};
  if (artifact->check) j["check"] = *artifact->check;
  return j;
}

}  // namespace

std::string iso8601_utc_ms(int64_t ms) {
  int64_t seconds = ms / 1000, millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[96];  // room for any int the format could see
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return buf;
}

Json stream_event_json(const RunEvent& event) {
  return {{"type", run_event_type_name(event.type)},
          {"event_id", event.event_id},
          {"run_id", event.run_id},
          {"timestamp", iso8601_utc_ms(event.timestamp_ms)},
          {"step_index", event.step_index ? Json(*event.step_index) : Json(nullptr)},
          {"tool_name", event.tool ? Json(*event.tool) : Json(nullptr)},
          {"data", event.type == RunEventType::artifact_created ? artifact_data(event.data) : event.data}};
}

Json stream_event_json(const executor::ExecutionEvent& event) {
  Json j = {{"type", executor::event_type_name(event.type)},
            {"run_id", event.run_id},
            {"timestamp", iso8601_utc_ms(event.timestamp_ms)},
            {"step_index", event.step},
            {"tool_name", event.stage.empty() ? Json(nullptr) : Json(event.stage)},
            {"data", event.payload}};
  // Invalid UTF-8 in a stage's output is replaced, as the printed line replaces it.
  j["event_id"] = sha256(j.dump(-1, ' ', false, Json::error_handler_t::replace)).hex().substr(0, 32);
  return j;
}

}  // namespace warden::kernel
