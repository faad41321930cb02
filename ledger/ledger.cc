#include "ledger/ledger.h"

#include <sys/stat.h>

#include <cerrno>
#include <system_error>

#include "common/file.h"
#include "ledger/checkpoint.h"

namespace warden {
namespace {

// Address space reserved for the map, not disk: the file grows as pages are used.
constexpr size_t kMapSize = size_t{1} << 38;  // 256 GiB
constexpr unsigned kMaxDbs = 8;
constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 31;

Result<Dbis> open_dbs(lmdb::Txn& txn, unsigned flags) {
  Dbis d;
  std::pair<const char*, MDB_dbi*> names[] = {{"records", &d.records}, {"nodes", &d.nodes},
                                              {"blobs", &d.blobs},     {"checkpoints", &d.checkpoints},
                                              {"kinds", &d.kinds},     {"meta", &d.meta}};
  for (auto [name, dbi] : names) {
    auto opened = txn.open_db(name, flags);
    if (!opened) return std::unexpected(opened.error());
    *dbi = *opened;
  }
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

}  // namespace

// ---------------------------------------------------------------- creation and opening

Status Ledger::create(const std::filesystem::path& dir, const LedgerCreateOptions& options) {
  if (options.origin.empty() || options.origin.find('\n') != std::string::npos) {
    return fail(Errc::invalid_argument, "ledger origin must be a non-empty single line");
  }
  auto verifier = NoteVerifier::parse(options.verifier_key);
  if (!verifier) return std::unexpected(verifier.error());
  std::error_code ec;
  if (std::filesystem::exists(dir / "data.mdb", ec)) {
    return fail(Errc::already_exists, "a ledger already exists in " + dir.string());
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(errno_error(dir.string(), errno));
  if (!std::filesystem::is_directory(dir, ec)) return fail(Errc::invalid_argument, dir.string() + " is not a directory");

  auto env = lmdb::Env::open(dir, MDB_NOTLS, kMapSize, kMaxDbs);
  if (!env) return std::unexpected(env.error());
  auto txn = lmdb::Txn::begin(*env, false);
  if (!txn) return std::unexpected(txn.error());
  auto dbis = open_dbs(*txn, MDB_CREATE);
  if (!dbis) return std::unexpected(dbis.error());
  std::pair<std::string_view, std::string> meta[] = {
      {"format", std::string(kLedgerFormat)},
      {"origin", options.origin},
      {"verifier_key", verifier->encoded()},
      {"max_payload_bytes", std::to_string(options.max_payload_bytes)}};
  for (const auto& [key, value] : meta) {
    if (auto st = txn->put(dbis->meta, key, value, 0, "writing ledger metadata"); !st) return st;
  }
  return txn->commit();
}

Result<Ledger> Ledger::open(const std::filesystem::path& dir, Mode mode, Clock& clock) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return fail(Errc::not_found, "no ledger at " + dir.string() + ": directory does not exist");
  }
  if (!std::filesystem::exists(dir / "data.mdb", ec)) {
    return fail(Errc::not_found, "no ledger at " + dir.string() + " (create one with `warden ledger init`)");
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
  auto dbis = open_dbs(*txn, 0);
  if (!dbis) return std::unexpected(Error{Errc::corrupt, dbis.error().message + " (not a Warden ledger?)"});
  Ledger ledger(dir, std::move(*env), *dbis, clock);
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
  if (auto st = txn->commit(); !st) return std::unexpected(st.error());  // keeps the dbi handles
  return ledger;
}

Result<LedgerSnapshot> Ledger::snapshot() const {
  auto txn = lmdb::Txn::begin(env_, true);
  if (!txn) return std::unexpected(txn.error());
  auto size = read_size(*txn, dbis_.records);
  if (!size) return std::unexpected(size.error());
  return LedgerSnapshot(std::move(*txn), dbis_, *size);
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

Result<WriteTxn> Ledger::begin_write(lmdb::Txn& txn) {
  if (read_only_) return fail(Errc::invalid_argument, "ledger was opened read-only");
  auto size = read_size(txn, dbis_.records);
  if (!size) return std::unexpected(size.error());
  if (*size != range_.size() || (*size > 0 && last_hash_.is_zero())) {
    // Another process appended since we last looked (or this is our first write).
    TxnNodeReader reader(txn, dbis_.nodes);
    auto range = CompactRange::load(reader, *size);
    if (!range) return std::unexpected(range.error());
    range_ = std::move(*range);
    last_hash_ = Digest();
    if (*size > 0) {
      auto last = reader.node(0, *size - 1);
      if (!last) return std::unexpected(last.error());
      last_hash_ = *last;
    }
  }
  WriteTxn writer(txn, dbis_, *clock_, range_, last_hash_, max_payload_bytes_);
  auto rc = lmdb::Cursor::open(txn, dbis_.records);
  auto nc = lmdb::Cursor::open(txn, dbis_.nodes);
  if (!rc) return std::unexpected(rc.error());
  if (!nc) return std::unexpected(nc.error());
  writer.records_cursor_.emplace(std::move(*rc));
  writer.nodes_cursor_.emplace(std::move(*nc));
  return writer;
}

void Ledger::install(const WriteTxn& writer) {
  range_ = writer.range_;
  last_hash_ = writer.last_hash_;
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

Result<Appended> WriteTxn::append(std::string_view kind, std::string_view canonical_payload,
                                      std::optional<int64_t> ts) {
  if (canonical_payload.size() > max_payload_bytes_) {
    return fail(Errc::limit_exceeded, "payload is " + std::to_string(canonical_payload.size()) +
                                          " bytes; this ledger's limit is " + std::to_string(max_payload_bytes_));
  }
  if (auto st = validate_kind(kind); !st) return std::unexpected(st.error());
  RecordView r{range_.size(), kind, last_hash_, ts ? *ts : clock_.now_ms(), canonical_payload};
  if (r.ts > kMaxCanonicalInteger || r.ts < -kMaxCanonicalInteger) {
    return fail(Errc::invalid_argument, "record timestamp is outside +-(2^53-1)");
  }
  canonical_buf_.clear();
  r.append_canonical_bytes(canonical_buf_);
  Digest leaf = hasher_.leaf(canonical_buf_);
  r.encode_stored(stored_buf_);

  lmdb::U64Key key(r.seq);
  MDB_val k = lmdb::val(key.view()), v = lmdb::val(stored_buf_);
  if (int rc = mdb_cursor_put(records_cursor_->get(), &k, &v, MDB_APPEND); rc != 0) {
    return std::unexpected(lmdb::error(rc, "appending record " + std::to_string(r.seq)));
  }
  int node_rc = 0;
  range_.append_to(hasher_, leaf, [&](unsigned level, uint64_t index, const Digest& h) {
    if (node_rc != 0) return;
    lmdb::U64Key nk(postorder_position(level, index));
    MDB_val k2 = lmdb::val(nk.view()), v2 = lmdb::val(h.view());
    node_rc = mdb_cursor_put(nodes_cursor_->get(), &k2, &v2, MDB_APPEND);
  });
  if (node_rc != 0) return std::unexpected(lmdb::error(node_rc, "storing Merkle nodes for record " + std::to_string(r.seq)));
  last_hash_ = leaf;

  auto it = std::find_if(kind_counts_.begin(), kind_counts_.end(), [&](const auto& kc) { return kc.first == kind; });
  if (it == kind_counts_.end()) kind_counts_.emplace_back(std::string(kind), 1);
  else ++it->second;
  return Appended{r.seq, leaf};
}

Status WriteTxn::flush_kind_counts() {
  for (const auto& [kind, added] : kind_counts_) {
    uint64_t count = added;
    auto existing = txn_.get(dbis_.kinds, kind);
    if (existing) {
      auto prior = lmdb::decode_u64(*existing);
      if (!prior) return std::unexpected(prior.error());
      count += *prior;
    } else if (existing.error().code != Errc::not_found) {
      return std::unexpected(existing.error());
    }
    if (auto st = txn_.put(dbis_.kinds, kind, u64_value(count), 0, "updating kind index"); !st) return st;
  }
  kind_counts_.clear();
  return {};
}

Result<Digest> WriteTxn::put_blob(std::string_view bytes) {
  if (bytes.size() > kMaxBlobBytes) return fail(Errc::limit_exceeded, "blob larger than 2 GiB");
  Digest d = sha256(bytes);
  MDB_val k = lmdb::val(d.view()), v = lmdb::val(bytes);
  int rc = mdb_put(txn_.get(), dbis_.blobs, &k, &v, MDB_NOOVERWRITE);
  if (rc != 0 && rc != MDB_KEYEXIST) return std::unexpected(lmdb::error(rc, "storing blob " + d.str()));
  return d;  // an existing blob with this digest is the same bytes: deduplicated
}

Status WriteTxn::put_checkpoint(uint64_t size, std::string_view note) {
  return txn_.put(dbis_.checkpoints, lmdb::U64Key(size).view(), note, 0, "storing checkpoint");
}

// ---------------------------------------------------------------- reading

Result<Digest> LedgerSnapshot::node(unsigned level, uint64_t index) {
  constexpr unsigned kCachedLevel = 8;  // at most size/256 cached nodes
  TxnNodeReader reader(txn_, dbis_.nodes);
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

Result<Record> LedgerSnapshot::record(uint64_t seq) {
  if (seq >= size_) {
    return fail(Errc::not_found, "no record " + std::to_string(seq) + " (the ledger has " + std::to_string(size_) + ")");
  }
  auto v = txn_.get(dbis_.records, lmdb::U64Key(seq).view());
  if (!v) {
    if (v.error().code == Errc::not_found) return fail(Errc::corrupt, "record " + std::to_string(seq) + " is missing");
    return std::unexpected(v.error());
  }
  return Record::decode_stored(seq, *v);
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
  auto v = txn_.get(dbis_.blobs, digest.view());
  if (!v) {
    if (v.error().code == Errc::not_found) return fail(Errc::not_found, "no blob " + digest.str());
    return std::unexpected(v.error());
  }
  if (sha256(*v) != digest) return fail(Errc::corrupt, "blob " + digest.str() + " does not match its digest");
  return std::string(*v);
}

Result<std::vector<StoredCheckpoint>> LedgerSnapshot::checkpoints() {
  std::vector<StoredCheckpoint> out;
  auto st = lmdb::for_each(txn_, dbis_.checkpoints, [&](std::string_view key, std::string_view note) -> Status {
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
  auto st = lmdb::for_each(txn_, dbis_.kinds, [&](std::string_view kind, std::string_view count) -> Status {
    auto n = lmdb::decode_u64(count);
    if (!n) return std::unexpected(n.error());
    out.emplace_back(std::string(kind), *n);
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden
