// The state of one pipeline run beyond its envelope: cycle counters, the step counter, the
// audit trail of transitions and the checkpoints taken before cycles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "executor/envelope.h"
#include "executor/pipeline_config.h"
#include "executor/stage_result.h"
#include "executor/transition.h"

namespace warden::executor {

// The envelope (deep clone) and cycle counters as they stood when a cycle began: after the
// move back to `stage`, before that stage ran again. Rolling back to it re-runs the cycle.
struct Checkpoint {
  std::string id;     // "cp-<step>"
  std::string stage;  // the stage the cycle returns to
  uint64_t step = 0;
  int64_t iteration = 0;
  int64_t created_at = 0;
  Envelope envelope;
  std::vector<int64_t> edge_counts;
};

// One stage's execution within a step: what it answered and when it ran.
struct StageOutcome {
  StageId stage = 0;
  StageResult result;
  int64_t started_at = 0;
  int64_t completed_at = 0;

  bool operator==(const StageOutcome&) const = default;
};

struct RunState {
  std::string run_id;
  Envelope envelope;
  std::vector<int64_t> edge_counts;  // times each of config.edge_limits was taken
  uint64_t step = 0;                 // steps executed; never rolled back, so ids stay unique
  std::vector<Transition> transitions;
  std::vector<Checkpoint> checkpoints;

  bool ended() const { return envelope.terminated; }
  // Paused on an interrupt, waiting for a response.
  bool waiting() const { return envelope.interrupt_pending && !envelope.terminated; }

  const Checkpoint* find_checkpoint(std::string_view id) const {
    for (const auto& cp : checkpoints) {
      if (cp.id == id) return &cp;
    }
    return nullptr;
  }
  // The most recent checkpoint of a cycle back to `stage` (a rollback to `stage`).
  const Checkpoint* latest_checkpoint_for(std::string_view stage) const {
    for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
      if (it->stage == stage) return &*it;
    }
    return nullptr;
  }
};

}  // namespace warden::executor
