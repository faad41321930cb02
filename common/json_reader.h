// The one strict reader for Warden's JSON formats (profiles, check specs, run results,
// blueprints, plans, verdicts, pipeline configs, envelopes, agent answers, run records):
// every field typed and range-checked, unknown keys refused, and the first problem reported
// as one Error naming its JSON path ("profile.limits.cpu_seconds: must be an integer",
// "stages[2].routing[0].when.op: is required").
//
// Getters never fail on the spot: they record the first error and leave the output alone (or
// return a default), so a parser reads top to bottom and asks finish() once at the end.
// Readers made with child()/element() report into their parent's error slot; a reader made
// by hand over a nested value reports on its own and its parent takes the result with adopt().
//
// Two dialects, because the formats were written by two readers and their error texts are
// now in tests, run records and ledgers (see JsonDialect). They differ only in how a JSON
// null reads and in a few words; paths, ranges and "unknown field" are the same in both.
//
// Ownership: a reader borrows the Json it reads (it must outlive the reader) and a child
// borrows its parent (the parent must outlive the child and must not move while it lives;
// copying is disabled for that reason). Thread safety: none; a reader is a local of one parse.
// Errors: every error has the reader's Errc (invalid_argument unless the caller says, e.g.
// corrupt for stored records) except limit_exceeded from check_canonical_numbers' depth bound.
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
#include "common/sha256.h"

namespace warden {

enum class JsonDialect {
  // Runner and kernel formats: JSON null is a value like any other (a type error unless the
  // field is read as nullable); messages say "missing", "must be a boolean", "must be an
  // object".
  null_is_value,
  // Executor formats (their optional fields are written as null): JSON null reads as an
  // absent field; messages say "is required", "must be true or false", "must be a JSON
  // object".
  null_is_absent,
};

class JsonReader {
 public:
  // `where` names the value in messages ("profile", "stages[2]"; empty for a top-level value
  // whose keys are paths on their own). A non-object records an error at once.
  JsonReader(const Json& json, std::string where, JsonDialect dialect = JsonDialect::null_is_value,
             Errc code = Errc::invalid_argument);
  // The reader borrows the JSON it reads: over a temporary it would read freed memory.
  JsonReader(Json&& json, std::string where, JsonDialect dialect = JsonDialect::null_is_value,
             Errc code = Errc::invalid_argument) = delete;
  JsonReader(const JsonReader&) = delete;
  JsonReader& operator=(const JsonReader&) = delete;

  bool ok() const { return !error_slot().has_value(); }
  const std::string& where() const { return where_; }
  // "where.key" ("key" when `where` is empty; `where` when `key` is empty).
  std::string path(std::string_view key) const;

  // The first error (of this reader and every child made from it), or the first unknown
  // key when everything else was fine.
  Status finish();
  // Records "path.key: message" (or "where: message" for an empty key) unless an error is
  // already recorded.
  void fail(std::string_view key, std::string_view message);
  // Takes a hand-made nested reader's error (its message already carries the full path).
  void adopt(const Status& status) {
    if (!status && !error_slot()) error_slot() = status.error();
  }

  // Whether the key is present (and, in null_is_absent, not null). Does not mark it known.
  bool has(std::string_view key) const;

  // --- Getters that write into `out`; `out` is left alone when the field is absent or bad.
  void string(std::string_view key, std::string& out, bool required = true);
  void boolean(std::string_view key, bool& out, bool required = true);
  void integer(std::string_view key, int64_t& out, int64_t min, int64_t max, bool required = true);
  void unsigned_integer(std::string_view key, uint64_t& out, uint64_t min, uint64_t max, bool required = true);
  void digest(std::string_view key, Digest& out, bool required = true);
  void optional_digest(std::string_view key, std::optional<Digest>& out);
  // Element errors read "key: element i must be a string".
  void strings(std::string_view key, std::vector<std::string>& out, bool required = true);
  // Entry errors read "key: \"k\" must be a string".
  void string_map(std::string_view key, std::map<std::string, std::string>& out, bool required = true);
  // A nullable field: absent or null gives nullopt; anything else must be a string.
  void nullable_string(std::string_view key, std::optional<std::string>& out);
  void nullable_digest(std::string_view key, std::optional<Digest>& out);

  // --- Raw values. These return null once an error is recorded, so nested reads stop.
  // The value for nested readers; null when absent (and an error if required).
  const Json* value(std::string_view key, Json::value_t type, bool required = true);
  // The value whatever its type, for fields kept as received and judged later.
  const Json* any(std::string_view key, bool required = true);
  // The object at `key`, or null when the field is null (it must be present).
  const Json* nullable_object(std::string_view key);

  // --- Getters that return the value (a default when absent or bad).
  // The field's value, or null when absent (or null in null_is_absent). Marks the key known.
  const Json* get(std::string_view key);
  std::string string(std::string_view key);  // required
  std::string string_or(std::string_view key, std::string fallback);
  std::optional<std::string> optional_string(std::string_view key);
  int64_t integer(std::string_view key, int64_t min, int64_t max);  // required
  int64_t integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max);
  std::optional<int64_t> optional_integer(std::string_view key, int64_t min, int64_t max);
  bool boolean_or(std::string_view key, bool fallback);
  // A JSON object (an empty one when absent).
  Json object_or_empty(std::string_view key);
  // Element errors read "key[i]: must be a string".
  std::vector<std::string> string_list(std::string_view key);
  // Entry errors read "key.k: must be a string".
  std::map<std::string, std::string> string_map(std::string_view key);
  std::map<std::string, bool> bool_map(std::string_view key);
  // An array of JSON objects (values kept as they are).
  std::vector<Json> object_list(std::string_view key);
  // The array at `key` (empty when absent); an error unless it is an array.
  const Json& array(std::string_view key);

  // --- Nested readers that report into this reader's error slot.
  // `key` must hold an object; an absent optional key gives a reader over an empty object.
  JsonReader child(std::string_view key, bool required = true);
  // A reader for element `index` of `array`, named "<path>.<key>[index]".
  JsonReader element(std::string_view key, const Json& array, size_t index);

 private:
  JsonReader(const Json& json, std::string where, JsonReader& parent);
  std::optional<Error>& error_slot() const { return root_ ? root_->error_ : error_; }
  // Marks the key known and finds it, applying the dialect's reading of null.
  const Json* find(std::string_view key);
  // find() plus the "missing" and type checks (an exact JSON type; integers of either sign).
  const Json* typed(std::string_view key, Json::value_t type, bool required);
  std::string_view missing_text() const;
  std::string_view type_text(Json::value_t type) const;

  const Json* json_;
  std::string where_;
  JsonDialect dialect_;
  Errc code_;
  JsonReader* root_ = nullptr;  // set for children: errors go to the root
  mutable std::optional<Error> error_;
  std::set<std::string, std::less<>> seen_;
};

// Refuses values a canonical (hashed) record cannot hold: floating-point numbers and
// integers outside +-(2^53-1), naming the JSON pointer of the first ("what: floating-point
// number at /a/0 ..."). Cheaper than canonicalizing when only the check is wanted. Nesting
// deeper than 256 is limit_exceeded.
Status check_canonical_numbers(const Json& value, std::string_view what);

}  // namespace warden
