// A git repository through libgit2, with RAII for every handle: resolve revisions, read
// trees as a BaseTree, write a post-diff tree touching only the changed directories, make
// deterministic commits, move a branch only from the commit it was built on, check out.
//
// Ownership: GitRepo owns its git_repository handle and a LibGit2 reference (move-only in
// effect). GitTree owns its git_tree but borrows the repository: the GitRepo must outlive
// every GitTree it hands out. get() lends the raw handle; do not free it.
//
// Threads: libgit2 forbids using one git_repository from several threads at once, and
// nothing here locks. Use a GitRepo and its trees from one thread at a time; open one GitRepo
// per thread for parallel work (separate handles may share one repository on disk).
//
// Errors are Refusals. "repository_error" means libgit2 failed (I/O, a missing or corrupt
// object): the repository, not the request, is at fault. branch_moved means another writer
// owns the branch's tip: re-read the branch and rebuild on its new tip. revision_not_found,
// invalid_branch and repository_not_found mean the caller's input names nothing usable.
// Objects written by write_tree()/commit() stay in the object database even when a later
// step refuses (git garbage-collects unreferenced ones).
//
// Durability: objects, references and the index go through libgit2's default writes, which
// do not fsync; a branch move is atomic (lock file and rename) but not guaranteed to survive
// a power loss.
#pragma once

#include <git2.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diff/base_tree.h"
#include "diff/diff_apply.h"
#include "common/refusal.h"

namespace warden {

// libgit2's process-wide initialization, reference counted by libgit2 itself. Constructing
// one also turns off libgit2's strict object creation for the whole process.
class LibGit2 {
 public:
  LibGit2();
  ~LibGit2();
  LibGit2(const LibGit2&) : LibGit2() {}
  LibGit2& operator=(const LibGit2&) { return *this; }
};

template <typename T, void (*Free)(T*)>
struct GitFree {
  void operator()(T* p) const { Free(p); }
};
using RepoPtr = std::unique_ptr<git_repository, GitFree<git_repository, git_repository_free>>;
using TreePtr = std::unique_ptr<git_tree, GitFree<git_tree, git_tree_free>>;

struct ObjectId {
  git_oid oid{};
  std::string hex() const;
  static Checked<ObjectId> parse(std::string_view hex);
  bool operator==(const ObjectId& o) const { return git_oid_equal(&oid, &o.oid) != 0; }
};

struct Identity {
  std::string name = "Warden";
  std::string email = "warden@localhost";
};

struct CommitRequest {
  std::string branch;  // without refs/heads/
  std::string message;
  Identity author;
  int64_t time_seconds = 0;
};

// Reads one tree of a repository; the repository must outlive it.
class GitTree final : public BaseTree {
 public:
  GitTree(git_repository* repo, TreePtr root) : repo_(repo), root_(std::move(root)) {}
  Checked<EntryKind> kind(std::string_view path) override;
  Checked<std::optional<BaseFile>> read(std::string_view path) override;
  Checked<std::vector<std::string>> names(std::string_view dir) override;
  const git_tree* root() const { return root_.get(); }

 private:
  git_repository* repo_;
  TreePtr root_;
};

// One git object as stored: what crosses to a runner on another machine, which has no git
// remote of its own (runner/check/remote_run.h).
struct RawObject {
  ObjectId id;
  std::string type;  // "blob" or "tree"
  std::string data;
};

// A tree's direct entry that is an object of the repository (gitlinks are not).
struct TreeChild {
  ObjectId id;
  bool is_tree = false;
  std::string name;
};

// Whether a tree entry's name can be written into a directory as one entry of it: not empty,
// ".", ".." or ".git" (in any case), and without "/" or NUL. git itself never writes other
// names, but a tree made by hand (one another machine sends) can hold them, and a checkout
// that joined such a name to a directory would write outside it.
bool safe_entry_name(std::string_view name);

class GitRepo {
 public:
  static Checked<GitRepo> open(const std::filesystem::path& path);
  static Checked<GitRepo> init(const std::filesystem::path& path, bool bare);

  // A revision (branch, tag, sha, HEAD~2, ...) to the commit it names.
  Checked<ObjectId> resolve_commit(std::string_view rev);
  Checked<ObjectId> tree_of(const ObjectId& commit);
  Checked<GitTree> tree(const ObjectId& tree_id);
  // The paths of the files in `tree`, at any depth, whose own name `wanted` accepts; in
  // git's walk order (pre-order, entries sorted). Reads tree objects only, no blobs.
  Checked<std::vector<std::string>> files_named(const ObjectId& tree_id, const std::function<bool(std::string_view)>& wanted);

  // Writes the files' blobs and the trees above them; unchanged subtrees are reused by id.
  Checked<ObjectId> write_tree(const ObjectId& base_tree, const std::vector<ResolvedFile>& files);
  // Refuses an invalid branch name, or a branch that exists and is not at `parent`.
  Checked<void> check_branch(const std::string& branch, const ObjectId& parent);
  // Writes the commit of `tree` on `parent` (an object only: no reference moves) and returns
  // its id, which depends only on the inputs. Refused when the branch could not take it: an
  // invalid name, or a branch that exists and is at neither `parent` nor this commit.
  Checked<ObjectId> write_commit(const ObjectId& tree, const ObjectId& parent, const CommitRequest& request);
  // Compare-and-swap of refs/heads/<branch>: moves it to `to` only if it is at `from` (nullopt:
  // only if it does not exist), atomically; a branch already at `to` is done. `to` nullopt
  // deletes the branch (only if it is at `from`). branch_moved when another writer got there
  // first.
  Checked<void> move_branch(const std::string& branch, const std::optional<ObjectId>& from, const std::optional<ObjectId>& to);
  // The commit refs/heads/<branch> points at; nullopt when the branch does not exist.
  Checked<std::optional<ObjectId>> branch_tip(const std::string& branch);
  // Materializes `tree` into `dir` without touching the repository's index or HEAD.
  Checked<void> checkout(const ObjectId& tree, const std::filesystem::path& dir);
  // Makes the repository's index hold exactly `tree` and writes it to disk, so git sees a
  // work tree checked out from `tree` as clean.
  Checked<void> reset_index(const ObjectId& tree);
  // The first commit of an empty repository: `files` as its tree, no parent; the branch is
  // created and HEAD points at it. Refused when the branch exists already.
  Checked<ObjectId> commit_root(const std::vector<ResolvedFile>& files, const CommitRequest& request);

  // Raw objects (RawObject): only blobs and trees; anything else is a repository_error.
  Checked<RawObject> read_object(const ObjectId& id);
  bool has_object(const ObjectId& id);
  // Stores `data` as an object of `type` ("blob", "tree") and returns the id git gives it.
  Checked<ObjectId> write_object(std::string_view type, std::string_view data);
  Checked<std::vector<TreeChild>> tree_children(const ObjectId& tree_id);

  git_repository* get() const { return repo_.get(); }

 private:
  explicit GitRepo(RepoPtr repo) : repo_(std::move(repo)) {}
  LibGit2 lib_;
  RepoPtr repo_;
};

// The last libgit2 error as a Refusal with code "repository_error".
Refusal repository_error(std::string_view what);

}  // namespace warden
