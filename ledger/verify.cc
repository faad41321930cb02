#include "ledger/verify.h"

#include <algorithm>
#include <deque>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/file.h"
#include "ledger/checkpoint.h"
#include "ledger/export.h"
#include "ledger/ledger.h"
#include "ledger/ledger_keys.h"
#include "ledger/ledger_impl.h"
#include "ledger/merkle.h"
#include "ledger/record.h"

namespace warden {
namespace {

// Few distinct kinds: a vector searched linearly beats hashing every record's kind.
using KindCounts = std::vector<std::pair<std::string, uint64_t>>;

void count_kind(KindCounts& counts, std::string_view kind, uint64_t n = 1) {
  for (auto& [k, c] : counts) {
    if (k == kind) {
      c += n;
      return;
    }
  }
  counts.emplace_back(std::string(kind), n);
}

// The part of verification both forms share: checkpoints, the prev chain, the tree.
class ChainChecker {
 public:
  ChainChecker(std::string origin, std::vector<NoteVerifier> keys, VerifyReport& report)
      : origin_(std::move(origin)), keys_(std::move(keys)), report_(report) {}

  bool signed_anything() const { return !expected_roots_.empty(); }

  bool problem(std::string object, std::optional<uint64_t> seq, std::string message) {
    if (!report_.problem) report_.problem = VerifyProblem{std::move(object), seq, std::move(message)};
    return false;
  }
  bool record_problem(uint64_t seq, std::string message) {
    return problem("record " + std::to_string(seq), seq, std::move(message));
  }

  // Signatures and bodies first: a checkpoint that is not genuine proves nothing. `kept`
  // are the auditor's own notes: the ledger must reach each of them with the same root.
  bool load_checkpoints(const std::vector<StoredCheckpoint>& stored, const std::vector<std::string>& kept) {
    for (const auto& cp : stored) {
      auto body = open_checkpoint(cp.note, "checkpoint " + std::to_string(cp.size));
      if (!body) return false;
      if (body->size != cp.size) {
        return problem("checkpoint " + std::to_string(cp.size), {},
                       "signed tree size " + std::to_string(body->size) + " differs from where it is stored");
      }
      expected_roots_.emplace(cp.size, Expected{body->root, false});
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      auto body = open_checkpoint(kept[i], "kept checkpoint #" + std::to_string(i + 1));
      if (!body) return false;
      expected_roots_.emplace(body->size, Expected{body->root, true});
    }
    next_ = expected_roots_.begin();
    return check_due_checkpoints();
  }

  // The prev chain. `prior_verified`: the previous record's bytes were already checked
  // against a stored hash, so a mismatch is this record's fault; otherwise either may be.
  bool check_prev(uint64_t seq, const Digest& prev, bool prior_verified) {
    if (seq == 0) return prev.is_zero() || record_problem(0, "the first record's prev must be all zeros");
    if (prev == last_) return true;
    std::string detail = "prev " + prev.str() + " does not match the recomputed hash of record " +
                         std::to_string(seq - 1) + " (" + last_.str() + ")";
    if (prior_verified) return record_problem(seq, detail);
    return record_problem(seq - 1, "record " + std::to_string(seq) + "'s " + detail + ": record " +
                                       std::to_string(seq - 1) + " was altered, or record " + std::to_string(seq) +
                                       "'s prev was");
  }

  // Adds the next leaf; parent(level, index, left, right) supplies each completed subtree
  // root and sink(level, index, hash) sees every new stored node.
  template <typename Parent, typename Sink>
  bool append_leaf(const Digest& leaf, Parent&& parent, Sink&& sink) {
    range_.append_with(leaf, std::forward<Parent>(parent), std::forward<Sink>(sink));
    last_ = leaf;
    report_.records = range_.size();
    return !report_.problem && check_due_checkpoints();
  }

