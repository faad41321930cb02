#include "kernel/audit/receipt.h"

#include <optional>
#include <vector>

#include "kernel/record/held_out_reveal.h"
#include "kernel/record/records.h"
#include "kernel/audit/dsse.h"
#include "ledger/checkpoint.h"
#include "ledger/merkle.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

std::unexpected<Error> refuse_receipt(std::string_view part, const std::string& why) {
  return fail(Errc::verification_failed, "receipt " + std::string(part) + ": " + why);
}

// The first place where `got` departs from `want`, as a sentence; nullopt when equal.
// Extra fields count: a signed statement must carry exactly what the record implies.
std::optional<std::string> first_difference(const Json& want, const Json& got, const std::string& path) {
  if (want.is_object() && got.is_object()) {
    for (const auto& [key, value] : want.items()) {
      if (!got.contains(key)) return path + "." + key + " is missing";
      if (auto d = first_difference(value, got.at(key), path + "." + key)) return d;
    }
    for (const auto& [key, value] : got.items()) {
      if (!want.contains(key)) return path + "." + key + " is not part of an acceptance statement";
    }
    return std::nullopt;
  }
  if (want.is_array() && got.is_array() && want.size() == got.size()) {
    for (size_t i = 0; i < want.size(); ++i) {
      if (auto d = first_difference(want[i], got[i], path + "[" + std::to_string(i) + "]")) return d;
    }
    return std::nullopt;
  }
  if (want == got) return std::nullopt;
  return path + " is " + got.dump() + " but the ledger record gives " + want.dump();
}

// The newest stored checkpoint that covers `seq`, or a fresh one.
Result<StoredCheckpoint> covering_checkpoint(Ledger& ledger, uint64_t seq, const NoteSigner& signer) {
  {
    auto snap = ledger.snapshot();
    if (!snap) return std::unexpected(snap.error());
    auto stored = snap->checkpoints();
    if (!stored) return std::unexpected(stored.error());
    std::optional<StoredCheckpoint> best;
    for (auto& cp : *stored) {
      if (cp.size > seq && (!best || cp.size > best->size)) best = std::move(cp);
    }
    if (best) return *best;
  }
  return ledger.checkpoint(signer);
}

Result<std::vector<Digest>> parse_proof_hashes(const Json& proof) {
  std::vector<Digest> out;
  for (size_t i = 0; i < proof.size(); ++i) {
    auto d = proof[i].is_string() ? Digest::from_hex(proof[i].get<std::string>()) : fail(Errc::invalid_argument, "");
    if (!d) return fail(Errc::invalid_argument, "element " + std::to_string(i) + " must be 64 lowercase hex");
    out.push_back(*d);
  }
  return out;
}

struct BundledLedger {
  Record record;
  uint64_t seq = 0, tree_size = 0;
  std::vector<Digest> proof;
  std::string checkpoint;
};

Result<BundledLedger> read_bundled_ledger(const Json& json) {
  BundledLedger out;
  JsonReader r(json, "ledger");
  const Json* record = r.value("record", Json::value_t::object);
  r.unsigned_integer("seq", out.seq, 0, UINT64_MAX);
  r.unsigned_integer("tree_size", out.tree_size, 1, UINT64_MAX);
  const Json* proof = r.value("inclusion_proof", Json::value_t::array);
  r.string("checkpoint", out.checkpoint);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  auto hashes = parse_proof_hashes(*proof);
  if (!hashes) return std::unexpected(hashes.error().with_context("ledger.inclusion_proof"));
  out.proof = std::move(*hashes);
  auto bytes = canonicalize(*record);
  if (!bytes) return std::unexpected(bytes.error().with_context("ledger.record"));
  auto parsed = Record::from_canonical(*bytes);
  if (!parsed) return std::unexpected(parsed.error().with_context("ledger.record"));
  out.record = std::move(*parsed);
  return out;
}

