#include "common/json_reader.h"

#include <utility>

namespace warden {
namespace {

const Json& empty_object() {
  static const Json kEmpty = Json::object();
  return kEmpty;
}

bool fits(const Json& v, int64_t min, int64_t max, int64_t& out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) return false;
    out = static_cast<int64_t>(u);
    return out >= min;
  }
  if (!v.is_number_integer()) return false;
  out = v.get<int64_t>();
  return out >= min && out <= max;
}

std::string between(auto min, auto max) {
  return "must be between " + std::to_string(min) + " and " + std::to_string(max);
}

Status check_numbers_at(const Json& value, std::string& path, std::string_view what, int depth) {
  if (depth > 256) return fail(Errc::limit_exceeded, std::string(what) + ": JSON nesting deeper than 256");
  switch (value.type()) {
    case Json::value_t::number_float:
      return fail(Errc::invalid_argument, std::string(what) + ": floating-point number at " +
                                              (path.empty() ? "/" : path) +
                                              " (recorded JSON holds integers only; use an integer or a string)");
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: {
      int64_t ignored = 0;
      if (!fits(value, -kMaxCanonicalInteger, kMaxCanonicalInteger, ignored)) {
        return fail(Errc::invalid_argument,
                    std::string(what) + ": integer at " + (path.empty() ? "/" : path) + " is outside +-(2^53-1)");
      }
      return {};
    }
    case Json::value_t::array: {
      size_t i = 0;
      for (const auto& item : value) {
        size_t mark = path.size();
        path += "/" + std::to_string(i++);
        if (auto st = check_numbers_at(item, path, what, depth + 1); !st) return st;
        path.resize(mark);
      }
      return {};
    }
    case Json::value_t::object:
      for (const auto& [key, item] : value.items()) {
        // The common case, a valid scalar, builds no path.
        int64_t ignored = 0;
        if (item.is_primitive() && (!item.is_number() ||
                                    fits(item, -kMaxCanonicalInteger, kMaxCanonicalInteger, ignored))) {
          continue;
        }
        size_t mark = path.size();
        path += "/" + key;
        if (auto st = check_numbers_at(item, path, what, depth + 1); !st) return st;
        path.resize(mark);
      }
      return {};
    default:
      return {};
  }
}

}  // namespace

JsonReader::JsonReader(const Json& json, std::string where, JsonDialect dialect, Errc code)
    : json_(json.is_object() ? &json : &empty_object()), where_(std::move(where)), dialect_(dialect), code_(code) {
  if (!json.is_object()) fail("", "must be a JSON object");
}

JsonReader::JsonReader(const Json& json, std::string where, JsonReader& parent)
    : json_(json.is_object() ? &json : &empty_object()),
      where_(std::move(where)),
      dialect_(parent.dialect_),
      code_(parent.code_),
      root_(parent.root_ ? parent.root_ : &parent) {
  if (!json.is_object()) fail("", "must be a JSON object");
}

std::string JsonReader::path(std::string_view key) const {
  if (key.empty()) return where_;
  if (where_.empty()) return std::string(key);
  return where_ + "." + std::string(key);
}

void JsonReader::fail(std::string_view key, std::string_view message) {
  auto& slot = error_slot();
  if (slot) return;
  std::string at = path(key);
  slot = Error{code_, at.empty() ? std::string(message) : at + ": " + std::string(message)};
}

Status JsonReader::finish() {
  if (ok()) {
    for (const auto& [key, ignored] : json_->items()) {
      if (!seen_.contains(key)) {
        fail(key, "unknown field");
        break;
      }
    }
  }
  if (auto& slot = error_slot()) return std::unexpected(*slot);
  return {};
}

bool JsonReader::has(std::string_view key) const {
  auto it = json_->find(key);
  if (it == json_->end()) return false;
  return dialect_ == JsonDialect::null_is_value || !it->is_null();
}

std::string_view JsonReader::missing_text() const {
  return dialect_ == JsonDialect::null_is_value ? "missing" : "is required";
}

std::string_view JsonReader::type_text(Json::value_t type) const {
  bool terse = dialect_ == JsonDialect::null_is_value;
  switch (type) {
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return terse ? "a boolean" : "true or false";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return terse ? "an object" : "a JSON object";
    default: return "an integer";
  }
}

