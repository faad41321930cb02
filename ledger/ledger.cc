// One unit (~770 lines): why in ledger.h.
#include "ledger/ledger.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/file.h"
#include "ledger/checkpoint.h"
#include "ledger/ledger_keys.h"
#include "ledger/ledger_impl.h"

namespace warden {

using detail::Dbis;
using detail::LedgerState;
using detail::SnapshotState;
using detail::WriteState;

namespace {

// Address space reserved for the map, not disk: the file grows as pages are used.
constexpr size_t kMapSize = size_t{1} << 38;  // 256 GiB
constexpr unsigned kMaxDbs = 8;
constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 31;
constexpr std::string_view kRunsIndexed = "runs_indexed";

// The runs database may be missing only from an older ledger opened read-only.
Result<Dbis> open_dbs(lmdb::Txn& txn, unsigned flags, bool read_only) {
  // `flags`: MDB_CREATE when creating the ledger; the runs index is created by any read-write
  // open, since ledgers made before it lack it.
  Dbis d;
  std::pair<const char*, MDB_dbi*> names[] = {{"records", &d.records}, {"nodes", &d.nodes},
                                              {"blobs", &d.blobs},     {"checkpoints", &d.checkpoints},
                                              {"kinds", &d.kinds},     {"meta", &d.meta}};
  for (auto [name, dbi] : names) {
    auto opened = txn.open_db(name, flags);
    if (!opened) return std::unexpected(opened.error());
    *dbi = *opened;
  }
  auto runs = txn.open_db("runs", MDB_DUPSORT | MDB_DUPFIXED | (read_only ? 0u : unsigned{MDB_CREATE}));
  if (runs) d.runs = *runs;
  else if (!read_only || runs.error().code != Errc::not_found) return std::unexpected(runs.error());
  return d;
}

// Size of the log: one past the last record key.
Result<uint64_t> read_size(const lmdb::Txn& txn, MDB_dbi records) {
  auto cursor = lmdb::Cursor::open(txn, records);
  if (!cursor) return std::unexpected(cursor.error());
  MDB_val k{}, v{};
  auto found = cursor->get(k, v, MDB_LAST);
  if (!found) return std::unexpected(found.error());
  if (!*found) return uint64_t{0};
  auto last = lmdb::decode_u64(lmdb::view(k));
  if (!last) return std::unexpected(last.error());
  return *last + 1;
}

class TxnNodeReader final : public NodeReader {
 public:
  TxnNodeReader(const lmdb::Txn& txn, MDB_dbi nodes) : txn_(txn), nodes_(nodes) {}
  Result<Digest> node(unsigned level, uint64_t index) override {
    if (level >= 64) return fail(Errc::invalid_argument, "Merkle level out of range");
    lmdb::U64Key key(postorder_position(level, index));
    MDB_val k = lmdb::val(key.view()), v{};
    int rc = mdb_get(txn_.get(), nodes_, &k, &v);
    if (rc == MDB_NOTFOUND) {
      return fail(Errc::corrupt, "Merkle node (level " + std::to_string(level) + ", index " + std::to_string(index) +
                                     ") is missing from the store");
    }
    if (rc != 0) return std::unexpected(lmdb::error(rc, "reading Merkle node"));
    auto d = Digest::from_bytes(lmdb::view(v));
    if (!d) return fail(Errc::corrupt, "Merkle node (level " + std::to_string(level) + ") is not 32 bytes");
    return *d;
  }

