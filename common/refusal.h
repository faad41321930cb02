// Why a proposed change was refused: a stable reason code (what the kernel records and
// executors learn from), the path it concerns, and a sentence for people.
//
// RefusalCode is the closed set of codes. Each spells as one fixed snake_case name
// (refusal_code_name); those names are recorded in ledgers (a proposal's workspace_refusal),
// printed in `--json` output and held in goldens, so a name never changes once released: add
// a code, never rename one. parse_refusal_code is the exact inverse.
//
// Value types; no shared state, so everything here is safe from any thread. A Refusal is
// not an Error: it says the change was refused, not that something broke (though a few
// codes, e.g. repository_error, report that the environment failed while judging it).
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace warden {

enum class RefusalCode {
  // The change does not match the tree it claims to apply to.
  after_hash_mismatch,
  hash_mismatch,
  hunk_count_mismatch,
  hunk_mismatch,
  mode_mismatch,
  branch_moved,
  // The change is malformed or too big.
  binary_without_data,
  duplicate_path,
  malformed_diff,
  malformed_patch,
  patch_too_large,
  unsupported_change,
  // A path the change names is not allowed or does not fit the tree.
  path_absolute,
  path_case_collision,
  path_conflict,
  path_exists,
  path_in_git_dir,
  path_malformed,
  path_not_found,
  path_nul_byte,
  path_through_symlink,
  path_traversal,
  symlink_escapes_tree,
  // The request around the change is wrong.
  invalid_branch,
  invalid_check,
  repository_not_found,
  revision_not_found,
  // The environment failed while judging the change.
  repository_error,
  runner_error,
  sandbox_unavailable,
  workspace_error,
  // The executor gave nothing to judge: it ran out of its time (or was stopped), or it did
  // not start, crashed, exited non-zero or said nothing.
  executor_timeout,
  executor_failed,
};

// The recorded spelling of `code`, e.g. "hash_mismatch".
std::string_view refusal_code_name(RefusalCode code);
// The code spelled `name`; nullopt for any other text.
std::optional<RefusalCode> parse_refusal_code(std::string_view name);

struct Refusal {
  RefusalCode code{};
  std::string path;  // the file concerned, when there is one
  std::string detail;

  // "code (path): detail", the form people see and verdict reasons carry.
  std::string message() const {
    return std::string(refusal_code_name(code)) + (path.empty() ? "" : " (" + path + ")") +
           (detail.empty() ? "" : ": " + detail);
  }
};

template <typename T>
using Checked = std::expected<T, Refusal>;

inline std::unexpected<Refusal> refuse(RefusalCode code, std::string path, std::string detail) {
  return std::unexpected<Refusal>(Refusal{code, std::move(path), std::move(detail)});
}

}  // namespace warden