  // One record from its canonical bytes, hashing everything here (the export path).
  bool add(const RecordView& r, std::string_view canonical) {
    uint64_t expected = range_.size();
    if (r.seq != expected) {
      return record_problem(expected, r.seq > expected ? "missing: the next record present is " + std::to_string(r.seq)
                                                       : "out of order: found seq " + std::to_string(r.seq) + " where " +
                                                             std::to_string(expected) +
                                                             " belongs (duplicated or reordered)");
    }
    if (!check_prev(r.seq, r.prev, false)) return false;
    Digest leaf = hasher_.leaf(canonical);
    report_.bytes_hashed += canonical.size() + 1;
    return append_leaf(
        leaf, [this](unsigned, uint64_t, const Digest& l, const Digest& r) { return hash_node(l, r); },
        [](unsigned, uint64_t, const Digest&) {});
  }

  Digest hash_node(const Digest& left, const Digest& right) {
    report_.bytes_hashed += 65;
    return hasher_.node(left, right);
  }

  // Checkpoints beyond the last record mean records were removed; a kept one, that this
  // copy does not extend what the auditor saw.
  bool finish() {
    if (next_ != expected_roots_.end()) {
      const uint64_t want = next_->first;
      const std::string have = std::to_string(range_.size());
      if (next_->second.kept) {
        return problem("kept checkpoint " + std::to_string(want), range_.size(),
                       "signs a tree of " + std::to_string(want) + " records but this ledger holds only " + have +
                           ": it does not extend the kept checkpoint (cut short, or an older copy)");
      }
      return problem("checkpoint " + std::to_string(want), range_.size(),
                     "signs a tree of " + std::to_string(want) + " records but only " + have +
                         " are present (records missing from the end)");
    }
    report_.root = range_.root(hasher_);
    report_.signed_size = expected_roots_.empty() ? 0 : expected_roots_.rbegin()->first;
    report_.unsigned_records = range_.size() - report_.signed_size;
    return true;
  }

  uint64_t size() const { return range_.size(); }

 private:
  struct Expected {
    Digest root;
    bool kept = false;  // the auditor's note, not one stored in the ledger
  };

  // The body of a note signed by a trusted key and naming this ledger's origin.
  std::optional<Checkpoint> open_checkpoint(std::string_view note, const std::string& object) {
    auto opened = open_note(note, keys_);
    auto body = opened ? Checkpoint::parse_body(opened->text) : Result<Checkpoint>(std::unexpected(opened.error()));
    if (!body) {
      problem(object, {}, body.error().message);
      return std::nullopt;
    }
    if (body->origin != origin_) {
      problem(object, {}, "origin \"" + body->origin + "\" is not this ledger's (\"" + origin_ + "\")");
      return std::nullopt;
    }
    return std::move(*body);
  }

  bool check_due_checkpoints() {
    while (next_ != expected_roots_.end() && next_->first == range_.size()) {
      if (range_.root(hasher_) != next_->second.root) {
        uint64_t last = next_->first == 0 ? 0 : next_->first - 1;
        std::optional<uint64_t> seq = next_->first == 0 ? std::optional<uint64_t>() : last;
        if (next_->second.kept) {
          return problem("kept checkpoint " + std::to_string(next_->first), seq,
                         "the root recomputed over records 0.." + std::to_string(last) +
                             " differs from the kept checkpoint's: this ledger does not extend the history the "
                             "auditor kept (rewritten at or before seq " + std::to_string(last) + ")");
        }
        return problem("checkpoint " + std::to_string(next_->first), seq,
                       "signed root does not match the root recomputed over records 0.." + std::to_string(last) +
                           " (a record at or before seq " + std::to_string(last) + " was altered)");
      }
      ++(next_->second.kept ? report_.kept_checkpoints : report_.checkpoints);
      ++next_;
    }
    return true;
  }

