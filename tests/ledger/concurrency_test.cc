// Two writer processes append to one ledger at the same time. LMDB serializes writers and
// each write re-reads the tail, so both must succeed, their acknowledgements must interleave
// into one gap-free sequence, and the result must verify.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "common/clock.h"
#include "ledger/ledger.h"
#include "ledger/verify.h"
#include "tests/ledger/acks.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

constexpr uint64_t kPerWriter = 300;

TEST(Concurrency, TwoWriterProcessesAppendWithoutLossOrCorruption) {
  TempDir tmp;
  const auto dir = tmp / "ledger";
  auto signer = NoteSigner::generate("example.com/warden/concurrency");
  ASSERT_TRUE(signer) << signer.error().message;
  auto created = Ledger::create(dir, {"example.com/warden/concurrency", signer->verifier().encoded()});
  ASSERT_TRUE(created) << created.error().message;

  const std::string count = std::to_string(kPerWriter);
  auto a = Child::spawn({LEDGER_WRITER_BINARY, dir.string(), "--count", count, "--seed", "1"});
  auto b = Child::spawn({LEDGER_WRITER_BINARY, dir.string(), "--count", count, "--seed", "2"});
  const pid_t pid_a = a.pid(), pid_b = b.pid();
  // Both are drained concurrently: a writer blocked on a full stdout pipe would not be racing.
  while (a.output_open() || b.output_open()) {
    a.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(2));
    b.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(2));
  }
  ProcessResult ra = a.wait(), rb = b.wait();
  ASSERT_TRUE(ra.exited_with(0)) << describe(ra);
  ASSERT_TRUE(rb.exited_with(0)) << describe(rb);

  auto acks_a = parse_acks(ra.out), acks_b = parse_acks(rb.out);
  ASSERT_EQ(acks_a.size(), kPerWriter);
  ASSERT_EQ(acks_b.size(), kPerWriter);
  std::map<uint64_t, std::pair<std::string, pid_t>> by_seq;  // seq -> (hash, writer)
  for (const auto& [acks, pid] : {std::pair{&acks_a, pid_a}, std::pair{&acks_b, pid_b}}) {
    for (size_t i = 0; i < acks->size(); ++i) {
      const Ack& ack = (*acks)[i];
      if (i > 0) {
        ASSERT_GT(ack.seq, (*acks)[i - 1].seq) << "one writer's records went backwards";
      }
      ASSERT_TRUE(by_seq.emplace(ack.seq, std::pair{ack.hash_hex, pid}).second) << "seq " << ack.seq << " acknowledged twice";
    }
  }
  // Informational: whether the writers' commits actually interleaved on this run.
  bool interleaved = acks_a.front().seq < acks_b.back().seq && acks_b.front().seq < acks_a.back().seq;
  std::cout << "[concurrency] writers interleaved: " << (interleaved ? "yes" : "no") << "\n";
  // 600 distinct seqs in [0, 600): no gaps, no overlaps.
  ASSERT_EQ(by_seq.size(), 2 * kPerWriter);
  EXPECT_EQ(by_seq.begin()->first, 0u);
  EXPECT_EQ(by_seq.rbegin()->first, 2 * kPerWriter - 1);

  {
    LogicalClock clock;
    auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
    ASSERT_TRUE(ledger) << ledger.error().message;
    auto snap = ledger->snapshot();
    ASSERT_TRUE(snap) << snap.error().message;
    ASSERT_EQ(snap->size(), 2 * kPerWriter);
    for (const auto& [seq, acked] : by_seq) {
      auto hash = snap->record_hash(seq);
      ASSERT_TRUE(hash) << hash.error().message;
      ASSERT_EQ(hash->hex(), acked.first) << "seq " << seq;
      // The record under that seq is the acknowledging writer's own.
      auto record = snap->record(seq);
      ASSERT_TRUE(record) << record.error().message;
      ASSERT_EQ(Json::parse(record->payload)["writer"], acked.second) << "seq " << seq << ": " << record->payload;
    }
  }
  {
    // The writers sign nothing, and a trusted key vouches only for what it signed.
    LogicalClock clock;
    auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
    ASSERT_TRUE(ledger) << ledger.error().message;
    ASSERT_TRUE(ledger->checkpoint(*signer));
  }
  auto report = verify_ledger_dir(dir, {signer->verifier()});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->ok()) << report->problem->object << ": " << report->problem->message;
  EXPECT_EQ(report->records, 2 * kPerWriter);

  auto cli = warden({"ledger", "verify", dir.string(), "--json"});
  ASSERT_TRUE(cli.exited_with(0)) << describe(cli);
  EXPECT_EQ(stdout_json(cli)["records"], 2 * kPerWriter);
}

}  // namespace
}  // namespace warden::test
