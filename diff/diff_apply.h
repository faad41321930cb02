// Checks a Diff against the tree it names and computes the resulting files, in memory:
// pre-image hashes, exact hunks, post-image hashes, modes, and every path rule. Either
// every file passes and the full set of writes comes back, or the first refusal does;
// nothing is written anywhere by this step.
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
