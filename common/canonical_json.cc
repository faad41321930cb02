#include "common/canonical_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace warden {
namespace {

constexpr int kMaxDepth = 256;

// Decodes one UTF-8 sequence at text[i]; returns its length, or 0 if ill-formed.
size_t utf8_sequence(std::string_view text, size_t i, uint32_t& cp) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t b0 = byte(i);
  size_t len = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xe0) == 0xc0) {
    len = 2, cp = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, cp = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    uint8_t b = byte(i + k);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

// JCS orders keys by UTF-16 code units. UTF-8 byte order already equals code point order,
// which differs from UTF-16 order only between supplementary characters (surrogate pairs,
// D800-DFFF) and U+E000-U+FFFF; so compare code points mapped to their first UTF-16 unit.
bool utf16_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint32_t ca = 0, cb = 0;
    size_t la = utf8_sequence(a, i, ca);
    size_t lb = utf8_sequence(b, j, cb);
    if (la == 0 || lb == 0) return a < b;  // invalid UTF-8 is refused later anyway
    if (ca != cb) {
      auto unit = [](uint32_t cp) -> uint32_t { return cp >= 0x10000 ? 0xd800 + ((cp - 0x10000) >> 10) : cp; };
      uint32_t ua = unit(ca), ub = unit(cb);
      if (ua != ub) return ua < ub;
      return ca < cb;  // same high surrogate: low surrogates follow code point order
    }
    i += la;
    j += lb;
  }
  return a.size() - i < b.size() - j;
}

bool all_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

// Where a value sits, as a chain through its parents: the JSON pointer is only spelled out
// when an error needs it, so the hot path allocates nothing per value.
struct Location {
  const Location* parent = nullptr;
  std::string_view key;  // an object member, or ...
  size_t index = 0;      // ... an array element when key is empty and is_index
  bool is_index = false;

  std::string pointer() const {
    std::string out = suffix();
    return out.empty() ? "/" : out;
  }

 private:
  // The pointer without the root's "/" spelling: "" for the root itself.
  std::string suffix() const {
    std::string tail;
    if (is_index) {
      tail = "/" + std::to_string(index);
    } else if (parent) {
      tail = "/";
      for (char c : key) {
        if (c == '~') tail += "~0";
        else if (c == '/') tail += "~1";
        else tail += c;
      }
    }
    return (parent ? parent->suffix() : std::string()) + tail;
  }
};

