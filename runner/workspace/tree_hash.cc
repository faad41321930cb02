#include "runner/workspace/tree_hash.h"

#include <cstdio>

namespace warden {
namespace {

std::string key(const git_oid& id) { return std::string(reinterpret_cast<const char*>(id.id), GIT_OID_RAWSZ); }

Checked<Digest> hash_tree(git_repository* repo, const git_oid& id, HashMemo& memo);

Checked<Digest> hash_entry(git_repository* repo, const git_tree_entry* e, HashMemo& memo) {
  const git_oid* id = git_tree_entry_id(e);
  git_filemode_t mode = git_tree_entry_filemode(e);
  if (mode == GIT_FILEMODE_TREE) return hash_tree(repo, *id, memo);
  if (mode == GIT_FILEMODE_COMMIT) return sha256("gitlink " + ObjectId{*id}.hex());
  if (auto known = memo.get(*id)) return *known;
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, id) != 0) return std::unexpected(repository_error("reading blob " + ObjectId{*id}.hex()));
  std::unique_ptr<git_blob, GitFree<git_blob, git_blob_free>> blob(raw);
  Digest d = sha256(std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                                     static_cast<size_t>(git_blob_rawsize(blob.get()))));
  memo.put(*id, d);
  return d;
}

Checked<Digest> hash_tree(git_repository* repo, const git_oid& id, HashMemo& memo) {
  if (auto known = memo.get(id)) return *known;
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, &id) != 0) return std::unexpected(repository_error("reading tree " + ObjectId{id}.hex()));
  TreePtr tree(raw);
  Sha256 h;
  h.update(std::string_view("warden-tree-v1\0", 15));
  char mode[16];
  for (size_t i = 0, n = git_tree_entrycount(tree.get()); i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree.get(), i);
    auto child = hash_entry(repo, e, memo);
    if (!child) return child;
    int len = std::snprintf(mode, sizeof mode, "%o ", static_cast<unsigned>(git_tree_entry_filemode(e)));
    h.update(std::string_view(mode, static_cast<size_t>(len)));
    h.update(std::string_view(git_tree_entry_name(e)));
    h.update(std::string_view("\0", 1));
    h.update(child->view());
  }
  Digest d = h.finish();
  memo.put(id, d);
  return d;
}

}  // namespace

std::optional<Digest> MemoryHashMemo::get(const git_oid& id) {
  auto it = map_.find(key(id));
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

void MemoryHashMemo::put(const git_oid& id, const Digest& hash) { map_[key(id)] = hash; }

Checked<Digest> tree_sha256(GitRepo& repo, const ObjectId& tree, HashMemo& memo) {
  return hash_tree(repo.get(), tree.oid, memo);
}

}  // namespace warden
