#include "executor/events.h"

namespace warden::executor {

std::string_view event_type_name(EventType type) {
  switch (type) {
    case EventType::stage_started: return "stage_started";
    case EventType::stage_completed: return "stage_completed";
    case EventType::stage_failed: return "stage_failed";
    case EventType::pipeline_completed: return "pipeline_completed";
    case EventType::interrupt_raised: return "interrupt_raised";
    case EventType::checkpoint_created: return "checkpoint_created";
    case EventType::transition: return "transition";
  }
  return "unknown";
}

}  // namespace warden::executor