  std::string origin_;
  std::vector<NoteVerifier> keys_;
  VerifyReport& report_;
  std::multimap<uint64_t, Expected> expected_roots_;
  std::multimap<uint64_t, Expected>::iterator next_ = expected_roots_.end();
  MerkleHasher hasher_;
  CompactRange range_;
  Digest last_;  // zero before the first record
};

// What records refer to in the blob store, gathered in seq order while the records are
// checked (one pass), then held against the blob store: a blob's first referrer is the
// record a missing or altered blob is reported at.
class ReferenceLog {
 public:
  // The references of record `seq`; false (with a problem) when it names a blob wrongly.
  bool add(ChainChecker& checker, uint64_t seq, std::string_view kind, const Result<std::vector<BlobReference>>& refs) {
    if (!refs) return checker.record_problem(seq, std::string(kind) + " record: " + refs.error().message);
    for (const auto& ref : *refs) {
      ++count_;
      if (seen_.insert(ref.digest).second) first_uses_.push_back(FirstUse{ref.digest, seq, std::string(kind), ref.field});
    }
    return true;
  }

  // `intact`: every blob present, and whether its bytes hash to its name.
  bool check(ChainChecker& checker, const std::map<Digest, bool>& intact, VerifyReport& report) const {
    for (const auto& use : first_uses_) {
      auto blob = intact.find(use.digest);
      if (blob != intact.end() && blob->second) continue;
      std::string what = blob == intact.end() ? "which is missing from the blob store"
                                              : "whose content does not match its digest (altered or swapped)";
      return checker.record_problem(use.seq, use.kind + " record: " + use.field + " names blob " + use.digest.str() +
                                                 ", " + what);
    }
    report.blob_references = count_;
    return true;
  }

 private:
  struct FirstUse {
    Digest digest;
    uint64_t seq = 0;
    std::string kind, field;
  };
  std::vector<FirstUse> first_uses_;
  std::set<Digest> seen_;
  uint64_t count_ = 0;
};

// The blob store, hashed once. A blob that fails its own name is reported at the record that
// refers to it when one does, else as itself.
class BlobScan {
 public:
  // A blob file or key that is not a digest at all.
  void malformed(std::string object, std::string why) {
    if (!first_bad_) first_bad_ = VerifyProblem{std::move(object), {}, std::move(why)};
  }
  void add(const Digest& name, std::string_view bytes, VerifyReport& report) {
    bool ok = sha256(bytes) == name;
    intact_[name] = ok;
    report.bytes_hashed += bytes.size();
    if (ok) ++report.blobs;
    else malformed("blob " + name.str(), "content does not match its digest (altered or swapped)");
  }
  bool finish(ChainChecker& checker, const ReferenceLog& refs, VerifyReport& report) const {
    if (!refs.check(checker, intact_, report)) return false;
    if (first_bad_) return checker.problem(first_bad_->object, {}, first_bad_->message);
    return true;
  }

 private:
  std::map<Digest, bool> intact_;
  std::optional<VerifyProblem> first_bad_;
};

// With a trusted key, what no signature covers is not evidence: a forged record appended
// after the last checkpoint, or a copy cut short, verifies as well as the real thing.
void check_signed_tail(ChainChecker& checker, const VerifyOptions& options, VerifyReport& report) {
  if (!options.keys.empty() && !checker.signed_anything()) {
    checker.problem("checkpoints", {},
                    "none is signed by a trusted key, so the key vouches for nothing here (a copy cut short "
                    "before its first checkpoint, or a ledger never checkpointed: `warden ledger checkpoint` signs one)");
    return;
  }
  if (report.unsigned_records == 0) return;
  const uint64_t first = report.signed_size, last = report.records - 1;
  std::string what = std::to_string(report.unsigned_records) + " record" + (report.unsigned_records == 1 ? "" : "s") +
                     " (seq " + std::to_string(first) + (first == last ? "" : ".." + std::to_string(last)) +
                     ") after the last signed checkpoint carry no signature: they may be forged, or signed history "
                     "after them cut off";
  if (options.tail_required()) {
    checker.problem("unsigned tail", first, what + " (sign a checkpoint, or accept them unsigned with --allow-unsigned-tail)");
  } else {
    report.warnings.push_back(what);
  }
}

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
      "verifier key you trust for an independent check (the ledger's signer.pub, copied where the ledger's "
      "writers cannot change it)");
  return std::vector<NoteVerifier>{*own};
}

