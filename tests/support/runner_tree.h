// What a test of the runner on one small tree needs: a git repository holding `files` in one
// commit, opened for the runner, that commit's tree, and a cache directory for a LocalRunner
// (0711: the sandbox's uid reaches the checkouts below it). Failures throw, so a broken
// fixture cannot pass silently.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/check/runner.h"
#include "runner/sandbox/scratch_dir.h"
#include "runner/workspace/git_repo.h"
#include "tests/support/git_fixture.h"

namespace warden::test {

class RunnerTestTree {
 public:
  explicit RunnerTestTree(const std::map<std::string, std::string>& files);

  const ObjectId& tree() const { return tree_; }
  std::filesystem::path cache_dir() const { return cache_->path() / "cache"; }
  // `checks` run by `runner` on the tree.
  RunOutcome run(Runner& runner, std::vector<CheckSpec> checks);

 private:
  GitRepoFixture repo_;
  std::optional<GitRepo> git_;
  ObjectId tree_;
  std::optional<ScratchDir> cache_;
};

}  // namespace warden::test
