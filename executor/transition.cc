#include "executor/transition.h"

#include "common/json_reader.h"
#include "executor/names.h"

namespace warden::executor {
namespace {

constexpr NameTable<TransitionReason, 6> kNames{{
    {TransitionReason::default_next, "default"},
    {TransitionReason::routing, "routing"},
    {TransitionReason::reintent, "reintent"},
    {TransitionReason::next_stage, "next_stage"},
    {TransitionReason::error, "error"},
    {TransitionReason::complete, "complete"},
}};

}  // namespace

std::string_view transition_reason_name(TransitionReason reason) { return name_of(kNames, reason); }

std::optional<TransitionReason> parse_transition_reason(std::string_view name) { return value_of(kNames, name); }

Json transition_to_json(const Transition& t) {
  Json out{{"step", t.step},
           {"from", t.from},
           {"to", t.to},
           {"reason", transition_reason_name(t.reason)},
           {"iteration", t.iteration},
           {"timestamp", t.timestamp}};
  if (!t.checkpoint.empty()) out["checkpoint"] = t.checkpoint;
  if (!t.detail.empty()) out["detail"] = t.detail;
  return out;
}

Result<Transition> transition_from_json(const Json& json, std::string_view what, Errc code) {
  JsonReader r(json, std::string(what), JsonDialect::null_is_absent, code);
  Transition t;
  t.step = static_cast<uint64_t>(r.integer("step", 0, kMaxCanonicalInteger));
  t.from = r.string("from");
  t.to = r.string("to");
  std::string reason = r.string("reason");
  if (r.ok()) {
    if (auto parsed = parse_transition_reason(reason)) t.reason = *parsed;
    else r.fail("reason", "unknown transition reason \"" + reason + "\"");
  }
  t.iteration = r.integer("iteration", 0, kMaxCanonicalInteger);
  t.timestamp = r.integer("timestamp", -kMaxCanonicalInteger, kMaxCanonicalInteger);
  t.checkpoint = r.string_or("checkpoint", "");
  t.detail = r.string_or("detail", "");
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return t;
}

}  // namespace warden::executor