Status canonicalize_at(const Json& value, std::string& out, const Location& at, int depth) {
  if (depth > kMaxDepth) return fail(Errc::limit_exceeded, "JSON nesting deeper than 256 at " + at.pointer());
  switch (value.type()) {
    case Json::value_t::null: out += "null"; return {};
    case Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return {};
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: {
      bool ok = value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(kMaxCanonicalInteger)
                                           : (value.get<int64_t>() <= kMaxCanonicalInteger &&
                                              value.get<int64_t>() >= -kMaxCanonicalInteger);
      if (!ok) {
        return fail(Errc::invalid_argument,
                    "integer at " + at.pointer() + " is outside +-(2^53-1) and cannot be hashed canonically");
      }
      char buf[24];
      auto r = value.is_number_unsigned() ? std::to_chars(buf, buf + sizeof buf, value.get<uint64_t>())
                                          : std::to_chars(buf, buf + sizeof buf, value.get<int64_t>());
      out.append(buf, r.ptr);
      return {};
    }
    case Json::value_t::number_float:
      return fail(Errc::invalid_argument, "floating-point number at " + at.pointer() +
                                              " is not allowed in hashed objects (use an integer or a string)");
    case Json::value_t::string: {
      auto st = append_json_string(value.get_ref<const std::string&>(), out);
      if (!st) return fail(st.error().code, st.error().message + " at " + at.pointer());
      return {};
    }
    case Json::value_t::array: {
      out += '[';
      size_t i = 0;
      for (const auto& item : value) {
        if (i) out += ',';
        Location child{&at, {}, i, true};
        if (auto st = canonicalize_at(item, out, child, depth + 1); !st) return st;
        ++i;
      }
      out += ']';
      return {};
    }
    case Json::value_t::object: {
      const auto& obj = value.get_ref<const Json::object_t&>();
      auto member = [&](const Json::object_t::value_type& kv, bool first) -> Status {
        if (!first) out += ',';
        Location child{&at, kv.first, 0, false};
        if (auto st = append_json_string(kv.first, out); !st) {
          return fail(st.error().code, st.error().message + " in a key at " + child.pointer());
        }
        out += ':';
        return canonicalize_at(kv.second, out, child, depth + 1);
      };
      out += '{';
      bool first = true;
      if (std::all_of(obj.begin(), obj.end(), [](const auto& kv) { return all_ascii(kv.first); })) {
        // ASCII keys: the map's byte order is already UTF-16 order.
        for (const auto& kv : obj) {
          if (auto st = member(kv, first); !st) return st;
          first = false;
        }
      } else {
        std::vector<const Json::object_t::value_type*> items;
        items.reserve(obj.size());
        for (const auto& kv : obj) items.push_back(&kv);
        std::sort(items.begin(), items.end(), [](auto* a, auto* b) { return utf16_less(a->first, b->first); });
        for (const auto* kv : items) {
          if (auto st = member(*kv, first); !st) return st;
          first = false;
        }
      }
      out += '}';
      return {};
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  return fail(Errc::invalid_argument, "value at " + at.pointer() + " has no JSON representation");
}

// Names the first number in `text` too large for a double ("number 1e400 at line 1,
// column 7 is out of range"), for a text the parser accepted up to that number: strings are
// skipped whole, so a number inside one is never taken for a value.
std::string out_of_range_number(std::string_view text) {
  uint64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i;
      while (end < text.size() && std::string_view("0123456789+-.eE").find(text[end]) != std::string_view::npos) ++end;
      std::string token(text.substr(i, end - i));
      double value = std::strtod(token.c_str(), nullptr);
      if (!std::isfinite(value)) {
        std::string shown = token.size() > 40 ? token.substr(0, 40) + "..." : token;
        return "number " + shown + " at line " + std::to_string(line) + ", column " + std::to_string(i - line_start + 1) +
               " is out of range (beyond a double's largest value)";
      }
      i = end - 1;
    }
  }
  return "a number is out of range (beyond a double's largest value)";
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = utf8_sequence(text, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t len = static_cast<uint8_t>(text[i]) < 0x80 ? 1 : utf8_sequence(text, i, cp);
    if (len > 0) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    auto c = static_cast<uint8_t>(text[i++]);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

Status append_json_string(std::string_view text, std::string& out) {
  out += '"';
  size_t run_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<uint8_t>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      uint32_t cp = 0;
      size_t len = utf8_sequence(text, i, cp);
      if (len == 0) return fail(Errc::invalid_argument, "string is not valid UTF-8 (byte offset " + std::to_string(i) + ")");
      i += len;
      continue;
    }
    out.append(text.substr(run_start, i - run_start));
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
      }
    }
    ++i;
    run_start = i;
  }
  out.append(text.substr(run_start));
  out += '"';
  return {};
}

Status canonicalize_to(const Json& value, std::string& out) { return canonicalize_at(value, out, Location{}, 0); }

Result<std::string> canonicalize(const Json& value) {
  std::string out;
  if (auto st = canonicalize_to(value, out); !st) return std::unexpected(st.error());
  return out;
}

namespace {

// Builds the parsed value as nlohmann's DOM parser would, refusing on the way what Warden never
// accepts: a duplicate key (nlohmann would keep the last one, and two readers could then
// disagree), nesting deeper than kMaxDepth, more than kMaxJsonValues values. A duplicate is
// found by the insertion itself, with no set of seen keys beside the object. Depths and value
// counts are those nlohmann's callback parser reports (which parse_json used before), so every
// limit holds exactly where it did.
class StrictBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit StrictBuilder(Json& root) : root_(root) {}

