// Read access to the tree a diff applies to. The git workspace implements it over a
// libgit2 tree; tests and the fuzzer use MemoryFileTree. Paths are '/'-separated, relative.
//
// Callers borrow a BaseTree for the call (resolve_diff, build_diff); it owns its content and
// hands back copies. Reads are not const and implementations keep no lock: use one tree from
// one thread at a time (GitTree is also bound to its repository's thread). An absent path is
// not an error (EntryKind::none, nullopt, empty list); a Refusal from a BaseTree means the
// tree could not be read (code "repository_error" for GitTree) — a storage fault, not a
// fault of the diff being checked.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/refusal.h"

namespace warden {

enum class EntryKind { none, file, symlink, directory };

struct BaseFile {
  std::string content;
  uint32_t mode = 0;
  std::string blob_id;  // git object id, lowercase hex
};

class BaseTree {
 public:
  virtual ~BaseTree() = default;
  virtual Checked<EntryKind> kind(std::string_view path) = 0;
  // A file or symlink's content; nullopt when there is none at `path`.
  virtual Checked<std::optional<BaseFile>> read(std::string_view path) = 0;
  // The names in directory `dir` ("" is the root); empty when it does not exist.
  virtual Checked<std::vector<std::string>> names(std::string_view dir) = 0;
};

// git's object id of a blob: SHA-1 over "blob <size>\0" and the bytes.
std::string git_blob_id(std::string_view content);

// A tree held in memory: path -> (content, mode). Its reads never fail.
class MemoryFileTree final : public BaseTree {
 public:
  void put(std::string path, std::string content, uint32_t mode = 0100644);
  Checked<EntryKind> kind(std::string_view path) override;
  Checked<std::optional<BaseFile>> read(std::string_view path) override;
  Checked<std::vector<std::string>> names(std::string_view dir) override;

 private:
  std::map<std::string, BaseFile, std::less<>> files_;
};

}  // namespace warden
