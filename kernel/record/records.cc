#include "kernel/record/records.h"

#include "common/json_reader.h"
#include "kernel/plan/schema_fields.h"

namespace warden::kernel {
namespace {

constexpr uint64_t kMaxSeq = static_cast<uint64_t>(kMaxCanonicalInteger);

Json nullable(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

template <typename T>
Result<T> done(JsonReader& r, T value) {
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return value;
}

void non_empty(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && out.empty()) r.fail(key, "must not be empty");
}

void git_id(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && !is_git_object_id(out)) r.fail(key, "must be a git object id (40 lowercase hex characters)");
}

void attempt_number(JsonReader& r, int64_t& out) { r.integer("attempt", out, 1, kMaxCanonicalInteger); }

// A field that must be present and may be null.
void nullable_seq(JsonReader& r, const std::string& key, std::optional<uint64_t>& out) {
  const Json* v = r.any(key);
  if (!v || v->is_null()) return;
  if (!v->is_number_unsigned()) {
    r.fail(key, "must be a sequence number or null");
    return;
  }
  out = v->get<uint64_t>();
}

void object(JsonReader& r, const std::string& key, Json& out) {
  if (const Json* v = r.value(key, Json::value_t::object)) out = *v;
}

void read_reasons(JsonReader& r, const std::string& key, std::vector<Reason>& out) {
  const Json* list = r.value(key, Json::value_t::array);
  if (!list) return;
  for (size_t i = 0; i < list->size() && r.ok(); ++i) {
    JsonReader item((*list)[i], r.path(key) + "[" + std::to_string(i) + "]");
    Reason reason;
    item.string("code", reason.code);
    item.string("detail", reason.detail);
    r.adopt(item.finish());
    out.push_back(std::move(reason));
  }
}

Json reasons_json(const std::vector<Reason>& reasons) {
  Json out = Json::array();
  for (const Reason& r : reasons) out.push_back({{"code", r.code}, {"detail", r.detail}});
  return out;
}

// The subject field of a refusal, checked against the struct's.
void read_subject(JsonReader& r, std::string_view want) {
  std::string got;
  r.string("subject", got);
  if (r.ok() && got != want) r.fail("subject", "must be \"" + std::string(want) + "\"");
}

}  // namespace

