// The Python reader of test_structure.h: a tokenizer that knows enough of Python's lexical
// rules to find logical lines (strings of every prefix and quoting, comments, brackets,
// backslash continuations), blocks by indentation, and the units of a module or class body.
//
// One unit (~610 lines), a single parser: the lexer, the block tree and the unit reader share
// one token and line model, and each stage only makes sense beside the others.
#include <algorithm>
#include <cctype>
#include <set>

#include "kernel/judge/test_structure.h"

namespace warden::kernel {
namespace {

enum class Tok { name, string, number, op };

struct Token {
  Tok kind;
  std::string text;
};

struct LogicalLine {
  int indent = 0;
  int line = 0;  // 1-based, of its first token
  std::vector<Token> tokens;
};

Error unreadable(int line, std::string why) {
  return Error{Errc::invalid_argument, "line " + std::to_string(line) + ": " + why};
}

bool ident_start(unsigned char c) { return c == '_' || std::isalpha(c) || c >= 0x80; }
bool ident_char(unsigned char c) { return ident_start(c) || std::isdigit(c); }

bool string_prefix(std::string_view word) {
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string> kPrefixes = {"r", "u", "b", "f", "br", "rb", "fr", "rf"};
  return kPrefixes.contains(lower);
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  Result<std::vector<LogicalLine>> run() {
    std::vector<LogicalLine> out;
    while (i_ < s_.size()) {
      // The start of a physical line outside any bracket: its indentation.
      int indent = 0;
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\f')) {
        indent = s_[i_] == ' ' ? indent + 1 : s_[i_] == '\t' ? (indent / 8 + 1) * 8 : 0;
        ++i_;
      }
      LogicalLine ll{indent, line_, {}};
      if (auto st = logical_line(ll); !st) return std::unexpected(st.error());
      if (!ll.tokens.empty()) out.push_back(std::move(ll));
    }
    return out;
  }

 private:
  // Reads tokens up to the newline that ends the logical line (or the end of the text).
  Status logical_line(LogicalLine& ll) {
    int depth = 0;
    std::vector<char> open;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n' || c == '\r') {
        if (c == '\r' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++i_;
        ++i_;
        ++line_;
        if (depth == 0) return {};
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\f') {
        ++i_;
        continue;
      }
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
        continue;
      }
      if (c == '\\') {
        if (i_ + 1 < s_.size() && (s_[i_ + 1] == '\n' || s_[i_ + 1] == '\r')) {
          i_ += 1;
          if (s_[i_] == '\r' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++i_;
          ++i_;
          ++line_;
          continue;
        }
        return std::unexpected(unreadable(line_, "a backslash outside a string that does not end its line"));
      }
      if (ll.tokens.empty()) ll.line = line_;
      if (ident_start(static_cast<unsigned char>(c))) {
        size_t start = i_;
        while (i_ < s_.size() && ident_char(static_cast<unsigned char>(s_[i_]))) ++i_;
        std::string_view word = s_.substr(start, i_ - start);
        if (i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"') && string_prefix(word)) {
          auto str = string_literal(start);
          if (!str) return std::unexpected(str.error());
          ll.tokens.push_back({Tok::string, std::move(*str)});
        } else {
          ll.tokens.push_back({Tok::name, std::string(word)});
        }
        continue;
      }
      if (c == '\'' || c == '"') {
        auto str = string_literal(i_);
        if (!str) return std::unexpected(str.error());
        ll.tokens.push_back({Tok::string, std::move(*str)});
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
        size_t start = i_;
        while (i_ < s_.size()) {
          const char d = s_[i_];
          if (std::isalnum(static_cast<unsigned char>(d)) || d == '_' || d == '.') {
            ++i_;
          } else if ((d == '+' || d == '-') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E') &&
                     !(s_.substr(start, 2) == "0x" || s_.substr(start, 2) == "0X")) {
            ++i_;
          } else {
            break;
          }
        }
        ll.tokens.push_back({Tok::number, std::string(s_.substr(start, i_ - start))});
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        ++depth;
        open.push_back(c);
        ll.tokens.push_back({Tok::op, std::string(1, c)});
        ++i_;
        continue;
      }
      if (c == ')' || c == ']' || c == '}') {
        const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty() || open.back() != want) return std::unexpected(unreadable(line_, std::string("an unmatched '") + c + "'"));
        open.pop_back();
        --depth;
        ll.tokens.push_back({Tok::op, std::string(1, c)});
        ++i_;
        continue;
      }
      static constexpr std::string_view kOps[] = {"**=", "//=", ">>=", "<<=", "...", "->", ":=", "==", "!=", "<=", ">=", "**",
                                                   "//",  "<<",  ">>",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@="};
      bool matched = false;
      for (std::string_view op : kOps) {
        if (s_.substr(i_, op.size()) == op) {
          ll.tokens.push_back({Tok::op, std::string(op)});
          i_ += op.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::string_view("+-*/%@&|^~<>=.,:;!").find(c) != std::string_view::npos) {
        ll.tokens.push_back({Tok::op, std::string(1, c)});
        ++i_;
        continue;
      }
      return std::unexpected(unreadable(line_, std::string("a character Python has no token for: '") + c + "'"));
    }
    if (depth > 0) return std::unexpected(unreadable(line_, "a bracket opened and never closed"));
    return {};
  }

