// The layer a proposal adds over its base checkout: exactly the difference between the base
// tree and the tree under test, as overlayfs reads it — changed and new files written out,
// removed files and directories as whiteouts (0/0 character devices). Walking the two git
// trees side by side skips every subtree whose id is unchanged, so a layer costs
// O(changed files), not O(repository). The layer is read-only to the sandbox (a lower
// layer); each run gets its own empty upper directory on top.
#pragma once

#include <filesystem>

#include "runner/workspace/git_repo.h"
#include "runner/check/runner.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

struct LayerStats {
  size_t written = 0;    // files, symlinks and directories created
  size_t whiteouts = 0;  // removals
};

// Writes every file of `tree` into `dir` (which must exist and be empty), owned by the
// sandbox's uid: a base checkout. Objects are read through libgit2; files are written
// directly, which costs a fraction of git_checkout_tree's per-path safety probing.
Checked<LayerStats> write_full_tree(GitRepo& repo, const ObjectId& tree, const std::filesystem::path& dir,
                                    const SandboxHost& host);

// Writes `files` into the layer `dir` over what it holds (a whiteout or file at a path is
// replaced; missing directories are made), owned by the sandbox's uid. Each path must be a
// plain relative path.
Checked<LayerStats> write_overlay_files(const std::vector<OverlayFile>& files, const std::filesystem::path& dir,
                                        const SandboxHost& host);

// Writes the layer into `dir` (which must exist and be empty), owned by the sandbox's uid.
Checked<LayerStats> write_diff_layer(GitRepo& repo, const ObjectId& base_tree, const ObjectId& target_tree,
                                     const std::filesystem::path& dir, const SandboxHost& host);

}  // namespace warden