// Records are hashed in parallel, in chunks that are aligned perfect subtrees. A worker
// reads its chunk's records and stored nodes through its own read transaction (below the
// verified size the ledger is append-only, so every snapshot agrees there), hashes every
// record and every subtree inside the chunk and compares them with the stored nodes. The
// main thread walks the chunks in order: the prev chain, subtrees above chunk level, and
// the checkpoints. Hashing is most of the work; one core cannot keep up with it.
constexpr unsigned kChunkLevel = 13;
constexpr uint64_t kChunkSize = uint64_t{1} << kChunkLevel;

struct HashedChunk {
  uint64_t first_seq = 0;
  std::vector<Digest> prevs;  // per record
  std::vector<Digest> nodes;  // post-order: leaves and the subtrees complete inside the chunk
  uint64_t checked = 0;                // records that passed every check here
  std::optional<std::string> problem;  // about record first_seq + checked; if prevs has
                                       // an entry for it, its prev is still to be checked
  KindCounts kinds;
  uint64_t bytes_hashed = 0;
  struct References {
    uint64_t seq = 0;
    std::string kind;  // copied: the worker's snapshot ends with it
    Result<std::vector<BlobReference>> refs;
  };
  std::vector<References> references;  // records that name blobs (or fail to), in seq order
};

std::string describe_node(unsigned level, uint64_t index) {
  return level == 0 ? "stored record hash"
                    : "stored Merkle node (level " + std::to_string(level) + ", index " + std::to_string(index) + ")";
}

// Pulls a record's bytes towards the cache a few records ahead of their use: LMDB lays
// nodes out downwards within a page, which hardware prefetchers follow poorly.
void prefetch(std::string_view bytes) {
  for (size_t at = 0; at < bytes.size(); at += 64) __builtin_prefetch(bytes.data() + at);
}

