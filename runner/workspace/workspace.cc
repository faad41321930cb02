#include "runner/workspace/workspace.h"

#include "diff/diff_builder.h"

namespace warden {

Checked<Workspace> Workspace::open(const std::filesystem::path& path, bool init_if_missing) {
  auto repo = GitRepo::open(path);
  if (!repo && init_if_missing && repo.error().code == RefusalCode::repository_not_found) repo = GitRepo::init(path, true);
  if (!repo) return std::unexpected(repo.error());
  return Workspace(std::move(*repo));
}

Checked<Diff> Workspace::diff_from_patch(std::string_view patch_text, std::string_view base_rev, std::string step_id) {
  auto commit = repo_.resolve_commit(base_rev);
  if (!commit) return std::unexpected(commit.error());
  auto tree_id = repo_.tree_of(*commit);
  if (!tree_id) return std::unexpected(tree_id.error());
  auto tree = repo_.tree(*tree_id);
  if (!tree) return std::unexpected(tree.error());
  return warden::diff_from_patch(patch_text, *tree, std::move(step_id));
}

Checked<std::vector<ResolvedFile>> Workspace::resolve(const Diff& diff, std::string_view base_rev, ObjectId& commit,
                                                      ObjectId& tree_id) {
  auto c = repo_.resolve_commit(base_rev);
  if (!c) return std::unexpected(c.error());
  auto t = repo_.tree_of(*c);
  if (!t) return std::unexpected(t.error());
  commit = *c;
  tree_id = *t;
  auto tree = repo_.tree(*t);
  if (!tree) return std::unexpected(tree.error());
  return resolve_diff(diff, *tree);
}

Checked<void> Workspace::check(const Diff& diff, std::string_view base_rev) {
  ObjectId commit, tree;
  auto files = resolve(diff, base_rev, commit, tree);
  if (!files) return std::unexpected(files.error());
  return {};
}

Checked<AppliedDiff> Workspace::apply(const Diff& diff, std::string_view base_rev) {
  AppliedDiff out;
  auto files = resolve(diff, base_rev, out.base_commit, out.base_tree);
  if (!files) return std::unexpected(files.error());
  auto tree = repo_.write_tree(out.base_tree, *files);
  if (!tree) return std::unexpected(tree.error());
  out.tree = *tree;
  out.files = diff.files.size();
  return out;
}

Checked<ObjectId> Workspace::apply_to_tree(const Diff& diff, const ObjectId& base_tree) {
  auto tree = repo_.tree(base_tree);
  if (!tree) return std::unexpected(tree.error());
  auto files = resolve_diff(diff, *tree);
  if (!files) return std::unexpected(files.error());
  return repo_.write_tree(base_tree, *files);
}

Checked<void> Workspace::check_branch(const std::string& branch, std::string_view base_rev) {
  auto base = repo_.resolve_commit(base_rev);
  if (!base) return std::unexpected(base.error());
  return repo_.check_branch(branch, *base);
}

std::string commit_message(const Diff& diff, const CommitOptions& options) {
  std::string summary = options.message.empty() ? "warden: step " + diff.step_id : options.message;
  while (!summary.empty() && summary.back() == '\n') summary.pop_back();
  std::string out = summary + "\n\nWarden-Step: " + diff.step_id + "\nWarden-Proposal: " + diff.digest().str() + "\n";
  if (options.record) out += "Warden-Record: " + options.record->str() + "\n";
  return out;
}

Checked<ObjectId> Workspace::write_commit(const Diff& diff, const AppliedDiff& applied, const CommitOptions& options,
                                          Clock& clock) {
  if (options.branch.empty()) return refuse(RefusalCode::invalid_branch, "", "a branch name is required");
  CommitRequest request{options.branch, commit_message(diff, options), options.author, clock.now_ms() / 1000};
  return repo_.write_commit(applied.tree, applied.base_commit, request);
}

}  // namespace warden
