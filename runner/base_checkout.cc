#include "runner/base_checkout.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/file.h"
#include "runner/scratch_dir.h"

namespace warden {

namespace fs = std::filesystem;

Status hand_over_tree(const fs::path& root, const SandboxHost& host) {
  std::error_code ec;
  auto fix = [&](const fs::path& p) -> Status {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return std::unexpected(errno_error("lstat " + p.string(), errno));
    if (host.drop && ::lchown(p.c_str(), host.uid, host.gid) != 0) return std::unexpected(errno_error("chown " + p.string(), errno));
    if (S_ISDIR(st.st_mode) && ::chmod(p.c_str(), 0755) != 0) return std::unexpected(errno_error("chmod " + p.string(), errno));
    if (S_ISREG(st.st_mode) && ::chmod(p.c_str(), (st.st_mode & 0100) ? 0755 : 0644) != 0) {
      return std::unexpected(errno_error("chmod " + p.string(), errno));
    }
    return {};
  };
  if (Status st = fix(root); !st) return st;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (Status st = fix(it->path()); !st) return st;
  }
  if (ec) return fail(Errc::io_error, "walking " + root.string() + ": " + ec.message());
  return {};
}

Checked<fs::path> BaseCheckouts::get(GitRepo& repo, const ObjectId& tree, bool* made) {
  if (made) *made = false;
  fs::path final_path = path_of(tree);
  struct stat st;
  if (::stat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return final_path;
  auto failure = [](const Error& e) { return std::unexpected(Refusal{"workspace_error", "", e.message}); };
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    fs::create_directories(dir_, ec);
    if (ec) return failure(Error{Errc::io_error, "creating " + dir_.string() + ": " + ec.message()});
    ::chmod(dir_.c_str(), 0711);
  }
  std::random_device rd;
  fs::path tmp = dir_ / (".tmp-" + tree.hex() + "-" + std::to_string(rd()));
  // The temporary directory is removed on every failure path.
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      if (!path.empty()) remove_tree(path);
    }
  } cleanup{tmp};
  if (auto st = repo.checkout(tree, tmp); !st) return std::unexpected(st.error());
  if (Status st = hand_over_tree(tmp, host_); !st) return failure(st.error());
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    // Another runner made the same checkout first: theirs is as good as ours.
    if ((errno == EEXIST || errno == ENOTEMPTY) && fs::is_directory(final_path, ec)) return final_path;
    return failure(errno_error("rename " + final_path.string(), errno));
  }
  cleanup.path.clear();
  if (made) *made = true;
  return final_path;
}

}  // namespace warden
