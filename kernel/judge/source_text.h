// Source files as the kernel's content checks see them: the language a path is written in
// (by its extension) and each line's code with comments removed and string-literal contents
// dropped, so a call named in a comment or a string does not count as code. Line-preserving
// and linear; a lexer good enough for pattern checks, not a parser. Known gaps: Python
// f-string replacement fields are treated as string text; C++ raw strings (R"x(...)x"),
// shell heredocs and line continuations inside strings are not recognized.
//
// The free functions are pure. A CodeStripper carries state from line to line: one per file,
// fed in order from one thread. split_lines() returns views into `text`, valid while it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

enum class SourceLanguage { python, c_family, shell, go, javascript, other };

// .py/.pyi -> python; .c .h .cc .cpp .cxx .hpp .hh .hxx -> c_family; .sh .bash -> shell;
// .go -> go; .js .mjs .cjs .jsx .ts .mts .cts .tsx -> javascript. Go and JavaScript are
// stripped as C is (// and /* */ comments, "" and '' strings); Go's `raw` strings and
// JavaScript's template literals and regular expressions are kept as code.
SourceLanguage source_language(std::string_view path);

// The lines of `text` without their '\n'; a last line without one is still a line.
std::vector<std::string_view> split_lines(std::string_view text);

// Feeds lines in order and carries what spans lines (block comments, triple-quoted strings).
class CodeStripper {
 public:
  explicit CodeStripper(SourceLanguage language) : language_(language) {}

  // The line's code: comments removed; a string literal becomes its quotes alone ("" or ''),
  // except in shell, where strings are kept (they are often code: sh -c "...", eval "...").
  std::string strip(std::string_view line);

 private:
  std::string strip_python(std::string_view line);
  std::string strip_c(std::string_view line);
  std::string strip_shell(std::string_view line) const;

  enum class State { code, block_comment, triple_single, triple_double };
  SourceLanguage language_;
  State state_ = State::code;
};

}  // namespace warden::kernel
