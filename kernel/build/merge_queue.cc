#include "kernel/build/merge_queue.h"

#include <atomic>
#include <map>
#include <thread>

#include "kernel/judge/approval.h"
#include "kernel/build/artifacts.h"
#include "kernel/plan/commit_order.h"
#include "kernel/judge/oracle_run.h"
#include "kernel/record/records.h"
#include "kernel/judge/step_checks.h"
#include "kernel/build/step_stages.h"
#include "kernel/build/watchdog.h"

namespace warden::kernel {
namespace {

// One step of the plan as the queue holds it between rounds.
struct Slot {
  size_t index = 0;  // in plan.steps
  bool started = false;
  int64_t started_ms = 0;
  std::string request_id;
  int64_t attempts = 0;            // proposals recorded
  std::optional<Answer> answer;    // the executor's, not yet settled
  ObjectId shown_head;             // the head the answer was proposed on
  std::optional<BaseRun> base;     // the step's base tested, once it reached the front
  bool stale = false;              // its last answer went stale: the next ask is the same attempt again
};

// Why a round's settling stopped, for the speculations it throws away.
struct Stop {
  std::string step_id;
  std::string reason;  // what every speculation behind the step is recorded with
  std::optional<QueueOutcome> end;
};

// Whether a run of `ran` (a speculative run's checks) will hold every check of `wanted`.
bool specs_cover(const std::vector<CheckSpec>& ran, const std::vector<CheckSpec>& wanted) {
  for (const CheckSpec& w : wanted) {
    bool found = false;
    for (const CheckSpec& r : ran) found = found || (r.name == w.name && r.digest() == w.digest());
    if (!found) return false;
  }
  return true;
}

class MergeQueue {
 public:
  explicit MergeQueue(QueueSite& site) : s_(site), order_(commit_order(site.plan)) {
    for (size_t i : order_) slots_[s_.plan.steps[i].id].index = i;
  }

  Result<QueueOutcome> run() {
    for (int64_t round = 1;; ++round) {
      std::vector<Slot*> window = ready_window();
      if (window.empty()) return finished();
      if (Status st = ask(window); !st) return std::unexpected(st.error());
      if (s_.stop.stop_requested()) {
        const BuildStep& step = s_.plan.steps[window.front()->index];
        return QueueOutcome{QueueEnd::cancelled, step.id, static_cast<int64_t>(window.front()->index),
                            window.front()->attempts, "cancelled while the executor proposed " + step.id};
      }
      speculate(round, window);
      auto stop = settle(window);
      if (!stop) {
        (void)s_.runner.drop_unused();
        return std::unexpected(stop.error());
      }
      if (Status st = discard(round, *stop); !st) return std::unexpected(st.error());
      if (stop->end) return *stop->end;
    }
  }

 private:
  // The steps not committed, in commit order, up to the first whose dependencies are not all
  // committed (a step lands only after every step ahead of it), at most the queue's depth.
  std::vector<Slot*> ready_window() {
    std::vector<Slot*> out;
    const size_t depth = static_cast<size_t>(s_.plan.merge_queue_depth.value_or(1));
    for (size_t i : order_) {
      const BuildStep& step = s_.plan.steps[i];
      if (s_.completed.contains(step.id)) continue;
      for (const std::string& d : step.dependencies) {
        if (!s_.completed.contains(d)) return out;
      }
      out.push_back(&slots_[step.id]);
      if (out.size() == depth) break;
    }
    return out;
  }

  // No step left to run: every step committed, or (a plan verify_plan would refuse) steps
  // waiting for dependencies that never come.
  QueueOutcome finished() const {
    for (size_t i : order_) {
      const BuildStep& step = s_.plan.steps[i];
      if (s_.completed.contains(step.id)) continue;
      return QueueOutcome{QueueEnd::failed, step.id, static_cast<int64_t>(i), 0,
                          "step " + step.id + " waits for dependencies no step of the plan provides"};
    }
    return QueueOutcome{};
  }

