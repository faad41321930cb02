#include "diff/patch.h"

#include <algorithm>
#include <charconv>

#include "common/canonical_json.h"

#include "diff/git_binary.h"
#include "diff/path_safety.h"

namespace warden {
namespace {

Refusal malformed(uint64_t line, std::string detail) {
  return Refusal{RefusalCode::malformed_patch, "", "line " + std::to_string(line) + ": " + std::move(detail)};
}

// Walks the patch a line at a time; a line includes its '\n' when it has one.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  std::string_view peek() const {
    auto nl = text_.find('\n', pos_);
    return text_.substr(pos_, nl == std::string_view::npos ? std::string_view::npos : nl - pos_ + 1);
  }
  // The line without its newline.
  std::string_view peek_body() const {
    auto l = peek();
    if (!l.empty() && l.back() == '\n') l.remove_suffix(1);
    return l;
  }
  void next() {
    pos_ += peek().size();
    ++line_;
  }
  uint64_t line() const { return line_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  uint64_t line_ = 1;
};

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// git -p1: drop the first path component ("a/src/x" -> "src/x").
std::optional<std::string> strip_prefix(std::string_view name) {
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash + 1 == name.size()) return std::nullopt;
  return std::string(name.substr(slash + 1));
}

// A path as it follows "rename from " etc.: C-quoted, or the rest of the line.
Checked<std::string> path_field(std::string_view text, uint64_t line) {
  if (!text.empty() && text[0] == '"') {
    size_t used = 0;
    auto p = unquote_c_path(text, used);
    if (!p || used != text.size()) return std::unexpected(malformed(line, "bad quoted path"));
    return p;
  }
  if (text.empty()) return std::unexpected(malformed(line, "empty path"));
  return std::string(text);
}

// The name on a ---/+++ line: quoted, /dev/null, or up to a tab (git appends a tab after
// names with spaces; a name holding a tab would have been quoted).
Checked<std::optional<std::string>> marker_name(std::string_view text, uint64_t line) {
  std::string raw;
  if (!text.empty() && text[0] == '"') {
    size_t used = 0;
    auto p = unquote_c_path(text, used);
    if (!p) return std::unexpected(malformed(line, "bad quoted path"));
    raw = *p;
  } else {
    raw = std::string(text.substr(0, text.find('\t')));
  }
  if (raw == "/dev/null") return std::optional<std::string>();
  auto stripped = strip_prefix(raw);
  if (!stripped) return std::unexpected(malformed(line, "path \"" + raw + "\" has no a/ or b/ prefix"));
  return std::optional<std::string>(*stripped);
}

// "a/X b/Y" after "diff --git ": exact when quoted or when both names are equal; otherwise
// left unknown for the rename/copy or ---/+++ lines to settle.
void header_names(std::string_view s, std::string& a, std::string& b) {
  if (!s.empty() && s[0] == '"') {
    size_t used = 0;
    auto first = unquote_c_path(s, used);
    if (!first || used >= s.size() || s[used] != ' ') return;
    std::string_view rest = s.substr(used + 1);
    std::string second;
    if (!rest.empty() && rest[0] == '"') {
      size_t used2 = 0;
      auto q = unquote_c_path(rest, used2);
      if (!q) return;
      second = *q;
    } else {
      second = std::string(rest);
    }
    if (auto x = strip_prefix(*first)) a = *x;
    if (auto y = strip_prefix(second)) b = *y;
    return;
  }
  if (auto quote = s.find(" \""); quote != std::string_view::npos) {
    size_t used = 0;
    auto second = unquote_c_path(s.substr(quote + 1), used);
    if (!second) return;
    if (auto x = strip_prefix(s.substr(0, quote))) a = *x;
    if (auto y = strip_prefix(*second)) b = *y;
    return;
  }
  if (s.size() % 2 == 1) {
    size_t half = s.size() / 2;
    auto x = strip_prefix(s.substr(0, half));
    auto y = strip_prefix(s.substr(half + 1));
    if (s[half] == ' ' && x && y && *x == *y) {
      a = b = *x;
      return;
    }
  }
  if (auto space = s.find(' '); space != std::string_view::npos && s.find(' ', space + 1) == std::string_view::npos) {
    if (auto x = strip_prefix(s.substr(0, space))) a = *x;
    if (auto y = strip_prefix(s.substr(space + 1))) b = *y;
  }
}

