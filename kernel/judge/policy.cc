#include "kernel/judge/policy.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/file.h"
#include "kernel/plan/blueprint.h"
#include "kernel/judge/dangerous_ops.h"
#include "common/note_key.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

constexpr uint64_t kMaxPolicyBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxProgramBytes = 64 * 1024;  // a sandbox data file's limit

std::string checks_prefix() { return std::string(kChecksMountDir) + "/"; }

bool valid_program_name(std::string_view name) {
  return valid_identifier(name) && name != "." && name != "..";
}

void read_globs(JsonReader& r, const std::string& key, std::vector<std::string>& out) {
  r.strings(key, out, false);
  for (size_t i = 0; i < out.size() && r.ok(); ++i) {
    if (out[i].empty()) r.fail(key, "element " + std::to_string(i) + " is empty");
  }
}

// The files of `dir` (not recursive) by name, for a policy file's own checks/ folder.
Status read_program_dir(const std::filesystem::path& dir, std::map<std::string, std::string>& out) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.starts_with(".") || name.ends_with(".pyc")) continue;
    auto bytes = read_file(entry.path(), kMaxProgramBytes);
    if (!bytes) return std::unexpected(bytes.error());
    out[name] = std::move(*bytes);
  }
  if (ec) return std::unexpected(errno_error(dir.string(), ec.value()));
  return {};
}

}  // namespace

std::vector<std::string> Policy::referenced_programs() const {
  std::set<std::string> names;
  for (const auto& [name, inv] : invariants) names.insert(inv.program);
  std::string prefix = checks_prefix();
  for (const CheckSpec& c : checks) {
    for (const std::string& arg : c.argv) {
      if (arg.starts_with(prefix)) names.insert(arg.substr(prefix.size()));
    }
  }
  return {names.begin(), names.end()};
}

Result<CheckSpec> Policy::invariant_check(std::string_view invariant) const {
  auto it = invariants.find(std::string(invariant));
  if (it == invariants.end()) {
    return fail(Errc::not_found, "policy " + name + " has no invariant \"" + std::string(invariant) + "\"");
  }
  CheckSpec c;
  c.name = "invariant:" + it->first;
  c.argv = {"python3", checks_prefix() + it->second.program};
  c.argv.insert(c.argv.end(), it->second.args.begin(), it->second.args.end());
  c.proves = {it->first};
  c.tests_from = it->second.tests_from;
  return c;
}

Result<SandboxProfile> Policy::sandbox_profile_with_programs() const {
  auto profile = SandboxProfile::load(sandbox_profile);
  if (!profile) return std::unexpected(profile.error().with_context("policy " + name + ": sandbox_profile"));
  for (const auto& [file, bytes] : programs) profile->files.push_back(DataFile{checks_prefix() + file, bytes});
  return profile;
}

