// Verifying a ledger directory (verify.h): its records and stored nodes hashed in parallel,
// chunk by chunk, and checked in order with the chain checker (verify_chain.h); then the kind
// index, the blob store and the unsigned tail. An export is verified in verify_export.cc.
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
#include "ledger/ledger.h"
#include "ledger/ledger_keys.h"
#include "ledger/ledger_impl.h"
#include "ledger/merkle.h"
#include "ledger/record.h"
#include "ledger/verify_chain.h"

namespace warden {

using detail::BlobScan;
using detail::ChainChecker;
using detail::KindCounts;
using detail::ReferenceLog;
using detail::check_signed_tail;
using detail::choose_keys;
using detail::count_kind;

namespace {

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