Checked<uint32_t> mode_field(std::string_view text, uint64_t line) {
  if (text == "160000") return std::unexpected(Refusal{RefusalCode::unsupported_change, "", "submodules (mode 160000) are not supported"});
  auto m = parse_mode(text);
  if (!m) return std::unexpected(malformed(line, "unknown file mode \"" + std::string(text) + "\""));
  return *m;
}

// "@@ -A[,B] +C[,D] @@ ..." then exactly B old and D new lines.
Checked<Hunk> parse_hunk(LineReader& r) {
  uint64_t header_line = r.line();
  std::string_view h = r.peek_body();
  auto bad_header = [&] { return std::unexpected(malformed(header_line, "bad hunk header \"" + std::string(h) + "\"")); };
  if (!h.starts_with("@@ -")) return bad_header();
  auto end = h.find(" @@", 4);
  if (end == std::string_view::npos) return bad_header();
  std::string_view ranges = h.substr(4, end - 4);
  auto plus = ranges.find(" +");
  if (plus == std::string_view::npos) return bad_header();
  auto range = [](std::string_view s, uint64_t& start, uint64_t& count) {
    auto comma = s.find(',');
    count = 1;
    if (comma == std::string_view::npos) return parse_u64(s, start);
    return parse_u64(s.substr(0, comma), start) && parse_u64(s.substr(comma + 1), count);
  };
  Hunk hunk;
  if (!range(ranges.substr(0, plus), hunk.old_start, hunk.old_lines) ||
      !range(ranges.substr(plus + 2), hunk.new_start, hunk.new_lines)) {
    return bad_header();
  }
  r.next();
  uint64_t old_left = hunk.old_lines, new_left = hunk.new_lines;
  auto count_error = [&](uint64_t line, const std::string& what) {
    return std::unexpected(Refusal{RefusalCode::hunk_count_mismatch, "",
                                   "line " + std::to_string(line) + ": " + what + " (hunk at line " +
                                       std::to_string(header_line) + " declares -" + std::to_string(hunk.old_lines) +
                                       " +" + std::to_string(hunk.new_lines) + ")"});
  };
  auto take_marker = [&]() -> Checked<void> {
    // "\ No newline at end of file": the line before it has no newline on its side.
    if (hunk.lines.empty() || hunk.lines.back().back() != '\n') {
      return std::unexpected(malformed(r.line(), "misplaced \"\\ No newline at end of file\""));
    }
    hunk.lines.back().pop_back();
    r.next();
    return {};
  };
  while (old_left > 0 || new_left > 0) {
    if (r.done()) return count_error(r.line(), "the patch ends inside the hunk");
    std::string_view line = r.peek();
    if (line.back() != '\n') return std::unexpected(malformed(r.line(), "the patch ends in the middle of a line"));
    char op = line.size() == 1 ? ' ' : line[0];  // an empty line is an empty context line
    std::string_view content = line.size() == 1 ? line : line.substr(1);
    if (op == '\\') {
      if (auto m = take_marker(); !m) return std::unexpected(m.error());
      continue;
    }
    if (op != ' ' && op != '-' && op != '+') {
      return count_error(r.line(), "found \"" + std::string(line.substr(0, line.size() - 1)) + "\" where " +
                                       std::to_string(old_left) + " old and " + std::to_string(new_left) +
                                       " new lines were still due");
    }
    if ((op != '+' && old_left == 0) || (op != '-' && new_left == 0)) {
      return count_error(r.line(), "more lines than the header declares");
    }
    if (op != '+') --old_left;
    if (op != '-') --new_left;
    hunk.lines.push_back(std::string(1, op) + std::string(content));
    r.next();
  }
  if (!r.done() && r.peek().starts_with("\\")) {
    if (auto m = take_marker(); !m) return std::unexpected(m.error());
  }
  // A line that reads as one more hunk line means the header undercounts; only a new
  // header, a blank line or format-patch's "-- " signature may follow.
  if (!r.done()) {
    std::string_view next = r.peek();
    bool signature = next == "-- \n" || next == "--\n";
    bool file_header = next.starts_with("--- ") || next.starts_with("+++ ");
    if ((next[0] == ' ' || next[0] == '+' || next[0] == '-') && !signature && !file_header) {
      return count_error(r.line(), "more lines than the header declares");
    }
  }
  if (hunk.lines.empty()) return std::unexpected(malformed(header_line, "empty hunk"));
  return hunk;
}

