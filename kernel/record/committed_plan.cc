#include "kernel/record/committed_plan.h"

#include "kernel/record/records.h"

namespace warden::kernel {

Result<BuildPlan> find_committed_plan(const Ledger& ledger, const Digest& plan_sha256) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  // The newest commit of the digest: the ledger keeps no index by payload, so records are
  // scanned newest first.
  std::optional<uint64_t> proposal_seq;
  Status walked = snap->for_each_record(
      0, snap->size(),
      [&](const RecordView& r) -> Result<bool> {
        if (r.kind != record_kind::plan_commit) return true;
        auto payload = parse_json(r.payload);
        if (!payload) return true;  // verify's to report, not ours
        auto commit = PlanCommitRecord::from_json(*payload);
        if (!commit || commit->plan_sha256 != plan_sha256) return true;
        proposal_seq = commit->proposal_seq;
        return false;
      },
      LedgerSnapshot::Order::backward);
  if (!walked) return std::unexpected(walked.error());
  if (!proposal_seq) {
    return fail(Errc::not_found, "no plan " + plan_sha256.str() + " is committed to the ledger " + ledger.dir().string() +
                                     " (warden plan commit records one)");
  }
  auto record = snap->record(*proposal_seq);
  if (!record) return std::unexpected(record.error());
  const std::string where = "the plan_proposal record at seq " + std::to_string(*proposal_seq);
  if (record->kind != record_kind::plan_proposal) return fail(Errc::corrupt, where + " is a " + record->kind + " record");
  auto payload = parse_json(record->payload);
  if (!payload) return std::unexpected(Error{Errc::corrupt, where + ": " + payload.error().message});
  auto proposed = PlanProposalRecord::from_json(*payload);
  if (!proposed) return std::unexpected(Error{Errc::corrupt, where + ": " + proposed.error().message});
  auto plan = BuildPlan::from_json(proposed->plan);
  if (!plan) return std::unexpected(Error{Errc::corrupt, where + ": " + plan.error().message});
  if (plan->digest() != plan_sha256) {
    return fail(Errc::corrupt, where + " holds a plan that hashes to " + plan->digest().str() + ", not " + plan_sha256.str());
  }
  return plan;
}

}  // namespace warden::kernel
