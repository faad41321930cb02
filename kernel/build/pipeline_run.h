// What starting and resuming a pipeline run decide, apart from flags and printing: reading
// its config, what the run's start records about how it was launched, and the rules a resume
// must meet (a run that ended does not resume; one waiting for a response resumes only with
// one; its command stages are confined exactly as its start recorded, or the ledger would
// claim a confinement the rest of the run did not have).
//
// Plain values and functions; thread-safe. Errors: invalid_argument naming the broken rule,
// the config's own parse errors, io_error reading it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/canonical_json.h"
#include "common/command_launcher.h"
#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/run_state.h"

namespace warden::kernel {

struct LoadedPipeline {
  executor::PipelineConfig config;
  std::filesystem::path base_dir;  // the config's directory: command stages' relative paths start there
};

// The config at `path` (at most 16 MiB).
Result<LoadedPipeline> load_pipeline_config(const std::string& path);

// How a run was launched, as its start record keeps it ("launch").
struct PipelineLaunch {
  std::filesystem::path base_dir;
  bool logical_clock = false;
  std::optional<LaunchConfinement> confinement;  // how its command stages run; none without any

  Json to_json() const;
  // Fields missing from an older record read as empty / system / none.
  static Result<PipelineLaunch> from_json(const Json& launch);
};

// invalid_argument unless `run` may resume: not ended, and given a response exactly when it
// waits for one.
Status check_resumable(const executor::RunState& run, bool has_response);

// invalid_argument unless the command stages would now be confined as `recorded` says.
Status check_same_confinement(const PipelineLaunch& recorded, const std::optional<LaunchConfinement>& now);

}  // namespace warden::kernel
