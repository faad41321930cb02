// The ledger records the kernel writes, one struct per kind, each with its one to_json and
// from_json. The build loop writes them, replay and run reports read them back, receipts are
// built from the commit record: one definition, so writer and auditor cannot drift apart.
//
// Payloads are canonical JSON objects (the ledger canonicalizes), so only field names,
// presence and values matter, never their order. from_json is strict — every field typed,
// unknown fields refused, the error names the JSON path ("decision record.attempt: ...") —
// because a record that does not read back exactly is evidence of tampering or of a bug, and
// replay reports it at its seq. Values are plain data: copy them freely, share none.
//
//   kind            struct                  notes
//   run_status      RunStatusRecord         every lifecycle move (run_lifecycle.h)
//   run_event       RunEvent                run_lifecycle.h; what clients see, recorded
//   blueprint       BlueprintRecord
//   policy          PolicyRecord            the policy's JSON names its programs by digest
//   plan_proposal   PlanProposalRecord      then plan_commit, or refusal with subject "plan"
//   plan_commit     PlanCommitRecord
//   refusal         PlanRefusalRecord       subject "plan": PLANNING_ERROR
//                   ProposalRefusalRecord   subject "proposal": the RefusalReport an executor hears
//   proposal        ProposalRecord          the evidence (ProposalEvidence) is a blob
//   run_result      RunResultRecord         the deterministic part of the RunResult
//   base_run        BaseRunRecord           the test checks on a step's base tree (PASS_TO_PASS)
//   oracle_run      OracleRunRecord         the test checks on a proposal without its new tests
//   decision        DecisionRecord          decide()'s verdict and the seqs of its inputs
//   commit          CommitRecord            an accepted change on the branch
//   step_evidence   StepEvidenceRecord      a step's inputs, outputs and timing, one per step
//   speculation     SpeculationRecord       a merge queue's run thrown away: the waste, for auditors
//   held_out_run    HeldOutRunRecord        a proposal with the held-out bundle laid over it: sealed
//   held_out_reveal HeldOutRevealRecord     a held-out bundle and its sealed runs, published
// Pipeline transitions (pipeline_run, transition, ...) are the executor's records
// (executor/run_records.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/command_launcher.h"
#include "common/error.h"
#include "common/sha256.h"
#include "runner/model/quorum.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/judge/verdict.h"

namespace warden::kernel {

namespace record_kind {
inline constexpr std::string_view run_status = "run_status";
inline constexpr std::string_view run_event = "run_event";
inline constexpr std::string_view blueprint = "blueprint";
inline constexpr std::string_view policy = "policy";
inline constexpr std::string_view plan_proposal = "plan_proposal";
inline constexpr std::string_view plan_commit = "plan_commit";
inline constexpr std::string_view proposal = "proposal";
inline constexpr std::string_view run_result = "run_result";
inline constexpr std::string_view base_run = "base_run";
inline constexpr std::string_view oracle_run = "oracle_run";
inline constexpr std::string_view decision = "decision";
inline constexpr std::string_view refusal = "refusal";
inline constexpr std::string_view commit_intent = "commit_intent";
inline constexpr std::string_view commit = "commit";
inline constexpr std::string_view step_evidence = "step_evidence";
inline constexpr std::string_view speculation = "speculation";
inline constexpr std::string_view held_out_run = "held_out_run";
inline constexpr std::string_view held_out_reveal = "held_out_reveal";
}  // namespace record_kind

struct RunStatusRecord {
  static constexpr std::string_view kind = record_kind::run_status;
  std::string run_id;
  RunStatus status = RunStatus::queued;
  std::optional<ErrorType> error_type;  // with `error`, once the run failed
  std::string error;

  Json to_json() const;
  static Result<RunStatusRecord> from_json(const Json& json);
};

struct BlueprintRecord {
  static constexpr std::string_view kind = record_kind::blueprint;
  std::string run_id;
  Digest blueprint_sha256;
  Json blueprint;  // BlueprintSpec JSON; replay parses it and checks the digest

  Json to_json() const;
  static Result<BlueprintRecord> from_json(const Json& json);
};

struct PolicyRecord {
  static constexpr std::string_view kind = record_kind::policy;
  std::optional<std::string> run_id;  // none: the policy of a plan committed outside a run
  Digest policy_sha256;
  Json policy;  // Policy JSON, programs by digest

