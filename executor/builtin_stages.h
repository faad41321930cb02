// Built-in stages every pipeline may use, configured through `params`:
//   constant  answers params.output (a JSON object), charging params.llm_calls (default 0):
//             fixed steps, fan-out sources, tests.
//   approval  pauses the run with an "approval" interrupt asking params.question; when the
//             run resumes it answers {"approved": bool, "response": text}, approved when the
//             response is one of params.approve (default ["yes", "y", "approve", "approved"],
//             compared case-insensitively).
//   join      answers {"joined": {stage: output}} for every stage it `requires`: the meeting
//             point of a fan-out.
#pragma once

#include "executor/agent_registry.h"

namespace warden::executor {

void add_builtin_stages(AgentRegistry& registry);

}  // namespace warden::executor
