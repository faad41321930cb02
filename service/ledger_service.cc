#include "service/ledger_service.h"

#include <algorithm>

#include "ledger/checkpoint.h"
#include "ledger/note.h"
#include "common/strings.h"
#include "service/grpc_status.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

// The largest blob one call returns: gRPC's default message limit is 4 MiB.
constexpr size_t kMaxBlobBytes = size_t{4} << 20;

grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

}  // namespace

LedgerService::LedgerService(SharedLedger& ledger, InFlight& in_flight, const TokenTable& tokens)
    : ledger_(ledger), in_flight_(in_flight), tokens_(tokens) {}

grpc::Status LedgerService::GetCheckpoint(grpc::ServerContext* context, const v1::GetCheckpointRequest* request,
                                          v1::Checkpoint* out) {
  InFlight::Call call(in_flight_);
  // Signing one writes to the ledger with its key.
  const Role role = request->sign_new() ? Role::admin : Role::observer;
  if (grpc::Status denied; !tokens_.authorize(*context, role, denied)) return denied;
  if (request->sign_new()) {
    if (auto signed_now = run_warden({"ledger", "checkpoint", ledger_.dir().string()}); !signed_now) {
      return to_status(signed_now.error());
    }
  }
  auto snap = ledger_.snapshot();
  if (!snap) return to_status(snap.error());
  auto stored = snap->checkpoints();
  if (!stored) return to_status(stored.error());
  if (stored->empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "the ledger has no signed checkpoint yet: sign one with `warden ledger checkpoint`");
  }
  const StoredCheckpoint* newest = &stored->front();
  for (const auto& cp : *stored) {
    if (cp.size > newest->size) newest = &cp;
  }
  auto root = snap->root_at(newest->size);
  if (!root) return to_status(root.error());
  // A stored note is served only if it is what this ledger signed about this tree: one
  // written into the store by hand (a root that is not the tree's, another key) would hand
  // clients a lie with a valid-looking signature.
  auto verifier = NoteVerifier::parse(ledger_.verifier_key());
  if (!verifier) return to_status(verifier.error());
  auto opened = open_note(newest->note, {*verifier});
  if (!opened) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "the stored checkpoint of size " + std::to_string(newest->size) +
                                                         " does not verify with the ledger's key (" +
                                                         opened.error().message + "): run `warden ledger verify`");
  }
  auto body = warden::Checkpoint::parse_body(opened->text);
  if (!body || body->size != newest->size || body->root != *root || body->origin != ledger_.origin()) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "the stored checkpoint of size " + std::to_string(newest->size) +
                                                         " does not sign this ledger's tree: run `warden ledger verify`");
  }
  out->set_size(newest->size);
  out->set_root(root->hex());
  out->set_note(newest->note);
  out->set_origin(ledger_.origin());
  out->set_verifier_key(ledger_.verifier_key());
  return grpc::Status::OK;
}

grpc::Status LedgerService::ProveInclusion(grpc::ServerContext* context, const v1::ProveInclusionRequest* request,
                                           v1::InclusionProof* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto snap = ledger_.snapshot();
  if (!snap) return to_status(snap.error());
  uint64_t size = request->tree_size() == 0 ? snap->size() : request->tree_size();
  if (size > snap->size()) return invalid("tree_size", "larger than the ledger (" + std::to_string(snap->size()) + ")");
  if (request->seq() >= size) return invalid("seq", "not below tree_size " + std::to_string(size));
  auto proof = snap->inclusion_proof(request->seq(), size);
  if (!proof) return to_status(proof.error());
  auto leaf = snap->record_hash(request->seq());
  if (!leaf) return to_status(leaf.error());
  auto root = snap->root_at(size);
  if (!root) return to_status(root.error());
  out->set_seq(request->seq());
  out->set_tree_size(size);
  out->set_leaf_hash(leaf->hex());
  out->set_root(root->hex());
  for (const auto& h : *proof) out->add_proof(h.hex());
  return grpc::Status::OK;
}

