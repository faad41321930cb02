#include "runner/workspace/git_repo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

namespace warden {
namespace {

using EntryPtr = std::unique_ptr<git_tree_entry, GitFree<git_tree_entry, git_tree_entry_free>>;
using BlobPtr = std::unique_ptr<git_blob, GitFree<git_blob, git_blob_free>>;
using CommitPtr = std::unique_ptr<git_commit, GitFree<git_commit, git_commit_free>>;
using SignaturePtr = std::unique_ptr<git_signature, GitFree<git_signature, git_signature_free>>;
using ReferencePtr = std::unique_ptr<git_reference, GitFree<git_reference, git_reference_free>>;

std::unexpected<Refusal> git_failure(std::string_view what) { return std::unexpected(repository_error(what)); }

EntryKind kind_of(git_filemode_t mode) {
  switch (mode) {
    case GIT_FILEMODE_TREE: return EntryKind::directory;
    case GIT_FILEMODE_LINK: return EntryKind::symlink;
    default: return EntryKind::file;  // blobs, and gitlinks, which nothing may write through
  }
}

// The changes below one directory, by name.
struct DirChanges {
  std::map<std::string, DirChanges, std::less<>> dirs;
  std::map<std::string, std::optional<std::pair<git_oid, uint32_t>>, std::less<>> files;  // nullopt: remove
};

}  // namespace

LibGit2::LibGit2() {
  git_libgit2_init();
  // Warden verifies every byte before it writes an object; libgit2's own re-checks of
  // object existence cost 3-4x when building trees.
  git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
}
LibGit2::~LibGit2() { git_libgit2_shutdown(); }

Refusal repository_error(std::string_view what) {
  const ::git_error* e = git_error_last();
  return Refusal{RefusalCode::repository_error, "", std::string(what) + ": " + (e && e->message ? e->message : "libgit2 failure")};
}

std::string ObjectId::hex() const {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return buf;
}

Checked<ObjectId> ObjectId::parse(std::string_view hex) {
  ObjectId id;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstrn(&id.oid, hex.data(), hex.size()) != 0) {
    return refuse(RefusalCode::malformed_diff, "", "\"" + std::string(hex) + "\" is not a 40-hex git object id");
  }
  return id;
}

Checked<EntryKind> GitTree::kind(std::string_view path) {
  git_tree_entry* raw = nullptr;
  int rc = git_tree_entry_bypath(&raw, root_.get(), std::string(path).c_str());
  if (rc == GIT_ENOTFOUND) return EntryKind::none;
  if (rc != 0) return git_failure("looking up " + std::string(path));
  EntryPtr entry(raw);
  return kind_of(git_tree_entry_filemode(entry.get()));
}

Checked<std::optional<BaseFile>> GitTree::read(std::string_view path) {
  git_tree_entry* raw = nullptr;
  int rc = git_tree_entry_bypath(&raw, root_.get(), std::string(path).c_str());
  if (rc == GIT_ENOTFOUND) return std::optional<BaseFile>();
  if (rc != 0) return git_failure("looking up " + std::string(path));
  EntryPtr entry(raw);
  git_filemode_t mode = git_tree_entry_filemode(entry.get());
  if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE && mode != GIT_FILEMODE_LINK) {
    return std::optional<BaseFile>();
  }
  git_blob* blob_raw = nullptr;
  if (git_blob_lookup(&blob_raw, repo_, git_tree_entry_id(entry.get())) != 0) return git_failure("reading " + std::string(path));
  BlobPtr blob(blob_raw);
  BaseFile f;
  f.content.assign(static_cast<const char*>(git_blob_rawcontent(blob.get())), static_cast<size_t>(git_blob_rawsize(blob.get())));
  f.mode = static_cast<uint32_t>(mode);
  f.blob_id = ObjectId{*git_tree_entry_id(entry.get())}.hex();
  return std::optional<BaseFile>(std::move(f));
}

Checked<std::vector<std::string>> GitTree::names(std::string_view dir) {
  std::vector<std::string> out;
  const git_tree* tree = root_.get();
  TreePtr owned;
  if (!dir.empty()) {
    git_tree_entry* raw = nullptr;
    int rc = git_tree_entry_bypath(&raw, root_.get(), std::string(dir).c_str());
    if (rc == GIT_ENOTFOUND) return out;
    if (rc != 0) return git_failure("looking up " + std::string(dir));
    EntryPtr entry(raw);
    if (git_tree_entry_filemode(entry.get()) != GIT_FILEMODE_TREE) return out;
    git_tree* sub = nullptr;
    if (git_tree_lookup(&sub, repo_, git_tree_entry_id(entry.get())) != 0) return git_failure("reading " + std::string(dir));
    owned.reset(sub);
    tree = sub;
  }
  size_t count = git_tree_entrycount(tree);
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.emplace_back(git_tree_entry_name(git_tree_entry_byindex(tree, i)));
  return out;
}

