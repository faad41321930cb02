// The identifier rule: names Warden takes from users, executors and clients that become path
// components, command-line words and ledger fields — run ids, repository and blueprint names,
// remote executor labels. 1 to `max_bytes` bytes of ASCII letters, digits, '-', '_' and '.',
// not starting with '.' or '-': never a separator, never ".", ".." or a hidden file, never an
// option of the command line it is passed on.
//
// The state store's ids (agent ids, task ids: store/record_checks.h) follow their own rule,
// which also allows ':' and a leading '.' or '-': they are keys, never paths or argv words.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/error.h"

namespace warden {

inline constexpr size_t kMaxIdentifierBytes = 128;

// The rule in words, for error messages.
inline constexpr std::string_view kIdentifierRule =
    "letters, digits, '-', '_' and '.', not starting with '.' or '-'";

bool is_identifier(std::string_view text, size_t max_bytes = kMaxIdentifierBytes);

// invalid_argument "<what> \"<text>\" is not a name: <rule>" (or its length) when `text`
// breaks the rule.
Status check_identifier(std::string_view text, std::string_view what, size_t max_bytes = kMaxIdentifierBytes);

}  // namespace warden
