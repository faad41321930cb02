// Verification of the LMDB form across many parallel-hashed chunks: every tampering is
// found and named by its first bad sequence number, including at chunk boundaries.
#include "ledger/verify.h"

#include <gtest/gtest.h>

#include "ledger/ledger.h"
#include "common/lmdb.h"
#include "tests/support/test_dir.h"

namespace warden {
namespace {

using testing::TempDir;

constexpr uint64_t kRecords = 20000;  // three 8192-record chunks

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signer_.emplace(*NoteSigner::generate("verify.local/log"));
    dir_ = tmp_ / "ledger";
    ASSERT_TRUE(Ledger::create(dir_, {"verify.local/log", signer_->verifier().encoded(), 4096}));
    LogicalClock clock;
    auto ledger = Ledger::open(dir_, Ledger::Mode::read_write, clock);
    std::vector<AppendEntry> batch;
    for (uint64_t i = 0; i < kRecords; ++i) {
      batch.push_back({i % 3 ? "step" : "run_event", Json{{"i", i}, {"pad", std::string(i % 50, 'x')}}});
      if (batch.size() == 1000 || i + 1 == kRecords) {
        ASSERT_TRUE(ledger->append_batch(batch));
        batch.clear();
      }
      if (i + 1 == 8192 || i + 1 == 10000 || i + 1 == kRecords) {
        ASSERT_TRUE(ledger->checkpoint(*signer_));
      }
    }
    ASSERT_TRUE(ledger->put_blob("blob a"));
    ASSERT_TRUE(ledger->put_blob("blob b"));
  }

  VerifyReport verify() {
    auto report = verify_ledger_dir(dir_, {signer_->verifier()});
    EXPECT_TRUE(report) << report.error().message;
    return report.value_or(VerifyReport{});
  }

  // Raw access to one named database, as an attacker with the files would have.
  template <typename Edit>
  void tamper(const char* db, Edit&& edit) {
    auto env = lmdb::Env::open(dir_, 0, size_t{1} << 38, 8);
    ASSERT_TRUE(env);
    auto txn = lmdb::Txn::begin(*env, false);
    ASSERT_TRUE(txn);
    auto dbi = txn->open_db(db, 0);
    ASSERT_TRUE(dbi);
    edit(*txn, *dbi);
    ASSERT_TRUE(txn->commit());
  }

  static std::string get(lmdb::Txn& txn, MDB_dbi dbi, std::string_view key) { return std::string(*txn.get(dbi, key)); }
  static void put(lmdb::Txn& txn, MDB_dbi dbi, std::string_view key, std::string_view value) {
    ASSERT_TRUE(txn.put(dbi, key, value, 0, "tamper"));
  }
  static std::string seq_key(uint64_t seq) { return std::string(lmdb::U64Key(seq).view()); }

  void expect_problem_at(uint64_t seq, std::string_view words) {
    VerifyReport r = verify();
    ASSERT_FALSE(r.ok());
    ASSERT_TRUE(r.problem->seq) << r.problem->object << ": " << r.problem->message;
    EXPECT_EQ(*r.problem->seq, seq) << r.problem->message;
    EXPECT_NE(r.problem->message.find(words), std::string::npos) << r.problem->message;
  }

  TempDir tmp_;
  std::filesystem::path dir_;
  std::optional<NoteSigner> signer_;
};

TEST_F(VerifyTest, AnUntouchedLedgerVerifiesAcrossChunks) {
  VerifyReport r = verify();
  ASSERT_TRUE(r.ok()) << r.problem->object << ": " << r.problem->message;
  EXPECT_EQ(r.records, kRecords);
  EXPECT_EQ(r.checkpoints, 3u);
  EXPECT_EQ(r.blobs, 2u);
  LogicalClock clock;
  auto ledger = Ledger::open(dir_, Ledger::Mode::read_only, clock);
  EXPECT_EQ(r.root, *ledger->snapshot()->root());
}

