#include "tests/ledger/raw_lmdb.h"

#include <functional>
#include <stdexcept>

namespace warden::test {
namespace {

void check(int rc, const std::string& what) {
  if (rc != 0) throw std::runtime_error(what + ": " + mdb_strerror(rc));
}

MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

// Runs `body` in a write transaction on `db` and commits; aborts if it throws.
void in_write_txn(MDB_env* env, const char* db, const std::function<void(MDB_txn*, MDB_dbi)>& body) {
  MDB_txn* txn = nullptr;
  check(mdb_txn_begin(env, nullptr, 0, &txn), "mdb_txn_begin");
  try {
    MDB_dbi dbi = 0;
    check(mdb_dbi_open(txn, db, 0, &dbi), std::string("mdb_dbi_open ") + db);
    body(txn, dbi);
  } catch (...) {
    mdb_txn_abort(txn);
    throw;
  }
  check(mdb_txn_commit(txn), "mdb_txn_commit");
}

}  // namespace

std::string be64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

LmdbLayout lmdb_layout(const std::filesystem::path& dir) {
  MDB_env* env = nullptr;
  check(mdb_env_create(&env), "mdb_env_create");
  MDB_envinfo info{};
  MDB_stat stat{};
  int rc = mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644);
  if (rc == 0) rc = mdb_env_info(env, &info);
  if (rc == 0) rc = mdb_env_stat(env, &stat);
  mdb_env_close(env);
  check(rc, "reading the LMDB environment info of " + dir.string());
  return {stat.ms_psize, (uint64_t{info.me_last_pgno} + 1) * stat.ms_psize};
}

RawLmdb::RawLmdb(const std::filesystem::path& dir) {
  check(mdb_env_create(&env_), "mdb_env_create");
  try {
    check(mdb_env_set_maxdbs(env_, 8), "mdb_env_set_maxdbs");
    check(mdb_env_set_mapsize(env_, size_t{1} << 30), "mdb_env_set_mapsize");
    check(mdb_env_open(env_, dir.c_str(), 0, 0644), "mdb_env_open " + dir.string());
  } catch (...) {
    mdb_env_close(env_);
    throw;
  }
}

RawLmdb::~RawLmdb() { mdb_env_close(env_); }

std::string RawLmdb::get(const char* db, std::string_view key) {
  std::string out;
  in_write_txn(env_, db, [&](MDB_txn* txn, MDB_dbi dbi) {
    MDB_val k = val(key), v{};
    check(mdb_get(txn, dbi, &k, &v), std::string("mdb_get in ") + db);
    out.assign(static_cast<const char*>(v.mv_data), v.mv_size);
  });
  return out;
}

void RawLmdb::put(const char* db, std::string_view key, std::string_view value) {
  in_write_txn(env_, db, [&](MDB_txn* txn, MDB_dbi dbi) {
    MDB_val k = val(key), v = val(value);
    check(mdb_put(txn, dbi, &k, &v, 0), std::string("mdb_put in ") + db);
  });
}

void RawLmdb::del(const char* db, std::string_view key) {
  in_write_txn(env_, db, [&](MDB_txn* txn, MDB_dbi dbi) {
    MDB_val k = val(key);
    check(mdb_del(txn, dbi, &k, nullptr), std::string("mdb_del in ") + db);
  });
}

}  // namespace warden::test
