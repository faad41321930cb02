#include "kernel/record/plan_commit.h"

#include "kernel/judge/plan_verify.h"

namespace warden::kernel {

Result<PlanDecision> propose_plan(const RecordAppender& append, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source,
                                  const std::optional<PlanAuthor>& author) {
  PlanDecision d;
  d.plan_sha256 = plan.digest();
  PlanProposalRecord proposed;
  proposed.run_id = run_id;
  proposed.source = source;
  proposed.plan_sha256 = d.plan_sha256;
  proposed.plan = plan.to_json();
  if (author) {
    proposed.executor = author->executor;
    proposed.executor_identity = author->identity;
  }
  auto proposal = append(PlanProposalRecord::kind, proposed.to_json());
  if (!proposal) return std::unexpected(proposal.error().with_context("recording the plan proposal"));
  d.proposal_seq = proposal->seq;
  d.reasons = verify_plan(plan, policy);
  auto decision = d.committed()
                      ? append(PlanCommitRecord::kind,
                               PlanCommitRecord{run_id, d.plan_sha256, plan.blueprint_sha256, d.proposal_seq}.to_json())
                      : append(PlanRefusalRecord::kind,
                               PlanRefusalRecord{run_id, d.plan_sha256, d.proposal_seq, std::nullopt, d.reasons}.to_json());
  if (!decision) return std::unexpected(decision.error().with_context("recording the plan decision"));
  d.decision = *decision;
  return d;
}

Result<PlanDecision> propose_plan(Ledger& ledger, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source) {
  Result<PlanDecision> out = fail(Errc::internal, "the ledger write did not run");
  Status st = ledger.write([&](WriteTxn& writer) -> Status {
    auto append = [&](std::string_view kind, const Json& payload) -> Result<Appended> {
      auto canonical = canonicalize(payload);
      if (!canonical) return std::unexpected(canonical.error());
      return writer.append(kind, *canonical);
    };
    // The policy the plan is judged under goes right before its proposal: replay judges the
    // plan again under it (a build records its policy once, at the run's start).
    auto recorded = append(PolicyRecord::kind, PolicyRecord{run_id, policy.digest(), policy.to_json()}.to_json());
    if (!recorded) return std::unexpected(recorded.error().with_context("recording the policy"));
    out = propose_plan(append, plan, policy, run_id, source);
    if (!out) return std::unexpected(out.error());
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden::kernel
