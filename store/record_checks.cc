#include "store/record_checks.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/canonical_json.h"

namespace warden::store {

Status check_id(std::string_view id, std::string_view what) {
  if (id.empty()) return fail(Errc::invalid_argument, std::string(what) + " must not be empty");
  if (id.size() > kMaxIdBytes) {
    return fail(Errc::invalid_argument, std::string(what) + " is " + std::to_string(id.size()) + " bytes (at most " +
                                            std::to_string(kMaxIdBytes) + ")");
  }
  const bool printable = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '-';
  });
  if (!printable) {
    return fail(Errc::invalid_argument, std::string(what) + " \"" + escape_invalid_utf8(id) +
                                            "\": only letters, digits and . _ : - are allowed");
  }
  return {};
}

Status check_agent_record(const AgentRecord& record) {
  if (auto ok = check_id(record.id, "agent id"); !ok) return ok;
  if (auto ok = check_id(record.role, "agent role"); !ok) return ok;
  if (auto ok = check_id(record.state, "agent state"); !ok) return ok;
  if (record.labels.size() > kMaxLabels) {
    return fail(Errc::invalid_argument, "agent " + record.id + " has " + std::to_string(record.labels.size()) +
                                            " labels (at most " + std::to_string(kMaxLabels) + ")");
  }
  for (const auto& [name, value] : record.labels) {
    if (auto ok = check_id(name, "label name"); !ok) return ok;
    if (value.size() > kMaxLabelValueBytes || !is_valid_utf8(value)) {
      return fail(Errc::invalid_argument, "label " + name + ": the value must be valid UTF-8 of at most " +
                                              std::to_string(kMaxLabelValueBytes) + " bytes");
    }
  }
  if (record.details.size() > kMaxDetailsBytes) {
    return fail(Errc::invalid_argument, "agent " + record.id + ": details of " + std::to_string(record.details.size()) +
                                            " bytes (at most " + std::to_string(kMaxDetailsBytes) + ")");
  }
  return {};
}

Status check_task(const Task& task) {
  if (auto ok = check_id(task.id, "task id"); !ok) return ok;
  if (!task.kind.empty()) {
    if (auto ok = check_id(task.kind, "task kind"); !ok) return ok;
  }
  if (task.payload.size() > kMaxPayloadBytes) {
    return fail(Errc::invalid_argument, "task " + task.id + ": the payload is " + std::to_string(task.payload.size()) +
                                            " bytes (at most " + std::to_string(kMaxPayloadBytes) + ")");
  }
  return {};
}

Status check_event(std::string_view bytes) {
  if (bytes.size() > kMaxEventBytes) {
    return fail(Errc::invalid_argument, "an event of " + std::to_string(bytes.size()) + " bytes (at most " +
                                            std::to_string(kMaxEventBytes) + ")");
  }
  return {};
}

Status check_agent_write(const AgentWrite& write) {
  if (Status st = check_agent_record(write.record); !st) return st;
  if (Status st = check_event(write.event); !st) return st;
  if (write.expected_version == 0) {
    return fail(Errc::invalid_argument, "agent \"" + write.record.id + "\": a write carried by another call updates an "
                                        "agent and needs its expected version, not 0");
  }
  return {};
}

Status check_claim_ref(const ClaimRef& ref) {
  if (auto ok = check_id(ref.task_id, "task id"); !ok) return ok;
  return check_id(ref.agent_id, "agent id");
}

Result<int64_t> lease_expiry(int64_t now_ms, int64_t visibility_timeout_ms) {
  if (visibility_timeout_ms <= 0) {
    return fail(Errc::invalid_argument, "visibility_timeout_ms must be positive, got " + std::to_string(visibility_timeout_ms));
  }
  if (now_ms > std::numeric_limits<int64_t>::max() - visibility_timeout_ms) {
    return fail(Errc::invalid_argument, "now_ms + visibility_timeout_ms overflows");
  }
  return now_ms + visibility_timeout_ms;
}

}  // namespace warden::store
