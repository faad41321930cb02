// Routing: which successor a stage's output selects. Rules are tried in config order and the
// first whose condition holds wins; otherwise default_next. Pure functions of the config and
// the output, so a replay routes exactly as the live run did. No state: thread-safe.
// The returned pointers borrow from `output` and `stage`; they are valid as long as those are.
#pragma once

#include "common/canonical_json.h"
#include "executor/pipeline_config.h"

namespace warden::executor {

// The value at `path` inside `output` (objects only), or null when any step is missing.
const Json* find_field(const Json& output, const std::vector<std::string>& path);

// equals/in compare JSON values exactly; not_equals also holds when the field is absent;
// lt..gte hold only when the field is an integer.
bool condition_holds(const Condition& condition, const Json& output);

// The first rule of `stage` whose condition holds on `output`, or null.
const RoutingRule* first_matching_rule(const StageSpec& stage, const Json& output);

}  // namespace warden::executor