Result<Policy> Policy::parse(std::string_view text, std::string_view what) {
  auto json = parse_json(text, what);
  if (!json) return std::unexpected(json.error());
  Policy p;
  JsonReader r(*json, "policy");
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kPolicyFormat) r.fail("format", "must be \"" + std::string(kPolicyFormat) + "\"");
  r.string("name", p.name);
  if (r.ok() && !valid_identifier(p.name)) r.fail("name", "\"" + p.name + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
  r.string("language", p.language, false);
  r.string("description", p.description, false);
  r.string("sandbox_profile", p.sandbox_profile, false);
  if (r.ok() && p.sandbox_profile.empty()) r.fail("sandbox_profile", "must name a profile");
  r.optional_digest("environment", p.environment);
  if (const Json* recipe = r.value("environment_recipe", Json::value_t::object, false)) {
    if (r.ok() && !p.environment) r.fail("environment_recipe", "needs the environment it built");
    p.environment_recipe = *recipe;
  }
  read_checks(r, "checks", p.checks);
  r.strings("required_checks", p.required_checks, false);
  for (const std::string& required : p.required_checks) {
    bool known = std::any_of(p.checks.begin(), p.checks.end(), [&](const CheckSpec& c) { return c.name == required; });
    if (r.ok() && !known) r.fail("required_checks", "\"" + required + "\" is not one of the policy's checks");
  }
  read_globs(r, "allow_paths", p.allow_paths);
  read_globs(r, "deny_paths", p.deny_paths);
  read_globs(r, "protected_paths", p.protected_paths);
  read_globs(r, "approval_paths", p.approval_paths);
  if (const Json* oracle = r.value("oracle", Json::value_t::object, false)) {
    JsonReader o(*oracle, r.path("oracle"));
    read_globs(o, "paths", p.oracle.paths);
    read_globs(o, "hooks", p.oracle.hooks);
    read_globs(o, "sections", p.oracle.sections);
    r.adopt(o.finish());
  }
  r.unsigned_integer("max_diff_bytes", p.max_diff_bytes, 1, uint64_t{1} << 40, false);
  r.unsigned_integer("max_files", p.max_files, 1, 1'000'000, false);
  r.boolean("exact_content", p.exact_content, false);
  r.boolean("dangerous_operations", p.dangerous_operations, false);
  r.strings("dangerous_operation_rules", p.dangerous_operation_rules, false);
  for (const std::string& selector : p.dangerous_operation_rules) {
    if (r.ok() && !is_danger_rule_selector(selector)) {
      r.fail("dangerous_operation_rules", "\"" + selector + "\" is neither a rule id, a category nor a class of the dangerous-operation scan");
    }
  }
  r.strings("approvers", p.approvers, false);
  for (const std::string& vkey : p.approvers) {
    if (auto v = NoteVerifier::parse(vkey); r.ok() && !v) r.fail("approvers", v.error().message);
  }
  r.strings("dangerous_operation_waivers", p.dangerous_operation_waivers, false);
  for (const std::string& id : p.dangerous_operation_waivers) {
    if (r.ok() && !is_danger_rule_id(id)) {
      r.fail("dangerous_operation_waivers", "\"" + id + "\" is not a rule id of the dangerous-operation scan (e.g. py.frame_inspection)");
    }
  }
  if (r.ok() && !p.dangerous_operation_rules.empty() && !p.dangerous_operations) {
    r.fail("dangerous_operation_rules", "names rules of a scan that \"dangerous_operations\": false turns off");
  }
  if (const Json* invariants = r.value("invariants", Json::value_t::object, false)) {
    for (const auto& [inv_name, body] : invariants->items()) {
      if (!r.ok()) break;
      if (!valid_identifier(inv_name)) {
        r.fail("invariants", "\"" + inv_name + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
        break;
      }
      JsonReader ir(body, r.path("invariants") + "." + inv_name);
      InvariantProgram prog;
      ir.string("program", prog.program);
      if (ir.ok() && !valid_program_name(prog.program)) {
        ir.fail("program", "\"" + prog.program + "\" must be a file name in policies/checks/");
      }
      ir.strings("args", prog.args, false);
      ir.string("description", prog.description, false);
      ir.strings("tests_from", prog.tests_from, false);
      for (const std::string& from : prog.tests_from) {
        bool known = std::any_of(p.checks.begin(), p.checks.end(), [&](const CheckSpec& c) { return c.name == from; });
        if (ir.ok() && !known) ir.fail("tests_from", "\"" + from + "\" is not one of the policy's checks");
      }
      r.adopt(ir.finish());
      p.invariants.emplace(inv_name, std::move(prog));
    }
  }
  r.strings("checkpoint_invariants", p.checkpoint_invariants, false);
  for (const std::string& inv : p.checkpoint_invariants) {
    if (r.ok() && !p.knows_invariant(inv)) r.fail("checkpoint_invariants", "\"" + inv + "\" is not one of the policy's invariants");
  }
  if (const Json* q = r.value("runner_quorum", Json::value_t::object, /*required=*/false)) {
    auto quorum = RunnerQuorum::from_json(*q);
    if (quorum) p.runner_quorum = *quorum;
    else r.fail("runner_quorum", quorum.error().message);
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  for (const std::string& program : p.referenced_programs()) {
    if (!valid_program_name(program)) {
      return fail(Errc::invalid_argument, "policy.checks: \"" + checks_prefix() + program + "\" must name a file directly under " +
                                              std::string(kChecksMountDir));
    }
  }
  return p;
}

Result<Policy> Policy::load(std::string_view name_or_path) {
  std::string name(name_or_path);
  std::map<std::string, std::string> programs;
  for (const auto& [file, bytes] : builtin_check_programs()) programs[file] = std::string(bytes);
  auto policy = [&]() -> Result<Policy> {
    if (std::string_view builtin = builtin_policy_text(name); !builtin.empty()) {
      return parse(builtin, "builtin policy " + name);
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(name, ec)) {
      std::string known;
      for (std::string_view n : builtin_policy_names()) known += (known.empty() ? "" : ", ") + std::string(n);
      return fail(Errc::not_found, "policy \"" + name + "\" is neither a builtin (" + known + ") nor a file");
    }
    auto text = read_file(name, kMaxPolicyBytes);
    if (!text) return std::unexpected(text.error());
    auto parsed = parse(*text, "policy file " + name);
    if (!parsed) return std::unexpected(parsed.error().with_context(name));
    if (Status st = read_program_dir(std::filesystem::path(name).parent_path() / "checks", programs); !st) {
      return std::unexpected(st.error());
    }
    return parsed;
  }();
  if (!policy) return policy;
  for (const std::string& program : policy->referenced_programs()) {
    if (!programs.contains(program)) {
      return fail(Errc::not_found, "policy " + policy->name + ": check program \"" + program +
                                       "\" is neither builtin nor in the checks/ folder beside the policy");
    }
  }
  policy->programs = std::move(programs);
  return policy;
}

Json Policy::to_json() const {
  Json checks_j = Json::array(), invariants_j = Json::object(), programs_j = Json::object();
  for (const CheckSpec& c : checks) checks_j.push_back(c.to_json());
  for (const auto& [inv, prog] : invariants) {
    invariants_j[inv] = {{"program", prog.program}, {"args", prog.args}, {"description", prog.description}};
    if (!prog.tests_from.empty()) invariants_j[inv]["tests_from"] = prog.tests_from;
  }
  for (const auto& [file, bytes] : programs) programs_j[file] = sha256(bytes).str();
  Json j = {{"format", kPolicyFormat},
            {"name", name},
            {"language", language},
            {"description", description},
            {"sandbox_profile", sandbox_profile},
            {"checks", checks_j},
            {"required_checks", required_checks},
            {"allow_paths", allow_paths},
            {"deny_paths", deny_paths},
            {"protected_paths", protected_paths},
            {"approval_paths", approval_paths},
            {"oracle", oracle.to_json()},
            {"max_diff_bytes", max_diff_bytes},
            {"max_files", max_files},
            {"exact_content", exact_content},
            {"dangerous_operations", dangerous_operations},
            {"dangerous_operation_rules", dangerous_operation_rules},
            {"invariants", invariants_j},
            {"checkpoint_invariants", checkpoint_invariants},
            {"programs", programs_j}};
  // Only when set: every policy written before it keeps its digest.
  if (runner_quorum) j["runner_quorum"] = runner_quorum->to_json();
  if (!dangerous_operation_waivers.empty()) j["dangerous_operation_waivers"] = dangerous_operation_waivers;
  if (!approvers.empty()) j["approvers"] = approvers;
  if (environment) j["environment"] = environment->str();
  if (environment_recipe.is_object()) j["environment_recipe"] = environment_recipe;
  return j;
}

Digest Policy::digest() const { return sha256(canonicalize(to_json()).value()); }

std::string_view default_policy_for(std::string_view language) {
  if (language == "python") return "python";
  if (language == "c" || language == "cpp" || language == "c++") return "cpp";
  return {};
}

}  // namespace warden::kernel
