// The one event schema of every `--json` stream (docs/commands.md, "JSON Lines"): a build's, a
// proposal's and a pipeline's events all print as one RunEvent's fields, snake_case:
//   {"type", "event_id", "run_id", "timestamp", "step_index", "tool_name", "data"}
// every key on every event line; `type` is the event's type (run_started, step_started, ...,
// stage_started, transition, ...); `timestamp` is ISO 8601 UTC with milliseconds;
// step_index and tool_name are null where the event has none.
//
// This is how events are shown, not how they are recorded: a build's run_event records keep
// their ledger spelling (event_type, timestamp_ms; an artifact's camelCase fields), whose
// bytes the golden ledgers and every verifier hash. Pure functions, no state.
#pragma once

#include <cstdint>
#include <string>

#include "common/canonical_json.h"
#include "executor/events.h"
#include "kernel/record/run_lifecycle.h"

namespace warden::kernel {

// A build or proposal event. Its event_id is the recorded run_event's; an artifact_created
// event's data is the artifact in snake_case (artifact_id, mime_type, size_bytes, created_at).
Json stream_event_json(const RunEvent& event);

// A pipeline event. Pipeline events are not recorded one by one (their transitions are), so
// the event_id is derived from the event itself: the first 32 hex digits of the SHA-256 of
// its canonical JSON — stable across a replayed stream, distinct for distinct events.
// step_index is the run's step counter; tool_name the stage (null for run-level events).
Json stream_event_json(const executor::ExecutionEvent& event);

// "1970-01-01T00:00:00.000Z" for 0: milliseconds since the Unix epoch as ISO 8601 UTC.
std::string iso8601_utc_ms(int64_t ms);

}  // namespace warden::kernel
