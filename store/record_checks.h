// What every StateStore accepts, checked before anything is written: bounded, printable ids
// and bounded records, so an agent or a submitter cannot wedge a store (a record too large for
// one Redis script call, an id no key or JSON text can hold) or the supervisor that reads it.
// One home for both implementations, so they refuse the same inputs with the same words.
//
// Pure functions; safe from any thread. Every error is invalid_argument naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "store/state_store.h"

namespace warden::store {

inline constexpr size_t kMaxIdBytes = 128;
inline constexpr size_t kMaxLabels = 64;
inline constexpr size_t kMaxLabelValueBytes = 256;
inline constexpr size_t kMaxDetailsBytes = size_t{64} << 10;
inline constexpr size_t kMaxPayloadBytes = size_t{1} << 20;
inline constexpr size_t kMaxEventBytes = size_t{64} << 10;

// 1..kMaxIdBytes bytes of [A-Za-z0-9._:-]: agent and task ids, roles, kinds, states, label
// names and consumer names.
Status check_id(std::string_view id, std::string_view what);
// The id, role, state and labels as check_id (label values: valid UTF-8 up to
// kMaxLabelValueBytes), at most kMaxLabels labels, details (opaque bytes) up to kMaxDetailsBytes.
Status check_agent_record(const AgentRecord& record);
// The id as check_id, the kind as check_id or empty, the payload up to kMaxPayloadBytes.
Status check_task(const Task& task);
// An event's bytes: at most kMaxEventBytes.
Status check_event(std::string_view bytes);
// The record as check_agent_record, the event as check_event, a non-zero expected version.
Status check_agent_write(const AgentWrite& write);
// The ids of a claim reference as check_id.
Status check_claim_ref(const ClaimRef& ref);
// now_ms + visibility_timeout_ms, refusing a non-positive timeout or an expiry past int64.
Result<int64_t> lease_expiry(int64_t now_ms, int64_t visibility_timeout_ms);

}  // namespace warden::store
