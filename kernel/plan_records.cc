#include "kernel/plan_records.h"

#include "kernel/plan_verify.h"

namespace warden::kernel {
namespace {

Json nullable(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

}  // namespace

std::string_view plan_source_name(PlanSource source) {
  switch (source) {
    case PlanSource::generated: return "generated";
    case PlanSource::file: return "file";
    case PlanSource::executor: return "executor";
  }
  return "file";
}

Json plan_proposal_payload(const std::optional<std::string>& run_id, PlanSource source, const BuildPlan& plan) {
  return {{"run_id", nullable(run_id)},
          {"source", plan_source_name(source)},
          {"plan_sha256", plan.digest().str()},
          {"plan", plan.to_json()}};
}

Json plan_commit_payload(const std::optional<std::string>& run_id, const BuildPlan& plan, uint64_t proposal_seq) {
  return {{"run_id", nullable(run_id)},
          {"plan_sha256", plan.digest().str()},
          {"blueprint_sha256", plan.blueprint_sha256 ? Json(plan.blueprint_sha256->str()) : Json(nullptr)},
          {"proposal_seq", proposal_seq}};
}

Json plan_refusal_payload(const std::optional<std::string>& run_id, const Digest& plan_sha256, uint64_t proposal_seq,
                          const std::vector<Reason>& reasons) {
  Json reasons_j = Json::array();
  for (const Reason& r : reasons) reasons_j.push_back({{"code", r.code}, {"detail", r.detail}});
  return {{"run_id", nullable(run_id)},
          {"subject", "plan"},
          {"error_type", "PLANNING_ERROR"},
          {"plan_sha256", plan_sha256.str()},
          {"proposal_seq", proposal_seq},
          {"reasons", reasons_j}};
}

Result<PlanDecision> propose_plan(const RecordAppender& append, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source) {
  PlanDecision d;
  d.plan_sha256 = plan.digest();
  auto proposal = append(record_kind::plan_proposal, plan_proposal_payload(run_id, source, plan));
  if (!proposal) return std::unexpected(proposal.error().with_context("recording the plan proposal"));
  d.proposal_seq = proposal->seq;
  d.reasons = verify_plan(plan, policy);
  auto decision = d.committed()
                      ? append(record_kind::plan_commit, plan_commit_payload(run_id, plan, d.proposal_seq))
                      : append(record_kind::refusal, plan_refusal_payload(run_id, d.plan_sha256, d.proposal_seq, d.reasons));
  if (!decision) return std::unexpected(decision.error().with_context("recording the plan decision"));
  d.decision = *decision;
  return d;
}

Result<PlanDecision> propose_plan(Ledger& ledger, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source) {
  Result<PlanDecision> out = fail(Errc::internal, "the ledger write did not run");
  Status st = ledger.write([&](WriteTxn& writer) -> Status {
    out = propose_plan(
        [&](std::string_view kind, const Json& payload) -> Result<Appended> {
          auto canonical = canonicalize(payload);
          if (!canonical) return std::unexpected(canonical.error());
          return writer.append(kind, *canonical);
        },
        plan, policy, run_id, source);
    if (!out) return std::unexpected(out.error());
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden::kernel
