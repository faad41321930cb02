// replay() (replay.h): the ledger verified (an export imported first), then the Replayer's walk
// over its records (replay_internal.h): each record read back as its kind and dispatched, the
// fleet's events in order, and every runner's signature held to its enrolment.
#include "kernel/audit/replay.h"

#include <stdlib.h>

#include <algorithm>
#include <set>
#include <vector>

#include "common/clock.h"
#include "kernel/audit/replay_internal.h"
#include "kernel/record/blob_refs.h"
#include "ledger/export.h"
#include "ledger/ledger.h"
#include "ledger/verify.h"
#include "runner/check/remote_run.h"

namespace warden::kernel {

namespace {

// An export is replayed from a private copy imported into a temporary ledger.
class TempLedgerDir {
 public:
  static Result<TempLedgerDir> make() {
    std::string templ = (std::filesystem::temp_directory_path() / "warden-replay-XXXXXX").string();
    if (!::mkdtemp(templ.data())) return fail(Errc::io_error, "creating a temporary directory for replay");
    return TempLedgerDir(templ);
  }
  TempLedgerDir(TempLedgerDir&& o) noexcept : dir_(std::move(o.dir_)) { o.dir_.clear(); }
  TempLedgerDir& operator=(TempLedgerDir&&) = delete;
  ~TempLedgerDir() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path ledger() const { return dir_ / "ledger"; }

 private:
  explicit TempLedgerDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

}  // namespace

namespace detail {

Status Replayer::run() {
  if (options_.repo && options_.repos) return fail(Errc::invalid_argument, "replay: give --repo or --repos, not both");
  if (options_.repo) {
    auto repo = GitRepo::open(*options_.repo);
    if (!repo) return fail(Errc::not_found, "replay --repo: " + repo.error().message());
    repos_.push_back({*options_.repo, std::move(*repo)});
  }
  if (options_.repos) {
    std::error_code ec;
    std::vector<std::filesystem::path> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(*options_.repos, ec)) {
      if (entry.is_directory(ec)) dirs.push_back(entry.path());
    }
    if (ec) return fail(Errc::not_found, "replay --repos " + options_.repos->string() + ": " + ec.message());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      auto repo = GitRepo::open(dir);
      if (repo) repos_.push_back({dir, std::move(*repo)});
    }
    if (repos_.empty()) return fail(Errc::not_found, "replay --repos " + options_.repos->string() + ": no git repository in it");
  }
  if (Status st = read_reveals(); !st) return st;
  for (uint64_t seq = 0; seq < snap_.size() && report_.ok(); ++seq) {
    auto rec = snap_.record(seq);
    if (!rec) return std::unexpected(rec.error());
    auto payload = parse_json(rec->payload);
    if (!payload || !payload->is_object()) {
      problem(seq, rec->kind, "payload is not a JSON object");
      break;
    }
    seq_ = seq;
    kind_ = rec->kind;
    if (Status st = visit(*payload); !st) return st;
    ++report_.records;
  }
  if (report_.ok()) check_run_end_reveals();
  if (report_.ok()) check_enrolments();
  if (!repos_.empty() && report_.ok()) check_branches();
  return {};
}

Status Replayer::visit(const Json& p) {
  if (kind_ == record_kind::held_out_reveal) return typed<HeldOutRevealRecord>(p, &Replayer::on_reveal);
  if (kind_ == record_kind::held_out_run) return typed<HeldOutRunRecord>(p, &Replayer::readable<HeldOutRunRecord>);
  if (kind_ == record_kind::blueprint) return typed<BlueprintRecord>(p, &Replayer::on_blueprint);
  if (kind_ == record_kind::policy) return typed<PolicyRecord>(p, &Replayer::on_policy);
  if (kind_ == record_kind::plan_proposal) return typed<PlanProposalRecord>(p, &Replayer::on_plan_proposal);
  if (kind_ == record_kind::plan_commit) return typed<PlanCommitRecord>(p, &Replayer::on_plan_commit);
  if (kind_ == record_kind::refusal && refusal_subject(p) == PlanRefusalRecord::subject) {
    return typed<PlanRefusalRecord>(p, &Replayer::on_plan_refusal);
  }
  if (kind_ == record_kind::decision) return typed<DecisionRecord>(p, &Replayer::on_decision);
  if (kind_ == record_kind::commit_intent) return typed<CommitIntentRecord>(p, &Replayer::on_commit_intent);
  if (kind_ == record_kind::commit) return typed<CommitRecord>(p, &Replayer::on_commit);
  // The rest are judged where a decision or commit names them; here they must at least
  // read back as their kind, so no record of the kernel's is outside its schema.
  if (kind_ == record_kind::refusal) return typed<ProposalRefusalRecord>(p, &Replayer::readable<ProposalRefusalRecord>);
  if (kind_ == record_kind::proposal) return typed<ProposalRecord>(p, &Replayer::readable<ProposalRecord>);
  if (kind_ == record_kind::run_result) return typed<RunResultRecord>(p, &Replayer::attested<RunResultRecord>);
  if (kind_ == record_kind::base_run) return typed<BaseRunRecord>(p, &Replayer::attested<BaseRunRecord>);
  if (kind_ == record_kind::oracle_run) return typed<OracleRunRecord>(p, &Replayer::attested<OracleRunRecord>);
  if (kind_ == record_kind::run_status) return typed<RunStatusRecord>(p, &Replayer::on_run_status);
  if (kind_ == record_kind::run_event) return typed<RunEvent>(p, &Replayer::readable<RunEvent>);
  if (kind_ == record_kind::step_evidence) return typed<StepEvidenceRecord>(p, &Replayer::readable<StepEvidenceRecord>);
  if (kind_ == record_kind::speculation) return typed<SpeculationRecord>(p, &Replayer::readable<SpeculationRecord>);
  if (kind_ == record_kind::fleet_event) return typed<FleetEventRecord>(p, &Replayer::on_fleet_event);
  return {};
}

Status Replayer::on_run_status(const RunStatusRecord& r) {
  RunFacts& run = facts(r.run_id);
  if (is_terminal(r.status) && !run.ended) run.ended = seq_;
  return {};
}

// The fleet's history, copied from its store: never part of a decision, but its events must
// follow one another. A store's first event (1) may come again: that store began anew (a
// Redis flushed, an LMDB directory replaced), which the server also logs.
Status Replayer::on_fleet_event(const FleetEventRecord& r) {
  uint64_t& last = fleet_seqs_[r.store];
  if (r.store_seq != 1 && r.store_seq != last + 1) {
    problem("fleet event " + std::to_string(r.store_seq) + " of store " + r.store + " follows event " +
            std::to_string(last) + ": events are missing or repeated");
    return {};
  }
  last = r.store_seq;
  // An enrolment: the key a runner signs with, as the server pinned it.
  const Json& e = r.event;
  if (e.value("type", "") == "registered" && e.contains("key") && e["key"].is_string() && e.contains("owner") &&
      e["owner"].is_string()) {
    enrolled_.insert({e.value("agent", ""), e["owner"].get<std::string>(), e["key"].get<std::string>()});
  }
  return {};
}

// A result remote runners ran carries their signatures (runner/check/remote_run.h): each must be
// its key's over exactly the recorded result, by runners of distinct identities, so no
// record claims a runner, or a quorum, that did not sign it. Each key must also be the one
// the fleet's record says the runner enrolled with (check_enrolments, once the whole ledger
// is read: the server copies the fleet's events into the ledger on its own schedule).
template <typename R>
Status Replayer::attested(const R& r) {
  if (!r.attestations) return {};
  std::set<std::string> agents, owners;
  for (const Json& j : *r.attestations) {
    auto a = ResultAttestation::from_json(j);
    if (!a) {
      problem(a.error().message);
      return {};
    }
    if (Status st = verify_attestation(*a, r.run_result_sha256); !st) {
      problem(st.error().message);
      return {};
    }
    signers_.push_back({seq_, kind_, {a->agent_id, a->owner, a->key}});
    if (!agents.insert(a->agent_id).second || !owners.insert(a->owner).second) {
      problem("runner " + a->agent_id + " (" + a->owner + ") signs the result twice: a quorum's runners are of distinct identities");
      return {};
    }
  }
  if (agents.empty()) problem("an empty attestations list");
  return {};
}

// Every runner that signs a result must have enrolled with that key under that identity:
// a signature by a key the fleet never pinned proves nothing about who ran the checks. A
// ledger whose fleet events name no key at all was written before enrolments recorded
// them: its signatures are still checked against their records, and the enrolment is
// said to be unchecked. (Like every record, enrolments are only as good as the ledger's
// signed checkpoints: verify them against a key you trust.)
void Replayer::check_enrolments() {
  for (const Signer& s : signers_) {
    if (enrolled_.contains(s.enrolment)) continue;
    const auto& [agent, owner, key] = s.enrolment;
    if (enrolled_.empty()) {
      report_.warnings.push_back("record " + std::to_string(s.seq) + " (" + s.kind + "): runner " + agent +
                                 "'s key could not be checked against its enrolment: the ledger's fleet events "
                                 "name no enrolment keys (written before they did)");
      continue;
    }
    problem(s.seq, s.kind,
            "runner " + agent + " (" + owner + ") signs with key " + key +
                ", but no fleet event in the ledger records that runner enrolling with that key and identity");
    return;
  }
}

}  // namespace detail

