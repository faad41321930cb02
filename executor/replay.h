// Rebuilding a run from its ledger records (to resume it after a pause or a crash, or to
// audit it). Each recorded step is applied with the same functions the live run used; the
// transitions, checkpoints and endings replay recomputes must equal the recorded ones, so a
// ledger that was edited, or a config that does not match the run, is refused (Errc::corrupt).
#pragma once

#include <cstddef>
#include <string_view>

#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/run_records.h"
#include "executor/run_state.h"

namespace warden::executor {

// `config` must be the run's own (parsed from parse_run_start(stored).config).
Result<RunState> replay_run(const PipelineConfig& config, const StoredRun& stored);

// A recorded run read back: how it started, its own config and its state rebuilt by replay.
struct RecordedRun {
  RunStart start;
  PipelineConfig config;
  RunState state;
  size_t records = 0;
};
// The resume path: reads run `run_id` through `reader`, parses the config recorded with it and
// replays it. Errors as RunReader::load and replay_run.
Result<RecordedRun> read_recorded_run(RunReader& reader, std::string_view run_id);

}  // namespace warden::executor
