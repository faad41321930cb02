// Where the runner puts captured output bodies: a content-addressed store it knows only
// through put(bytes) -> digest, so the runner stays ignorant of the ledger (the kernel
// adapts the ledger's blob store to this interface). DirectoryBlobSink is the CLI's and the
// tests' store: one file per blob, named by its hex digest.
//
// The runner borrows a BlobSink; whoever made it owns it and the blobs it holds.
// DirectoryBlobSink keeps no state but its path: put() writes a randomly named temporary and
// renames it into place, so threads and processes may share one directory. An Error from
// put() (io_error etc., naming the file) means the blob may not be stored; nothing partial
// is visible under its name, though a crash can leave a ".tmp-*" file behind. Blobs are not
// fsynced: output bodies are evidence the kernel re-hashes on use, not the durable record.
#pragma once

#include <filesystem>
#include <string_view>

#include "common/error.h"
#include "common/sha256.h"

namespace warden {

class BlobSink {
 public:
  virtual ~BlobSink() = default;
  // Stores `bytes` (idempotent) and returns SHA-256(bytes).
  virtual Result<Digest> put(std::string_view bytes) = 0;
};

class DirectoryBlobSink final : public BlobSink {
 public:
  // Creates `dir` if needed.
  static Result<DirectoryBlobSink> open(const std::filesystem::path& dir);
  Result<Digest> put(std::string_view bytes) override;
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path_of(const Digest& d) const { return dir_ / d.hex(); }

 private:
  explicit DirectoryBlobSink(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

}  // namespace warden