HashedChunk hash_chunk(const Ledger& ledger, const BlobReferences* blob_refs, uint64_t first_seq, uint64_t count) {
  HashedChunk out;
  out.first_seq = first_seq;
  auto stop = [&](std::string why) {
    out.problem = std::move(why);
    return out;
  };
  auto snap = ledger.snapshot();
  if (!snap) return stop(snap.error().message);
  auto records = lmdb::Cursor::open(detail::LedgerAccess::txn(*snap), detail::LedgerAccess::dbis(*snap).records);
  auto nodes = lmdb::Cursor::open(detail::LedgerAccess::txn(*snap), detail::LedgerAccess::dbis(*snap).nodes);
  if (!records || !nodes) return stop("cannot open cursors");

  // First pass: where everything is. Records must be exactly first_seq, first_seq+1, ...;
  // the chunk's own nodes are the next stored_node_count(count) positions from its first.
  std::vector<std::string_view> values;
  values.reserve(count);
  lmdb::U64Key first_key(first_seq);
  MDB_val k = lmdb::val(first_key.view()), v{};
  std::optional<std::string> gap;
  for (MDB_cursor_op op = MDB_SET_RANGE; values.size() < count; op = MDB_NEXT) {
    auto found = records->get(k, v, op);
    auto key = found && *found ? lmdb::decode_u64(lmdb::view(k)) : Result<uint64_t>(fail(Errc::corrupt, ""));
    if (!key || *key != first_seq + values.size()) {
      gap = key ? "missing: the next record present is " + std::to_string(*key) : "missing";
      break;
    }
    values.push_back(lmdb::view(v));
  }
  const uint64_t first_pos = stored_node_count(first_seq);
  std::vector<std::pair<uint64_t, std::string_view>> stored_nodes;
  stored_nodes.reserve(stored_node_count(values.size()));
  lmdb::U64Key first_node(first_pos);
  k = lmdb::val(first_node.view());
  for (MDB_cursor_op op = MDB_SET_RANGE; stored_nodes.size() < stored_node_count(values.size()); op = MDB_NEXT) {
    auto found = nodes->get(k, v, op);
    if (!found || !*found) break;
    auto pos = lmdb::decode_u64(lmdb::view(k));
    stored_nodes.emplace_back(pos ? *pos : UINT64_MAX, lmdb::view(v));
  }

  out.prevs.reserve(values.size());
  out.nodes.reserve(stored_node_count(values.size()));
  MerkleHasher hasher;
  CompactRange local;
  std::string canonical;
  std::optional<std::string> node_problem;
  size_t next_node = 0;
  constexpr size_t kAhead = 4;
  for (; out.checked < values.size(); ++out.checked) {
    uint64_t seq = first_seq + out.checked;
    if (out.checked + kAhead < values.size()) prefetch(values[out.checked + kAhead]);
    auto view = RecordView::decode_stored(seq, values[out.checked]);
    if (!view) return stop(view.error().message);
    canonical.clear();
    view->append_canonical_bytes(canonical);
    out.bytes_hashed += canonical.size() + 1;
    local.append_to(hasher, hasher.leaf(canonical), [&](unsigned level, uint64_t index, const Digest& h) {
      if (level > 0) out.bytes_hashed += 65;
      out.nodes.push_back(h);
      if (node_problem) return;
      uint64_t global_index = index + (first_seq >> level);
      if (next_node >= stored_nodes.size() || stored_nodes[next_node].first != first_pos + out.nodes.size() - 1) {
        node_problem = describe_node(level, global_index) + " is missing or misplaced";
      } else if (stored_nodes[next_node].second != h.view()) {
        node_problem = describe_node(level, global_index) +
                       (level == 0 ? " does not match the hash of the record's bytes (the record was altered)"
                                   : " does not match the value recomputed from the records");
      }
      ++next_node;
    });
    out.prevs.push_back(view->prev);
    count_kind(out.kinds, view->kind);
    if (blob_refs) {
      auto refs = blob_refs->of(*view);
      if (!refs || !refs->empty()) out.references.push_back({seq, std::string(view->kind), std::move(refs)});
    }
    // Its prev is handed over with the node problem: the main thread checks the prev chain
    // first, so a record that breaks both is reported for its prev, as if hashed in order.
    if (node_problem) return stop(std::move(*node_problem));
  }
  if (gap) return stop(std::move(*gap));
  return out;
}

bool check_kind_index(LedgerSnapshot& snap, const KindCounts& kinds, ChainChecker& checker, Status& error) {
  auto counted = snap.kind_counts();
  if (!counted) {
    error = std::unexpected(counted.error());
    return false;
  }
  for (const auto& [kind, count] : *counted) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& kc) { return kc.first == kind; });
    uint64_t actual = it == kinds.end() ? 0 : it->second;
    if (actual != count) {
      return checker.problem("kind index", {}, "counts " + std::to_string(count) + " \"" + kind +
                                                   "\" records, the log holds " + std::to_string(actual));
    }
  }
  if (counted->size() != kinds.size()) return checker.problem("kind index", {}, "is missing kinds present in the log");
  return true;
}

