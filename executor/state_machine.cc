#include "executor/state_machine.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <utility>

namespace warden::executor {
namespace {

std::string bound_detail(TerminalReason reason, const Envelope& e, int64_t hops_needed) {
  switch (reason) {
    case TerminalReason::max_iterations_exceeded:
      return "iteration " + std::to_string(e.iteration) + " is past max_iterations " + std::to_string(e.max_iterations);
    case TerminalReason::max_llm_calls_exceeded:
      return "llm_call_count " + std::to_string(e.llm_call_count) + " reached max_llm_calls " +
             std::to_string(e.max_llm_calls);
    case TerminalReason::max_agent_hops_exceeded:
      return "the next step runs " + std::to_string(hops_needed) + " stage(s); agent_hop_count " +
             std::to_string(e.agent_hop_count) + " of max_agent_hops " + std::to_string(e.max_agent_hops);
    default: return "";
  }
}

}  // namespace

PipelineExecutor::PipelineExecutor(const PipelineConfig& config, AgentSet agents, Clock& clock, IdSource& ids)
    : config_(config), agents_(std::move(agents)), clock_(clock), ids_(ids) {}

Result<RunState> PipelineExecutor::start(const RunInput& input, const Json& launch) {
  if (agents_.size() != config_.stages.size()) {
    return fail(Errc::internal, "pipeline " + config_.name + " has " + std::to_string(config_.stages.size()) +
                                    " stages but " + std::to_string(agents_.size()) + " agents");
  }
  std::string run_id = ids_.next_id("run");
  std::string envelope_id = ids_.next_id("env");
  std::string request_id = input.request_id.empty() ? ids_.next_id("req") : input.request_id;
  int64_t now = clock_.now_ms();
  RunState run = new_run_state(config_, std::move(run_id),
                               initial_envelope(config_, input, std::move(envelope_id), std::move(request_id), now));
  if (journal_) {
    if (auto st = journal_run_started(*journal_, config_, run, launch, now); !st) return std::unexpected(st.error());
    if (auto st = commit(false); !st) return std::unexpected(st.error());
  }
  return run;
}

Status PipelineExecutor::run(RunState& run, std::stop_token stop) {
  if (agents_.size() != config_.stages.size()) {
    return fail(Errc::internal, "pipeline " + config_.name + " has no agent for some stages");
  }
  while (true) {
    const Envelope& e = run.envelope;
    if (e.terminated) return commit(true);
    // 1. Bounds, before anything runs.
    if (auto reason = e.bounds_exceeded(1)) {
      if (auto st = end(run, *reason, bound_detail(*reason, e, 1)); !st) return st;
      continue;
    }
    // 2. A pending interrupt pauses the run until resume().
    if (e.interrupt_pending) return commit(true);
    if (stop.stop_requested()) {
      if (auto st = end(run, TerminalReason::cancelled, "stopped by the caller"); !st) return st;
      continue;
    }
    // 3. What can run now.
    ready_stages(config_, e, ready_);
    if (ready_.empty()) {
      Status st = e.active_stages.empty() ? end(run, TerminalReason::completed, "")
                                          : end(run, TerminalReason::deadlock, deadlock_detail(config_, e));
      if (!st) return st;
      continue;
    }
    auto hops = static_cast<int64_t>(ready_.size());
    if (auto reason = e.bounds_exceeded(hops)) {
      if (auto st = end(run, *reason, bound_detail(*reason, e, hops)); !st) return st;
      continue;
    }
    // 4. Run them, in parallel when several are ready.
    execute(run);
    const uint64_t step = run.step + 1;
    const int64_t at = outcomes_.front().completed_at;
    emit_outcomes(run);
    if (journal_) {
      if (auto st = journal_step(*journal_, config_, run, step, outcomes_, at); !st) return st;
    }
    // 5. Route (cycles included) and checkpoint; 6. persist.
    StepApplied applied = apply_step(config_, run, outcomes_, at);
    if (journal_) {
      if (auto st = journal_routing(*journal_, run, applied); !st) return st;
    }
    emit_routing(run, applied);
    if (auto st = commit(applied.ended || run.waiting()); !st) return st;
  }
}

Status PipelineExecutor::resume(RunState& run, std::string response) {
  int64_t at = clock_.now_ms();
  if (auto st = apply_resume(run, std::move(response), at); !st) return st;
  if (!journal_) return {};
  if (auto st = journal_resume(*journal_, run, at); !st) return st;
  return commit(true);
}

Status PipelineExecutor::rollback(RunState& run, std::string_view checkpoint_id) {
  int64_t at = clock_.now_ms();
  if (auto st = apply_rollback(run, checkpoint_id); !st) return st;
  if (!journal_) return {};
  if (auto st = journal_rollback(*journal_, run, checkpoint_id, at); !st) return st;
  return commit(true);
}

Status PipelineExecutor::end(RunState& run, TerminalReason reason, std::string detail) {
  int64_t at = clock_.now_ms();
  apply_end(run, reason, std::move(detail), at);
  if (journal_) {
    if (auto st = journal_end(*journal_, run); !st) return st;
  }
  StepApplied applied;
  applied.first_transition = run.transitions.size();
  applied.ended = true;
  emit_routing(run, applied);
  return commit(true);
}

StageResult PipelineExecutor::invoke(const RunState& run, StageId stage) const {
  const StageSpec& spec = config_.stages[stage];
  StageContext ctx{run.run_id, spec, run.envelope, std::chrono::seconds(spec.timeout_seconds)};
  StageResult result;
  try {
    result = agents_[stage]->run(ctx);
  } catch (const std::exception& ex) {
    return StageResult::failure("stage " + spec.name + " threw: " + ex.what());
  } catch (...) {
    return StageResult::failure("stage " + spec.name + " threw a non-standard exception");
  }
  if (auto st = validate_stage_result(result); !st) {
    return StageResult::failure("stage " + spec.name + " answered an invalid result: " + st.error().message,
                                std::max<int64_t>(result.llm_calls, 0));
  }
  return result;
}

void PipelineExecutor::execute(const RunState& run) {
  const int64_t started = clock_.now_ms();
  outcomes_.clear();
  if (events_.has_subscribers()) {
    for (StageId id : ready_) emit(EventType::stage_started, run, config_.stages[id].name, started, Json::object());
  }
  if (ready_.size() == 1) {
    outcomes_.push_back(StageOutcome{ready_.front(), invoke(run, ready_.front()), started, 0});
  } else {
    for (StageId id : ready_) outcomes_.push_back(StageOutcome{id, StageResult{}, started, 0});
    // A bounded pool for this batch; workers claim outcomes in order. The envelope is only
    // read until every worker has joined.
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next.fetch_add(1)) < outcomes_.size();) outcomes_[i].result = invoke(run, outcomes_[i].stage);
    };
    size_t threads = std::min<size_t>(outcomes_.size(), static_cast<size_t>(config_.max_parallel));
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  }  // the pool joins here
  // One reading for the whole batch: the clock belongs to this thread (and stays
  // deterministic under a LogicalClock), so parallel stages share their completion time.
  const int64_t completed = clock_.now_ms();
  for (auto& o : outcomes_) o.completed_at = completed;
}