Checked<GitRepo> GitRepo::open(const std::filesystem::path& path) {
  LibGit2 lib;
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) {
    return refuse(RefusalCode::repository_not_found, path.string(), "not a git repository");
  }
  return GitRepo(RepoPtr(raw));
}

Checked<GitRepo> GitRepo::init(const std::filesystem::path& path, bool bare) {
  LibGit2 lib;
  git_repository* raw = nullptr;
  if (git_repository_init(&raw, path.c_str(), bare ? 1 : 0) != 0) return git_failure("initializing " + path.string());
  return GitRepo(RepoPtr(raw));
}

Checked<ObjectId> GitRepo::resolve_commit(std::string_view rev) {
  git_object* raw = nullptr;
  if (git_revparse_single(&raw, repo_.get(), std::string(rev).c_str()) != 0) {
    return refuse(RefusalCode::revision_not_found, std::string(rev), "no such revision");
  }
  std::unique_ptr<git_object, GitFree<git_object, git_object_free>> obj(raw);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, obj.get(), GIT_OBJECT_COMMIT) != 0) {
    return refuse(RefusalCode::revision_not_found, std::string(rev), "does not name a commit");
  }
  std::unique_ptr<git_object, GitFree<git_object, git_object_free>> commit(peeled);
  return ObjectId{*git_object_id(commit.get())};
}

Checked<ObjectId> GitRepo::tree_of(const ObjectId& commit) {
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo_.get(), &commit.oid) != 0) return git_failure("reading commit " + commit.hex());
  CommitPtr c(raw);
  return ObjectId{*git_commit_tree_id(c.get())};
}

Checked<GitTree> GitRepo::tree(const ObjectId& tree_id) {
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo_.get(), &tree_id.oid) != 0) return git_failure("reading tree " + tree_id.hex());
  return GitTree(repo_.get(), TreePtr(raw));
}

namespace {
using OdbPtr = std::unique_ptr<git_odb, GitFree<git_odb, git_odb_free>>;
using OdbObjectPtr = std::unique_ptr<git_odb_object, GitFree<git_odb_object, git_odb_object_free>>;
}  // namespace

bool safe_entry_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  if (name.size() == 4 && name[0] == '.' && (name[1] | 0x20) == 'g' && (name[2] | 0x20) == 'i' && (name[3] | 0x20) == 't') return false;
  return name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

Checked<RawObject> GitRepo::read_object(const ObjectId& id) {
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git_failure("opening the object database");
  OdbPtr odb(odb_raw);
  git_odb_object* raw = nullptr;
  if (git_odb_read(&raw, odb.get(), &id.oid) != 0) return git_failure("reading object " + id.hex());
  OdbObjectPtr object(raw);
  RawObject out{id, "", std::string(static_cast<const char*>(git_odb_object_data(raw)), git_odb_object_size(raw))};
  switch (git_odb_object_type(raw)) {
    case GIT_OBJECT_BLOB: out.type = "blob"; break;
    case GIT_OBJECT_TREE: out.type = "tree"; break;
    default: return refuse(RefusalCode::repository_error, "", "object " + id.hex() + " is neither a blob nor a tree");
  }
  return out;
}

bool GitRepo::has_object(const ObjectId& id) {
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return false;
  OdbPtr odb(odb_raw);
  return git_odb_exists(odb.get(), &id.oid) == 1;
}

Checked<ObjectId> GitRepo::write_object(std::string_view type, std::string_view data) {
  git_object_t kind = type == "blob" ? GIT_OBJECT_BLOB : type == "tree" ? GIT_OBJECT_TREE : GIT_OBJECT_INVALID;
  if (kind == GIT_OBJECT_INVALID) return refuse(RefusalCode::repository_error, "", "an object of type \"" + std::string(type) + "\"");
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git_failure("opening the object database");
  OdbPtr odb(odb_raw);
  ObjectId id;
  if (git_odb_write(&id.oid, odb.get(), data.data(), data.size(), kind) != 0) return git_failure("writing a " + std::string(type));
  return id;
}

