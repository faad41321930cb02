#include "common/lmdb.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/file.h"

namespace warden::lmdb {
namespace {

// LMDB 0.9's meta page as mdb.c lays it out on 64-bit builds (native byte order): the page
// header (pgno u64, pad u16, flags u16, lower/upper u32), then MDB_meta: magic u32, version
// u32, address ptr, mapsize size_t, two 48-byte MDB_db records (the first one's leading u32
// is the page size), last page u64, txnid u64. Debian's liblmdb0 is built without MDB_DEVEL,
// so its data version is 1.
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "the meta page layout below is LMDB's 64-bit one");
constexpr size_t kPageHeaderBytes = 16;
constexpr size_t kPageFlagsOffset = 10;
constexpr uint16_t kMetaPageFlag = 0x08;  // P_META
constexpr size_t kMagicOffset = kPageHeaderBytes + 0;
constexpr size_t kVersionOffset = kPageHeaderBytes + 4;
constexpr size_t kPageSizeOffset = kPageHeaderBytes + 24;
constexpr size_t kLastPageOffset = kPageHeaderBytes + 120;
constexpr size_t kTxnidOffset = kPageHeaderBytes + 128;
constexpr size_t kMetaPageBytes = kPageHeaderBytes + 136;
constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr uint32_t kMinPageSize = 256, kMaxPageSize = 65536;

struct Meta {
  uint32_t page_size = 0;
  uint64_t last_page = 0;
  uint64_t txnid = 0;
};

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string truncated(const std::string& name, uint64_t size, uint64_t needed, std::string_view what) {
  return name + " is " + std::to_string(size) + " bytes but " + std::string(what) + " needs " + std::to_string(needed) +
         ": truncated?";
}

// Meta page `which` (0 or 1) of the file, at `offset`.
Result<Meta> read_meta(int fd, const std::string& name, int which, uint64_t offset, uint64_t size) {
  char page[kMetaPageBytes];
  ssize_t got = ::pread(fd, page, sizeof page, static_cast<off_t>(offset));
  if (got < 0) return std::unexpected(errno_error("reading " + name, errno));
  const std::string what = "meta page " + std::to_string(which);
  if (static_cast<size_t>(got) < sizeof page) {
    return fail(Errc::corrupt, truncated(name, size, offset + sizeof page, "its " + what));
  }
  if ((load<uint16_t>(page + kPageFlagsOffset) & kMetaPageFlag) == 0 || load<uint32_t>(page + kMagicOffset) != kMagic) {
    return fail(Errc::corrupt, name + ": " + what + " is not an LMDB meta page (damaged, or not an LMDB file)");
  }
  if (uint32_t version = load<uint32_t>(page + kVersionOffset); version != kDataVersion) {
    return fail(Errc::corrupt, name + ": " + what + " has LMDB data version " + std::to_string(version) + ", expected " +
                                   std::to_string(kDataVersion));
  }
  Meta m{load<uint32_t>(page + kPageSizeOffset), load<uint64_t>(page + kLastPageOffset), load<uint64_t>(page + kTxnidOffset)};
  if (m.page_size < kMinPageSize || m.page_size > kMaxPageSize || !std::has_single_bit(m.page_size)) {
    return fail(Errc::corrupt, name + ": " + what + " names an impossible page size " + std::to_string(m.page_size));
  }
  if (m.last_page < 1) return fail(Errc::corrupt, name + ": " + what + " says the file ends before its meta pages");
  return m;
}

std::string_view file_type(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Refuses anything but a regular file (before opening it: a FIFO blocks, a device may act).
// True if the file exists.
Result<bool> check_regular(const std::string& name) {
  struct stat st{};
  if (::lstat(name.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return std::unexpected(errno_error(name, errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(Errc::corrupt, name + " is " + std::string(file_type(st.st_mode)) + ", not a regular file");
  }
  return true;
}

Status check_data_file(const std::string& name) {
  auto exists = check_regular(name);
  if (!exists) return std::unexpected(exists.error());
  if (!*exists) return {};
  // O_NOFOLLOW and O_NONBLOCK: if it was swapped for a symlink or FIFO since lstat, neither
  // follow nor wait; fstat below refuses it.
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP) return fail(Errc::corrupt, name + " is a symbolic link, not a regular file");
    return std::unexpected(errno_error("opening " + name, errno));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(errno_error(name, errno));
  if (!S_ISREG(st.st_mode)) return fail(Errc::corrupt, name + " is " + std::string(file_type(st.st_mode)) + ", not a regular file");
  if (st.st_size == 0) return {};
  const uint64_t first_size = static_cast<uint64_t>(st.st_size);
  auto meta0 = read_meta(fd.get(), name, 0, 0, first_size);
  if (!meta0) return std::unexpected(meta0.error());
  auto meta1 = read_meta(fd.get(), name, 1, meta0->page_size, first_size);
  if (!meta1) return std::unexpected(meta1.error());
  if (meta1->page_size != meta0->page_size) {
    return fail(Errc::corrupt, name + ": its meta pages disagree on the page size (" + std::to_string(meta0->page_size) +
                                   " and " + std::to_string(meta1->page_size) + ")");
  }
  // LMDB reads the meta page with the larger txnid (page 0 on a tie).
  const Meta& meta = meta1->txnid > meta0->txnid ? *meta1 : *meta0;
  // Sized after the meta pages are read: a writer extends the file before it commits a meta
  // page naming the new pages, and never shrinks it.
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(errno_error(name, errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (meta.last_page >= size / meta.page_size) {
    uint64_t needed = 0;
    if (__builtin_mul_overflow(meta.last_page + 1, uint64_t{meta.page_size}, &needed)) {
      return fail(Errc::corrupt, name + ": its meta page names an impossible last page " + std::to_string(meta.last_page));
    }
    return fail(Errc::corrupt, truncated(name, size, needed, "its last committed page"));
  }
  return {};
}

}  // namespace

Status check_files(const std::filesystem::path& dir) {
  if (Status st = check_data_file((dir / "data.mdb").string()); !st) return st;
  auto lock = check_regular((dir / "lock.mdb").string());
  if (!lock) return std::unexpected(lock.error());
  return {};
}

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

namespace {

// LMDB sizes its lock file with ftruncate and then writes it through a shared mapping: on a
// full file system (a tmpfs most of all) a page not yet allocated is a SIGBUS, not an error.
// Allocating the file's blocks first turns a full disk into ENOSPC here. 8 KiB is the file
// LMDB makes for its default 126 readers; a larger one it uses as it is.
Status allocate_lock_file(const std::filesystem::path& dir, unsigned flags) {
  constexpr off_t kLockFileBytes = 8192;
  if (flags & MDB_NOLOCK) return {};
  const std::filesystem::path path = dir / "lock.mdb";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return {};  // read-only media, or a file LMDB will report itself
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  int rc = ::posix_fallocate(fd.get(), 0, std::max<off_t>(st.st_size, kLockFileBytes));
  if (rc == ENOSPC || rc == EDQUOT) return std::unexpected(errno_error("allocating LMDB's lock file " + path.string(), rc));
  return {};  // a file system without fallocate: as LMDB would do alone
}

}  // namespace

Result<Env> Env::open(const std::filesystem::path& dir, unsigned flags, size_t map_size, unsigned max_dbs) {
  if (Status st = check_files(dir); !st) return std::unexpected(st.error());
  if (Status st = allocate_lock_file(dir, flags); !st) return std::unexpected(st.error());
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
