// The one mapping from what went wrong to the `warden` CLI's exit status. Commands decide
// nothing themselves: an Error maps by its Errc, a refusal by its RefusalCode, so the same
// failure exits the same way from every subcommand (docs/commands.md and `warden --help` document
// the codes, and tests assert them).
//
// Pure functions over enums; safe from any thread.
#pragma once

#include "common/error.h"
#include "common/refusal.h"

namespace warden {

enum ExitCode : int {
  kOk = 0,
  kVerificationFailed = 1,  // a ledger, proof, signature or note did not verify; a change refused
  kUsage = 2,               // bad flags or arguments
  kInvalidInput = 3,        // malformed JSON, hash, key, file, patch or check; a limit exceeded
  kNotFound = 4,            // a ledger, record, file, key, repository or revision that does not exist
  kIoError = 5,             // storage or OS failure: permissions, disk, locks, the sandbox
  kAlreadyExists = 6,       // refusing to overwrite
  kInternal = 70,           // a bug: please report it
  kTimedOut = 124,          // a run's watchdog ended it (as timeout(1) exits)
  kCancelled = 130,         // a run stopped by Ctrl-C or `warden run cancel` (128 + SIGINT)
};

ExitCode exit_code_for(Errc code);
// Input that is malformed is the caller's (3); a repository, revision or sandbox that is
// missing or failing is the environment's (4, 5); anything else is a refusal of the change
// itself (1).
ExitCode exit_code_for(RefusalCode code);

// The other way: what a `warden` child's exit status says went wrong, for a caller that has
// no error line from it to go by. 1 is verification_failed, 2 and 3 invalid_argument, 4
// not_found, 5 io_error, 6 already_exists; anything else (70, a signal, 124, 130) internal.
Errc errc_for_exit(int code);

}  // namespace warden
