// A damaged LMDB store through the real `warden` binary: data.mdb cut short at 100 sizes, or
// replaced by a FIFO, a directory or a symlink, must give every ledger command (verify, show,
// prove, export, append, replay) a clear error naming data.mdb — exit 1, the code of a store
// that fails its own checks — never a signal (LMDB maps pages past the end of a truncated
// file: SIGBUS), never exit 70 and never a hang (a FIFO blocks its reader). And `append`
// refuses a ledger whose last record no longer hashes to what the ledger stored.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"
#include "tests/ledger/raw_lmdb.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOrigin = "example.com/warden/damaged-store";
constexpr int kCorrupt = 1;       // Errc::corrupt (common/exit_codes.cc)
constexpr auto kPatience = std::chrono::seconds(10);  // a hang, not a slow machine

struct Outcome {
  ProcessResult result;
  bool hung = false;
};

// Runs warden with a deadline; a child still holding its output open then is killed.
Outcome run_bounded(const std::vector<std::string>& args) {
  std::vector<std::string> argv{warden_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = Child::spawn(argv);
  child.pump(std::chrono::steady_clock::now() + kPatience);
  Outcome out;
  if (child.output_open()) {
    out.hung = true;
    child.kill(SIGKILL);
  }
  out.result = child.wait();
  return out;
}

Json payload(uint64_t i) { return {{"i", i}, {"note", "record-" + std::to_string(i) + "-payload"}}; }

// A ledger of `records` records (batches of 10, a signed checkpoint every 100) and, if asked,
// blobs of 1 to 40 KiB between the batches, so data.mdb has records, nodes, blobs and
// overflow pages all through it.
void build_ledger(const fs::path& dir, uint64_t records, bool blobs) {
  auto signer = NoteSigner::generate(kOrigin);
  ASSERT_TRUE(signer) << signer.error().message;
  auto created = Ledger::create(dir, {kOrigin, signer->verifier().encoded()});
  ASSERT_TRUE(created) << created.error().message;
  LogicalClock clock(1'700'000'000'000, 1000);
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger) << ledger.error().message;
  for (uint64_t next = 0; next < records;) {
    std::vector<AppendEntry> batch;
    for (uint64_t end = std::min(records, next + 10); next < end; ++next) batch.push_back({"test.event", payload(next)});
    auto appended = ledger->append_batch(batch);
    ASSERT_TRUE(appended) << appended.error().message;
    if (blobs) {
      auto d = ledger->put_blob(std::string(1024 * (1 + next % 40), static_cast<char>('a' + next % 26)));
      ASSERT_TRUE(d) << d.error().message;
    }
    if (next % 100 == 0 || next == records) {
      auto cp = ledger->checkpoint(*signer);
      ASSERT_TRUE(cp) << cp.error().message;
    }
  }
}

// The six commands, each on the ledger in `dir`; `scratch` is where export may write.
std::vector<std::vector<std::string>> commands(const fs::path& dir, const fs::path& scratch) {
  const std::string d = dir.string();
  return {{"ledger", "verify", d},
          {"ledger", "show", d},
          {"ledger", "prove", d, "5"},
          {"ledger", "export", d, (scratch / "export").string()},
          {"ledger", "append", d, "--kind", "damage.probe"},
          {"replay", d}};
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// A clear refusal: exit 1, no signal, no hang, and stderr names data.mdb and `says`.
void expect_refused(const std::vector<std::string>& args, std::string_view says) {
  auto [r, hung] = run_bounded(args);
  SCOPED_TRACE("warden " + joined(args));
  ASSERT_FALSE(hung) << "no answer within " << kPatience.count() << " s; " << describe(r);
  ASSERT_EQ(r.term_signal, 0) << describe(r);
  EXPECT_EQ(r.exit_code, kCorrupt) << describe(r);
  EXPECT_NE(r.err.find("data.mdb"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find(says), std::string::npos) << "expected \"" << says << "\"; " << describe(r);
}

class DamagedStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    source_ = new fs::path(tmp_->path() / "source");
    build_ledger(*source_, 300, true);
    if (HasFatalFailure()) return;
    bytes_ = new std::string(read_file(*source_ / "data.mdb"));
    auto layout = lmdb_layout(*source_);
    page_size_ = layout.page_size;
    committed_ = layout.committed_bytes;
  }
  static void TearDownTestSuite() {
    delete bytes_;
    delete source_;
    delete tmp_;
  }

  // A fresh ledger directory NAME-SIZE holding data.mdb's first `size` bytes (no lock.mdb).
  fs::path truncated_copy(const std::string& name, uint64_t size) {
    auto dir = tmp_->path() / (name + "-" + std::to_string(size));
    fs::create_directory(dir);
    write_file(dir / "data.mdb", std::string_view(*bytes_).substr(0, size));
    return dir;
  }
  fs::path empty_dir(const std::string& name) {
    auto dir = tmp_->path() / name;
    fs::create_directory(dir);
    return dir;
  }

  static TempDir* tmp_;
  static fs::path* source_;
  static std::string* bytes_;
  static uint64_t page_size_, committed_;
};

