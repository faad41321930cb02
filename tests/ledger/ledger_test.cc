// The ledger API in-process: appends, proofs from stored nodes, checkpoints, blobs,
// refusal of bad input, and export/import.
#include "ledger/ledger.h"

#include <gtest/gtest.h>

#include "common/file.h"
#include "ledger/checkpoint.h"
#include "ledger/export.h"
#include "ledger/verify.h"
#include "tests/support/test_dir.h"

namespace warden {
namespace {

using testing::TempDir;

struct Fixture {
  Fixture() : signer(*NoteSigner::generate("test.local/ledger")) {
    dir = tmp / "ledger";
    auto st = Ledger::create(dir, {"test.local/ledger", signer.verifier().encoded(), 4096});
    EXPECT_TRUE(st) << st.error().message;
  }
  Ledger open() { return std::move(*Ledger::open(dir, Ledger::Mode::read_write, clock)); }

  TempDir tmp;
  std::filesystem::path dir;
  NoteSigner signer;
  LogicalClock clock{1000, 10};
};

Json payload(int i) { return {{"i", i}, {"text", "record " + std::to_string(i)}}; }

TEST(Ledger, AppendsChainRecordsAndMatchesAnInMemoryTree) {
  Fixture f;
  Ledger ledger = f.open();
  MemoryTree mirror;
  Digest prev;
  for (int i = 0; i < 37; ++i) {
    auto a = ledger.append("test", payload(i));
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->seq, static_cast<uint64_t>(i));
    mirror.append_leaf_hash(a->hash);
  }
  std::vector<AppendEntry> batch;
  for (int i = 37; i < 100; ++i) batch.push_back({"batch", payload(i)});
  auto appended = ledger.append_batch(batch);
  ASSERT_TRUE(appended);
  ASSERT_EQ(appended->size(), batch.size());
  for (const auto& a : *appended) mirror.append_leaf_hash(a.hash);

  auto snap = *ledger.snapshot();
  ASSERT_EQ(snap.size(), 100u);
  for (uint64_t seq = 0; seq < 100; ++seq) {
    auto r = snap.record(seq);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->prev, prev) << seq;
    EXPECT_EQ(r->ts, 1000 + 10 * static_cast<int64_t>(seq));
    EXPECT_EQ(r->hash(), *snap.record_hash(seq));
    prev = r->hash();
  }
  EXPECT_EQ(*snap.root(), mirror.root());
  for (uint64_t n : {1, 2, 63, 64, 65, 99, 100}) {
    EXPECT_EQ(*snap.root_at(n), *mirror.root_at(n));
    for (uint64_t i = 0; i < n; i += 7) {
      auto proof = snap.inclusion_proof(i, n);
      ASSERT_TRUE(proof);
      EXPECT_EQ(*proof, *inclusion_proof(mirror, i, n));
      EXPECT_TRUE(verify_inclusion(*snap.record_hash(i), i, n, *proof, *snap.root_at(n)));
    }
    auto cons = snap.consistency_proof(1 + n / 3, n);
    ASSERT_TRUE(cons);
    EXPECT_TRUE(verify_consistency(1 + n / 3, n, *snap.root_at(1 + n / 3), *snap.root_at(n), *cons));
  }
  EXPECT_FALSE(snap.inclusion_proof(0, 101));
  EXPECT_EQ(snap.record(100).error().code, Errc::not_found);
  auto kinds = *snap.kind_counts();
  EXPECT_EQ(kinds, (std::vector<std::pair<std::string, uint64_t>>{{"batch", 63}, {"test", 37}}));
}

TEST(Ledger, ReopeningContinuesTheChain) {
  Fixture f;
  Digest last;
  {
    Ledger ledger = f.open();
    for (int i = 0; i < 11; ++i) last = ledger.append("test", payload(i))->hash;
  }
  Ledger again = f.open();
  auto a = again.append("test", payload(11));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seq, 11u);
  EXPECT_EQ(again.snapshot()->record(11)->prev, last);
  auto report = verify_ledger(again, {f.signer.verifier()});
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->ok()) << report->problem->message;
  EXPECT_EQ(report->records, 12u);
}

TEST(Ledger, BadInputWritesNothing) {
  Fixture f;
  Ledger ledger = f.open();
  ASSERT_TRUE(ledger.append("test", payload(0)));
  auto fl = ledger.append("test", Json{{"x", 1.5}});
  ASSERT_FALSE(fl);
  EXPECT_NE(fl.error().message.find("floating-point"), std::string::npos);
  EXPECT_EQ(ledger.append("test", Json::array()).error().code, Errc::invalid_argument);
  EXPECT_EQ(ledger.append("Bad Kind", payload(1)).error().code, Errc::invalid_argument);
  auto big = ledger.append("test", Json{{"x", std::string(5000, 'a')}});
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, Errc::limit_exceeded);
  // One bad entry refuses the whole batch.
  std::vector<AppendEntry> batch{{"test", payload(1)}, {"test", payload(2)}, {"test", Json{{"f", 0.5}}}};
  auto refused = ledger.append_batch(batch);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("entry 2"), std::string::npos);
  EXPECT_EQ(ledger.snapshot()->size(), 1u);
  EXPECT_TRUE(verify_ledger(ledger, {})->ok());
}

