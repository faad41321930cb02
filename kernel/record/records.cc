// The records of a run's course and its plans (records.h): run_status, blueprint, policy,
// plan_proposal, plan_commit and the two refusals; and the names records share. A step's
// attempt is in attempt_records.cc, its commit and evidence in commit_records.cc.
#include "kernel/record/records.h"

#include "kernel/record/record_fields.h"

namespace warden::kernel {

using namespace detail;

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

}  // namespace warden::kernel
