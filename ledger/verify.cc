#include "ledger/verify.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <unordered_map>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/file.h"
#include "ledger/checkpoint.h"
#include "ledger/export.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/record.h"

namespace warden {
namespace {

// The part of verification both forms share: checkpoints, the prev chain, the tree.
class ChainChecker {
 public:
  ChainChecker(std::string origin, std::vector<NoteVerifier> keys, VerifyReport& report)
      : origin_(std::move(origin)), keys_(std::move(keys)), report_(report) {}

  bool problem(std::string object, std::optional<uint64_t> seq, std::string message) {
    if (!report_.problem) report_.problem = VerifyProblem{std::move(object), seq, std::move(message)};
    return false;
  }

  // Signatures and bodies first: a checkpoint that is not genuine proves nothing.
  bool load_checkpoints(const std::vector<StoredCheckpoint>& stored) {
    for (const auto& cp : stored) {
      std::string object = "checkpoint " + std::to_string(cp.size);
      auto opened = open_note(cp.note, keys_);
      if (!opened) return problem(object, {}, opened.error().message);
      auto body = Checkpoint::parse_body(opened->text);
      if (!body) return problem(object, {}, body.error().message);
      if (body->size != cp.size) {
        return problem(object, {}, "signed tree size " + std::to_string(body->size) + " differs from where it is stored");
      }
      if (body->origin != origin_) {
        return problem(object, {}, "origin \"" + body->origin + "\" is not this ledger's (\"" + origin_ + "\")");
      }
      expected_roots_[cp.size] = body->root;
    }
    next_ = expected_roots_.begin();
    return check_due_checkpoints();
  }

  template <typename NodeSink>
  bool add(const RecordView& r, std::string_view canonical, NodeSink&& sink) {
    uint64_t expected = range_.size();
    if (r.seq != expected) {
      return problem("record " + std::to_string(expected), expected,
                     r.seq > expected ? "missing: the next record present is " + std::to_string(r.seq)
                                      : "out of order: found seq " + std::to_string(r.seq) + " where " +
                                            std::to_string(expected) + " belongs (duplicated or reordered)");
    }
    if (r.seq == 0 && !r.prev.is_zero()) return problem("record 0", 0, "the first record's prev must be all zeros");
    if (r.prev != last_) {
      // Either record seq-1's bytes or this record's prev field changed; the earlier one is
      // the first that may be bad.
      return problem("record " + std::to_string(r.seq - 1), r.seq - 1,
                     "record " + std::to_string(r.seq) + "'s prev " + r.prev.str() +
                         " does not match the recomputed hash of record " + std::to_string(r.seq - 1) + " (" +
                         last_.str() + "): record " + std::to_string(r.seq - 1) + " was altered, or record " +
                         std::to_string(r.seq) + "'s prev was");
    }
    Digest leaf = hasher_.leaf(canonical);
    report_.bytes_hashed += canonical.size() + 1;
    range_.append_to(hasher_, leaf, [&](unsigned level, uint64_t index, const Digest& h) {
      if (level > 0) report_.bytes_hashed += 65;
      sink(level, index, h);
    });
    last_ = leaf;
    report_.records = range_.size();
    return check_due_checkpoints();
  }

  // Checkpoints beyond the last record mean records were removed.
  bool finish() {
    if (next_ != expected_roots_.end()) {
      return problem("checkpoint " + std::to_string(next_->first), range_.size(),
                     "signs a tree of " + std::to_string(next_->first) + " records but only " +
                         std::to_string(range_.size()) + " are present (records missing from the end)");
    }
    report_.root = range_.root(hasher_);
    return true;
  }

  uint64_t size() const { return range_.size(); }
  Digest root() { return range_.root(hasher_); }

 private:
  bool check_due_checkpoints() {
    while (next_ != expected_roots_.end() && next_->first == range_.size()) {
      if (range_.root(hasher_) != next_->second) {
        return problem("checkpoint " + std::to_string(next_->first),
                       next_->first == 0 ? std::optional<uint64_t>() : next_->first - 1,
                       "signed root does not match the root recomputed over records 0.." +
                           std::to_string(next_->first) + " (a record at or before seq " +
                           std::to_string(next_->first == 0 ? 0 : next_->first - 1) + " was altered)");
      }
      ++report_.checkpoints;
      ++next_;
    }
    return true;
  }

