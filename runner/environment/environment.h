// An environment: a read-only root file system a check runs on instead of the host's /usr,
// and the variables checks get in it, named by the digest of both. The tree is named by its
// manifest (tree_manifest.h, in its environment reading); the digest covers the tree's
// digest and the variables, so two environments that differ in either are different
// environments to every result, cache key and quorum comparison.
//
// `source` says how it was made (a directory, an OCI image, a recipe with its digest and
// text), for `warden env show` and for rebuilding from the record; it is not part of the
// digest: the same content made two ways is one environment.
//
// Plain values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

inline constexpr std::string_view kEnvironmentFormat = "warden.environment/v1";

// sha256 of canonical {"env": {...}, "format": kEnvironmentFormat, "tree": "sha256:..."}.
Digest environment_digest(const Digest& tree, const std::map<std::string, std::string>& env);

// Variable names an environment may not set: the fixed environment every profile holds
// (sandbox_profile.h's kRequiredEnv) and what the runner itself sets for a check.
bool reserved_environment_variable(std::string_view name);

struct Environment {
  Digest digest;
  Digest tree;
  std::map<std::string, std::string> env;
  Json source = Json::object();
  uint64_t files = 0, bytes = 0;
  int64_t created_ms = 0;  // wall clock at install (shown, never part of a result)
  std::filesystem::path root;  // the materialized tree, in the store

  // What results and the ledger carry: {"digest", "env", "tree"}.
  Json identity() const;
  // The store's record of it: identity() plus files, bytes, created_ms and source.
  Json to_json() const;
  static Result<Environment> from_json(const Json& json);
};

}  // namespace warden
