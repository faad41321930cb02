#include "kernel/plan/blueprint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/file.h"
#include "common/json_reader.h"
#include "diff/path_safety.h"

namespace warden::kernel {
namespace {

constexpr uint64_t kMaxContentFileBytes = uint64_t{16} << 20;
const std::set<std::string, std::less<>> kLanguages = {"python", "c", "cpp", "other"};
const std::set<std::string, std::less<>> kArtifactTypes = {"module",   "function", "test_suite",
                                                           "document", "binary",   "dependency"};

// Reads `file_key` (a file relative to base_dir) as UTF-8 text, or records why not.
void read_relative_file(JsonReader& r, const std::string& key, const std::string& base_dir,
                        const std::string& name, std::string& out) {
  if (base_dir.empty()) return r.fail(key, "needs the blueprint's own file to resolve it (load a file)");
  if (std::string why = unsafe_path_reason(name); !why.empty()) return r.fail(key, "\"" + name + "\" " + why);
  auto text = read_file(std::filesystem::path(base_dir) / name, kMaxContentFileBytes);
  if (!text) return r.fail(key, text.error().message);
  if (!is_valid_utf8(*text)) return r.fail(key, "\"" + name + "\" is not UTF-8 text");
  out = std::move(*text);
}

// "content" or "content_file": exactly one, resolved to the bytes.
void read_content(JsonReader& r, const std::string& base_dir, std::string& out) {
  bool inline_text = r.has("content"), file = r.has("content_file");
  if (inline_text && file) return r.fail("content_file", "give content or content_file, not both");
  if (!inline_text && !file) return r.fail("content", "missing (give content or content_file)");
  if (inline_text) return r.string("content", out);
  std::string name;
  r.string("content_file", name);
  if (r.ok()) read_relative_file(r, "content_file", base_dir, name, out);
}

// "drafts" or "draft_files": at most one, resolved to the bytes.
void read_drafts(JsonReader& r, const std::string& base_dir, std::vector<std::string>& out) {
  if (r.has("drafts") && r.has("draft_files")) return r.fail("draft_files", "give drafts or draft_files, not both");
  if (!r.has("draft_files")) return r.strings("drafts", out, false);
  std::vector<std::string> names;
  r.strings("draft_files", names);
  for (size_t i = 0; i < names.size() && r.ok(); ++i) {
    out.emplace_back();
    read_relative_file(r, "draft_files[" + std::to_string(i) + "]", base_dir, names[i], out.back());
  }
}

void read_path(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (!r.ok()) return;
  if (std::string why = unsafe_path_reason(out); !why.empty()) r.fail(key, "\"" + out + "\" " + why);
}

// What every entry that writes a file has: its path, its content and its drafts.
void read_file_fields(JsonReader& r, const std::string& path_key, const std::string& base_dir, std::string& path,
                      std::string& content, std::vector<std::string>& drafts) {
  read_path(r, path_key, path);
  read_content(r, base_dir, content);
  read_drafts(r, base_dir, drafts);
}

void read_name(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && !valid_identifier(out)) r.fail(key, "\"" + out + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
}

void read_names(JsonReader& r, const std::string& key, std::vector<std::string>& out, bool required) {
  r.strings(key, out, required);
  for (size_t i = 0; i < out.size() && r.ok(); ++i) {
    if (!valid_identifier(out[i])) r.fail(key, "element " + std::to_string(i) + " \"" + out[i] + "\" must be 1-128 of A-Z a-z 0-9 _ . -");
  }
}

void read_artifact(JsonReader& r, const std::string& key, const std::string& type) {
  if (r.ok() && !kArtifactTypes.contains(type)) {
    r.fail(key, "\"" + type + "\" is not an artifact type (module, function, test_suite, document, binary, dependency)");
  }
}

// Cross-entry rules: every created path once, module and covers references resolve, a
// change's `after` names another entry's path, check names unique.
void check_references(JsonReader& r, const BlueprintSpec& b) {
  std::map<std::string, std::string> created;  // path -> the entry that creates it
  auto create = [&](const std::string& where, const std::string& path) {
    if (!r.ok()) return;
    auto [it, fresh] = created.emplace(path, where);
    if (!fresh) r.fail(where + ".path", "\"" + path + "\" is already created by " + it->second);
  };
  std::set<std::string> modules, functions, paths;
  for (size_t i = 0; i < b.modules.size(); ++i) {
    create("modules[" + std::to_string(i) + "]", b.modules[i].path);
    if (r.ok() && !modules.insert(b.modules[i].name).second) {
      r.fail("modules[" + std::to_string(i) + "].name", "\"" + b.modules[i].name + "\" is given twice");
    }
  }
  for (size_t i = 0; i < b.functions.size(); ++i) {
    const auto& f = b.functions[i];
    std::string where = "functions[" + std::to_string(i) + "]";
    create(where, f.path);
    if (r.ok() && !f.module.empty() && !modules.contains(f.module)) {
      r.fail(where + ".module", "no module named \"" + f.module + "\"");
    }
    for (const auto& name : f.names) {
      if (r.ok() && !functions.insert(name).second) r.fail(where + ".names", "\"" + name + "\" is defined twice");
    }
  }
  for (size_t i = 0; i < b.tests.size(); ++i) {
    std::string where = "tests[" + std::to_string(i) + "]";
    create(where, b.tests[i].path);
    for (const auto& name : b.tests[i].covers) {
      if (r.ok() && !functions.contains(name)) r.fail(where + ".covers", "no function named \"" + name + "\"");
    }
  }
  if (b.held_out) {
    for (const auto& name : b.held_out->covers) {
      if (r.ok() && !functions.contains(name)) r.fail("held_out.covers", "no function named \"" + name + "\"");
    }
  }
  for (const auto& [path, where] : created) paths.insert(path);
  for (const auto& d : b.dependencies) paths.insert(d.manifest);
  for (const auto& c : b.changes) paths.insert(c.path);
  for (size_t i = 0; i < b.changes.size(); ++i) {
    for (const auto& after : b.changes[i].after) {
      if (r.ok() && (after == b.changes[i].path || !paths.contains(after))) {
        r.fail("changes[" + std::to_string(i) + "].after", "\"" + after + "\" is not the path of another entry");
      }
    }
  }
}

}  // namespace

void read_intent(JsonReader& r, std::optional<Intent>& out) {
  const Json* intent = r.has("intent") ? r.nullable_object("intent") : nullptr;
  if (!intent) return;
  JsonReader ir(*intent, r.path("intent"));
  Intent in;
  read_name(ir, "name", in.name);
  ir.strings("artifacts", in.artifacts);
  for (const auto& a : in.artifacts) read_artifact(ir, "artifacts", a);
  r.adopt(ir.finish());
  out = std::move(in);
}

Json intent_json(const std::optional<Intent>& intent) {
  if (!intent) return nullptr;
  return {{"name", intent->name}, {"artifacts", intent->artifacts}};
}

Result<BlueprintSpec> BlueprintSpec::from_json(const Json& json, const std::string& base_dir) {
  BlueprintSpec b;
  JsonReader r(json, "blueprint");
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kBlueprintFormat) r.fail("format", "must be \"" + std::string(kBlueprintFormat) + "\"");
  read_name(r, "name", b.name);
  r.string("language", b.language);
  if (r.ok() && !kLanguages.contains(b.language)) r.fail("language", "must be python, c, cpp or other");
  if (const Json* repo = r.value("repository", Json::value_t::object, false)) {
    JsonReader rr(*repo, r.path("repository"));
    rr.nullable_string("seed", b.seed);
    if (rr.ok() && b.seed && b.seed->empty()) rr.fail("seed", "must not be empty");
    rr.string("base", b.base, false);
    if (rr.ok() && b.base.empty()) rr.fail("base", "must not be empty");
    rr.nullable_string("branch", b.branch);
    if (rr.ok() && b.branch && b.branch->empty()) rr.fail("branch", "must not be empty");
    r.adopt(rr.finish());
  }
  r.strings("goals", b.goals, false);
  r.string("policy", b.policy, false);
  r.string("environment", b.environment, false);
  read_intent(r, b.intent);
  for_each_object(r, "modules", false, [&](JsonReader& m, size_t) {
    BlueprintModule mod;
    read_name(m, "name", mod.name);
    read_file_fields(m, "path", base_dir, mod.path, mod.content, mod.drafts);
    b.modules.push_back(std::move(mod));
  });
  for_each_object(r, "functions", false, [&](JsonReader& f, size_t) {
    BlueprintFunction fn;
    read_names(f, "names", fn.names, true);
    if (f.ok() && fn.names.empty()) f.fail("names", "must name at least one function");
    f.string("module", fn.module, false);
    read_file_fields(f, "path", base_dir, fn.path, fn.content, fn.drafts);
    b.functions.push_back(std::move(fn));
  });
  for_each_object(r, "tests", false, [&](JsonReader& t, size_t) {
    BlueprintTest test;
    read_name(t, "name", test.name);
    read_names(t, "covers", test.covers, false);
    read_file_fields(t, "path", base_dir, test.path, test.content, test.drafts);
    b.tests.push_back(std::move(test));
  });
  for_each_object(r, "dependencies", false, [&](JsonReader& d, size_t) {
    BlueprintDependency dep;
    d.string("name", dep.name);
    if (d.ok() && dep.name.empty()) d.fail("name", "must not be empty");
    read_file_fields(d, "manifest", base_dir, dep.manifest, dep.content, dep.drafts);
    b.dependencies.push_back(std::move(dep));
  });
  for_each_object(r, "changes", false, [&](JsonReader& c, size_t) {
    BlueprintChange change;
    read_file_fields(c, "path", base_dir, change.path, change.content, change.drafts);
    c.string("description", change.description, false);
    c.nullable_string("produces", change.produces);
    if (change.produces) read_artifact(c, "produces", *change.produces);
    c.strings("after", change.after, false);
    b.changes.push_back(std::move(change));
  });
  read_checks(r, "checks", b.checks);
  if (const Json* held_out = r.value("held_out", Json::value_t::object, false)) {
    JsonReader hr(*held_out, r.path("held_out"));
    BlueprintHeldOut h;
    read_path(hr, "dir", h.dir);
    hr.string("at", h.at, false);
    read_checks(hr, "checks", h.checks);
    read_names(hr, "covers", h.covers, false);
    if (hr.ok() && h.checks.empty()) hr.fail("checks", "must hold at least one check: the ones that run the held-out files");
    if (hr.ok() && !base_dir.empty()) h.source = (std::filesystem::path(base_dir) / h.dir).string();
    r.adopt(hr.finish());
    b.held_out = std::move(h);
  }
  if (const Json* constraints = r.value("constraints", Json::value_t::object, false)) {
    JsonReader cr(*constraints, r.path("constraints"));
    cr.strings("allowed_paths", b.constraints.allowed_paths, false);
    for (size_t i = 0; i < b.constraints.allowed_paths.size() && cr.ok(); ++i) {
      if (b.constraints.allowed_paths[i].empty()) cr.fail("allowed_paths", "element " + std::to_string(i) + " is empty");
    }
    cr.integer("max_retries", b.constraints.max_retries, 1, 100, false);
    cr.integer("max_replans", b.constraints.max_replans, 0, 100, false);
    cr.integer("step_timeout_ms", b.constraints.step_timeout_ms, 1, 86'400'000, false);
    b.constraints.merge_queue_depth = cr.optional_integer("merge_queue_depth", 1, kMaxMergeQueueDepth);
    r.adopt(cr.finish());
  }
  if (r.ok()) check_references(r, b);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return b;
}