 private:
  const lmdb::Txn& txn_;
  MDB_dbi nodes_;
};

std::string u64_value(uint64_t v) { return std::string(lmdb::U64Key(v).view()); }

// The tail a write is about to extend must be what the ledger wrote: the last record
// re-hashes from its stored bytes to its stored leaf, names the leaf before it as prev, and
// hashes up through its stored ancestors to the node the compact range ends with (the one
// the next nodes are hashed with). Returns the last record's hash (zero for an empty ledger).
// O(log n) reads. Errc::corrupt names the record: an append would extend a log that
// `ledger verify` rejects.
Result<Digest> check_tail(lmdb::Txn& txn, MDB_dbi records, NodeReader& reader, const CompactRange& range) {
  const uint64_t size = range.size();
  if (size == 0) return Digest();
  const uint64_t seq = size - 1;
  const std::string name = "record " + std::to_string(seq) + " (the last)";
  auto stored = txn.get(records, lmdb::U64Key(seq).view());
  if (!stored) {
    if (stored.error().code == Errc::not_found) return fail(Errc::corrupt, name + " is missing");
    return std::unexpected(stored.error());
  }
  auto record = RecordView::decode_stored(seq, *stored);
  if (!record) return std::unexpected(Error{Errc::corrupt, name + ": " + record.error().message});
  std::string canonical;
  record->append_canonical_bytes(canonical);
  MerkleHasher hasher;
  Digest hash = hasher.leaf(canonical);
  auto leaf = reader.node(0, seq);
  if (!leaf) return std::unexpected(leaf.error());
  if (*leaf != hash) return fail(Errc::corrupt, name + " does not hash to its stored Merkle leaf (altered?)");
  Digest prev;
  if (seq > 0) {
    auto before = reader.node(0, seq - 1);
    if (!before) return std::unexpected(before.error());
    prev = *before;
  }
  if (record->prev != prev) {
    return fail(Errc::corrupt, name + "'s prev hash is not record " + (seq > 0 ? std::to_string(seq - 1) : "-1") +
                                   "'s hash");
  }
  // While the node holding the last leaf is a right child, its parent is complete and stored.
  Digest node = hash;
  unsigned level = 0;
  for (uint64_t index = seq; index & 1; index >>= 1) {
    auto left = reader.node(level, index - 1);
    if (!left) return std::unexpected(left.error());
    node = hasher.node(*left, node);
    ++level;
    auto parent = reader.node(level, index >> 1);
    if (!parent) return std::unexpected(parent.error());
    if (*parent != node) {
      return fail(Errc::corrupt, "the Merkle node (level " + std::to_string(level) + ", index " +
                                     std::to_string(index >> 1) + ") above " + name + " is not the hash of its children");
    }
  }
  if (range.nodes().empty() || range.nodes().back() != node) {
    return fail(Errc::corrupt, "the ledger's right edge does not end with the subtree holding " + name);
  }
  return hash;
}

// ---------------------------------------------------------------- the runs index

// Index just past the JSON string that starts at s[i] == '"'; npos if it does not end.
size_t skip_string(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

// Index just past the JSON value that starts at s[i]; npos if malformed.
size_t skip_value(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
    return i;
  }
  int depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      i = skip_string(s, i);
      if (i == std::string_view::npos) return i;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
    ++i;
  }
  return std::string_view::npos;
}

Status index_record(lmdb::Txn& txn, MDB_dbi runs, uint64_t seq, std::string_view payload) {
  for (const auto& id : detail::top_level_run_ids(payload)) {
    std::string key = detail::run_index_key(id);
    lmdb::U64Key value(seq);
    MDB_val k = lmdb::val(key), v = lmdb::val(value.view());
    // The same (run, seq) twice is one entry: "run" and "run_id" may both name it.
    if (int rc = mdb_put(txn.get(), runs, &k, &v, MDB_NODUPDATA); rc != 0 && rc != MDB_KEYEXIST) {
      return std::unexpected(lmdb::error(rc, "indexing record " + std::to_string(seq) + " under its run"));
    }
  }
  return {};
}

Result<uint64_t> runs_indexed(lmdb::Txn& txn, const Dbis& dbis) {
  if (!dbis.runs) return uint64_t{0};
  auto v = txn.get(dbis.meta, kRunsIndexed);
  if (!v) {
    if (v.error().code == Errc::not_found) return uint64_t{0};
    return std::unexpected(v.error());
  }
  return lmdb::decode_u64(*v);
}

// Brings the runs index up to `size` records: after an open of a ledger made before the
// index, or after an older binary appended.
Status catch_up_run_index(lmdb::Txn& txn, const Dbis& dbis, uint64_t size) {
  auto indexed = runs_indexed(txn, dbis);
  if (!indexed) return std::unexpected(indexed.error());
  if (*indexed == size) return {};
  if (*indexed > size) {  // an index of records no longer there: start again
    if (int rc = mdb_drop(txn.get(), *dbis.runs, 0); rc != 0) return std::unexpected(lmdb::error(rc, "clearing the runs index"));
    *indexed = 0;
  }
  auto cursor = lmdb::Cursor::open(txn, dbis.records);
  if (!cursor) return std::unexpected(cursor.error());
  lmdb::U64Key first(*indexed);
  MDB_val k = lmdb::val(first.view()), v{};
  for (MDB_cursor_op op = MDB_SET_RANGE;; op = MDB_NEXT) {
    auto found = cursor->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    if (!*found) break;
    auto seq = lmdb::decode_u64(lmdb::view(k));
    if (!seq) return std::unexpected(seq.error());
    auto record = RecordView::decode_stored(*seq, lmdb::view(v));
    if (!record) return std::unexpected(record.error());
    if (Status st = index_record(txn, *dbis.runs, *seq, record->payload); !st) return st;
  }
  return txn.put(dbis.meta, kRunsIndexed, u64_value(size), 0, "updating the runs index size");
}

}  // namespace

