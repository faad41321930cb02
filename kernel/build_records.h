// The ledger records a build writes, by kind, and the field names replay reads back. One
// place for the names, so the writer (build_loop.cc) and the auditor (replay.cc) cannot
// drift apart. Payloads are canonical JSON objects; every one carries "run_id".
//
//   run_status    {"run_id", "status", "error_type"?, "error"?}
//   run_event     RunEvent::to_json()
//   blueprint     {"run_id", "blueprint_sha256", "blueprint"}
//   policy        {"run_id", "policy_sha256", "policy"}
//   plan_proposal / plan_commit / refusal(subject "plan")   plan_records.h
//   proposal      {"run_id", "step_id", "attempt", "executor", "evidence_blob", "diff_sha256"|null,
//                  "error"|null}          evidence_blob: ProposalEvidence JSON in the blob store
//   run_result    {"run_id", "step_id", "attempt", "run_result_sha256", "run_result"}  (deterministic JSON)
//   decision      {"run_id", "step_id", "attempt", "plan_sha256", "policy_sha256", "completed_steps",
//                  "proposal_seq", "run_result_seq"|null, "verdict"}
//   refusal       {"run_id", "subject": "proposal", "report": RefusalReport}
//   commit        CommitRecord (commit_record.h)
//   step_evidence seeds/002 RunEvidence: {"run_id", "stepId", "toolName", "input", "output",
//                  "schemaValidation", "requestId", "durationMs", "retryCount", "replanEvents",
//                  "status", "artifacts"}
#pragma once

#include <string_view>

namespace warden::kernel::record_kind {

inline constexpr std::string_view run_status = "run_status";
inline constexpr std::string_view run_event = "run_event";
inline constexpr std::string_view blueprint = "blueprint";
inline constexpr std::string_view policy = "policy";
inline constexpr std::string_view proposal = "proposal";
inline constexpr std::string_view run_result = "run_result";
inline constexpr std::string_view decision = "decision";
inline constexpr std::string_view refusal = "refusal";
inline constexpr std::string_view step_evidence = "step_evidence";

}  // namespace warden::kernel::record_kind
