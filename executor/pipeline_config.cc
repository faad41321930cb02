#include "executor/pipeline_config.h"

#include <algorithm>
#include <utility>

#include "common/sha256.h"
#include "common/json_reader.h"
#include "common/strings.h"
#include "executor/names.h"

namespace warden::executor {
namespace {

constexpr size_t kMaxStages = 256;
constexpr int64_t kMaxSeconds = 86'400;
constexpr int64_t kMaxCount = 1'000'000'000;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

bool valid_stage_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), name_char);
}

constexpr NameTable<ConditionOp, 8> kOps{{
    {ConditionOp::equals, "equals"},
    {ConditionOp::not_equals, "not_equals"},
    {ConditionOp::in, "in"},
    {ConditionOp::exists, "exists"},
    {ConditionOp::lt, "lt"},
    {ConditionOp::lte, "lte"},
    {ConditionOp::gt, "gt"},
    {ConditionOp::gte, "gte"},
}};

// A field path's keys: "output.score" -> {"output", "score"}.
std::vector<std::string> field_keys(std::string_view field) {
  auto parts = split(field, '.');
  return {parts.begin(), parts.end()};
}

}  // namespace

// Reads a config top to bottom; see PipelineConfig::parse.
class ConfigParser {
 public:
  ConfigParser(const Json& source, PipelineConfig& out) : r_(source, "", JsonDialect::null_is_absent), c_(out) {}

  Status run() {
    c_.name = r_.string("name");
    c_.description = r_.string_or("description", "");
    c_.max_iterations = r_.integer_or("max_iterations", c_.max_iterations, 0, kMaxCount);
    c_.max_llm_calls = r_.integer_or("max_llm_calls", c_.max_llm_calls, 1, kMaxCount);
    c_.max_agent_hops = r_.integer_or("max_agent_hops", c_.max_agent_hops, 1, kMaxCount);
    c_.default_timeout_seconds = r_.integer_or("default_timeout_seconds", c_.default_timeout_seconds, 1, kMaxSeconds);
    c_.max_parallel = r_.integer_or("max_parallel", c_.max_parallel, 1, 64);
    c_.max_stages = r_.integer_or("max_stages", c_.max_stages, 1, kMaxCount);

    const Json& stages = r_.array("stages");
    if (r_.ok() && stages.empty()) r_.fail("stages", "must list at least one stage");
    if (stages.size() > kMaxStages) r_.fail("stages", "more than " + std::to_string(kMaxStages) + " stages");
    if (!r_.ok()) return r_.finish();
    // Names first, so that any stage may name any other, forwards or backwards.
    for (size_t i = 0; i < stages.size(); ++i) declare(stages, i);
    for (size_t i = 0; i < stages.size() && r_.ok(); ++i) parse_stage(stages, i);

    if (auto start = r_.optional_string("start")) {
      c_.start = resolve(r_, "start", *start, false);
    }
    if (r_.ok() && !c_.stages.empty() && !c_.stages[c_.start].required.empty()) {
      r_.fail(c_.start == 0 ? "stages[0].requires" : "start",
              "the start stage \"" + c_.stages[c_.start].name + "\" cannot wait for other stages");
    }
    parse_edge_limits();
    return r_.finish();
  }

 private:
  void declare(const Json& stages, size_t i) {
    JsonReader s = r_.element("stages", stages, i);
    const Json* name = s.get("name");
    if (!name || !name->is_string()) {
      s.fail("name", "is required and must be a string");
      return;
    }
    std::string n = name->get<std::string>();
    if (!valid_stage_name(n)) {
      s.fail("name", "\"" + n + "\" is not a stage name (1-64 of A-Z a-z 0-9 _ - .)");
    } else if (n == kEndName) {
      s.fail("name", "\"end\" is reserved: it names the end of the pipeline");
    } else if (c_.find(n)) {
      s.fail("name", "duplicate stage name \"" + n + "\"");
    }
    auto id = static_cast<StageId>(c_.stages.size());
    c_.stages.push_back(StageSpec{});
    c_.stages.back().id = id;
    c_.stages.back().name = n;
    c_.index_.emplace(std::move(n), id);
  }

  StageId resolve(JsonReader& r, std::string_view key, const std::string& name, bool allow_end) {
    if (name == kEndName) {
      if (!allow_end) r.fail(key, "\"end\" is not a stage here");
      return kEnd;
    }
    if (auto id = c_.find(name)) return *id;
    std::string known;
    for (const auto& s : c_.stages) known += (known.empty() ? "" : ", ") + s.name;
    r.fail(key, "unknown stage \"" + name + "\" (stages: " + known + ")");
    return kEnd;
  }

  // A successor: one stage name, "end", or a list of stage names to run next (fan-out).
  std::vector<StageId> parse_next(JsonReader& r, std::string_view key, const Json& value) {
    if (value.is_string()) return {resolve(r, key, value.get<std::string>(), true)};
    if (!value.is_array() || value.empty()) {
      r.fail(key, "must be a stage name or a non-empty list of stage names");
      return {kEnd};
    }
    std::vector<StageId> out;
    for (size_t i = 0; i < value.size(); ++i) {
      std::string item_key = std::string(key) + "[" + std::to_string(i) + "]";
      if (!value[i].is_string()) {
        r.fail(item_key, "must be a stage name");
        return {kEnd};
      }
      StageId id = resolve(r, item_key, value[i].get<std::string>(), false);
      if (std::find(out.begin(), out.end(), id) != out.end()) r.fail(item_key, "names a stage twice");
      out.push_back(id);
    }
    return out;
  }