TempDir* DamagedStore::tmp_ = nullptr;
fs::path* DamagedStore::source_ = nullptr;
std::string* DamagedStore::bytes_ = nullptr;
uint64_t DamagedStore::page_size_ = 0;
uint64_t DamagedStore::committed_ = 0;

// 100 sizes below the committed size: the edges of LMDB's two meta pages (page header 16
// bytes, meta 136), page boundaries and one byte either side, just under the committed
// size, and the rest spread over the file, alternately page-aligned and not.
std::set<uint64_t> cut_sizes(uint64_t committed, uint64_t page) {
  std::set<uint64_t> sizes{0, 1, 15, 16, 151, 152, 153,
                           page - 1, page, page + 1, page + 152, 2 * page - 1, 2 * page, 2 * page + 1,
                           committed - 1, committed - page, committed - page - 1, committed - page + 1,
                           committed / 2, committed / 2 + 1};
  for (uint64_t i = 1; i < 97 && sizes.size() < 100; ++i) {
    uint64_t at = committed * i / 97;
    sizes.insert(i % 2 ? at - at % page : at | 1);
  }
  return sizes;
}

TEST_F(DamagedStore, ALedgerCutToItsCommittedPagesOrLongerServesEveryCommand) {
  ASSERT_GE(bytes_->size(), committed_);
  ASSERT_GT(committed_, 64 * page_size_) << "the ledger should span many pages";
  // Exactly the committed pages, and the whole file with 5,000 stray bytes after it: pages
  // past the last committed one are LMDB's free space, not damage.
  auto longer = empty_dir("longer");
  write_file(longer / "data.mdb", *bytes_ + std::string(5000, '\0'));
  for (const auto& dir : {truncated_copy("committed", committed_), longer}) {
    for (const auto& args : commands(dir, empty_dir(dir.filename().string() + "-scratch"))) {
      auto [r, hung] = run_bounded(args);
      ASSERT_FALSE(hung) << joined(args);
      EXPECT_TRUE(r.exited_with(0)) << joined(args) << "\n" << describe(r);
    }
  }
}

TEST_F(DamagedStore, EveryCommandRefusesDataMdbCutShortAt100Sizes) {
  auto sizes = cut_sizes(committed_, page_size_);
  ASSERT_EQ(sizes.size(), 100u);
  ASSERT_LT(*sizes.rbegin(), committed_);
  for (uint64_t size : sizes) {
    SCOPED_TRACE("data.mdb cut to " + std::to_string(size) + " of " + std::to_string(committed_) + " bytes");
    auto dir = truncated_copy("cut", size);
    for (const auto& args : commands(dir, empty_dir("scratch-" + std::to_string(size)))) {
      ASSERT_NO_FATAL_FAILURE(expect_refused(args, "truncated?"));
    }
  }
}

TEST_F(DamagedStore, DataMdbThatIsNotARegularFileIsRefusedWithoutWaiting) {
  auto fifo = empty_dir("fifo");
  ASSERT_EQ(::mkfifo((fifo / "data.mdb").c_str(), 0644), 0);
  auto directory = empty_dir("directory");
  fs::create_directory(directory / "data.mdb");
  auto elsewhere = empty_dir("elsewhere");
  write_file(elsewhere / "data.mdb", *bytes_);
  auto symlink = empty_dir("symlink");
  fs::create_symlink(elsewhere / "data.mdb", symlink / "data.mdb");
  auto dangling = empty_dir("dangling");
  fs::create_symlink(dangling / "nowhere.mdb", dangling / "data.mdb");

  const std::pair<fs::path, std::string_view> cases[] = {
      {fifo, "is a FIFO"}, {directory, "is a directory"}, {symlink, "is a symbolic link"}, {dangling, "is a symbolic link"}};
  for (const auto& [dir, says] : cases) {
    for (const auto& args : commands(dir, empty_dir("scratch-" + dir.filename().string()))) {
      ASSERT_NO_FATAL_FAILURE(expect_refused(args, says));
    }
  }
}

TEST_F(DamagedStore, DataMdbWhoseMetaPagesAreNotLmdbsIsRefused) {
  // LMDB's meta page: a 16-byte page header, then the magic (u32) and the data version (u32).
  constexpr size_t kMagic = 16, kVersion = 20;
  auto text = empty_dir("text");
  write_file(text / "data.mdb", std::string(5 * page_size_, 'x'));
  std::string second = *bytes_;
  second[page_size_ + kMagic] ^= 0x01;
  std::string version = *bytes_;
  version[kVersion] = 2;
  auto bad_magic = empty_dir("bad-magic");
  write_file(bad_magic / "data.mdb", second);
  auto bad_version = empty_dir("bad-version");
  write_file(bad_version / "data.mdb", version);
  const std::pair<fs::path, std::string_view> cases[] = {{text, "meta page 0 is not an LMDB meta page"},
                                                         {bad_magic, "meta page 1 is not an LMDB meta page"},
                                                         {bad_version, "meta page 0 has LMDB data version 2"}};
  for (const auto& [dir, says] : cases) {
    for (const auto& args : commands(dir, empty_dir("scratch-" + dir.filename().string()))) {
      ASSERT_NO_FATAL_FAILURE(expect_refused(args, says));
    }
  }
}

