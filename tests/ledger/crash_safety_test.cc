// SIGKILL a writer at random moments, over and over, on one growing ledger: every record
// the writer acknowledged must be there with exactly the acknowledged hash, the ledger must
// verify (chain, Merkle nodes, checkpoint roots and signatures), and appending must go on.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "common/clock.h"
#include "ledger/ledger.h"
#include "ledger/verify.h"
#include "tests/ledger/acks.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

// At least kMinTrials kills; more (up to kMaxTrials) if too few landed after the first
// append, as on a slow or sanitizer build where start-up eats most of the 1-40 ms.
constexpr int kMinTrials = 120;
constexpr int kMaxTrials = 480;
constexpr uint64_t kMinTrialsWithAcks = 40;
constexpr int kCheckpointEvery = 10;
constexpr uint64_t kMaxBatch = 50;  // ledger_writer's largest append_batch

uint32_t choose_seed() {
  if (const char* s = std::getenv("WARDEN_CRASH_SEED")) return static_cast<uint32_t>(std::stoul(s));
  return std::random_device{}();
}

uint64_t ledger_size(const std::filesystem::path& dir) {
  LogicalClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  if (!ledger) throw std::runtime_error(ledger.error().message);
  auto snap = ledger->snapshot();
  if (!snap) throw std::runtime_error(snap.error().message);
  return snap->size();
}

// (a) Every acknowledged record is present with its acknowledged hash. The writer is the
// only appender during a trial, so its acks are exactly seqs size_before, size_before+1, ...;
// at most one call (<= kMaxBatch records) can have committed without being acknowledged.
void check_acknowledged(const std::filesystem::path& dir, uint64_t size_before, const std::vector<Ack>& acks) {
  for (size_t i = 0; i < acks.size(); ++i) {
    ASSERT_EQ(acks[i].seq, size_before + i) << "acknowledgements are not the contiguous continuation of the log";
  }
  LogicalClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  ASSERT_TRUE(ledger) << ledger.error().message;
  auto snap = ledger->snapshot();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_GE(snap->size(), size_before + acks.size()) << "acknowledged records are missing";
  ASSERT_LE(snap->size(), size_before + acks.size() + kMaxBatch) << "more records than one unacknowledged call";
  for (const auto& ack : acks) {
    auto hash = snap->record_hash(ack.seq);
    ASSERT_TRUE(hash) << "seq " << ack.seq << ": " << hash.error().message;
    ASSERT_EQ(hash->hex(), ack.hash_hex) << "seq " << ack.seq;
    auto record = snap->record(ack.seq);
    ASSERT_TRUE(record) << "seq " << ack.seq << ": " << record.error().message;
    ASSERT_EQ(record->hash().hex(), ack.hash_hex) << "stored bytes of seq " << ack.seq << " do not hash to the ack";
  }
}

// (c) The ledger still takes writes after the kill (LMDB recovers the dead writer's lock),
// and the new record lands right after whatever the killed writer committed.
void append_after_crash(const std::filesystem::path& dir, const NoteSigner& signer, bool checkpoint,
                        uint64_t& checkpoints) {
  SystemClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger) << ledger.error().message;
  uint64_t size = 0;
  {  // the read transaction ends before the write begins
    auto snap = ledger->snapshot();
    ASSERT_TRUE(snap) << snap.error().message;
    size = snap->size();
  }
  auto appended = ledger->append("run_event", Json{{"probe", "after crash"}, {"size", size}});
  ASSERT_TRUE(appended) << appended.error().message;
  ASSERT_EQ(appended->seq, size);
  if (checkpoint) {
    auto cp = ledger->checkpoint(signer);
    ASSERT_TRUE(cp) << cp.error().message;
    ASSERT_EQ(cp->size, size + 1);
    ++checkpoints;
  }
}

TEST(CrashSafety, SigkilledWriterKeepsEveryAcknowledgedRecordAndTheLedgerVerifies) {
  const uint32_t seed = choose_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with WARDEN_CRASH_SEED=" + std::to_string(seed) + ")");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> run_ms(1, 40);

  TempDir tmp;
  const auto dir = tmp / "ledger";
  auto signer = NoteSigner::generate("example.com/warden/crash-test");
  ASSERT_TRUE(signer) << signer.error().message;
  auto created = Ledger::create(dir, {"example.com/warden/crash-test", signer->verifier().encoded()});
  ASSERT_TRUE(created) << created.error().message;

  uint64_t acknowledged = 0, trials_with_acks = 0, checkpoints = 0;
  int trial = 0;
  for (; trial < kMinTrials || (trials_with_acks < kMinTrialsWithAcks && trial < kMaxTrials); ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const uint64_t size_before = ledger_size(dir);
    const int ms = run_ms(rng);
    auto writer = Child::spawn({LEDGER_WRITER_BINARY, dir.string(), "--seed", std::to_string(rng())});
    writer.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(ms));
    writer.kill(SIGKILL);
    ProcessResult result = writer.wait();
    // Anything but our SIGKILL means the writer failed on its own.
    ASSERT_EQ(result.term_signal, SIGKILL) << "ran " << ms << " ms; " << describe(result);

    auto acks = parse_acks(result.out);
    acknowledged += acks.size();
    trials_with_acks += !acks.empty();
    ASSERT_NO_FATAL_FAILURE(check_acknowledged(dir, size_before, acks)) << "ran " << ms << " ms";

    auto report = verify_ledger_dir(dir, {});
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_TRUE(report->ok()) << report->problem->object << ": " << report->problem->message;
    ASSERT_EQ(report->checkpoints, checkpoints);

    ASSERT_NO_FATAL_FAILURE(append_after_crash(dir, *signer, trial % kCheckpointEvery == kCheckpointEvery - 1, checkpoints));
  }
  std::cout << "[crash] " << trial << " kills, " << trials_with_acks << " with acknowledged records, "
            << acknowledged << " acknowledged in all, final size " << ledger_size(dir) << ", " << checkpoints
            << " checkpoints\n";
  // Guards against a vacuous run where every kill landed before the first append.
  EXPECT_GE(trials_with_acks, kMinTrialsWithAcks);
  EXPECT_EQ(checkpoints, static_cast<uint64_t>(trial / kCheckpointEvery));

  // The independent check: the CLI, against the verifier key we hold, not the stored one.
  write_file(tmp / "verifier.key", signer->verifier().encoded() + "\n");
  auto verified = warden({"ledger", "verify", dir.string(), "--key", (tmp / "verifier.key").string(), "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  auto json = stdout_json(verified);
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["key_source"], "--key");
  EXPECT_EQ(json["checkpoints"], checkpoints);
  EXPECT_EQ(json["records"], ledger_size(dir));
}

}  // namespace
}  // namespace warden::test
