// The field readers and writers the record files share (records.cc, attempt_records.cc,
// commit_records.cc): private to kernel/record. Strict in the way records.h promises: every
// field typed, the error naming the JSON path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_reader.h"
#include "kernel/record/records.h"

namespace warden::kernel::detail {

inline constexpr uint64_t kMaxSeq = static_cast<uint64_t>(kMaxCanonicalInteger);

inline Json nullable(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

template <typename T>
inline Result<T> done(JsonReader& r, T value) {
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return value;
}

inline void non_empty(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && out.empty()) r.fail(key, "must not be empty");
}

inline void git_id(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && !is_git_object_id(out)) r.fail(key, "must be a git object id (40 lowercase hex characters)");
}

inline void attempt_number(JsonReader& r, int64_t& out) { r.integer("attempt", out, 1, kMaxCanonicalInteger); }

// A field that must be present and may be null.
inline void nullable_seq(JsonReader& r, const std::string& key, std::optional<uint64_t>& out) {
  const Json* v = r.any(key);
  if (!v || v->is_null()) return;
  if (!v->is_number_unsigned()) {
    r.fail(key, "must be a sequence number or null");
    return;
  }
  out = v->get<uint64_t>();
}

inline void object(JsonReader& r, const std::string& key, Json& out) {
  if (const Json* v = r.value(key, Json::value_t::object)) out = *v;
}

inline void read_reasons(JsonReader& r, const std::string& key, std::vector<Reason>& out) {
  const Json* list = r.value(key, Json::value_t::array);
  if (!list) return;
  for (size_t i = 0; i < list->size() && r.ok(); ++i) {
    JsonReader item((*list)[i], r.path(key) + "[" + std::to_string(i) + "]");
    Reason reason;
    item.string("code", reason.code);
    item.string("detail", reason.detail);
    r.adopt(item.finish());
    out.push_back(std::move(reason));
  }
}

inline Json reasons_json(const std::vector<Reason>& reasons) {
  Json out = Json::array();
  for (const Reason& r : reasons) out.push_back({{"code", r.code}, {"detail", r.detail}});
  return out;
}

// The subject field of a refusal, checked against the struct's.
inline void read_subject(JsonReader& r, std::string_view want) {
  std::string got;
  r.string("subject", got);
  if (r.ok() && got != want) r.fail("subject", "must be \"" + std::string(want) + "\"");
}

}  // namespace warden::kernel::detail