// One "literal N" or "delta N" block. `budget` is what the patch's binary payloads may still
// inflate to: a block declaring more is refused on its header line, before its data is
// decoded, and the block's size is taken from it.
Checked<std::string> parse_binary_block(LineReader& r, PatchFile::Binary& kind, uint64_t& budget) {
  std::string_view header = r.peek_body();
  uint64_t header_line = r.line();
  uint64_t size = 0;
  if (header.starts_with("literal ") && parse_u64(header.substr(8), size)) {
    kind = PatchFile::Binary::literal;
  } else if (header.starts_with("delta ") && parse_u64(header.substr(6), size)) {
    kind = PatchFile::Binary::delta;
  } else {
    return std::unexpected(malformed(header_line, "expected \"literal N\" or \"delta N\""));
  }
  if (size > budget) {
    return std::unexpected(Refusal{RefusalCode::patch_too_large, "",
                                   "line " + std::to_string(header_line) + ": binary payload declares " +
                                       std::to_string(size) + " bytes; the patch's binary payloads may inflate to " +
                                       std::to_string(kMaxBinaryBytes) + " bytes in all"});
  }
  budget -= size;
  r.next();
  std::string compressed;
  while (!r.done() && r.peek() != "\n") {
    if (r.peek().back() != '\n') return std::unexpected(malformed(r.line(), "binary data ends mid-line"));
    if (auto st = decode_base85_line(r.peek_body(), compressed); !st) {
      return std::unexpected(malformed(r.line(), st.error().detail));
    }
    r.next();
  }
  if (r.done()) return std::unexpected(malformed(r.line(), "binary patch ends without its blank line"));
  r.next();  // the blank line
  auto inflated = inflate_exact(compressed, size);
  if (!inflated) return std::unexpected(Refusal{inflated.error().code, "", "line " + std::to_string(header_line) + ": " + inflated.error().detail});
  return inflated;
}

Checked<PatchFile> parse_git_section(LineReader& r, uint64_t& binary_budget) {
  PatchFile f;
  f.line = r.line();
  std::string header_a, header_b;
  header_names(r.peek_body().substr(11), header_a, header_b);
  r.next();
  std::optional<std::string> from, to;  // rename/copy from/to
  while (!r.done()) {
    std::string_view l = r.peek_body();
    uint64_t n = r.line();
    auto rest = [&](std::string_view prefix) { return l.substr(prefix.size()); };
    if (l.starts_with("old mode ")) {
      auto m = mode_field(rest("old mode "), n);
      if (!m) return std::unexpected(m.error());
      f.old_mode = *m;
    } else if (l.starts_with("new mode ")) {
      auto m = mode_field(rest("new mode "), n);
      if (!m) return std::unexpected(m.error());
      f.new_mode = *m;
    } else if (l.starts_with("deleted file mode ")) {
      auto m = mode_field(rest("deleted file mode "), n);
      if (!m) return std::unexpected(m.error());
      f.is_delete = true;
      f.old_mode = *m;
    } else if (l.starts_with("new file mode ")) {
      auto m = mode_field(rest("new file mode "), n);
      if (!m) return std::unexpected(m.error());
      f.is_new = true;
      f.new_mode = *m;
    } else if (l.starts_with("rename from ") || l.starts_with("copy from ")) {
      bool rename = l.starts_with("rename");
      auto p = path_field(rest(rename ? "rename from " : "copy from "), n);
      if (!p) return std::unexpected(p.error());
      (rename ? f.is_rename : f.is_copy) = true;
      from = *p;
    } else if (l.starts_with("rename to ") || l.starts_with("copy to ")) {
      auto p = path_field(rest(l.starts_with("rename") ? "rename to " : "copy to "), n);
      if (!p) return std::unexpected(p.error());
      to = *p;
    } else if (l.starts_with("index ")) {
      std::string_view ids = rest("index ");
      auto space = ids.find(' ');
      if (space != std::string_view::npos) {
        auto m = mode_field(ids.substr(space + 1), n);
        if (!m) return std::unexpected(m.error());
        if (!f.old_mode) f.old_mode = *m;
        if (!f.new_mode) f.new_mode = *m;
        ids = ids.substr(0, space);
      }
      auto dots = ids.find("..");
      if (dots == std::string_view::npos) return std::unexpected(malformed(n, "bad index line"));
      f.old_index = std::string(ids.substr(0, dots));
      f.new_index = std::string(ids.substr(dots + 2));
    } else if (!l.starts_with("similarity index ") && !l.starts_with("dissimilarity index ")) {
      break;
    }
    r.next();
  }

  std::optional<std::string> minus_name, plus_name;
  bool has_markers = false;
  if (!r.done() && r.peek().starts_with("--- ")) {
    uint64_t n = r.line();
    auto a = marker_name(r.peek_body().substr(4), n);
    if (!a) return std::unexpected(a.error());
    r.next();
    if (r.done() || !r.peek().starts_with("+++ ")) return std::unexpected(malformed(r.line(), "\"--- \" without \"+++ \""));
    auto b = marker_name(r.peek_body().substr(4), r.line());
    if (!b) return std::unexpected(b.error());
    r.next();
    minus_name = *a;
    plus_name = *b;
    has_markers = true;
    while (!r.done() && r.peek().starts_with("@@ ")) {
      auto h = parse_hunk(r);
      if (!h) return std::unexpected(h.error());
      f.hunks.push_back(std::move(*h));
    }
    if (f.hunks.empty()) return std::unexpected(malformed(r.line(), "file header without hunks"));
  } else if (!r.done() && r.peek_body() == "GIT binary patch") {
    r.next();
    auto forward = parse_binary_block(r, f.binary, binary_budget);
    if (!forward) return std::unexpected(forward.error());
    f.binary_payload = std::move(*forward);
    if (!r.done() && (r.peek().starts_with("literal ") || r.peek().starts_with("delta "))) {
      PatchFile::Binary reverse_kind;
      auto reverse = parse_binary_block(r, reverse_kind, binary_budget);  // checked for form, not needed
      if (!reverse) return std::unexpected(reverse.error());
    }
  } else if (!r.done() && r.peek().starts_with("Binary files ")) {
    f.binary = PatchFile::Binary::without_data;
    r.next();
  }

  f.old_path = from ? *from : has_markers && minus_name ? *minus_name : header_a;
  f.new_path = to ? *to : has_markers && plus_name ? *plus_name : header_b;
  if (has_markers && !minus_name) f.is_new = true;
  if (has_markers && !plus_name) f.is_delete = true;
  if (f.is_new) f.old_path.clear();
  if (f.is_delete) f.new_path.clear();
  if ((f.is_new && f.is_delete) || (f.old_path.empty() && f.new_path.empty())) {
    return std::unexpected(malformed(f.line, "cannot tell which file this section changes"));
  }
  if ((f.is_rename || f.is_copy) && (!from || !to)) return std::unexpected(malformed(f.line, "rename or copy without both ends"));
  if (!f.is_new && f.old_path.empty()) return std::unexpected(malformed(f.line, "no old path"));
  if (!f.is_delete && f.new_path.empty()) return std::unexpected(malformed(f.line, "no new path"));
  return f;
}

