// A BlueprintSpec: what to build, as a person writes it. The kernel commits it to the ledger
// as given (canonical JSON) and derives a BuildPlan from it deterministically
// (plan_generate.h). JSON form, format "warden.blueprint/v1":
//   {"format": "warden.blueprint/v1", "name": "calculator", "language": "python",
//    "repository": {"seed": "seed", "base": "HEAD", "branch": "warden/calculator"},
//    "goals": ["..."], "policy": "python",
//    "intent": {"name": "python_package", "artifacts": ["module", "test_suite"]},
//    "modules":      [{"name": "calculator", "path": "src/calculator/__init__.py", "content": "..."}],
//    "functions":    [{"names": ["add"], "module": "calculator", "path": "src/calculator/arithmetic.py",
//                      "content": "...", "drafts": ["..."]}],
//    "tests":        [{"name": "test_arithmetic", "path": "tests/test_arithmetic.py", "covers": ["add"],
//                      "content": "..."}],
//    "dependencies": [{"name": "requests", "manifest": "requirements.txt", "content": "..."}],
//    "changes":      [{"path": "README.md", "description": "...", "content": "...", "produces": "document"}],
//    "checks": [CheckSpec...],
//    "held_out": {"dir": "held_out", "at": "tests/held_out", "checks": [CheckSpec...],
//                 "covers": ["evaluate"]},   (optional; covers too)
//    "constraints": {"allowed_paths": ["src/**", "tests/**"], "max_retries": 3, "max_replans": 1,
//                    "step_timeout_ms": 30000, "merge_queue_depth": 8}}   (the last optional)
// `repository.seed` is a directory (relative to the blueprint file) whose files make the first
// commit when `warden build` creates the repository itself.
// Wherever a "content" string goes, "content_file" may name a file relative to the blueprint
// instead, and "draft_files" likewise stands for "drafts"; load() reads them in, so the
// blueprint the kernel commits (and its digest) always carries the bytes themselves.
// `drafts` are earlier versions the plan executor proposes before `content`: a blueprint can
// rehearse a refusal and a retry without any AI in the loop.
// `held_out` names a directory of tests the executor never sees (held_out.h): unlike content
// files it is not read into the blueprint (the blueprint is recorded, the tests stay sealed
// until the run ends); the build reads and seals it when the run starts.
//
// A BlueprintSpec is a plain value that owns every byte it names (content files are read in
// by from_json/load, not kept open); safe to share read-only between threads. Nothing here is
// durable: committing a blueprint is the kernel's job. An Error from from_json()/load() names
// the JSON path and means the blueprint (or a content file it names: missing, too large, not
// UTF-8, an unsafe path) must be fixed; load() also passes on read_file()'s errors for the
// blueprint file itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/schema_fields.h"
#include "runner/model/check_spec.h"

namespace warden {
class JsonReader;
}

namespace warden::kernel {

inline constexpr std::string_view kBlueprintFormat = "warden.blueprint/v1";

struct BlueprintModule {
  std::string name, path, content;
  std::vector<std::string> drafts;
};

struct BlueprintFunction {
  std::vector<std::string> names;  // the functions the file must define
  std::string module;              // the module (by name) it belongs to; its step comes first
  std::string path, content;
  std::vector<std::string> drafts;
};

struct BlueprintTest {
  std::string name, path, content;
  std::vector<std::string> covers;  // function names it tests; their steps come first
  std::vector<std::string> drafts;
};

struct BlueprintDependency {
  std::string name;
  std::string manifest;  // the dependency manifest the step may touch (requirements.txt, ...)
  std::string content;   // the manifest's full content after the step
  std::vector<std::string> drafts;
};

struct BlueprintChange {  // a modify step on an existing file (or a new non-code file)
  std::string path, description, content;
  std::optional<std::string> produces;  // artifact type, e.g. "document"
  std::vector<std::string> after;       // paths (of other blueprint entries) it depends on
  std::vector<std::string> drafts;
};

// Held-out checks (held_out.h): the directory's files are laid at `at` in each proposal's own
// held-out run, which `checks` judge. The blueprint names the directory, never its bytes.
struct BlueprintHeldOut {
  std::string dir;               // as written: relative to the blueprint file
  std::string at = "held_out";   // where the files are laid in the tree under test
  std::vector<CheckSpec> checks;
  // The functions the held-out tests call: their proposals are judged from the first step that
  // defines one on (earlier steps could not pass them). Empty: every step.
  std::vector<std::string> covers;
  std::string source;            // `dir` resolved against the blueprint's directory; not recorded
};

struct Intent {
  std::string name;
  std::vector<std::string> artifacts;  // module | test_suite | document | binary | dependency
};

struct Constraints {
  std::vector<std::string> allowed_paths;  // globs; empty: the policy's own allow list
  int64_t max_retries = 3;                 // proposals per step
  int64_t max_replans = 1;
  int64_t step_timeout_ms = 30000;         // the watchdog
  // Set: the generated plan runs as a merge queue of this depth (BuildPlan::merge_queue_depth).
  std::optional<int64_t> merge_queue_depth;
};

// The deepest merge queue a plan may ask for: each slot may hold a sandbox run in flight.
inline constexpr int64_t kMaxMergeQueueDepth = 64;

struct BlueprintSpec {
  std::string name;
  std::string language;  // python | c | cpp | other
  std::optional<std::string> seed;  // relative to the blueprint file
  std::string base = "HEAD";
  std::optional<std::string> branch;  // default: warden/<name>
  std::vector<std::string> goals;
  std::string policy;  // builtin policy name or path; empty: the language's default
  // The environment the checks run in (runner/environment): a digest ("sha256:...") or a
  // recipe file relative to the blueprint, built (or found built) before the run. Empty: the
  // policy's, else the host's /usr.
  std::string environment;
  std::optional<Intent> intent;
  std::vector<BlueprintModule> modules;
  std::vector<BlueprintFunction> functions;
  std::vector<BlueprintTest> tests;
  std::vector<BlueprintDependency> dependencies;
  std::vector<BlueprintChange> changes;
  std::vector<CheckSpec> checks;
  std::optional<BlueprintHeldOut> held_out;
  Constraints constraints;

  // Strict: unknown fields refused, every error names its JSON path ("blueprint.functions[1].path: ...").
  // `base_dir` resolves content_file / draft_files; empty: they are refused.
  static Result<BlueprintSpec> from_json(const Json& json, const std::string& base_dir = {});
  static Result<BlueprintSpec> load(const std::string& path);
  Json to_json() const;
  Digest digest() const;  // of the canonical to_json()
};

// An optional, nullable "intent" object, and its JSON form (null when absent).
void read_intent(JsonReader& parent, std::optional<Intent>& out);
Json intent_json(const std::optional<Intent>& intent);

}  // namespace warden::kernel
