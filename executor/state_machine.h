// The pipeline state machine executor. Each step: check the bounds (an exceeded bound ends the
// run with its terminal reason), stop at a pending interrupt, find the stages that may run, run
// them (independent stages in parallel on up to max_parallel threads), route their outputs
// (cycles are expected; edge limits and the global iteration limit bound them), checkpoint
// before each cycle, record everything to the journal and publish events. Decisions depend only
// on the config, the stage results and the injected Clock and IdSource, so the same inputs give
// the same run, byte for byte.
//
// Ownership: a PipelineExecutor owns its agents; it borrows the config, clock, id source and
// journal (set_journal takes a raw pointer), which must outlive it. The RunState belongs to
// the caller. Threads: not thread-safe — it reuses scratch vectors across steps, so drive one
// run at a time from one thread. It starts its own worker threads only inside a step, for
// stages that run together, and joins them before the step goes on; agents must therefore
// tolerate being called from those threads (stage.h). Events reach subscribers on the
// driving thread, before the step is journaled.
//
// Durability: each step is appended to the journal and committed; the journal may batch
// ordinary steps and must make everything durable when the run ends, pauses on an interrupt,
// resumes or rolls back. An Error from resume() that is invalid_argument (not waiting) or
// from rollback() that is not_found (no such checkpoint) rejects the request and changes
// nothing. Any other Error is a journal failure (or agents that do not match the config):
// the RunState in memory may already be ahead of what was recorded, so continue from the
// journal, not from that RunState.
#pragma once

#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "executor/agent_registry.h"
#include "executor/events.h"
#include "executor/pipeline_config.h"
#include "executor/run_records.h"
#include "executor/run_state.h"
#include "executor/step.h"

namespace warden::executor {

class PipelineExecutor {
 public:
  // `config`, `clock` and `ids` must outlive the executor; `agents` has one agent per stage
  // (AgentRegistry::bind). The clock is read only from the thread that drives a run.
  PipelineExecutor(const PipelineConfig& config, AgentSet agents, Clock& clock, IdSource& ids);

  // Where runs are recorded (e.g. kernel::LedgerWriter); none: runs live in memory only.
  void set_journal(RunJournal* journal) { journal_ = journal; }
  void subscribe(EventHandler handler) { events_.subscribe(std::move(handler)); }

  // A new run with the start stage active. `launch` is recorded with it for whoever resumes
  // the run later (the CLI records the config's directory and the kind of clock).
  Result<RunState> start(const RunInput& input, const Json& launch = Json::object());
  // Runs until the run ends or waits on an interrupt. A stop request ends the run as
  // cancelled before the next step (a step in progress finishes first). Errors are journal
  // failures: the run stops, and the ledger holds every step committed before.
  Status run(RunState& run, std::stop_token stop = {});
  // Answers a pending interrupt; run() then continues with the stage that raised it.
  Status resume(RunState& run, std::string response);
  // Restores a checkpoint's envelope and cycle counters; run() then re-runs that cycle.
  Status rollback(RunState& run, std::string_view checkpoint_id);

 private:
  Status end(RunState& run, TerminalReason reason, std::string detail);
  StageResult invoke(const RunState& run, StageId stage) const;
  void execute(const RunState& run);
  void emit(EventType type, const RunState& run, std::string_view stage, int64_t at, Json payload) const;
  void emit_outcomes(const RunState& run) const;
  void emit_routing(const RunState& run, const StepApplied& applied) const;
  Status commit(bool now) { return journal_ ? journal_->commit(now) : Status{}; }

  const PipelineConfig& config_;
  AgentSet agents_;
  Clock& clock_;
  IdSource& ids_;
  RunJournal* journal_ = nullptr;
  EventBus events_;
  // Reused from step to step.
  std::vector<StageId> ready_;
  std::vector<StageOutcome> outcomes_;
};

}  // namespace warden::executor