// A bundled held_out_reveal record ({"record", "inclusion_proof"}): of `bundle`, and in the
// tree the checkpoint signs. Its seq.
Result<uint64_t> verify_bundled_reveal(const Json& json, const Digest& bundle, const Checkpoint& checkpoint) {
  JsonReader r(json, "held_out_reveal");
  const Json* record_json = r.value("record", Json::value_t::object);
  const Json* proof_json = r.value("inclusion_proof", Json::value_t::array);
  if (Status st = r.finish(); !st) return refuse_receipt("held-out reveal", st.error().message);
  auto proof = parse_proof_hashes(*proof_json);
  if (!proof) return refuse_receipt("held-out reveal", "inclusion_proof: " + proof.error().message);
  auto bytes = canonicalize(*record_json);
  auto record = bytes ? Record::from_canonical(*bytes) : Result<Record>(std::unexpected(bytes.error()));
  if (!record) return refuse_receipt("held-out reveal", record.error().message);
  if (record->kind != record_kind::held_out_reveal) return refuse_receipt("held-out reveal", "kind is \"" + record->kind + "\"");
  auto payload = parse_json(record->payload);
  auto reveal = payload ? HeldOutRevealRecord::from_json(*payload) : Result<HeldOutRevealRecord>(std::unexpected(payload.error()));
  if (!reveal) return refuse_receipt("held-out reveal", reveal.error().message);
  if (reveal->held_out_sha256 != bundle) {
    return refuse_receipt("held-out reveal", "reveals " + reveal->held_out_sha256.str() + ", the commit names " + bundle.str());
  }
  if (record->seq >= checkpoint.size || !verify_inclusion(record->hash(), record->seq, checkpoint.size, *proof, checkpoint.root)) {
    return refuse_receipt("held-out reveal", "record " + std::to_string(record->seq) + " does not lead to the checkpoint's root");
  }
  return record->seq;
}

// Anyone who can write the ledger can append a "commit" record, so one speaks for an
// acceptance only through the decision it names: an earlier "decision" record that accepted
// this run, step and attempt under this plan and policy.
Status check_accepting_decision(LedgerSnapshot& snapshot, const LocatedCommit& located) {
  const CommitRecord& c = located.commit;
  const std::string named = "commit record " + std::to_string(located.record.seq) + " names decision_seq " +
                            std::to_string(c.decision_seq);
  auto refuse = [&](const std::string& why) { return fail(Errc::verification_failed, named + ", " + why + "; no receipt"); };
  if (c.decision_seq >= located.record.seq) return refuse("which is not an earlier record");
  auto record = snapshot.record(c.decision_seq);
  if (!record) return std::unexpected(record.error());
  if (record->kind != record_kind::decision) return refuse("a record of kind \"" + record->kind + "\", not a decision");
  auto payload = parse_json(record->payload, "record " + std::to_string(c.decision_seq));
  if (!payload) return std::unexpected(payload.error());
  if (!payload->is_object()) return refuse("whose payload is not an object");
  auto verdict = payload->find("verdict");
  bool accepted = verdict != payload->end() && verdict->is_object() && verdict->contains("accepted") &&
                  verdict->at("accepted") == true;
  if (!accepted) return refuse("a decision that did not accept the proposal");
  const Json want = {{"run_id", c.run_id},
                     {"step_id", c.step_id},
                     {"attempt", c.attempt},
                     {"plan_sha256", c.plan_sha256.str()},
                     {"policy_sha256", c.policy_sha256.str()}};
  for (const auto& [key, value] : want.items()) {
    auto got = payload->find(key);
    if (got == payload->end()) return refuse("a decision without " + key);
    if (*got != value) return refuse("a decision whose " + key + " is " + got->dump() + ", not " + value.dump());
  }
  // The held-out bundle the commit names must be the one the decision's held-out run used.
  std::optional<Digest> held_out;
  if (auto run_seq = payload->find("held_out_run_seq"); run_seq != payload->end()) {
    const uint64_t at = run_seq->is_number_unsigned() ? run_seq->get<uint64_t>() : UINT64_MAX;
    auto ran = at < c.decision_seq ? snapshot.record(at) : Result<Record>(fail(Errc::not_found, ""));
    auto ran_payload = ran && ran->kind == record_kind::held_out_run ? parse_json(ran->payload) : Result<Json>(fail(Errc::not_found, ""));
    auto ran_record = ran_payload ? HeldOutRunRecord::from_json(*ran_payload) : Result<HeldOutRunRecord>(std::unexpected(ran_payload.error()));
    if (!ran_record) return refuse("a decision whose held_out_run_seq names no earlier held-out run");
    held_out = ran_record->held_out_sha256;
  }
  if (held_out != c.held_out_sha256) return refuse("a decision on other held-out checks than the commit record names");
  return {};
}


}  // namespace

Result<LocatedCommit> find_commit_record(LedgerSnapshot& snapshot, std::string_view commit) {
  if (!is_git_object_id(commit)) {
    return fail(Errc::invalid_argument, "commit \"" + std::string(commit) + "\" is not a 40-hex git commit id");
  }
  for (uint64_t seq = snapshot.size(); seq-- > 0;) {
    auto record = snapshot.record(seq);
    if (!record) return std::unexpected(record.error());
    if (record->kind != CommitRecord::kind) continue;
    auto payload = parse_json(record->payload, "record " + std::to_string(seq));
    if (!payload) return std::unexpected(payload.error());
    auto fields = CommitRecord::from_json(*payload, "record " + std::to_string(seq) + " payload");
    if (!fields) return std::unexpected(Error{Errc::corrupt, fields.error().message});
    if (fields->commit == commit) return LocatedCommit{std::move(*record), std::move(*fields)};
  }
  return fail(Errc::not_found, "no commit record for " + std::string(commit) + " in the ledger");
}