std::vector<std::string> detail::top_level_run_ids(std::string_view s) {
  std::vector<std::string> out;
  // Most payloads name no run: one substring search rules them out without a walk.
  if (s.find("\"run") == std::string_view::npos) return out;
  if (s.size() < 2 || s.front() != '{') return out;
  size_t i = 1;
  while (i < s.size() && s[i] == '"') {
    size_t key_end = skip_string(s, i);
    if (key_end == std::string_view::npos || key_end >= s.size() || s[key_end] != ':') return out;
    std::string_view key = s.substr(i + 1, key_end - i - 2);
    // Canonical keys are sorted: past "run_id" (an unescaped key, compared bytewise, which
    // agrees with JCS order against an ASCII key) nothing more can match.
    if (key > "run_id" && key.find('\\') == std::string_view::npos) return out;
    size_t value = key_end + 1;
    size_t value_end = skip_value(s, value);
    if (value_end == std::string_view::npos) return out;
    if ((key == "run" || key == "run_id") && s[value] == '"') {
      std::string_view raw = s.substr(value + 1, value_end - value - 2);
      std::string id;
      if (raw.find('\\') == std::string_view::npos) {
        id = raw;
      } else {
        auto decoded = parse_json(s.substr(value, value_end - value));
        if (!decoded || !decoded->is_string()) return out;
        id = decoded->get<std::string>();
      }
      if (out.empty() || out.front() != id) out.push_back(std::move(id));
    }
    if (value_end >= s.size() || s[value_end] != ',') return out;
    i = value_end + 1;
  }
  return out;
}

std::string detail::run_index_key(std::string_view run_id) {
  if (!run_id.empty() && run_id.size() <= kMaxRunKeyBytes && run_id.front() != '\0') return std::string(run_id);
  std::string key(1, '\0');
  key += sha256(run_id).view();
  return key;
}

// ---------------------------------------------------------------- creation and opening

Ledger::Ledger(std::filesystem::path dir, std::unique_ptr<LedgerState> state, Clock& clock)
    : dir_(std::move(dir)), state_(std::move(state)), clock_(&clock) {}
Ledger::Ledger(Ledger&&) noexcept = default;
Ledger& Ledger::operator=(Ledger&&) noexcept = default;
Ledger::~Ledger() = default;

Status Ledger::create(const std::filesystem::path& dir, const LedgerCreateOptions& options) {
  if (options.origin.empty() || options.origin.find('\n') != std::string::npos) {
    return fail(Errc::invalid_argument, "ledger origin must be a non-empty single line");
  }
  if (options.max_payload_bytes < kMinMaxPayloadBytes) {
    return fail(Errc::invalid_argument, "the largest payload a record may carry must be at least " +
                                            std::to_string(kMinMaxPayloadBytes) + " bytes, not " +
                                            std::to_string(options.max_payload_bytes));
  }
  auto verifier = NoteVerifier::parse(options.verifier_key);
  if (!verifier) return std::unexpected(verifier.error());
  if (options.signer && options.signer->verifier().encoded() != verifier->encoded()) {
    return fail(Errc::invalid_argument, "the signer key kept with a new ledger must be its verifier key's");
  }
  std::error_code ec;
  if (std::filesystem::exists(dir / "data.mdb", ec)) {
    return fail(Errc::already_exists, "a ledger already exists in " + dir.string());
  }
  if (dir.has_parent_path() && dir.parent_path() != dir) std::filesystem::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(errno_error(dir.string(), errno));
  if (!std::filesystem::is_directory(dir, ec)) return fail(Errc::invalid_argument, dir.string() + " is not a directory");
  if (options.signer) {
    if (Status st = check_ledger_key_slot(dir, *options.signer); !st) return st;
  }

  // Built in a private directory inside DIR, then moved into place: a ledger appears whole or
  // not at all. A full disk or a crash midway leaves no data.mdb that is not a ledger.
  std::string staging = (dir / ".creating-XXXXXX").string();
  if (::mkdtemp(staging.data()) == nullptr) return std::unexpected(errno_error("creating " + staging, errno));
  auto cleanup = [&] { std::filesystem::remove_all(staging, ec); };
  auto build = [&]() -> Status {
    auto env = lmdb::Env::open(staging, MDB_NOTLS, kMapSize, kMaxDbs);
    if (!env) return std::unexpected(env.error());
    auto txn = lmdb::Txn::begin(*env, false);
    if (!txn) return std::unexpected(txn.error());
    auto dbis = open_dbs(*txn, MDB_CREATE, false);
    if (!dbis) return std::unexpected(dbis.error());
    std::pair<std::string_view, std::string> meta[] = {
        {"format", std::string(kLedgerFormat)},
        {"origin", options.origin},
        {"verifier_key", verifier->encoded()},
        {"max_payload_bytes", std::to_string(options.max_payload_bytes)},
        {kRunsIndexed, u64_value(0)}};
    for (const auto& [key, value] : meta) {
      if (auto st = txn->put(dbis->meta, key, value, 0, "writing ledger metadata"); !st) return st;
    }
    return txn->commit();  // durable: LMDB syncs the data file at commit
  };
  if (Status st = build(); !st) {
    cleanup();
    return st;
  }
  const std::string from = staging + "/data.mdb", to = (dir / "data.mdb").string();
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    cleanup();
    if (err == EEXIST) return fail(Errc::already_exists, "a ledger already exists in " + dir.string());
    return std::unexpected(errno_error("moving the new ledger into " + dir.string(), err));
  }
  cleanup();
  // Only the process whose ledger this is writes its keys (ledger_keys.h).
  if (Status st = write_ledger_keys(dir, *verifier, options.signer); !st) return st;
  return sync_directory(dir);
}

