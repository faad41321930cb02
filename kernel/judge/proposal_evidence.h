// ProposalEvidence: a proposal as decide() judges it and as the ledger keeps it (the blob a
// proposal record names) — the Diff JSON exactly as the executor sent it (untrusted, judged
// as received), the pre-image of every path it names as the kernel read it from the base
// tree, and what applying it to the real tree said. Replay judges the same bytes again.
// A plain value; from_json is strict and its errors name the field.
//
// As the ledger records it:
//   {"step_id": "s1", "diff": {...} | "the executor's raw text" | null,
//    "base": {"src/a.py": {"content": "..." | null, "mode": "100644"},
//             "bin/x": {"content_base64": "...", "mode": "100755"}},
//    "workspace_refusal": null | {"code": "...", "path": "...", "detail": "..."},
//    "patch_refusal": {"code": "hunk_mismatch", "path": "...", "detail": "..."},  (only when there is one)
//    "executor_refusal": {"code": "executor_timeout", "path": "", "detail": "..."}}  (likewise)
// A base entry has exactly one of content (UTF-8 text, or null: the path is absent from the
// base) and content_base64 (bytes that are not UTF-8), so every content has one spelling.
// patch_refusal and executor_refusal are absent rather than null when there is none, so the
// evidence of every other proposal is what it was before the fields existed (and old ledgers
// read).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/refusal.h"

namespace warden::kernel {

// A path's content in the base tree; nullopt content: the path does not exist there.
struct BaseFileImage {
  std::optional<std::string> content;
  uint32_t mode = 0100644;
  bool operator==(const BaseFileImage&) const = default;
};

struct ProposalEvidence {
  std::string step_id;                       // the step the executor says it implements
  Json diff;                                 // the Diff JSON as received (diff.h), untrusted
  std::map<std::string, BaseFileImage> base; // every path the diff names (path and old_path)
  // What applying the diff to the real base tree said (structural rules that need the whole
  // tree: case collisions, symlinked parents, file/directory clashes). None: it applied.
  std::optional<Refusal> workspace_refusal;
  // Why a patch (text that is not a Diff JSON) did not become a Diff against the base:
  // malformed_patch, hunk_mismatch, hash_mismatch, ... exactly as `warden diff parse` says it.
  // `diff` then holds the text itself (or null when it is long or not UTF-8).
  std::optional<Refusal> patch_refusal;
  // Why the executor gave nothing to judge (executor_timeout, executor_failed: the executor's
  // own Refusal, proposer.h); `diff` is then null. decide() refuses the attempt with its code.
  std::optional<Refusal> executor_refusal;

  Json to_json() const;  // base contents as base64 when not UTF-8
  static Result<ProposalEvidence> from_json(const Json& json);
};

}  // namespace warden::kernel
