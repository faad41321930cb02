#include "executor/step.h"

#include <algorithm>
#include <utility>

#include "executor/routing.h"

namespace warden::executor {
namespace {

void terminate(Envelope& e, TerminalReason reason, std::string detail, int64_t at) {
  e.terminated = true;
  e.terminal_reason = reason;
  e.termination_reason = detail.empty() ? std::nullopt : std::optional<std::string>(std::move(detail));
  e.completed_at = at;
  e.active_stages.clear();
  e.interrupt_pending = false;
  e.current_stage = std::string(kEndName);
}

void apply_effects(Envelope& e, const StageEffects& fx, const std::string& stage, uint64_t step, int64_t at) {
  if (!fx.goals.empty()) e.initialize_goals(fx.goals);
  for (const auto& goal : fx.completed_goals) {
    if (!e.mark_goal_complete(goal)) {
      e.errors.push_back(Json{{"stage", stage}, {"step", step}, {"at", at}, {"error", "unknown goal \"" + goal + "\""}});
    }
  }
  e.loop_feedback.insert(e.loop_feedback.end(), fx.feedback.begin(), fx.feedback.end());
  if (fx.prior_plan) e.prior_plans.push_back(*fx.prior_plan);
  for (const auto& [key, value] : fx.metadata.items()) e.metadata[key] = value;
}

// Folds one stage's outcome into the envelope (a failure, a pause or a success).
void record_outcome(const PipelineConfig& config, RunState& run, StageOutcome& o) {
  Envelope& e = run.envelope;
  const StageSpec& spec = config.stages[o.stage];
  const std::string& name = spec.name;
  StageResult& r = o.result;
  e.agent_hop_count += 1;
  e.llm_call_count += r.llm_calls;

  ProcessingRecord rec;
  rec.agent = name;
  rec.stage_order = o.stage;
  rec.started_at = o.started_at;
  rec.completed_at = o.completed_at;
  rec.duration_ms = o.completed_at - o.started_at;
  rec.llm_calls = r.llm_calls;
  bool paused = false;
  if (r.error) {
    rec.status = "error";
    rec.error = *r.error;
    e.failed_stages[name] = *r.error;
    e.errors.push_back(Json{{"stage", name}, {"step", run.step}, {"at", o.completed_at}, {"error", *r.error}});
    e.active_stages.erase(name);
  } else if (r.interrupt) {
    rec.status = "interrupted";
    paused = true;
    // One interrupt at a time: a second stage pausing in the same step stays active and
    // asks again after the first is answered.
    if (!e.interrupt_pending) {
      e.interrupt = FlowInterrupt{"int-" + std::to_string(run.step), r.interrupt->kind, name, r.interrupt->question,
                                  r.interrupt->payload, o.completed_at, std::nullopt, std::nullopt};
      e.interrupt_pending = true;
    }
  } else {
    rec.status = "success";
    e.outputs[name] = std::move(r.output);
    e.completed_stage_set[name] = true;
    if (!e.failed_stages.empty()) e.failed_stages.erase(name);
    e.active_stages.erase(name);
    if (!r.effects.empty()) apply_effects(e, r.effects, name, run.step, o.completed_at);
  }
  // An answered interrupt is consumed once its stage has run again.
  if (!paused && e.interrupt && e.interrupt->stage == name && !e.interrupt_pending) e.interrupt.reset();
  e.processing_history.push_back(std::move(rec));
}

class Router {
 public:
  Router(const PipelineConfig& config, RunState& run, int64_t at) : c_(config), run_(run), e_(run.envelope), at_(at) {}

  // Routes one finished stage; false once the run has ended.
  bool route(const StageOutcome& o) {
    const StageSpec& spec = c_.stages[o.stage];
    if (o.result.error) {
      if (spec.error_next == kEnd) {
        end(o.stage, TransitionReason::error, TerminalReason::stage_failed,
            "stage " + spec.name + " failed: " + *o.result.error);
        return false;
      }
      return move(o.stage, spec.error_next, TransitionReason::error, *o.result.error);
    }
    const Json& output = e_.outputs[spec.name];
    const RoutingRule* rule = first_matching_rule(spec, output);
    TransitionReason reason = rule ? TransitionReason::routing : TransitionReason::default_next;
    if (rule && rule->advance_stage) {
      if (e_.current_stage_number >= e_.max_stages) {
        end(o.stage, TransitionReason::complete, TerminalReason::max_stages_exceeded,
            "stage " + spec.name + " would advance past max_stages " + std::to_string(e_.max_stages));
        return false;
      }
      e_.advance_stage();
      reason = TransitionReason::next_stage;
    }
    for (StageId to : rule ? rule->next : spec.default_next) {
      if (!move(o.stage, to, reason, "")) return false;
    }
    return true;
  }

