// TreeManifest: what a directory tree holds, as content — every entry's relative path, type,
// permission bits, and a file's size and SHA-256 or a symlink's target — and the digest of
// that list, which names the tree: two trees with the same manifest are the same to every
// program that reads them, whoever owns the files and whenever they were written.
//
// Two readings of a tree: as it is (host directories: the modes as they are), and as an
// environment holds it (Normalize::environment: a file is 0444 or 0555 by whether anyone may
// execute it, a directory 0755, set-id and sticky bits gone, device nodes, sockets and fifos
// left out, and the contents of a top-level proc/, sys/ and dev/ skipped: the sandbox mounts
// its own). The store materializes environments in exactly that form, so scanning a stored
// root gives the digest it was stored under.
//
// A manifest is a plain value. scan() fails with the errno error of the first entry it
// cannot read (naming it); it never follows a symlink.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "runner/environment/file_digest_memo.h"

namespace warden {

struct TreeEntry {
  enum class Type : char { directory = 'd', file = 'f', symlink = 'l', other = 'o' };
  std::string path;  // relative, '/'-separated; "" is the root itself
  Type type = Type::file;
  uint32_t mode = 0;  // permission bits
  uint64_t size = 0;  // files
  Digest sha256;      // files
  std::string target; // symlinks

  bool executable() const { return (mode & 0111) != 0; }
  bool operator==(const TreeEntry&) const = default;
};

struct TreeManifest {
  enum class Normalize { none, environment };

  std::vector<TreeEntry> entries;  // sorted by path

  // Walks `root` (a directory) with lstat(), hashing files through `memo`. With
  // `unreadable_as_entries`, a file or directory this process may not read is an entry of
  // its own (a file with the zero digest, a directory without contents) instead of an error:
  // what cannot be read still counts by its name, mode and size.
  static Result<TreeManifest> scan(const std::filesystem::path& root, FileDigestMemo& memo,
                                   Normalize normalize = Normalize::none, bool unreadable_as_entries = false);
  // One canonical JSON array per entry and line: ["d",493,"path"], ["f",420,size,"hex","path"],
  // ["l","target","path"], ["o",mode,"path"].
  std::string text() const;
  static Result<TreeManifest> parse(std::string_view text);
  Digest digest() const;  // SHA-256 of text()
  uint64_t file_bytes() const;
  size_t files() const;
};

// The paths whose entries differ between two manifests (added, removed or changed), sorted;
// at most `limit` of them.
std::vector<std::string> differing_paths(const TreeManifest& a, const TreeManifest& b, size_t limit = 50);

}  // namespace warden
