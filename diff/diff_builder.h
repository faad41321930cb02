// Turns parsed patch text into the canonical Diff, reading the base tree for pre-images:
// every before/after hash is computed here, and the patch's own index lines (git blob ids)
// must agree with the base and with the computed result.
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
