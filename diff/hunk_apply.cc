#include "diff/hunk_apply.h"

#include "common/canonical_json.h"

namespace warden {
namespace {

// Lines with their terminators; only the last may lack "\n".
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

// A line for a message: JSON-quoted (so a tab or a stray \r shows), at most 80 bytes of it.
std::string quoted(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const bool cut = line.size() > 80;
  const std::string shown = Json(std::string(line.substr(0, 80))).dump(-1, ' ', false, Json::error_handler_t::replace);
  return cut ? shown + "..." : shown;
}

}  // namespace

Checked<std::string> apply_hunks(std::string_view pre_image, const std::vector<Hunk>& hunks, const std::string& path) {
  std::vector<std::string_view> pre = split_lines(pre_image);
  std::string out;
  out.reserve(pre_image.size() + 256);
  size_t cursor = 0;  // next pre-image line not yet copied
  for (size_t h = 0; h < hunks.size(); ++h) {
    const Hunk& hunk = hunks[h];
    std::string where = "hunk " + std::to_string(h + 1) + " (@@ -" + std::to_string(hunk.old_start) + "," +
                        std::to_string(hunk.old_lines) + ")";
    // A pure insertion goes after line old_start; otherwise the hunk starts at it.
    size_t at = hunk.old_lines == 0 ? hunk.old_start : hunk.old_start - 1;
    if ((hunk.old_lines > 0 && hunk.old_start == 0) || at < cursor || at > pre.size()) {
      return refuse(RefusalCode::hunk_mismatch, path, where + " starts outside the file or before the previous hunk ends");
    }
    bool old_ended = false, new_ended = false;  // a line without "\n" must be its side's last
    size_t old_seen = 0;
    std::string added;
    for (const std::string& line : hunk.lines) {
      char op = line[0];
      std::string_view content = std::string_view(line).substr(1);
      bool terminated = !content.empty() && content.back() == '\n';
      if (op != '+') {
        if (old_ended) return refuse(RefusalCode::hunk_mismatch, path, where + " continues after a line with no newline");
        if (at + old_seen >= pre.size()) {
          return refuse(RefusalCode::hunk_mismatch, path, where + ": the file ends before line " + std::to_string(at + old_seen + 1) +
                                                   ", where the hunk expects " + quoted(content));
        }
        if (pre[at + old_seen] != content) {
          return refuse(RefusalCode::hunk_mismatch, path, where + ": line " + std::to_string(at + old_seen + 1) +
                                                   " does not match the hunk's " + (op == '-' ? "removed" : "context") +
                                                   " line: the file has " + quoted(pre[at + old_seen]) + ", the hunk expects " +
                                                   quoted(content));
        }
        ++old_seen;
        old_ended = !terminated;
      }
      if (op != '-') {
        if (new_ended) return refuse(RefusalCode::hunk_mismatch, path, where + " adds after a line with no newline");
        added += content;
        new_ended = !terminated;
      }
    }
    if (old_seen != hunk.old_lines) return refuse(RefusalCode::hunk_count_mismatch, path, where + ": line counts disagree");
    if (old_ended && at + old_seen != pre.size()) {
      return refuse(RefusalCode::hunk_mismatch, path, where + ": a line with no newline is not the file's last");
    }
    for (; cursor < at; ++cursor) out += pre[cursor];
    out += added;
    cursor = at + old_seen;
    if (new_ended && (h + 1 != hunks.size() || cursor != pre.size())) {
      return refuse(RefusalCode::hunk_mismatch, path, where + ": a line with no newline would not end the file");
    }
  }
  for (; cursor < pre.size(); ++cursor) out += pre[cursor];
  return out;
}

}  // namespace warden
