// Whole-file reads and crash-safe whole-file writes, with errors that name the path.
// Stateless functions; errors carry Errc::not_found, already_exists or io_error from errno.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Reads a whole file, refusing files larger than max_bytes. "-" reads standard input.
Result<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes = uint64_t{1} << 30);
// The rest of an open file, as read_file; `name` names it in errors.
Result<std::string> read_fd(int fd, uint64_t max_bytes, std::string_view name);

// Writes to a temporary sibling, fsyncs it, renames it over `path` and fsyncs the
// directory: readers see the old file or the new one, never a torn write. On success the
// data is durable. On error `path` is untouched (the temporary is removed). The temporary is
// named `<path>.tmp-<pid>`, so two threads of one process must not write the same path at once.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data, unsigned mode = 0644);
// As write_file_atomic, but never replaces: Errc::already_exists when `path` exists (a
// symlink included, dangling or not), and then `path` is untouched. Of several processes
// creating one path at once, exactly one succeeds.
Status create_file_atomic(const std::filesystem::path& path, std::string_view data, unsigned mode = 0644);

// fsync of a directory: the entries created, renamed or removed in it are durable after.
Status sync_directory(const std::filesystem::path& dir);

// An anonymous file (memfd) holding `bytes`, sealed against any change, at offset 0: whoever
// reads it gets exactly these bytes, and nobody can change them (or reach the file they came
// from) through it. `name` is shown in /proc only.
Result<UniqueFd> sealed_memfd(const char* name, std::string_view bytes);

// "path: strerror(errno)" as an Error with a code that fits errno.
Error errno_error(std::string_view what, int err);

}  // namespace warden
