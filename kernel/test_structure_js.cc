// The JavaScript and TypeScript reader of test_structure.h. Its own tokenizer (a slash that
// starts a regular expression is told from a division by the token before it; template
// literals are read with their ${...} parts nested) and one way of cutting a scope into
// statements: at `;`, at a newline where the statement is complete, and after the body of a
// function or class declaration. A call of a test function (test, it, ...) with its title is
// a test; a call of a suite (describe, ...) is a class whose members are the statements of its
// callback; a hook (beforeEach, ...) is a statement, so a new one around the base's tests is
// new code that runs. Everything else is an import, a declaration, or a statement.
#include <algorithm>
#include <cctype>
#include <set>

#include "kernel/test_structure.h"

namespace warden::kernel {
namespace {

struct Token {
  enum Kind { name, literal, op } kind;
  std::string text;
  int line = 0;
  bool newline_before = false;
  std::vector<std::string> inner_names = {};  // a template literal: the names its ${...} parts read
};

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
    if (s_.starts_with("#!")) i_ = s_.find('\n') == std::string_view::npos ? s_.size() : s_.find('\n');
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        newline_ = true;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
        continue;
      }
      if (s_.substr(i_, 2) == "//") {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (s_.substr(i_, 2) == "/*") {
        const size_t end = s_.find("*/", i_ + 2);
        if (end == std::string_view::npos) return std::unexpected(unreadable(line_, "a comment that never ends"));
        count_lines(i_, end);
        i_ = end + 2;
        continue;
      }
      const int at = line_;
      if (ident_start(static_cast<unsigned char>(c))) {
        const size_t start = i_;
        while (i_ < s_.size() && ident_char(static_cast<unsigned char>(s_[i_]))) ++i_;
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
      if (c == '/' && regex_may_start()) {
        auto end = regex_end(i_);
        if (!end) return std::unexpected(end.error());
        push(Token::literal, std::string(s_.substr(i_, *end - i_)), at);
        i_ = *end;
        continue;
      }
      push(Token::op, std::string(operator_at(i_)), at);
      i_ += out_.back().text.size();
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
    return prev.text != ")" && prev.text != "]" && prev.text != "++" && prev.text != "--";
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
      if (s_.substr(j, 2) == "//") return std::unexpected(unreadable(line_, "a line comment inside a template literal's ${...}"));
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
    if (t[k].kind != Token::name || keyword(t[k].text)) continue;
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

class ScopeReader {
 public:
  explicit ScopeReader(const std::vector<Token>& t) : t_(t) {}

  Result<std::vector<SourceUnit>> read(size_t from, size_t to) {
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
  bool declaration_head(size_t start, size_t brace) const {
    const size_t k = past_modifiers(start, brace);
    if (k >= brace || t_[k].kind != Token::name) return false;
    const std::string& w = t_[k].text;
    if (w == "function") return brace > k && is_op(t_[brace - 1], ")");
    if (w == "class" || w == "interface" || w == "enum" || w == "namespace" || w == "module") {
      // The first brace at the top of the statement: the class body (its heritage may call).
      for (size_t m = k; m < brace; ++m) {
        if (is_open(t_[m])) return false;
      }
      return true;
    }
    return false;
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
    if (head == "import" && k + 1 < to && !is_op(t_[k + 1], "(") && !is_op(t_[k + 1], ".")) {
      u.kind = SourceUnit::Kind::import;
      import_binds(k + 1, to, u);
    } else if (head == "function" || head == "class" || head == "interface" || head == "enum" || head == "namespace") {
      u.kind = head == "function" || head == "class" ? SourceUnit::Kind::function : SourceUnit::Kind::binding;
      size_t n = k + 1;
      if (n < to && is_op(t_[n], "*")) ++n;  // function*
      if (n < to && t_[n].kind == Token::name) {
        u.name = t_[n].text;
        u.binds = {u.name};
        u.key = head + " " + u.name;
      }
    } else if (head == "const" || head == "let" || head == "var" || head == "type" || (head == "using" && k + 1 < to)) {
      u.kind = SourceUnit::Kind::binding;
      declared_names(k + 1, to, head == "type", u.binds);
      if (!u.binds.empty()) {
        u.key = head;
        for (const std::string& b : u.binds) u.key += " " + b;
      }
    } else if (auto st = read_call(from, to, u); !st) {
      return st;
    }
    out.push_back(std::move(u));
    return {};
  }

  // `import a, {b, c as d} from 'm'`, `import * as ns from 'm'`, `import 'm'`, `import x = require('m')`.
  void import_binds(size_t k, size_t to, SourceUnit& u) const {
    std::set<std::string> binds;
    for (; k < to; ++k) {
      if (t_[k].kind == Token::name && t_[k].text == "from") break;
      if (t_[k].kind != Token::name || t_[k].text == "type" || t_[k].text == "as" || t_[k].text == "typeof") continue;
      const bool renamed = k + 1 < to && t_[k + 1].kind == Token::name && t_[k + 1].text == "as";
      if (!renamed) binds.insert(t_[k].text);
      if (k + 1 < to && is_op(t_[k + 1], "=")) break;  // import x = require(...)
    }
    u.binds.assign(binds.begin(), binds.end());
    for (size_t m = k; m < to; ++m) {
      if (t_[m].kind == Token::literal) {
        u.import_module = t_[m].text;
        break;
      }
    }
    u.key = "import " + u.text;
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
    // `() => {...}` or `function () {...}`.
    u.kind = SourceUnit::Kind::klass;
    u.key = "suite " + title;
    if (close < 2 || !is_op(t_[close - 1], "}")) return {};
    size_t open = close - 1;
    for (int depth = 0; open > last_open; --open) {
      if (is_close(t_[open])) ++depth;
      else if (is_open(t_[open]) && --depth == 0) break;
    }
    if (open <= last_open + 1 || !is_op(t_[open], "{") || !(is_op(t_[open - 1], "=>") || is_op(t_[open - 1], ")"))) return {};
    auto members = ScopeReader(t_).read(open + 1, close - 1);
    if (!members) return std::unexpected(members.error());
    u.members = std::move(*members);
    // The suite's own text is its header: what its members are is theirs.
    u.text = joined(t_, from, open + 1) + " ... " + joined(t_, close - 1, to);
    return {};
  }

  const std::vector<Token>& t_;
};

}  // namespace

Result<std::vector<SourceUnit>> read_javascript_structure(std::string_view text) {
  auto tokens = Tokenizer(text).run();
  if (!tokens) return std::unexpected(tokens.error());
  return ScopeReader(*tokens).read(0, tokens->size());
}

}  // namespace warden::kernel
