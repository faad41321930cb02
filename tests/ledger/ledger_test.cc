// The ledger API in-process: appends, proofs from stored nodes, checkpoints, blobs,
// refusal of bad input, and export/import.
#include "ledger/ledger.h"

#include <gtest/gtest.h>

#include "common/file.h"
#include "common/lmdb.h"
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
  ASSERT_TRUE(again.checkpoint(f.signer));  // a trusted key vouches only for what it signed
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

// Record iteration without copies, either way, stopping when asked.
TEST(Ledger, WalksRecordsForwardAndBackward) {
  Fixture f;
  Ledger ledger = f.open();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(ledger.append("test", payload(i)));
  auto snap = *ledger.snapshot();
  std::vector<uint64_t> seen;
  auto collect = [&](const RecordView& r) -> Result<bool> {
    seen.push_back(r.seq);
    EXPECT_EQ(r.payload, *canonicalize(payload(static_cast<int>(r.seq))));
    return true;
  };
  ASSERT_TRUE(snap.for_each_record(2, 5, collect));
  EXPECT_EQ(seen, (std::vector<uint64_t>{2, 3, 4}));
  seen.clear();
  ASSERT_TRUE(snap.for_each_record(7, 100, collect, LedgerSnapshot::Order::backward));  // clamped to the size
  EXPECT_EQ(seen, (std::vector<uint64_t>{9, 8, 7}));
  seen.clear();
  ASSERT_TRUE(snap.for_each_record(0, 10, [&](const RecordView& r) -> Result<bool> {
    seen.push_back(r.seq);
    return r.seq < 1;
  }));
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1}));
  auto stopped = snap.for_each_record(0, 10, [](const RecordView&) -> Result<bool> { return fail(Errc::io_error, "stop"); });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message, "stop");
  EXPECT_EQ(snap.record_view(3)->kind, "test");
  EXPECT_FALSE(snap.record_view(10));
}

// The runs index holds a record under its top-level "run_id" or "run" string only: not under
// a nested field of that name, nor under text that merely looks like one.
TEST(Ledger, IndexesRecordsByTheirTopLevelRun) {
  Fixture f;
  Ledger ledger = f.open();
  const std::string long_id(600, 'r');
  std::vector<AppendEntry> entries = {
      {"k", {{"run_id", "a"}, {"n", 0}}},                               // 0
      {"p", {{"run", "a"}, {"data", {{"run_id", "b"}}}}},               // 1: nested run_id b
      {"k", {{"data", {{"run_id", "a"}}}, {"note", "\"run_id\":\"a\""}}},  // 2: neither
      {"k", {{"run_id", "b"}}},                                         // 3
      {"k", {{"run_id", "a\"q\\u"}}},                                   // 4: escapes
      {"k", {{"run_id", long_id}}},                                     // 5: too long to key
      {"k", {{"run_id", ""}}},                                          // 6: empty
      {"k", {{"run", "a"}, {"run_id", "a"}}},                           // 7: both fields, once
      {"k", {{"run_id", 7}}},                                           // 8: not a string
      {"k", {{"aaa", {1, {{"run", "a"}}, "]"}}, {"run_id", "a"}, {"zzz", "a"}}},  // 9
  };
  ASSERT_TRUE(ledger.append_batch(entries));
  auto snap = *ledger.snapshot();
  auto runs = [&](std::string_view id) { return *snap.run_records(id); };
  EXPECT_EQ(runs("a"), (std::vector<uint64_t>{0, 1, 7, 9}));
  EXPECT_EQ(runs("b"), (std::vector<uint64_t>{3}));
  EXPECT_EQ(runs("a\"q\\u"), (std::vector<uint64_t>{4}));
  EXPECT_EQ(runs(long_id), (std::vector<uint64_t>{5}));
  EXPECT_EQ(runs(""), (std::vector<uint64_t>{6}));
  EXPECT_TRUE(runs("c").empty());
  EXPECT_TRUE(runs(std::string(599, 'r')).empty());
}

// A ledger made before the index (simulated: the index and its size removed) is scanned when
// read-only and indexed by the first read-write open; import rebuilds the index too.
TEST(Ledger, RunIndexIsRebuiltForOlderLedgersAndOnImport) {
  Fixture f;
  {
    Ledger ledger = f.open();
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(ledger.append("k", {{"run_id", "run-" + std::to_string(i % 3)}, {"i", i}}));
  }
  const std::vector<uint64_t> expected{1, 4, 7, 10, 13, 16, 19, 22, 25, 28};
  {
    auto env = lmdb::Env::open(f.dir, 0, size_t{1} << 38, 8);
    ASSERT_TRUE(env);
    auto txn = lmdb::Txn::begin(*env, false);
    auto runs = txn->open_db("runs", MDB_DUPSORT | MDB_DUPFIXED);
    ASSERT_TRUE(runs);
    auto meta = txn->open_db("meta", 0);
    ASSERT_EQ(mdb_drop(txn->get(), *runs, 1), 0);  // gone, as in a ledger made before it
    MDB_val key = lmdb::val("runs_indexed");
    ASSERT_EQ(mdb_del(txn->get(), *meta, &key, nullptr), 0);
    ASSERT_TRUE(txn->commit());
  }
  LogicalClock clock;
  {
    auto old = Ledger::open(f.dir, Ledger::Mode::read_only, clock);
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_EQ(*old->snapshot()->run_records("run-1"), expected);  // by a scan
  }
  {
    Ledger ledger = f.open();  // indexes the 30 records
    ASSERT_TRUE(ledger.append("k", {{"run_id", "run-1"}}));
    auto with_new = expected;
    with_new.push_back(30);
    EXPECT_EQ(*ledger.snapshot()->run_records("run-1"), with_new);
    ASSERT_TRUE(ledger.checkpoint(f.signer));  // a trusted key vouches only for what it signed
  }
  auto original = Ledger::open(f.dir, Ledger::Mode::read_only, clock);
  ASSERT_TRUE(export_ledger(*original, f.tmp / "export"));
  ASSERT_TRUE(import_ledger(f.tmp / "export", f.tmp / "copy", {f.signer.verifier()}));
  auto copy = Ledger::open(f.tmp / "copy", Ledger::Mode::read_only, clock);
  ASSERT_TRUE(copy);
  EXPECT_EQ(*copy->snapshot()->run_records("run-1"), *original->snapshot()->run_records("run-1"));
  EXPECT_EQ(copy->snapshot()->run_records("run-2")->size(), 10u);
  EXPECT_TRUE(verify_ledger(*copy, {f.signer.verifier()})->ok());
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
