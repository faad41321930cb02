// Why a proposed change was refused: a stable reason code (what the kernel records and
// executors learn from), the path it concerns, and a sentence for people.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace warden {

struct Refusal {
  std::string code;  // e.g. "hash_mismatch", "path_traversal", "malformed_patch"
  std::string path;  // the file concerned, when there is one
  std::string detail;

  std::string message() const {
    return code + (path.empty() ? "" : " (" + path + ")") + (detail.empty() ? "" : ": " + detail);
  }
};

template <typename T>
using Checked = std::expected<T, Refusal>;

inline std::unexpected<Refusal> refuse(std::string code, std::string path, std::string detail) {
  return std::unexpected<Refusal>(Refusal{std::move(code), std::move(path), std::move(detail)});
}

}  // namespace warden
