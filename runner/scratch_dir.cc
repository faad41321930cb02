#include "runner/scratch_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/file.h"

namespace warden {

namespace fs = std::filesystem;

Result<ScratchDir> ScratchDir::create(const fs::path& parent, std::string_view prefix, unsigned mode) {
  std::string tmpl = (parent / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) return std::unexpected(errno_error("mkdtemp " + tmpl, errno));
  if (::chmod(tmpl.c_str(), mode) != 0) {
    int err = errno;
    ::rmdir(tmpl.c_str());
    return std::unexpected(errno_error("chmod " + tmpl, err));
  }
  return ScratchDir(fs::path(tmpl));
}

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) remove_tree(path_);
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

ScratchDir::~ScratchDir() {
  if (!path_.empty()) remove_tree(path_);
}

Status make_owned_dir(const fs::path& path, uid_t uid, gid_t gid, unsigned mode) {
  if (::mkdir(path.c_str(), mode) != 0) return std::unexpected(errno_error("mkdir " + path.string(), errno));
  if (::chmod(path.c_str(), mode) != 0) return std::unexpected(errno_error("chmod " + path.string(), errno));
  if ((uid != ::geteuid() || gid != ::getegid()) && ::lchown(path.c_str(), uid, gid) != 0) {
    return std::unexpected(errno_error("chown " + path.string(), errno));
  }
  return {};
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  // Directories first get owner rwx, so their contents can be listed and unlinked.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    ::chmod(path.c_str(), (st.st_mode & 07777) | S_IRWXU);
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      remove_tree(it->path());
    }
  }
  fs::remove(path, ec);
}

}  // namespace warden
