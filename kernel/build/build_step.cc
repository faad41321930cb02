// One step of a build through its pipeline (build_loop_internal.h): the held-out bundle opened,
// the stages (step_stages.h) run as the pipeline executor routes them under the step's
// watchdog, and the step's evidence recorded.
#include <algorithm>
#include <set>

#include "kernel/build/artifacts.h"
#include "kernel/build/build_loop_internal.h"
#include "kernel/build/step_pipeline.h"
#include "kernel/build/watchdog.h"

namespace warden::kernel::detail {

// The plan's held-out bundle (held_out.h) from the vault beside the ledger, when the plan
// holds held-out checks: without it no proposal can be judged.
Status Build::open_held_out() {
  if (!plan_.held_out) return {};
  if (held_out_ && held_out_->digest() == plan_.held_out->sha256) return {};
  vault_.emplace(options_.ledger_dir);
  auto bundle = vault_->open(plan_.held_out->sha256);
  if (!bundle) return std::unexpected(bundle.error().with_context("the plan's held-out checks"));
  held_out_ = std::move(*bundle);
  if (make_held_out_runner_) {
    auto made = make_held_out_runner_();
    if (!made) return std::unexpected(made.error().with_context("a sandbox on this host for the held-out checks"));
    held_out_runner_ = std::move(*made);
  }
  return {};
}

// One step through its pipeline. True: accepted and committed; false: retries exhausted.
Result<bool> Build::run_step(size_t index) {
  if (Status st = open_held_out(); !st) return std::unexpected(st.error());
  const BuildStep& step = plan_.steps[index];
  current_index_ = static_cast<int64_t>(index);
  const int64_t started = rec_.now();
  const std::string request_id = rec_.next_id("req");
  rec_.emit(RunEventType::step_started, current_index_, proposer_.name(),
            {{"step_id", step.id},
             {"action", step_action_name(step.action)},
             {"targets", step.targets},
             {"steps_total", summary_.steps_total},
             {"steps_completed", summary_.steps_completed}});
  // Durable before the executor is asked: `warden run status` in another shell sees the
  // run running and the step it is on while the executor works.
  if (Status st = rec_.flush(); !st) return std::unexpected(st.error());

  std::stop_source step_stop;
  std::stop_callback forward(session_.stop, [&] { step_stop.request_stop(); });
  const int64_t budget = step_budget_ms();
  Watchdog watchdog(std::chrono::milliseconds(budget), step_stop);
  StepState state;
  const StepContext ctx{.rec = rec_,
                        .workspace = workspace_,
                        .runner = runner_,
                        .proposer = proposer_,
                        .plan = plan_,
                        .policy = *policy_,
                        .step = step,
                        .index = current_index_.value_or(0),
                        .completed = completed_,
                        .head = head_,
                        .start_tree = start_tree_,
                        .previous_run = previous_run_ ? &*previous_run_ : nullptr,
                        .plan_sha256 = summary_.plan_sha256,
                        .policy_sha256 = summary_.policy_sha256,
                        .refusals = refusals_,
                        .stop = step_stop.get_token(),
                        .time_left = [&watchdog] { return watchdog.remaining(); },
                        .on_working = session_.on_working,
                        .held_out = held_out_ ? &*held_out_ : nullptr,
                        .vault = vault_ ? &*vault_ : nullptr,
                        .held_out_runner = held_out_runner_.get()};

  auto config = step_pipeline_config(plan_.max_retries);
  if (!config) return std::unexpected(config.error());
  executor::AgentSet agents;
  agents.push_back(stage(state, [&] { return propose_stage(ctx, state); }));
  agents.push_back(stage(state, [&] { return run_stage(ctx, state); }));
  agents.push_back(stage(state, [&] { return verify_stage(ctx, state); }));
  agents.push_back(stage(state, [&] { return commit_stage(ctx, state); }));
  executor::PipelineExecutor pipeline(*config, std::move(agents), session_.clock, session_.ids);
  pipeline.set_journal(&kl_);
  executor::RunInput input;
  input.raw_input = step.id;
  input.request_id = request_id;
  input.metadata = {{"run_id", run_id()}, {"step_id", step.id}, {"plan_sha256", summary_.plan_sha256.str()}};
  auto pipeline_state = pipeline.start(input, {{"kernel_run", run_id()}});
  if (!pipeline_state) return std::unexpected(pipeline_state.error());
  if (Status st = pipeline.run(*pipeline_state, step_stop.get_token()); !st) return std::unexpected(st.error());
  if (Status st = rec_.flush(); !st) return std::unexpected(st.error());

  const bool accepted = completed_.contains(step.id);
  StepEvidenceRecord evidence;
  evidence.run_id = run_id();
  evidence.step_id = step.id;
  evidence.tool_name = proposer_.name();
  evidence.step_sha256 = sha256(canonicalize(step.to_json()).value_or(""));
  if (accepted) evidence.commit = head_.hex();
  evidence.refusals = static_cast<int64_t>(refusals_.size());
  evidence.request_id = request_id;
  evidence.duration_ms = rec_.now() - started;
  evidence.retry_count = std::max<int64_t>(state.attempts - 1, 0);
  evidence.replan_events = replan_events_;
  evidence.completed = accepted;
  evidence.artifacts = std::move(state.artifacts);
  evidence.error_stack = state.error;
  (void)rec_.record(evidence);

  if (watchdog.fired() && !accepted) {
    return ended(end(RunStatus::timeout, ErrorType::timeout_error,
                     "step " + step.id + " ran past its " + std::to_string(budget) + " ms budget"));
  }
  if (session_.stop.stop_requested() && !accepted) {
    return ended(end(RunStatus::cancelled, ErrorType::cancelled, "cancelled during step " + step.id));
  }
  if (state.error && !accepted) return ended(end(RunStatus::failed, ErrorType::execution_error, *state.error));
  rec_.emit(RunEventType::step_completed, current_index_, proposer_.name(),
            {{"step_id", step.id}, {"accepted", accepted}, {"attempts", state.attempts}});
  if (Status st = rec_.flush(); !st) return std::unexpected(st.error());
  last_attempts_ = state.attempts;
  return accepted;
}

// A stage failing (an Error from step_stages.h) fails the step as an execution error; a
// stage that throws (a bug, or bytes a library refuses) too, instead of reading as a refusal.
template <typename F>
std::unique_ptr<executor::StageAgent> Build::stage(StepState& state, F f) {
  return std::make_unique<executor::FunctionAgent>([&state, f](const executor::StageContext&) {
    try {
      return f();
    } catch (const std::exception& e) {
      return fail_stage(state, std::string("internal error: ") + e.what());
    }
  });
}

// The stages' results as the pipeline routes on them (and records them).
executor::StageResult Build::propose_stage(const StepContext& ctx, StepState& state) {
  state.attempt = Attempt{};
  auto proposed = propose(ctx, ++state.attempts);
  if (!proposed) return fail_stage(state, proposed.error().message);
  state.attempt.proposed = std::move(*proposed);
  const Proposed& p = state.attempt.proposed;
  executor::StageResult out;
  out.output = {{"attempt", p.number}, {"proposal_seq", p.record.seq}, {"parsed", p.diff.has_value()}};
  return out;
}

executor::StageResult Build::run_stage(const StepContext& ctx, StepState& state) {
  auto tested = run_checks(ctx, state.attempt.proposed, state.base);
  if (!tested) return fail_stage(state, tested.error().message);
  state.attempt.tested = std::move(*tested);
  executor::StageResult out;
  if (!state.attempt.tested) out.output = {{"ran", false}};
  else out.output = {{"ran", true}, {"run_result_seq", state.attempt.tested->record.seq}};
  return out;
}

executor::StageResult Build::verify_stage(const StepContext& ctx, StepState& state) {
  Attempt& a = state.attempt;
  auto verified = verify(ctx, a.proposed, a.tested ? &*a.tested : nullptr, state.base ? &*state.base : nullptr);
  if (!verified) return fail_stage(state, verified.error().message);
  a.decided = verified->decided;
  const Verdict& verdict = a.decided->verdict;
  summary_.verdicts.push_back({ctx.step.id, a.number(), verdict,
                               a.tested ? checks_not_passing(a.tested->run) : std::vector<CheckEvidence>{},
                               verified->refusal_report});
  executor::StageResult out;
  out.output = {{"accepted", verdict.accepted}, {"reasons", verdict.reason_codes()}};
  if (verified->refusal_report) {
    refusals_.push_back(verified->refusal_report->to_json());
    out.effects.feedback.push_back(ctx.step.id + " attempt " + std::to_string(a.number()) +
                                   " refused: " + Json(verdict.reason_codes()).dump());
  }
  return out;
}

executor::StageResult Build::commit_stage(const StepContext& ctx, StepState& state) {
  auto committed = commit(ctx, state.attempt);
  if (!committed) return fail_stage(state, committed.error().message);
  state.attempt.committed = *committed;
  head_ = committed->commit;
  const Tested& tested = *state.attempt.tested;
  previous_run_ = BaseRun{tested.applied.tree, tested.run, tested.record.seq};
  completed_.insert(ctx.step.id);
  ++summary_.steps_completed;
  state.artifacts = record_artifacts(rec_, ctx.step, ctx.index, state.attempt);
  executor::StageResult out;
  out.output = {{"commit", committed->commit.hex()}, {"tree", state.attempt.tested->applied.tree.hex()}};
  return out;
}

}  // namespace warden::kernel::detail
