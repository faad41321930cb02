#include "executor/routing.h"

#include <algorithm>

namespace warden::executor {
namespace {

bool as_integer(const Json& v, int64_t& out) {
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
    out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  return false;
}

}  // namespace

const Json* find_field(const Json& output, const std::vector<std::string>& path) {
  const Json* at = &output;
  for (const auto& key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

bool condition_holds(const Condition& c, const Json& output) {
  const Json* field = find_field(output, c.path);
  switch (c.op) {
    case ConditionOp::exists: return (field != nullptr) == c.exists;
    case ConditionOp::equals: return field && *field == c.value;
    case ConditionOp::not_equals: return !field || *field != c.value;
    case ConditionOp::in:
      return field && std::any_of(c.value.begin(), c.value.end(), [&](const Json& v) { return v == *field; });
    default: break;
  }
  int64_t lhs = 0, rhs = 0;
  if (!field || !as_integer(*field, lhs) || !as_integer(c.value, rhs)) return false;
  switch (c.op) {
    case ConditionOp::lt: return lhs < rhs;
    case ConditionOp::lte: return lhs <= rhs;
    case ConditionOp::gt: return lhs > rhs;
    case ConditionOp::gte: return lhs >= rhs;
    default: return false;
  }
}

const RoutingRule* first_matching_rule(const StageSpec& stage, const Json& output) {
  for (const auto& rule : stage.routing) {
    if (condition_holds(rule.when, output)) return &rule;
  }
  return nullptr;
}

}  // namespace warden::executor
