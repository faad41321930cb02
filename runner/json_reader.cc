#include "runner/json_reader.h"

namespace warden {

JsonReader::JsonReader(const Json& json, std::string where) : json_(&json), where_(std::move(where)) {
  if (!json.is_object()) error_ = Error{Errc::invalid_argument, where_ + ": must be a JSON object"};
}

void JsonReader::fail(const std::string& key, const std::string& message) {
  if (!error_) error_ = Error{Errc::invalid_argument, (key.empty() ? where_ : path(key)) + ": " + message};
}

Status JsonReader::finish() {
  if (error_) return std::unexpected(*error_);
  for (const auto& [key, value] : json_->items()) {
    if (!seen_.contains(key)) return warden::fail(Errc::invalid_argument, path(key) + ": unknown field");
  }
  return {};
}

bool JsonReader::has(const std::string& key) const { return json_->is_object() && json_->contains(key); }

const Json* JsonReader::any(const std::string& key, bool required) {
  seen_.insert(key);
  if (error_) return nullptr;
  auto it = json_->find(key);
  if (it == json_->end()) {
    if (required) fail(key, "missing");
    return nullptr;
  }
  return &*it;
}

const Json* JsonReader::value(const std::string& key, Json::value_t type, bool required) {
  const Json* it = any(key, required);
  if (!it) return nullptr;
  bool type_ok = it->type() == type ||
                 (type == Json::value_t::number_unsigned && it->type() == Json::value_t::number_integer) ||
                 (type == Json::value_t::number_integer && it->type() == Json::value_t::number_unsigned);
  if (!type_ok) {
    const char* name = type == Json::value_t::string    ? "a string"
                       : type == Json::value_t::boolean ? "a boolean"
                       : type == Json::value_t::array   ? "an array"
                       : type == Json::value_t::object  ? "an object"
                                                         : "an integer";
    fail(key, std::string("must be ") + name);
    return nullptr;
  }
  return it;
}

void JsonReader::string(const std::string& key, std::string& out, bool required) {
  if (const Json* v = value(key, Json::value_t::string, required)) out = v->get<std::string>();
}

void JsonReader::boolean(const std::string& key, bool& out, bool required) {
  if (const Json* v = value(key, Json::value_t::boolean, required)) out = v->get<bool>();
}

void JsonReader::integer(const std::string& key, int64_t& out, int64_t min, int64_t max, bool required) {
  const Json* v = value(key, Json::value_t::number_integer, required);
  if (!v) return;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return fail(key, "out of range");
  }
  int64_t n = v->get<int64_t>();
  if (n < min || n > max) return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  out = n;
}

void JsonReader::unsigned_integer(const std::string& key, uint64_t& out, uint64_t min, uint64_t max, bool required) {
  const Json* v = value(key, Json::value_t::number_unsigned, required);
  if (!v) return;
  if (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0) return fail(key, "must not be negative");
  uint64_t n = v->get<uint64_t>();
  if (n < min || n > max) return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  out = n;
}

void JsonReader::digest(const std::string& key, Digest& out, bool required) {
  std::string text;
  bool present = has(key);
  string(key, text, required);
  if (!present || !ok()) return;
  auto d = Digest::parse(text);
  if (!d) return fail(key, "must be sha256:<64 lowercase hex>");
  out = *d;
}

void JsonReader::optional_digest(const std::string& key, std::optional<Digest>& out) {
  if (!has(key)) {
    seen_.insert(key);
    return;
  }
  Digest d;
  digest(key, d, true);
  if (ok()) out = d;
}

void JsonReader::nullable_string(const std::string& key, std::optional<std::string>& out) {
  seen_.insert(key);
  if (error_ || !json_->contains(key) || json_->at(key).is_null()) return;
  if (!json_->at(key).is_string()) return fail(key, "must be a string or null");
  out = json_->at(key).get<std::string>();
}

void JsonReader::nullable_digest(const std::string& key, std::optional<Digest>& out) {
  std::optional<std::string> text;
  nullable_string(key, text);
  if (!text || error_) return;
  auto d = Digest::parse(*text);
  if (!d) return fail(key, "must be sha256:<64 lowercase hex> or null");
  out = *d;
}

const Json* JsonReader::nullable_object(const std::string& key) {
  seen_.insert(key);
  if (error_) return nullptr;
  if (!json_->contains(key)) {
    fail(key, "missing");
    return nullptr;
  }
  const Json& v = json_->at(key);
  if (v.is_null()) return nullptr;
  if (!v.is_object()) {
    fail(key, "must be an object or null");
    return nullptr;
  }
  return &v;
}

void JsonReader::strings(const std::string& key, std::vector<std::string>& out, bool required) {
  const Json* v = value(key, Json::value_t::array, required);
  if (!v) return;
  out.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) return fail(key, "element " + std::to_string(i) + " must be a string");
    out.push_back((*v)[i].get<std::string>());
  }
}

void JsonReader::string_map(const std::string& key, std::map<std::string, std::string>& out, bool required) {
  const Json* v = value(key, Json::value_t::object, required);
  if (!v) return;
  out.clear();
  for (const auto& [k, item] : v->items()) {
    if (!item.is_string()) return fail(key, "\"" + k + "\" must be a string");
    out[k] = item.get<std::string>();
  }
}

}  // namespace warden