using detail::Replayer;

Result<ReplayReport> replay(const std::filesystem::path& path, const ReplayOptions& options) {
  ReplayReport report;
  VerifyOptions verify = options.verify;
  verify.blob_references = &blob_references();
  auto verified = verify_path(path, verify);
  if (!verified) return std::unexpected(verified.error());
  report.key_source = verified->key_source;
  report.warnings = verified->warnings;
  report.signed_size = verified->signed_size;
  report.unsigned_records = verified->unsigned_records;
  report.root_hex = verified->root.hex();
  if (!verified->ok()) {
    const auto& p = *verified->problem;
    report.problem = ReplayProblem{p.seq.value_or(0), p.object, p.message};
    return report;
  }
  std::optional<TempLedgerDir> temp;
  std::filesystem::path dir = path;
  std::error_code ec;
  if (!std::filesystem::exists(path / "data.mdb", ec)) {
    auto made = TempLedgerDir::make();
    if (!made) return std::unexpected(made.error());
    temp.emplace(std::move(*made));
    auto imported = import_ledger(path, temp->ledger(), verify);
    if (!imported) return std::unexpected(imported.error());
    dir = temp->ledger();
  }
  SystemClock clock;  // read-only: never asked for a time
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  if (!ledger) return std::unexpected(ledger.error());
  auto snap = ledger->snapshot();
  if (!snap) return std::unexpected(snap.error());
  Replayer replayer(*snap, options, report);
  if (Status st = replayer.run(); !st) return std::unexpected(st.error());
  return report;
}

}  // namespace warden::kernel
