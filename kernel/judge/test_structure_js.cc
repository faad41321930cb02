// The JavaScript and TypeScript reader of test_structure.h. Its own tokenizer (a slash that
// starts a regular expression is told from a division by the token before it; template
// literals are read with their ${...} parts nested) and one way of cutting a scope into
// statements: at `;`, at a newline where the statement is complete, and after the body of a
// function or class declaration. A call of a test function (test, it, ...) with its title is
// a test; a call of a suite (describe, ...) is a class whose members are the statements of its
// callback; a hook (beforeEach, ...) is a statement, so a new one around the base's tests is
// new code that runs. Everything else is an import, a declaration, or a statement.
//
// Where JavaScript's grammar and this reader could see different code, the file is unreadable
// (judged whole) rather than guessed at: a slash after `}` (a regular expression after a block,
// a division after an object), an escape in an identifier (\u0061ssert), an HTML-like comment
// (<!-- and a line-leading -->, comments in scripts). Line terminators are JavaScript's (LF,
// CR, U+2028, U+2029) and so is its whitespace (NBSP, the BOM, ...). Comments that configure
// the runner or the compiler (@jest-environment, @ts-ignore, ...) are kept as code.
//
// One unit (~780 lines), a single parser: the tokenizer's choices (a slash as a regular
// expression or a division, a template literal's nesting) and the reader's statement ends must
// agree token for token, so they are read and changed together.
#include <algorithm>
#include <cctype>
#include <set>

#include "kernel/judge/test_structure.h"

namespace warden::kernel {
namespace {

struct Token {
  enum Kind { name, literal, op } kind;
  std::string text;
  int line = 0;
  bool newline_before = false;
  std::vector<std::string> inner_names = {};  // a template literal: the names its ${...} parts read
};

// How deep template literals and suites may nest before the file is judged whole: far past any
// real test file, and a bound on the reader's stack.
constexpr int kMaxNesting = 64;

Error unreadable(int line, std::string why) {
  return Error{Errc::invalid_argument, "line " + std::to_string(line) + ": " + why};
}

bool ident_start(unsigned char c) { return c == '_' || c == '$' || std::isalpha(c) || c >= 0x80; }
bool ident_char(unsigned char c) { return ident_start(c) || std::isdigit(c); }

// Keywords after which a `/` starts a regular expression, not a division.
bool expression_keyword(std::string_view w) {
  static const std::set<std::string_view> kWords = {"return", "typeof", "instanceof", "in",   "of",     "new",   "delete",
                                                    "void",   "throw",  "case",       "do",   "else",   "yield", "await"};
  return kWords.contains(w);
}

// Words that are never a name: reads leave them out. (Contextual keywords such as `of`, `get`,
// `from` or `type` are names elsewhere, and `undefined` is a global that can be shadowed.)
bool reserved(std::string_view w) {
  static const std::set<std::string_view> kWords = {
      "break",  "case",    "catch",  "class",   "const",  "continue", "debugger", "default", "delete",
      "do",     "else",    "export", "extends", "finally", "for",     "function", "if",      "import",
      "in",     "instanceof", "new", "return",  "super",  "switch",   "this",     "throw",   "try",
      "typeof", "var",     "void",   "while",   "with",   "yield",    "let",      "static",  "enum",
      "await",  "implements", "package", "protected", "interface", "private", "public", "null", "true", "false"};
  return kWords.contains(w);
}

bool keyword(std::string_view w) {
  static const std::set<std::string_view> kWords = {
      "break",  "case",    "catch",  "class",   "const",    "continue", "debugger", "default", "delete",     "do",
      "else",   "export",  "extends", "finally", "for",     "function", "if",       "import",  "in",         "instanceof",
      "new",    "return",  "super",  "switch",  "this",     "throw",    "try",      "typeof",  "var",        "void",
      "while",  "with",    "yield",  "let",     "static",   "async",    "await",    "of",      "true",       "false",
      "null",   "undefined", "as",   "from",    "type",     "interface", "enum",    "declare", "namespace",  "readonly",
      "public", "private", "protected", "implements", "abstract", "satisfies", "keyof", "get", "set"};
  return kWords.contains(w);
}

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view s) : s_(s) {}

