// Where held-out bundles (held_out.h) and the results of the runs that used them wait for
// their reveal: beside the ledger, readable only by Warden's uid, and never in the ledger, its
// blob store, an export, an event or a refusal until the owner reveals the bundle.
//   <ledger>/held-out/                        0700
//   <ledger>/held-out/<hex>/bundle.json       0600  HeldOutBundle::to_json()
//   <ledger>/held-out/<hex>/runs/<hex>.json   0600  a sealed run: its deterministic result and
//                                                   the bytes of every blob it names
//   <ledger>/held-out/<hex>/errors.log        0600  why runs with it could not run
//   <ledger>/held-out/<hex>/one-run           0600  sealed for one build run (revealed at its end)
//   <ledger>/held-out/<hex>/revealed          0600  the reveal is in the ledger
// The sandbox sees none of it: a check's sandbox binds the tree under test, never the ledger.
//
// A HeldOutVault holds only its path; concurrent writers of the same bundle write the same
// bytes (files are replaced atomically). Errors: not_found for a bundle never sealed,
// corrupt for one whose bytes no longer hash to its name, io errors as they come.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/held_out.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

// A held-out run's result, kept until the reveal.
struct SealedRun {
  Digest run_result_sha256;  // RunResult::deterministic_digest(), as the held_out_run record commits to
  Json run_result;           // RunResult::deterministic_json()
  RunBodies bodies;          // every blob the result names (its outputs)

  Json to_json() const;  // {"run_result_sha256", "run_result", "bodies": {"sha256:...": "<base64>"}}
  static Result<SealedRun> from_json(const Json& json);
};

class HeldOutVault {
 public:
  explicit HeldOutVault(const std::filesystem::path& ledger_dir) : dir_(ledger_dir / "held-out") {}

  Status seal(const HeldOutBundle& bundle) const;
  // Seals a bundle that judges one build run alone: sealed_like() never offers it to another.
  Status seal_for_run(const HeldOutBundle& bundle) const;
  Result<HeldOutBundle> open(const Digest& bundle) const;
  Status seal_run(const Digest& bundle, const SealedRun& run) const;
  // Every run sealed with the bundle, by result digest.
  Result<std::vector<SealedRun>> runs(const Digest& bundle) const;

  // A sealed bundle not yet revealed with the same place and files as `bundle` (its salt
  // aside): the same tests judging another proposal keep one digest, so one reveal covers
  // every decision they made. None when there is none.
  std::optional<HeldOutBundle> sealed_like(const HeldOutBundle& bundle) const;
  // Keeps why a run with the bundle failed to run (the runner's words may name its files), for
  // the owner: <hex>/errors.log, one line each.
  Status note_error(const Digest& bundle, std::string_view why) const;
  // Marks the bundle revealed: sealed_like() no longer offers it (its files are public now).
  Status mark_revealed(const Digest& bundle) const;
  bool revealed(const Digest& bundle) const;

 private:
  std::filesystem::path bundle_dir(const Digest& bundle) const;
  std::filesystem::path dir_;
};

}  // namespace warden::kernel
