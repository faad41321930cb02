// Checks a Diff against the tree it names and computes the resulting files, in memory:
// pre-image hashes, exact hunks, post-image hashes, modes, and every path rule. Either
// every file passes and the full set of writes comes back, or the first refusal does;
// nothing is written anywhere by this step.
//
// resolve_diff() borrows `base` for the call only and returns values the caller owns. A
// Refusal names why the diff does not apply to this base (hash_mismatch, path_*, hunk_*,
// duplicate_path, ...): the executor's proposal is at fault and it may propose again; a
// "repository_error" refusal is passed through from `base` and means the base could not be
// read. Stateless: safe from several threads, each with its own BaseTree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diff/base_tree.h"
#include "diff/diff.h"
#include "common/refusal.h"

namespace warden {

struct ResolvedFile {
  std::string path;
  std::optional<std::string> content;  // nullopt: remove the path
  uint32_t mode = 0;
};

Checked<std::vector<ResolvedFile>> resolve_diff(const Diff& diff, BaseTree& base);

// The post-image of one file given its pre-image (empty for add).
Checked<std::string> post_image(const FileChange& file, std::string_view pre_image);

}  // namespace warden
