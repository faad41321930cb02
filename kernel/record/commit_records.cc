// The records of an accepted step (records.h): commit and commit_intent, and the step's
// evidence with its artifacts.
#include "kernel/record/records.h"

#include "kernel/record/record_fields.h"

namespace warden::kernel {

using namespace detail;

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