const Json* JsonReader::find(std::string_view key) {
  seen_.emplace(key);
  auto it = json_->find(key);
  if (it == json_->end()) return nullptr;
  if (it->is_null() && dialect_ == JsonDialect::null_is_absent) return nullptr;
  return &*it;
}

const Json* JsonReader::typed(std::string_view key, Json::value_t type, bool required) {
  const Json* v = find(key);
  if (!v) {
    if (required) fail(key, missing_text());
    return nullptr;
  }
  bool integer = v->is_number_integer();  // true for unsigned too
  bool type_ok = v->type() == type ||
                 (integer && (type == Json::value_t::number_integer || type == Json::value_t::number_unsigned));
  if (!type_ok) {
    fail(key, "must be " + std::string(type_text(type)));
    return nullptr;
  }
  return v;
}

// --- Raw values.

const Json* JsonReader::any(std::string_view key, bool required) {
  if (!ok()) {
    seen_.emplace(key);
    return nullptr;
  }
  const Json* v = find(key);
  if (!v && required) fail(key, missing_text());
  return v;
}

const Json* JsonReader::value(std::string_view key, Json::value_t type, bool required) {
  if (!ok()) {
    seen_.emplace(key);
    return nullptr;
  }
  return typed(key, type, required);
}

const Json* JsonReader::nullable_object(std::string_view key) {
  seen_.emplace(key);
  if (!ok()) return nullptr;
  auto it = json_->find(key);
  if (it == json_->end()) {
    fail(key, missing_text());
    return nullptr;
  }
  if (it->is_null()) return nullptr;
  if (!it->is_object()) {
    fail(key, "must be an object or null");
    return nullptr;
  }
  return &*it;
}

// --- Getters that write into `out`.

void JsonReader::string(std::string_view key, std::string& out, bool required) {
  if (const Json* v = value(key, Json::value_t::string, required)) out = v->get<std::string>();
}

void JsonReader::boolean(std::string_view key, bool& out, bool required) {
  if (const Json* v = value(key, Json::value_t::boolean, required)) out = v->get<bool>();
}

void JsonReader::integer(std::string_view key, int64_t& out, int64_t min, int64_t max, bool required) {
  const Json* v = value(key, Json::value_t::number_integer, required);
  if (!v) return;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return fail(key, "out of range");
  }
  int64_t n = v->get<int64_t>();
  if (n < min || n > max) return fail(key, between(min, max));
  out = n;
}

void JsonReader::unsigned_integer(std::string_view key, uint64_t& out, uint64_t min, uint64_t max, bool required) {
  const Json* v = value(key, Json::value_t::number_unsigned, required);
  if (!v) return;
  if (!v->is_number_unsigned() && v->get<int64_t>() < 0) return fail(key, "must not be negative");
  uint64_t n = v->get<uint64_t>();
  if (n < min || n > max) return fail(key, between(min, max));
  out = n;
}

void JsonReader::digest(std::string_view key, Digest& out, bool required) {
  std::string text;
  bool present = has(key);
  string(key, text, required);
  if (!present || !ok()) return;
  auto d = Digest::parse(text);
  if (!d) return fail(key, "must be sha256:<64 lowercase hex>");
  out = *d;
}

void JsonReader::optional_digest(std::string_view key, std::optional<Digest>& out) {
  if (!has(key)) {
    seen_.emplace(key);
    return;
  }
  Digest d;
  digest(key, d, true);
  if (ok()) out = d;
}

void JsonReader::strings(std::string_view key, std::vector<std::string>& out, bool required) {
  const Json* v = value(key, Json::value_t::array, required);
  if (!v) return;
  out.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) return fail(key, "element " + std::to_string(i) + " must be a string");
    out.push_back((*v)[i].get<std::string>());
  }
}

void JsonReader::string_map(std::string_view key, std::map<std::string, std::string>& out, bool required) {
  const Json* v = value(key, Json::value_t::object, required);
  if (!v) return;
  out.clear();
  for (const auto& [k, item] : v->items()) {
    if (!item.is_string()) return fail(key, "\"" + k + "\" must be a string");
    out[k] = item.get<std::string>();
  }
}

void JsonReader::nullable_string(std::string_view key, std::optional<std::string>& out) {
  seen_.emplace(key);
  if (!ok()) return;
  auto it = json_->find(key);
  if (it == json_->end() || it->is_null()) return;
  if (!it->is_string()) return fail(key, "must be a string or null");
  out = it->get<std::string>();
}