TEST_F(VerifyTest, AFlippedPayloadByteNamesItsRecord) {
  tamper("records", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string v = get(txn, dbi, seq_key(12345));
    v[v.size() - 3] ^= 0x01;
    put(txn, dbi, seq_key(12345), v);
  });
  expect_problem_at(12345, "record was altered");
}

TEST_F(VerifyTest, AMissingRecordIsNamed) {
  tamper("records", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string key = seq_key(9000);
    MDB_val k = lmdb::val(key);
    ASSERT_EQ(mdb_del(txn.get(), dbi, &k, nullptr), 0);
  });
  expect_problem_at(9000, "missing");
}

TEST_F(VerifyTest, ADuplicatedRecordIsNamed) {
  tamper("records", [&](lmdb::Txn& txn, MDB_dbi dbi) { put(txn, dbi, seq_key(501), get(txn, dbi, seq_key(500))); });
  expect_problem_at(501, "prev");
}

TEST_F(VerifyTest, RecordsSwappedAcrossAChunkBoundaryAreNamed) {
  tamper("records", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string a = get(txn, dbi, seq_key(8191)), b = get(txn, dbi, seq_key(8192));
    put(txn, dbi, seq_key(8191), b);
    put(txn, dbi, seq_key(8192), a);
  });
  expect_problem_at(8191, "prev");
}

TEST_F(VerifyTest, AnAlteredInternalNodeIsNamed) {
  // The level-1 node over records 16000 and 16001.
  tamper("nodes", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string key = seq_key(postorder_position(1, 8000));
    std::string v = get(txn, dbi, key);
    v[0] ^= 0x80;
    put(txn, dbi, key, v);
  });
  expect_problem_at(16001, "Merkle node (level 1, index 8000)");
}

TEST_F(VerifyTest, ARecordRewrittenWithItsHashesIsCaughtByTheCheckpoint) {
  // An attacker who recomputes the record hash and every node above it is stopped only by
  // the signed checkpoint root; without one nothing could tell.
  tamper("records", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    auto r = *Record::decode_stored(19999, get(txn, dbi, seq_key(19999)));
    r.payload = R"({"i":0,"pad":"forged"})";
    std::string stored;
    r.encode_stored(stored);
    put(txn, dbi, seq_key(19999), stored);
    auto nodes = *txn.open_db("nodes", 0);
    // Recompute the path from the forged leaf to the root's stored nodes.
    MerkleHasher h;
    Digest node = r.hash();
    uint64_t index = 19999;
    put(txn, nodes, seq_key(postorder_position(0, index)), node.view());
    for (unsigned level = 0; index & 1; ++level, index >>= 1) {
      Digest left = *Digest::from_bytes(get(txn, nodes, seq_key(postorder_position(level, index - 1))));
      node = h.node(left, node);
      put(txn, nodes, seq_key(postorder_position(level + 1, index >> 1)), node.view());
    }
  });
  VerifyReport r = verify();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.problem->object, "checkpoint 20000");
  EXPECT_EQ(*r.problem->seq, 19999u);
}

TEST_F(VerifyTest, ASwappedBlobIsNamed) {
  tamper("blobs", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string a(sha256("blob a").view()), b(sha256("blob b").view());
    std::string va = get(txn, dbi, a), vb = get(txn, dbi, b);
    put(txn, dbi, a, vb);
    put(txn, dbi, b, va);
  });
  VerifyReport r = verify();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.problem->object.find("blob sha256:"), std::string::npos);
}

TEST_F(VerifyTest, AForgedCheckpointSignatureIsNamed) {
  tamper("checkpoints", [&](lmdb::Txn& txn, MDB_dbi dbi) {
    std::string note = get(txn, dbi, seq_key(10000));
    note[note.size() - 10] = note[note.size() - 10] == 'A' ? 'B' : 'A';
    put(txn, dbi, seq_key(10000), note);
  });
  VerifyReport r = verify();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.problem->object, "checkpoint 10000");
}

}  // namespace
}  // namespace warden
