#include "runner/sandbox/scratch_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/file.h"
#include "common/process_identity.h"

namespace warden {

namespace fs = std::filesystem;

Result<ScratchDir> ScratchDir::create(const fs::path& parent, std::string_view prefix, unsigned mode) {
  std::string tmpl = (parent / (std::string(prefix) + "p" + ProcessIdentity::self().str() + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) return std::unexpected(errno_error("mkdtemp " + tmpl, errno));
  if (::chmod(tmpl.c_str(), mode) != 0) {
    int err = errno;
    ::rmdir(tmpl.c_str());
    return std::unexpected(errno_error("chmod " + tmpl, err));
  }
  return ScratchDir(fs::path(tmpl));
}

Result<ScratchDir> ScratchDir::create_tmpfs(const fs::path& parent, std::string_view prefix, unsigned mode,
                                            uint64_t size_bytes, uint64_t inodes) {
  auto dir = create(parent, prefix, mode);
  if (!dir) return dir;
  char octal[8];
  std::snprintf(octal, sizeof octal, "%o", mode);
  std::string options = "size=" + std::to_string(size_bytes) + ",nr_inodes=" + std::to_string(inodes) + ",mode=" + octal;
  if (::mount("warden-run", dir->path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return std::unexpected(errno_error("mount a tmpfs (" + options + ") on " + dir->path_.string(), errno));
  }
  dir->mounted_ = true;
  return dir;
}

void ScratchDir::remove() {
  if (path_.empty()) return;
  // Detached, the tmpfs is freed once no process of the run holds it; the directory it
  // covered is empty.
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
  remove_tree(path_);
}

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    mounted_ = std::exchange(other.mounted_, false);
  }
  return *this;
}

ScratchDir::~ScratchDir() { remove(); }

Status make_owned_dir(const fs::path& path, uid_t uid, gid_t gid, unsigned mode) {
  if (::mkdir(path.c_str(), mode) != 0) return std::unexpected(errno_error("mkdir " + path.string(), errno));
  if (::chmod(path.c_str(), mode) != 0) return std::unexpected(errno_error("chmod " + path.string(), errno));
  if ((uid != ::geteuid() || gid != ::getegid()) && ::lchown(path.c_str(), uid, gid) != 0) {
    return std::unexpected(errno_error("chown " + path.string(), errno));
  }
  return {};
}

namespace {

// Removes `name` inside the open directory `parent`, never through a link: every entry is
// opened relative to its parent with O_NOFOLLOW, and a directory is entered through the
// descriptor that was checked, so an entry swapped for a symlink meanwhile (by whoever else
// can write there) is at worst unlinked itself, never followed. A directory closed to its
// owner gets owner rwx first, changed through its own descriptor (/proc/self/fd), not by path.
void remove_entry(int parent, const char* name) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;
  UniqueFd at(::openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!at || ::fstat(at.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  const std::string self = "/proc/self/fd/" + std::to_string(at.get());
  if ((st.st_mode & S_IRWXU) != S_IRWXU) ::chmod(self.c_str(), (st.st_mode & 07777) | S_IRWXU);
  UniqueFd dir(::open(self.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) {
    if (DIR* listing = ::fdopendir(dir.get())) {
      dir.release();  // the listing owns it now
      std::vector<std::string> names;
      while (const dirent* e = ::readdir(listing)) {
        std::string_view n = e->d_name;
        if (n != "." && n != "..") names.emplace_back(n);
      }
      for (const auto& n : names) remove_entry(::dirfd(listing), n.c_str());
      ::closedir(listing);
    }
  }
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

}  // namespace

void remove_tree(const fs::path& path) {
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) remove_entry(dir.get(), path.filename().c_str());
}

size_t reclaim_orphaned_scratch(const fs::path& parent) {
  size_t removed = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // warden-<kind>-p<pid>.<start>-XXXXXX: the owner sits between the last two '-'.
    if (!name.starts_with("warden-") || name.size() < 8) continue;
    const size_t suffix = name.rfind('-');
    if (suffix == std::string::npos || name.size() - suffix != 7) continue;
    const size_t owner_at = name.rfind('-', suffix - 1);
    if (owner_at == std::string::npos || name[owner_at + 1] != 'p') continue;
    auto owner = ProcessIdentity::parse(std::string_view(name).substr(owner_at + 2, suffix - owner_at - 2));
    if (!owner || owner->alive()) continue;
    // Only Warden's own: anyone may create a name like this in a world-writable scratch root,
    // and root must not remove (or descend into) what another uid owns.
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    // A run's own tmpfs (create_tmpfs) is detached first. Anything else, or no privilege to
    // unmount, makes this fail harmlessly (EINVAL, EPERM).
    ::umount2(it->path().c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    remove_tree(it->path());
    ++removed;
  }
  return removed;
}

}  // namespace warden
