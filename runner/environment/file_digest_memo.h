// FileDigestMemo: the SHA-256 of files remembered by what stat() says of them (device, inode,
// size, modification and change times), so a tree digested once is digested again by
// stat() alone, and a file whose bytes changed is read again: writing a file moves its
// mtime and ctime, and setting the mtime back still moves the ctime.
//
// The memo is believed the way the result cache is: it lives in Warden's private cache
// directory (private_dir.h), and whoever can write it could already write cached results.
// A memo file that does not parse, or a line that does not, is a miss: it costs a re-read,
// never a wrong digest for a file whose stat changed. A file changed in the last two seconds
// is not remembered (it could change again without its times moving on a coarse clock).
//
// load() reads the file when the memo is first asked (a store opened only to serve stored
// bytes never reads it). save() leaves out every path whose stat() no longer matches: paths
// that were only passing through (a tree scanned in a temporary directory before it was
// installed) do not pile up in the file.
//
// Ownership and threads: a FileDigestMemo is a plain value owned by one thread; save() writes
// it atomically (write to a temporary file, rename), so processes that share the file lose
// at worst each other's additions, never the file. Errors: digest() fails only when the file
// cannot be read (an errno error naming it); save() with the error of writing.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "common/sha256.h"

namespace warden {

// SHA-256 of a file's bytes, read in chunks (files of any size, in bounded memory).
Result<Digest> digest_file(const std::filesystem::path& path);

class FileDigestMemo {
 public:
  // An empty memo that save() writes to `file`; an empty path never saves.
  explicit FileDigestMemo(std::filesystem::path file = {}) : file_(std::move(file)) {}
  // The memo stored at `file` (read on first use), or an empty one when there is none or it
  // does not parse.
  static FileDigestMemo load(std::filesystem::path file);

  // The digest of the regular file at `path`, whose lstat() is `st`: remembered, or read.
  Result<Digest> digest(const std::filesystem::path& path, const struct stat& st);
  // Writes the memo when digest() added or changed anything since load(); otherwise nothing.
  Status save();

  // How long after its last change a file is remembered (default two seconds); tests of the
  // memo itself use zero.
  void set_settle_time(std::chrono::nanoseconds t) { settle_ns_ = t.count(); }

  size_t size() {
    read_if_pending();
    return entries_.size();
  }
  uint64_t files_read() const { return files_read_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  struct Entry {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    Digest digest;
  };
  static Entry key_of(const struct stat& st);
  static bool same_file(const Entry& a, const Entry& b);
  void read_if_pending();
  std::filesystem::path file_;
  bool pending_ = false;  // file_ is still to be read
  std::unordered_map<std::string, Entry> entries_;
  bool dirty_ = false;
  int64_t settle_ns_ = int64_t{2} * 1'000'000'000;
  uint64_t files_read_ = 0, bytes_read_ = 0;
};

}  // namespace warden