  // After all stages are routed: completion, or a checkpoint when a cycle began.
  const Checkpoint* finish() {
    if (e_.terminated) return nullptr;
    if (e_.active_stages.empty()) {
      terminate(e_, TerminalReason::completed, "", at_);
      return nullptr;
    }
    e_.current_stage = first_active();
    if (cycle_transitions_.empty()) return nullptr;
    Checkpoint cp;
    cp.id = "cp-" + std::to_string(run_.step);
    cp.stage = run_.transitions[cycle_transitions_.front()].to;
    cp.step = run_.step;
    cp.iteration = e_.iteration;
    cp.created_at = at_;
    cp.envelope = e_.clone();
    cp.edge_counts = run_.edge_counts;
    for (size_t i : cycle_transitions_) run_.transitions[i].checkpoint = cp.id;
    run_.checkpoints.push_back(std::move(cp));
    return &run_.checkpoints.back();
  }

 private:
  bool move(StageId from, StageId to, TransitionReason reason, std::string detail) {
    if (to == kEnd) {
      record(from, to, reason == TransitionReason::error ? reason : TransitionReason::complete, std::move(detail));
      return true;
    }
    std::string_view from_name = c_.stage_name(from), to_name = c_.stage_name(to);
    if (int li = c_.edge_limit_index(from, to); li >= 0 && c_.edge_limits[li].max_count > 0) {
      int64_t& count = run_.edge_counts[li];
      if (count >= c_.edge_limits[li].max_count) {
        end(from, TransitionReason::complete, TerminalReason::edge_limit_exceeded,
            "edge " + std::string(from_name) + " -> " + std::string(to_name) + " reached its max_count " +
                std::to_string(c_.edge_limits[li].max_count));
        return false;
      }
      ++count;
    }
    bool cycle = PipelineConfig::is_cycle_edge(from, to);
    if (cycle) {
      if (e_.iteration + 1 > e_.max_iterations) {
        end(from, TransitionReason::complete, TerminalReason::max_iterations_exceeded,
            "cycle " + std::string(from_name) + " -> " + std::string(to_name) + " would start iteration " +
                std::to_string(e_.iteration + 1) + " of max_iterations " + std::to_string(e_.max_iterations));
        return false;
      }
      ++e_.iteration;
      if (reason == TransitionReason::default_next || reason == TransitionReason::routing) {
        reason = TransitionReason::reintent;
      }
    }
    const std::string& target = c_.stages[to].name;
    e_.active_stages[target] = true;
    // Running again: `requires` waits for this run of it, not an earlier one.
    e_.completed_stage_set.erase(target);
    record(from, to, reason, std::move(detail));
    if (cycle) cycle_transitions_.push_back(run_.transitions.size() - 1);
    return true;
  }

  void end(StageId from, TransitionReason reason, TerminalReason terminal, std::string detail) {
    record(from, kEnd, reason, detail);
    terminate(e_, terminal, std::move(detail), at_);
  }

  void record(StageId from, StageId to, TransitionReason reason, std::string detail) {
    Transition& t = run_.transitions.emplace_back();
    t.step = run_.step;
    t.from = c_.stage_name(from);
    t.to = c_.stage_name(to);
    t.reason = reason;
    t.iteration = e_.iteration;
    t.timestamp = at_;
    t.detail = std::move(detail);
  }

  std::string first_active() const {
    StageId best = kEnd;
    for (const auto& [name, active] : e_.active_stages) {
      auto id = c_.find(name);
      if (id && (best == kEnd || *id < best)) best = *id;
    }
    return std::string(c_.stage_name(best));
  }