Checked<std::vector<TreeChild>> GitRepo::tree_children(const ObjectId& tree_id) {
  auto t = tree(tree_id);
  if (!t) return std::unexpected(t.error());
  std::vector<TreeChild> out;
  const size_t n = git_tree_entrycount(t->root());
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(t->root(), i);
    const git_object_t type = git_tree_entry_type(e);
    if (type != GIT_OBJECT_BLOB && type != GIT_OBJECT_TREE) continue;
    TreeChild child;
    git_oid_cpy(&child.id.oid, git_tree_entry_id(e));
    child.is_tree = type == GIT_OBJECT_TREE;
    child.name = git_tree_entry_name(e);
    out.push_back(child);
  }
  return out;
}

Checked<std::vector<std::string>> GitRepo::files_named(const ObjectId& tree_id,
                                                      const std::function<bool(std::string_view)>& wanted) {
  auto root = tree(tree_id);
  if (!root) return std::unexpected(root.error());
  struct Walk {
    const std::function<bool(std::string_view)>& wanted;
    std::vector<std::string> found;
  } walk{wanted, {}};
  auto visit = [](const char* dir, const git_tree_entry* e, void* payload) -> int {
    auto* w = static_cast<Walk*>(payload);
    const git_filemode_t mode = git_tree_entry_filemode(e);
    if ((mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE) && w->wanted(git_tree_entry_name(e))) {
      w->found.push_back(std::string(dir) + git_tree_entry_name(e));
    }
    return 0;
  };
  if (git_tree_walk(root->root(), GIT_TREEWALK_PRE, visit, &walk) != 0) return git_failure("walking tree " + tree_id.hex());
  return std::move(walk.found);
}

namespace {

struct TreeEntry {
  std::string_view name;
  git_oid oid;
  uint32_t mode;
};

// git orders tree entries by name bytes, comparing a subtree's name as if it ended in '/'.
bool git_tree_order(const TreeEntry& a, const TreeEntry& b) {
  size_t n = std::min(a.name.size(), b.name.size());
  if (int c = a.name.substr(0, n).compare(b.name.substr(0, n)); c != 0) return c < 0;
  auto next = [&](const TreeEntry& e) -> unsigned {
    if (e.name.size() > n) return static_cast<unsigned char>(e.name[n]);
    return e.mode == GIT_FILEMODE_TREE ? '/' : 0;
  };
  return next(a) < next(b);
}

// Rebuilds one directory from its base entries and the changes below it, writing the tree
// object directly in git's format ("<octal mode> <name>\0<20-byte id>" per entry): for big
// directories this costs a fraction of libgit2's tree builder, which allocates and
// re-validates every unchanged entry. nullopt when the directory ends up empty (git does
// not store empty trees).
Checked<std::optional<git_oid>> build_dir(git_repository* repo, git_odb* odb, const git_tree* base,
                                          DirChanges& changes, const std::string& where) {
  std::vector<TreeEntry> entries;
  size_t base_count = base ? git_tree_entrycount(base) : 0;
  entries.reserve(base_count + changes.files.size() + changes.dirs.size());
  for (size_t i = 0; i < base_count; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(base, i);
    std::string_view name = git_tree_entry_name(e);
    // Names the diff touches are re-added below (or stay removed).
    if (changes.files.contains(name) || changes.dirs.contains(name)) continue;
    entries.push_back(TreeEntry{name, *git_tree_entry_id(e), static_cast<uint32_t>(git_tree_entry_filemode(e))});
  }
  std::set<std::string_view> kept_dirs;
  for (auto& [name, sub] : changes.dirs) {
    TreePtr sub_base;  // none when the name is new here, or was a file
    const git_tree_entry* existing = base ? git_tree_entry_byname(base, name.c_str()) : nullptr;
    if (existing && git_tree_entry_filemode(existing) == GIT_FILEMODE_TREE) {
      git_tree* t = nullptr;
      if (git_tree_lookup(&t, repo, git_tree_entry_id(existing)) != 0) return git_failure("reading " + where + name);
      sub_base.reset(t);
    }
    auto built = build_dir(repo, odb, sub_base.get(), sub, where + name + "/");
    if (!built) return std::unexpected(built.error());
    if (*built) {
      entries.push_back(TreeEntry{name, **built, GIT_FILEMODE_TREE});
      kept_dirs.insert(name);
    }
  }
  for (const auto& [name, change] : changes.files) {
    if (!change) continue;
    // resolve_diff refuses a file and a non-empty directory under one name; a directory the
    // diff empties gives its name to the file.
    if (kept_dirs.contains(name)) return refuse(RefusalCode::path_conflict, where + name, "both a file and a directory");
    entries.push_back(TreeEntry{name, change->first, change->second});
  }
  if (entries.empty()) return std::optional<git_oid>();
  std::sort(entries.begin(), entries.end(), git_tree_order);
  std::string bytes;
  bytes.reserve(entries.size() * 48);
  char mode[8];
  for (const TreeEntry& e : entries) {
    int len = std::snprintf(mode, sizeof mode, "%o", e.mode);
    bytes.append(mode, static_cast<size_t>(len));
    bytes += ' ';
    bytes += e.name;
    bytes += '\0';
    bytes.append(reinterpret_cast<const char*>(e.oid.id), GIT_OID_RAWSZ);
  }
  git_oid out;
  if (git_odb_write(&out, odb, bytes.data(), bytes.size(), GIT_OBJECT_TREE) != 0) return git_failure("writing tree " + where);
  return std::optional<git_oid>(out);
}

}  // namespace