bool is_git_object_id(std::string_view text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string_view plan_source_name(PlanSource source) {
  switch (source) {
    case PlanSource::generated: return "generated";
    case PlanSource::file: return "file";
    case PlanSource::executor: return "executor";
  }
  return "file";
}

std::string refusal_subject(const Json& payload) {
  auto it = payload.is_object() ? payload.find("subject") : payload.end();
  return it != payload.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// --- run_status ---

Json RunStatusRecord::to_json() const {
  Json j = {{"run_id", run_id}, {"status", run_status_name(status)}};
  if (error_type) {
    j["error_type"] = error_type_name(*error_type);
    j["error"] = error;
  }
  return j;
}

Result<RunStatusRecord> RunStatusRecord::from_json(const Json& json) {
  JsonReader r(json, "run_status record");
  RunStatusRecord s;
  non_empty(r, "run_id", s.run_id);
  std::string status;
  r.string("status", status);
  if (auto parsed = parse_run_status(status)) s.status = *parsed;
  else if (r.ok()) r.fail("status", "unknown run status \"" + status + "\"");
  if (r.has("error_type") || r.has("error")) {
    std::string type;
    r.string("error_type", type);
    r.string("error", s.error);
    if (auto parsed = parse_error_type(type)) s.error_type = *parsed;
    else if (r.ok()) r.fail("error_type", "unknown error type \"" + type + "\"");
  }
  return done(r, std::move(s));
}

// --- blueprint, policy ---

Json BlueprintRecord::to_json() const {
  return {{"run_id", run_id}, {"blueprint_sha256", blueprint_sha256.str()}, {"blueprint", blueprint}};
}

Result<BlueprintRecord> BlueprintRecord::from_json(const Json& json) {
  JsonReader r(json, "blueprint record");
  BlueprintRecord b;
  non_empty(r, "run_id", b.run_id);
  r.digest("blueprint_sha256", b.blueprint_sha256);
  object(r, "blueprint", b.blueprint);
  return done(r, std::move(b));
}

Json PolicyRecord::to_json() const {
  return {{"run_id", nullable(run_id)}, {"policy_sha256", policy_sha256.str()}, {"policy", policy}};
}

Result<PolicyRecord> PolicyRecord::from_json(const Json& json) {
  JsonReader r(json, "policy record");
  PolicyRecord p;
  r.nullable_string("run_id", p.run_id);
  if (r.ok() && p.run_id && p.run_id->empty()) r.fail("run_id", "is empty (null when the policy is of no run)");
  r.digest("policy_sha256", p.policy_sha256);
  object(r, "policy", p.policy);
  return done(r, std::move(p));
}

// --- plans ---

Json PlanProposalRecord::to_json() const {
  Json json = {{"run_id", nullable(run_id)}, {"source", plan_source_name(source)}, {"plan_sha256", plan_sha256.str()}, {"plan", plan}};
  if (executor) json["executor"] = *executor;
  if (executor_identity) json["executor_identity"] = *executor_identity;
  return json;
}

Result<PlanProposalRecord> PlanProposalRecord::from_json(const Json& json) {
  JsonReader r(json, "plan_proposal record");
  PlanProposalRecord p;
  r.nullable_string("run_id", p.run_id);
  std::string source;
  r.string("source", source);
  if (source == "generated") p.source = PlanSource::generated;
  else if (source == "executor") p.source = PlanSource::executor;
  else if (source == "file") p.source = PlanSource::file;
  else if (r.ok()) r.fail("source", "must be generated, file or executor");
  r.digest("plan_sha256", p.plan_sha256);
  if (const Json* plan = r.any("plan")) p.plan = *plan;
  for (auto [key, field] : {std::pair{"executor", &p.executor}, std::pair{"executor_identity", &p.executor_identity}}) {
    if (!r.has(key)) continue;
    std::string value;
    r.string(key, value);
    if (r.ok() && value.empty()) r.fail(key, "is empty (omit it when none is known)");
    *field = std::move(value);
  }
  return done(r, std::move(p));
}

Json PlanCommitRecord::to_json() const {
  return {{"run_id", nullable(run_id)},
          {"plan_sha256", plan_sha256.str()},
          {"blueprint_sha256", blueprint_sha256 ? Json(blueprint_sha256->str()) : Json(nullptr)},
          {"proposal_seq", proposal_seq}};
}

Result<PlanCommitRecord> PlanCommitRecord::from_json(const Json& json) {
  JsonReader r(json, "plan_commit record");
  PlanCommitRecord c;
  r.nullable_string("run_id", c.run_id);
  r.digest("plan_sha256", c.plan_sha256);
  if (r.ok() && !r.has("blueprint_sha256")) r.fail("blueprint_sha256", "is required (null when there is none)");
  r.nullable_digest("blueprint_sha256", c.blueprint_sha256);
  r.unsigned_integer("proposal_seq", c.proposal_seq, 0, kMaxSeq);
  return done(r, std::move(c));
}

Json PlanRefusalRecord::to_json() const {
  Json j = {{"run_id", nullable(run_id)},
            {"subject", subject},
            {"error_type", error_type_name(ErrorType::planning_error)},
            {"plan_sha256", plan_sha256.str()},
            {"proposal_seq", proposal_seq ? Json(*proposal_seq) : Json(nullptr)},
            {"reasons", reasons_json(reasons)}};
  if (plan_blob) j["plan_blob"] = plan_blob->str();
  return j;
}

Result<PlanRefusalRecord> PlanRefusalRecord::from_json(const Json& json) {
  JsonReader r(json, "plan refusal record");
  PlanRefusalRecord p;
  r.nullable_string("run_id", p.run_id);
  read_subject(r, PlanRefusalRecord::subject);
  std::string type;
  r.string("error_type", type);
  if (r.ok() && type != error_type_name(ErrorType::planning_error)) r.fail("error_type", "must be PLANNING_ERROR");
  r.digest("plan_sha256", p.plan_sha256);
  nullable_seq(r, "proposal_seq", p.proposal_seq);
  r.optional_digest("plan_blob", p.plan_blob);
  read_reasons(r, "reasons", p.reasons);
  if (r.ok() && p.reasons.empty()) r.fail("reasons", "a refusal needs at least one reason");
  return done(r, std::move(p));
}

Json ProposalRefusalRecord::to_json() const {
  return {{"run_id", run_id}, {"subject", subject}, {"report", report.to_json()}};
}

Result<ProposalRefusalRecord> ProposalRefusalRecord::from_json(const Json& json) {
  JsonReader r(json, "proposal refusal record");
  ProposalRefusalRecord p;
  non_empty(r, "run_id", p.run_id);
  read_subject(r, ProposalRefusalRecord::subject);
  if (const Json* report = r.value("report", Json::value_t::object)) {
    auto parsed = RefusalReport::from_json(*report);
    if (parsed) p.report = std::move(*parsed);
    else r.adopt(std::unexpected(parsed.error()));
  }
  return done(r, std::move(p));
}

// --- a step's attempt ---

Json ProposalRecord::to_json() const {
  Json json = {{"run_id", run_id},
               {"step_id", step_id},
               {"attempt", attempt},
               {"executor", executor},
               {"evidence_blob", evidence_blob.str()},
               {"diff_sha256", diff_sha256 ? Json(diff_sha256->str()) : Json(nullptr)},
               {"error", nullable(error)}};
  if (executor_sandbox) json["executor_sandbox"] = executor_sandbox->to_json();
  if (executor_identity) json["executor_identity"] = *executor_identity;
  return json;
}

Result<ProposalRecord> ProposalRecord::from_json(const Json& json) {
  JsonReader r(json, "proposal record");
  ProposalRecord p;
  non_empty(r, "run_id", p.run_id);
  r.string("step_id", p.step_id);
  attempt_number(r, p.attempt);
  r.string("executor", p.executor);
  r.digest("evidence_blob", p.evidence_blob);
  if (r.ok() && !r.has("diff_sha256")) r.fail("diff_sha256", "is required (null when the proposal is not a Diff)");
  r.nullable_digest("diff_sha256", p.diff_sha256);
  if (r.ok() && !r.has("error")) r.fail("error", "is required (null when there is none)");
  r.nullable_string("error", p.error);
  if (const Json* sandbox = r.value("executor_sandbox", Json::value_t::object, false)) {
    auto parsed = LaunchConfinement::from_json(*sandbox, r.path("executor_sandbox"));
    if (parsed) p.executor_sandbox = std::move(*parsed);
    else r.adopt(std::unexpected(parsed.error()));
  }
  if (r.has("executor_identity")) {
    std::string identity;
    r.string("executor_identity", identity);
    if (r.ok() && identity.empty()) r.fail("executor_identity", "is empty (omit it when no identity is known)");
    p.executor_identity = std::move(identity);
  }
  return done(r, std::move(p));
}

std::optional<Json> attestations_json(const std::vector<ResultAttestation>& list) {
  if (list.empty()) return std::nullopt;
  Json out = Json::array();
  for (const ResultAttestation& a : list) out.push_back(a.to_json());
  return out;
}

Json RunResultRecord::to_json() const {
  Json j = {{"run_id", run_id},
            {"step_id", step_id},
            {"attempt", attempt},
            {"run_result_sha256", run_result_sha256.str()},
            {"run_result", run_result}};
  if (attestations) j["attestations"] = *attestations;
  return j;
}

Result<RunResultRecord> RunResultRecord::from_json(const Json& json) {
  JsonReader r(json, "run_result record");
  RunResultRecord rr;
  non_empty(r, "run_id", rr.run_id);
  r.string("step_id", rr.step_id);
  attempt_number(r, rr.attempt);
  r.digest("run_result_sha256", rr.run_result_sha256);
  object(r, "run_result", rr.run_result);
  if (const Json* a = r.value("attestations", Json::value_t::array, /*required=*/false)) rr.attestations = *a;
  return done(r, std::move(rr));
}

Json BaseRunRecord::to_json() const {
  Json j = {{"run_id", run_id},
            {"step_id", step_id},
            {"tree", tree},
            {"run_result_sha256", run_result_sha256.str()},
            {"run_result", run_result}};
  if (attestations) j["attestations"] = *attestations;
  return j;
}

Result<BaseRunRecord> BaseRunRecord::from_json(const Json& json) {
  JsonReader r(json, "base_run record");
  BaseRunRecord b;
  non_empty(r, "run_id", b.run_id);
  non_empty(r, "step_id", b.step_id);
  non_empty(r, "tree", b.tree);
  r.digest("run_result_sha256", b.run_result_sha256);
  object(r, "run_result", b.run_result);
  if (const Json* a = r.value("attestations", Json::value_t::array, /*required=*/false)) b.attestations = *a;
  return done(r, std::move(b));
}

Json OracleRunRecord::to_json() const {
  Json j = {{"run_id", run_id},
            {"step_id", step_id},
            {"attempt", attempt},
            {"run_result_sha256", run_result_sha256.str()},
            {"run_result", run_result}};
  if (attestations) j["attestations"] = *attestations;
  return j;
}

Result<OracleRunRecord> OracleRunRecord::from_json(const Json& json) {
  JsonReader r(json, "oracle_run record");
  OracleRunRecord o;
  non_empty(r, "run_id", o.run_id);
  non_empty(r, "step_id", o.step_id);
  attempt_number(r, o.attempt);
  r.digest("run_result_sha256", o.run_result_sha256);
  object(r, "run_result", o.run_result);
  if (const Json* a = r.value("attestations", Json::value_t::array, /*required=*/false)) o.attestations = *a;
  return done(r, std::move(o));
}

Json HeldOutRunRecord::to_json() const {
  return {{"run_id", run_id},
          {"step_id", step_id},
          {"attempt", attempt},
          {"held_out_sha256", held_out_sha256.str()},
          {"result_commitment", result_commitment.str()},
          {"passed", passed}};
}

Result<HeldOutRunRecord> HeldOutRunRecord::from_json(const Json& json) {
  JsonReader r(json, "held_out_run record");
  HeldOutRunRecord h;
  non_empty(r, "run_id", h.run_id);
  non_empty(r, "step_id", h.step_id);
  attempt_number(r, h.attempt);
  r.digest("held_out_sha256", h.held_out_sha256);
  r.digest("result_commitment", h.result_commitment);
  r.boolean("passed", h.passed);
  return done(r, std::move(h));
}

Json HeldOutRevealRecord::to_json() const {
  Json files_j = Json::array(), runs_j = Json::array();
  for (const File& f : files) files_j.push_back({{"path", f.path}, {"mode", f.mode}, {"blob", f.blob.str()}});
  for (const Run& run : runs) {
    Json bodies_j = Json::array();
    for (const Digest& d : run.bodies) bodies_j.push_back(d.str());
    runs_j.push_back({{"run_result_sha256", run.run_result_sha256.str()}, {"blob", run.blob.str()}, {"bodies", std::move(bodies_j)}});
  }
  return {{"held_out_sha256", held_out_sha256.str()}, {"at", at}, {"salt", salt}, {"files", std::move(files_j)}, {"runs", std::move(runs_j)}};
}

Result<HeldOutRevealRecord> HeldOutRevealRecord::from_json(const Json& json) {
  JsonReader r(json, "held_out_reveal record");
  HeldOutRevealRecord h;
  r.digest("held_out_sha256", h.held_out_sha256);
  non_empty(r, "at", h.at);
  non_empty(r, "salt", h.salt);
  for_each_object(r, "files", true, [&](JsonReader& f, size_t) {
    File file;
    int64_t mode = 0;
    non_empty(f, "path", file.path);
    f.integer("mode", mode, 0, 0777777);
    f.digest("blob", file.blob);
    file.mode = static_cast<uint32_t>(mode);
    h.files.push_back(std::move(file));
  });
  for_each_object(r, "runs", true, [&](JsonReader& f, size_t) {
    Run run;
    std::vector<std::string> bodies;
    f.digest("run_result_sha256", run.run_result_sha256);
    f.digest("blob", run.blob);
    f.strings("bodies", bodies);
    for (const std::string& b : bodies) {
      auto d = Digest::parse(b);
      if (!d) {
        f.fail("bodies", b + " is not a digest");
        break;
      }
      run.bodies.push_back(*d);
    }
    h.runs.push_back(std::move(run));
  });
  return done(r, std::move(h));
}

Json SpeculationRecord::to_json() const {
  Json j = {{"run_id", run_id}, {"step_id", step_id}, {"attempt", attempt}, {"run", run},
            {"base_tree", base_tree}, {"tree", tree}, {"reason", reason}};
  if (diff_sha256) j["diff_sha256"] = diff_sha256->str();
  return j;
}

Result<SpeculationRecord> SpeculationRecord::from_json(const Json& json) {
  JsonReader r(json, "speculation record");
  SpeculationRecord s;
  non_empty(r, "run_id", s.run_id);
  non_empty(r, "step_id", s.step_id);
  attempt_number(r, s.attempt);
  non_empty(r, "run", s.run);
  if (r.ok() && s.run != "checks" && s.run != "base" && s.run != "oracle") r.fail("run", "must be checks, base or oracle");
  non_empty(r, "base_tree", s.base_tree);
  non_empty(r, "tree", s.tree);
  if (r.has("diff_sha256")) {
    Digest d;
    r.digest("diff_sha256", d);
    s.diff_sha256 = d;
  }
  non_empty(r, "reason", s.reason);
  return done(r, std::move(s));
}

Json DecisionRecord::to_json() const {
  Json j = {{"run_id", run_id},
          {"step_id", step_id},
          {"attempt", attempt},
          {"plan_sha256", plan_sha256.str()},
          {"policy_sha256", policy_sha256.str()},
          {"completed_steps", completed_steps},
          {"proposal_seq", proposal_seq},
          {"run_result_seq", run_result_seq ? Json(*run_result_seq) : Json(nullptr)},
          {"verdict", verdict.to_json()}};
  if (base_run_seq) j["base_run_seq"] = *base_run_seq;
  if (oracle_run_seq) j["oracle_run_seq"] = *oracle_run_seq;
  if (held_out_run_seq) j["held_out_run_seq"] = *held_out_run_seq;
  return j;
}

Result<DecisionRecord> DecisionRecord::from_json(const Json& json) {
  JsonReader r(json, "decision record");
  DecisionRecord d;
  non_empty(r, "run_id", d.run_id);
  r.string("step_id", d.step_id);
  attempt_number(r, d.attempt);
  r.digest("plan_sha256", d.plan_sha256);
  r.digest("policy_sha256", d.policy_sha256);
  r.strings("completed_steps", d.completed_steps);
  r.unsigned_integer("proposal_seq", d.proposal_seq, 0, kMaxSeq);
  nullable_seq(r, "run_result_seq", d.run_result_seq);
  if (r.has("base_run_seq")) {
    uint64_t seq = 0;
    r.unsigned_integer("base_run_seq", seq, 0, kMaxSeq);
    d.base_run_seq = seq;
  }
  if (r.has("oracle_run_seq")) {
    uint64_t seq = 0;
    r.unsigned_integer("oracle_run_seq", seq, 0, kMaxSeq);
    d.oracle_run_seq = seq;
  }
  if (r.has("held_out_run_seq")) {
    uint64_t seq = 0;
    r.unsigned_integer("held_out_run_seq", seq, 0, kMaxSeq);
    d.held_out_run_seq = seq;
  }
  if (const Json* verdict = r.value("verdict", Json::value_t::object)) {
    auto parsed = Verdict::from_json(*verdict);
    if (parsed) d.verdict = std::move(*parsed);
    else r.adopt(std::unexpected(parsed.error()));
  }
  return done(r, std::move(d));
}

// --- commit ---

Json CommitRecord::to_json() const {
  Json j = {{"run_id", run_id},
          {"step_id", step_id},
          {"attempt", attempt},
          {"commit", commit},
          {"tree", tree},
          {"parent", parent},
          {"branch", branch},
          {"plan_sha256", plan_sha256.str()},
          {"proposal_sha256", proposal_sha256.str()},
          {"run_result_sha256", run_result_sha256.str()},
          {"policy_sha256", policy_sha256.str()},
          {"decision_seq", decision_seq}};
  if (held_out_sha256) j["held_out_sha256"] = held_out_sha256->str();
  return j;
}

Result<CommitRecord> CommitRecord::from_json(const Json& json, std::string_view where) {
  CommitRecord c;
  JsonReader r(json, std::string(where));
  non_empty(r, "run_id", c.run_id);
  non_empty(r, "step_id", c.step_id);
  r.unsigned_integer("attempt", c.attempt, 0, kMaxSeq);
  git_id(r, "commit", c.commit);
  git_id(r, "tree", c.tree);
  git_id(r, "parent", c.parent);
  r.string("branch", c.branch);
  if (r.ok() && (!c.branch.starts_with("refs/heads/") || c.branch.size() == 11)) {
    r.fail("branch", "must be a full branch ref (refs/heads/NAME)");
  }
  r.digest("plan_sha256", c.plan_sha256);
  r.digest("proposal_sha256", c.proposal_sha256);
  r.digest("run_result_sha256", c.run_result_sha256);
  r.digest("policy_sha256", c.policy_sha256);
  r.unsigned_integer("decision_seq", c.decision_seq, 0, kMaxSeq);
  r.optional_digest("held_out_sha256", c.held_out_sha256);
  return done(r, std::move(c));
}

Result<CommitIntentRecord> CommitIntentRecord::from_json(const Json& json) {
  auto c = CommitRecord::from_json(json, "commit_intent record");
  if (!c) return std::unexpected(c.error());
  return CommitIntentRecord{std::move(*c)};
}

// --- step evidence ---

Json Artifact::to_json() const {
  Json j = {{"artifactId", artifact_id},
            {"type", type},
            {"mimeType", mime_type},
            {"path", path},
            {"sizeBytes", size_bytes},
            {"digest", digest.str()},
            {"createdAt", created_at}};
  if (check) j["check"] = *check;
  return j;
}

Result<Artifact> Artifact::from_json(const Json& json) {
  JsonReader r(json, "artifact");
  Artifact a;
  r.string("artifactId", a.artifact_id);
  r.string("type", a.type);
  r.string("mimeType", a.mime_type);
  r.string("path", a.path);
  r.unsigned_integer("sizeBytes", a.size_bytes, 0, kMaxSeq);
  r.digest("digest", a.digest);
  if (r.has("check")) {
    std::string check;
    r.string("check", check);
    a.check = std::move(check);
  }
  r.integer("createdAt", a.created_at, 0, kMaxCanonicalInteger);
  return done(r, std::move(a));
}

Json StepEvidenceRecord::to_json() const {
  Json artifact_list = Json::array();
  for (const auto& a : artifacts) artifact_list.push_back(a.to_json());
  Json j = {{"run_id", run_id},
            {"stepId", step_id},
            {"toolName", tool_name},
            {"input", {{"step_sha256", step_sha256.str()}}},
            {"output", commit ? Json{{"commit", *commit}} : Json{{"refusals", refusals}}},
            {"schemaValidation", "pass"},
            {"requestId", request_id},
            {"durationMs", duration_ms},
            {"retryCount", retry_count},
            {"replanEvents", replan_events},
            {"status", completed ? "completed" : "failed"},
            {"artifacts", artifact_list}};
  if (error_stack) j["errorStack"] = *error_stack;
  return j;
}

Result<StepEvidenceRecord> StepEvidenceRecord::from_json(const Json& json) {
  JsonReader r(json, "step_evidence record");
  StepEvidenceRecord e;
  non_empty(r, "run_id", e.run_id);
  r.string("stepId", e.step_id);
  r.string("toolName", e.tool_name);
  if (const Json* input = r.value("input", Json::value_t::object)) {
    JsonReader in(*input, r.path("input"));
    in.digest("step_sha256", e.step_sha256);
    r.adopt(in.finish());
  }
  if (const Json* output = r.value("output", Json::value_t::object)) {
    JsonReader out(*output, r.path("output"));
    if (out.has("commit")) {
      std::string commit;
      git_id(out, "commit", commit);
      e.commit = std::move(commit);
    } else {
      out.integer("refusals", e.refusals, 0, kMaxCanonicalInteger);
    }
    r.adopt(out.finish());
  }
  std::string validation;
  r.string("schemaValidation", validation);
  if (r.ok() && validation != "pass") r.fail("schemaValidation", "must be \"pass\"");
  r.string("requestId", e.request_id);
  r.integer("durationMs", e.duration_ms, 0, kMaxCanonicalInteger);
  r.integer("retryCount", e.retry_count, 0, kMaxCanonicalInteger);
  r.strings("replanEvents", e.replan_events);
  std::string status;
  r.string("status", status);
  if (r.ok() && status != "completed" && status != "failed") r.fail("status", "must be completed or failed");
  e.completed = status == "completed";
  if (const Json* list = r.value("artifacts", Json::value_t::array)) {
    for (size_t i = 0; i < list->size() && r.ok(); ++i) {
      auto a = Artifact::from_json((*list)[i]);
      if (a) e.artifacts.push_back(std::move(*a));
      else r.fail("artifacts", "[" + std::to_string(i) + "]: " + a.error().message);
    }
  }
  if (r.has("errorStack")) {
    std::string stack;
    r.string("errorStack", stack);
    e.error_stack = std::move(stack);
  }
  return done(r, std::move(e));
}

}  // namespace warden::kernel
