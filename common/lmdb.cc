#include "common/lmdb.h"

#include <cerrno>
#include <utility>

namespace warden::lmdb {

Error error(int rc, std::string_view what) {
  Errc code = Errc::io_error;
  switch (rc) {
    case MDB_NOTFOUND: code = Errc::not_found; break;
    case MDB_KEYEXIST: code = Errc::already_exists; break;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH: code = Errc::corrupt; break;
    case MDB_MAP_FULL:
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
    case MDB_TXN_FULL: code = Errc::limit_exceeded; break;
    case ENOENT: code = Errc::not_found; break;
    default: break;
  }
  return Error{code, std::string(what) + ": " + mdb_strerror(rc)};
}

Result<uint64_t> decode_u64(std::string_view key) {
  if (key.size() != 8) return fail(Errc::corrupt, "stored key is not 8 bytes");
  uint64_t v = 0;
  for (char c : key) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

Result<Env> Env::open(const std::filesystem::path& dir, unsigned flags, size_t map_size, unsigned max_dbs) {
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != 0) return std::unexpected(error(rc, "creating LMDB environment"));
  Env env(raw);
  if (int rc = mdb_env_set_mapsize(raw, map_size); rc != 0) return std::unexpected(error(rc, "setting LMDB map size"));
  if (int rc = mdb_env_set_maxdbs(raw, max_dbs); rc != 0) return std::unexpected(error(rc, "setting LMDB max dbs"));
  if (int rc = mdb_env_open(raw, dir.c_str(), flags, 0644); rc != 0) {
    return std::unexpected(error(rc, "opening LMDB environment in " + dir.string()));
  }
  return env;
}

Env& Env::operator=(Env&& other) noexcept {
  if (this != &other) {
    if (env_) mdb_env_close(env_);
    env_ = std::exchange(other.env_, nullptr);
  }
  return *this;
}

Env::~Env() {
  if (env_) mdb_env_close(env_);
}

Result<Txn> Txn::begin(const Env& env, bool read_only) {
  MDB_txn* raw = nullptr;
  if (int rc = mdb_txn_begin(env.get(), nullptr, read_only ? MDB_RDONLY : 0, &raw); rc != 0) {
    return std::unexpected(error(rc, read_only ? "starting read transaction" : "starting write transaction"));
  }
  return Txn(raw);
}

Txn& Txn::operator=(Txn&& other) noexcept {
  if (this != &other) {
    abort();
    txn_ = std::exchange(other.txn_, nullptr);
  }
  return *this;
}

Status Txn::commit() {
  MDB_txn* t = std::exchange(txn_, nullptr);
  if (int rc = mdb_txn_commit(t); rc != 0) return std::unexpected(error(rc, "committing transaction"));
  return {};
}

void Txn::abort() {
  if (txn_) mdb_txn_abort(std::exchange(txn_, nullptr));
}

Result<MDB_dbi> Txn::open_db(const char* name, unsigned flags) {
  MDB_dbi dbi = 0;
  if (int rc = mdb_dbi_open(txn_, name, flags, &dbi); rc != 0) {
    return std::unexpected(error(rc, std::string("opening database \"") + name + "\""));
  }
  return dbi;
}

Result<std::string_view> Txn::get(MDB_dbi dbi, std::string_view key) {
  MDB_val k = val(key), v{};
  if (int rc = mdb_get(txn_, dbi, &k, &v); rc != 0) return std::unexpected(error(rc, "reading"));
  return view(v);
}

Status Txn::put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags, std::string_view what) {
  MDB_val k = val(key), v = val(value);
  if (int rc = mdb_put(txn_, dbi, &k, &v, flags); rc != 0) return std::unexpected(error(rc, what));
  return {};
}

Result<Cursor> Cursor::open(const Txn& txn, MDB_dbi dbi) {
  MDB_cursor* raw = nullptr;
  if (int rc = mdb_cursor_open(txn.get(), dbi, &raw); rc != 0) return std::unexpected(error(rc, "opening cursor"));
  return Cursor(raw);
}

Result<bool> Cursor::get(MDB_val& key, MDB_val& value, MDB_cursor_op op) {
  int rc = mdb_cursor_get(cursor_, &key, &value, op);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) return std::unexpected(error(rc, "reading with cursor"));
  return true;
}

}  // namespace warden::lmdb
