// Strict reading of the executor's JSON formats (pipeline configs, envelopes, agent answers,
// ledger records): every field is typed and range-checked, unknown fields are refused, and the
// first problem comes back as one error naming the field ("stages[2].routing[0].when.op: ...").
//
// Getters never fail on the spot: they record the first error and return a default, so a
// parser reads top to bottom and asks finish() once at the end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::executor {

class FieldReader {
 public:
  // `value` must outlive the reader. `path` names it in messages ("config", "stages[2]").
  FieldReader(const Json& value, std::string path, Errc code = Errc::invalid_argument);
  FieldReader(const FieldReader&) = delete;
  FieldReader& operator=(const FieldReader&) = delete;

  // The field's value, or null when it is absent or JSON null. Marks the key as known.
  const Json* get(std::string_view key);
  bool has(std::string_view key) const;

  std::string string(std::string_view key);  // required
  std::string string_or(std::string_view key, std::string fallback);
  std::optional<std::string> optional_string(std::string_view key);
  int64_t integer(std::string_view key, int64_t min, int64_t max);  // required
  int64_t integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max);
  std::optional<int64_t> optional_integer(std::string_view key, int64_t min, int64_t max);
  bool boolean_or(std::string_view key, bool fallback);
  // A JSON object (an empty one when absent).
  Json object_or_empty(std::string_view key);
  std::vector<std::string> string_list(std::string_view key);
  std::map<std::string, std::string> string_map(std::string_view key);
  std::map<std::string, bool> bool_map(std::string_view key);
  // An array of JSON objects (values kept as they are).
  std::vector<Json> object_list(std::string_view key);
  // The array at `key` (empty when absent); error unless it is an array.
  const Json& array(std::string_view key);

  // A reader for a nested object that reports into this reader's error slot. `key` must
  // hold an object; an absent optional key gives a reader over an empty object.
  FieldReader child(std::string_view key, bool required = true);
  // A reader for element `index` of `array`, named "<path>.<key>[index]".
  FieldReader element(std::string_view key, const Json& array, size_t index);

  // Records "path.key: message" unless an earlier error is already recorded.
  void fail(std::string_view key, std::string_view message);
  std::string path_of(std::string_view key) const;
  bool ok() const { return !error_slot().has_value(); }

  // Refuses keys nobody asked for, then returns the first error (of this reader and every
  // child made from it).
  Status finish();

 private:
  FieldReader(const Json& value, std::string path, FieldReader& parent);
  std::optional<Error>& error_slot() const { return root_ ? root_->error_ : error_; }
  const Json* require(std::string_view key, bool (Json::*is_type)() const noexcept, std::string_view type_name,
                      bool required);

  const Json& value_;
  std::string path_;
  Errc code_;
  FieldReader* root_ = nullptr;  // set for children: errors go to the root
  mutable std::optional<Error> error_;
  std::set<std::string, std::less<>> known_;
};

// Refuses values a canonical (hashed) record cannot hold: floating-point numbers and
// integers outside +-(2^53-1). Cheaper than canonicalizing when only the check is wanted.
Status check_canonical_numbers(const Json& value, std::string_view what);

}  // namespace warden::executor
