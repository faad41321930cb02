// The records of a step's attempt (records.h): proposal, run_result, base_run, oracle_run,
// held_out_run, held_out_reveal, speculation and decision.
#include "kernel/record/records.h"

#include "kernel/record/record_fields.h"
#include "kernel/plan/schema_fields.h"

namespace warden::kernel {

using namespace detail;

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

}  // namespace warden::kernel
