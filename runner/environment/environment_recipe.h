// A recipe Warden builds an environment from: a Debian base made by mmdebstrap from a
// package list, then `prepare` steps that run once, with network, in a sandbox of their own
// on that base (npm ci, pip install --target ...), each writing only its own directory
// below /opt, which becomes part of the environment.
//
//   {"format": "warden.environment-recipe/v1",
//    "debian": {"suite": "bookworm", "variant": "essential",
//               "packages": ["python3-minimal", "python3-sortedcontainers"],
//               "mirror": "http://deb.debian.org/debian"},          // optional
//    "prepare": [{"dir": "/opt/app", "inputs": ["package.json", "package-lock.json"],
//                 "run": ["npm ci --no-audit --no-fund"]}],          // optional
//    "env": {"NODE_PATH": "/opt/app/node_modules"}}                   // optional
//
// Inputs are files beside the recipe (no absolute path, no '..'), copied into the step's
// directory before it runs; their bytes are part of the recipe. The recipe's digest (its
// canonical JSON with each input's SHA-256) keys the build: a store that built it before
// returns that environment without building. Package versions are resolved when mmdebstrap
// runs, so a later build of the same recipe may hold newer packages: build(rebuild) builds
// again and says which files differ from the first build.
//
// A recipe is a plain value owning its inputs' bytes. Errors: invalid_argument naming the
// field for a malformed recipe; a build fails with the command's error and the tail of its
// output, and leaves nothing in the store.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "runner/environment/environment_store.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

inline constexpr std::string_view kRecipeFormat = "warden.environment-recipe/v1";

struct PrepareStep {
  std::string dir;                  // absolute, below /opt
  std::vector<std::string> inputs;  // recipe-relative file names
  std::vector<std::string> run;     // shell commands, run in order with `dir` as the cwd
};

struct EnvironmentRecipe {
  std::string suite = "bookworm";
  std::string variant = "essential";
  std::vector<std::string> packages;
  std::string mirror;
  std::vector<PrepareStep> prepare;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> inputs;  // name -> bytes

  // `inputs` gives the bytes of the files the steps name (all of them).
  static Result<EnvironmentRecipe> from_json(const Json& json, std::map<std::string, std::string> inputs);
  // A recipe file; its inputs are read from its directory.
  static Result<EnvironmentRecipe> load(const std::filesystem::path& file);
  // The recipe with every input inline ({"inputs_base64": {name: base64}}): what a ledger or a
  // store keeps to build it again anywhere. from_record() reads it back.
  Json record() const;
  static Result<EnvironmentRecipe> from_record(const Json& record);
  Json to_json() const;  // as written, with "input_sha256": {name: "sha256:..."}
  Digest digest() const;
};

struct RecipeBuild {
  Environment environment;
  bool reused = false;  // the store had built this recipe already
  // A rebuild whose result differs from the environment built before: that one's digest and
  // the paths that differ.
  std::optional<Digest> previous;
  std::vector<std::string> differing;
};

struct RecipeBuildOptions {
  bool rebuild = false;
  // Lines of what the build is doing ("mmdebstrap: ...", "prepare /opt/app: npm ci").
  std::function<void(std::string_view)> progress;
  SandboxHost host = SandboxHost::detect();
};

Result<RecipeBuild> build_recipe(EnvironmentStore& store, const EnvironmentRecipe& recipe, const RecipeBuildOptions& options);

// What a command or document names as an environment: "sha256:<hex>" (taken as is: the
// runner finds it in the store or refuses), or a recipe file (relative to `relative_to`)
// built here, or found built, in the store at `store_dir` (empty: the default).
struct NamedEnvironment {
  Digest digest;
  Json recipe_record;  // the recipe's record() when one was named; null otherwise
};
Result<NamedEnvironment> resolve_environment(const std::string& named, const std::filesystem::path& relative_to,
                                             const std::filesystem::path& store_dir,
                                             const std::function<void(std::string_view)>& progress = {});

// An OCI image layout directory (index.json, blobs/) or an OCI archive (a tar of one),
// unpacked with umoci and imported. `tag` picks the image in the index (empty: the only one).
Result<Environment> import_oci_image(EnvironmentStore& store, const std::filesystem::path& image, std::string_view tag,
                                     const std::map<std::string, std::string>& env);

}  // namespace warden
