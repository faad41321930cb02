#include "runner/sandbox/output_capture.h"

#include <algorithm>

#include "common/canonical_json.h"

namespace warden {

size_t StreamCapture::append(std::string_view bytes) {
  if (over_limit_) return 0;
  uint64_t room = limits_.max_bytes - bytes_;
  if (bytes.size() > room) {
    // Cut at exactly max_bytes, so the recorded digest does not depend on read sizes.
    bytes = bytes.substr(0, static_cast<size_t>(room));
    over_limit_ = true;
  }
  hash_.update(bytes);
  bytes_ += bytes.size();
  if (kept_.size() < limits_.keep_bytes) {
    kept_.append(bytes.substr(0, std::min<size_t>(bytes.size(), limits_.keep_bytes - kept_.size())));
  }
  if (limits_.tail_bytes > 0) {
    std::string_view last = bytes.size() > limits_.tail_bytes ? bytes.substr(bytes.size() - limits_.tail_bytes) : bytes;
    for (char c : last) {
      if (ring_.size() < limits_.tail_bytes) {
        ring_.push_back(c);
      } else {
        ring_[ring_pos_] = c;
        ring_pos_ = (ring_pos_ + 1) % ring_.size();
      }
    }
  }
  return bytes.size();
}

StreamEvidence StreamCapture::finish() {
  StreamEvidence e;
  e.sha256 = hash_.finish();
  e.bytes = bytes_;
  e.truncated = bytes_ > kept_.size();
  e.head = sanitize_utf8(std::string_view(kept_).substr(0, std::min<size_t>(kept_.size(), limits_.head_bytes)));
  // The tail repeats nothing the head already shows.
  if (bytes_ > limits_.head_bytes) {
    std::string tail = ring_.substr(ring_pos_) + ring_.substr(0, ring_pos_);
    uint64_t fresh = bytes_ - limits_.head_bytes;
    if (tail.size() > fresh) tail.erase(0, tail.size() - static_cast<size_t>(fresh));
    e.tail = sanitize_utf8(tail);
  }
  e.kept_sha256 = e.truncated ? sha256(kept_) : e.sha256;
  e.kept = std::move(kept_);
  return e;
}

std::string sanitize_utf8(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len > 0 && i + len <= s.size() && is_valid_utf8(s.substr(i, len))) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append(kReplacement);
      ++i;
    }
  }
  return out;
}

}  // namespace warden