  void parse_stage(const Json& stages, size_t i) {
    JsonReader s = r_.element("stages", stages, i);
    StageSpec& spec = c_.stages[i];
    s.get("name");
    spec.kind = s.string("kind");
    if (s.ok() && !is_lower_identifier(spec.kind)) s.fail("kind", "\"" + spec.kind + "\" is not a kind (1-64 of a-z 0-9 _)");
    bool is_command = spec.kind == "command";
    if (is_command) {
      spec.command = s.string_list("command");
      if (s.ok() && spec.command.empty()) s.fail("command", "is required for kind \"command\" (the program and its arguments)");
      if (s.ok() && spec.command.front().empty()) s.fail("command[0]", "must name a program");
      spec.env = s.string_map("env");
    } else {
      if (s.has("command")) s.fail("command", "is only for kind \"command\"");
      if (s.has("env")) s.fail("env", "is only for kind \"command\"");
    }
    spec.timeout_seconds = s.integer_or("timeout_seconds", c_.default_timeout_seconds, 1, kMaxSeconds);
    spec.params = s.object_or_empty("params");
    auto required = s.string_list("requires");
    for (size_t k = 0; k < required.size(); ++k) {
      std::string key = "requires[" + std::to_string(k) + "]";
      StageId id = resolve(s, key, required[k], false);
      if (id == spec.id) s.fail(key, "a stage cannot wait for itself");
      spec.required.push_back(id);
    }
    if (const Json* next = s.get("default_next")) spec.default_next = parse_next(s, "default_next", *next);
    if (auto err = s.optional_string("error_next")) spec.error_next = resolve(s, "error_next", *err, true);
    const Json& rules = s.array("routing");
    for (size_t k = 0; k < rules.size() && s.ok(); ++k) {
      JsonReader rule = s.element("routing", rules, k);
      spec.routing.push_back(parse_rule(rule));
      if (auto st = rule.finish(); !st) return;
    }
    (void)s.finish();
  }

  RoutingRule parse_rule(JsonReader& rule) {
    RoutingRule out;
    JsonReader when = rule.child("when");
    Condition& c = out.when;
    c.field = when.string("field");
    if (when.ok() && c.field.empty()) when.fail("field", "must name an output field");
    c.path = field_keys(c.field);
    if (when.ok() && std::any_of(c.path.begin(), c.path.end(), [](const auto& p) { return p.empty(); })) {
      when.fail("field", "\"" + c.field + "\" has an empty path segment");
    }
    std::string op = when.string("op");
    if (when.ok()) {
      if (auto parsed = value_of(kOps, op)) {
        c.op = *parsed;
      } else {
        when.fail("op", "unknown operator \"" + op +
                            "\" (one of equals, not_equals, in, exists, lt, lte, gt, gte)");
      }
    }
    if (when.ok()) {
      const Json* value = when.get("value");
      switch (c.op) {
        case ConditionOp::equals:
        case ConditionOp::not_equals:
          if (!value) when.fail("value", "is required for " + op);
          else c.value = *value;
          break;
        case ConditionOp::in:
          if (!value || !value->is_array()) when.fail("value", "must be an array for in");
          else c.value = *value;
          break;
        case ConditionOp::exists:
          if (value && !value->is_boolean()) when.fail("value", "must be true or false for exists");
          c.exists = value ? value->get<bool>() : true;
          break;
        default:
          if (!value || !(value->is_number_integer() || value->is_number_unsigned())) {
            when.fail("value", "must be an integer for " + op);
          } else {
            c.value = *value;
          }
      }
    }
    (void)when.finish();
    if (const Json* next = rule.get("next")) {
      out.next = parse_next(rule, "next", *next);
    } else {
      rule.fail("next", "is required");
    }
    out.advance_stage = rule.boolean_or("advance_stage", false);
    return out;
  }

  void parse_edge_limits() {
    const Json& limits = r_.array("edge_limits");
    for (size_t i = 0; i < limits.size() && r_.ok(); ++i) {
      JsonReader e = r_.element("edge_limits", limits, i);
      EdgeLimit limit;
      std::string from = e.string("from"), to = e.string("to");
      if (e.ok()) limit.from = resolve(e, "from", from, false);
      if (e.ok()) limit.to = resolve(e, "to", to, false);
      limit.max_count = e.integer("max_count", 0, kMaxCount);
      if (e.ok() && c_.edge_limit_index(limit.from, limit.to) >= 0) {
        e.fail("", "a second limit for the edge " + from + " -> " + to);
      }
      if (e.finish()) c_.edge_limits.push_back(limit);
    }
  }

  JsonReader r_;
  PipelineConfig& c_;
};

std::string_view condition_op_name(ConditionOp op) { return name_of(kOps, op); }

Result<PipelineConfig> PipelineConfig::parse(const Json& config) {
  // Configs are recorded with the runs, so they hold what a canonical record can.
  auto canonical = canonicalize(config);
  if (!canonical) return std::unexpected(canonical.error().with_context("pipeline config"));
  PipelineConfig out;
  out.source = config;
  out.digest = sha256(*canonical).str();
  out.canonical = std::move(*canonical);
  ConfigParser parser(config, out);
  if (auto st = parser.run(); !st) return std::unexpected(st.error());
  return out;
}

Result<PipelineConfig> PipelineConfig::parse_text(std::string_view text, std::string_view what) {
  auto json = parse_json(text, what);
  if (!json) return std::unexpected(json.error());
  auto config = parse(*json);
  if (!config) return std::unexpected(config.error().with_context(what));
  return config;
}

std::optional<StageId> PipelineConfig::find(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

int PipelineConfig::edge_limit_index(StageId from, StageId to) const {
  for (size_t i = 0; i < edge_limits.size(); ++i) {
    if (edge_limits[i].from == from && edge_limits[i].to == to) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace warden::executor