Checked<ObjectId> GitRepo::write_tree(const ObjectId& base_tree, const std::vector<ResolvedFile>& files) {
  // git_odb_write hashes first and skips objects that exist; the blob API would stream
  // every blob through a new temporary file first.
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git_failure("opening the object database");
  std::unique_ptr<git_odb, GitFree<git_odb, git_odb_free>> odb(odb_raw);
  DirChanges root;
  for (const ResolvedFile& f : files) {
    std::optional<std::pair<git_oid, uint32_t>> change;
    if (f.content) {
      git_oid blob;
      if (git_odb_write(&blob, odb.get(), f.content->data(), f.content->size(), GIT_OBJECT_BLOB) != 0) {
        return git_failure("writing blob for " + f.path);
      }
      change.emplace(blob, f.mode);
    }
    DirChanges* dir = &root;
    std::string_view rest = f.path;
    for (auto slash = rest.find('/'); slash != std::string_view::npos; slash = rest.find('/')) {
      dir = &dir->dirs[std::string(rest.substr(0, slash))];
      rest.remove_prefix(slash + 1);
    }
    dir->files[std::string(rest)] = change;
  }
  auto base = tree(base_tree);
  if (!base) return std::unexpected(base.error());
  auto built = build_dir(repo_.get(), odb.get(), base->root(), root, "");
  if (!built) return std::unexpected(built.error());
  if (*built) return ObjectId{**built};
  ObjectId empty;  // everything was removed: the empty tree
  if (git_odb_write(&empty.oid, odb.get(), "", 0, GIT_OBJECT_TREE) != 0) return git_failure("writing the empty tree");
  return empty;
}

namespace {

// The branch's tip, or nullopt when the branch does not exist.
Checked<std::optional<ObjectId>> ref_tip(git_repository* repo, const std::string& ref_name) {
  git_reference* raw = nullptr;
  int rc = git_reference_lookup(&raw, repo, ref_name.c_str());
  if (rc == GIT_ENOTFOUND) return std::optional<ObjectId>();
  if (rc != 0) return git_failure("reading " + ref_name);
  ReferencePtr ref(raw);
  const git_oid* target = git_reference_target(ref.get());
  if (!target) return refuse(RefusalCode::branch_moved, ref_name, "is a symbolic reference");
  return std::optional<ObjectId>(ObjectId{*target});
}

}  // namespace

Checked<void> GitRepo::check_branch(const std::string& branch, const ObjectId& parent) {
  std::string ref_name = "refs/heads/" + branch;
  if (branch.empty() || git_reference_is_valid_name(ref_name.c_str()) != 1) {
    return refuse(RefusalCode::invalid_branch, branch, "not a valid branch name");
  }
  auto tip = ref_tip(repo_.get(), ref_name);
  if (!tip) return std::unexpected(tip.error());
  if (!*tip || **tip == parent) return {};
  // A tip built on the same base may be this very commit, made before: commit() decides.
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo_.get(), &(*tip)->oid) == 0) {
    CommitPtr tip_commit(raw);
    if (git_commit_parentcount(tip_commit.get()) == 1 && git_oid_equal(git_commit_parent_id(tip_commit.get(), 0), &parent.oid)) {
      return {};
    }
  }
  return refuse(RefusalCode::branch_moved, branch, "the branch is at " + (*tip)->hex() + ", not at the base " + parent.hex());
}

