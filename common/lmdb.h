// RAII handles for LMDB: an environment, a transaction that aborts unless committed, and a
// cursor. Every failure comes back as an Error naming what was being done.
//
// Ownership: each handle owns its LMDB object and closes or aborts it on destruction; all are
// move-only. A Txn borrows its Env and a Cursor borrows its Txn: destroy them first. The
// string_views that get(), view() and for_each() hand out point into LMDB's map and are valid
// only until the transaction ends (or, in a write transaction, until the next write).
//
// Threads follow LMDB's rules: an Env may be shared by threads; a Txn and its cursors belong
// to one thread at a time (and to exactly one thread unless the Env was opened with MDB_NOTLS,
// which Warden's ledger and result cache use); only one write Txn per environment at a time.
//
// Errors: the Errc says what the caller can do — not_found (absent key), already_exists
// (MDB_NOOVERWRITE), corrupt (the file is damaged or of another version: stop),
// limit_exceeded (map or reader table full), io_error otherwise. Nothing written in a Txn is
// durable until commit() succeeds; a failed commit or a destroyed Txn leaves the database as
// it was.
//
// Before LMDB maps a file, Env::open checks it (see check_files): LMDB trusts its meta pages
// and maps pages past the end of a truncated file, and a read there kills the process with
// SIGBUS; it opens a FIFO and waits for a writer forever. Both become Errc::corrupt here.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden::lmdb {

Error error(int rc, std::string_view what);

inline MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// Big-endian u64 keys sort numerically under LMDB's default byte comparison.
struct U64Key {
  explicit U64Key(uint64_t v) {
    for (int i = 7; i >= 0; --i, v >>= 8) bytes[i] = static_cast<char>(v & 0xff);
  }
  std::string_view view() const { return {bytes, 8}; }
  char bytes[8];
};
Result<uint64_t> decode_u64(std::string_view key);

// Checks DIR/data.mdb and DIR/lock.mdb before LMDB opens them: each must be a regular file
// (not a symlink, FIFO, directory, device or socket), and data.mdb must hold the pages its
// newest meta page says are committed: both meta pages readable with LMDB's magic and
// version, and the file at least (last page + 1) * page size bytes (it may be larger). An
// absent or empty data.mdb passes: LMDB makes a new environment of it. Errc::corrupt names
// the file and what is wrong; io_error if it cannot be read. Reads with pread, never maps.
Status check_files(const std::filesystem::path& dir);

class Env {
 public:
  // Runs check_files(dir) first.
  static Result<Env> open(const std::filesystem::path& dir, unsigned flags, size_t map_size, unsigned max_dbs);
  Env(Env&& other) noexcept : env_(std::exchange(other.env_, nullptr)) {}
  Env& operator=(Env&& other) noexcept;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env();

  MDB_env* get() const { return env_; }

 private:
  explicit Env(MDB_env* env) : env_(env) {}
  MDB_env* env_ = nullptr;
};

class Txn {
 public:
  static Result<Txn> begin(const Env& env, bool read_only);
  Txn(Txn&& other) noexcept : txn_(std::exchange(other.txn_, nullptr)) {}
  Txn& operator=(Txn&& other) noexcept;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() { abort(); }

  Status commit();
  void abort();
  MDB_txn* get() const { return txn_; }

  Result<MDB_dbi> open_db(const char* name, unsigned flags);
  // Absent keys give std::nullopt-like not_found errors; callers decide.
  Result<std::string_view> get(MDB_dbi dbi, std::string_view key);
  Status put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags, std::string_view what);

 private:
  explicit Txn(MDB_txn* txn) : txn_(txn) {}
  MDB_txn* txn_ = nullptr;
};

class Cursor {
 public:
  static Result<Cursor> open(const Txn& txn, MDB_dbi dbi);
  Cursor(Cursor&& other) noexcept : cursor_(std::exchange(other.cursor_, nullptr)) {}
  Cursor& operator=(Cursor&&) = delete;
  Cursor(const Cursor&) = delete;
  ~Cursor() {
    if (cursor_) mdb_cursor_close(cursor_);
  }
  // MDB_NOTFOUND gives false; other failures are errors.
  Result<bool> get(MDB_val& key, MDB_val& value, MDB_cursor_op op);
  MDB_cursor* get() const { return cursor_; }

 private:
  explicit Cursor(MDB_cursor* c) : cursor_(c) {}
  MDB_cursor* cursor_ = nullptr;
};

// Visits every entry in key order: visit(key, value) returns Status (an error stops it).
template <typename Visit>
Status for_each(const Txn& txn, MDB_dbi dbi, Visit&& visit) {
  auto cursor = Cursor::open(txn, dbi);
  if (!cursor) return std::unexpected(cursor.error());
  MDB_val k{}, v{};
  for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
    auto found = cursor->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    if (!*found) return {};
    if (Status st = visit(view(k), view(v)); !st) return st;
  }
}

}  // namespace warden::lmdb
