// The C, C++ and Go readers of test_structure.h, and the reader chosen by a path. One
// tokenizer (comments, strings, character literals, C++ raw strings, Go raw strings,
// preprocessor lines) and two ways of cutting the top level into units: C and C++ at `;` and
// at the brace that closes a function body (namespaces and extern "C" blocks are looked
// through), Go at a newline outside brackets.
#include <algorithm>
#include <cctype>
#include <set>

#include "kernel/judge/test_structure.h"

namespace warden::kernel {
namespace {

enum class Lang { c, go };

struct Token {
  enum Kind { name, literal, op, directive } kind;
  std::string text;
  int line = 0;
  bool newline_before = false;  // Go: a newline came between this token and the one before
};

Error unreadable(int line, std::string why) {
  return Error{Errc::invalid_argument, "line " + std::to_string(line) + ": " + why};
}

bool ident_start(unsigned char c) { return c == '_' || std::isalpha(c) || c >= 0x80 || c == '$'; }
bool ident_char(unsigned char c) { return ident_start(c) || std::isdigit(c); }

Result<std::vector<Token>> tokenize(std::string_view s, Lang lang) {
  std::vector<Token> out;
  size_t i = 0;
  int line = 1;
  bool line_start = true;  // only whitespace since the last newline (for '#')
  bool newline = false;
  auto push = [&](Token::Kind kind, std::string text, int at) {
    out.push_back({kind, std::move(text), at, newline});
    newline = false;
    line_start = false;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      line_start = true;
      newline = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
      i += s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n' ? 3 : 2;
      ++line;
      continue;
    }
    if (s.substr(i, 2) == "//") {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (s.substr(i, 2) == "/*") {
      const int at = line;
      size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) return std::unexpected(unreadable(at, "a comment that never ends"));
      line += static_cast<int>(std::count(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(end), '\n'));
      i = end + 2;
      continue;
    }
    if (lang == Lang::c && c == '#' && line_start) {
      // A preprocessor line, continuations joined, comments dropped, whitespace collapsed.
      const int at = line;
      std::string text;
      bool space = false;
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
          i += s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n' ? 3 : 2;
          ++line;
          space = true;
          continue;
        }
        if (s.substr(i, 2) == "//") {
          while (i < s.size() && s[i] != '\n') ++i;
          break;
        }
        if (s.substr(i, 2) == "/*") {
          size_t end = s.find("*/", i + 2);
          if (end == std::string_view::npos) return std::unexpected(unreadable(at, "a comment that never ends"));
          line += static_cast<int>(std::count(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(end), '\n'));
          i = end + 2;
          space = true;
          continue;
        }
        if (std::isspace(static_cast<unsigned char>(s[i]))) {
          space = true;
          ++i;
          continue;
        }
        if (space && !text.empty()) text += ' ';
        space = false;
        text += s[i++];
      }
      push(Token::directive, std::move(text), at);
      line_start = true;
      continue;
    }
    const int at = line;
    if (ident_start(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < s.size() && ident_char(static_cast<unsigned char>(s[i]))) ++i;
      std::string_view word = s.substr(start, i - start);
      // C++ raw strings: R"delim( ... )delim", with an encoding prefix or none.
      if (lang == Lang::c && i < s.size() && s[i] == '"' && (word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R")) {
        size_t open = s.find('(', i);
        if (open == std::string_view::npos) return std::unexpected(unreadable(at, "a raw string without its '('"));
        std::string close = ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
        size_t end = s.find(close, open);
        if (end == std::string_view::npos) return std::unexpected(unreadable(at, "a raw string that never ends"));
        end += close.size();
        line += static_cast<int>(std::count(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(end), '\n'));
        push(Token::literal, std::string(s.substr(start, end - start)), at);
        i = end;
        continue;
      }
      if (lang == Lang::c && i < s.size() && (s[i] == '"' || s[i] == '\'') && (word == "L" || word == "u" || word == "U" || word == "u8")) {
        // An encoding prefix: the literal follows; read it with the prefix.
        const char q = s[i];
        size_t j = i + 1;
        while (j < s.size() && s[j] != q && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
        if (j >= s.size() || s[j] != q) return std::unexpected(unreadable(at, "a literal that does not end on its line"));
        push(Token::literal, std::string(s.substr(start, j + 1 - start)), at);
        i = j + 1;
        continue;
      }
      push(Token::name, std::string(word), at);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t start = i;
      while (i < s.size()) {
        const char d = s[i];
        if (std::isalnum(static_cast<unsigned char>(d)) || d == '_' || d == '.' || (d == '\'' && lang == Lang::c)) {
          ++i;
        } else if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
          ++i;
        } else {
          break;
        }
      }
      push(Token::literal, std::string(s.substr(start, i - start)), at);
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      if (j >= s.size() || s[j] != c) return std::unexpected(unreadable(at, "a literal that does not end on its line"));
      push(Token::literal, std::string(s.substr(i, j + 1 - i)), at);
      i = j + 1;
      continue;
    }
    if (c == '`' && lang == Lang::go) {
      size_t end = s.find('`', i + 1);
      if (end == std::string_view::npos) return std::unexpected(unreadable(at, "a raw string that never ends"));
      line += static_cast<int>(std::count(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(end), '\n'));
      push(Token::literal, std::string(s.substr(i, end + 1 - i)), at);
      i = end + 1;
      continue;
    }
    static constexpr std::string_view kOps[] = {"<<=", ">>=", "...", "&^=", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=",
                                                 "==",  "!=",  "&&",  "||",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", ":=",
                                                 "<-",  "&^",  ".*",  "##"};
    bool matched = false;
    for (std::string_view op : kOps) {
      if (s.substr(i, op.size()) == op) {
        push(Token::op, std::string(op), at);
        i += op.size();
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string_view("{}()[];,.<>+-*/%&|^!~?:=#@").find(c) != std::string_view::npos) {
      push(Token::op, std::string(1, c), at);
      ++i;
      continue;
    }
    return std::unexpected(unreadable(at, std::string("a character the reader has no token for: '") + c + "'"));
  }
  return out;
}

bool is_open(const Token& t) { return t.kind == Token::op && (t.text == "(" || t.text == "[" || t.text == "{"); }
bool is_close(const Token& t) { return t.kind == Token::op && (t.text == ")" || t.text == "]" || t.text == "}"); }

bool c_keyword(std::string_view w) {
  static const std::set<std::string_view> kWords = {
      "auto",     "break",    "case",   "char",     "const",   "continue", "default", "do",      "double", "else",
      "enum",     "extern",   "float",  "for",      "goto",    "if",       "inline",  "int",     "long",   "register",
      "restrict", "return",   "short",  "signed",   "sizeof",  "static",   "struct",  "switch",  "typedef", "union",
      "unsigned", "void",     "volatile", "while",  "bool",    "class",    "namespace", "template", "typename", "using",
      "public",   "private",  "protected", "virtual", "override", "final", "constexpr", "noexcept", "operator", "new",
      "delete",   "this",     "true",   "false",    "nullptr", "func",     "package", "import",  "var",    "type",
      "go",       "defer",    "range",  "map",      "chan",    "interface", "select", "fallthrough", "nil"};
  return kWords.contains(w);
}

// Normalized text: tokens joined by a space, a newline after `;`, `{` and `}` so a body reads
// one statement a line.
std::string joined(const std::vector<Token>& tokens, size_t from, size_t to) {
  std::string out;
  for (size_t k = from; k < to; ++k) {
    const Token& t = tokens[k];
    if (t.kind == Token::directive) {
      if (!out.empty() && out.back() != '\n') out += '\n';
      out += t.text + "\n";
      continue;
    }
    if (!out.empty() && out.back() != '\n') out += ' ';
    out += t.text;
    if (t.kind == Token::op && (t.text == ";" || t.text == "{" || t.text == "}")) out += '\n';
  }
  return out;
}

std::vector<std::string> reads_of(const std::vector<Token>& tokens, size_t from, size_t to) {
  std::set<std::string> reads;
  for (size_t k = from; k < to; ++k) {
    const Token& t = tokens[k];
    if (t.kind != Token::name || c_keyword(t.text)) continue;
    const bool member = k > from && tokens[k - 1].kind == Token::op && (tokens[k - 1].text == "." || tokens[k - 1].text == "->");
    reads.insert(member ? "." + t.text : t.text);
  }
  return {reads.begin(), reads.end()};
}

bool all_caps(std::string_view w) {
  return std::none_of(w.begin(), w.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
         std::any_of(w.begin(), w.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
}

SourceUnit directive_unit(const Token& t) {
  SourceUnit u;
  u.line = t.line;
  u.text = t.text;
  u.key = t.text;
  std::string_view rest = t.text;
  rest.remove_prefix(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  auto word = [&]() {
    size_t n = 0;
    while (n < rest.size() && ident_char(static_cast<unsigned char>(rest[n]))) ++n;
    std::string w(rest.substr(0, n));
    rest.remove_prefix(n);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return w;
  };
  const std::string directive = word();
  if (directive == "include" || directive == "import") {
    u.kind = SourceUnit::Kind::import;
  } else if (directive == "define") {
    u.kind = SourceUnit::Kind::binding;
    std::string name = word();
    u.binds = {name};
    u.key = "#define " + name;
  } else if (directive == "undef") {
    u.kind = SourceUnit::Kind::mutation;
    u.binds = {word()};
  } else {
    u.kind = SourceUnit::Kind::statement;
  }
  // Identifiers a directive reads (a #define's body, an #if's condition).
  std::string ident;
  std::set<std::string> reads;
  for (char ch : std::string(rest) + " ") {
    if (ident_char(static_cast<unsigned char>(ch))) {
      ident += ch;
    } else {
      if (!ident.empty() && !std::isdigit(static_cast<unsigned char>(ident[0]))) reads.insert(ident);
      ident.clear();
    }
  }
  u.reads.assign(reads.begin(), reads.end());
  return u;
}

// A C or C++ unit of tokens [from, to): a function definition when `body` (the index of its
// body's '{') is set, else a declaration.
SourceUnit c_unit(const std::vector<Token>& t, size_t from, size_t to, std::optional<size_t> body, const std::string& scope) {
  SourceUnit u;
  u.line = t[from].line;
  u.text = joined(t, from, to);
  u.reads = reads_of(t, from, to);
  const size_t head_end = body ? *body : to;
  // The name: the identifier before the first '(' at depth 0 of the head, with its `::`
  // qualifiers; for a test macro (TEST(Suite, Name)) the whole head.
  std::optional<size_t> paren;
  std::optional<size_t> assign;
  int depth = 0;
  for (size_t k = from; k < head_end; ++k) {
    if (is_open(t[k])) {
      // A definition is named by its last parameter list (`CJSON_PUBLIC(char *) read_file(...)`
      // is read_file), a declaration by its first.
      if (depth == 0 && t[k].text == "(" && !assign && (body || !paren)) paren = k;
      ++depth;
    } else if (is_close(t[k])) {
      --depth;
    } else if (depth == 0 && t[k].kind == Token::op && t[k].text == "=" && !assign) {
      assign = k;
    }
  }
  if (body) {
    u.kind = SourceUnit::Kind::function;
    if (paren && *paren > from && t[*paren - 1].kind == Token::name) {
      size_t k = *paren - 1;
      // A test macro (TEST(Suite, Name), Criterion's Test(suite, name)): a head with no return
      // type, or an all-caps name, is named by the whole head.
      if (all_caps(t[k].text) || k == from) {
        u.name = joined(t, k, head_end);
        while (!u.name.empty() && (u.name.back() == ' ' || u.name.back() == '\n')) u.name.pop_back();
      } else {
        u.name = t[k].text;
        while (k >= from + 2 && t[k - 1].text == "::" && t[k - 2].kind == Token::name) {
          k -= 2;
          u.name = t[k].text + "::" + u.name;
        }
      }
    } else {
      u.name = joined(t, from, head_end);
    }
    u.key = "fn " + scope + u.name;
    u.binds = {u.name};
    return u;
  }
  // A declaration: what it declares are the identifiers just before '=', '[', '(', ',' or
  // the end, at depth 0 (`int a = 1, b[2];`, `static void f(void);`, `TEST_GROUP(x);`).
  std::set<std::string> names;
  depth = 0;
  for (size_t k = from; k < to; ++k) {
    if (is_open(t[k])) {
      if (depth == 0 && k > from && t[k - 1].kind == Token::name && t[k].text != "{") names.insert(t[k - 1].text);
      ++depth;
      continue;
    }
    if (is_close(t[k])) {
      --depth;
      continue;
    }
    if (depth != 0 || t[k].kind != Token::op) continue;
    if ((t[k].text == "=" || t[k].text == "," || t[k].text == ";") && k > from && t[k - 1].kind == Token::name) {
      names.insert(t[k - 1].text);
    }
  }
  for (auto it = names.begin(); it != names.end();) it = c_keyword(*it) ? names.erase(it) : std::next(it);
  // struct/class/union/enum NAME { ... }; (a fixture class, a parameter struct): it declares NAME.
  for (size_t k = from; k + 1 < to; ++k) {
    if (t[k].kind == Token::op && (t[k].text == "{" || t[k].text == "(" || t[k].text == "=")) break;
    const std::string& w = t[k].text;
    if ((w == "struct" || w == "class" || w == "union" || w == "enum") && t[k + 1].kind == Token::name) {
      names.insert(t[k + 1].text);
      break;
    }
  }
  u.binds.assign(names.begin(), names.end());
  if (u.binds.empty()) {
    u.kind = SourceUnit::Kind::statement;
    u.key = u.text;
  } else {
    u.kind = SourceUnit::Kind::binding;
    u.key = "decl " + scope;
    for (const auto& n : u.binds) u.key += n + " ";
  }
  return u;
}

// Whether a brace at depth 0 of the unit [from, k) opens a definition's body (a function, a
// test macro) rather than an initializer or a struct/enum/union/class body.
bool opens_function_body(const std::vector<Token>& t, size_t from, size_t k) {
  int depth = 0;
  for (size_t m = from; m < k; ++m) {
    if (is_open(t[m])) ++depth;
    else if (is_close(t[m])) --depth;
    else if (depth == 0 && t[m].kind == Token::op && t[m].text == "=") return false;
    else if (depth == 0 && t[m].kind == Token::name &&
             (t[m].text == "struct" || t[m].text == "union" || t[m].text == "enum" || t[m].text == "class" || t[m].text == "typedef")) {
      // `struct s f(void) {` returns a struct: a function when a ')' comes before the brace.
      bool call = false;
      for (size_t n = m; n < k; ++n) call = call || (t[n].kind == Token::op && t[n].text == ")");
      if (!call) return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<SourceUnit>> read_c_structure(std::string_view text) {
  auto tokens = tokenize(text, Lang::c);
  if (!tokens) return std::unexpected(tokens.error());
  const std::vector<Token>& t = *tokens;
  std::vector<SourceUnit> out;
  std::vector<std::string> scopes;  // open namespaces and extern "C" blocks, looked through
  std::string scope;
  size_t from = 0;
  int depth = 0;
  std::vector<char> open;
  std::optional<size_t> body;
  for (size_t k = 0; k < t.size(); ++k) {
    const Token& tok = t[k];
    if (tok.kind == Token::directive) {
      if (depth == 0 && k == from) {
        out.push_back(directive_unit(tok));
        from = k + 1;
      }
      continue;
    }
    if (depth == 0 && k == from && tok.kind == Token::op && tok.text == ";") {
      from = k + 1;  // a stray ';' after a body
      continue;
    }
    if (depth == 0 && tok.kind == Token::op && tok.text == "}" && !scopes.empty() && k == from) {
      scopes.pop_back();
      scope.clear();
      for (const auto& s : scopes) scope += s;
      from = k + 1;
      continue;
    }
    if (depth == 0 && tok.kind == Token::op && tok.text == "{") {
      // namespace [name] { ... } and extern "C" { ... }: their contents are top level.
      const bool ns = k > from && t[from].text == "namespace";
      const bool ext = k == from + 2 && t[from].text == "extern" && t[from + 1].kind == Token::literal;
      if (ns || ext) {
        scopes.push_back(ns ? joined(t, from, k) + " :: " : "");
        scope.clear();
        for (const auto& s : scopes) scope += s;
        from = k + 1;
        continue;
      }
      if (opens_function_body(t, from, k)) body = k;
    }
    if (is_open(tok)) {
      ++depth;
      open.push_back(tok.text[0]);
      continue;
    }
    if (is_close(tok)) {
      const char want = tok.text == ")" ? '(' : tok.text == "]" ? '[' : '{';
      if (open.empty() || open.back() != want) return std::unexpected(unreadable(tok.line, "an unmatched '" + tok.text + "'"));
      open.pop_back();
      --depth;
      if (depth == 0 && tok.text == "}" && body) {
        out.push_back(c_unit(t, from, k + 1, body, scope));
        body.reset();
        from = k + 1;
      }
      continue;
    }
    if (depth == 0 && tok.kind == Token::op && tok.text == ";") {
      out.push_back(c_unit(t, from, k + 1, std::nullopt, scope));
      from = k + 1;
    }
  }
  if (depth != 0) return std::unexpected(unreadable(t.empty() ? 1 : t.back().line, "a bracket opened and never closed"));
  if (from < t.size()) {
    // A trailing macro call without ';' (`TEST_MAIN()`): a statement of its own.
    out.push_back(c_unit(t, from, t.size(), std::nullopt, scope));
  }
  if (!scopes.empty()) return std::unexpected(unreadable(t.back().line, "a namespace that never closes"));
  return out;
}

Result<std::vector<SourceUnit>> read_go_structure(std::string_view text) {
  auto tokens = tokenize(text, Lang::go);
  if (!tokens) return std::unexpected(tokens.error());
  const std::vector<Token>& t = *tokens;
  std::vector<SourceUnit> out;
  auto emit = [&](size_t from, size_t to) {
    SourceUnit u;
    u.line = t[from].line;
    u.text = joined(t, from, to);
    u.reads = reads_of(t, from, to);
    const std::string& head = t[from].text;
    if (head == "func") {
      // func Name(...) or func (r *T) Name(...)
      size_t k = from + 1;
      std::string receiver;
      if (k < to && t[k].text == "(") {
        int d = 0;
        size_t m = k;
        for (; m < to; ++m) {
          if (is_open(t[m])) ++d;
          else if (is_close(t[m]) && --d == 0) break;
        }
        for (size_t n = k + 1; n < m; ++n) {
          if (t[n].kind == Token::name) receiver = t[n].text;  // the type is the last name
        }
        k = m + 1;
      }
      u.name = (receiver.empty() ? "" : receiver + ".") + (k < to ? t[k].text : std::string());
      u.kind = u.name == "init" ? SourceUnit::Kind::statement : SourceUnit::Kind::function;
      u.key = u.name == "init" ? u.text : "func " + u.name;
      u.binds = {u.name};
    } else if (head == "import") {
      // One unit per imported path, so a block that gains a package keeps the others as they were.
      for (size_t k = from + 1; k < to; ++k) {
        if (t[k].kind != Token::literal) continue;
        SourceUnit one;
        one.kind = SourceUnit::Kind::import;
        one.line = t[k].line;
        one.text = (k > from + 1 && t[k - 1].kind == Token::name ? t[k - 1].text + " " : std::string()) + t[k].text;
        one.key = "import " + one.text;
        out.push_back(std::move(one));
      }
      return;
    } else if (head == "var" || head == "const" || head == "type") {
      u.kind = SourceUnit::Kind::binding;
      std::set<std::string> names;
      for (size_t k = from + 1; k < to; ++k) {
        // The name after the keyword, or after '(' or a newline inside a group.
        const bool first = k == from + 1 || (t[k - 1].text == "(" && k == from + 2) || t[k].newline_before || t[k - 1].text == ",";
        if (first && t[k].kind == Token::name) names.insert(t[k].text);
      }
      u.binds.assign(names.begin(), names.end());
      u.key = head;
      for (const auto& n : u.binds) u.key += " " + n;
    } else {
      u.kind = SourceUnit::Kind::statement;
      u.key = u.text;
    }
    out.push_back(std::move(u));
  };
  int depth = 0;
  size_t from = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    const Token& tok = t[k];
    if (k > from && depth == 0 && tok.newline_before) {
      // Go ends a statement at a newline after an identifier, a literal or a closing bracket.
      const Token& prev = t[k - 1];
      if (prev.kind != Token::op || is_close(prev)) {
        emit(from, k);
        from = k;
      }
    }
    if (is_open(tok)) ++depth;
    else if (is_close(tok) && --depth < 0) return std::unexpected(unreadable(tok.line, "an unmatched '" + tok.text + "'"));
    if (depth == 0 && tok.kind == Token::op && tok.text == ";") {
      if (k > from) emit(from, k + 1);
      from = k + 1;
    }
  }
  if (depth != 0) return std::unexpected(unreadable(t.empty() ? 1 : t.back().line, "a bracket opened and never closed"));
  if (from < t.size()) emit(from, t.size());
  return out;
}

std::optional<StructureLanguage> structure_language(std::string_view path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return std::nullopt;
  std::string ext;
  for (char c : path.substr(dot + 1)) ext += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "py") return StructureLanguage::python;
  if (ext == "go") return StructureLanguage::go;
  static const std::set<std::string> kC = {"c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"};
  if (kC.contains(ext)) return StructureLanguage::c_family;
  static const std::set<std::string> kJs = {"js", "mjs", "cjs", "ts", "mts", "cts"};
  if (kJs.contains(ext)) return StructureLanguage::javascript;
  return std::nullopt;
}

Result<std::vector<SourceUnit>> read_structure(StructureLanguage language, std::string_view text) {
  switch (language) {
    case StructureLanguage::python: return read_python_structure(text);
    case StructureLanguage::c_family: return read_c_structure(text);
    case StructureLanguage::go: return read_go_structure(text);
    case StructureLanguage::javascript: return read_javascript_structure(text);
  }
  return fail(Errc::internal, "unknown structure language");
}

}  // namespace warden::kernel
