#include "executor/run_records.h"

#include <utility>

#include "common/sha256.h"
#include "common/json_reader.h"

namespace warden::executor {
namespace {

constexpr int64_t kMaxInt = kMaxCanonicalInteger;

// `value` inline under `key`, or, when its canonical form is large, in the blob store with
// its digest under `key`_blob.
Status put_value(RunJournal& j, Json& record, std::string_view key, const Json& value) {
  auto canonical = canonicalize(value);
  if (!canonical) return std::unexpected(canonical.error().with_context(std::string(key)));
  if (canonical->size() <= kInlineLimit) {
    record[std::string(key)] = value;
    return {};
  }
  auto digest = j.put_blob(*canonical);
  if (!digest) return std::unexpected(digest.error());
  record[std::string(key) + "_blob"] = *digest;
  return {};
}

// A JSON value kept in the blob store, checked canonical.
Result<Json> read_blob_json(const StoredRun& stored, const std::string& digest, const std::string& what) {
  if (!stored.blob) return fail(Errc::corrupt, what + ": no blob store to read " + digest + " from");
  auto bytes = stored.blob(digest);
  if (!bytes) return std::unexpected(bytes.error().with_context(what));
  auto value = parse_canonical_json(*bytes, what);
  if (!value) return std::unexpected(Error{Errc::corrupt, value.error().message});
  return value;
}

// The inverse of put_value: the inline value, or the blob parsed back.
Result<Json> get_value(JsonReader& r, const StoredRun& stored, std::string_view key) {
  if (const Json* inline_value = r.get(key)) return *inline_value;
  std::string blob_key = std::string(key) + "_blob";
  auto digest = r.optional_string(blob_key);
  if (!digest) {
    r.fail(key, "is required");
    return Json();
  }
  return read_blob_json(stored, *digest, r.path(blob_key));
}

std::string where(const StoredRecord& record) {
  return "record " + std::to_string(record.seq) + " (" + record.kind + ")";
}

Json base(const RunState& run, uint64_t step, int64_t at) {
  return Json{{"run", run.run_id}, {"step", step}, {"at", at}};
}

}  // namespace

Result<std::string> envelope_digest(const Envelope& envelope) {
  auto canonical = canonicalize(envelope_to_json(envelope));
  if (!canonical) return std::unexpected(canonical.error().with_context("checkpoint envelope"));
  return sha256(*canonical).str();
}

Status journal_run_started(RunJournal& j, const PipelineConfig& config, const RunState& run, const Json& launch,
                           int64_t at) {
  // The config once in the blob store (runs of one config share it), named by its digest.
  auto digest = j.put_blob(config.canonical, config.digest);
  if (!digest) return std::unexpected(digest.error());
  Json record{{"run", run.run_id}, {"at", at}, {"config", *digest}, {"launch", launch}};
  if (auto st = put_value(j, record, "envelope", envelope_to_json(run.envelope)); !st) return st;
  return j.append(record_kind::run, record, at);
}

Status journal_step(RunJournal& j, const PipelineConfig& config, const RunState& run, uint64_t step,
                    std::span<const StageOutcome> outcomes, int64_t at) {
  Json stages = Json::array();
  for (const auto& o : outcomes) {
    Json s{{"stage", config.stage_name(o.stage)}, {"started_at", o.started_at}, {"completed_at", o.completed_at}};
    if (auto st = put_value(j, s, "result", stage_result_to_json(o.result)); !st) return st;
    stages.push_back(std::move(s));
  }
  Json record = base(run, step, at);
  record["stages"] = std::move(stages);
  return j.append(record_kind::step, record, at);
}

Status journal_routing(RunJournal& j, const RunState& run, const StepApplied& applied) {
  for (size_t i = applied.first_transition; i < run.transitions.size(); ++i) {
    const Transition& t = run.transitions[i];
    Json record = transition_to_json(t);
    record["run"] = run.run_id;
    if (auto st = j.append(record_kind::transition, record, t.timestamp); !st) return st;
  }
  if (const Checkpoint* cp = applied.checkpoint) {
    auto canonical = canonicalize(envelope_to_json(cp->envelope));
    if (!canonical) return std::unexpected(canonical.error().with_context("checkpoint envelope"));
    auto digest = j.put_blob(*canonical);
    if (!digest) return std::unexpected(digest.error());
    Json record{{"run", run.run_id},         {"id", cp->id},
                {"stage", cp->stage},        {"step", cp->step},
                {"iteration", cp->iteration}, {"created_at", cp->created_at},
                {"envelope", *digest}};
    if (auto st = j.append(record_kind::checkpoint, record, cp->created_at); !st) return st;
  }
  if (applied.ended) return journal_end(j, run);
  return {};
}

Status journal_end(RunJournal& j, const RunState& run) {
  const Envelope& e = run.envelope;
  int64_t at = e.completed_at.value_or(0);
  Json record = base(run, run.step, at);
  record["terminal_reason"] = terminal_reason_name(e.terminal_reason.value_or(TerminalReason::completed));
  if (e.termination_reason) record["detail"] = *e.termination_reason;
  return j.append(record_kind::end, record, at);
}

Status journal_resume(RunJournal& j, const RunState& run, int64_t at) {
  Json record = base(run, run.step, at);
  record["response"] = run.envelope.interrupt ? run.envelope.interrupt->response.value_or("") : "";
  return j.append(record_kind::resume, record, at);
}

Status journal_rollback(RunJournal& j, const RunState& run, std::string_view checkpoint_id, int64_t at) {
  Json record = base(run, run.step, at);
  record["checkpoint"] = checkpoint_id;
  return j.append(record_kind::rollback, record, at);
}

Result<RunStart> parse_run_start(const StoredRun& stored) {
  if (stored.records.empty() || stored.records.front().kind != record_kind::run) {
    return fail(Errc::corrupt, "run " + stored.run_id + " has no pipeline_run record");
  }
  const StoredRecord& record = stored.records.front();
  JsonReader r(record.payload, where(record), JsonDialect::null_is_absent, Errc::corrupt);
  RunStart start;
  start.run_id = r.string("run");
  start.at = r.integer("at", -kMaxInt, kMaxInt);
  std::string config_digest = r.string("config");
  start.launch = r.object_or_empty("launch");
  auto envelope = get_value(r, stored, "envelope");
  if (!envelope) return std::unexpected(envelope.error());
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  auto config = read_blob_json(stored, config_digest, where(record) + ".config");
  if (!config) return std::unexpected(config.error());
  start.config = std::move(*config);
  auto parsed = envelope_from_json(*envelope, where(record) + ".envelope", Errc::corrupt);
  if (!parsed) return std::unexpected(parsed.error());
  start.envelope = std::move(*parsed);
  return start;
}

Result<std::vector<StageOutcome>> parse_step_outcomes(const PipelineConfig& config, const StoredRun& stored,
                                                      const StoredRecord& record, uint64_t& step, int64_t& at) {
  JsonReader r(record.payload, where(record), JsonDialect::null_is_absent, Errc::corrupt);
  r.string("run");
  step = static_cast<uint64_t>(r.integer("step", 1, kMaxInt));
  at = r.integer("at", -kMaxInt, kMaxInt);
  const Json& stages = r.array("stages");
  if (r.ok() && stages.empty()) r.fail("stages", "lists no stage");
  std::vector<StageOutcome> out;
  for (size_t i = 0; i < stages.size() && r.ok(); ++i) {
    JsonReader s = r.element("stages", stages, i);
    StageOutcome o;
    std::string name = s.string("stage");
    auto id = config.find(name);
    if (s.ok() && !id) s.fail("stage", "names no stage of the run's config: \"" + name + "\"");
    o.stage = id.value_or(0);
    o.started_at = s.integer("started_at", -kMaxInt, kMaxInt);
    o.completed_at = s.integer("completed_at", -kMaxInt, kMaxInt);
    auto result_json = get_value(s, stored, "result");
    if (!result_json) return std::unexpected(result_json.error());
    if (!s.finish()) break;
    auto result = stage_result_from_json(*result_json, s.path("result"), Errc::corrupt);
    if (!result) return std::unexpected(result.error());
    o.result = std::move(*result);
    out.push_back(std::move(o));
  }
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

Result<Transition> parse_transition(const StoredRecord& record) {
  Json payload = record.payload;
  if (payload.is_object()) payload.erase("run");
  return transition_from_json(payload, where(record), Errc::corrupt);
}

Result<CheckpointRecord> parse_checkpoint(const StoredRecord& record) {
  JsonReader r(record.payload, where(record), JsonDialect::null_is_absent, Errc::corrupt);
  r.string("run");
  CheckpointRecord cp;
  cp.id = r.string("id");
  cp.stage = r.string("stage");
  cp.step = static_cast<uint64_t>(r.integer("step", 1, kMaxInt));
  cp.iteration = r.integer("iteration", 0, kMaxInt);
  cp.created_at = r.integer("created_at", -kMaxInt, kMaxInt);
  cp.envelope_digest = r.string("envelope");
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return cp;
}

Result<ControlRecord> parse_control(const StoredRecord& record) {
  JsonReader r(record.payload, where(record), JsonDialect::null_is_absent, Errc::corrupt);
  r.string("run");
  ControlRecord c;
  c.step = static_cast<uint64_t>(r.integer("step", 0, kMaxInt));
  c.at = r.integer("at", -kMaxInt, kMaxInt);
  if (record.kind == record_kind::resume) {
    c.response = r.string("response");
  } else if (record.kind == record_kind::rollback) {
    c.checkpoint = r.string("checkpoint");
  } else if (record.kind == record_kind::end) {
    std::string reason = r.string("terminal_reason");
    if (auto parsed = parse_terminal_reason(reason)) c.reason = *parsed;
    else if (r.ok()) r.fail("terminal_reason", "unknown terminal reason \"" + reason + "\"");
    c.detail = r.string_or("detail", "");
  } else {
    r.fail("", "is not a control record");
  }
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return c;
}

}  // namespace warden::executor
