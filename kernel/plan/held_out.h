// Held-out checks: tests the executor never sees. A bundle of files (a held-out test module,
// its data) is committed to before any proposal — the plan carries its digest only — laid over
// each proposal's tree at a path of the user's choosing in a run of its own, and revealed in
// the ledger only when its owner says so. An executor that sees the visible tests can fit its
// change to them (a table of their inputs and answers); it cannot fit one to tests it never
// reads.
//
// The digest is SHA-256 over the canonical JSON (RFC 8785) of the bundle's listing
//   {"format": "warden.held_out/v1", "at": "held_out",
//    "files": [{"path": "test_parse.py", "mode": 33188, "sha256": "sha256:..."}, ...],
//    "salt": "<64 hex>"}
// with the files sorted by path and a 32-byte random salt, so a small bundle cannot be
// guessed from its digest. The full bundle (the listing with every file's bytes, base64) is
// what the vault seals (held_out_vault.h) and a reveal record publishes.
//
// What an executor hears of a held-out run is how many of its tests (or checks, for a check
// that names none) did not pass: never a name, an output or a file.
//
// Plain values and pure functions; safe from any thread. Errors (invalid_argument) name the
// file or field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/random_source.h"
#include "common/sha256.h"
#include "runner/model/check_spec.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

inline constexpr const char* kHeldOutFormat = "warden.held_out/v1";
inline constexpr size_t kMaxHeldOutFiles = 10'000;
inline constexpr uint64_t kMaxHeldOutBytes = 64ull << 20;

struct HeldOutFile {
  std::string path;  // relative to the bundle, '/'-separated
  uint32_t mode = 0100644;  // 0100644 or 0100755
  std::string content;
};

struct HeldOutBundle {
  std::string at;                  // where the files are laid over the tree under test
  std::vector<HeldOutFile> files;  // sorted by path, unique
  std::string salt;                // 64 lowercase hex

  Json listing() const;  // what the digest is over: every file by its digest
  Digest digest() const;
  Json to_json() const;  // the listing with each file's bytes ("content_base64"): sealed, then revealed
  static Result<HeldOutBundle> from_json(const Json& json);
};

// The bundle of every regular file under `dir` (symlinks and special files refused), to be laid
// at `at` (relative, no "..", not inside .git or .warden), with a salt drawn from `random`.
Result<HeldOutBundle> read_held_out_dir(const std::filesystem::path& dir, std::string at, RandomSource& random);

// Where `path` would be laid: `at` + "/" + path.
std::string held_out_path(const HeldOutBundle& bundle, const HeldOutFile& file);

// Whether the tree path `path` is at or under the bundle's place `at`.
bool under_held_out(std::string_view at, std::string_view path);

// When a bundle is revealed. A build's bundle judges that run alone, and the kernel reveals it
// when the run ends (replay fails a decision of an ended run with no reveal after its end);
// one given to `warden propose` may judge many runs, and its owner reveals it.
enum class HeldOutReveal { by_owner, at_run_end };

// What a plan carries: the commitment and the checks that run the bundle, nothing of its files.
//   {"sha256": "sha256:...", "at": "held_out", "checks": [CheckSpec...], "reveal": "run_end",
//    "steps": ["s3", "s4"]}
// ("reveal" is absent for by_owner, "steps" when every step is judged.)
struct HeldOutSpec {
  Digest sha256;
  std::string at;
  std::vector<CheckSpec> checks;
  HeldOutReveal reveal = HeldOutReveal::by_owner;
  // The steps whose proposals the held-out checks judge; empty: every step. A build from
  // nothing cannot pass tests of a function before the step that writes it.
  std::vector<std::string> steps;

  bool judges(std::string_view step_id) const;

  Json to_json() const;
  static Result<HeldOutSpec> from_json(const Json& json, std::string_view where = "held_out");
};

// What a held_out_run record commits to instead of the sealed result's digest: SHA-256 over the
// canonical {"format": "warden.held_out_run/v1", "salt": <the bundle's salt>,
// "run_result_sha256": <the result's deterministic digest>}. The tested program can make its
// result predictable (its output is in it), so a bare digest would let an executor test
// guesses of what it printed — bytes of the bundle — offline; salted, it tells nothing until
// the reveal publishes the salt.
Digest sealed_result_commitment(std::string_view salt, const Digest& run_result_sha256);

// How many of a held-out run's tests did not pass: each failing test of a check that reports
// tests, and each check that did not pass with none failing, or that reports tests and
// reported none of the bundle's. 0: every one passed.
// A check that reports tests must report one of the bundle's: a test whose id names a bundle
// file (its path or its stem: "tests/held_out/test_x.py::...", "test_x.TestX.test_y"); one
// that reports only others never ran the bundle (a command that does not reach where it is
// laid) and counts as a failure, so a mistaken check cannot pass everything. A check judged
// by its exit status alone is taken at its word.
int64_t held_out_failures(const RunResult& run, const HeldOutBundle& bundle);

// Whether a check that reports tests reported one of the bundle's (as held_out_failures() asks).
bool reports_the_bundle(const CheckResult& check, const HeldOutBundle& bundle);

}  // namespace warden::kernel
