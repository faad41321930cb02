#include "kernel/judge/source_text.h"

#include <array>

namespace warden::kernel {
namespace {

std::string_view extension(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(dot);
}

// The index just past the literal opened by quote `q` at `i` (escapes skipped); the end of
// the line when it is not closed there (treated as closed: the next line starts in code).
size_t skip_quoted(std::string_view line, size_t i, char q) {
  for (size_t j = i + 1; j < line.size(); ++j) {
    if (line[j] == '\\') ++j;
    else if (line[j] == q) return j + 1;
  }
  return line.size();
}

// Where the triple quote `qqq` closes at or after `from`, or npos.
size_t find_triple_close(std::string_view line, size_t from, char q) {
  for (size_t j = from; j < line.size(); ++j) {
    if (line[j] == '\\') ++j;
    else if (line[j] == q && j + 2 < line.size() && line[j + 1] == q && line[j + 2] == q) return j;
  }
  return std::string_view::npos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

SourceLanguage source_language(std::string_view path) {
  static constexpr std::array<std::string_view, 8> kC = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"};
  std::string_view ext = extension(path);
  if (ext == ".py" || ext == ".pyi") return SourceLanguage::python;
  if (ext == ".sh" || ext == ".bash") return SourceLanguage::shell;
  if (ext == ".go") return SourceLanguage::go;
  static constexpr std::array<std::string_view, 8> kJs = {".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"};
  for (std::string_view j : kJs) {
    if (ext == j) return SourceLanguage::javascript;
  }
  for (std::string_view c : kC) {
    if (ext == c) return SourceLanguage::c_family;
  }
  return SourceLanguage::other;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string CodeStripper::strip(std::string_view line) {
  switch (language_) {
    case SourceLanguage::python: return strip_python(line);
    case SourceLanguage::c_family:
    case SourceLanguage::go:
    case SourceLanguage::javascript: return strip_c(line);
    case SourceLanguage::shell: return strip_shell(line);
    case SourceLanguage::other: break;
  }
  return std::string(line);
}

std::string CodeStripper::strip_python(std::string_view line) {
  std::string out;
  size_t i = 0;
  if (state_ == State::triple_single || state_ == State::triple_double) {
    size_t close = find_triple_close(line, 0, state_ == State::triple_single ? '\'' : '"');
    if (close == std::string_view::npos) return out;
    out += '"';
    i = close + 3;
    state_ = State::code;
  }
  while (i < line.size()) {
    char c = line[i];
    if (c == '#') break;
    if (c != '\'' && c != '"') {
      out += c;
      ++i;
      continue;
    }
    if (i + 2 < line.size() && line[i + 1] == c && line[i + 2] == c) {
      size_t close = find_triple_close(line, i + 3, c);
      if (close == std::string_view::npos) {
        out += '"';
        state_ = c == '\'' ? State::triple_single : State::triple_double;
        return out;
      }
      out += "\"\"";
      i = close + 3;
      continue;
    }
    out += "\"\"";
    i = skip_quoted(line, i, c);
  }
  return out;
}

std::string CodeStripper::strip_c(std::string_view line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (state_ == State::block_comment) {
      size_t close = line.find("*/", i);
      if (close == std::string_view::npos) return out;
      out += ' ';  // a comment separates tokens
      i = close + 2;
      state_ = State::code;
      continue;
    }
    char c = line[i];
    if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') break;
    if (c == '/' && i + 1 < line.size() && line[i + 1] == '*') {
      state_ = State::block_comment;
      i += 2;
      continue;
    }
    // A quote after a digit is a C++14 digit separator (1'000), not a character literal.
    if (c == '"' || (c == '\'' && !(i > 0 && is_digit(line[i - 1])))) {
      out += c;
      out += c;
      i = skip_quoted(line, i, c);
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

std::string CodeStripper::strip_shell(std::string_view line) const {
  // '#' starts a comment only at the start of a word and outside quotes.
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\\') {
      ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      bool word_start = i == 0 || std::string_view(" \t;|&(").find(line[i - 1]) != std::string_view::npos;
      if (word_start) return std::string(line.substr(0, i));
    }
  }
  return std::string(line);
}

}  // namespace warden::kernel