  bool null() override { return scalar(Json(nullptr)); }
  bool boolean(bool v) override { return scalar(Json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(Json(v)); }
  bool string(string_t& v) override { return scalar(Json(std::move(v))); }
  bool binary(binary_t&) override { return refuse(Errc::invalid_argument, "binary value"); }  // not in JSON text
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (!admit(stack_.size(), true)) return false;
    auto [at, inserted] = stack_.back()->get_ref<Json::object_t&>().try_emplace(k);
    if (!inserted) return refuse(Errc::invalid_argument, "duplicate object key \"" + k + "\"");
    member_ = &at->second;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (dynamic_cast<const Json::parse_error*>(&e)) {
      syntax_ = e.what();
    } else if (dynamic_cast<const Json::out_of_range*>(&e)) {
      number_out_of_range_ = true;
    } else {
      refuse(Errc::invalid_argument, e.what());
    }
    return false;
  }

  // Set when the parse stopped: a syntax error (nlohmann's message), a number too large for
  // a double, or a refusal (problem and its code).
  std::optional<std::string> syntax_;
  bool number_out_of_range_ = false;
  std::string problem_;
  Errc problem_code_ = Errc::invalid_argument;

 private:
  // The callback parser's checks for one event at `depth`: the depth, then (for every event but
  // a container's end) the count.
  bool admit(size_t depth, bool counted) {
    if (depth > static_cast<size_t>(kMaxDepth)) return refuse(Errc::invalid_argument, "nesting deeper than " + std::to_string(kMaxDepth));
    if (counted && ++values_ > kMaxJsonValues) {
      return refuse(Errc::limit_exceeded, "more than " + std::to_string(kMaxJsonValues) + " values");
    }
    return true;
  }
  bool refuse(Errc code, std::string problem) {
    problem_ = std::move(problem);
    problem_code_ = code;
    return false;
  }
  // Where a new value goes: the root, the end of the open array, or the member its key made.
  // Pointers on the stack stay valid: an open array only grows again once its last element,
  // the one open inside it, has been closed, and object members are map nodes.
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    if (stack_.back()->is_array()) {
      auto& items = stack_.back()->get_ref<Json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool scalar(Json&& v) {
    if (!admit(stack_.size(), true)) return false;
    place(std::move(v));
    return true;
  }
  bool open(Json&& container) {
    if (!admit(stack_.size(), true)) return false;
    stack_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    if (!admit(stack_.size() - 1, false)) return false;
    stack_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Json*> stack_;
  Json* member_ = nullptr;
  uint64_t values_ = 0;
};

}  // namespace

Result<Json> parse_json(std::string_view text, std::string_view what) {
  Json root;
  StrictBuilder builder(root);
  try {
    if (Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                        /*ignore_comments=*/false)) {
      return root;
    }
  } catch (const std::exception& e) {
    return fail(Errc::invalid_argument, std::string(what) + " is not acceptable JSON: " + e.what());
  }
  if (builder.syntax_) {
    // nlohmann's message carries "line L, column C" and the reason: kept from "line" on, so the
    // error says where, without the library's "[json.exception...] parse error at" prefix.
    auto pos = builder.syntax_->find("line ");
    if (pos == std::string::npos) pos = builder.syntax_->find("syntax error");
    return fail(Errc::invalid_argument, std::string(what) + " is not valid JSON at " +
                                            (pos == std::string::npos ? *builder.syntax_ : builder.syntax_->substr(pos)));
  }
  if (builder.number_out_of_range_) {
    // nlohmann reports a number too large for a double (406) without its position.
    return fail(Errc::invalid_argument, std::string(what) + " is not acceptable JSON: " + out_of_range_number(text));
  }
  return fail(builder.problem_code_, std::string(what) + " is not acceptable JSON: " + builder.problem_);
}

Result<Json> parse_canonical_json(std::string_view text, std::string_view what) {
  auto parsed = parse_json(text, what);
  if (!parsed) return parsed;
  std::string canonical;
  if (auto st = canonicalize_to(*parsed, canonical); !st) return std::unexpected(st.error().with_context(what));
  if (canonical != text) {
    size_t at = 0;
    while (at < text.size() && at < canonical.size() && text[at] == canonical[at]) ++at;
    return fail(Errc::invalid_argument,
                std::string(what) + " is not in canonical form (RFC 8785); first difference at byte " + std::to_string(at));
  }
  return parsed;
}

}  // namespace warden
