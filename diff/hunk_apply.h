// Applies hunks to a file's bytes exactly as stated: every context and removed line must
// match at the hunk's own line number. No fuzz, no offset search, no whitespace leniency.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"
#include "common/refusal.h"

namespace warden {

Checked<std::string> apply_hunks(std::string_view pre_image, const std::vector<Hunk>& hunks, const std::string& path);

}  // namespace warden