// `diff -N` writes a missing file as an empty one dated at the Unix epoch, in the local time
// zone; git apply reads that date as "absent" and so does Warden. Accepts
// "YYYY-MM-DD HH:MM:SS[.frac] +HHMM" and the traditional "Thu Jan  1 00:00:00 1970".
bool epoch_timestamp(std::string_view marker_rest) {
  auto tab = marker_rest.find('\t');
  if (tab == std::string_view::npos) return false;
  std::string_view t = marker_rest.substr(tab + 1);
  if (t.starts_with("Thu Jan  1 00:00:00 1970")) return true;
  auto num = [&](size_t at, size_t len, int64_t& out) {
    uint64_t v = 0;
    if (at + len > t.size() || !parse_u64(t.substr(at, len), v)) return false;
    out = static_cast<int64_t>(v);
    return true;
  };
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, oh = 0, om = 0;
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':') return false;
  if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) || !num(17, 2, sec)) return false;
  size_t at = 19;
  if (at < t.size() && t[at] == '.') {
    ++at;
    while (at < t.size() && t[at] >= '0' && t[at] <= '9') {
      if (t[at] != '0') return false;  // the epoch has no fraction
      ++at;
    }
  }
  if (at + 6 > t.size() || t[at] != ' ' || (t[at + 1] != '+' && t[at + 1] != '-')) return false;
  if (!num(at + 2, 2, oh) || !num(at + 4, 2, om)) return false;
  // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
  int64_t yy = mo <= 2 ? y - 1 : y;
  int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  int64_t yoe = yy - era * 400;
  int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
  int64_t offset = (t[at + 1] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  return days * 86400 + h * 3600 + mi * 60 + sec - offset == 0;
}