// The main thread's part of a chunk: the prev chain, subtrees above chunk level, checkpoints.
bool check_chunk(const HashedChunk& hashed, ChainChecker& checker, LedgerSnapshot& snap, KindCounts& kinds,
                 ReferenceLog& references) {
  size_t next_node = 0;
  auto next_refs = hashed.references.begin();
  for (uint64_t i = 0; i < hashed.checked; ++i) {
    uint64_t seq = hashed.first_seq + i;
    if (!checker.check_prev(seq, hashed.prevs[i], true)) return false;
    bool nodes_ok = true;
    auto parent = [&](unsigned level, uint64_t, const Digest& l, const Digest& r) {
      return level <= kChunkLevel ? hashed.nodes[next_node++] : checker.hash_node(l, r);
    };
    auto sink = [&](unsigned level, uint64_t index, const Digest& h) {
      if (level == 0) ++next_node;
      if (level <= kChunkLevel || !nodes_ok) return;  // the worker compared those
      auto stored = snap.node(level, index);
      if (!stored || *stored != h) {
        nodes_ok = checker.record_problem(seq, describe_node(level, index) +
                                                   (stored ? " does not match the value recomputed from the records"
                                                           : " is missing"));
      }
    };
    Digest leaf = hashed.nodes[next_node];
    if (!checker.append_leaf(leaf, parent, sink) || !nodes_ok) return false;
    if (next_refs != hashed.references.end() && next_refs->seq == seq) {
      if (!references.add(checker, seq, next_refs->kind, next_refs->refs)) return false;
      ++next_refs;
    }
  }
  if (hashed.problem) {
    uint64_t seq = hashed.first_seq + hashed.checked;
    if (hashed.prevs.size() > hashed.checked && !checker.check_prev(seq, hashed.prevs[hashed.checked], true)) {
      return false;
    }
    return checker.record_problem(seq, *hashed.problem);
  }
  for (const auto& [kind, count] : hashed.kinds) count_kind(kinds, kind, count);
  return true;
}

}  // namespace

Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, const VerifyOptions& options) {
  LogicalClock unused_clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, unused_clock);
  if (!ledger) return std::unexpected(ledger.error());
  return verify_ledger(*ledger, options);
}