  Json to_json() const;
  static Result<PolicyRecord> from_json(const Json& json);
};

enum class PlanSource { generated, file, executor };
std::string_view plan_source_name(PlanSource source);

struct PlanProposalRecord {
  static constexpr std::string_view kind = record_kind::plan_proposal;
  std::optional<std::string> run_id;  // none: a plan committed outside a run (warden plan commit)
  PlanSource source = PlanSource::file;
  Digest plan_sha256;
  Json plan;  // BuildPlan JSON, kept as recorded: replay judges whether it parses
  // For a replacement plan from the run's executor (source executor): who proposed it, its
  // name ("remote:calc") and, as its transport vouched for it, its identity. Written only when
  // set, so plans proposed otherwise keep their bytes.
  std::optional<std::string> executor;
  std::optional<std::string> executor_identity;

  Json to_json() const;
  static Result<PlanProposalRecord> from_json(const Json& json);
};

struct PlanCommitRecord {
  static constexpr std::string_view kind = record_kind::plan_commit;
  std::optional<std::string> run_id;
  Digest plan_sha256;
  std::optional<Digest> blueprint_sha256;
  uint64_t proposal_seq = 0;

  Json to_json() const;
  static Result<PlanCommitRecord> from_json(const Json& json);
};

// A plan the kernel would not commit: refused by verify_plan (proposal_seq names its
// plan_proposal), or a replacement plan that was not even a plan (no proposal_seq; its text
// is the blob plan_blob and plan_sha256 is the digest of that text).
struct PlanRefusalRecord {
  static constexpr std::string_view kind = record_kind::refusal;
  static constexpr std::string_view subject = "plan";
  std::optional<std::string> run_id;
  Digest plan_sha256;
  std::optional<uint64_t> proposal_seq;
  std::optional<Digest> plan_blob;
  std::vector<Reason> reasons;

  Json to_json() const;
  static Result<PlanRefusalRecord> from_json(const Json& json);
};

// A refused proposal: what the executor is told before it tries again.
struct ProposalRefusalRecord {
  static constexpr std::string_view kind = record_kind::refusal;
  static constexpr std::string_view subject = "proposal";
  std::string run_id;
  RefusalReport report;

  Json to_json() const;
  static Result<ProposalRefusalRecord> from_json(const Json& json);
};

// The subject of a refusal record ("plan", "proposal"), empty when it names none.
std::string refusal_subject(const Json& payload);

struct ProposalRecord {
  static constexpr std::string_view kind = record_kind::proposal;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;  // 1-based within the step
  std::string executor;
  Digest evidence_blob;                // ProposalEvidence JSON in the blob store
  std::optional<Digest> diff_sha256;   // none: the proposal was not a Diff
  std::optional<std::string> error;    // why the executor's answer was not a proposal
  // How the executor's program was confined (its sandbox profile, digest, network); absent
  // for an executor that runs no program (plan).
  std::optional<LaunchConfinement> executor_sandbox;
  // Who answered (or failed to answer), as the executor's transport vouched for it: a remote
  // executor's attached name (executor/channel_proposer.h). Absent (and omitted from the
  // record, so older ledgers read and re-derive byte for byte) for an executor run here.
  // Never an input to any decision.
  std::optional<std::string> executor_identity;

  Json to_json() const;
  static Result<ProposalRecord> from_json(const Json& json);
};

// The record's "attestations": absent when `list` is empty.
std::optional<Json> attestations_json(const std::vector<ResultAttestation>& list);

// The three records of a step's check runs — the proposal's (run_result), its base's
// (base_run) and the oracle run's (oracle_run) — are one concept made by one stage
// (run_held_to_request in kernel/build/step_stages.cc) and share one shape: the result's
// digest, its deterministic JSON and the runners' attestations. They differ only in what
// names the run: a proposal's and an oracle run's name the attempt they judge; a base run
// names the tree it ran on and no attempt, since it is recorded once per step and serves
// every attempt. They stay three kinds because decisions point at each by its own seq field
// and the ledger's bytes, which replay re-derives, carry the kind.
struct RunResultRecord {
  static constexpr std::string_view kind = record_kind::run_result;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;
  Digest run_result_sha256;  // RunResult::deterministic_digest()
  Json run_result;           // RunResult::deterministic_json(); RunResult::from_json reads it

  // The remote runners' signatures over the result (runner/model/quorum.h, ResultAttestation
  // JSON; one, or a quorum's), when runners ran it; absent for the kernel's own sandbox.
  std::optional<Json> attestations;

