// A plan's way into the ledger: propose_plan() writes the plan_proposal record, verifies the
// plan (plan_verify.h) and writes the verdict right after it — plan_commit, or a refusal
// with subject "plan" (PLANNING_ERROR). A plan is committed only with its proposal before
// it; the records are records.h's PlanProposalRecord, PlanCommitRecord, PlanRefusalRecord.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/build_plan.h"
#include "kernel/judge/policy.h"
#include "kernel/record/records.h"
#include "kernel/judge/verdict.h"
#include "ledger/ledger.h"

namespace warden::kernel {

struct PlanDecision {
  Digest plan_sha256;
  uint64_t proposal_seq = 0;
  Appended decision;            // the plan_commit record, or the refusal
  std::vector<Reason> reasons;  // empty when committed
  bool committed() const { return reasons.empty(); }
};

// Appends one record and says where it landed (Ledger::append, LedgerWriter::record, ...).
using RecordAppender = std::function<Result<Appended>(std::string_view kind, const Json& payload)>;

// Who proposed a plan from an executor: recorded with its plan_proposal record.
struct PlanAuthor {
  std::string executor;                    // Proposer::name()
  std::optional<std::string> identity;     // Proposer::answered_by()
};

Result<PlanDecision> propose_plan(const RecordAppender& append, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source,
                                  const std::optional<PlanAuthor>& author = std::nullopt);
// For a plan committed on its own (warden plan commit): the policy record, the proposal and
// its verdict in one ledger transaction, so a crash leaves all or none and replay can judge
// the plan again under the policy recorded right before it.
Result<PlanDecision> propose_plan(Ledger& ledger, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source);

}  // namespace warden::kernel