  Result<std::vector<Token>> run() {
    if (s_.starts_with("#!")) i_ = line_end(0);
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (const size_t n = line_terminator(i_)) {
        if (!(c == '\n' && i_ > 0 && s_[i_ - 1] == '\r')) ++line_;
        i_ += n;
        newline_ = true;
        line_start_ = true;
        continue;
      }
      if (const size_t n = white_space(i_)) {
        i_ += n;
        continue;
      }
      if (s_.substr(i_, 2) == "//") {
        const size_t end = line_end(i_);
        if (Status st = keep_pragma(s_.substr(i_, end - i_)); !st) return std::unexpected(st.error());
        i_ = end;
        continue;
      }
      if (s_.substr(i_, 2) == "/*") {
        const size_t end = s_.find("*/", i_ + 2);
        if (end == std::string_view::npos) return std::unexpected(unreadable(line_, "a comment that never ends"));
        if (Status st = keep_pragma(s_.substr(i_, end + 2 - i_)); !st) return std::unexpected(st.error());
        count_lines(i_, end);
        i_ = end + 2;
        continue;
      }
      if (s_.substr(i_, 4) == "<!--" || (line_start_ && s_.substr(i_, 3) == "-->")) {
        return std::unexpected(unreadable(line_, "an HTML-like comment, which only scripts read as a comment"));
      }
      if (c == '\\') return std::unexpected(unreadable(line_, "an escape outside a string (\\u in a name)"));
      line_start_ = false;
      const int at = line_;
      if (ident_start(static_cast<unsigned char>(c))) {
        const size_t start = i_;
        while (i_ < s_.size() && ident_char(static_cast<unsigned char>(s_[i_])) && !white_space(i_) && !line_terminator(i_)) ++i_;
        push(Token::name, std::string(s_.substr(start, i_ - start)), at);
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
        const size_t start = i_;
        while (i_ < s_.size() && (ident_char(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) ++i_;
        push(Token::literal, std::string(s_.substr(start, i_ - start)), at);
        continue;
      }
      if (c == '"' || c == '\'') {
        auto end = string_end(i_);
        if (!end) return std::unexpected(end.error());
        push(Token::literal, std::string(s_.substr(i_, *end - i_)), at);
        i_ = *end;
        continue;
      }
      if (c == '`') {
        std::vector<std::string> names;
        auto end = template_end(i_, names);
        if (!end) return std::unexpected(end.error());
        push(Token::literal, std::string(s_.substr(i_, *end - i_)), at);
        out_.back().inner_names = std::move(names);
        i_ = *end;
        continue;
      }
      if (c == '/' && !out_.empty() && is_close_brace(out_.back())) {
        return std::unexpected(unreadable(line_, "a '/' after '}' (a regular expression after a block, a division after an object)"));
      }
      if (c == '/' && regex_may_start()) {
        auto end = regex_end(i_);
        if (!end) return std::unexpected(end.error());
        push(Token::literal, std::string(s_.substr(i_, *end - i_)), at);
        i_ = *end;
        continue;
      }
      push(Token::op, std::string(operator_at(i_)), at);
      i_ += out_.back().text.size();
      const std::string& op = out_.back().text;
      if (op == "(") {
        // A condition's parentheses: a slash after them starts a regular expression.
        const bool control = out_.size() >= 2 && out_[out_.size() - 2].kind == Token::name &&
                             (out_[out_.size() - 2].text == "if" || out_[out_.size() - 2].text == "while" ||
                              out_[out_.size() - 2].text == "for" || out_[out_.size() - 2].text == "with");
        parens_.push_back(control);
      } else if (op == ")") {
        closed_control_ = !parens_.empty() && parens_.back();
        if (!parens_.empty()) parens_.pop_back();
      }
    }
    return std::move(out_);
  }

 private:
  void push(Token::Kind kind, std::string text, int at) {
    out_.push_back({kind, std::move(text), at, newline_});
    newline_ = false;
  }

  void count_lines(size_t from, size_t to) {
    line_ += static_cast<int>(std::count(s_.begin() + static_cast<long>(from), s_.begin() + static_cast<long>(to), '\n'));
  }

  // A `/` here starts a regular expression when no operand comes before it.
  bool regex_may_start() const {
    if (out_.empty()) return true;
    const Token& prev = out_.back();
    if (prev.kind == Token::literal) return false;
    if (prev.kind == Token::name) return expression_keyword(prev.text);
    if (prev.text == ")") return closed_control_;
    return prev.text != "]" && prev.text != "++" && prev.text != "--";
  }

  static bool is_close_brace(const Token& t) { return t.kind == Token::op && t.text == "}"; }

  // The length of the line terminator at `at` (LF, CR, CRLF, U+2028, U+2029); 0 if none.
  size_t line_terminator(size_t at) const {
    if (s_[at] == '\n') return 1;
    if (s_[at] == '\r') return at + 1 < s_.size() && s_[at + 1] == '\n' ? 2 : 1;
    if (s_.substr(at, 3) == "\xE2\x80\xA8" || s_.substr(at, 3) == "\xE2\x80\xA9") return 3;
    return 0;
  }

  // Where the line holding `at` ends: at its terminator, or the end of the text.
  size_t line_end(size_t at) const {
    while (at < s_.size() && !line_terminator(at)) ++at;
    return at;
  }

  // The length of the white space at `at`: ASCII's, and Unicode's that JavaScript skips (NBSP,
  // the BOM, the Zs spaces); 0 if none.
  size_t white_space(size_t at) const {
    const char c = s_[at];
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f') return 1;
    static const std::vector<std::string_view> kSpaces = {
        "\xC2\xA0", "\xEF\xBB\xBF", "\xE1\x9A\x80", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
    for (std::string_view sp : kSpaces) {
      if (s_.substr(at, sp.size()) == sp) return sp.size();
    }
    if (s_.substr(at, 2) == "\xE2\x80" && at + 2 < s_.size()) {
      const auto third = static_cast<unsigned char>(s_[at + 2]);
      if (third >= 0x80 && third <= 0x8A) return 3;  // U+2000 to U+200A
    }
    return 0;
  }

  // A comment that configures the runner or the compiler is code: kept as a token.
  Status keep_pragma(std::string_view comment) {
    for (std::string_view mark : {"@jest-", "@vitest-", "@ts-", "@flow", "@jsx", "@babel", "istanbul", "c8 ignore", "eslint-"}) {
      if (comment.find(mark) != std::string_view::npos) {
        std::string text;
        for (char ch : comment) text += (ch == '\n' || ch == '\r') ? ' ' : ch;
        push(Token::literal, std::move(text), line_);
        line_start_ = false;
        return {};
      }
    }
    return {};
  }

  // Past the closing quote of the string at `at`; a line continuation may cross a newline.
  Result<size_t> string_end(size_t at) {
    const char q = s_[at];
    size_t j = at + 1;
    while (j < s_.size() && s_[j] != q) {
      if (s_[j] == '\n') return std::unexpected(unreadable(line_, "a string that does not end on its line"));
      if (s_[j] == '\\' && j + 1 < s_.size()) {
        if (s_[j + 1] == '\n') ++line_;
        j += 2;
        continue;
      }
      ++j;
    }
    if (j >= s_.size()) return std::unexpected(unreadable(line_, "a string that never ends"));
    return j + 1;
  }

  // Past the closing backtick of the template literal at `at`; its ${...} parts are code, whose
  // names go to `names`.
  Result<size_t> template_end(size_t at, std::vector<std::string>& names) {
    const int start_line = line_;
    if (++template_depth_ > kMaxNesting) return std::unexpected(unreadable(line_, "template literals nested too deep"));
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{template_depth_};
    size_t j = at + 1;
    while (j < s_.size() && s_[j] != '`') {
      if (s_[j] == '\\') {
        if (j + 1 < s_.size() && s_[j + 1] == '\n') ++line_;
        j += 2;
        continue;
      }
      if (s_[j] == '\n') ++line_;
      if (s_.substr(j, 2) == "${") {
        auto end = code_end(j + 2, names);
        if (!end) return std::unexpected(end.error());
        j = *end;
        continue;
      }
      ++j;
    }
    if (j >= s_.size()) return std::unexpected(unreadable(start_line, "a template literal that never ends"));
    return j + 1;
  }

  // Past the `}` that closes a ${...} part starting at `at`: strings, templates and comments
  // are skipped, braces counted. A slash inside is taken as a division.
  Result<size_t> code_end(size_t at, std::vector<std::string>& names) {
    int depth = 0;
    size_t j = at;
    while (j < s_.size()) {
      const char c = s_[j];
      if (c == '\n') ++line_;
      if (c == '"' || c == '\'') {
        auto end = string_end(j);
        if (!end) return std::unexpected(end.error());
        j = *end;
        continue;
      }
      if (c == '`') {
        auto end = template_end(j, names);
        if (!end) return std::unexpected(end.error());
        j = *end;
        continue;
      }
      if (c == '/' && s_.substr(j, 2) != "/*") {
        // A division or a regular expression: which one decides where the literal ends.
        return std::unexpected(unreadable(line_, "a '/' inside a template literal's ${...}"));
      }
      if (s_.substr(j, 2) == "/*") {
        const size_t end = s_.find("*/", j + 2);
        if (end == std::string_view::npos) return std::unexpected(unreadable(line_, "a comment that never ends"));
        count_lines(j, end);
        j = end + 2;
        continue;
      }
      if (ident_start(static_cast<unsigned char>(c))) {
        const size_t start = j;
        while (j < s_.size() && ident_char(static_cast<unsigned char>(s_[j]))) ++j;
        const bool member = start > 0 && s_[start - 1] == '.';
        if (!member && !keyword(s_.substr(start, j - start))) names.emplace_back(s_.substr(start, j - start));
        continue;
      }
      if (c == '{') ++depth;
      if (c == '}' && depth-- == 0) return j + 1;
      ++j;
    }
    return std::unexpected(unreadable(line_, "a template literal's ${...} that never closes"));
  }

  // Past the flags of the regular expression at `at`: `/` inside a class [...] or escaped does
  // not end it, and it may not cross a line.
  Result<size_t> regex_end(size_t at) {
    size_t j = at + 1;
    bool in_class = false;
    while (j < s_.size()) {
      const char c = s_[j];
      if (c == '\n') break;
      if (c == '\\') {
        j += 2;
        continue;
      }
      if (c == '[') in_class = true;
      if (c == ']') in_class = false;
      if (c == '/' && !in_class) {
        ++j;
        while (j < s_.size() && ident_char(static_cast<unsigned char>(s_[j]))) ++j;
        return j;
      }
      ++j;
    }
    return std::unexpected(unreadable(line_, "a regular expression that does not end on its line"));
  }

  std::string_view operator_at(size_t at) const {
    static const std::vector<std::string_view> kOps = {">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=",
                                                       "?\?=", "=>",  "==",  "!=",  "<=",  ">=",  "&&",  "||",  "??",  "?.",
                                                       "++",  "--",  "+=",  "-=",  "*=",  "/=",  "%=",  "&=",  "|=",  "^=",
                                                       "**",  "<<"};
    for (std::string_view op : kOps) {
      if (s_.substr(at, op.size()) == op) return op;
    }
    return s_.substr(at, 1);
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  bool newline_ = false;
  bool line_start_ = true;      // only white space and comments since the last line terminator
  std::vector<bool> parens_;    // open parentheses: whether each is a condition's
  bool closed_control_ = false;  // the last ')' closed a condition's
  int template_depth_ = 0;
  std::vector<Token> out_;
};

bool is_open(const Token& t) { return t.kind == Token::op && (t.text == "(" || t.text == "[" || t.text == "{"); }
bool is_close(const Token& t) { return t.kind == Token::op && (t.text == ")" || t.text == "]" || t.text == "}"); }
bool is_op(const Token& t, std::string_view text) { return t.kind == Token::op && t.text == text; }

// The index of the bracket that closes the one at `open`; `to` when none does before it.
size_t closing(const std::vector<Token>& t, size_t open, size_t to) {
  int depth = 0;
  for (size_t k = open; k < to; ++k) {
    if (is_open(t[k])) ++depth;
    else if (is_close(t[k]) && --depth == 0) return k;
  }
  return to;
}

// Normalized text: tokens joined by a space, a newline after `;`, `{` and `}`.
std::string joined(const std::vector<Token>& t, size_t from, size_t to) {
  std::string out;
  for (size_t k = from; k < to; ++k) {
    if (!out.empty() && out.back() != '\n') out += ' ';
    out += t[k].text;
    if (t[k].kind == Token::op && (t[k].text == ";" || t[k].text == "{" || t[k].text == "}")) out += '\n';
  }
  return out;
}

std::vector<std::string> reads_of(const std::vector<Token>& t, size_t from, size_t to) {
  std::set<std::string> reads;
  for (size_t k = from; k < to; ++k) {
    reads.insert(t[k].inner_names.begin(), t[k].inner_names.end());
    if (t[k].kind != Token::name || reserved(t[k].text)) continue;
    const bool member = k > from && (is_op(t[k - 1], ".") || is_op(t[k - 1], "?."));
    if (!member) reads.insert(t[k].text);
  }
  return {reads.begin(), reads.end()};
}

enum class CallKind { none, test, suite, hook };

CallKind call_kind(std::string_view callee) {
  static const std::set<std::string_view> kTests = {"test", "it", "specify", "fit", "xit", "xtest", "xspecify", "bench"};
  static const std::set<std::string_view> kSuites = {"describe", "suite", "context", "fdescribe", "xdescribe", "xcontext"};
  static const std::set<std::string_view> kHooks = {"beforeEach", "afterEach", "beforeAll", "afterAll", "before",
                                                    "after",      "setup",     "teardown",  "suiteSetup", "suiteTeardown"};
  if (kTests.contains(callee)) return CallKind::test;
  if (kSuites.contains(callee)) return CallKind::suite;
  if (kHooks.contains(callee)) return CallKind::hook;
  return CallKind::none;
}

// Whether a statement that starts a new line may be cut from the one before: the one before
// is complete (it ends in an operand) and the next does not continue it.
bool statement_ends(const Token& prev, const Token& next) {
  const bool complete = prev.kind != Token::op || prev.text == ")" || prev.text == "]" || prev.text == "}" || prev.text == "++" ||
                        prev.text == "--";
  if (!complete || (prev.kind == Token::name && keyword(prev.text) && prev.text != "this" && prev.text != "super" &&
                    prev.text != "true" && prev.text != "false" && prev.text != "null" && prev.text != "undefined")) {
    return false;
  }
  if (next.kind == Token::name) {
    static const std::set<std::string_view> kContinues = {"else", "catch", "finally", "instanceof", "in", "of", "as", "satisfies",
                                                          "extends", "implements", "while"};
    return !kContinues.contains(next.text);
  }
  if (next.kind == Token::literal) return next.text[0] != '`';  // a template right after is tagged
  return next.text == "{" || next.text == "!" || next.text == "~" || next.text == "++" || next.text == "--" || next.text == "@" ||
         next.text == "#" || next.text == ";";
}

// The most statements one scope may hold: far past any real test file, and a bound on what
// comparing two versions costs.
constexpr size_t kMaxUnits = 10'000;

// Whether a call of `name` is the test runner's (a test, suite or hook, jest's or vitest's
// object): a declaration whose value makes one is code that runs, not a binding.
bool runner_call(std::string_view name) {
  return call_kind(name) != CallKind::none || name == "jest" || name == "vi" || name == "only";
}

class ScopeReader {
 public:
  explicit ScopeReader(const std::vector<Token>& t, int depth = 0) : t_(t), depth_(depth) {}

  Result<std::vector<SourceUnit>> read(size_t from, size_t to) {
    if (depth_ > kMaxNesting) return std::unexpected(unreadable(from < t_.size() ? t_[from].line : 1, "suites nested too deep"));
    std::vector<SourceUnit> out;
    int depth = 0;
    size_t start = from;
    size_t decl_body = 0;  // a declaration's body opens here, at depth 1: the statement ends where it closes
    for (size_t k = from; k < to; ++k) {
      const Token& tok = t_[k];
      if (k > start && depth == 0 && tok.newline_before && statement_ends(t_[k - 1], tok)) {
        if (auto st = emit(start, k, out); !st) return std::unexpected(st.error());
        start = k;
        decl_body = 0;
      }
      if (depth == 0 && is_op(tok, "{") && k > start && declaration_head(start, k)) decl_body = k;
      if (is_open(tok)) {
        ++depth;
      } else if (is_close(tok)) {
        if (--depth < 0) return std::unexpected(unreadable(tok.line, "an unmatched '" + tok.text + "'"));
        if (depth == 0 && decl_body && tok.text == "}") {
          const size_t end = k + 1 < to && is_op(t_[k + 1], ";") ? k + 2 : k + 1;
          if (auto st = emit(start, end, out); !st) return std::unexpected(st.error());
          start = end;
          k = end - 1;
          decl_body = 0;
          continue;
        }
      }
      if (depth == 0 && is_op(tok, ";")) {
        if (k > start) {
          if (auto st = emit(start, k + 1, out); !st) return std::unexpected(st.error());
        }
        start = k + 1;
        decl_body = 0;
      }
    }
    if (depth != 0) return std::unexpected(unreadable(to > from ? t_[to - 1].line : 1, "a bracket opened and never closed"));
    if (start < to) {
      if (auto st = emit(start, to, out); !st) return std::unexpected(st.error());
    }
    if (out.size() > kMaxUnits) return std::unexpected(unreadable(t_[from].line, "more than 10000 statements in one scope"));
    return out;
  }

 private:
  // Past `export`, `export default`, `declare`, `async`, `abstract`.
  size_t past_modifiers(size_t k, size_t to) const {
    while (k < to && t_[k].kind == Token::name &&
           (t_[k].text == "export" || t_[k].text == "default" || t_[k].text == "declare" || t_[k].text == "async" ||
            t_[k].text == "abstract")) {
      ++k;
    }
    return k;
  }

  // Whether the statement from `start` is a function, class or other declaration whose body
  // opens at `brace` (and ends the statement when it closes).
  // `brace` is at the statement's top level (the reader only asks there), so brackets before it,
  // in a class's heritage or a function's parameters and return type, are closed.
  bool declaration_head(size_t start, size_t brace) const {
    const size_t k = past_modifiers(start, brace);
    if (k + 1 >= brace || t_[k].kind != Token::name) return false;
    const std::string& w = t_[k].text;
    if (w == "function") {
      for (size_t m = k + 1; m < brace; ++m) {
        if (is_op(t_[m], ")")) return true;  // the body follows the parameters (and a return type)
      }
      return false;
    }
    return (w == "class" || w == "interface" || w == "enum" || w == "namespace" || w == "module") && t_[k + 1].kind == Token::name;
  }

  // Whether `[from, to)` calls the test runner: a test, suite or hook, or jest's or vi's object.
  bool calls_runner(size_t from, size_t to) const {
    for (size_t k = from; k < to; ++k) {
      if (t_[k].kind == Token::name && runner_call(t_[k].text) && !(k > from && is_op(t_[k - 1], ".") && t_[k].text != "only")) {
        return true;
      }
    }
    return false;
  }

  // Whether a declaration's values, outside the functions and objects they define, delete or
  // assign something: `const x = delete process.env.X` is code that runs, not a binding.
  bool initializer_mutates(size_t k, size_t to) const {
    static const std::set<std::string_view> kAssign = {"=",  "+=", "-=", "*=",  "/=",  "%=",  "**=", "<<=", ">>=",
                                                       ">>>=", "&=", "|=", "^=", "&&=", "||=", "?\?=", "++",  "--"};
    bool in_value = false;  // past the declarator's own `=`
    int depth = 0;
    for (size_t m = k; m < to; ++m) {
      const Token& t = t_[m];
      if (is_op(t, "{")) {
        m = closing(t_, m, to);  // a function's body or an object: runs later, or defines
        continue;
      }
      if (is_open(t)) ++depth;
      if (is_close(t)) --depth;
      if (depth == 0 && is_op(t, ",")) in_value = false;
      if (t.kind == Token::name && t.text == "delete" && in_value) return true;
      if (t.kind == Token::op && kAssign.contains(t.text)) {
        if (in_value || depth > 0) return true;
        in_value = true;
      }
    }
    return false;
  }

  // A class whose declaration runs code when the file loads: a static block or field, or a
  // heritage that is not a plain (dotted) name.
  bool class_runs_code(size_t k, size_t to) const {
    for (size_t m = k; m < to; ++m) {
      if (is_op(t_[m], "@")) return true;  // a decorator runs when the class is defined
      if (t_[m].kind != Token::name) continue;
      if (t_[m].text == "static" && m + 1 < to && (is_op(t_[m + 1], "{") || (m + 2 < to && is_op(t_[m + 2], "=")))) return true;
      if (t_[m].text == "extends") {
        size_t n = m + 1;
        while (n < to && (t_[n].kind == Token::name || is_op(t_[n], "."))) ++n;
        if (n >= to || !is_op(t_[n], "{") || n == m + 1) return true;
      }
    }
    return false;
  }

  // `const {a, b} = require('m')` or `const m = require('m')`: the literal naming the module.
  std::optional<std::string> required_module(size_t k, size_t to) const {
    size_t eq = k;
    while (eq < to && !is_op(t_[eq], "=")) eq = is_open(t_[eq]) ? closing(t_, eq, to) + 1 : eq + 1;
    size_t end = to;
    if (end > eq && is_op(t_[end - 1], ";")) --end;
    if (eq + 5 == end && t_[eq + 1].kind == Token::name && t_[eq + 1].text == "require" && is_op(t_[eq + 2], "(") &&
        t_[eq + 3].kind == Token::literal && t_[eq + 3].text[0] != '`' && is_op(t_[eq + 4], ")")) {
      return t_[eq + 3].text;
    }
    return std::nullopt;
  }

  Status emit(size_t from, size_t to, std::vector<SourceUnit>& out) {
    if (from >= to) return {};
    SourceUnit u;
    u.line = t_[from].line;
    u.text = joined(t_, from, to);
    u.reads = reads_of(t_, from, to);
    u.key = u.text;
    const size_t k = past_modifiers(from, to);
    const std::string head = k < to && t_[k].kind == Token::name ? t_[k].text : std::string();
    const bool named = k + 1 < to && t_[k + 1].kind == Token::name;  // `head NAME`, not `head(` or `head.x`
    const size_t name_at = k + 1 < to && is_op(t_[k + 1], "*") ? k + 2 : k + 1;  // function*
    if (head == "import" && k + 1 < to && !is_op(t_[k + 1], "(") && !is_op(t_[k + 1], ".")) {
      u.kind = SourceUnit::Kind::import;
      import_binds(k + 1, to, u);
    } else if ((head == "function" || head == "class") && name_at < to && t_[name_at].kind == Token::name) {
      // Hoisted or not, a declaration runs nothing, unless a class's static parts or heritage do.
      u.kind = head == "class" && class_runs_code(k, to) ? SourceUnit::Kind::statement : SourceUnit::Kind::function;
      u.name = t_[name_at].text;
      u.binds = {u.name};
      u.key = head + " " + u.name;
    } else if ((head == "interface" || head == "enum" || head == "type") && named && !calls_runner(k, to) &&
               (head != "enum" || std::none_of(t_.begin() + static_cast<long>(k), t_.begin() + static_cast<long>(to),
                                               [](const Token& t) { return is_op(t, "("); }))) {
      // Types are erased; an enum runs only its initializers, none of them a call here.
      u.kind = SourceUnit::Kind::binding;
      u.name = t_[k + 1].text;
      u.binds = {u.name};
      u.key = head + " " + u.name;
    } else if ((head == "const" || head == "let" || head == "var" || head == "using") && k + 1 < to &&
               (named || is_op(t_[k + 1], "{") || is_op(t_[k + 1], "[")) && !calls_runner(k, to) && !initializer_mutates(k + 1, to)) {
      declared_names(k + 1, to, false, u.binds);
      if (std::optional<std::string> module = required_module(k + 1, to); module && !u.binds.empty()) {
        // A require is an import: one that gains names keeps the others as they were.
        u.kind = SourceUnit::Kind::import;
        u.import_module = *module;
        u.key = "require " + *module;
      } else {
        u.kind = SourceUnit::Kind::binding;
        u.key = head;
        for (const std::string& b : u.binds) u.key += " " + b;
      }
    } else if (auto st = read_call(from, to, u); !st) {
      return st;
    }
    out.push_back(std::move(u));
    return {};
  }

  // `import a, {b, c as d} from 'm'`, `import * as ns from 'm'`, `import 'm'`, `import x = require('m')`:
  // each name bound is the last of its specifier (`c as d` binds d, `from as f` binds f).
  void import_binds(size_t k, size_t to, SourceUnit& u) const {
    std::set<std::string> binds;
    int depth = 0;
    for (; k < to; ++k) {
      const Token& t = t_[k];
      if (is_open(t)) ++depth;
      if (is_close(t)) --depth;
      if (depth == 0 && t.kind == Token::name && t.text == "from" && !(k > 0 && t_[k - 1].kind == Token::name && t_[k - 1].text == "as")) {
        break;
      }
      if (depth == 0 && is_op(t, "=")) break;  // import x = require(...)
      if (t.kind != Token::name) continue;
      const bool next_as = k + 1 < to && t_[k + 1].kind == Token::name && t_[k + 1].text == "as";
      const bool last_of_specifier = k + 1 >= to || is_op(t_[k + 1], ",") || is_op(t_[k + 1], "}") ||
                                     (t_[k + 1].kind == Token::name && t_[k + 1].text == "from") || is_op(t_[k + 1], "=");
      const bool type_word = t.text == "type" && k + 1 < to && t_[k + 1].kind == Token::name && !next_as;
      if (last_of_specifier && !type_word) binds.insert(t.text);
    }
    u.binds.assign(binds.begin(), binds.end());
    for (size_t m = k; m < to; ++m) {
      if (t_[m].kind == Token::literal) {
        u.import_module = t_[m].text;
        break;
      }
    }
    u.key = "import " + (u.import_module.empty() ? u.text : u.import_module);
  }

  // The names a `const`/`let`/`var` declaration binds: each declarator's name, or the names in
  // its destructuring pattern (property keys and default values left out).
  void declared_names(size_t k, size_t to, bool type_alias, std::vector<std::string>& binds) const {
    std::set<std::string> names;
    bool expecting = true;  // at the start of a declarator
    for (; k < to; ++k) {
      const Token& tok = t_[k];
      if (expecting) {
        expecting = false;
        if (tok.kind == Token::name) {
          names.insert(tok.text);
        } else if (is_op(tok, "{") || is_op(tok, "[")) {
          const size_t end = closing(t_, k, to);
          bool in_default = false;
          for (size_t m = k + 1; m < end; ++m) {
            if (is_op(t_[m], ",")) in_default = false;
            if (is_op(t_[m], "=")) in_default = true;
            if (t_[m].kind != Token::name || in_default) continue;
            if (m + 1 < end && is_op(t_[m + 1], ":")) continue;  // a property key
            names.insert(t_[m].text);
          }
          k = end;
        }
        if (type_alias) break;
        continue;
      }
      if (is_open(tok)) {
        k = closing(t_, k, to);  // an initializer's brackets hide their commas
        continue;
      }
      if (is_op(tok, ",")) expecting = true;
    }
    binds.assign(names.begin(), names.end());
  }

  // A call of a test, suite or hook: `NAME(.NAME)* (args) [(args) ...] [;]` and nothing else;
  // else a plain statement.
  Status read_call(size_t from, size_t to, SourceUnit& u) {
    u.kind = SourceUnit::Kind::statement;
    size_t end = to;
    if (end > from && is_op(t_[end - 1], ";")) --end;
    if (t_[from].kind != Token::name) return {};
    const CallKind kind = call_kind(t_[from].text);
    if (kind == CallKind::none) return {};
    size_t k = from + 1;
    while (k + 1 < end && is_op(t_[k], ".") && t_[k + 1].kind == Token::name) k += 2;
    size_t last_open = end;
    while (k < end && is_op(t_[k], "(")) {
      const size_t close = closing(t_, k, end);
      if (close == end) return {};
      last_open = k;
      k = close + 1;
    }
    if (k != end || last_open == end) return {};
    const size_t close = closing(t_, last_open, end);
    if (kind == CallKind::hook) {
      u.key = "hook " + u.text;
      return {};
    }
    // The title: the first argument of the last call.
    size_t title_end = last_open + 1;
    while (title_end < close && !is_op(t_[title_end], ",")) {
      title_end = is_open(t_[title_end]) ? closing(t_, title_end, close) + 1 : title_end + 1;
    }
    std::string title = joined(t_, last_open + 1, title_end);
    if (title.size() >= 2 && (title[0] == '\'' || title[0] == '"' || title[0] == '`') && title.back() == title[0] &&
        title_end == last_open + 2) {
      title = title.substr(1, title.size() - 2);
    }
    u.name = title;
    if (kind == CallKind::test) {
      u.kind = SourceUnit::Kind::function;
      u.key = "test " + title;
      return {};
    }
    // A suite: its members are the statements of the callback that is its last argument,
    // `() => {...}` or `function () {...}` (a trailing comma allowed). A suite whose callback is
    // anything else runs code this reader does not take apart: it stays a statement.
    u.name.clear();
    u.key = u.text;
    size_t body_end = close - 1;
    if (body_end > last_open && is_op(t_[body_end], ",")) --body_end;
    if (body_end <= last_open || !is_op(t_[body_end], "}")) return {};
    size_t open = body_end;
    for (int depth = 0; open > last_open; --open) {
      if (is_close(t_[open])) ++depth;
      else if (is_open(t_[open]) && --depth == 0) break;
    }
    if (open <= last_open + 1 || !is_op(t_[open], "{") || !(is_op(t_[open - 1], "=>") || is_op(t_[open - 1], ")"))) return {};
    auto members = ScopeReader(t_, depth_ + 1).read(open + 1, body_end);
    if (!members) return std::unexpected(members.error());
    u.kind = SourceUnit::Kind::klass;
    u.name = title;
    u.key = "suite " + title;
    u.members = std::move(*members);
    // The suite's own text is its header: what its members are is theirs.
    u.text = joined(t_, from, open + 1) + " ... " + joined(t_, body_end, to);
    return {};
  }

  const std::vector<Token>& t_;
  int depth_;  // how many suites enclose this scope
};

}  // namespace

Result<std::vector<SourceUnit>> read_javascript_structure(std::string_view text) {
  auto tokens = Tokenizer(text).run();
  if (!tokens) return std::unexpected(tokens.error());
  return ScopeReader(*tokens).read(0, tokens->size());
}

}  // namespace warden::kernel
