#include "common/refusal.h"

#include <array>
#include <utility>

namespace warden {
namespace {

// The one name table; its order is RefusalCode's.
constexpr std::array<std::pair<RefusalCode, std::string_view>, 33> kNames{{
    {RefusalCode::after_hash_mismatch, "after_hash_mismatch"},
    {RefusalCode::hash_mismatch, "hash_mismatch"},
    {RefusalCode::hunk_count_mismatch, "hunk_count_mismatch"},
    {RefusalCode::hunk_mismatch, "hunk_mismatch"},
    {RefusalCode::mode_mismatch, "mode_mismatch"},
    {RefusalCode::branch_moved, "branch_moved"},
    {RefusalCode::binary_without_data, "binary_without_data"},
    {RefusalCode::duplicate_path, "duplicate_path"},
    {RefusalCode::malformed_diff, "malformed_diff"},
    {RefusalCode::malformed_patch, "malformed_patch"},
    {RefusalCode::patch_too_large, "patch_too_large"},
    {RefusalCode::unsupported_change, "unsupported_change"},
    {RefusalCode::path_absolute, "path_absolute"},
    {RefusalCode::path_case_collision, "path_case_collision"},
    {RefusalCode::path_conflict, "path_conflict"},
    {RefusalCode::path_exists, "path_exists"},
    {RefusalCode::path_in_git_dir, "path_in_git_dir"},
    {RefusalCode::path_malformed, "path_malformed"},
    {RefusalCode::path_not_found, "path_not_found"},
    {RefusalCode::path_nul_byte, "path_nul_byte"},
    {RefusalCode::path_through_symlink, "path_through_symlink"},
    {RefusalCode::path_traversal, "path_traversal"},
    {RefusalCode::symlink_escapes_tree, "symlink_escapes_tree"},
    {RefusalCode::invalid_branch, "invalid_branch"},
    {RefusalCode::invalid_check, "invalid_check"},
    {RefusalCode::repository_not_found, "repository_not_found"},
    {RefusalCode::revision_not_found, "revision_not_found"},
    {RefusalCode::repository_error, "repository_error"},
    {RefusalCode::runner_error, "runner_error"},
    {RefusalCode::sandbox_unavailable, "sandbox_unavailable"},
    {RefusalCode::workspace_error, "workspace_error"},
    {RefusalCode::executor_timeout, "executor_timeout"},
    {RefusalCode::executor_failed, "executor_failed"},
}};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (static_cast<size_t>(kNames[i].first) != i) return false;
  }
  return static_cast<size_t>(RefusalCode::executor_failed) + 1 == kNames.size();
}
static_assert(in_enum_order(), "kNames must list every RefusalCode, in order");

}  // namespace

std::string_view refusal_code_name(RefusalCode code) { return kNames[static_cast<size_t>(code)].second; }

std::optional<RefusalCode> parse_refusal_code(std::string_view name) {
  for (const auto& [code, spelled] : kNames) {
    if (spelled == name) return code;
  }
  return std::nullopt;
}

}  // namespace warden