  StepContext context(const Slot& slot, std::stop_token stop, std::function<std::chrono::milliseconds()> time_left) {
    return StepContext{.rec = s_.rec,
                       .workspace = s_.workspace,
                       .runner = s_.runner,
                       .proposer = s_.proposer,
                       .plan = s_.plan,
                       .policy = s_.policy,
                       .step = s_.plan.steps[slot.index],
                       .index = static_cast<int64_t>(slot.index),
                       .completed = s_.completed,
                       .head = s_.head,
                       .start_tree = s_.start_tree,
                       .previous_run = s_.previous_run ? &*s_.previous_run : nullptr,
                       .plan_sha256 = s_.plan_sha256,
                       .policy_sha256 = s_.policy_sha256,
                       .refusals = s_.refusals,
                       .stop = std::move(stop),
                       .time_left = std::move(time_left),
                       .on_working = s_.on_working,
                       .held_out = s_.held_out,
                       .vault = s_.vault,
                       .held_out_runner = s_.held_out_runner};
  }

  std::chrono::milliseconds budget() const { return std::chrono::milliseconds(s_.step_budget_ms); }

  // Every step of the window without a proposal is asked for one, shown the head; the
  // requests and their events are recorded first, in commit order.
  Status ask(const std::vector<Slot*>& window) {
    std::vector<Slot*> asking;
    std::vector<executor::ProposalRequest> requests;
    for (Slot* slot : window) {
      if (slot->answer) continue;
      const BuildStep& step = s_.plan.steps[slot->index];
      StepContext ctx = context(*slot, s_.stop, [this] { return budget(); });
      if (!slot->started) {
        slot->started = true;
        slot->started_ms = s_.rec.now();
        slot->request_id = s_.rec.next_id("req");
        s_.rec.emit(RunEventType::step_started, ctx.index, s_.proposer.name(),
                    {{"step_id", step.id},
                     {"action", step_action_name(step.action)},
                     {"targets", step.targets},
                     {"steps_total", static_cast<int64_t>(s_.plan.steps.size())},
                     {"steps_completed", s_.steps_completed}});
      }
      requests.push_back(proposal_request(ctx, slot->attempts + 1));
      announce_proposal(ctx, slot->attempts + 1, slot->stale);
      slot->stale = false;
      asking.push_back(slot);
    }
    // Durable before any executor is asked, as in a sequential build.
    if (Status st = s_.rec.flush(); !st) return st;
    if (asking.empty()) return {};

    std::vector<std::optional<Checked<std::string>>> texts(asking.size());
    std::vector<std::optional<std::string>> identities(asking.size());
    {
      WorkTicker ticker(s_.on_working,
                        WorkingNotice{.step_index = static_cast<int64_t>(asking.front()->index),
                                      .steps_total = static_cast<int64_t>(s_.plan.steps.size()),
                                      .step_id = s_.plan.steps[asking.front()->index].id,
                                      .what = "executor (" + std::to_string(asking.size()) + " steps)",
                                      .elapsed = {}});
      // An executor that throws failed to answer, as one that crashed.
      auto ask_one = [&](size_t i) {
        try {
          texts[i] = s_.proposer.propose(requests[i]);
        } catch (const std::exception& e) {
          texts[i] = refuse(RefusalCode::executor_failed, "", std::string("internal error: ") + e.what());
        }
      };
      if (!s_.proposer.concurrent()) {
        // One at a time; who answered is read right after each answer (Proposer::answered_by).
        for (size_t i = 0; i < asking.size(); ++i) {
          ask_one(i);
          identities[i] = s_.proposer.answered_by();
        }
      } else {
        // A concurrent executor's answered_by() cannot say which call it speaks of; none is read,
        // whatever the number of jobs, so the ledger does not depend on it.
        const size_t threads = std::min<size_t>(asking.size(), std::max(s_.jobs, 1));
        std::atomic<size_t> next{0};
        std::vector<std::jthread> pool;
        for (size_t t = 1; t < threads; ++t) {
          pool.emplace_back([&] {
            for (size_t i = next++; i < asking.size(); i = next++) ask_one(i);
          });
        }
        for (size_t i = next++; i < asking.size(); i = next++) ask_one(i);
      }
    }
    for (size_t i = 0; i < asking.size(); ++i) {
      StepContext ctx = context(*asking[i], s_.stop, [this] { return budget(); });
      asking[i]->answer = read_answer(ctx, *texts[i], identities[i]);
      asking[i]->shown_head = s_.head;
    }
    return {};
  }