  std::string origin_;
  std::vector<NoteVerifier> keys_;
  VerifyReport& report_;
  std::map<uint64_t, Digest> expected_roots_;
  std::map<uint64_t, Digest>::iterator next_ = expected_roots_.end();
  MerkleHasher hasher_;
  CompactRange range_;
  Digest last_;  // zero for the first record
};

Result<std::vector<NoteVerifier>> choose_keys(const std::vector<NoteVerifier>& given, const std::string& recorded,
                                              VerifyReport& report) {
  if (!given.empty()) {
    report.key_source = "--key";
    return given;
  }
  auto own = NoteVerifier::parse(recorded);
  if (!own) return std::unexpected(own.error().with_context("the ledger's recorded verifier key"));
  report.key_source = "ledger metadata";
  report.warnings.push_back(
      "checkpoint signatures were checked against the key the ledger itself records; pass --key with a "
      "verifier key you trust for an independent check");
  return std::vector<NoteVerifier>{*own};
}

}  // namespace

Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, const std::vector<NoteVerifier>& keys) {
  LogicalClock unused_clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, unused_clock);
  if (!ledger) return std::unexpected(ledger.error());
  return verify_ledger(*ledger, keys);
}

Result<VerifyReport> verify_ledger(const Ledger& ledger, const std::vector<NoteVerifier>& keys) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  VerifyReport report;
  if (ledger.unlocked_read()) {
    report.warnings.push_back("read without LMDB's lock file (read-only media): a concurrent writer would not be seen");
  }
  auto chosen = choose_keys(keys, ledger.verifier_key(), report);
  if (!chosen) return std::unexpected(chosen.error());
  ChainChecker checker(ledger.origin(), *chosen, report);

  auto checkpoints = snap->checkpoints();
  if (!checkpoints) return std::unexpected(checkpoints.error());
  if (!checker.load_checkpoints(*checkpoints)) return report;

  const auto& txn = snap->txn();
  const auto& dbis = snap->dbis();
  auto records = lmdb::Cursor::open(txn, dbis.records);
  auto nodes = lmdb::Cursor::open(txn, dbis.nodes);
  if (!records) return std::unexpected(records.error());
  if (!nodes) return std::unexpected(nodes.error());

  std::unordered_map<std::string_view, uint64_t> kinds;
  std::string canonical;
  MDB_val k{}, v{}, nk{}, nv{};
  MDB_cursor_op node_op = MDB_FIRST;
  for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
    auto found = records->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    if (!*found) break;
    uint64_t expected = checker.size();
    auto seq = lmdb::decode_u64(lmdb::view(k));
    if (!seq) {
      checker.problem("record " + std::to_string(expected), expected, "stored key is not a sequence number");
      return report;
    }
    auto view = RecordView::decode_stored(*seq, lmdb::view(v));
    if (!view) {
      checker.problem("record " + std::to_string(*seq), *seq, view.error().message);
      return report;
    }
    canonical.clear();
    view->append_canonical_bytes(canonical);
    bool nodes_ok = true;
    auto sink = [&](unsigned level, uint64_t index, const Digest& h) {
      if (!nodes_ok) return;
      auto got = nodes->get(nk, nv, node_op);
      node_op = MDB_NEXT;
      uint64_t pos = postorder_position(level, index);
      std::string what = level == 0 ? "stored record hash" : "stored Merkle node (level " + std::to_string(level) +
                                                                  ", index " + std::to_string(index) + ")";
      if (!got || !*got) {
        nodes_ok = checker.problem("record " + std::to_string(*seq), *seq, what + " is missing");
        return;
      }
      auto key = lmdb::decode_u64(lmdb::view(nk));
      if (!key || *key != pos) {
        nodes_ok = checker.problem("record " + std::to_string(*seq), *seq, what + " is missing or misplaced");
        return;
      }
      if (lmdb::view(nv) != h.view()) {
        nodes_ok = checker.problem("record " + std::to_string(*seq), *seq,
                                   what + " does not match the value recomputed from the record bytes");
      }
    };
    if (!checker.add(*view, canonical, sink) || !nodes_ok) return report;
    ++kinds[view->kind];
  }
  if (auto extra = nodes->get(nk, nv, node_op); extra && *extra) {
    checker.problem("Merkle store", checker.size(), "holds nodes beyond the last record");
    return report;
  }
  if (!checker.finish()) return report;

  auto counted = snap->kind_counts();
  if (!counted) return std::unexpected(counted.error());
  for (const auto& [kind, count] : *counted) {
    auto it = kinds.find(kind);
    uint64_t actual = it == kinds.end() ? 0 : it->second;
    if (actual != count) {
      checker.problem("kind index", {}, "counts " + std::to_string(count) + " \"" + kind + "\" records, the log holds " +
                                            std::to_string(actual));
      return report;
    }
  }
  if (counted->size() != kinds.size()) {
    checker.problem("kind index", {}, "is missing kinds present in the log");
    return report;
  }

  auto blobs = lmdb::Cursor::open(txn, dbis.blobs);
  if (!blobs) return std::unexpected(blobs.error());
  Sha256 sha;
  for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
    auto found = blobs->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    if (!*found) break;
    auto key = Digest::from_bytes(lmdb::view(k));
    std::string name = key ? "blob " + key->str() : "blob with a malformed key";
    if (!key || sha.update(lmdb::view(v)).finish() != *key) {
      checker.problem(name, {}, "content does not match its digest (altered or swapped)");
      return report;
    }
    report.bytes_hashed += v.mv_size;
    ++report.blobs;
  }
  return report;
}

Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, const std::vector<NoteVerifier>& keys) {
  auto reader = ExportReader::open(dir);
  if (!reader) return std::unexpected(reader.error());
  const ExportManifest& manifest = reader->manifest();
  VerifyReport report;
  auto chosen = choose_keys(keys, manifest.verifier_key, report);
  if (!chosen) return std::unexpected(chosen.error());
  ChainChecker checker(manifest.origin, *chosen, report);

  auto checkpoints = reader->checkpoints();
  if (!checkpoints) {
    checker.problem("checkpoints", {}, checkpoints.error().message);
    return report;
  }
  if (!checker.load_checkpoints(*checkpoints)) return report;

  auto status = reader->for_each_record([&](uint64_t line_no, std::string_view line) -> bool {
    auto record = Record::from_canonical(line);
    if (!record) {
      return checker.problem("record " + std::to_string(checker.size()), checker.size(),
                             "records.jsonl line " + std::to_string(line_no) + ": " + record.error().message);
    }
    return checker.add(record->view(), line, [](unsigned, uint64_t, const Digest&) {});
  });
  if (!status) {
    checker.problem("records.jsonl", checker.size(), status.error().message);
    return report;
  }
  if (report.problem || !checker.finish()) return report;
  if (checker.size() != manifest.size) {
    checker.problem("manifest", {}, "declares " + std::to_string(manifest.size) + " records, records.jsonl holds " +
                                        std::to_string(checker.size()));
    return report;
  }
  if (report.root != manifest.root) {
    checker.problem("manifest", manifest.size == 0 ? std::optional<uint64_t>() : manifest.size - 1,
                    "declared root " + manifest.root.str() + " differs from the recomputed root " + report.root.str());
    return report;
  }

  auto blob_status = reader->for_each_blob([&](const std::string& name, std::string_view bytes) -> bool {
    auto digest = Digest::from_hex(name);
    if (!digest) return checker.problem("blob " + name, {}, "file name is not a SHA-256 digest");
    if (sha256(bytes) != *digest) {
      return checker.problem("blob " + digest->str(), {}, "content does not match its digest (altered or swapped)");
    }
    report.bytes_hashed += bytes.size();
    ++report.blobs;
    return true;
  });
  if (!blob_status) checker.problem("blobs", {}, blob_status.error().message);
  return report;
}

Result<VerifyReport> verify_path(const std::filesystem::path& path, const std::vector<NoteVerifier>& keys) {
  std::error_code ec;
  if (std::filesystem::exists(path / "ledger.json", ec)) return verify_export_dir(path, keys);
  return verify_ledger_dir(path, keys);
}

}  // namespace warden
