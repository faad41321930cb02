// Execution events, delivered to subscribers as a run makes progress. All events are emitted
// from the thread driving the run, in a deterministic order (stages of a parallel batch in
// config order), so a subscriber needs no locking and a golden run's event stream is stable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/canonical_json.h"

namespace warden::executor {

enum class EventType {
  stage_started,
  stage_completed,     // payload: {"output", "llm_calls"}
  stage_failed,        // payload: {"error"}
  pipeline_completed,  // the run ended, for any reason: {"terminal_reason", "termination_reason"}
  interrupt_raised,    // payload: the FlowInterrupt
  checkpoint_created,  // payload: {"id", "iteration", "step"}
  transition,          // payload: the Transition
};
std::string_view event_type_name(EventType type);

struct ExecutionEvent {
  EventType type;
  std::string run_id;
  std::string stage;  // empty for run-level events
  int64_t timestamp_ms = 0;
  Json payload = Json::object();
  uint64_t step = 0;  // the run's step counter when it happened
};

using EventHandler = std::function<void(const ExecutionEvent&)>;

class EventBus {
 public:
  void subscribe(EventHandler handler) { handlers_.push_back(std::move(handler)); }
  // Callers skip building events nobody listens to.
  bool has_subscribers() const { return !handlers_.empty(); }
  void emit(const ExecutionEvent& event) const {
    for (const auto& h : handlers_) h(event);
  }

 private:
  std::vector<EventHandler> handlers_;
};

}  // namespace warden::executor
