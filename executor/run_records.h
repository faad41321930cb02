// How a run is written down: the journal interface the executor writes through, and the
// record formats (ledger kinds and payloads) it writes. Every record carries "run": the run id.
//
//   pipeline_run       {run, at, config, launch, envelope | envelope_blob}      the start; config:
//                                                                            the config's blob digest
//   pipeline_step      {run, step, at, stages: [{stage, started_at, completed_at,
//                       result | result_blob}]}                                  what stages answered
//   transition         {run, step, from, to, reason, iteration, timestamp,
//                       checkpoint?, detail?}                                    every move
//   checkpoint         {run, id, stage, step, iteration, created_at, envelope}  envelope: blob digest
//   pipeline_resume    {run, step, at, response}                                 an interrupt answered
//   pipeline_rollback  {run, step, at, checkpoint}
//   pipeline_end       {run, step, at, terminal_reason, detail?}
//
// The inputs of every state change (stage results, times, responses) are recorded, so replay
// (replay.h) rebuilds the run exactly and checks the recorded transitions and checkpoints
// against what it recomputes. Large values (over kInlineLimit bytes of canonical JSON) live
// in the ledger's blob store and are named by their digest.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/run_state.h"
#include "executor/step.h"

namespace warden::executor {

namespace record_kind {
inline constexpr std::string_view run = "pipeline_run";
inline constexpr std::string_view step = "pipeline_step";
inline constexpr std::string_view transition = "transition";
inline constexpr std::string_view checkpoint = "checkpoint";
inline constexpr std::string_view resume = "pipeline_resume";
inline constexpr std::string_view rollback = "pipeline_rollback";
inline constexpr std::string_view end = "pipeline_end";
// Whether `kind` is one of the kinds above: a pipeline's record, not a kernel's.
inline bool is_pipeline(std::string_view kind) {
  for (auto k : {run, step, transition, checkpoint, resume, rollback, end}) {
    if (kind == k) return true;
  }
  return false;
}
}  // namespace record_kind

inline constexpr size_t kInlineLimit = 16 * 1024;

// Where a run's history goes as it happens.
class RunJournal {
 public:
  virtual ~RunJournal() = default;
  // One record. A journal may buffer it until commit().
  virtual Status append(std::string_view kind, const Json& payload, int64_t at) = 0;
  // Stores `bytes` in the blob store with the next records; returns "sha256:<hex>". Pass the
  // digest when it is already known (it is trusted, not recomputed).
  virtual Result<std::string> put_blob(std::string_view bytes, std::string_view digest = {}) = 0;
  // A step (or a pause, an end, a resume) is complete. With `now` the journal must make
  // everything so far durable before returning; otherwise it may batch further steps.
  virtual Status commit(bool now) = 0;
};

// Writers, called by the executor in this order per step: step, then routing.
Status journal_run_started(RunJournal& j, const PipelineConfig& config, const RunState& run, const Json& launch,
                           int64_t at);
Status journal_step(RunJournal& j, const PipelineConfig& config, const RunState& run, uint64_t step,
                    std::span<const StageOutcome> outcomes, int64_t at);
// The step's transitions and checkpoint, and its end if it ended the run.
Status journal_routing(RunJournal& j, const RunState& run, const StepApplied& applied);
Status journal_end(RunJournal& j, const RunState& run);
Status journal_resume(RunJournal& j, const RunState& run, int64_t at);
Status journal_rollback(RunJournal& j, const RunState& run, std::string_view checkpoint_id, int64_t at);

// A run's records as read back from a ledger, oldest first.
struct StoredRecord {
  uint64_t seq = 0;
  std::string kind;
  int64_t ts = 0;
  Json payload;
};
struct StoredRun {
  std::string run_id;
  std::vector<StoredRecord> records;
  // Reads a blob by "sha256:<hex>", verified against its digest.
  std::function<Result<std::string>(std::string_view digest)> blob;
};

// Where a run's history is read back from, for resume after a pause or a crash and for audit
// (the ledger-backed one is kernel::LedgerRunReader). The executor depends on this interface,
// never on the ledger.
class RunReader {
 public:
  virtual ~RunReader() = default;
  // The records of run `run_id`, oldest first, from its pipeline_run record on.
  // Errc::not_found when there is no such run; Errc::corrupt when its records are damaged.
  virtual Result<StoredRun> load(std::string_view run_id) = 0;
};

// The first record: what started the run.
struct RunStart {
  std::string run_id;
  int64_t at = 0;
  Json config;
  Json launch;  // how the run was launched (caller-defined: directory, clock)
  Envelope envelope;
};
Result<RunStart> parse_run_start(const StoredRun& stored);

// The record forms replay reads. Parse errors are Errc::corrupt and name the record's seq.
Result<std::vector<StageOutcome>> parse_step_outcomes(const PipelineConfig& config, const StoredRun& stored,
                                                      const StoredRecord& record, uint64_t& step, int64_t& at);
Result<Transition> parse_transition(const StoredRecord& record);
struct CheckpointRecord {
  std::string id, stage, envelope_digest;
  uint64_t step = 0;
  int64_t iteration = 0, created_at = 0;
};
Result<CheckpointRecord> parse_checkpoint(const StoredRecord& record);
struct ControlRecord {  // resume, rollback, end
  uint64_t step = 0;
  int64_t at = 0;
  std::string response;    // resume
  std::string checkpoint;  // rollback
  TerminalReason reason = TerminalReason::completed;  // end
  std::string detail;                                 // end
};
Result<ControlRecord> parse_control(const StoredRecord& record);

// "sha256:<hex>" of a checkpoint's envelope as the checkpoint record names it.
Result<std::string> envelope_digest(const Envelope& envelope);

}  // namespace warden::executor
