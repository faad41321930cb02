// Where a ledger's keys live, one place for every command:
//   DIR/signer.key  the note signer key that signs DIR's checkpoints (mode 0600)
//   DIR/signer.pub  its verifier key, to publish and to verify receipts and checkpoints with
// Creating a ledger writes both (Ledger::create; a ledger imported from an export gets only
// signer.pub: its signer key is whoever made the export's). A command that signs reads
// DIR/signer.key unless the operator names a key file, which then overrides it.
//
// DIR/signer.key is Warden's own file, so it is read only as Warden wrote it: a regular file,
// not a symlink (a link may point at anyone's key), that neither group nor others may read or
// write (a key others could read has leaked). Anything else is refused and names the fix. A
// key file the operator names is theirs: links are followed, and one that others may read is
// used with a warning.
//
// Ledgers made before this rule kept their signer key beside the directory: DIR.key (warden
// propose) or DIR/../kernel.key (warden build's default <out>/ledger). When DIR/signer.key is
// missing and DIR holds a ledger, those are read (with a warning naming the move to make);
// nothing is ever written there.
//
// Stateless functions; any thread. Errors: not_found when there is no key to find,
// invalid_argument for a key file refused or unreadable as a key, io_error from the disk.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "ledger/note.h"

namespace warden {

inline constexpr std::string_view kLedgerSignerKeyFile = "signer.key";
inline constexpr std::string_view kLedgerVerifierKeyFile = "signer.pub";

std::filesystem::path ledger_signer_key_path(const std::filesystem::path& dir);
std::filesystem::path ledger_verifier_key_path(const std::filesystem::path& dir);

struct SignerKey {
  NoteSigner signer;
  std::filesystem::path path;         // the file it was read from or written to
  std::vector<std::string> warnings;  // for the operator (stderr)
};

// A signer key file the operator named (--key, --signer-key).
Result<SignerKey> read_given_signer_key(const std::filesystem::path& file);

// The signer key of the ledger in `dir`: `given` when set, else DIR/signer.key, else a
// location of an older Warden (above). not_found says what was looked for.
Result<SignerKey> find_ledger_signer_key(const std::filesystem::path& dir, const std::optional<std::filesystem::path>& given);

// The signer key for the ledger in `dir`, which may not exist yet: as find_ledger_signer_key
// when `given` is set, DIR holds a ledger, or DIR/signer.key exists; else a new key named
// `name`, written to DIR/signer.key (DIR and its parents created) before any ledger uses it,
// never over another: of several processes creating one ledger, all use the first one's key.
Result<SignerKey> ledger_signer_key(const std::filesystem::path& dir, const std::optional<std::filesystem::path>& given,
                                    const std::string& name);

// For Ledger::create, before the ledger exists: Errc::already_exists when DIR/signer.key
// holds another key than `signer` (a ledger must never sit beside a key that cannot sign it).
Status check_ledger_key_slot(const std::filesystem::path& dir, const NoteSigner& signer);

// For Ledger::create, once the ledger is in place: DIR/signer.pub, and DIR/signer.key from
// `signer` unless it is there already (checked by check_ledger_key_slot).
Status write_ledger_keys(const std::filesystem::path& dir, const NoteVerifier& verifier, const NoteSigner* signer);

}  // namespace warden
