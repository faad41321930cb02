// Replay's held-out bundles (replay_internal.h): every reveal held to its commitment, every
// decision's held-out run to the revealed result, and a bundle that judged one run revealed
// after its end.
#include <set>
#include <string>

#include "kernel/audit/replay_internal.h"
#include "kernel/judge/approval.h"
#include "kernel/judge/oracle_run.h"

namespace warden::kernel::detail {

// Every held-out reveal (held_out_reveal.h), read and held to its commitment before the
// records are replayed: a reveal follows the decisions it is for. A reveal that does not match
// is a problem at its own seq.
Status Replayer::read_reveals() {
  for (uint64_t seq = 0; seq < snap_.size(); ++seq) {
    auto rec = snap_.record(seq);
    if (!rec) return std::unexpected(rec.error());
    if (rec->kind != record_kind::held_out_reveal) continue;
    auto payload = parse_json(rec->payload);
    auto record = payload ? HeldOutRevealRecord::from_json(*payload) : Result<HeldOutRevealRecord>(std::unexpected(payload.error()));
    auto revealed = record ? read_reveal(*record, [&](const Digest& d) { return snap_.blob(d); })
                           : Result<RevealedBundle>(std::unexpected(record.error()));
    if (!revealed) {
      bad_reveals_.emplace(seq, revealed.error().message);
      continue;
    }
    reveal_seqs_.try_emplace(record->held_out_sha256, seq);
    RevealedBundle& into = reveals_[record->held_out_sha256];
    into.bundle = std::move(revealed->bundle);
    into.runs.merge(revealed->runs);
  }
  return {};
}

Status Replayer::on_reveal(const HeldOutRevealRecord&) {
  if (auto bad = bad_reveals_.find(seq_); bad != bad_reveals_.end()) problem("the held-out reveal does not match: " + bad->second);
  return {};
}

// A bundle that judged one build run is revealed when the run ends: an ended run whose
// decisions rest on one with no reveal after its end has decisions no one can check.
void Replayer::check_run_end_reveals() {
  for (const auto& [id, run] : runs_) {
    if (!run.ended) continue;
    for (const Digest& bundle : run.reveal_at_end) {
      auto revealed = reveal_seqs_.find(bundle);
      if (revealed == reveal_seqs_.end() || revealed->second < *run.ended) {
        problem(*run.ended, std::string(record_kind::run_status),
                "run " + id + " ended here, and its decisions rest on the held-out bundle " + bundle.str() +
                    ", but no reveal of it follows the run's end");
        return;
      }
    }
  }
}

// Whether the held-out tests passed, as a decision used it: the held_out_run record's, held to
// the revealed result when the bundle is revealed (else the decision is pending reveal).
Result<bool> Replayer::held_out_verdict(const DecisionRecord& d, const BuildPlan& plan, const Policy& policy, const RunFacts& facts_of_run,
                                        const ProposalEvidence& evidence) {
  auto record = earlier<HeldOutRunRecord>(*d.held_out_run_seq, "held_out_run_seq");
  if (!record) return std::unexpected(record.error());
  const std::string at = "held-out run " + std::to_string(*d.held_out_run_seq);
  if (record->run_id != d.run_id || record->step_id != d.step_id || record->attempt != d.attempt) {
    return fail(Errc::verification_failed, at + " is another attempt's");
  }
  if (!plan.held_out || plan.held_out->sha256 != record->held_out_sha256) {
    return fail(Errc::verification_failed, at + " ran a bundle the plan does not commit to");
  }
  // Public before this decision, the tests judged nothing: a retry could have been fitted to them.
  if (auto first = reveal_seqs_.find(record->held_out_sha256); first != reveal_seqs_.end() && first->second < seq_) {
    return fail(Errc::verification_failed, at + " used the bundle " + record->held_out_sha256.str() +
                                               " after its reveal at record " + std::to_string(first->second));
  }
  if (plan.held_out->reveal == HeldOutReveal::at_run_end) facts(d.run_id).reveal_at_end.insert(record->held_out_sha256);
  auto bundle = reveals_.find(record->held_out_sha256);
  if (bundle == reveals_.end()) {
    ++report_.pending_reveal;
    return record->passed;
  }
  auto result = bundle->second.runs.find(record->result_commitment);
  if (result == bundle->second.runs.end()) {
    return fail(Errc::verification_failed, at + ": the reveal of " + record->held_out_sha256.str() + " holds no run " +
                                               record->result_commitment.str() + " commits to");
  }
  const RunResult& run = result->second;
  // The held-out run tests the proposal without its changes to tests and hooks (a new test
  // module could rebind what the held-out tests call), as the oracle run does.
  auto diff = Diff::from_json(evidence.diff);
  if (!diff) return fail(Errc::verification_failed, at + ": the proposal's diff does not parse");
  const BuildStep* step = plan.find(d.step_id);
  std::set<std::string> approved;
  if (step && !step->approvals.empty()) approved = admitted_tests(step->approvals, diff->digest(), policy.approvers).tests;
  const std::optional<Diff> without_tests = oracle_diff(*diff, evidence, policy.oracle, approved);
  const Diff& tested = without_tests ? *without_tests : *diff;
  if (run.diff_sha256 != tested.digest()) {
    return fail(Errc::verification_failed, at + " is of another diff than the proposal's without its test changes");
  }
  const int64_t failures = held_out_failures(run, bundle->second.bundle);
  if ((failures == 0) != record->passed) {
    return fail(Errc::verification_failed, at + " records that the held-out tests " + (record->passed ? "passed" : "did not pass") +
                                               ", but its revealed result has " + std::to_string(failures) + " not passing");
  }
  if (options_.rerun) {
    if (Status st = rerun_held_out(plan, policy.name, d.policy_sha256.str(), facts_of_run, tested, bundle->second.bundle, run); !st) {
      return std::unexpected(st.error());
    }
  }
  ++report_.revealed;
  return record->passed;
}

}  // namespace warden::kernel::detail
