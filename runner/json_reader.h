// Strict reading of the runner's JSON objects (profiles, check specs, run results): every
// field typed, unknown keys refused, and the first problem reported with its JSON path
// ("profile.limits.cpu_seconds: must be a positive integer"). Readers record the first
// error and ignore later calls, so a parser reads straight through and asks once at the end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

class JsonReader {
 public:
  // `where` names the object in messages; a non-object records an error at once.
  JsonReader(const Json& json, std::string where);

  bool ok() const { return !error_; }
  const std::string& where() const { return where_; }
  // The first error, or the unknown keys when everything else was fine.
  Status finish();
  void fail(const std::string& key, const std::string& message);
  // Takes a nested reader's error (its message already carries the full path).
  void adopt(const Status& status) {
    if (!status && !error_) error_ = status.error();
  }

  bool has(const std::string& key) const;
  // Each getter marks the key as known; `required` fields must be present.
  void string(const std::string& key, std::string& out, bool required = true);
  void boolean(const std::string& key, bool& out, bool required = true);
  void integer(const std::string& key, int64_t& out, int64_t min, int64_t max, bool required = true);
  void unsigned_integer(const std::string& key, uint64_t& out, uint64_t min, uint64_t max, bool required = true);
  void digest(const std::string& key, Digest& out, bool required = true);
  void optional_digest(const std::string& key, std::optional<Digest>& out);
  void strings(const std::string& key, std::vector<std::string>& out, bool required = true);
  void string_map(const std::string& key, std::map<std::string, std::string>& out, bool required = true);
  // The raw value for nested readers; null when absent (and an error if required).
  const Json* value(const std::string& key, Json::value_t type, bool required = true);
  // The raw value whatever its type, for fields kept as received and judged later.
  const Json* any(const std::string& key, bool required = true);
  // A nullable field: absent or null gives nullopt; anything else must be a string.
  void nullable_string(const std::string& key, std::optional<std::string>& out);
  void nullable_digest(const std::string& key, std::optional<Digest>& out);
  // The object at `key`, or null when the field is null (it must be present).
  const Json* nullable_object(const std::string& key);
  std::string path(const std::string& key) const { return where_ + "." + key; }

 private:
  const Json* json_;
  std::string where_;
  std::set<std::string> seen_;
  std::optional<Error> error_;
};

}  // namespace warden