  Json to_json() const;
  static Result<RunResultRecord> from_json(const Json& json);
};

// The checks that report tests, run on the tree a step builds on, so decide() can hold the
// proposal to every test that passed there (PASS_TO_PASS, derived by the kernel). Recorded
// once per step, when no earlier record of the run already holds that tree's run (the
// accepted run of the step before usually does).
struct BaseRunRecord {
  static constexpr std::string_view kind = record_kind::base_run;
  std::string run_id;
  std::string step_id;
  std::string tree;          // the git tree the checks ran on: the step's base
  Digest run_result_sha256;  // RunResult::deterministic_digest()
  Json run_result;           // RunResult::deterministic_json()

  // The remote runners' signatures over the result (runner/model/quorum.h, ResultAttestation
  // JSON; one, or a quorum's), when runners ran it; absent for the kernel's own sandbox.
  std::optional<Json> attestations;

  Json to_json() const;
  static Result<BaseRunRecord> from_json(const Json& json);
};

// The test checks on a proposal's diff without the tests and hooks it adds (oracle_run.h):
// the base's tests judging the proposal's code with nothing new beside them.
struct OracleRunRecord {
  static constexpr std::string_view kind = record_kind::oracle_run;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;
  Digest run_result_sha256;  // RunResult::deterministic_digest()
  Json run_result;           // RunResult::deterministic_json(); its diff_sha256 is the oracle diff's

  // The remote runners' signatures over the result (runner/model/quorum.h, ResultAttestation
  // JSON; one, or a quorum's), when runners ran it; absent for the kernel's own sandbox.
  std::optional<Json> attestations;

  Json to_json() const;
  static Result<OracleRunRecord> from_json(const Json& json);
};

// A proposal's run with the held-out bundle (held_out.h) laid over its tree. Its result is
// sealed in the vault (held_out_vault.h) until the reveal: the record commits to it by digest
// and holds what decide() and the executor may know before then, whether every held-out test
// passed. Not how many: the tested program writes the report, and a count it inflates at will
// would carry bytes of the hidden files out, thousands of values a proposal.
struct HeldOutRunRecord {
  static constexpr std::string_view kind = record_kind::held_out_run;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;
  Digest held_out_sha256;    // the bundle, as the plan commits to it
  // sealed_result_commitment() of the sealed result (held_out.h): its digest salted with the
  // bundle's salt, so nothing of what the tested program printed can be guessed from it.
  Digest result_commitment;
  bool passed = false;       // held_out_failures() of it is 0

  Json to_json() const;
  static Result<HeldOutRunRecord> from_json(const Json& json);
};

// A held-out bundle made public: its listing's place and salt, each file's bytes as a blob,
// and each run sealed with it (its deterministic result as a blob, and the blobs that result
// names). Appended when the owner reveals the bundle; replay holds it to the digest the plan
// committed to and re-derives every decision that used the bundle.
struct HeldOutRevealRecord {
  static constexpr std::string_view kind = record_kind::held_out_reveal;
  struct File {
    std::string path;
    uint32_t mode = 0100644;
    Digest blob;  // the file's bytes; its sha256 is the listing's
  };
  struct Run {
    Digest run_result_sha256;
    Digest blob;                // the canonical JSON of the deterministic result
    std::vector<Digest> bodies;  // the blobs the result names, sorted
  };
  Digest held_out_sha256;
  std::string at;
  std::string salt;
  std::vector<File> files;
  std::vector<Run> runs;  // sorted by run_result_sha256

  Json to_json() const;
  static Result<HeldOutRevealRecord> from_json(const Json& json);
};

// A merge queue's speculative run (merge_queue.h) that no decision used: it was started on the
// tree of the steps ahead of its step, assuming they would be accepted, and one was not (or
// its step's proposal went stale, or the run turned out not to be needed). Recorded after the
// round's decisions, in the order the runs were started, so the waste is in the ledger at a
// place that depends only on the proposals and results. It is never evidence for a decision.
struct SpeculationRecord {
  static constexpr std::string_view kind = record_kind::speculation;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;      // the proposal it was for: the step's next attempt number
  std::string run;          // "checks" (the proposal), "base" (its base's tests) or "oracle"
  std::string base_tree;    // the speculative base: the tree of every step ahead, as assumed
  std::string tree;         // the tree it ran on
  std::optional<Digest> diff_sha256;  // the diff it layered on the base (none for a base run)
  std::string reason;       // why it was thrown away (whether it had finished is timing: not said)

