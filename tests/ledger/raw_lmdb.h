// Direct access to a ledger's LMDB environment through the LMDB C API, bypassing
// warden::Ledger entirely: how the tamper tests rewrite stored bytes the way an attacker
// with write access to data.mdb would.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace warden::test {

// Big-endian u64, the key encoding of the records, nodes and checkpoints databases.
std::string be64(uint64_t v);

// DIR/data.mdb's page size and the bytes its newest meta page commits to, (last page + 1) *
// page size, as LMDB itself reports them (mdb_env_stat, mdb_env_info); the file may be longer.
struct LmdbLayout {
  uint64_t page_size = 0;
  uint64_t committed_bytes = 0;
};
LmdbLayout lmdb_layout(const std::filesystem::path& dir);

class RawLmdb {
 public:
  explicit RawLmdb(const std::filesystem::path& dir);  // throws std::runtime_error
  RawLmdb(const RawLmdb&) = delete;
  RawLmdb& operator=(const RawLmdb&) = delete;
  ~RawLmdb();

  // Each call is one committed write transaction on the named database.
  std::string get(const char* db, std::string_view key);
  void put(const char* db, std::string_view key, std::string_view value);
  void del(const char* db, std::string_view key);

 private:
  MDB_env* env_ = nullptr;
};

}  // namespace warden::test
