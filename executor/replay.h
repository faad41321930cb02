// Rebuilding a run from its ledger records (to resume it after a pause or a crash, or to
// audit it). Each recorded step is applied with the same functions the live run used; the
// transitions, checkpoints and endings replay recomputes must equal the recorded ones, so a
// ledger that was edited, or a config that does not match the run, is refused (Errc::corrupt).
#pragma once

#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/run_records.h"
#include "executor/run_state.h"

namespace warden::executor {

// `config` must be the run's own (parsed from parse_run_start(stored).config).
Result<RunState> replay_run(const PipelineConfig& config, const StoredRun& stored);

}  // namespace warden::executor
