// A pipeline run's events read back from its records, in the one event vocabulary of every
// stream (kernel/record/event_stream.h): the executor's ExecutionEvents (stage_started,
// stage_completed, stage_failed, interrupt_raised, transition, checkpoint_created,
// pipeline_completed), exactly as the live executor emitted them when it wrote each record
// (executor/state_machine.cc), so a watch shows what `warden pipeline run --json` printed,
// event ids included.
//
// Each record stands alone (every one carries its run and step), so a watch may start at any
// record. What each shows, in the order the executor emitted it:
//   pipeline_step      stage_started of each stage, then stage_completed or stage_failed of
//                      each (none for a stage that paused), at the step before it; then
//                      interrupt_raised when a stage paused (the first, as the executor keeps it)
//   transition         transition
//   checkpoint         checkpoint_created
//   pipeline_end       pipeline_completed
//   pipeline_run, pipeline_resume, pipeline_rollback: nothing (the executor emits nothing then)
// Pure functions; errors (Errc::corrupt, naming the record) mean the record does not read.
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "executor/events.h"
#include "executor/run_records.h"

namespace warden::service {

// Reads a blob by "sha256:<hex>", verified against its digest (executor::StoredRun::blob).
using BlobReader = std::function<Result<std::string>(std::string_view digest)>;

// The events pipeline record `record` shows (see above); `blob` reads the stage results kept
// in the blob store.
Result<std::vector<executor::ExecutionEvent>> pipeline_record_events(const executor::StoredRecord& record,
                                                                     const BlobReader& blob);

// `event` as the wire's RunEvent: event_id and type as kernel::stream_event_json gives them,
// step_index the run's step counter, tool_name the stage (empty for run-level events),
// data_json the payload's canonical JSON, ledger_seq the seq of the record it came from.
Result<v1::RunEvent> wire_event(const executor::ExecutionEvent& event, uint64_t ledger_seq);

}  // namespace warden::service
