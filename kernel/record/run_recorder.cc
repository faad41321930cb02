#include "kernel/record/run_recorder.h"

#include "kernel/record/records.h"

namespace warden::kernel {

void RunRecorder::emit(RunEventType type, std::optional<int64_t> step_index, std::optional<std::string> tool, Json data) {
  RunEvent ev;
  ev.event_id = ids_.next_id("ev");
  ev.run_id = run_id_;
  ev.type = type;
  ev.timestamp_ms = now();
  ev.step_index = step_index;
  ev.tool = std::move(tool);
  ev.data = std::move(data);
  // An event the ledger cannot take is still shown; its loss surfaces at the next flush.
  (void)ledger_.append(record_kind::run_event, ev.to_json(), ev.timestamp_ms);
  if (on_event_) on_event_(ev);
}

}  // namespace warden::kernel
