#include "executor/field_reader.h"

#include <utility>

namespace warden::executor {
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

FieldReader::FieldReader(const Json& value, std::string path, Errc code)
    : value_(value.is_object() ? value : empty_object()), path_(std::move(path)), code_(code) {
  if (!value.is_object()) fail("", "must be a JSON object");
}

FieldReader::FieldReader(const Json& value, std::string path, FieldReader& parent)
    : value_(value.is_object() ? value : empty_object()),
      path_(std::move(path)),
      code_(parent.code_),
      root_(parent.root_ ? parent.root_ : &parent) {
  if (!value.is_object()) fail("", "must be a JSON object");
}

std::string FieldReader::path_of(std::string_view key) const {
  if (key.empty()) return path_;
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

void FieldReader::fail(std::string_view key, std::string_view message) {
  auto& slot = error_slot();
  if (slot) return;
  std::string where = path_of(key);
  slot = Error{code_, where.empty() ? std::string(message) : where + ": " + std::string(message)};
}

bool FieldReader::has(std::string_view key) const {
  auto it = value_.find(key);
  return it != value_.end() && !it->is_null();
}

const Json* FieldReader::get(std::string_view key) {
  known_.emplace(key);
  auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* FieldReader::require(std::string_view key, bool (Json::*is_type)() const noexcept,
                                 std::string_view type_name, bool required) {
  const Json* v = get(key);
  if (!v) {
    if (required) fail(key, "is required");
    return nullptr;
  }
  if (!(v->*is_type)()) {
    fail(key, "must be " + std::string(type_name));
    return nullptr;
  }
  return v;
}

std::string FieldReader::string(std::string_view key) {
  const Json* v = require(key, &Json::is_string, "a string", true);
  return v ? v->get<std::string>() : std::string();
}

std::string FieldReader::string_or(std::string_view key, std::string fallback) {
  const Json* v = require(key, &Json::is_string, "a string", false);
  return v ? v->get<std::string>() : std::move(fallback);
}

std::optional<std::string> FieldReader::optional_string(std::string_view key) {
  const Json* v = require(key, &Json::is_string, "a string", false);
  if (!v) return std::nullopt;
  return v->get<std::string>();
}

std::optional<int64_t> FieldReader::optional_integer(std::string_view key, int64_t min, int64_t max) {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  int64_t out = 0;
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    fail(key, "must be an integer");
    return std::nullopt;
  }
  if (!fits(*v, min, max, out)) {
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return std::nullopt;
  }
  return out;
}

int64_t FieldReader::integer(std::string_view key, int64_t min, int64_t max) {
  if (!has(key)) {
    get(key);
    fail(key, "is required");
    return min;
  }
  return optional_integer(key, min, max).value_or(min);
}

int64_t FieldReader::integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  return optional_integer(key, min, max).value_or(fallback);
}

bool FieldReader::boolean_or(std::string_view key, bool fallback) {
  const Json* v = require(key, &Json::is_boolean, "true or false", false);
  return v ? v->get<bool>() : fallback;
}

Json FieldReader::object_or_empty(std::string_view key) {
  const Json* v = require(key, &Json::is_object, "a JSON object", false);
  return v ? *v : Json::object();
}

const Json& FieldReader::array(std::string_view key) {
  static const Json kEmptyArray = Json::array();
  const Json* v = require(key, &Json::is_array, "an array", false);
  return v ? *v : kEmptyArray;
}

std::vector<std::string> FieldReader::string_list(std::string_view key) {
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

std::map<std::string, std::string> FieldReader::string_map(std::string_view key) {
  std::map<std::string, std::string> out;
  const Json* v = require(key, &Json::is_object, "a JSON object", false);
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

std::map<std::string, bool> FieldReader::bool_map(std::string_view key) {
  std::map<std::string, bool> out;
  const Json* v = require(key, &Json::is_object, "a JSON object", false);
  if (!v) return out;
  for (const auto& [k, item] : v->items()) {
    if (!item.is_boolean()) {
      fail(std::string(key) + "." + k, "must be true or false");
      return {};
    }
    out.emplace(k, item.get<bool>());
  }
  return out;
}

std::vector<Json> FieldReader::object_list(std::string_view key) {
  std::vector<Json> out;
  const Json& items = array(key);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_object()) {
      fail(std::string(key) + "[" + std::to_string(i) + "]", "must be a JSON object");
      return {};
    }
    out.push_back(items[i]);
  }
  return out;
}

FieldReader FieldReader::child(std::string_view key, bool required) {
  const Json* v = require(key, &Json::is_object, "a JSON object", required);
  return FieldReader(v ? *v : empty_object(), path_of(key), *this);
}

FieldReader FieldReader::element(std::string_view key, const Json& array, size_t index) {
  return FieldReader(array.at(index), path_of(key) + "[" + std::to_string(index) + "]", *this);
}

Status FieldReader::finish() {
  if (ok()) {
    for (const auto& [key, ignored] : value_.items()) {
      if (!known_.contains(key)) {
        fail(key, "unknown field");
        break;
      }
    }
  }
  if (auto& slot = error_slot()) return std::unexpected(*slot);
  return {};
}

Status check_canonical_numbers(const Json& value, std::string_view what) {
  std::string path;
  return check_numbers_at(value, path, what, 0);
}

}  // namespace warden::executor
