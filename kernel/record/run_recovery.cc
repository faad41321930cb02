#include "kernel/record/run_recovery.h"

#include <set>

#include "kernel/plan/build_plan.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/record/run_registry.h"

namespace warden::kernel {

namespace {

// What the ledger holds about a run's end and its last commit.
struct RunTail {
  std::optional<RunStatus> status;
  std::optional<CommitRecord> unconfirmed;
  std::optional<std::string> last_confirmed;  // the run's last commit record's commit
  // Whether the unconfirmed intent is one the kernel could have written: it follows an
  // accepted decision of its run, step and attempt, on the run's last confirmed commit.
  // Anyone who can append to the ledger can append an intent; recovery moves a branch only
  // for one that stands.
  std::string doubt;
  // Held-out bundles its plans commit to that are revealed when the run ends (held_out.h).
  std::set<Digest> reveal_at_end;
};

// Why `intent` is not an intent the run's kernel wrote, or "" when it stands.
std::string doubt_intent(LedgerSnapshot& snap, const CommitRecord& intent, const std::optional<std::string>& last_confirmed) {
  if (last_confirmed && intent.parent != *last_confirmed) {
    return "its parent " + intent.parent + " is not the run's last confirmed commit " + *last_confirmed;
  }
  if (intent.decision_seq >= snap.size()) return "it names decision " + std::to_string(intent.decision_seq) + ", which does not exist";
  auto record = snap.record_view(intent.decision_seq);
  if (!record || record->kind != record_kind::decision) {
    return "record " + std::to_string(intent.decision_seq) + " it names is not a decision";
  }
  auto payload = parse_json(record->payload);
  auto decision = payload ? DecisionRecord::from_json(*payload) : Result<DecisionRecord>(std::unexpected(payload.error()));
  if (!decision || decision->run_id != intent.run_id || decision->step_id != intent.step_id ||
      static_cast<uint64_t>(decision->attempt) != intent.attempt || !decision->verdict.accepted) {
    return "decision " + std::to_string(intent.decision_seq) + " is not an accepted decision of its run, step and attempt";
  }
  return {};
}

Result<RunTail> read_tail(LedgerSnapshot& snap, const std::string& run_id) {
  RunTail tail;
  auto seqs = snap.run_records(run_id);
  if (!seqs) return std::unexpected(seqs.error());
  for (uint64_t seq : *seqs) {
    auto record = snap.record_view(seq);
    if (!record) return std::unexpected(record.error());
    const std::string_view kind = record->kind;
    if (kind != record_kind::run_status && kind != record_kind::commit_intent && kind != record_kind::commit &&
        kind != record_kind::plan_proposal) {
      continue;
    }
    auto payload = parse_json(record->payload);
    if (!payload) return std::unexpected(payload.error().with_context("record " + std::to_string(seq)));
    if (kind == record_kind::plan_proposal) {
      auto r = PlanProposalRecord::from_json(*payload);
      auto plan = r ? BuildPlan::from_json(r->plan) : Result<BuildPlan>(std::unexpected(r.error()));
      if (plan && r->run_id == run_id && plan->held_out && plan->held_out->reveal == HeldOutReveal::at_run_end) {
        tail.reveal_at_end.insert(plan->held_out->sha256);
      }
    } else if (kind == record_kind::run_status) {
      auto r = RunStatusRecord::from_json(*payload);
      if (r && r->run_id == run_id) tail.status = r->status;
    } else if (kind == record_kind::commit_intent) {
      auto r = CommitIntentRecord::from_json(*payload);
      if (r && r->commit.run_id == run_id) tail.unconfirmed = r->commit;
    } else {
      auto r = CommitRecord::from_json(*payload);
      if (r && r->run_id == run_id) {
        if (tail.unconfirmed && tail.unconfirmed->commit == r->commit) tail.unconfirmed.reset();
        tail.last_confirmed = r->commit;
      }
    }
  }
  if (tail.unconfirmed) {
    // The last confirmed commit before the intent is the one it must build on.
    tail.doubt = doubt_intent(snap, *tail.unconfirmed, tail.last_confirmed);
  }
  return tail;
}

// Moves a branch left at an unconfirmed commit back to its parent; says what was done.
std::string restore_branch(GitRepo* repo, const CommitRecord& intent) {
  const std::string name = intent.branch.substr(std::string_view("refs/heads/").size());
  if (!repo) return intent.branch + " not checked (no repository given): it may hold " + intent.commit;
  auto tip = repo->branch_tip(name);
  if (!tip) return intent.branch + " unreadable: " + tip.error().message();
  if (!*tip || (*tip)->hex() != intent.commit) {
    return intent.branch + " is not at the unconfirmed commit " + intent.commit + ": left as it is";
  }
  auto parent = ObjectId::parse(intent.parent);
  if (!parent) return intent.branch + " left at " + intent.commit + ": the intent's parent is not a commit id";
  if (auto moved = repo->move_branch(name, **tip, *parent); !moved) {
    return intent.branch + " left at " + intent.commit + ": moving it back failed: " + moved.error().message();
  }
  return intent.branch + " moved back from the unconfirmed " + intent.commit + " to " + intent.parent;
}

// Reveals the ended run's held-out bundles not revealed yet (a run that died before its end,
// or between recording its end and revealing): the run judges nothing more, and until the
// reveal replay cannot check what they decided. Says what was done.
std::string reveal_run_bundles(Ledger& ledger, const std::set<Digest>& bundles) {
  const HeldOutVault vault(ledger.dir());
  std::string said;
  for (const Digest& bundle : bundles) {
    if (vault.revealed(bundle)) continue;
    auto revealed = reveal_held_out(ledger, vault, bundle);
    said += (said.empty() ? "" : "; ") + std::string("held-out bundle ") + bundle.str() +
            (revealed ? " revealed at record " + std::to_string(revealed->record.seq)
                      : " could not be revealed: " + revealed.error().message);
  }
  return said;
}

}  // namespace

Json RecoveredRun::to_json() const {
  Json j = {{"run_id", run_id}, {"last_status", last_status}, {"recorded", recorded}, {"live", live}};
  if (unconfirmed) j["unconfirmed_commit"] = unconfirmed->commit;
  if (!branch.empty()) j["branch"] = branch;
  if (!message.empty()) j["error"] = message;
  if (!held_out.empty()) j["held_out"] = held_out;
  return j;
}

Result<std::vector<RecoveredRun>> recover_runs(Ledger& ledger, Clock& clock, IdSource& ids, GitRepo* repo,
                                               const std::vector<std::string>& run_ids) {
  const bool from_markers = run_ids.empty();
  const std::vector<std::string> wanted = from_markers ? orphaned_runs(ledger.dir()) : run_ids;
  std::vector<RecoveredRun> out;
  for (const std::string& run_id : wanted) {
    RecoveredRun r;
    r.run_id = run_id;
    if (live_run_process(ledger.dir(), run_id)) {
      r.live = true;
      out.push_back(std::move(r));
      continue;
    }
    auto snap = ledger.snapshot();
    if (!snap) return std::unexpected(snap.error());
    auto tail = read_tail(*snap, run_id);
    if (!tail) return std::unexpected(tail.error());
    if (!tail->status) {
      if (!from_markers) return fail(Errc::not_found, "no run " + run_id + " in the ledger " + ledger.dir().string());
      remove_run_marker(ledger.dir(), run_id);  // a marker with no run behind it
      continue;
    }
    r.last_status = run_status_name(*tail->status);
    r.unconfirmed = tail->unconfirmed;
    if (is_terminal(*tail->status)) {
      r.held_out = reveal_run_bundles(ledger, tail->reveal_at_end);
      remove_run_marker(ledger.dir(), run_id);
      out.push_back(std::move(r));
      continue;
    }
    r.message = "interrupted: the run's process ended without recording an end (killed, crashed, or the ledger "
                "refused its last records) while the run was " + r.last_status;
    if (r.unconfirmed) {
      r.branch = tail->doubt.empty() ? restore_branch(repo, *r.unconfirmed)
                                     : r.unconfirmed->branch + " left as it is: the unconfirmed intent does not stand (" +
                                           tail->doubt + ")";
      r.message += "; step " + r.unconfirmed->step_id + "'s commit " + r.unconfirmed->commit +
                   " was intended but never confirmed (" + r.branch + ")";
    }
    LedgerWriter writer(ledger);
    RunStatusRecord status{run_id, RunStatus::interrupted, ErrorType::execution_error, r.message};
    const int64_t now = clock.now_ms();
    if (Status st = writer.append(RunStatusRecord::kind, status.to_json(), now); !st) return std::unexpected(st.error());
    RunEvent event;
    event.event_id = ids.next_id("ev");
    event.run_id = run_id;
    event.type = RunEventType::run_failed;
    event.timestamp_ms = now;
    event.data = {{"error_type", error_type_name(ErrorType::execution_error)}, {"error", r.message}};
    if (Status st = writer.append(record_kind::run_event, event.to_json(), now); !st) return std::unexpected(st.error());
    if (Status st = writer.flush(); !st) return std::unexpected(st.error());
    r.held_out = reveal_run_bundles(ledger, tail->reveal_at_end);
    remove_run_marker(ledger.dir(), run_id);
    r.recorded = true;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace warden::kernel
