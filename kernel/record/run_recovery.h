// Recording the end of runs whose process died: a run killed (SIGKILL, a crash, a power
// loss) or unable to record its own end (a full disk) stays at its last recorded status,
// "running" forever, unless someone records what happened. The next kernel process to open
// the ledger (prepare_build) and `warden run recover` do: each such run gets a run_status
// `interrupted` record and a run_failed event saying where it stopped.
//
// The branch. Commits are write-ahead (records.h, CommitIntentRecord): a run that died
// between moving its branch and confirming the move leaves the branch at a commit the ledger
// records only as an intent. With the repository at hand, recovery moves such a branch back
// to the intent's parent (compare-and-swap: only from exactly that commit), so the branch
// again holds only what the ledger confirmed; without it, it says so and leaves the branch
// (replay --repo still accepts the intent's commit, with a warning). Only an intent that
// stands is acted on — one that follows an accepted decision of its run, step and attempt,
// on the run's last confirmed commit: anyone who can append to a ledger can append an intent,
// and recovery must not become a way to move a branch where no decision put it.
//
// Held-out bundles that judged the run alone (HeldOutReveal::at_run_end) are revealed once
// its end is recorded, as the run itself would have.
//
// Which runs: the ones named (even without a marker), or every run whose marker
// (run_registry.h) outlived its process. A run whose process is alive is never touched, nor
// is one whose recorded status is already terminal (its marker is just removed).
//
// Borrows everything it is given for the call; one call at a time per Ledger. Errors are
// the ledger's or the repository's (nothing is half-recorded: each run's records are one
// transaction).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"
#include "runner/workspace/git_repo.h"

namespace warden::kernel {

struct RecoveredRun {
  std::string run_id;
  std::string last_status;                   // the status the run had recorded; "" for none
  bool recorded = false;                     // interrupted was recorded now (false: it had ended, or is live)
  bool live = false;                         // its process is alive: nothing was done
  std::optional<CommitRecord> unconfirmed;   // a commit intent no commit record confirmed
  std::string branch;                        // what became of the branch, for people
  std::string message;                       // the recorded error
  std::string held_out;                      // the held-out bundles revealed for it now (held_out.h), for people

  Json to_json() const;
};

Result<std::vector<RecoveredRun>> recover_runs(Ledger& ledger, Clock& clock, IdSource& ids, GitRepo* repo,
                                               const std::vector<std::string>& run_ids = {});

}  // namespace warden::kernel
