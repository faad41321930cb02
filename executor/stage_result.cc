#include "executor/stage_result.h"

#include "common/json_reader.h"
#include "executor/names.h"

namespace warden::executor {
namespace {

constexpr int64_t kMaxLlmCalls = 1'000'000'000;


}  // namespace

Json stage_result_to_json(const StageResult& r) {
  Json out = Json::object();
  if (!r.output.empty()) out["output"] = r.output;
  if (r.llm_calls != 0) out["llm_calls"] = r.llm_calls;
  if (r.error) out["error"] = *r.error;
  if (r.interrupt) {
    Json i{{"kind", r.interrupt->kind}};
    if (r.interrupt->question) i["question"] = *r.interrupt->question;
    if (!r.interrupt->payload.is_null()) i["payload"] = r.interrupt->payload;
    out["interrupt"] = std::move(i);
  }
  const StageEffects& e = r.effects;
  if (!e.feedback.empty()) out["feedback"] = e.feedback;
  if (!e.goals.empty()) out["goals"] = e.goals;
  if (!e.completed_goals.empty()) out["completed_goals"] = e.completed_goals;
  if (e.prior_plan) out["prior_plan"] = *e.prior_plan;
  if (!e.metadata.empty()) out["metadata"] = e.metadata;
  return out;
}

Result<StageResult> stage_result_from_json(const Json& json, std::string_view what, Errc code) {
  if (auto st = check_canonical_numbers(json, what); !st) return std::unexpected(Error{code, st.error().message});
  JsonReader r(json, std::string(what), JsonDialect::null_is_absent, code);
  StageResult out;
  out.output = r.object_or_empty("output");
  out.llm_calls = r.integer_or("llm_calls", 0, 0, kMaxLlmCalls);
  out.error = r.optional_string("error");
  if (r.has("interrupt")) {
    JsonReader i = r.child("interrupt");
    InterruptRequest req;
    req.kind = i.string("kind");
    if (i.ok() && !is_lower_identifier(req.kind)) i.fail("kind", "\"" + req.kind + "\" is not a kind (1-64 of a-z 0-9 _)");
    req.question = i.optional_string("question");
    if (i.has("payload")) req.payload = i.object_or_empty("payload");
    if (i.finish()) out.interrupt = std::move(req);
  } else {
    r.get("interrupt");
  }
  out.effects.feedback = r.string_list("feedback");
  out.effects.goals = r.string_list("goals");
  out.effects.completed_goals = r.string_list("completed_goals");
  if (r.has("prior_plan")) out.effects.prior_plan = r.object_or_empty("prior_plan");
  else r.get("prior_plan");
  if (r.has("metadata")) out.effects.metadata = r.object_or_empty("metadata");
  else r.get("metadata");
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

Status validate_stage_result(const StageResult& result) {
  if (!result.output.is_object()) return fail(Errc::invalid_argument, "stage output must be a JSON object");
  if (result.llm_calls < 0 || result.llm_calls > kMaxLlmCalls) {
    return fail(Errc::invalid_argument, "llm_calls must be between 0 and " + std::to_string(kMaxLlmCalls));
  }
  if (auto st = check_canonical_numbers(result.output, "stage output"); !st) return st;
  if (result.interrupt) {
    if (!is_lower_identifier(result.interrupt->kind)) {
      return fail(Errc::invalid_argument, "interrupt kind \"" + result.interrupt->kind + "\" is not a kind (1-64 of a-z 0-9 _)");
    }
    if (!result.interrupt->payload.is_null() && !result.interrupt->payload.is_object()) {
      return fail(Errc::invalid_argument, "interrupt payload must be a JSON object");
    }
    if (auto st = check_canonical_numbers(result.interrupt->payload, "interrupt payload"); !st) return st;
  }
  const StageEffects& e = result.effects;
  if (!e.metadata.is_null() && !e.metadata.is_object()) {
    return fail(Errc::invalid_argument, "metadata effect must be a JSON object");
  }
  if (auto st = check_canonical_numbers(e.metadata, "metadata effect"); !st) return st;
  if (e.prior_plan) {
    if (!e.prior_plan->is_object()) return fail(Errc::invalid_argument, "prior_plan must be a JSON object");
    if (auto st = check_canonical_numbers(*e.prior_plan, "prior_plan"); !st) return st;
  }
  return {};
}

}  // namespace warden::executor
