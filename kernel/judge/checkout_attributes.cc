#include "kernel/judge/checkout_attributes.h"

#include <array>

#include "common/case_fold.h"
#include "common/strings.h"

namespace warden::kernel {
namespace {

constexpr std::array<std::string_view, 6> kTransforming = {"ident", "eol", "text", "crlf", "filter", "working-tree-encoding"};

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The line's words after its pattern: a pattern in double quotes (C-style escapes) ends at
// its closing quote, any other at the first blank.
std::vector<std::string_view> attribute_words(std::string_view line) {
  size_t i = 0;
  if (!line.empty() && line[0] == '"') {
    for (i = 1; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\') ++i;
    }
    ++i;
  } else {
    while (i < line.size() && !blank(line[i])) ++i;
  }
  std::vector<std::string_view> words;
  while (i < line.size()) {
    while (i < line.size() && blank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !blank(line[i])) ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// Whether one attribute word sets (or gives a value to) a transforming attribute: "-x"
// unsets and "!x" unspecifies, neither transforms.
bool transforms(std::string_view word) {
  if (word.empty() || word[0] == '-' || word[0] == '!') return false;
  std::string_view name = word.substr(0, word.find('='));
  for (std::string_view t : kTransforming) {
    if (name == t) return true;
  }
  return false;
}

}  // namespace

bool is_attributes_file(std::string_view path) {
  std::vector<std::string_view> parts = split_path(path);
  return !parts.empty() && fold_case(parts.back()) == ".gitattributes";
}

std::vector<AttributeFinding> transforming_attributes(std::string_view text) {
  std::vector<AttributeFinding> out;
  uint64_t number = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++number;
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    for (std::string_view word : attribute_words(line)) {
      if (transforms(word)) {
        out.push_back(AttributeFinding{number, std::string(line), std::string(word)});
        break;
      }
    }
  }
  return out;
}

}  // namespace warden::kernel
