// Bounded capture of one output stream: every byte is hashed, the first keep_bytes are kept
// (they become the stored blob), the last tail_bytes are kept in a ring for display, and
// past max_bytes the stream is over its limit (the sandbox then kills the run). Memory is
// bounded by keep_bytes + tail_bytes however much a program writes.
//
// A StreamCapture is a value owned by the code reading one stream: not thread-safe, one per
// stream, and finish() is called once (it hands over `kept` and resets the hash). Nothing is
// written anywhere and nothing can fail; storing the evidence is the caller's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/sha256.h"
#include "runner/model/sandbox_profile.h"

namespace warden {

// What a captured stream leaves behind.
struct StreamEvidence {
  Digest sha256;       // of every byte read (up to max_bytes)
  uint64_t bytes = 0;  // how many that was
  bool truncated = false;  // bytes > keep_bytes: the blob holds only the first keep_bytes
  std::string head, tail;  // display excerpts, made valid UTF-8 (U+FFFD for bad bytes)
  std::string kept;        // the first keep_bytes bytes, exactly
  Digest kept_sha256;      // SHA-256 of `kept` (the blob's name); equals sha256 when not truncated
};

class StreamCapture {
 public:
  explicit StreamCapture(const OutputLimits& limits) : limits_(limits) {}

  // Takes what was read; returns how many bytes were accepted (fewer than given only when
  // the stream reached max_bytes, which over_limit() then reports).
  size_t append(std::string_view bytes);
  bool over_limit() const { return over_limit_; }
  uint64_t bytes() const { return bytes_; }
  StreamEvidence finish();

 private:
  OutputLimits limits_;
  Sha256 hash_;
  uint64_t bytes_ = 0;
  bool over_limit_ = false;
  std::string kept_;
  std::string ring_;  // the last tail_bytes, rotated: oldest byte at ring_pos_
  size_t ring_pos_ = 0;
};

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD, so excerpts of arbitrary
// output can sit in canonical JSON.
std::string sanitize_utf8(std::string_view bytes);

}  // namespace warden