Result<Ledger> Ledger::open(const std::filesystem::path& dir, Mode mode, Clock& clock) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    // Something else at that path: `ledger init` would fail there too, so it is not offered.
    if (std::filesystem::exists(dir, ec)) {
      return fail(Errc::invalid_argument, "no ledger at " + dir.string() + ": it is a file, not a directory (a ledger is a "
                                          "directory: name one, or a path where `warden ledger init` can make one)");
    }
    return fail(Errc::not_found, "no ledger at " + dir.string() + ": the directory does not exist (`warden ledger init " +
                                     dir.string() + "` creates one)");
  }
  // symlink_status: a symlink named data.mdb (even a dangling one) is refused by
  // lmdb::check_files, not mistaken for an absent ledger.
  const std::filesystem::path data = dir / "data.mdb";
  auto status = std::filesystem::symlink_status(data, ec);
  if (!std::filesystem::exists(status)) {
    return fail(Errc::not_found, "no ledger at " + dir.string() + " (`warden ledger init " + dir.string() + "` creates one)");
  }
  // LMDB would make an empty file a new, empty environment; a ledger's never is empty.
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(data, ec) == 0 && !ec) {
    return fail(Errc::corrupt, data.string() + " is 0 bytes: truncated?");
  }
  bool read_only = mode == Mode::read_only;
  unsigned flags = MDB_NOTLS | (read_only ? MDB_RDONLY : 0u);
  auto env = lmdb::Env::open(dir, flags, kMapSize, kMaxDbs);
  bool unlocked = false;
  if (!env && read_only && env.error().code == Errc::io_error) {
    // Read-only media or a lock file we may not write: read without LMDB's reader table.
    env = lmdb::Env::open(dir, flags | MDB_NOLOCK, kMapSize, kMaxDbs);
    unlocked = env.has_value();
  }
  if (!env) return std::unexpected(env.error());

  auto txn = lmdb::Txn::begin(*env, read_only);
  if (!txn) return std::unexpected(txn.error());
  auto dbis = open_dbs(*txn, 0, read_only);
  if (!dbis) return std::unexpected(Error{Errc::corrupt, dbis.error().message + " (not a Warden ledger?)"});
  auto state = std::make_unique<LedgerState>(std::move(*env));
  state->dbis = *dbis;
  Ledger ledger(dir, std::move(state), clock);
  ledger.unlocked_read_ = unlocked;
  ledger.read_only_ = read_only;
  auto meta = [&](std::string_view key) -> Result<std::string> {
    auto v = txn->get(dbis->meta, key);
    if (!v) return fail(Errc::corrupt, "ledger metadata \"" + std::string(key) + "\" is missing");
    return std::string(*v);
  };
  auto format = meta("format");
  if (!format) return std::unexpected(format.error());
  if (*format != kLedgerFormat) {
    return fail(Errc::corrupt, "unsupported ledger format \"" + *format + "\" (expected " + std::string(kLedgerFormat) + ")");
  }
  auto origin = meta("origin");
  auto vkey = meta("verifier_key");
  auto max_payload = meta("max_payload_bytes");
  if (!origin || !vkey || !max_payload) return fail(Errc::corrupt, "ledger metadata is incomplete");
  ledger.origin_ = *origin;
  ledger.verifier_key_ = *vkey;
  ledger.max_payload_bytes_ = std::stoull(*max_payload);
  if (!read_only) {
    // A ledger from before the runs index gets it now, once.
    auto size = read_size(*txn, dbis->records);
    if (!size) return std::unexpected(size.error());
    if (Status st = catch_up_run_index(*txn, *dbis, *size); !st) return std::unexpected(st.error());
  }
  if (auto st = txn->commit(); !st) return std::unexpected(st.error());  // keeps the dbi handles
  return ledger;
}