Result<BlueprintSpec> BlueprintSpec::load(const std::string& path) {
  auto text = read_file(path, kMaxContentFileBytes);
  if (!text) return std::unexpected(text.error());
  auto json = parse_json(*text, "blueprint " + path);
  if (!json) return std::unexpected(json.error());
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto spec = from_json(*json, dir.empty() ? "." : dir);
  if (!spec) return std::unexpected(spec.error().with_context(path));
  return spec;
}

Json BlueprintSpec::to_json() const {
  Json modules_j = Json::array(), functions_j = Json::array(), tests_j = Json::array(), deps_j = Json::array(),
       changes_j = Json::array(), checks_j = Json::array();
  for (const auto& m : modules) {
    modules_j.push_back({{"name", m.name}, {"path", m.path}, {"content", m.content}, {"drafts", Json(m.drafts)}});
  }
  for (const auto& f : functions) {
    functions_j.push_back({{"names", f.names}, {"module", f.module}, {"path", f.path}, {"content", f.content},
                           {"drafts", Json(f.drafts)}});
  }
  for (const auto& t : tests) {
    tests_j.push_back({{"name", t.name}, {"path", t.path}, {"covers", t.covers}, {"content", t.content},
                       {"drafts", Json(t.drafts)}});
  }
  for (const auto& d : dependencies) {
    deps_j.push_back({{"name", d.name}, {"manifest", d.manifest}, {"content", d.content}, {"drafts", Json(d.drafts)}});
  }
  for (const auto& c : changes) {
    changes_j.push_back({{"path", c.path}, {"description", c.description}, {"content", c.content},
                         {"produces", c.produces ? Json(*c.produces) : Json(nullptr)}, {"after", c.after},
                         {"drafts", Json(c.drafts)}});
  }
  for (const auto& c : checks) checks_j.push_back(c.to_json());
  Json j = {{"format", kBlueprintFormat},
          {"name", name},
          {"language", language},
          {"repository", {{"seed", seed ? Json(*seed) : Json(nullptr)}, {"base", base},
                          {"branch", branch ? Json(*branch) : Json(nullptr)}}},
          {"goals", goals},
          {"policy", policy},
          {"intent", intent_json(intent)},
          {"modules", modules_j},
          {"functions", functions_j},
          {"tests", tests_j},
          {"dependencies", deps_j},
          {"changes", changes_j},
          {"checks", checks_j},
          {"constraints", {{"allowed_paths", constraints.allowed_paths}, {"max_retries", constraints.max_retries},
                           {"max_replans", constraints.max_replans}, {"step_timeout_ms", constraints.step_timeout_ms}}}};
  // Absent unless set: older blueprints keep their digest.
  if (constraints.merge_queue_depth) j["constraints"]["merge_queue_depth"] = *constraints.merge_queue_depth;
  if (!environment.empty()) j["environment"] = environment;
  if (held_out) {
    Json held_checks = Json::array();
    for (const auto& c : held_out->checks) held_checks.push_back(c.to_json());
    j["held_out"] = {{"dir", held_out->dir}, {"at", held_out->at}, {"checks", std::move(held_checks)}, {"covers", held_out->covers}};
  }
  return j;
}

Digest BlueprintSpec::digest() const { return sha256(canonicalize(to_json()).value()); }

}  // namespace warden::kernel
