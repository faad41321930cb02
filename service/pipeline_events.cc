#include "service/pipeline_events.h"

#include <optional>
#include <utility>

#include "common/canonical_json.h"
#include "common/json_reader.h"
#include "executor/envelope.h"
#include "executor/stage_result.h"
#include "executor/transition.h"
#include "kernel/record/event_stream.h"

namespace warden::service {
namespace {

using executor::EventType;
using executor::ExecutionEvent;
using executor::StoredRecord;
namespace record_kind = executor::record_kind;

constexpr int64_t kMaxInt = kMaxCanonicalInteger;

std::string where(const StoredRecord& record) {
  return "record " + std::to_string(record.seq) + " (" + record.kind + ")";
}

// The run a record belongs to (its "run"), checked a string.
Result<std::string> run_of(const StoredRecord& record) {
  auto run = record.payload.is_object() ? record.payload.find("run") : record.payload.end();
  if (run == record.payload.end() || !run->is_string()) return fail(Errc::corrupt, where(record) + ": run: is required");
  return run->get<std::string>();
}

// One stage of a pipeline_step record, its result read back from the record or the blob store.
struct RecordedStage {
  std::string name;
  int64_t started_at = 0, completed_at = 0;
  executor::StageResult result;
};

Result<Json> stage_result_json(JsonReader& s, const BlobReader& blob) {
  if (const Json* inline_result = s.get("result")) return *inline_result;
  auto digest = s.optional_string("result_blob");
  if (!digest) {
    s.fail("result", "is required");
    return Json();
  }
  if (!blob) return fail(Errc::corrupt, s.path("result_blob") + ": no blob store to read " + *digest + " from");
  auto bytes = blob(*digest);
  if (!bytes) return std::unexpected(bytes.error().with_context(s.path("result_blob")));
  auto value = parse_canonical_json(*bytes, s.path("result_blob"));
  if (!value) return std::unexpected(Error{Errc::corrupt, value.error().message});
  return value;
}

// The record as executor/run_records.h writes it: {run, step, at, stages: [{stage,
// started_at, completed_at, result | result_blob}]}.
Result<std::vector<RecordedStage>> read_step(const StoredRecord& record, const BlobReader& blob, uint64_t& step) {
  JsonReader r(record.payload, where(record), JsonDialect::null_is_absent, Errc::corrupt);
  r.string("run");
  step = static_cast<uint64_t>(r.integer("step", 1, kMaxInt));
  r.integer("at", -kMaxInt, kMaxInt);
  const Json& stages = r.array("stages");
  if (r.ok() && stages.empty()) r.fail("stages", "lists no stage");
  std::vector<RecordedStage> out;
  for (size_t i = 0; i < stages.size() && r.ok(); ++i) {
    JsonReader s = r.element("stages", stages, i);
    RecordedStage stage;
    stage.name = s.string("stage");
    stage.started_at = s.integer("started_at", -kMaxInt, kMaxInt);
    stage.completed_at = s.integer("completed_at", -kMaxInt, kMaxInt);
    auto result_json = stage_result_json(s, blob);
    if (!result_json) return std::unexpected(result_json.error());
    if (!s.finish()) break;
    auto result = executor::stage_result_from_json(*result_json, s.path("result"), Errc::corrupt);
    if (!result) return std::unexpected(result.error());
    stage.result = std::move(*result);
    out.push_back(std::move(stage));
  }
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

// As PipelineExecutor::execute, emit_outcomes and (for the interrupt) emit_routing emitted
// them: the stages started and answered at the step before this one; the interrupt raised
// by the step, named after it, by the first stage that paused without failing.
Result<std::vector<ExecutionEvent>> step_events(const StoredRecord& record, const BlobReader& blob) {
  auto run_id = run_of(record);
  if (!run_id) return std::unexpected(run_id.error());
  uint64_t step = 0;
  auto stages = read_step(record, blob, step);
  if (!stages) return std::unexpected(stages.error());
  const uint64_t before = step - 1;
  std::vector<ExecutionEvent> out;
  for (const RecordedStage& s : *stages) {
    out.push_back(ExecutionEvent{EventType::stage_started, *run_id, s.name, s.started_at, Json::object(), before});
  }
  for (const RecordedStage& s : *stages) {
    const executor::StageResult& r = s.result;
    if (r.error) {
      out.push_back(ExecutionEvent{EventType::stage_failed, *run_id, s.name, s.completed_at,
                                   Json{{"error", *r.error}, {"llm_calls", r.llm_calls}}, before});
    } else if (!r.interrupt) {
      out.push_back(ExecutionEvent{EventType::stage_completed, *run_id, s.name, s.completed_at,
                                   Json{{"output", r.output}, {"llm_calls", r.llm_calls}}, before});
    }
  }
  for (const RecordedStage& s : *stages) {
    const executor::StageResult& r = s.result;
    if (r.error || !r.interrupt) continue;
    executor::FlowInterrupt raised{"int-" + std::to_string(step), r.interrupt->kind, s.name, r.interrupt->question,
                                   r.interrupt->payload, s.completed_at, std::nullopt, std::nullopt};
    out.push_back(ExecutionEvent{EventType::interrupt_raised, *run_id, s.name, s.completed_at,
                                 executor::interrupt_to_json(raised), step});
    break;
  }
  return out;
}

Result<std::vector<ExecutionEvent>> transition_events(const StoredRecord& record) {
  auto run_id = run_of(record);
  if (!run_id) return std::unexpected(run_id.error());
  auto t = executor::parse_transition(record);
  if (!t) return std::unexpected(t.error());
  return std::vector<ExecutionEvent>{
      ExecutionEvent{EventType::transition, *run_id, t->from, t->timestamp, executor::transition_to_json(*t), t->step}};
}

Result<std::vector<ExecutionEvent>> checkpoint_events(const StoredRecord& record) {
  auto run_id = run_of(record);
  if (!run_id) return std::unexpected(run_id.error());
  auto cp = executor::parse_checkpoint(record);
  if (!cp) return std::unexpected(cp.error());
  return std::vector<ExecutionEvent>{ExecutionEvent{EventType::checkpoint_created, *run_id, cp->stage, cp->created_at,
                                                    Json{{"id", cp->id}, {"iteration", cp->iteration}, {"step", cp->step}},
                                                    cp->step}};
}

Result<std::vector<ExecutionEvent>> end_events(const StoredRecord& record) {
  auto run_id = run_of(record);
  if (!run_id) return std::unexpected(run_id.error());
  auto end = executor::parse_control(record);
  if (!end) return std::unexpected(end.error());
  Json payload{{"terminal_reason", executor::terminal_reason_name(end->reason)},
               {"termination_reason", end->detail.empty() ? Json(nullptr) : Json(end->detail)}};
  return std::vector<ExecutionEvent>{ExecutionEvent{EventType::pipeline_completed, *run_id, "", end->at, std::move(payload), end->step}};
}

}  // namespace

Result<std::vector<ExecutionEvent>> pipeline_record_events(const StoredRecord& record, const BlobReader& blob) {
  if (record.kind == record_kind::step) return step_events(record, blob);
  if (record.kind == record_kind::transition) return transition_events(record);
  if (record.kind == record_kind::checkpoint) return checkpoint_events(record);
  if (record.kind == record_kind::end) return end_events(record);
  return std::vector<ExecutionEvent>{};
}

Result<v1::RunEvent> wire_event(const ExecutionEvent& event, uint64_t ledger_seq) {
  const Json shown = kernel::stream_event_json(event);
  auto data = canonicalize(event.payload);
  if (!data) return std::unexpected(data.error().with_context("event " + shown.value("event_id", std::string())));
  v1::RunEvent e;
  e.set_event_id(shown.value("event_id", std::string()));
  e.set_run_id(event.run_id);
  e.set_type(shown.value("type", std::string()));
  e.set_timestamp_ms(event.timestamp_ms);
  e.set_step_index(static_cast<int64_t>(event.step));
  e.set_tool_name(event.stage);
  e.set_data_json(std::move(*data));
  e.set_ledger_seq(ledger_seq);
  return e;
}

}  // namespace warden::service
