#include "runner/check/diff_layer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "common/file.h"

namespace warden {
namespace {

namespace fs = std::filesystem;
using BlobPtr = std::unique_ptr<git_blob, GitFree<git_blob, git_blob_free>>;

std::unexpected<Refusal> layer_error(const Error& e) { return std::unexpected(Refusal{RefusalCode::workspace_error, "", e.message}); }
std::unexpected<Refusal> layer_errno(const std::string& what, int err) { return layer_error(errno_error(what, err)); }

// A new file at `p` (never through a symlink) with `bytes`, `perms`, owned by the sandbox's uid.
Checked<void> write_new_file(const fs::path& p, std::string_view bytes, unsigned perms, const SandboxHost& host) {
  UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perms));
  if (!fd) return layer_errno("create " + p.string(), errno);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return layer_errno("write " + p.string(), errno);
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), perms) != 0) return layer_errno("chmod " + p.string(), errno);
  if (host.drop && ::fchown(fd.get(), host.uid, host.gid) != 0) return layer_errno("chown " + p.string(), errno);
  return {};
}

class LayerWriter {
 public:
  LayerWriter(git_repository* repo, const SandboxHost& host) : repo_(repo), host_(host) {}
  LayerStats stats;

  Checked<void> own(const fs::path& p) {
    if (host_.drop && ::lchown(p.c_str(), host_.uid, host_.gid) != 0) return layer_errno("chown " + p.string(), errno);
    return {};
  }

  Checked<void> whiteout(const fs::path& p) {
    if (::mknod(p.c_str(), S_IFCHR | 0644, makedev(0, 0)) != 0) return layer_errno("mknod (whiteout) " + p.string(), errno);
    ++stats.whiteouts;
    return own(p);
  }

  Checked<void> mkdir(const fs::path& p) {
    if (::mkdir(p.c_str(), 0755) != 0) return layer_errno("mkdir " + p.string(), errno);
    if (::chmod(p.c_str(), 0755) != 0) return layer_errno("chmod " + p.string(), errno);
    ++stats.written;
    return own(p);
  }

  // Writes one tree entry (and, for a directory, everything below it).
  Checked<void> write(const git_tree_entry* e, const fs::path& p) {
    // The only way into the layer: a name that would leave the directory is refused here.
    if (!safe_entry_name(git_tree_entry_name(e))) {
      return std::unexpected(Refusal{RefusalCode::repository_error, "", std::string("a tree entry named \"") +
                                                                          git_tree_entry_name(e) + "\", which no checkout may write"});
    }
    git_filemode_t mode = git_tree_entry_filemode(e);
    const git_oid* id = git_tree_entry_id(e);
    if (mode == GIT_FILEMODE_TREE) {
      if (auto st = mkdir(p); !st) return st;
      git_tree* raw = nullptr;
      if (git_tree_lookup(&raw, repo_, id) != 0) return std::unexpected(repository_error("reading tree"));
      TreePtr tree(raw);
      return write_all(tree.get(), p);
    }
    if (mode == GIT_FILEMODE_COMMIT) return mkdir(p);  // a submodule checks out as an empty directory
    git_blob* raw = nullptr;
    if (git_blob_lookup(&raw, repo_, id) != 0) return std::unexpected(repository_error("reading blob"));
    BlobPtr blob(raw);
    std::string_view bytes(static_cast<const char*>(git_blob_rawcontent(blob.get())), static_cast<size_t>(git_blob_rawsize(blob.get())));
    if (mode == GIT_FILEMODE_LINK) {
      if (::symlink(std::string(bytes).c_str(), p.c_str()) != 0) return layer_errno("symlink " + p.string(), errno);
      ++stats.written;
      return own(p);
    }
    if (auto st = write_new_file(p, bytes, mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644, host_); !st) return st;
    ++stats.written;
    return {};
  }

  // Every entry of one directory.
  Checked<void> write_all(const git_tree* tree, const fs::path& dir) {
    for (size_t i = 0, n = git_tree_entrycount(tree); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(tree, i);
      if (auto st = write(e, dir / git_tree_entry_name(e)); !st) return st;
    }
    return {};
  }