TEST(Ledger, OpenAndCreateRefuseClearly) {
  TempDir tmp;
  LogicalClock clock;
  auto missing = Ledger::open(tmp / "nope", Ledger::Mode::read_write, clock);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
  std::filesystem::create_directory(tmp / "empty");
  EXPECT_EQ(Ledger::open(tmp / "empty", Ledger::Mode::read_only, clock).error().code, Errc::not_found);
  auto signer = *NoteSigner::generate("x");
  ASSERT_TRUE(Ledger::create(tmp / "l", {"x", signer.verifier().encoded(), 100}));
  EXPECT_EQ(Ledger::create(tmp / "l", {"x", signer.verifier().encoded(), 100}).error().code, Errc::already_exists);
  EXPECT_FALSE(Ledger::create(tmp / "m", {"", signer.verifier().encoded(), 100}));
  EXPECT_FALSE(Ledger::create(tmp / "m", {"x", "not a key", 100}));
  auto ro = Ledger::open(tmp / "l", Ledger::Mode::read_only, clock);
  ASSERT_TRUE(ro);
  EXPECT_FALSE(ro->append("test", Json::object()));
}

TEST(Ledger, CheckpointsAreSignedNotesOverTheCurrentRoot) {
  Fixture f;
  Ledger ledger = f.open();
  for (int i = 0; i < 5; ++i) ledger.append("test", payload(i));
  auto cp = ledger.checkpoint(f.signer);
  ASSERT_TRUE(cp) << cp.error().message;
  EXPECT_EQ(cp->size, 5u);
  auto opened = open_note(cp->note, {f.signer.verifier()});
  ASSERT_TRUE(opened);
  auto body = Checkpoint::parse_body(opened->text);
  EXPECT_EQ(body->origin, "test.local/ledger");
  EXPECT_EQ(body->root, *ledger.snapshot()->root());
  auto other = *NoteSigner::generate("test.local/ledger");
  EXPECT_FALSE(ledger.checkpoint(other));  // not this ledger's key
  EXPECT_EQ(ledger.snapshot()->checkpoints()->size(), 1u);
}

TEST(Ledger, BlobsAreContentAddressedDeduplicatedAndVerified) {
  Fixture f;
  Ledger ledger = f.open();
  auto a = ledger.put_blob("hello blob");
  auto b = ledger.put_blob("hello blob");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*a, sha256("hello blob"));
  EXPECT_EQ(*ledger.snapshot()->blob(*a), "hello blob");
  EXPECT_EQ(ledger.snapshot()->blob(sha256("other")).error().code, Errc::not_found);
}

TEST(Ledger, ExportImportKeepsTheRootAndTheBytes) {
  Fixture f;
  {
    Ledger ledger = f.open();
    for (int i = 0; i < 20; ++i) ledger.append(i % 2 ? "odd" : "even", payload(i));
    ledger.checkpoint(f.signer);
    ledger.put_blob("blob one");
    ledger.append("test", payload(99));
    ledger.checkpoint(f.signer);
  }
  LogicalClock clock;
  auto original = Ledger::open(f.dir, Ledger::Mode::read_only, clock);
  auto summary = export_ledger(*original, f.tmp / "export");
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->records, 21u);
  EXPECT_EQ(summary->checkpoints, 2u);
  EXPECT_EQ(summary->blobs, 1u);
  EXPECT_FALSE(export_ledger(*original, f.tmp / "export"));  // never overwrites

  auto report = verify_export_dir(f.tmp / "export", {f.signer.verifier()});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->ok()) << report->problem->object << ": " << report->problem->message;
  EXPECT_EQ(report->checkpoints, 2u);

  auto imported = import_ledger(f.tmp / "export", f.tmp / "copy", {f.signer.verifier()});
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(imported->root, summary->root);
  auto copy = Ledger::open(f.tmp / "copy", Ledger::Mode::read_only, clock);
  EXPECT_EQ(*copy->snapshot()->root(), *original->snapshot()->root());
  EXPECT_TRUE(verify_ledger(*copy, {f.signer.verifier()})->ok());
  // Export of the copy is byte-identical: nothing was lost or re-encoded.
  ASSERT_TRUE(export_ledger(*copy, f.tmp / "export2"));
  EXPECT_EQ(*read_file(f.tmp / "export" / "records.jsonl"), *read_file(f.tmp / "export2" / "records.jsonl"));
  EXPECT_EQ(*read_file(f.tmp / "export" / "ledger.json"), *read_file(f.tmp / "export2" / "ledger.json"));
}

TEST(Ledger, SameInputsAndLogicalClockGiveByteIdenticalLedgers) {
  auto signer = *NoteSigner::generate("golden.local/log");
  auto build = [&](const std::filesystem::path& dir) {
    EXPECT_TRUE(Ledger::create(dir, {"golden.local/log", signer.verifier().encoded(), 4096}));
    LogicalClock clock;
    auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
    for (int i = 0; i < 30; ++i) ledger->append("step", payload(i));
    ledger->checkpoint(signer);
    auto summary = export_ledger(*ledger, dir.string() + ".export");
    EXPECT_TRUE(summary);
    return *read_file(dir.string() + ".export/records.jsonl") + *read_file(dir.string() + ".export/checkpoints/30.note");
  };
  TempDir tmp;
  EXPECT_EQ(build(tmp / "a"), build(tmp / "b"));
}

}  // namespace
}  // namespace warden