Checked<ObjectId> GitRepo::write_commit(const ObjectId& tree_id, const ObjectId& parent, const CommitRequest& request) {
  if (auto st = check_branch(request.branch, parent); !st) return std::unexpected(st.error());
  git_signature* sig_raw = nullptr;
  if (git_signature_new(&sig_raw, request.author.name.c_str(), request.author.email.c_str(), request.time_seconds, 0) != 0) {
    return git_failure("author signature");
  }
  SignaturePtr sig(sig_raw);
  git_tree* tree_raw = nullptr;
  if (git_tree_lookup(&tree_raw, repo_.get(), &tree_id.oid) != 0) return git_failure("reading tree " + tree_id.hex());
  TreePtr tree(tree_raw);
  git_commit* parent_raw = nullptr;
  if (git_commit_lookup(&parent_raw, repo_.get(), &parent.oid) != 0) return git_failure("reading commit " + parent.hex());
  CommitPtr parent_commit(parent_raw);
  const git_commit* parents[] = {parent_commit.get()};
  git_buf buffer = GIT_BUF_INIT;
  if (git_commit_create_buffer(&buffer, repo_.get(), sig.get(), sig.get(), nullptr, request.message.c_str(), tree.get(), 1,
                               parents) != 0) {
    return git_failure("creating commit");
  }
  std::string bytes(buffer.ptr, buffer.size);
  git_buf_dispose(&buffer);
  // The commit's id before it is written: the same inputs make the same commit, and a
  // branch already at it is simply already done.
  ObjectId out;
  if (git_odb_hash(&out.oid, bytes.data(), bytes.size(), GIT_OBJECT_COMMIT) != 0) return git_failure("hashing commit");
  auto tip = ref_tip(repo_.get(), "refs/heads/" + request.branch);
  if (!tip) return std::unexpected(tip.error());
  if (*tip && !(**tip == out) && !(**tip == parent)) {
    return refuse(RefusalCode::branch_moved, request.branch, "the branch is at " + (*tip)->hex() + ", not at the base " + parent.hex());
  }
  git_odb* odb_raw = nullptr;
  if (git_repository_odb(&odb_raw, repo_.get()) != 0) return git_failure("opening the object database");
  std::unique_ptr<git_odb, GitFree<git_odb, git_odb_free>> odb(odb_raw);
  if (git_odb_write(&out.oid, odb.get(), bytes.data(), bytes.size(), GIT_OBJECT_COMMIT) != 0) {
    return git_failure("writing commit");
  }
  return out;
}

Checked<std::optional<ObjectId>> GitRepo::branch_tip(const std::string& branch) {
  return ref_tip(repo_.get(), "refs/heads/" + branch);
}

Checked<void> GitRepo::move_branch(const std::string& branch, const std::optional<ObjectId>& from,
                                   const std::optional<ObjectId>& to) {
  std::string ref_name = "refs/heads/" + branch;
  if (branch.empty() || git_reference_is_valid_name(ref_name.c_str()) != 1) {
    return refuse(RefusalCode::invalid_branch, branch, "not a valid branch name");
  }
  // Another writer (a second run on the same repository) holds the ref's lock file only while
  // it moves the branch, for milliseconds. A lost race is then read back as what it is, the
  // branch moved, not as a repository failure; a lock that stays is a stale one, named.
  constexpr int kLockTries = 200;
  constexpr auto kLockPause = std::chrono::milliseconds(10);
  for (int attempt = 1;; ++attempt) {
    auto tip = ref_tip(repo_.get(), ref_name);
    if (!tip) return std::unexpected(tip.error());
    if (*tip == to) return {};
    auto where = [](const std::optional<ObjectId>& id) { return id ? id->hex() : std::string("(no branch)"); };
    if (*tip != from) {
      return refuse(RefusalCode::branch_moved, branch, "the branch is at " + where(*tip) + ", not at " + where(from));
    }
    int rc = 0;
    if (!to) {
      // libgit2 has no compare-and-delete; the tip was checked just above, and deleting only
      // ever undoes this process's own first commit on a branch it created.
      git_reference* raw = nullptr;
      if (git_reference_lookup(&raw, repo_.get(), ref_name.c_str()) != 0) return git_failure("reading " + ref_name);
      ReferencePtr ref(raw);
      rc = git_reference_delete(ref.get());
    } else {
      // Compare-and-swap: another writer may have moved the branch since it was read.
      git_reference* moved = nullptr;
      rc = from ? git_reference_create_matching(&moved, repo_.get(), ref_name.c_str(), &to->oid, 1, &from->oid,
                                                "warden: commit")
                : git_reference_create(&moved, repo_.get(), ref_name.c_str(), &to->oid, 0, "warden: commit");
      ReferencePtr moved_ref(moved);
    }
    if (rc == 0) return {};
    if (rc == GIT_EEXISTS || rc == GIT_EMODIFIED) {
      return refuse(RefusalCode::branch_moved, branch, "another writer moved the branch first");
    }
    if (rc == GIT_ELOCKED && attempt < kLockTries) {
      std::this_thread::sleep_for(kLockPause);
      continue;
    }
    if (rc == GIT_ELOCKED) {
      return refuse(RefusalCode::repository_error, branch,
                    ref_name + " stayed locked for " + std::to_string(kLockTries * kLockPause.count()) +
                                       " ms: another writer holds it, or a crashed one left its .lock file (remove "
                                       "it only when no writer runs)");
    }
    return git_failure((to ? "moving " : "deleting ") + ref_name);
  }
}