  // Layers the window's proposals in commit order and starts every run their decisions will
  // need. A step whose proposal is not a Diff, or does not apply on the tree ahead of it,
  // ends the layering: it will be refused or proposed again, and everything behind it would
  // be built on a tree that will not be.
  void speculate(int64_t round, const std::vector<Slot*>& window) {
    Json in_flight = Json::array();
    auto head_tree = s_.workspace.repo().tree_of(s_.head);
    if (!head_tree) return;  // settling reads it again and reports the failure
    ObjectId tree = *head_tree;
    std::set<std::string> completed = s_.completed;
    std::vector<CheckSpec> ahead_checks;
    bool first = true;
    struct Oracle {
      RunRequest run;
      Diff diff;
      PrefetchLabel label;
    };
    std::vector<Oracle> oracles;
    for (Slot* slot : window) {
      if (!slot->answer || !slot->answer->diff) break;
      const BuildStep& step = s_.plan.steps[slot->index];
      const Diff& diff = *slot->answer->diff;
      auto next = s_.workspace.apply_to_tree(diff, tree);
      if (!next) break;
      const int64_t attempt = slot->attempts + 1;
      const std::vector<CheckSpec> checks = checks_for_step(s_.plan, s_.policy, step, completed);
      const std::vector<CheckSpec> wanted = test_checks(checks);
      if (!wanted.empty()) {
        const bool covered = first ? slot->base.has_value() || (s_.previous_run && s_.previous_run->tree == tree &&
                                                                covers(s_.previous_run->run, wanted))
                                   : specs_cover(ahead_checks, wanted);
        if (!covered) {
          RunRequest base;
          base.base_tree = s_.start_tree;
          base.tree = tree;
          base.checks = wanted;
          base.reuse = true;
          s_.runner.prefetch(std::move(base), std::nullopt, PrefetchLabel{step.id, attempt, "base", tree.hex(), std::nullopt});
        }
      }
      // The oracle run's checks as they will be if the base passes its tests (it usually does;
      // when it does not, this run goes unused and is recorded as such).
      if (std::vector<CheckSpec> again = oracle_checks(checks, !wanted.empty()); !again.empty()) {
        ProposalEvidence evidence = slot->answer->evidence;
        if (auto base_tree = s_.workspace.repo().tree(tree)) read_pre_images(*base_tree, diff, evidence);
        if (std::optional<Diff> oracle = oracle_diff(diff, evidence, s_.policy.oracle,
                                                     admitted_tests(step.approvals, diff.digest(), s_.policy.approvers).tests)) {
          if (auto oracle_tree = s_.workspace.apply_to_tree(*oracle, tree)) {
            RunRequest run;
            run.base_tree = s_.start_tree;
            run.tree = *oracle_tree;
            run.checks = std::move(again);
            const Digest digest = oracle->digest();
            oracles.push_back({std::move(run), std::move(*oracle), PrefetchLabel{step.id, attempt, "oracle", tree.hex(), digest}});
          }
        }
      }
      RunRequest run;
      run.base_tree = s_.start_tree;
      run.tree = *next;
      run.checks = checks;
      s_.runner.prefetch(std::move(run), diff, PrefetchLabel{step.id, attempt, "checks", tree.hex(), diff.digest()});
      in_flight.push_back({{"step_id", step.id}, {"attempt", attempt}, {"base_tree", tree.hex()}, {"tree", next->hex()}});
      tree = *next;
      completed.insert(step.id);
      ahead_checks = checks;
      first = false;
    }
    // Oracle runs last: a step needs one only when its base passed a test, which its base
    // run tells; the checks every step needs come first.
    for (auto& [run, oracle, label] : oracles) s_.runner.prefetch(std::move(run), std::move(oracle), std::move(label));
    Json waiting = Json::array();
    for (size_t i = in_flight.size(); i < window.size(); ++i) waiting.push_back(s_.plan.steps[window[i]->index].id);
    s_.rec.emit(RunEventType::queue_updated, std::nullopt, "kernel",
                {{"round", round}, {"head", s_.head.hex()}, {"in_flight", in_flight}, {"waiting", waiting}});
  }