Checked<PatchFile> parse_plain_section(LineReader& r) {
  PatchFile f;
  f.line = r.line();
  std::string_view minus = r.peek_body().substr(4);
  auto a = marker_name(minus, r.line());
  if (!a) return std::unexpected(a.error());
  if (epoch_timestamp(minus)) a = std::optional<std::string>();
  r.next();
  std::string_view plus = r.peek_body().substr(4);
  auto b = marker_name(plus, r.line());
  if (!b) return std::unexpected(b.error());
  if (epoch_timestamp(plus)) b = std::optional<std::string>();
  r.next();
  while (!r.done() && r.peek().starts_with("@@ ")) {
    auto h = parse_hunk(r);
    if (!h) return std::unexpected(h.error());
    f.hunks.push_back(std::move(*h));
  }
  if (f.hunks.empty()) return std::unexpected(malformed(r.line(), "file header without hunks"));
  f.is_new = !*a;
  f.is_delete = !*b;
  if (f.is_new && f.is_delete) return std::unexpected(malformed(f.line, "both sides are /dev/null"));
  f.old_path = a->value_or("");
  f.new_path = b->value_or("");
  if (!f.is_new && !f.is_delete && f.old_path != f.new_path) {
    return std::unexpected(malformed(f.line, "a plain diff cannot rename; use git diff"));
  }
  return f;
}

// A Diff carries paths as JSON strings, so a path that is not UTF-8 cannot be proposed; it
// is the patch that is wrong (quoted paths can spell any bytes).
Checked<void> check_utf8_paths(const PatchFile& f) {
  for (const std::string* path : {&f.old_path, &f.new_path}) {
    if (!is_valid_utf8(*path)) {
      return std::unexpected(malformed(f.line, "path \"" + escape_invalid_utf8(*path) + "\" is not valid UTF-8"));
    }
  }
  return {};
}

}  // namespace

Checked<std::string> unquote_c_path(std::string_view text, size_t& consumed) {
  auto bad = [](const std::string& why) { return std::unexpected(Refusal{RefusalCode::malformed_patch, "", "quoted path: " + why}); };
  if (text.empty() || text[0] != '"') return bad("missing opening quote");
  std::string out;
  for (size_t i = 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      consumed = i + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= text.size()) break;
    char e = text[i];
    switch (e) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'v': out += '\v'; break;
      case 'f': out += '\f'; break;
      case 'r': out += '\r'; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      default: {
        if (e < '0' || e > '3' || i + 2 >= text.size()) return bad("bad escape");
        int v = 0;
        for (int k = 0; k < 3; ++k) {
          char d = text[i + static_cast<size_t>(k)];
          if (d < '0' || d > '7') return bad("bad octal escape");
          v = v * 8 + (d - '0');
        }
        out += static_cast<char>(v);
        i += 2;
      }
    }
  }
  return bad("missing closing quote");
}

namespace {

Checked<std::vector<PatchFile>> parse_patch_text(std::string_view text) {
  if (text.size() > kMaxPatchBytes) {
    return std::unexpected(Refusal{RefusalCode::patch_too_large, "", "patch is " + std::to_string(text.size()) +
                                                              " bytes; the limit is " + std::to_string(kMaxPatchBytes)});
  }
  if (auto lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')); lines > kMaxPatchLines) {
    return std::unexpected(Refusal{RefusalCode::patch_too_large, "", "patch has " + std::to_string(lines) +
                                                              " lines; the limit is " + std::to_string(kMaxPatchLines)});
  }
  LineReader r(text);
  std::vector<PatchFile> files;
  uint64_t binary_budget = kMaxBinaryBytes;
  while (!r.done()) {
    std::string_view line = r.peek();
    if (line.starts_with("diff --git ")) {
      auto f = parse_git_section(r, binary_budget);
      if (!f) return std::unexpected(f.error());
      if (auto st = check_utf8_paths(*f); !st) return std::unexpected(st.error());
      files.push_back(std::move(*f));
    } else if (line.starts_with("--- ")) {
      LineReader probe = r;
      probe.next();
      if (!probe.done() && probe.peek().starts_with("+++ ")) {
        auto f = parse_plain_section(r);
        if (!f) return std::unexpected(f.error());
        if (auto st = check_utf8_paths(*f); !st) return std::unexpected(st.error());
        files.push_back(std::move(*f));
      } else {
        r.next();
      }
    } else {
      r.next();  // mail headers, commit message, diffstat, signature: not part of any file
    }
  }
  if (files.empty()) return std::unexpected(Refusal{RefusalCode::malformed_patch, "", "no file changes found"});
  return files;
}

}  // namespace

Checked<std::vector<PatchFile>> parse_patch(std::string_view text) {
  auto files = parse_patch_text(text);
  // Refusals quote the patch, which may hold any bytes.
  if (!files) return std::unexpected(printable(std::move(files.error())));
  return files;
}

}  // namespace warden