grpc::Status LedgerService::ProveConsistency(grpc::ServerContext* context, const v1::ProveConsistencyRequest* request,
                                             v1::ConsistencyProof* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto snap = ledger_.snapshot();
  if (!snap) return to_status(snap.error());
  uint64_t size2 = request->size2() == 0 ? snap->size() : request->size2();
  if (size2 > snap->size()) return invalid("size2", "larger than the ledger (" + std::to_string(snap->size()) + ")");
  if (request->size1() > size2) return invalid("size1", "larger than size2 " + std::to_string(size2));
  auto proof = snap->consistency_proof(request->size1(), size2);
  if (!proof) return to_status(proof.error());
  auto r1 = snap->root_at(request->size1());
  if (!r1) return to_status(r1.error());
  auto r2 = snap->root_at(size2);
  if (!r2) return to_status(r2.error());
  out->set_size1(request->size1());
  out->set_size2(size2);
  out->set_root1(r1->hex());
  out->set_root2(r2->hex());
  for (const auto& h : *proof) out->add_proof(h.hex());
  return grpc::Status::OK;
}

grpc::Status LedgerService::ListRecords(grpc::ServerContext* context, const v1::ListRecordsRequest* request,
                                        grpc::ServerWriter<v1::LedgerRecord>* writer) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto snap = ledger_.snapshot();
  if (!snap) return to_status(snap.error());
  uint64_t to = request->to_seq() == 0 ? snap->size() : std::min<uint64_t>(request->to_seq(), snap->size());
  if (request->from_seq() > to) return invalid("from_seq", "beyond to_seq " + std::to_string(to));
  auto send = [&](uint64_t seq, const RecordView& view) -> Result<bool> {
    if (context->IsCancelled()) return false;
    if (!request->kind().empty() && view.kind != request->kind()) return true;
    auto hash = snap->record_hash(seq);
    if (!hash) return std::unexpected(hash.error());
    v1::LedgerRecord record;
    record.set_seq(seq);
    record.set_kind(std::string(view.kind));
    record.set_ts(view.ts);
    record.set_prev(view.prev.hex());
    record.set_hash(hash->hex());
    record.set_payload_json(std::string(view.payload));
    return writer->Write(record);  // false: the client went away
  };
  if (!request->run_id().empty()) {
    auto seqs = snap->run_records(request->run_id());
    if (!seqs) return to_status(seqs.error());
    if (seqs->empty()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + request->run_id() + " in the ledger");
    for (uint64_t seq : *seqs) {
      if (seq < request->from_seq() || seq >= to) continue;
      auto view = snap->record_view(seq);
      if (!view) return to_status(view.error());
      auto more = send(seq, *view);
      if (!more) return to_status(more.error());
      if (!*more) break;
    }
    return grpc::Status::OK;
  }
  if (request->from_seq() == to) return grpc::Status::OK;
  Status st = snap->for_each_record(request->from_seq(), to, [&](const RecordView& view) { return send(view.seq, view); });
  if (!st) return to_status(st.error());
  return grpc::Status::OK;
}

grpc::Status LedgerService::GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest* request, v1::Blob* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto digest = Digest::parse(request->digest());
  if (!digest) return invalid("digest", digest.error().message);
  auto snap = ledger_.snapshot();
  if (!snap) return to_status(snap.error());
  auto bytes = snap->blob(*digest);  // verified against its digest
  if (!bytes) return to_status(bytes.error());
  if (bytes->size() > kMaxBlobBytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "blob " + digest->str() + " is " + std::to_string(bytes->size()) + " bytes, over the " +
                            std::to_string(kMaxBlobBytes) + "-byte message limit: fetch it with `warden ledger blob get`");
  }
  out->set_digest(digest->str());
  out->set_data(std::move(*bytes));
  return grpc::Status::OK;
}

grpc::Status LedgerService::GetReceipt(grpc::ServerContext* context, const v1::GetReceiptRequest* request,
                                       v1::Receipt* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  const std::string& commit = request->commit();
  const bool hex40 = commit.size() == 40 && std::all_of(commit.begin(), commit.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (!hex40) return invalid("commit", "a git commit id: 40 lowercase hex digits");
  // The CLI's own receipt: it may sign and store a checkpoint covering the commit's record,
  // which takes a writable ledger (warden_cli.h).
  auto receipt = run_warden({"receipt", commit, "--ledger", ledger_.dir().string()});
  if (!receipt) return to_status(receipt.error());
  out->set_receipt_json(std::string(trim(*receipt)));
  return grpc::Status::OK;
}

}  // namespace warden::service