Checked<ObjectId> GitRepo::commit_root(const std::vector<ResolvedFile>& files, const CommitRequest& request) {
  std::string ref_name = "refs/heads/" + request.branch;
  auto tip = ref_tip(repo_.get(), ref_name);
  if (!tip) return std::unexpected(tip.error());
  if (*tip) return refuse(RefusalCode::branch_moved, request.branch, "the branch exists already");
  git_treebuilder* builder_raw = nullptr;
  if (git_treebuilder_new(&builder_raw, repo_.get(), nullptr) != 0) return git_failure("creating the empty tree");
  std::unique_ptr<git_treebuilder, GitFree<git_treebuilder, git_treebuilder_free>> builder(builder_raw);
  ObjectId empty;
  if (git_treebuilder_write(&empty.oid, builder.get()) != 0) return git_failure("writing the empty tree");
  auto tree_id = write_tree(empty, files);
  if (!tree_id) return std::unexpected(tree_id.error());
  git_signature* sig_raw = nullptr;
  if (git_signature_new(&sig_raw, request.author.name.c_str(), request.author.email.c_str(), request.time_seconds, 0) != 0) {
    return git_failure("author signature");
  }
  SignaturePtr sig(sig_raw);
  git_tree* tree_raw = nullptr;
  if (git_tree_lookup(&tree_raw, repo_.get(), &tree_id->oid) != 0) return git_failure("reading tree " + tree_id->hex());
  TreePtr tree(tree_raw);
  ObjectId out;
  if (git_commit_create(&out.oid, repo_.get(), ref_name.c_str(), sig.get(), sig.get(), nullptr, request.message.c_str(),
                        tree.get(), 0, nullptr) != 0) {
    return git_failure("creating the first commit");
  }
  if (git_repository_set_head(repo_.get(), ref_name.c_str()) != 0) return git_failure("pointing HEAD at " + ref_name);
  return out;
}

Checked<void> GitRepo::checkout(const ObjectId& tree_id, const std::filesystem::path& dir) {
  git_object* raw = nullptr;
  if (git_object_lookup(&raw, repo_.get(), &tree_id.oid, GIT_OBJECT_TREE) != 0) return git_failure("reading tree " + tree_id.hex());
  std::unique_ptr<git_object, GitFree<git_object, git_object_free>> tree(raw);
  std::string target = dir.string();
  git_checkout_options opts = GIT_CHECKOUT_OPTIONS_INIT;
  opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
  opts.target_directory = target.c_str();
  if (git_checkout_tree(repo_.get(), tree.get(), &opts) != 0) return git_failure("checking out into " + target);
  return {};
}

Checked<void> GitRepo::reset_index(const ObjectId& tree_id) {
  git_tree* raw_tree = nullptr;
  if (git_tree_lookup(&raw_tree, repo_.get(), &tree_id.oid) != 0) return git_failure("reading tree " + tree_id.hex());
  TreePtr tree(raw_tree);
  git_index* raw_index = nullptr;
  if (git_repository_index(&raw_index, repo_.get()) != 0) return git_failure("opening the index");
  std::unique_ptr<git_index, GitFree<git_index, git_index_free>> index(raw_index);
  if (git_index_read_tree(index.get(), tree.get()) != 0) return git_failure("reading tree " + tree_id.hex() + " into the index");
  if (git_index_write(index.get()) != 0) return git_failure("writing the index");
  return {};
}

}  // namespace warden