TEST_F(DamagedStore, LockFileThatIsAFifoIsRefusedWithoutWaiting) {
  auto dir = truncated_copy("lock-fifo", bytes_->size());
  ASSERT_EQ(::mkfifo((dir / "lock.mdb").c_str(), 0644), 0);
  for (const auto& args : commands(dir, empty_dir("scratch-lock"))) {
    auto [r, hung] = run_bounded(args);
    SCOPED_TRACE("warden " + joined(args));
    ASSERT_FALSE(hung) << describe(r);
    ASSERT_EQ(r.term_signal, 0) << describe(r);
    EXPECT_EQ(r.exit_code, kCorrupt) << describe(r);
    EXPECT_NE(r.err.find("lock.mdb is a FIFO"), std::string::npos) << describe(r);
  }
}

// ---------------------------------------------------------------- append onto a bad tail

class DamagedTail : public ::testing::Test {
 protected:
  // A ledger of `records` records whose last one has a letter of its payload changed in
  // place; with `reseal_leaf` its level-0 node is rewritten to the altered record's hash too,
  // as someone covering their tracks would.
  fs::path alter_last(uint64_t records, bool reseal_leaf) {
    auto dir = tmp_ / ("ledger-" + std::to_string(records) + (reseal_leaf ? "-resealed" : ""));
    build_ledger(dir, records, false);
    if (::testing::Test::HasFatalFailure()) return dir;
    RawLmdb raw(dir);
    const uint64_t seq = records - 1;
    std::string stored = raw.get("records", be64(seq));
    auto at = stored.find("record-" + std::to_string(seq));
    EXPECT_NE(at, std::string::npos);
    stored[at] = 'R';
    raw.put("records", be64(seq), stored);
    if (reseal_leaf) {
      auto altered = Record::decode_stored(seq, stored);
      EXPECT_TRUE(altered) << altered.error().message;
      raw.put("nodes", be64(postorder_position(0, seq)), altered->hash().view());
    }
    return dir;
  }

  // append exits 1 naming the record and why, and the ledger keeps its size.
  void expect_append_refused(const fs::path& dir, uint64_t records, std::string_view says) {
    auto r = warden({"ledger", "append", dir.string(), "--kind", "after.damage"});
    EXPECT_TRUE(r.exited_with(kCorrupt)) << describe(r);
    EXPECT_NE(r.err.find("record " + std::to_string(records - 1) + " (the last)"), std::string::npos) << describe(r);
    EXPECT_NE(r.err.find(says), std::string::npos) << "expected \"" << says << "\"; " << describe(r);
    auto show = warden({"ledger", "show", dir.string(), "--json"});
    ASSERT_TRUE(show.exited_with(0)) << describe(show);
    EXPECT_EQ(stdout_json(show)["size"], records);
  }

  TempDir tmp_;
};

TEST_F(DamagedTail, AppendExtendsAnIntactLedger) {
  auto dir = tmp_ / "intact";
  ASSERT_NO_FATAL_FAILURE(build_ledger(dir, 36, false));
  auto r = warden({"ledger", "append", dir.string(), "--kind", "after.intact"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto verify = warden({"ledger", "verify", dir.string()});
  EXPECT_TRUE(verify.exited_with(0)) << describe(verify);
}

TEST_F(DamagedTail, AppendRefusesALastRecordThatNoLongerMatchesItsLeaf) {
  for (uint64_t records : {36, 37}) {  // the last leaf a right child, and a left one
    auto dir = alter_last(records, false);
    ASSERT_NO_FATAL_FAILURE(expect_append_refused(dir, records, "does not hash to its stored Merkle leaf"));
  }
}

TEST_F(DamagedTail, AppendRefusesALastRecordWhoseResealedLeafNoLongerMatchesItsParent) {
  auto dir = alter_last(36, true);  // leaf 35 is a right child: node (1, 17) covers it
  ASSERT_NO_FATAL_FAILURE(expect_append_refused(dir, 36, "is not the hash of its children"));
}

TEST_F(DamagedTail, AppendRefusesALastRecordThatDoesNotChainToTheOneBefore) {
  auto dir = tmp_ / "rechained";
  ASSERT_NO_FATAL_FAILURE(build_ledger(dir, 37, false));
  {
    RawLmdb raw(dir);
    // Record 36 rewritten with another prev and re-sealed: 36 is a left child, so its leaf
    // is the right edge's last node and only the prev chain can tell.
    auto record = Record::decode_stored(36, raw.get("records", be64(36)));
    ASSERT_TRUE(record) << record.error().message;
    record->prev.mutable_bytes()[0] ^= 0x01;
    std::string stored;
    record->encode_stored(stored);
    raw.put("records", be64(36), stored);
    raw.put("nodes", be64(postorder_position(0, 36)), record->hash().view());
  }
  ASSERT_NO_FATAL_FAILURE(expect_append_refused(dir, 37, "prev hash is not record 35's hash"));
}

}  // namespace
}  // namespace warden::test