Result<VerifyReport> verify_ledger(const Ledger& ledger, const VerifyOptions& options) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  VerifyReport report;
  if (ledger.unlocked_read()) {
    report.warnings.push_back("read without LMDB's lock file (read-only media): a concurrent writer would not be seen");
  }
  auto chosen = choose_keys(options.keys, ledger.verifier_key(), report);
  if (!chosen) return std::unexpected(chosen.error());
  ChainChecker checker(ledger.origin(), *chosen, report);
  // The verifier key file beside the ledger (ledger_keys.h) is the one people copy out and
  // publish: one that differs from the key the ledger records means one of them was replaced.
  const std::filesystem::path pub = ledger_verifier_key_path(ledger.dir());
  if (auto text = read_file(pub, 64 * 1024)) {
    std::string key = *text;
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
    if (key != ledger.verifier_key()) {
      report.warnings.push_back(pub.string() + " holds " + key + ", not the verifier key the ledger records (" +
                                ledger.verifier_key() + "): one of them was replaced since the ledger was created");
    }
  }

  auto checkpoints = snap->checkpoints();
  if (!checkpoints) return std::unexpected(checkpoints.error());
  if (!checker.load_checkpoints(*checkpoints, options.kept_checkpoints)) return report;

  const auto& txn = detail::LedgerAccess::txn(*snap);
  const auto& dbis = detail::LedgerAccess::dbis(*snap);
  const uint64_t size = snap->size();
  KindCounts kinds;
  ReferenceLog references;
  {
    // Declared after the snapshot: workers finish before the pages they read could go.
    std::deque<std::future<HashedChunk>> pending;
    const size_t workers = std::max(1u, std::thread::hardware_concurrency());
    uint64_t next = 0;
    while (next < size || !pending.empty()) {
      while (next < size && pending.size() < workers) {
        uint64_t count = std::min(kChunkSize, size - next);
        pending.push_back(std::async(std::launch::async, hash_chunk, std::cref(ledger), options.blob_references, next, count));
        next += count;
      }
      HashedChunk hashed = pending.front().get();
      pending.pop_front();
      report.bytes_hashed += hashed.bytes_hashed;
      if (!check_chunk(hashed, checker, *snap, kinds, references)) return report;
    }
  }
  auto nodes = lmdb::Cursor::open(txn, dbis.nodes);
  if (!nodes) return std::unexpected(nodes.error());
  MDB_val k{}, v{};
  auto last_node = nodes->get(k, v, MDB_LAST);
  if (!last_node) return std::unexpected(last_node.error());
  auto last_pos = *last_node ? lmdb::decode_u64(lmdb::view(k)) : Result<uint64_t>(uint64_t{0});
  if (*last_node && (!last_pos || *last_pos + 1 != stored_node_count(size))) {
    checker.problem("Merkle store", size, "holds nodes beyond the last record");
    return report;
  }
  if (!checker.finish()) return report;

  Status kind_error;
  if (!check_kind_index(*snap, kinds, checker, kind_error)) {
    if (!kind_error) return std::unexpected(kind_error.error());
    return report;
  }

  BlobScan scan;
  auto blobs = lmdb::for_each(txn, dbis.blobs, [&](std::string_view key, std::string_view bytes) -> Status {
    if (auto digest = Digest::from_bytes(key)) scan.add(*digest, bytes, report);
    else scan.malformed("blob with a malformed key", "the key is not a 32-byte SHA-256 digest");
    return {};
  });
  if (!blobs) return std::unexpected(blobs.error());
  if (!scan.finish(checker, references, report)) return report;
  check_signed_tail(checker, options, report);
  return report;
}

Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, const VerifyOptions& options) {
  auto reader = ExportReader::open(dir);
  if (!reader) return std::unexpected(reader.error());
  const ExportManifest& manifest = reader->manifest();
  VerifyReport report;
  auto chosen = choose_keys(options.keys, manifest.verifier_key, report);
  if (!chosen) return std::unexpected(chosen.error());
  ChainChecker checker(manifest.origin, *chosen, report);

  auto checkpoints = reader->checkpoints();
  if (!checkpoints) {
    checker.problem("checkpoints", {}, checkpoints.error().message);
    return report;
  }
  if (!checker.load_checkpoints(*checkpoints, options.kept_checkpoints)) return report;
  ReferenceLog references;

  auto status = reader->for_each_record([&](uint64_t line_no, std::string_view line) -> bool {
    auto record = Record::from_canonical(line);
    if (!record) {
      return checker.record_problem(checker.size(),
                                    "records.jsonl line " + std::to_string(line_no) + ": " + record.error().message);
    }
    if (!checker.add(record->view(), line)) return false;
    if (!options.blob_references) return true;
    auto refs = options.blob_references->of(record->view());
    return (refs && refs->empty()) || references.add(checker, record->seq, record->kind, refs);
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

  BlobScan scan;
  auto blob_status = reader->for_each_blob([&](const std::string& name, std::string_view bytes) -> bool {
    if (auto digest = Digest::from_hex(name)) scan.add(*digest, bytes, report);
    else scan.malformed("blob " + name, "file name is not a SHA-256 digest");
    return true;
  });
  if (!blob_status) {
    checker.problem("blobs", {}, blob_status.error().message);
    return report;
  }
  if (!scan.finish(checker, references, report)) return report;
  check_signed_tail(checker, options, report);
  return report;
}

Result<VerifyReport> verify_path(const std::filesystem::path& path, const VerifyOptions& options) {
  std::error_code ec;
  if (std::filesystem::exists(path / "ledger.json", ec)) return verify_export_dir(path, options);
  return verify_ledger_dir(path, options);
}

namespace {
VerifyOptions keys_only(std::initializer_list<NoteVerifier> keys) {
  VerifyOptions options;
  options.keys = keys;
  return options;
}
}  // namespace

Result<VerifyReport> verify_ledger(const Ledger& ledger, std::initializer_list<NoteVerifier> keys) {
  return verify_ledger(ledger, keys_only(keys));
}
Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, std::initializer_list<NoteVerifier> keys) {
  return verify_ledger_dir(dir, keys_only(keys));
}
Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, std::initializer_list<NoteVerifier> keys) {
  return verify_export_dir(dir, keys_only(keys));
}
Result<VerifyReport> verify_path(const std::filesystem::path& path, std::initializer_list<NoteVerifier> keys) {
  return verify_path(path, keys_only(keys));
}

}  // namespace warden
