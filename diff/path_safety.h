// Where a diff may write. Each unsafe path gets its own reason code:
//   path_nul_byte, path_absolute, path_traversal ("..") , path_malformed (empty, "." or
//   empty components, trailing slash), path_in_git_dir (".git" in any case, at any depth),
//   symlink_escapes_tree (a symlink whose target leaves the tree), and, checked against
//   the tree itself, path_through_symlink and path_case_collision (see diff_apply.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/refusal.h"

namespace warden {

Checked<void> check_path_syntax(std::string_view path);
Checked<void> check_symlink_target(std::string_view link_path, std::string_view target);

// `r` with its path and detail fit to record and print: refusals quote patch text and paths,
// and whatever they quote is escaped where it is not UTF-8 (escape_invalid_utf8).
Refusal printable(Refusal r);

}  // namespace warden