  // The difference below one directory present in both trees.
  Checked<void> diff(const git_tree* base, const git_tree* target, const fs::path& dir) {
    std::map<std::string_view, const git_tree_entry*> in_base, in_target;
    for (size_t i = 0, n = git_tree_entrycount(base); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(base, i);
      in_base.emplace(git_tree_entry_name(e), e);
    }
    for (size_t i = 0, n = git_tree_entrycount(target); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(target, i);
      in_target.emplace(git_tree_entry_name(e), e);
    }
    for (const auto& [name, b] : in_base) {
      if (!in_target.contains(name)) {
        if (!safe_entry_name(name)) {
          return std::unexpected(Refusal{RefusalCode::repository_error, "", "a tree entry named \"" + std::string(name) + "\""});
        }
        if (auto st = whiteout(dir / name); !st) return st;
      }
    }
    for (const auto& [name, t] : in_target) {
      auto found = in_base.find(name);
      fs::path p = dir / name;
      if (found == in_base.end()) {
        if (auto st = write(t, p); !st) return st;
        continue;
      }
      const git_tree_entry* b = found->second;
      if (git_tree_entry_filemode(b) == git_tree_entry_filemode(t) && git_oid_equal(git_tree_entry_id(b), git_tree_entry_id(t))) {
        continue;  // unchanged: the whole subtree is skipped
      }
      bool both_dirs = git_tree_entry_filemode(b) == GIT_FILEMODE_TREE && git_tree_entry_filemode(t) == GIT_FILEMODE_TREE;
      if (!both_dirs) {
        // A new file hides the old entry; a new directory over an old file merges with nothing.
        if (auto st = write(t, p); !st) return st;
        continue;
      }
      git_tree *braw = nullptr, *traw = nullptr;
      if (git_tree_lookup(&braw, repo_, git_tree_entry_id(b)) != 0) return std::unexpected(repository_error("reading tree"));
      TreePtr btree(braw);
      if (git_tree_lookup(&traw, repo_, git_tree_entry_id(t)) != 0) return std::unexpected(repository_error("reading tree"));
      TreePtr ttree(traw);
      if (auto st = mkdir(p); !st) return st;
      if (auto st = diff(btree.get(), ttree.get(), p); !st) return st;
    }
    return {};
  }

 private:
  git_repository* repo_;
  const SandboxHost& host_;
};

}  // namespace

Checked<LayerStats> write_overlay_files(const std::vector<OverlayFile>& files, const fs::path& dir, const SandboxHost& host) {
  LayerStats stats;
  auto own = [&](const fs::path& p) -> Checked<void> {
    if (host.drop && ::lchown(p.c_str(), host.uid, host.gid) != 0) return layer_errno("chown " + p.string(), errno);
    return {};
  };
  for (const OverlayFile& f : files) {
    // Segment by segment, each a name a checkout may write: nothing leaves the layer.
    std::vector<std::string> segments;
    for (size_t start = 0; start <= f.path.size();) {
      const size_t end = std::min(f.path.find('/', start), f.path.size());
      segments.emplace_back(f.path.substr(start, end - start));
      start = end + 1;
    }
    for (const std::string& seg : segments) {
      if (!safe_entry_name(seg)) return layer_error(Error{Errc::invalid_argument, "an overlay file named \"" + f.path + "\""});
    }
    fs::path p = dir;
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      p /= segments[i];
      struct stat st {};
      if (::lstat(p.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) continue;
        if (::unlink(p.c_str()) != 0) return layer_errno("unlink " + p.string(), errno);  // a whiteout or a file
      }
      if (::mkdir(p.c_str(), 0755) != 0 || ::chmod(p.c_str(), 0755) != 0) return layer_errno("mkdir " + p.string(), errno);
      if (auto st2 = own(p); !st2) return std::unexpected(st2.error());
      ++stats.written;
    }
    p /= segments.back();
    // Whatever the tree under test has there (a file, a whiteout, a directory) gives way.
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec) return layer_error(Error{Errc::io_error, "removing " + p.string() + ": " + ec.message()});
    if (auto st = write_new_file(p, f.content, (f.mode & 0111) ? 0755 : 0644, host); !st) return std::unexpected(st.error());
    ++stats.written;
  }
  return stats;
}

Checked<LayerStats> write_full_tree(GitRepo& repo, const ObjectId& tree, const fs::path& dir, const SandboxHost& host) {
  auto root = repo.tree(tree);
  if (!root) return std::unexpected(root.error());
  LayerWriter writer(repo.get(), host);
  if (auto st = writer.write_all(root->root(), dir); !st) return std::unexpected(st.error());
  return writer.stats;
}

Checked<LayerStats> write_diff_layer(GitRepo& repo, const ObjectId& base_tree, const ObjectId& target_tree,
                                     const fs::path& dir, const SandboxHost& host) {
  auto base = repo.tree(base_tree);
  if (!base) return std::unexpected(base.error());
  auto target = repo.tree(target_tree);
  if (!target) return std::unexpected(target.error());
  LayerWriter writer(repo.get(), host);
  if (auto st = writer.diff(base->root(), target->root(), dir); !st) return std::unexpected(st.error());
  return writer.stats;
}

}  // namespace warden
