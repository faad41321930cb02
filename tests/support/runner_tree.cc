#include "tests/support/runner_tree.h"

#include <stdexcept>

namespace warden::test {

RunnerTestTree::RunnerTestTree(const std::map<std::string, std::string>& files) {
  for (const auto& [path, bytes] : files) repo_.write(path, bytes);
  const std::string commit = repo_.commit_all("the tree under test");
  auto git = GitRepo::open(repo_.repo());
  if (!git) throw std::runtime_error(git.error().message());
  git_.emplace(std::move(*git));
  tree_ = *git_->tree_of(*git_->resolve_commit(commit));
  auto cache = ScratchDir::create("/tmp", "warden-runner-tree-", 0711);
  if (!cache) throw std::runtime_error(cache.error().message);
  cache_.emplace(std::move(*cache));
}

RunOutcome RunnerTestTree::run(Runner& runner, std::vector<CheckSpec> checks) {
  RunRequest req;
  req.base_tree = tree_;
  req.checks = std::move(checks);
  auto out = runner.run(*git_, req);
  if (!out) throw std::runtime_error(out.error().message());
  return std::move(*out);
}

}  // namespace warden::test
