#include "common/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace warden {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Error errno_error(std::string_view what, int err) {
  Errc code = Errc::io_error;
  if (err == ENOENT || err == ENOTDIR) code = Errc::not_found;
  if (err == EEXIST) code = Errc::already_exists;
  return Error{code, std::string(what) + ": " + std::strerror(err)};
}

Result<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  if (path == "-") return read_fd(STDIN_FILENO, max_bytes, "standard input");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::unexpected(errno_error(path.string(), errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return fail(Errc::invalid_argument, path.string() + ": is a directory, expected a file");
  }
  return read_fd(fd.get(), max_bytes, path.string());
}

Result<std::string> read_fd(int fd, uint64_t max_bytes, std::string_view name) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(errno_error(name, errno));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Errc::limit_exceeded, std::string(name) + ": larger than the limit of " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

namespace {

// `data` in `<path>.tmp-<pid>`, written and fsynced with `mode`; the caller renames it into
// place. A link planted at the temporary's name is an error, never written through.
Result<std::filesystem::path> write_temporary(const std::filesystem::path& path, std::string_view data, unsigned mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return std::unexpected(errno_error(tmp.string(), errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::unlink(tmp.c_str());
      return std::unexpected(errno_error(tmp.string(), err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::fchmod(fd.get(), mode) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(errno_error(tmp.string(), err));
  }
  return tmp;
}

Status move_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path, bool replace) {
  int rc = replace ? ::rename(tmp.c_str(), path.c_str())
                   : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
  if (rc != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(errno_error(path.string(), err));
  }
  // The rename is durable once the directory is; a directory we cannot open or sync leaves
  // the file written, so that is not reported as a failure to write it.
  (void)sync_directory(path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
  return {};
}

}  // namespace

Status write_file_atomic(const std::filesystem::path& path, std::string_view data, unsigned mode) {
  auto tmp = write_temporary(path, data, mode);
  if (!tmp) return std::unexpected(tmp.error());
  return move_into_place(*tmp, path, true);
}

Status create_file_atomic(const std::filesystem::path& path, std::string_view data, unsigned mode) {
  auto tmp = write_temporary(path, data, mode);
  if (!tmp) return std::unexpected(tmp.error());
  return move_into_place(*tmp, path, false);
}

Status sync_directory(const std::filesystem::path& dir) {
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd) return std::unexpected(errno_error(dir.string(), errno));
  if (::fsync(dfd.get()) != 0) return std::unexpected(errno_error("syncing " + dir.string(), errno));
  return {};
}

Result<UniqueFd> sealed_memfd(const char* name, std::string_view bytes) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return std::unexpected(errno_error("memfd_create", errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error(std::string("writing ") + name, errno));
    done += static_cast<size_t>(n);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return std::unexpected(errno_error(std::string("sealing ") + name, errno));
  }
  return fd;
}

}  // namespace warden
