// The canonical Diff: what an executor proposes, hash-anchored rather than line-anchored.
// Every file names the SHA-256 of its content before and after; `diff_sha256` is the hash
// of the Diff's canonical JSON without that field. Hunks apply at their stated lines only.
//
// JSON form (RFC 8785 canonical when hashed):
//   {"step_id": "s1", "diff_sha256": "sha256:...", "files": [
//     {"op": "modify", "path": "src/a.py", "old_mode": "100644", "new_mode": "100644",
//      "before_sha256": "sha256:...", "after_sha256": "sha256:...",
//      "hunks": [{"old_start": 3, "old_lines": 2, "new_start": 3, "new_lines": 2,
//                 "lines": [" context\n", "-old\n", "+new\n"]}]},
//     {"op": "add", "path": "b.bin", "new_mode": "100644", "after_sha256": "sha256:...",
//      "after_content_base64": "..."}]}
// A hunk line is its op (' ', '-', '+') and its exact bytes, with the newline when it has one:
// a line without one is the last line of its side ("\ No newline at end of file").
// Content that is not valid UTF-8 travels as after_content_base64, never as hunks.
//
// Diff, FileChange and Hunk are plain values: they own their strings, hold no handles, and
// are safe to share read-only between threads. from_json() refuses (a Refusal, usually code
// "malformed_diff") input that is not a well-formed, self-consistent Diff: the proposal is
// wrong, and nothing was read or written to decide that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/refusal.h"

namespace warden {

// add | modify | delete | rename, and copy: git's copy (a new file whose pre-image is another
// file's content) is its own operation, not an add.
enum class FileOp { add, modify, remove, rename, copy };
std::string_view file_op_name(FileOp op);

inline constexpr uint32_t kModeFile = 0100644;
inline constexpr uint32_t kModeExecutable = 0100755;
inline constexpr uint32_t kModeSymlink = 0120000;

struct Hunk {
  uint64_t old_start = 0, old_lines = 0, new_start = 0, new_lines = 0;
  std::vector<std::string> lines;
};

struct FileChange {
  FileOp op = FileOp::modify;
  std::string path;
  std::optional<std::string> old_path;  // rename and copy: the source
  std::optional<uint32_t> old_mode;     // absent for add
  std::optional<uint32_t> new_mode;     // absent for delete
  std::optional<Digest> before_sha256;  // absent only for add
  std::optional<Digest> after_sha256;   // absent only for delete
  std::optional<std::string> after_content;  // full post-image bytes, or ...
  std::vector<Hunk> hunks;                   // ... hunks against the pre-image

  // The path whose base content is the pre-image: old_path for rename/copy.
  const std::string& source_path() const { return old_path ? *old_path : path; }
};

struct Diff {
  std::string step_id;
  std::vector<FileChange> files;

  Json to_json() const;  // includes diff_sha256
  Digest digest() const;  // SHA-256 of the canonical JSON without diff_sha256
  // Strict: every field checked for type and consistency; a diff_sha256 that is present
  // must match the content.
  static Checked<Diff> from_json(const Json& json);
};

std::string mode_string(uint32_t mode);
std::optional<uint32_t> parse_mode(std::string_view text);

}  // namespace warden