  // A string literal starting at `start` (its prefix included), verbatim.
  Result<std::string> string_literal(size_t start) {
    const int first_line = line_;
    const char q = s_[i_];
    const bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++line_;
        i_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) return std::unexpected(unreadable(first_line, "a string that does not end on its line"));
        ++line_;
      }
      if (c == q && (!triple || s_.substr(i_, 3) == std::string(3, q))) {
        i_ += triple ? 3 : 1;
        return std::string(s_.substr(start, i_ - start));
      }
      ++i_;
    }
    return std::unexpected(unreadable(first_line, "a string that never ends"));
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
};

struct Node {
  const LogicalLine* line;
  std::vector<Node> children;
};

bool assignment_op(const Token& t);
std::string_view head_word(const LogicalLine& l);

bool opens_block(const LogicalLine& l) { return l.tokens.back().kind == Tok::op && l.tokens.back().text == ":"; }

// Nodes of the lines from `i` on whose indentation is `indent`, each with its block.
Result<std::vector<Node>> build(const std::vector<LogicalLine>& lines, size_t& i, int indent) {
  std::vector<Node> out;
  while (i < lines.size()) {
    const LogicalLine& l = lines[i];
    if (l.indent < indent) break;
    if (l.indent > indent) return std::unexpected(unreadable(l.line, "an indented line with no block to belong to"));
    Node n{&l, {}};
    ++i;
    if (opens_block(l)) {
      if (i >= lines.size() || lines[i].indent <= indent) return std::unexpected(unreadable(l.line, "a block with no body"));
      auto body = build(lines, i, lines[i].indent);
      if (!body) return std::unexpected(body.error());
      n.children = std::move(*body);
      if (i < lines.size() && lines[i].indent > indent) {
        return std::unexpected(unreadable(lines[i].line, "a dedent to no enclosing level"));
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

bool is_keyword(std::string_view w) {
  static const std::set<std::string_view> kKeywords = {
      "False", "None",   "True",    "and",      "as",   "assert", "async", "await",  "break",  "class", "continue",
      "def",   "del",    "elif",    "else",     "except", "finally", "for", "from",  "global", "if",    "import",
      "in",    "is",     "lambda",  "nonlocal", "not",  "or",     "pass",  "raise",  "return", "try",   "while",
      "with",  "yield"};
  return kKeywords.contains(w);
}

// A string literal alone: a docstring where it stands first. An f-string is not one: its
// replacement fields run.
bool is_string_only(const LogicalLine& l) {
  return std::all_of(l.tokens.begin(), l.tokens.end(), [](const Token& t) {
    if (t.kind != Tok::string) return false;
    const std::string prefix = t.text.substr(0, t.text.find_first_of("'\""));
    return prefix.find_first_of("fF") == std::string::npos;
  });
}

std::string line_text(const LogicalLine& l) {
  std::string out;
  for (const Token& t : l.tokens) out += (out.empty() ? "" : " ") + t.text;
  return out;
}

void add_reads(const LogicalLine& l, std::set<std::string>& reads) {
  for (size_t k = 0; k < l.tokens.size(); ++k) {
    const Token& t = l.tokens[k];
    if (t.kind != Tok::name || is_keyword(t.text)) continue;
    const bool attribute = k > 0 && l.tokens[k - 1].kind == Tok::op && l.tokens[k - 1].text == ".";
    if (!attribute) {
      reads.insert(t.text);
    } else if (k > 1 && (l.tokens[k - 2].text == "self" || l.tokens[k - 2].text == "cls")) {
      reads.insert("." + t.text);  // a member the class or an instance reads: a new one of that name overrides it
    }
  }
}

// A node and its block as normalized text, the block's leading docstring dropped.
void node_text(const Node& n, int depth, std::string& out, std::set<std::string>& reads) {
  out += std::string(static_cast<size_t>(depth), '\t') + line_text(*n.line) + "\n";
  add_reads(*n.line, reads);
  for (size_t k = 0; k < n.children.size(); ++k) {
    if (k == 0 && is_string_only(*n.children[k].line) && n.children[k].children.empty()) continue;
    node_text(n.children[k], depth + 1, out, reads);
  }
}

// Names local to a function: its parameters, what its body assigns, loops over, binds with
// `as`, imports or defines. A read of a local is not a read of the module's name.
void add_locals(const Node& n, bool is_def, std::set<std::string>& locals) {
  const auto& t = n.line->tokens;
  if (is_def) {
    size_t k = 0;
    while (k < t.size() && t[k].text != "(") ++k;
    int depth = 0;
    for (; k < t.size(); ++k) {
      if (t[k].text == "(" || t[k].text == "[" || t[k].text == "{") ++depth;
      else if (t[k].text == ")" || t[k].text == "]" || t[k].text == "}") {
        if (--depth == 0) break;
      } else if (depth == 1 && t[k].kind == Tok::name && k > 0 && k + 1 < t.size() &&
                 (t[k - 1].text == "(" || t[k - 1].text == "," || t[k - 1].text == "*" || t[k - 1].text == "**") &&
                 (t[k + 1].text == "," || t[k + 1].text == ")" || t[k + 1].text == "=" || t[k + 1].text == ":")) {
        locals.insert(t[k].text);
      }
    }
  }
  for (size_t k = 0; k < t.size(); ++k) {
    const std::string& w = t[k].text;
    if (t[k].kind != Tok::name) continue;
    if ((w == "as" || w == "def" || w == "class" || w == "import") && k + 1 < t.size() && t[k + 1].kind == Tok::name) {
      locals.insert(t[k + 1].text);
    }
    if (w == "for") {
      for (size_t m = k + 1; m < t.size() && t[m].text != "in"; ++m) {
        if (t[m].kind == Tok::name) locals.insert(t[m].text);
      }
    }
  }
  // Targets of an assignment statement: the names before a top-level '=' (or an augmented one).
  if (!t.empty() && t[0].kind == Tok::name && !is_keyword(t[0].text)) {
    int depth = 0;
    std::vector<std::string> names;
    for (size_t k = 0; k < t.size(); ++k) {
      const std::string& w = t[k].text;
      if (t[k].kind == Tok::op && (w == "(" || w == "[" || w == "{")) ++depth;
      else if (t[k].kind == Tok::op && (w == ")" || w == "]" || w == "}")) --depth;
      else if (depth == 0 && (assignment_op(t[k]) || w == ":")) {
        locals.insert(names.begin(), names.end());
        break;
      } else if (t[k].kind == Tok::name && (k == 0 || t[k - 1].text == "," || t[k - 1].text == "(" || t[k - 1].text == "*")) {
        names.push_back(w);
      }
    }
  }
  for (const Node& c : n.children) add_locals(c, head_word(*c.line) == "def", locals);
}

// The first token's text, past an `async`.
std::string_view head_word(const LogicalLine& l) {
  size_t k = l.tokens.size() > 1 && l.tokens[0].text == "async" ? 1 : 0;
  return l.tokens[k].kind == Tok::name ? std::string_view(l.tokens[k].text) : std::string_view();
}

std::string name_after_head(const LogicalLine& l) {
  size_t k = l.tokens[0].text == "async" ? 2 : 1;
  return k < l.tokens.size() && l.tokens[k].kind == Tok::name ? l.tokens[k].text : std::string();
}

// Splits `tokens` [from, to) at commas outside brackets.
std::vector<std::pair<size_t, size_t>> split_commas(const std::vector<Token>& tokens, size_t from, size_t to) {
  std::vector<std::pair<size_t, size_t>> parts;
  int depth = 0;
  size_t start = from;
  for (size_t k = from; k < to; ++k) {
    const std::string& t = tokens[k].text;
    if (tokens[k].kind != Tok::op) continue;
    if (t == "(" || t == "[" || t == "{") ++depth;
    else if (t == ")" || t == "]" || t == "}") --depth;
    else if (t == "," && depth == 0) {
      parts.emplace_back(start, k);
      start = k + 1;
    }
  }
  if (start < to) parts.emplace_back(start, to);
  return parts;
}

void read_import(const LogicalLine& l, SourceUnit& u) {
  u.kind = SourceUnit::Kind::import;
  const auto& t = l.tokens;
  if (t[0].text == "import") {
    for (auto [a, b] : split_commas(t, 1, t.size())) {
      if (b - a >= 3 && t[b - 2].text == "as") u.binds.push_back(t[b - 1].text);
      else if (a < b) u.binds.push_back(t[a].text);
    }
    u.key = "import " + line_text(l);
    return;
  }
  // from M import names
  size_t k = 1;
  while (k < t.size() && t[k].text != "import") u.import_module += t[k++].text;
  u.key = "from " + u.import_module;
  ++k;
  size_t end = t.size();
  if (k < end && t[k].text == "(") {
    ++k;
    if (end > k && t[end - 1].text == ")") --end;
  }
  for (auto [a, b] : split_commas(t, k, end)) {
    if (a >= b) continue;
    std::string entry;
    for (size_t m = a; m < b; ++m) entry += (entry.empty() ? "" : " ") + t[m].text;
    u.imported.push_back(entry);
    if (b - a >= 3 && t[b - 2].text == "as") u.binds.push_back(t[b - 1].text);
    else u.binds.push_back(t[a].text);
  }
  std::sort(u.imported.begin(), u.imported.end());
}

bool assignment_op(const Token& t) {
  static const std::set<std::string_view> kAugmented = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", ">>=", "<<=", "&=", "|=", "^=", "@="};
  return t.kind == Tok::op && (t.text == "=" || kAugmented.contains(t.text));
}

// A simple statement: a binding when every target is a plain name, a mutation when a target
// is an attribute, a subscript or `del`, else a statement.
void read_simple(const LogicalLine& l, SourceUnit& u) {
  const auto& t = l.tokens;
  u.key = line_text(l);
  if (t[0].kind == Tok::name && t[0].text == "del") {
    u.kind = SourceUnit::Kind::mutation;
    return;
  }
  std::vector<size_t> ops;
  int depth = 0;
  bool augmented = false;
  for (size_t k = 0; k < t.size(); ++k) {
    // A lambda's defaults (`f = lambda x=1: x`) are not assignments.
    if (t[k].kind == Tok::name && t[k].text == "lambda" && depth == 0) break;
    if (t[k].kind != Tok::op) continue;
    const std::string& s = t[k].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    else if (s == ")" || s == "]" || s == "}") --depth;
    else if (depth == 0 && assignment_op(t[k])) {
      ops.push_back(k);
      augmented = augmented || s != "=";
    }
  }
  if (ops.empty()) {
    // An annotation without a value (`x: int`) names x.
    if (t.size() >= 2 && t[0].kind == Tok::name && t[1].text == ":") {
      ops.push_back(t.size());
    } else {
      u.kind = SourceUnit::Kind::statement;
      return;
    }
  }
  bool all_names = !augmented;
  size_t start = 0;
  for (size_t op : ops) {
    size_t end = op;
    // `x: T = v`: the target ends at the annotation's colon.
    depth = 0;
    for (size_t k = start; k < op; ++k) {
      const std::string& s = t[k].text;
      if (t[k].kind != Tok::op) continue;
      if (s == "(" || s == "[" || s == "{") ++depth;
      else if (s == ")" || s == "]" || s == "}") --depth;
      else if (s == ":" && depth == 0) {
        end = k;
        break;
      }
    }
    size_t a = start, b = end;
    while (b > a + 1 && ((t[a].text == "(" && t[b - 1].text == ")") || (t[a].text == "[" && t[b - 1].text == "]"))) {
      ++a;
      --b;
    }
    for (auto [p, q] : split_commas(t, a, b)) {
      if (p < q && t[p].text == "*") ++p;
      if (q - p == 1 && t[p].kind == Tok::name) {
        u.binds.push_back(t[p].text);
      } else {
        all_names = false;
        if (p < q && t[p].kind == Tok::name) u.binds.push_back(t[p].text);
      }
    }
    start = op + 1;
  }
  if (all_names && !u.binds.empty()) {
    u.kind = SourceUnit::Kind::binding;
    std::vector<std::string> sorted = u.binds;
    std::sort(sorted.begin(), sorted.end());
    u.key = "bind";
    for (const auto& n : sorted) u.key += " " + n;
  } else {
    u.kind = SourceUnit::Kind::mutation;
  }
}

void collect_binds_deep(const Node& n, std::set<std::string>& names) {
  for (const Token& t : n.line->tokens) {
    if (t.kind == Tok::name && !is_keyword(t.text)) names.insert(t.text);
  }
  for (const Node& c : n.children) collect_binds_deep(c, names);
}

Result<std::vector<SourceUnit>> units_of(const std::vector<Node>& nodes);

Result<SourceUnit> unit_of(const std::vector<const Node*>& decorators, const Node& n) {
  SourceUnit u;
  const LogicalLine& l = *n.line;
  u.line = decorators.empty() ? l.line : decorators.front()->line->line;
  std::set<std::string> reads;
  std::string deco_text;
  for (const Node* d : decorators) node_text(*d, 0, deco_text, reads);
  const std::string_view head = head_word(l);
  if (head == "def" || head == "class") {
    u.name = name_after_head(l);
    if (u.name.empty()) return std::unexpected(unreadable(l.line, "a def or class without a name"));
    u.binds = {u.name};
    if (head == "def") {
      u.kind = SourceUnit::Kind::function;
      u.key = "def " + u.name;
      u.text = deco_text;
      std::set<std::string> body_reads;
      node_text(n, 0, u.text, body_reads);
      std::set<std::string> locals{u.name};
      add_locals(n, true, locals);
      for (const std::string& r : body_reads) {
        if (!locals.contains(r)) reads.insert(r);
      }
      // Its parameters are read too, by name: pytest gives a test or fixture the fixture its
      // parameter names, so a new fixture of that name would change what the test gets.
      std::set<std::string> params;
      add_locals(Node{n.line, {}}, true, params);
      for (const std::string& p : params) {
        if (p != "self" && p != "cls" && p != u.name) reads.insert(p);
      }
    } else {
      u.kind = SourceUnit::Kind::klass;
      u.key = "class " + u.name;
      u.text = deco_text + line_text(l) + "\n";
      add_reads(l, reads);
      reads.erase(u.name);
      auto members = units_of(n.children);
      if (!members) return std::unexpected(members.error());
      u.members = std::move(*members);
    }
  } else if (!decorators.empty()) {
    return std::unexpected(unreadable(l.line, "a decorator before something that is not a def or class"));
  } else if (!n.children.empty()) {
    u.kind = SourceUnit::Kind::statement;
    node_text(n, 0, u.text, reads);
    u.key = u.text;
    std::set<std::string> names;
    collect_binds_deep(n, names);
    u.binds.assign(names.begin(), names.end());
  } else if (head == "import" || head == "from") {
    read_import(l, u);
    u.text = line_text(l);
    add_reads(l, reads);
  } else if (l.tokens.size() == 1 && (l.tokens[0].text == "pass" || l.tokens[0].text == "...")) {
    u.kind = SourceUnit::Kind::docstring;  // a statement that does nothing, like a docstring
    u.key = "pass";
    u.text = line_text(l);
  } else {
    read_simple(l, u);
    u.text = line_text(l);
    add_reads(l, reads);
  }
  u.reads.assign(reads.begin(), reads.end());
  return u;
}

// The units of one block: decorators joined to their def or class, an if/try/for/while/with
// joined with its elif/else/except/finally clauses, a leading string as the docstring.
Result<std::vector<SourceUnit>> units_of(const std::vector<Node>& nodes) {
  std::vector<SourceUnit> out;
  std::vector<const Node*> decorators;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    const LogicalLine& l = *n.line;
    if (l.tokens[0].kind == Tok::op && l.tokens[0].text == "@") {
      decorators.push_back(&n);
      continue;
    }
    if (k == 0 && is_string_only(l) && n.children.empty()) {
      SourceUnit doc;
      doc.kind = SourceUnit::Kind::docstring;
      doc.key = "docstring";
      doc.text = line_text(l);
      doc.line = l.line;
      out.push_back(std::move(doc));
      continue;
    }
    const std::string_view head = head_word(l);
    if ((head == "elif" || head == "else" || head == "except" || head == "finally") && decorators.empty() && !out.empty() &&
        out.back().kind == SourceUnit::Kind::statement && !n.children.empty()) {
      // A clause of the compound statement before it.
      SourceUnit& prev = out.back();
      std::set<std::string> reads(prev.reads.begin(), prev.reads.end());
      node_text(n, 0, prev.text, reads);
      prev.key = prev.text;
      prev.reads.assign(reads.begin(), reads.end());
      std::set<std::string> names(prev.binds.begin(), prev.binds.end());
      collect_binds_deep(n, names);
      prev.binds.assign(names.begin(), names.end());
      continue;
    }
    auto u = unit_of(decorators, n);
    if (!u) return std::unexpected(u.error());
    decorators.clear();
    out.push_back(std::move(*u));
  }
  if (!decorators.empty()) return std::unexpected(unreadable(decorators.back()->line->line, "a decorator at the end of a block"));
  return out;
}

}  // namespace

Result<std::vector<SourceUnit>> read_python_structure(std::string_view text) {
  Lexer lexer(text);
  auto lines = lexer.run();
  if (!lines) return std::unexpected(lines.error());
  if (lines->empty()) return std::vector<SourceUnit>{};
  if ((*lines)[0].indent != 0) return std::unexpected(unreadable((*lines)[0].line, "the first statement is indented"));
  size_t i = 0;
  auto nodes = build(*lines, i, 0);
  if (!nodes) return std::unexpected(nodes.error());
  if (i != lines->size()) return std::unexpected(unreadable((*lines)[i].line, "a dedent to no enclosing level"));
  return units_of(*nodes);
}

}  // namespace warden::kernel