  // The window's steps in commit order, through the sequential stages, until one is not
  // accepted.
  Result<Stop> settle(const std::vector<Slot*>& window) {
    for (Slot* slot : window) {
      const BuildStep& step = s_.plan.steps[slot->index];
      if (!slot->answer) return Stop{step.id, "the queue stopped at " + step.id, std::nullopt};
      if (slot->answer->diff && !(slot->shown_head == s_.head)) {
        // Committed steps changed the files this proposal was made against: it is proposed
        // again with the new context. The executor did nothing wrong; it is not an attempt.
        const Diff& diff = *slot->answer->diff;
        if (!s_.workspace.check(diff, s_.head.hex()) && s_.workspace.check(diff, slot->shown_head.hex())) {
          slot->answer.reset();
          slot->stale = true;
          return Stop{step.id, "built on " + step.id + "'s proposal, whose files the steps committed ahead of it changed", std::nullopt};
        }
      }
      // A stage that throws (a bug, or bytes a library refuses) fails the run at this step,
      // as the sequential stages do, instead of leaving it running.
      Result<std::optional<Stop>> settled = [&]() -> Result<std::optional<Stop>> {
        try {
          return settle_one(*slot);
        } catch (const std::exception& e) {
          QueueOutcome end{QueueEnd::failed, step.id, static_cast<int64_t>(slot->index), slot->attempts,
                           std::string("internal error: ") + e.what()};
          return std::optional<Stop>(Stop{step.id, "the queue stopped at " + step.id + ": " + end.error, end});
        }
      }();
      if (!settled) return std::unexpected(settled.error());
      if (settled->has_value()) return **settled;
    }
    return Stop{"", "", std::nullopt};
  }

  // One step's proposal through propose/run/verify/commit. None: accepted and committed.
  Result<std::optional<Stop>> settle_one(Slot& slot) {
    const BuildStep& step = s_.plan.steps[slot.index];
    const int64_t number = ++slot.attempts;
    std::stop_source step_stop;
    std::stop_callback forward(s_.stop, [&] { step_stop.request_stop(); });
    Watchdog watchdog(budget(), step_stop);
    StepContext ctx = context(slot, step_stop.get_token(), [&watchdog] { return watchdog.remaining(); });
    Attempt attempt;
    std::optional<std::string> error;
    std::vector<Artifact> artifacts;
    bool accepted = false;
    auto proposed = record_proposal(ctx, number, std::move(*slot.answer));
    slot.answer.reset();
    if (!proposed) return std::unexpected(proposed.error());
    attempt.proposed = std::move(*proposed);
    [&] {
      auto tested = run_checks(ctx, attempt.proposed, slot.base);
      if (!tested) return void(error = tested.error().message);
      attempt.tested = std::move(*tested);
      auto verified = verify(ctx, attempt.proposed, attempt.tested ? &*attempt.tested : nullptr, slot.base ? &*slot.base : nullptr);
      if (!verified) return void(error = verified.error().message);
      attempt.decided = verified->decided;
      const Verdict& verdict = attempt.decided->verdict;
      s_.verdicts.push_back({step.id, number, verdict,
                             attempt.tested ? checks_not_passing(attempt.tested->run) : std::vector<CheckEvidence>{},
                             verified->refusal_report});
      if (verified->refusal_report) s_.refusals.push_back(verified->refusal_report->to_json());
      if (!verdict.accepted) return;
      auto committed = commit(ctx, attempt);
      if (!committed) return void(error = committed.error().message);
      attempt.committed = *committed;
      s_.head = committed->commit;
      const Tested& tested_run = *attempt.tested;
      s_.previous_run = BaseRun{tested_run.applied.tree, tested_run.run, tested_run.record.seq};
      s_.completed.insert(step.id);
      ++s_.steps_completed;
      artifacts = record_artifacts(s_.rec, step, ctx.index, attempt);
      accepted = true;
    }();
    if (Status st = s_.rec.flush(); !st) return std::unexpected(st.error());

    const bool exhausted = !accepted && !error && slot.attempts >= s_.plan.max_retries;
    if (accepted || exhausted || error) {
      StepEvidenceRecord evidence;
      evidence.run_id = s_.rec.run_id();
      evidence.step_id = step.id;
      evidence.tool_name = s_.proposer.name();
      evidence.step_sha256 = sha256(canonicalize(step.to_json()).value_or(""));
      if (accepted) evidence.commit = s_.head.hex();
      evidence.refusals = static_cast<int64_t>(s_.refusals.size());
      evidence.request_id = slot.request_id;
      evidence.duration_ms = s_.rec.now() - slot.started_ms;
      evidence.retry_count = std::max<int64_t>(slot.attempts - 1, 0);
      evidence.replan_events = s_.replan_events;
      evidence.completed = accepted;
      evidence.artifacts = std::move(artifacts);
      evidence.error_stack = error;
      (void)s_.rec.record(evidence);
    }
    const QueueOutcome here{QueueEnd::failed, step.id, ctx.index, slot.attempts, error.value_or("")};
    if (error) {
      QueueOutcome end = here;
      if (watchdog.fired()) {
        end.end = QueueEnd::timeout;
        end.error = "step " + step.id + " ran past its " + std::to_string(s_.step_budget_ms) + " ms budget";
      } else if (s_.stop.stop_requested()) {
        end.end = QueueEnd::cancelled;
        end.error = "cancelled during step " + step.id;
      }
      if (Status st = s_.rec.flush(); !st) return std::unexpected(st.error());
      return std::optional<Stop>(Stop{step.id, "the queue stopped at " + step.id + ": " + end.error, end});
    }
    if (accepted || exhausted) {
      s_.rec.emit(RunEventType::step_completed, ctx.index, s_.proposer.name(),
                  {{"step_id", step.id}, {"accepted", accepted}, {"attempts", slot.attempts}});
    }
    if (Status st = s_.rec.flush(); !st) return std::unexpected(st.error());
    if (accepted) {
      slot.base.reset();
      return std::optional<Stop>();
    }
    const std::string why = "built on " + step.id + " attempt " + std::to_string(number) + ", which was refused";
    if (exhausted) {
      QueueOutcome end = here;
      end.end = QueueEnd::exhausted;
      end.error.clear();
      return std::optional<Stop>(Stop{step.id, why, end});
    }
    return std::optional<Stop>(Stop{step.id, why, std::nullopt});
  }