void PipelineExecutor::emit(EventType type, const RunState& run, std::string_view stage, int64_t at,
                            Json payload) const {
  events_.emit(ExecutionEvent{type, run.run_id, std::string(stage), at, std::move(payload), run.step});
}

void PipelineExecutor::emit_outcomes(const RunState& run) const {
  if (!events_.has_subscribers()) return;
  for (const auto& o : outcomes_) {
    const std::string& name = config_.stages[o.stage].name;
    if (o.result.error) {
      emit(EventType::stage_failed, run, name, o.completed_at,
           Json{{"error", *o.result.error}, {"llm_calls", o.result.llm_calls}});
    } else if (!o.result.interrupt) {
      emit(EventType::stage_completed, run, name, o.completed_at,
           Json{{"output", o.result.output}, {"llm_calls", o.result.llm_calls}});
    }
  }
}

void PipelineExecutor::emit_routing(const RunState& run, const StepApplied& applied) const {
  if (!events_.has_subscribers()) return;
  const Envelope& e = run.envelope;
  if (applied.interrupted) {
    emit(EventType::interrupt_raised, run, e.interrupt->stage, e.interrupt->created_at, interrupt_to_json(*e.interrupt));
  }
  for (size_t i = applied.first_transition; i < run.transitions.size(); ++i) {
    const Transition& t = run.transitions[i];
    emit(EventType::transition, run, t.from, t.timestamp, transition_to_json(t));
  }
  if (const Checkpoint* cp = applied.checkpoint) {
    emit(EventType::checkpoint_created, run, cp->stage, cp->created_at,
         Json{{"id", cp->id}, {"iteration", cp->iteration}, {"step", cp->step}});
  }
  if (applied.ended) {
    emit(EventType::pipeline_completed, run, "", e.completed_at.value_or(0),
         Json{{"terminal_reason", terminal_reason_name(e.terminal_reason.value_or(TerminalReason::completed))},
              {"termination_reason", e.termination_reason ? Json(*e.termination_reason) : Json(nullptr)}});
  }
}

}  // namespace warden::executor
