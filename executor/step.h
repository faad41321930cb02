// Everything that changes a run, as deterministic functions of the config, the run state and
// the recorded inputs (stage outcomes, times, responses). The live executor and the ledger
// replay both go through these functions, so a replayed run is the run that happened, and a
// replay that disagrees with the recorded transitions exposes a tampered or mismatched ledger.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/run_state.h"

namespace warden::executor {

// What a caller supplies to start a run.
struct RunInput {
  std::string raw_input;
  std::string user_id;
  std::string session_id;
  std::string request_id;  // empty: a fresh id
  Json metadata = Json::object();
};

// The envelope a run starts with: bounds from the config, the start stage active.
Envelope initial_envelope(const PipelineConfig& config, const RunInput& input, std::string envelope_id,
                          std::string request_id, int64_t now);
RunState new_run_state(const PipelineConfig& config, std::string run_id, Envelope envelope);

// Stages that may run now: active, with every required stage completed; in config order.
void ready_stages(const PipelineConfig& config, const Envelope& envelope, std::vector<StageId>& out);
// Why nothing can run although stages are active, e.g. "join waits for test".
std::string deadlock_detail(const PipelineConfig& config, const Envelope& envelope);

// What a step did to the run's audit trail.
struct StepApplied {
  size_t first_transition = 0;  // run.transitions[first_transition..] are this step's
  const Checkpoint* checkpoint = nullptr;
  bool ended = false;
  bool interrupted = false;  // a stage raised the interrupt the run now waits on
};

// Applies one executed step: each outcome (in the order given, which is config order) updates
// outputs, counters, failures, interrupts and history; then each stage that did not pause is
// routed. A backward move is a cycle: it counts against its edge limit and the global
// iteration limit, and exceeding either ends the run with the reason recorded. A step that
// starts a cycle takes a checkpoint. Outputs are moved out of `outcomes`.
StepApplied apply_step(const PipelineConfig& config, RunState& run, std::vector<StageOutcome>& outcomes, int64_t at);

// Ends the run (bounds, deadlock, cancellation).
void apply_end(RunState& run, TerminalReason reason, std::string detail, int64_t at);
// Answers the pending interrupt; the stage that raised it runs again next.
Status apply_resume(RunState& run, std::string response, int64_t at);
// Restores the envelope and cycle counters of a checkpoint (the trail and step count stay).
Status apply_rollback(RunState& run, std::string_view checkpoint_id);

}  // namespace warden::executor