  Json to_json() const;
  static Result<SpeculationRecord> from_json(const Json& json);
};

struct DecisionRecord {
  static constexpr std::string_view kind = record_kind::decision;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 0;
  Digest plan_sha256;
  Digest policy_sha256;
  std::vector<std::string> completed_steps;  // sorted: what decide() was told was done
  uint64_t proposal_seq = 0;
  std::optional<uint64_t> run_result_seq;    // none: the proposal never reached the runner
  // The base's test run (a base_run record, or the run_result record of the accepted run on
  // the same tree); none when no check reports tests or the proposal never ran. Written only
  // when set, so decisions without one keep their bytes.
  std::optional<uint64_t> base_run_seq;
  std::optional<uint64_t> oracle_run_seq;  // the oracle_run record, when there is one (written only then)
  std::optional<uint64_t> held_out_run_seq;  // the held_out_run record, when the plan holds held-out checks (likewise)
  Verdict verdict;

  Json to_json() const;
  static Result<DecisionRecord> from_json(const Json& json);
};

// The payload of a ledger record of kind "commit": what the build loop appends for every
// accepted change (the git commit it made, and the digests of everything the decision was
// made from). Acceptance receipts are built from, and checked against, this record.
struct CommitRecord {
  static constexpr std::string_view kind = record_kind::commit;
  std::string run_id;
  std::string step_id;
  uint64_t attempt = 0;
  std::string commit;  // git ids: 40 lowercase hex
  std::string tree;
  std::string parent;
  std::string branch;  // full ref name, refs/heads/...
  Digest plan_sha256;
  Digest proposal_sha256;  // the accepted Diff's diff_sha256
  Digest run_result_sha256;
  Digest policy_sha256;
  uint64_t decision_seq = 0;  // ledger seq of the decision record
  // The held-out bundle (held_out.h) whose run the decision rested on; written only when set.
  std::optional<Digest> held_out_sha256;

  Json to_json() const;
  static Result<CommitRecord> from_json(const Json& json, std::string_view where = "commit record");
  bool operator==(const CommitRecord&) const = default;
};

// The write-ahead half of a commit: recorded (durably) after the decision that accepted the
// change and before the branch moves, with exactly the fields the commit record will carry.
// A branch never holds a commit without one; an intent with no commit record after it is a
// move that was interrupted (the branch is at the intent's commit or still at its parent).
struct CommitIntentRecord {
  static constexpr std::string_view kind = record_kind::commit_intent;
  CommitRecord commit;

  Json to_json() const { return commit.to_json(); }
  static Result<CommitIntentRecord> from_json(const Json& json);
};

// A file a step produced: written by the accepted change, or left by a check that declared
// it. Its bytes are a blob named by `digest`.
struct Artifact {
  std::string artifact_id;
  std::string type;  // the step's `produces`, "file", or what the check declared
  std::string mime_type;
  std::string path;
  uint64_t size_bytes = 0;
  Digest digest;
  std::optional<std::string> check;  // the check that left it
  int64_t created_at = 0;

  Json to_json() const;  // camelCase: artifactId, mimeType, sizeBytes, createdAt
  static Result<Artifact> from_json(const Json& json);
};

// The evidence of one step: what the executor was given (the step's digest), what came of it
// (the commit, or how many refusals), how long it took, its retries and replans.
struct StepEvidenceRecord {
  static constexpr std::string_view kind = record_kind::step_evidence;
  std::string run_id;
  std::string step_id;
  std::string tool_name;  // the executor
  Digest step_sha256;     // input: the step as the executor was given it
  std::optional<std::string> commit;  // output when accepted
  int64_t refusals = 0;               // output otherwise
  std::string request_id;
  int64_t duration_ms = 0;
  int64_t retry_count = 0;
  std::vector<std::string> replan_events;
  bool completed = false;  // status "completed" | "failed"
  std::vector<Artifact> artifacts;
  std::optional<std::string> error_stack;

  Json to_json() const;
  static Result<StepEvidenceRecord> from_json(const Json& json);
};

// Reads a record's payload as R, checking that the kind is R's.
template <typename R>
Result<R> read_record(std::string_view kind, const Json& payload) {
  if (kind != R::kind) {
    return fail(Errc::corrupt, "a " + std::string(kind) + " record where a " + std::string(R::kind) + " record belongs");
  }
  return R::from_json(payload);
}

// 40 lowercase hex characters: a SHA-1 git object id as Warden spells it.
bool is_git_object_id(std::string_view text);

}  // namespace warden::kernel