Json acceptance_statement(const CommitRecord& c, uint64_t seq, const Digest& record_hash) {
  Json subject = Json::array();
  subject.push_back({{"name", "git+commit:" + c.branch}, {"digest", {{"gitCommit", c.commit}}}});
  subject.push_back({{"name", "git+tree"}, {"digest", {{"gitTree", c.tree}}}});
  Json predicate = {{"run_id", c.run_id},
                    {"step_id", c.step_id},
                    {"attempt", c.attempt},
                    {"plan_sha256", c.plan_sha256.str()},
                    {"proposal_sha256", c.proposal_sha256.str()},
                    {"run_result_sha256", c.run_result_sha256.str()},
                    {"policy_sha256", c.policy_sha256.str()},
                    {"ledger", {{"seq", seq}, {"record_hash", record_hash.hex()}}}};
  if (c.held_out_sha256) predicate["held_out_sha256"] = c.held_out_sha256->str();
  return {{"_type", kStatementType},
          {"subject", subject},
          {"predicateType", kAcceptancePredicateType},
          {"predicate", predicate}};
}

Result<Json> make_receipt(Ledger& ledger, const LocatedCommit& located, const NoteSigner& signer) {
  if (signer.verifier().encoded() != ledger.verifier_key()) {
    return fail(Errc::invalid_argument, "signer key " + signer.name() +
                                            " is not this ledger's checkpoint key " + ledger.verifier_key() +
                                            ": a receipt's statement and checkpoint are signed by one key");
  }
  const uint64_t seq = located.record.seq;
  {
    auto snap = ledger.snapshot();
    if (!snap) return std::unexpected(snap.error());
    if (Status st = check_accepting_decision(*snap, located); !st) return std::unexpected(st.error());
  }
  // A held-out bundle's reveal, when the ledger holds it, is proven under the same checkpoint.
  std::optional<Record> reveal;
  if (located.commit.held_out_sha256) {
    auto snap = ledger.snapshot();
    if (!snap) return std::unexpected(snap.error());
    auto found = find_reveal(*snap, *located.commit.held_out_sha256, located.commit.decision_seq);
    if (!found) return std::unexpected(found.error());
    reveal = std::move(*found);
  }
  auto checkpoint = covering_checkpoint(ledger, reveal ? std::max(seq, reveal->seq) : seq, signer);
  if (!checkpoint) return std::unexpected(checkpoint.error());
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  auto proof = snap->inclusion_proof(seq, checkpoint->size);
  if (!proof) return std::unexpected(proof.error());
  auto opened = open_note(checkpoint->note, {signer.verifier()});
  if (!opened) return std::unexpected(opened.error().with_context("stored checkpoint " + std::to_string(checkpoint->size)));
  auto body = Checkpoint::parse_body(opened->text);
  if (!body) return std::unexpected(body.error());
  const Digest leaf = located.record.hash();
  // A receipt that would not verify is a ledger fault; say so here, not at the verifier.
  if (!verify_inclusion(leaf, seq, checkpoint->size, *proof, body->root)) {
    return fail(Errc::corrupt, "record " + std::to_string(seq) + " does not prove into checkpoint " +
                                   std::to_string(checkpoint->size) + ": the ledger is inconsistent");
  }
  auto payload = canonicalize(acceptance_statement(located.commit, seq, leaf));
  if (!payload) return std::unexpected(payload.error());
  auto envelope = dsse_sign(kInTotoPayloadType, std::move(*payload), signer);
  if (!envelope) return std::unexpected(envelope.error());
  Json hashes = Json::array();
  for (const auto& d : *proof) hashes.push_back(d.hex());
  Json receipt = {{"format", kReceiptFormat},
                  {"envelope", envelope->to_json()},
                  {"ledger",
                   {{"record", located.record.to_json()},
                    {"seq", seq},
                    {"tree_size", checkpoint->size},
                    {"inclusion_proof", hashes},
                    {"checkpoint", checkpoint->note}}}};
  if (reveal) {
    auto reveal_proof = snap->inclusion_proof(reveal->seq, checkpoint->size);
    if (!reveal_proof) return std::unexpected(reveal_proof.error());
    Json reveal_hashes = Json::array();
    for (const auto& d : *reveal_proof) reveal_hashes.push_back(d.hex());
    receipt["held_out_reveal"] = {{"record", reveal->to_json()}, {"inclusion_proof", reveal_hashes}};
  }
  return receipt;
}

