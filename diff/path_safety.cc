#include "diff/path_safety.h"

#include "common/canonical_json.h"
#include "common/case_fold.h"
#include "common/strings.h"

namespace warden {

Refusal printable(Refusal r) {
  r.path = escape_invalid_utf8(r.path);
  r.detail = escape_invalid_utf8(r.detail);
  return r;
}

Checked<void> check_path_syntax(std::string_view path) {
  // Refusals show the path; they are recorded as JSON strings, so stray bytes are escaped.
  std::string shown = escape_invalid_utf8(path);
  if (path.find('\0') != std::string_view::npos) {
    for (auto& c : shown) {
      if (c == '\0') c = '?';
    }
    return refuse(RefusalCode::path_nul_byte, shown, "paths cannot contain NUL bytes");
  }
  // A Diff carries its paths as JSON strings: only UTF-8 fits.
  if (shown != path) return refuse(RefusalCode::path_malformed, shown, "path is not valid UTF-8");
  if (path.empty()) return refuse(RefusalCode::path_malformed, "", "empty path");
  if (path.front() == '/') return refuse(RefusalCode::path_absolute, shown, "paths are relative to the repository root");
  for (std::string_view c : split_path(path)) {
    if (c == "..") return refuse(RefusalCode::path_traversal, shown, "\"..\" would leave the repository");
    if (fold_case(c) == ".git") return refuse(RefusalCode::path_in_git_dir, shown, "git's own metadata is not writable");
    if (c.empty() || c == ".") return refuse(RefusalCode::path_malformed, shown, "empty or \".\" path component");
  }
  return {};
}

Checked<void> check_symlink_target(std::string_view link_path, std::string_view target) {
  std::string shown = escape_invalid_utf8(link_path);
  if (target.empty() || target.find('\0') != std::string_view::npos) {
    return refuse(RefusalCode::symlink_escapes_tree, shown, "empty or NUL-containing symlink target");
  }
  if (target.front() == '/') return refuse(RefusalCode::symlink_escapes_tree, shown, "absolute target \"" + escape_invalid_utf8(target) + "\"");
  // Resolve lexically from the link's directory; going above the root escapes.
  auto parts = split_path(link_path);
  int64_t depth = static_cast<int64_t>(parts.size()) - 1;
  for (std::string_view c : split_path(target)) {
    if (c == "..") {
      if (--depth < 0) return refuse(RefusalCode::symlink_escapes_tree, shown, "target \"" + escape_invalid_utf8(target) + "\" leaves the tree");
    } else if (!c.empty() && c != ".") {
      if (fold_case(c) == ".git") return refuse(RefusalCode::path_in_git_dir, shown, "symlink into git's metadata");
      ++depth;
    }
  }
  return {};
}

}  // namespace warden
