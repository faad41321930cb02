// Turns parsed patch text into the canonical Diff, reading the base tree for pre-images:
// every before/after hash is computed here, and the patch's own index lines (git blob ids)
// must agree with the base and with the computed result.
//
// Borrows `base` for the call only; the returned Diff is the caller's. Stateless. A Refusal
// means the patch text is malformed or does not describe a change to this base (or, as
// "repository_error", that the base could not be read); nothing is written either way. Delta
// results come to kMaxBinaryBytes at most in all (patch_too_large beyond), and a step id or
// path that is not UTF-8 is refused: the Diff is JSON. A refusal's text is always UTF-8.
#pragma once

#include <string>
#include <vector>

#include "diff/base_tree.h"
#include "diff/diff.h"
#include "diff/patch.h"

namespace warden {

Checked<Diff> build_diff(const std::vector<PatchFile>& files, BaseTree& base, std::string step_id);

// parse_patch then build_diff.
Checked<Diff> diff_from_patch(std::string_view patch_text, BaseTree& base, std::string step_id);

}  // namespace warden
