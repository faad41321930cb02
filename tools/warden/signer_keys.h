// How every command finds a ledger's signer key (the rule is ledger/ledger_keys.h's: the
// ledger directory holds signer.key and signer.pub; a key file named on the command line
// overrides). Warnings (a key others may read, a key at an older Warden's location) go to
// stderr here; errors name the flag that passes a key.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.h"
#include "ledger/note.h"

namespace warden::cli {

// For a command that creates the ledger in `dir` when it is missing: `key_file` when not
// empty, else the ledger's own key, else (no ledger yet) a new key named `name`, kept in
// DIR/signer.key. `flag` is the command's key flag (--key, --signer-key).
Result<NoteSigner> signer_for_ledger(const std::filesystem::path& dir, const std::string& key_file,
                                     const std::string& name, std::string_view flag);

// For a command that signs an existing ledger: `key_file` when not empty, else the ledger's
// own key. not_found says which flag to pass.
Result<NoteSigner> signer_of_ledger(const std::filesystem::path& dir, const std::string& key_file, std::string_view flag);

}  // namespace warden::cli