void JsonReader::nullable_digest(std::string_view key, std::optional<Digest>& out) {
  std::optional<std::string> text;
  nullable_string(key, text);
  if (!text || !ok()) return;
  auto d = Digest::parse(*text);
  if (!d) return fail(key, "must be sha256:<64 lowercase hex> or null");
  out = *d;
}

// --- Getters that return the value.

const Json* JsonReader::get(std::string_view key) { return find(key); }

std::string JsonReader::string(std::string_view key) {
  const Json* v = typed(key, Json::value_t::string, true);
  return v ? v->get<std::string>() : std::string();
}

std::string JsonReader::string_or(std::string_view key, std::string fallback) {
  const Json* v = typed(key, Json::value_t::string, false);
  return v ? v->get<std::string>() : std::move(fallback);
}

std::optional<std::string> JsonReader::optional_string(std::string_view key) {
  const Json* v = typed(key, Json::value_t::string, false);
  if (!v) return std::nullopt;
  return v->get<std::string>();
}

std::optional<int64_t> JsonReader::optional_integer(std::string_view key, int64_t min, int64_t max) {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  int64_t out = 0;
  if (!v->is_number_integer()) {
    fail(key, "must be an integer");
    return std::nullopt;
  }
  if (!fits(*v, min, max, out)) {
    fail(key, between(min, max));
    return std::nullopt;
  }
  return out;
}

int64_t JsonReader::integer(std::string_view key, int64_t min, int64_t max) {
  if (!has(key)) {
    find(key);
    fail(key, missing_text());
    return min;
  }
  return optional_integer(key, min, max).value_or(min);
}

int64_t JsonReader::integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  return optional_integer(key, min, max).value_or(fallback);
}

bool JsonReader::boolean_or(std::string_view key, bool fallback) {
  const Json* v = typed(key, Json::value_t::boolean, false);
  return v ? v->get<bool>() : fallback;
}

Json JsonReader::object_or_empty(std::string_view key) {
  const Json* v = typed(key, Json::value_t::object, false);
  return v ? *v : Json::object();
}

const Json& JsonReader::array(std::string_view key) {
  static const Json kEmptyArray = Json::array();
  const Json* v = typed(key, Json::value_t::array, false);
  return v ? *v : kEmptyArray;
}

std::vector<std::string> JsonReader::string_list(std::string_view key) {
  std::vector<std::string> out;
  const Json& items = array(key);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      fail(std::string(key) + "[" + std::to_string(i) + "]", "must be a string");
      return {};
    }
    out.push_back(items[i].get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> JsonReader::string_map(std::string_view key) {
  std::map<std::string, std::string> out;
  const Json* v = typed(key, Json::value_t::object, false);
  if (!v) return out;
  for (const auto& [k, item] : v->items()) {
    if (!item.is_string()) {
      fail(std::string(key) + "." + k, "must be a string");
      return {};
    }
    out.emplace(k, item.get<std::string>());
  }
  return out;
}

std::map<std::string, bool> JsonReader::bool_map(std::string_view key) {
  std::map<std::string, bool> out;
  const Json* v = typed(key, Json::value_t::object, false);
  if (!v) return out;
  for (const auto& [k, item] : v->items()) {
    if (!item.is_boolean()) {
      fail(std::string(key) + "." + k, "must be " + std::string(type_text(Json::value_t::boolean)));
      return {};
    }
    out.emplace(k, item.get<bool>());
  }
  return out;
}

std::vector<Json> JsonReader::object_list(std::string_view key) {
  std::vector<Json> out;
  const Json& items = array(key);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_object()) {
      fail(std::string(key) + "[" + std::to_string(i) + "]", "must be " + std::string(type_text(Json::value_t::object)));
      return {};
    }
    out.push_back(items[i]);
  }
  return out;
}

// --- Nested readers.

JsonReader JsonReader::child(std::string_view key, bool required) {
  const Json* v = typed(key, Json::value_t::object, required);
  return JsonReader(v ? *v : empty_object(), path(key), *this);
}

JsonReader JsonReader::element(std::string_view key, const Json& array, size_t index) {
  return JsonReader(array.at(index), path(key) + "[" + std::to_string(index) + "]", *this);
}

Status check_canonical_numbers(const Json& value, std::string_view what) {
  std::string path;
  return check_numbers_at(value, path, what, 0);
}

}  // namespace warden