Result<LedgerSnapshot> Ledger::snapshot() const {
  auto txn = lmdb::Txn::begin(state_->env, true);
  if (!txn) return std::unexpected(txn.error());
  auto size = read_size(*txn, state_->dbis.records);
  if (!size) return std::unexpected(size.error());
  return LedgerSnapshot(std::make_unique<SnapshotState>(SnapshotState{std::move(*txn), state_->dbis}), *size);
}

// ---------------------------------------------------------------- writing

Result<std::string> Ledger::prepare_payload(const Json& payload) const {
  if (!payload.is_object()) return fail(Errc::invalid_argument, "record payload must be a JSON object");
  auto canonical = canonicalize(payload);
  if (!canonical) return std::unexpected(canonical.error().with_context("payload"));
  if (canonical->size() > max_payload_bytes_) {
    return fail(Errc::limit_exceeded, "payload is " + std::to_string(canonical->size()) +
                                          " bytes in canonical form; this ledger's limit is " +
                                          std::to_string(max_payload_bytes_) +
                                          " bytes (put large bodies in the blob store and record their digest)");
  }
  return canonical;
}

Status Ledger::write(const std::function<Status(WriteTxn&)>& body) {
  if (read_only_) return fail(Errc::invalid_argument, "ledger was opened read-only");
  LedgerState& s = *state_;
  auto txn = lmdb::Txn::begin(s.env, false);
  if (!txn) return std::unexpected(txn.error());
  auto size = read_size(*txn, s.dbis.records);
  if (!size) return std::unexpected(size.error());
  if (*size != s.range.size() || (*size > 0 && s.last_hash.is_zero())) {
    // Another process appended since we last looked (or this is our first write).
    TxnNodeReader reader(*txn, s.dbis.nodes);
    auto range = CompactRange::load(reader, *size);
    if (!range) return std::unexpected(range.error());
    auto last = check_tail(*txn, s.dbis.records, reader, *range);
    if (!last) return std::unexpected(last.error().with_context("refusing to write to the ledger " + dir_.string()));
    s.range = std::move(*range);
    s.last_hash = *last;
    // An older binary may have appended without indexing.
    if (Status st = catch_up_run_index(*txn, s.dbis, *size); !st) return st;
  }
  WriteState w(*txn, s.dbis, *clock_, s.range, s.last_hash, max_payload_bytes_);
  auto rc = lmdb::Cursor::open(*txn, s.dbis.records);
  auto nc = lmdb::Cursor::open(*txn, s.dbis.nodes);
  if (!rc) return std::unexpected(rc.error());
  if (!nc) return std::unexpected(nc.error());
  w.records_cursor.emplace(std::move(*rc));
  w.nodes_cursor.emplace(std::move(*nc));

  WriteTxn writer(w);
  if (Status st = body(writer); !st) return st;  // txn aborts on scope exit
  for (const auto& [kind, added] : w.kind_counts) {
    uint64_t count = added;
    auto existing = txn->get(s.dbis.kinds, kind);
    if (existing) {
      auto prior = lmdb::decode_u64(*existing);
      if (!prior) return std::unexpected(prior.error());
      count += *prior;
    } else if (existing.error().code != Errc::not_found) {
      return std::unexpected(existing.error());
    }
    if (auto st = txn->put(s.dbis.kinds, kind, u64_value(count), 0, "updating kind index"); !st) return st;
  }
  if (w.appended) {
    if (auto st = txn->put(s.dbis.meta, kRunsIndexed, u64_value(w.range.size()), 0, "updating the runs index size"); !st) {
      return st;
    }
  }
  w.records_cursor.reset();
  w.nodes_cursor.reset();
  if (Status st = txn->commit(); !st) return st;
  s.range = std::move(w.range);
  s.last_hash = w.last_hash;
  return {};
}