Result<VerifiedReceipt> verify_receipt(const Json& bundle, const NoteVerifier& key) {
  std::string format;
  JsonReader top(bundle, "receipt");
  top.string("format", format);
  const Json* envelope_json = top.value("envelope", Json::value_t::object);
  const Json* ledger_json = top.value("ledger", Json::value_t::object);
  const Json* reveal_json = top.value("held_out_reveal", Json::value_t::object, false);
  if (Status st = top.finish(); !st) return refuse_receipt("shape", st.error().message);
  if (format != kReceiptFormat) return refuse_receipt("format", "is \"" + format + "\", expected " + std::string(kReceiptFormat));

  auto envelope = DsseEnvelope::from_json(*envelope_json);
  if (!envelope) return refuse_receipt("envelope", envelope.error().message);
  if (envelope->payload_type != kInTotoPayloadType) {
    return refuse_receipt("envelope", "payloadType is \"" + envelope->payload_type + "\", expected " +
                                          std::string(kInTotoPayloadType));
  }
  if (Status st = dsse_verify(*envelope, key); !st) return refuse_receipt("envelope", st.error().message);
  auto statement = parse_json(envelope->payload, "statement");
  if (!statement) return refuse_receipt("statement", statement.error().message);

  auto bundled = read_bundled_ledger(*ledger_json);
  if (!bundled) return refuse_receipt("ledger", bundled.error().message);
  const Record& record = bundled->record;
  if (record.kind != CommitRecord::kind) return refuse_receipt("ledger record", "kind is \"" + record.kind + "\", not commit");
  auto payload = parse_json(record.payload, "record payload");
  auto commit = payload ? CommitRecord::from_json(*payload, "payload") : std::unexpected(payload.error());
  if (!commit) return refuse_receipt("ledger record", commit.error().message);
  if (bundled->seq != record.seq) {
    return refuse_receipt("ledger seq", std::to_string(bundled->seq) + " is not the record's seq " + std::to_string(record.seq));
  }
  // The record hash is what ties the signed statement to the ledger, so a mismatch there
  // is reported as an altered record rather than as whichever field differs first.
  const Digest leaf = record.hash();
  const Json::json_pointer hash_at("/predicate/ledger/record_hash");
  if (statement->contains(hash_at) && statement->at(hash_at).is_string() && statement->at(hash_at) != leaf.hex()) {
    return refuse_receipt("ledger record", "hashes to " + leaf.hex() + " but the signed statement names record " +
                                               statement->at(hash_at).get<std::string>() +
                                               ": the record was altered or replaced");
  }
  if (auto d = first_difference(acceptance_statement(*commit, record.seq, leaf), *statement, "statement")) {
    return refuse_receipt("statement", "does not match the ledger record: " + *d);
  }

  auto opened = open_note(bundled->checkpoint, {key});
  if (!opened) return refuse_receipt("checkpoint signature", opened.error().message);
  auto checkpoint = Checkpoint::parse_body(opened->text);
  if (!checkpoint) return refuse_receipt("checkpoint", checkpoint.error().message);
  if (checkpoint->size != bundled->tree_size) {
    return refuse_receipt("checkpoint", "is for tree size " + std::to_string(checkpoint->size) + ", the proof for " +
                                            std::to_string(bundled->tree_size));
  }
  if (record.seq >= checkpoint->size) {
    return refuse_receipt("inclusion proof", "seq " + std::to_string(record.seq) + " is outside a tree of size " +
                                                 std::to_string(checkpoint->size));
  }
  if (!verify_inclusion(leaf, record.seq, checkpoint->size, bundled->proof, checkpoint->root)) {
    return refuse_receipt("inclusion proof", "record " + std::to_string(record.seq) + " (hash " + leaf.hex() +
                                                 ") does not lead to the checkpoint's root " + checkpoint->root.hex());
  }
  VerifiedReceipt out{std::move(*commit), record.seq, checkpoint->size, checkpoint->root, checkpoint->origin, std::nullopt};
  if (reveal_json) {
    if (!out.commit.held_out_sha256) return refuse_receipt("held-out reveal", "is bundled for a commit that names no held-out checks");
    auto revealed = verify_bundled_reveal(*reveal_json, *out.commit.held_out_sha256, *checkpoint);
    if (!revealed) return std::unexpected(revealed.error());
    out.held_out_reveal_seq = *revealed;
  }
  return out;
}

}  // namespace warden::kernel
