// The Envelope's JSON form, as checkpoints and the ledger keep it.
#include <utility>

#include "executor/envelope.h"
#include "common/json_reader.h"

namespace warden::executor {
namespace {

constexpr int64_t kMaxInt = kMaxCanonicalInteger;

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json record_to_json(const ProcessingRecord& r) {
  return Json{{"agent", r.agent},
              {"stage_order", r.stage_order},
              {"started_at", r.started_at},
              {"completed_at", optional_json(r.completed_at)},
              {"duration_ms", r.duration_ms},
              {"status", r.status},
              {"error", optional_json(r.error)},
              {"llm_calls", r.llm_calls}};
}

ProcessingRecord record_from(JsonReader& r) {
  ProcessingRecord out;
  out.agent = r.string("agent");
  out.stage_order = r.integer("stage_order", 0, kMaxInt);
  out.started_at = r.integer("started_at", -kMaxInt, kMaxInt);
  out.completed_at = r.optional_integer("completed_at", -kMaxInt, kMaxInt);
  out.duration_ms = r.integer_or("duration_ms", 0, 0, kMaxInt);
  out.status = r.string_or("status", "running");
  out.error = r.optional_string("error");
  out.llm_calls = r.integer_or("llm_calls", 0, 0, kMaxInt);
  return out;
}

FlowInterrupt interrupt_from(JsonReader& r) {
  FlowInterrupt out;
  out.id = r.string("id");
  out.kind = r.string("kind");
  out.stage = r.string("stage");
  out.question = r.optional_string("question");
  if (const Json* p = r.get("payload")) {
    if (!p->is_object()) r.fail("payload", "must be a JSON object or null");
    else out.payload = *p;
  }
  out.created_at = r.integer("created_at", -kMaxInt, kMaxInt);
  out.response = r.optional_string("response");
  out.responded_at = r.optional_integer("responded_at", -kMaxInt, kMaxInt);
  return out;
}

}  // namespace

Json interrupt_to_json(const FlowInterrupt& i) {
  return Json{{"id", i.id},
              {"kind", i.kind},
              {"stage", i.stage},
              {"question", optional_json(i.question)},
              {"payload", i.payload},
              {"created_at", i.created_at},
              {"response", optional_json(i.response)},
              {"responded_at", optional_json(i.responded_at)}};
}

Json envelope_to_json(const Envelope& e) {
  Json history = Json::array();
  for (const auto& r : e.processing_history) history.push_back(record_to_json(r));
  Json outputs = Json::object();
  for (const auto& [stage, output] : e.outputs) outputs[stage] = output;
  return Json{
      {"envelope_id", e.envelope_id},
      {"request_id", e.request_id},
      {"user_id", e.user_id},
      {"session_id", e.session_id},
      {"raw_input", e.raw_input},
      {"received_at", optional_json(e.received_at)},
      {"outputs", std::move(outputs)},
      {"current_stage", e.current_stage},
      {"stage_order", e.stage_order},
      {"iteration", e.iteration},
      {"max_iterations", e.max_iterations},
      {"llm_call_count", e.llm_call_count},
      {"max_llm_calls", e.max_llm_calls},
      {"agent_hop_count", e.agent_hop_count},
      {"max_agent_hops", e.max_agent_hops},
      {"terminal_reason", e.terminal_reason ? Json(terminal_reason_name(*e.terminal_reason)) : Json(nullptr)},
      {"terminated", e.terminated},
      {"termination_reason", optional_json(e.termination_reason)},
      {"interrupt_pending", e.interrupt_pending},
      {"interrupt", e.interrupt ? interrupt_to_json(*e.interrupt) : Json(nullptr)},
      {"active_stages", e.active_stages},
      {"completed_stage_set", e.completed_stage_set},
      {"failed_stages", e.failed_stages},
      {"parallel_mode", e.parallel_mode},
      {"completed_stages", e.completed_stages},
      {"current_stage_number", e.current_stage_number},
      {"max_stages", e.max_stages},
      {"all_goals", e.all_goals},
      {"remaining_goals", e.remaining_goals},
      {"goal_completion_status", e.goal_completion_status},
      {"prior_plans", e.prior_plans},
      {"loop_feedback", e.loop_feedback},
      {"processing_history", std::move(history)},
      {"errors", e.errors},
      {"created_at", optional_json(e.created_at)},
      {"completed_at", optional_json(e.completed_at)},
      {"metadata", e.metadata},
  };
}

Result<Envelope> envelope_from_json(const Json& json, std::string_view what, Errc code) {
  JsonReader r(json, std::string(what), JsonDialect::null_is_absent, code);
  Envelope e;
  e.envelope_id = r.string_or("envelope_id", "");
  e.request_id = r.string_or("request_id", "");
  e.user_id = r.string_or("user_id", "");
  e.session_id = r.string_or("session_id", "");
  e.raw_input = r.string_or("raw_input", "");
  e.received_at = r.optional_integer("received_at", -kMaxInt, kMaxInt);
  {
    JsonReader outputs = r.child("outputs", false);
    if (const Json* all = r.get("outputs")) {
      for (const auto& [stage, output] : all->items()) {
        if (!output.is_object()) outputs.fail(stage, "must be a JSON object");
        else e.outputs.emplace(stage, output);
        outputs.get(stage);
      }
    }
    (void)outputs.finish();
  }
  e.current_stage = r.string_or("current_stage", "start");
  e.stage_order = r.string_list("stage_order");
  e.iteration = r.integer_or("iteration", 0, 0, kMaxInt);
  e.max_iterations = r.integer_or("max_iterations", e.max_iterations, 0, kMaxInt);
  e.llm_call_count = r.integer_or("llm_call_count", 0, 0, kMaxInt);
  e.max_llm_calls = r.integer_or("max_llm_calls", e.max_llm_calls, 0, kMaxInt);
  e.agent_hop_count = r.integer_or("agent_hop_count", 0, 0, kMaxInt);
  e.max_agent_hops = r.integer_or("max_agent_hops", e.max_agent_hops, 0, kMaxInt);
  if (auto reason = r.optional_string("terminal_reason")) {
    e.terminal_reason = parse_terminal_reason(*reason);
    if (!e.terminal_reason) r.fail("terminal_reason", "unknown terminal reason \"" + *reason + "\"");
  }
  e.terminated = r.boolean_or("terminated", false);
  e.termination_reason = r.optional_string("termination_reason");
  e.interrupt_pending = r.boolean_or("interrupt_pending", false);
  if (r.has("interrupt")) {
    JsonReader interrupt = r.child("interrupt");
    e.interrupt = interrupt_from(interrupt);
    (void)interrupt.finish();
  } else {
    r.get("interrupt");
  }
  e.active_stages = r.bool_map("active_stages");
  e.completed_stage_set = r.bool_map("completed_stage_set");
  e.failed_stages = r.string_map("failed_stages");
  e.parallel_mode = r.boolean_or("parallel_mode", false);
  e.completed_stages = r.object_list("completed_stages");
  e.current_stage_number = r.integer_or("current_stage_number", 1, 0, kMaxInt);
  e.max_stages = r.integer_or("max_stages", e.max_stages, 0, kMaxInt);
  e.all_goals = r.string_list("all_goals");
  e.remaining_goals = r.string_list("remaining_goals");
  e.goal_completion_status = r.string_map("goal_completion_status");
  e.prior_plans = r.object_list("prior_plans");
  e.loop_feedback = r.string_list("loop_feedback");
  const Json& history = r.array("processing_history");
  for (size_t i = 0; i < history.size() && r.ok(); ++i) {
    JsonReader item = r.element("processing_history", history, i);
    e.processing_history.push_back(record_from(item));
    (void)item.finish();
  }
  e.errors = r.object_list("errors");
  e.created_at = r.optional_integer("created_at", -kMaxInt, kMaxInt);
  e.completed_at = r.optional_integer("completed_at", -kMaxInt, kMaxInt);
  e.metadata = r.object_or_empty("metadata");
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return e;
}

}  // namespace warden::executor