Result<Appended> Ledger::append(std::string_view kind, const Json& payload) {
  AppendEntry entry{std::string(kind), payload};
  auto out = append_batch(std::span(&entry, 1));
  if (!out) return std::unexpected(out.error());
  return out->front();
}

Result<std::vector<Appended>> Ledger::append_batch(std::span<const AppendEntry> entries) {
  // Validate everything before the transaction: bad input writes nothing.
  std::vector<std::string> payloads;
  payloads.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (auto st = validate_kind(entries[i].kind); !st) {
      return std::unexpected(entries.size() > 1 ? st.error().with_context("entry " + std::to_string(i)) : st.error());
    }
    auto p = prepare_payload(entries[i].payload);
    if (!p) return std::unexpected(entries.size() > 1 ? p.error().with_context("entry " + std::to_string(i)) : p.error());
    payloads.push_back(std::move(*p));
  }
  std::vector<Appended> out;
  out.reserve(entries.size());
  auto st = write([&](WriteTxn& w) -> Status {
    out.clear();
    for (size_t i = 0; i < entries.size(); ++i) {
      auto a = w.append(entries[i].kind, payloads[i]);
      if (!a) return std::unexpected(a.error());
      out.push_back(*a);
    }
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

Result<Digest> Ledger::put_blob(std::string_view bytes) {
  Digest d;
  auto st = write([&](WriteTxn& w) -> Status {
    auto put = w.put_blob(bytes);
    if (!put) return std::unexpected(put.error());
    d = *put;
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return d;
}

Result<StoredCheckpoint> Ledger::checkpoint(const NoteSigner& signer) {
  if (signer.verifier().encoded() != verifier_key_) {
    return fail(Errc::invalid_argument, "signer key " + signer.name() + " does not match this ledger's verifier key " +
                                            verifier_key_);
  }
  StoredCheckpoint out;
  auto st = write([&](WriteTxn& w) -> Status {
    Checkpoint cp{origin_, w.size(), w.root(), {}};
    auto note = sign_note(cp.body(), signer);
    if (!note) return std::unexpected(note.error());
    out = StoredCheckpoint{cp.size, *note};
    return w.put_checkpoint(cp.size, *note);
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

uint64_t WriteTxn::size() const { return state_.range.size(); }
Digest WriteTxn::root() { return state_.range.root(state_.hasher); }

Result<Appended> WriteTxn::append(std::string_view kind, std::string_view canonical_payload, std::optional<int64_t> ts) {
  WriteState& s = state_;
  if (canonical_payload.size() > s.max_payload_bytes) {
    return fail(Errc::limit_exceeded, "payload is " + std::to_string(canonical_payload.size()) +
                                          " bytes; this ledger's limit is " + std::to_string(s.max_payload_bytes));
  }
  if (auto st = validate_kind(kind); !st) return std::unexpected(st.error());
  RecordView r{s.range.size(), kind, s.last_hash, ts ? *ts : s.clock.now_ms(), canonical_payload};
  if (r.ts > kMaxCanonicalInteger || r.ts < -kMaxCanonicalInteger) {
    return fail(Errc::invalid_argument, "record timestamp is outside +-(2^53-1)");
  }
  s.canonical_buf.clear();
  r.append_canonical_bytes(s.canonical_buf);
  Digest leaf = s.hasher.leaf(s.canonical_buf);
  r.encode_stored(s.stored_buf);

  lmdb::U64Key key(r.seq);
  MDB_val k = lmdb::val(key.view()), v = lmdb::val(s.stored_buf);
  if (int rc = mdb_cursor_put(s.records_cursor->get(), &k, &v, MDB_APPEND); rc != 0) {
    return std::unexpected(lmdb::error(rc, "appending record " + std::to_string(r.seq)));
  }
  int node_rc = 0;
  s.range.append_to(s.hasher, leaf, [&](unsigned level, uint64_t index, const Digest& h) {
    if (node_rc != 0) return;
    lmdb::U64Key nk(postorder_position(level, index));
    MDB_val k2 = lmdb::val(nk.view()), v2 = lmdb::val(h.view());
    node_rc = mdb_cursor_put(s.nodes_cursor->get(), &k2, &v2, MDB_APPEND);
  });
  if (node_rc != 0) return std::unexpected(lmdb::error(node_rc, "storing Merkle nodes for record " + std::to_string(r.seq)));
  if (Status st = index_record(s.txn, *s.dbis.runs, r.seq, canonical_payload); !st) return std::unexpected(st.error());
  s.last_hash = leaf;
  s.appended = true;

  auto it = std::find_if(s.kind_counts.begin(), s.kind_counts.end(), [&](const auto& kc) { return kc.first == kind; });
  if (it == s.kind_counts.end()) s.kind_counts.emplace_back(std::string(kind), 1);
  else ++it->second;
  return Appended{r.seq, leaf};
}

Result<Digest> WriteTxn::put_blob(std::string_view bytes) {
  if (bytes.size() > kMaxBlobBytes) return fail(Errc::limit_exceeded, "blob larger than 2 GiB");
  Digest d = sha256(bytes);
  MDB_val k = lmdb::val(d.view()), v = lmdb::val(bytes);
  int rc = mdb_put(state_.txn.get(), state_.dbis.blobs, &k, &v, MDB_NOOVERWRITE);
  if (rc != 0 && rc != MDB_KEYEXIST) return std::unexpected(lmdb::error(rc, "storing blob " + d.str()));
  return d;  // an existing blob with this digest is the same bytes: deduplicated
}

Status WriteTxn::put_checkpoint(uint64_t size, std::string_view note) {
  return state_.txn.put(state_.dbis.checkpoints, lmdb::U64Key(size).view(), note, 0, "storing checkpoint");
}

// ---------------------------------------------------------------- reading

LedgerSnapshot::LedgerSnapshot(std::unique_ptr<SnapshotState> state, uint64_t size)
    : state_(std::move(state)), size_(size) {}
LedgerSnapshot::LedgerSnapshot(LedgerSnapshot&&) noexcept = default;
LedgerSnapshot& LedgerSnapshot::operator=(LedgerSnapshot&&) noexcept = default;
LedgerSnapshot::~LedgerSnapshot() = default;

Result<Digest> LedgerSnapshot::node(unsigned level, uint64_t index) {
  constexpr unsigned kCachedLevel = 8;  // at most size/256 cached nodes
  TxnNodeReader reader(state_->txn, state_->dbis.nodes);
  if (level < kCachedLevel) return reader.node(level, index);
  uint64_t pos = postorder_position(level, index);
  if (auto it = upper_nodes_.find(pos); it != upper_nodes_.end()) return it->second;
  auto n = reader.node(level, index);
  if (n) upper_nodes_.emplace(pos, *n);
  return n;
}

Result<Digest> LedgerSnapshot::root_at(uint64_t size) {
  if (size > size_) {
    return fail(Errc::not_found, "tree size " + std::to_string(size) + " exceeds the ledger size " + std::to_string(size_));
  }
  if (size == 0) return MerkleHasher::empty_root();
  return range_root(*this, hasher_, 0, size);
}

Result<std::string_view> LedgerSnapshot::stored(uint64_t seq) {
  if (seq >= size_) {
    return fail(Errc::not_found, "no record " + std::to_string(seq) + " (the ledger has " + std::to_string(size_) + ")");
  }
  auto v = state_->txn.get(state_->dbis.records, lmdb::U64Key(seq).view());
  if (!v) {
    if (v.error().code == Errc::not_found) return fail(Errc::corrupt, "record " + std::to_string(seq) + " is missing");
    return std::unexpected(v.error());
  }
  return *v;
}

Result<Record> LedgerSnapshot::record(uint64_t seq) {
  auto v = stored(seq);
  if (!v) return std::unexpected(v.error());
  return Record::decode_stored(seq, *v);
}

Result<RecordView> LedgerSnapshot::record_view(uint64_t seq) {
  auto v = stored(seq);
  if (!v) return std::unexpected(v.error());
  return RecordView::decode_stored(seq, *v);
}

Status LedgerSnapshot::for_each_record(uint64_t from, uint64_t to, const RecordVisitor& visit, Order order) {
  to = std::min(to, size_);
  if (from >= to) return {};
  auto cursor = lmdb::Cursor::open(state_->txn, state_->dbis.records);
  if (!cursor) return std::unexpected(cursor.error());
  const bool forward = order == Order::forward;
  uint64_t expect = forward ? from : to - 1;
  lmdb::U64Key start(expect);
  MDB_val k = lmdb::val(start.view()), v{};
  for (MDB_cursor_op op = MDB_SET_KEY;; op = forward ? MDB_NEXT : MDB_PREV) {
    auto found = cursor->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    auto seq = *found ? lmdb::decode_u64(lmdb::view(k)) : Result<uint64_t>(fail(Errc::corrupt, ""));
    if (!seq || *seq != expect) return fail(Errc::corrupt, "record " + std::to_string(expect) + " is missing");
    auto record = RecordView::decode_stored(*seq, lmdb::view(v));
    if (!record) return std::unexpected(record.error());
    auto go_on = visit(*record);
    if (!go_on) return std::unexpected(go_on.error());
    if (!*go_on || (forward ? ++expect == to : expect-- == from)) return {};
  }
}

Result<std::vector<uint64_t>> LedgerSnapshot::run_records(std::string_view run_id) {
  lmdb::Txn& txn = state_->txn;
  const Dbis& dbis = state_->dbis;
  auto indexed = runs_indexed(txn, dbis);
  if (!indexed) return std::unexpected(indexed.error());
  const uint64_t covered = std::min(*indexed, size_);
  std::vector<uint64_t> out;
  auto names_run = [&](std::string_view payload) {
    auto ids = detail::top_level_run_ids(payload);
    return std::find(ids.begin(), ids.end(), run_id) != ids.end();
  };
  if (covered > 0) {
    const std::string key = detail::run_index_key(run_id);
    const bool recheck = detail::is_hashed_run_key(key);
    auto cursor = lmdb::Cursor::open(txn, *dbis.runs);
    if (!cursor) return std::unexpected(cursor.error());
    MDB_val k = lmdb::val(key), v{};
    for (MDB_cursor_op op = MDB_SET_KEY;; op = MDB_NEXT_DUP) {
      auto found = cursor->get(k, v, op);
      if (!found) return std::unexpected(found.error());
      if (!*found) break;
      auto seq = lmdb::decode_u64(lmdb::view(v));
      if (!seq) return std::unexpected(Error{Errc::corrupt, "runs index: " + seq.error().message});
      if (*seq >= covered) break;
      if (recheck) {
        auto record = record_view(*seq);
        if (!record) return std::unexpected(record.error());
        if (!names_run(record->payload)) continue;
      }
      out.push_back(*seq);
    }
  }
  auto tail = for_each_record(covered, size_, [&](const RecordView& r) -> Result<bool> {
    if (names_run(r.payload)) out.push_back(r.seq);
    return true;
  });
  if (!tail) return std::unexpected(tail.error());
  return out;
}

Result<std::vector<Digest>> LedgerSnapshot::inclusion_proof(uint64_t seq, uint64_t size) {
  if (size > size_) {
    return fail(Errc::not_found, "tree size " + std::to_string(size) + " exceeds the ledger size " + std::to_string(size_));
  }
  return warden::inclusion_proof(*this, seq, size);
}

Result<std::vector<Digest>> LedgerSnapshot::consistency_proof(uint64_t size1, uint64_t size2) {
  if (size2 > size_) {
    return fail(Errc::not_found, "tree size " + std::to_string(size2) + " exceeds the ledger size " + std::to_string(size_));
  }
  return warden::consistency_proof(*this, size1, size2);
}

Result<std::string> LedgerSnapshot::blob(const Digest& digest) {
  auto v = state_->txn.get(state_->dbis.blobs, digest.view());
  if (!v) {
    if (v.error().code == Errc::not_found) return fail(Errc::not_found, "no blob " + digest.str());
    return std::unexpected(v.error());
  }
  if (sha256(*v) != digest) return fail(Errc::corrupt, "blob " + digest.str() + " does not match its digest");
  return std::string(*v);
}

Result<std::vector<StoredCheckpoint>> LedgerSnapshot::checkpoints() {
  std::vector<StoredCheckpoint> out;
  auto st = lmdb::for_each(state_->txn, state_->dbis.checkpoints, [&](std::string_view key, std::string_view note) -> Status {
    auto size = lmdb::decode_u64(key);
    if (!size) return std::unexpected(size.error());
    out.push_back(StoredCheckpoint{*size, std::string(note)});
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

Result<std::vector<std::pair<std::string, uint64_t>>> LedgerSnapshot::kind_counts() {
  std::vector<std::pair<std::string, uint64_t>> out;
  auto st = lmdb::for_each(state_->txn, state_->dbis.kinds, [&](std::string_view kind, std::string_view count) -> Status {
    auto n = lmdb::decode_u64(count);
    if (!n) return std::unexpected(n.error());
    out.emplace_back(std::string(kind), *n);
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden
