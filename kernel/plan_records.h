// The ledger records of a plan's way in: the proposal, then its commit or its refusal.
//   plan_proposal {"run_id": string|null, "source": "generated"|"file"|"executor",
//                  "plan_sha256", "plan": BuildPlan JSON}
//   plan_commit   {"run_id", "plan_sha256", "blueprint_sha256": string|null, "proposal_seq"}
//   refusal       {"run_id", "subject": "plan", "error_type": "PLANNING_ERROR", "plan_sha256",
//                  "proposal_seq", "reasons": [{"code", "detail"}]}
// propose_plan() writes the proposal, verifies the plan (plan_verify.h) and writes the
// verdict right after it: a plan is committed only with its proposal before it.
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
#include "kernel/build_plan.h"
#include "kernel/build_records.h"
#include "kernel/policy.h"
#include "kernel/verdict.h"
#include "ledger/ledger.h"

namespace warden::kernel {

namespace record_kind {
inline constexpr std::string_view plan_proposal = "plan_proposal";
inline constexpr std::string_view plan_commit = "plan_commit";
}  // namespace record_kind

enum class PlanSource { generated, file, executor };
std::string_view plan_source_name(PlanSource source);

Json plan_proposal_payload(const std::optional<std::string>& run_id, PlanSource source, const BuildPlan& plan);
Json plan_commit_payload(const std::optional<std::string>& run_id, const BuildPlan& plan, uint64_t proposal_seq);
Json plan_refusal_payload(const std::optional<std::string>& run_id, const Digest& plan_sha256, uint64_t proposal_seq,
                          const std::vector<Reason>& reasons);

struct PlanDecision {
  Digest plan_sha256;
  uint64_t proposal_seq = 0;
  Appended decision;            // the plan_commit record, or the refusal
  std::vector<Reason> reasons;  // empty when committed
  bool committed() const { return reasons.empty(); }
};

// Appends one record and says where it landed (Ledger::append, LedgerWriter::record, ...).
using RecordAppender = std::function<Result<Appended>(std::string_view kind, const Json& payload)>;

Result<PlanDecision> propose_plan(const RecordAppender& append, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source);
// Both records in one ledger transaction: a crash leaves neither or both.
Result<PlanDecision> propose_plan(Ledger& ledger, const BuildPlan& plan, const Policy& policy,
                                  const std::optional<std::string>& run_id, PlanSource source);

}  // namespace warden::kernel
