// The payload of a ledger record of kind "commit": what the build loop appends for every
// accepted change (the git commit it made, and the digests of everything the decision was
// made from). Acceptance receipts are built from, and checked against, this record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

inline constexpr std::string_view kCommitRecordKind = "commit";

struct CommitRecord {
  std::string run_id;
  std::string step_id;
  uint64_t attempt = 0;
  std::string commit;  // git ids: 40 lowercase hex
  std::string tree;
  std::string parent;
  std::string branch;  // full ref name, refs/heads/...
  Digest plan_sha256;
  Digest proposal_sha256;  // the accepted Diff's diff_sha256
  Digest run_result_sha256;
  Digest policy_sha256;
  uint64_t decision_seq = 0;  // ledger seq of the decision record

  Json to_json() const;
  // Strict: every field required and typed, unknown fields refused, errors name the field.
  static Result<CommitRecord> from_json(const Json& json, std::string_view where = "commit record");

  bool operator==(const CommitRecord&) const = default;
};

// 40 lowercase hex characters: a SHA-1 git object id as Warden spells it.
bool is_git_object_id(std::string_view text);

}  // namespace warden