  // The round's runs no decision took, recorded in the order they were started: behind the
  // step that stopped the round, with its reason; of a step that settled, as not needed.
  Status discard(int64_t round, const Stop& stop) {
    Json discarded = Json::array();
    for (const UnusedRun& u : s_.runner.drop_unused()) {
      const bool behind = !s_.completed.contains(u.label.step_id) && u.label.step_id != stop.step_id;
      SpeculationRecord record;
      record.run_id = s_.rec.run_id();
      record.step_id = u.label.step_id;
      record.attempt = u.label.attempt;
      record.run = u.label.run;
      record.base_tree = u.label.base_tree;
      record.tree = u.tree;
      record.diff_sha256 = u.label.diff_sha256;
      record.reason = behind && !stop.reason.empty() ? stop.reason : "not needed: " + u.label.step_id + "'s decision did not use it";
      if (Status st = s_.rec.record(record); !st) return st;
      // Evidence of a tampered runner cache is kept, even from a run no decision used.
      for (const DiscardedCheckout& d : u.discarded_checkouts) {
        s_.rec.emit(RunEventType::tool_output, std::nullopt, "runner",
                    {{"step_id", record.step_id}, {"base_checkout_discarded", {{"tree", d.tree}, {"reason", d.reason}}}});
      }
      discarded.push_back({{"step_id", record.step_id}, {"attempt", record.attempt}, {"run", record.run},
                           {"tree", record.tree}, {"reason", record.reason}});
    }
    if (!discarded.empty()) {
      s_.rec.emit(RunEventType::queue_updated, std::nullopt, "kernel",
                  {{"round", round}, {"head", s_.head.hex()}, {"discarded", discarded}});
    }
    return s_.rec.flush();
  }

  QueueSite& s_;
  const std::vector<size_t> order_;
  std::map<std::string, Slot> slots_;
};

}  // namespace

Result<QueueOutcome> run_merge_queue(QueueSite& site) { return MergeQueue(site).run(); }

}  // namespace warden::kernel
