// A transition: one move of a run from a stage to its successor, with the reason it was taken.
// Every transition is recorded (in memory, in the ledger) for audit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::executor {

enum class TransitionReason {
  default_next,  // "default": the stage's default_next
  routing,       // a routing rule matched (a forward move)
  reintent,      // a backward jump: the run cycles back to an earlier stage
  next_stage,    // a rule with advance_stage: multi-stage execution moves on
  error,         // the stage failed: error_next, or the end of the run
  complete,      // the move to "end"
};
std::string_view transition_reason_name(TransitionReason reason);
std::optional<TransitionReason> parse_transition_reason(std::string_view name);

struct Transition {
  uint64_t step = 0;  // the executor step that made the move
  std::string from;
  std::string to;
  TransitionReason reason = TransitionReason::default_next;
  int64_t iteration = 0;  // the envelope's iteration after the move
  int64_t timestamp = 0;  // ms, from the injected clock
  std::string checkpoint;  // id of the checkpoint taken with this move, or empty
  std::string detail;      // why, when the reason alone does not say (a limit, an error)

  bool operator==(const Transition&) const = default;
};

Json transition_to_json(const Transition& t);
Result<Transition> transition_from_json(const Json& json, std::string_view what, Errc code = Errc::invalid_argument);

}  // namespace warden::executor