  const PipelineConfig& c_;
  RunState& run_;
  Envelope& e_;
  int64_t at_;
  std::vector<size_t> cycle_transitions_;
};

}  // namespace

Envelope initial_envelope(const PipelineConfig& config, const RunInput& input, std::string envelope_id,
                          std::string request_id, int64_t now) {
  Envelope e;
  e.envelope_id = std::move(envelope_id);
  e.request_id = std::move(request_id);
  e.user_id = input.user_id;
  e.session_id = input.session_id;
  e.raw_input = input.raw_input;
  e.received_at = now;
  e.created_at = now;
  e.metadata = input.metadata.is_object() ? input.metadata : Json::object();
  e.max_iterations = config.max_iterations;
  e.max_llm_calls = config.max_llm_calls;
  e.max_agent_hops = config.max_agent_hops;
  e.max_stages = config.max_stages;
  e.stage_order.reserve(config.stages.size());
  for (const auto& s : config.stages) e.stage_order.push_back(s.name);
  const std::string& start = config.stages[config.start].name;
  e.current_stage = start;
  e.active_stages[start] = true;
  return e;
}

RunState new_run_state(const PipelineConfig& config, std::string run_id, Envelope envelope) {
  RunState run;
  run.run_id = std::move(run_id);
  run.envelope = std::move(envelope);
  run.edge_counts.assign(config.edge_limits.size(), 0);
  return run;
}

void ready_stages(const PipelineConfig& config, const Envelope& e, std::vector<StageId>& out) {
  out.clear();
  for (const auto& [name, active] : e.active_stages) {
    auto id = config.find(name);
    if (!id) continue;
    const auto& required = config.stages[*id].required;
    bool ready = std::all_of(required.begin(), required.end(),
                             [&](StageId r) { return e.completed_stage_set.contains(config.stages[r].name); });
    if (ready) out.push_back(*id);
  }
  std::sort(out.begin(), out.end());
}

std::string deadlock_detail(const PipelineConfig& config, const Envelope& e) {
  std::string out;
  for (const auto& [name, active] : e.active_stages) {
    auto id = config.find(name);
    if (!id) continue;
    for (StageId r : config.stages[*id].required) {
      const std::string& need = config.stages[r].name;
      if (e.completed_stage_set.contains(need)) continue;
      if (!out.empty()) out += "; ";
      out += name + " waits for " + need + (e.active_stages.contains(need) ? "" : " (which is not scheduled)");
    }
  }
  return out.empty() ? "no stage can run" : out;
}

StepApplied apply_step(const PipelineConfig& config, RunState& run, std::vector<StageOutcome>& outcomes, int64_t at) {
  ++run.step;
  StepApplied applied;
  applied.first_transition = run.transitions.size();
  run.envelope.parallel_mode = outcomes.size() > 1;
  const bool was_pending = run.envelope.interrupt_pending;
  // Outcomes first, then routing: a stage's routing sees every output of its step.
  for (auto& o : outcomes) record_outcome(config, run, o);
  Router router(config, run, at);
  for (const auto& o : outcomes) {
    bool paused = o.result.interrupt && !o.result.error;  // stays active, not routed
    if (!paused && !router.route(o)) break;
  }
  applied.checkpoint = router.finish();
  applied.ended = run.envelope.terminated;
  applied.interrupted = run.envelope.interrupt_pending && !was_pending;
  return applied;
}

void apply_end(RunState& run, TerminalReason reason, std::string detail, int64_t at) {
  terminate(run.envelope, reason, std::move(detail), at);
}

Status apply_resume(RunState& run, std::string response, int64_t at) {
  Envelope& e = run.envelope;
  if (!run.waiting() || !e.interrupt) {
    return fail(Errc::invalid_argument, "run " + run.run_id + " is not waiting for a response");
  }
  e.interrupt->response = std::move(response);
  e.interrupt->responded_at = at;
  e.interrupt_pending = false;
  return {};
}

Status apply_rollback(RunState& run, std::string_view checkpoint_id) {
  const Checkpoint* cp = run.find_checkpoint(checkpoint_id);
  if (!cp) {
    std::string known;
    for (const auto& c : run.checkpoints) known += (known.empty() ? "" : ", ") + c.id;
    return fail(Errc::not_found, "run " + run.run_id + " has no checkpoint " + std::string(checkpoint_id) +
                                     " (checkpoints: " + (known.empty() ? "none" : known) + ")");
  }
  run.envelope = cp->envelope.clone();
  run.edge_counts = cp->edge_counts;
  return {};
}

}  // namespace warden::executor
