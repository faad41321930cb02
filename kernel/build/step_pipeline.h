// The pipeline one build step runs on the state-machine executor (executor/state_machine.h):
//   propose -> run -> verify -> commit, or verify -> propose again with the refusal.
// The edge verify -> propose is the retry edge; its limit is max_retries - 1 (with one
// proposal allowed, a refusal ends the pipeline). The other bounds only need to exceed what
// the edge limit allows. The config is recorded (as a blob) by every step's pipeline run, so
// its JSON is part of the golden bytes.
#pragma once

#include <cstdint>

#include "executor/pipeline_config.h"

namespace warden::kernel {

Result<executor::PipelineConfig> step_pipeline_config(int64_t max_retries);

}  // namespace warden::kernel
