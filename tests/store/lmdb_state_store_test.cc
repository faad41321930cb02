// LmdbStateStore against the conformance suite, each test in its own temp directory.
#include "store/lmdb_state_store.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/lmdb.h"

#include "tests/store/state_store_conformance.h"
#include "tests/support/temp_dir.h"

namespace warden::store::test {
namespace {

class LmdbBacking final : public StoreBacking {
 public:
  explicit LmdbBacking(bool sync) : sync_(sync) {}
  Result<std::unique_ptr<StateStore>> open() override {
    return open_lmdb_state_store(dir_ / "state", LmdbStateStoreOptions{.sync = sync_});
  }

 private:
  bool sync_;
  warden::test::TempDir dir_;
};

// The default (each commit fsynced) and the unsynced mode must behave alike.
std::unique_ptr<StoreBacking> make_synced() { return std::make_unique<LmdbBacking>(true); }
std::unique_ptr<StoreBacking> make_unsynced() { return std::make_unique<LmdbBacking>(false); }

INSTANTIATE_TEST_SUITE_P(Lmdb, StateStoreConformance,
                         testing::Values(ConformanceBacking{"synced", &make_synced},
                                         ConformanceBacking{"unsynced", &make_unsynced}),
                         conformance_name);

// Opens the store's files with no store on them and runs `edit` on database `db` in one
// write transaction: how these tests write what a damaged disk or an older build left.
void edit_raw(const std::filesystem::path& dir, const char* db, const std::function<void(lmdb::Txn&, MDB_dbi)>& edit) {
  auto env = lmdb::Env::open(dir, 0, size_t{1} << 30, 8);
  ASSERT_TRUE(env) << env.error().message;
  auto txn = lmdb::Txn::begin(*env, false);
  ASSERT_TRUE(txn);
  auto dbi = txn->open_db(db, 0);
  ASSERT_TRUE(dbi);
  edit(*txn, *dbi);
  if (testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(txn->commit());
}

TEST(LmdbStateStore, OpenRefusesAFileWhereTheDirectoryShouldBe) {
  warden::test::TempDir dir;
  {
    auto made = open_lmdb_state_store(dir / "state");
    ASSERT_TRUE(made) << made.error().message;
  }
  auto blocked = open_lmdb_state_store(dir / "state" / "data.mdb");
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().code, Errc::io_error) << blocked.error().message;
}

// An agent record damaged on disk must not cost a made delivery its ack: ack_and_put keeps
// the ack and leaves the record alone (as the Redis store does), so the result it authorizes
// is decided once, and the damage shows at the next read of the agent. Before, the damaged
// record aborted the whole transaction: the result was dropped and the task run again.
TEST(LmdbStateStore, ADamagedAgentRecordLeavesAnAckAndPutsAckStanding) {
  warden::test::TempDir dir;
  ClaimRef ref;
  {
    auto store = open_lmdb_state_store(dir / "state");
    ASSERT_TRUE(store) << store.error().message;
    AgentRecord a{.id = "a", .role = "runner", .labels = {}, .state = "working", .version = 0, .last_heartbeat_ms = 1,
                  .details = ""};
    ASSERT_TRUE((*store)->put_agent(a, 0, ""));
    ASSERT_TRUE((*store)->enqueue(Task{"t", 1, "runner", "p"}));
    auto c = (*store)->claim("a", 0, 1000, ClaimFilter{});
    ASSERT_TRUE(c && c->has_value());
    ref = (*c)->ref();
  }
  edit_raw(dir / "state", "agents", [](lmdb::Txn& txn, MDB_dbi agents) {
    ASSERT_TRUE(txn.put(agents, "a", "not an agent record", 0, "damaging the record"));
  });
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  auto store = open_lmdb_state_store(dir / "state");
  ASSERT_TRUE(store) << store.error().message;
  AgentRecord idle{.id = "a", .role = "runner", .labels = {}, .state = "idle", .version = 0, .last_heartbeat_ms = 1,
                   .details = ""};
  auto acked = (*store)->ack_and_put(ref, 1, AgentWrite{idle, 1, "delivered"});
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_FALSE(acked->has_value()) << "the damaged record is not overwritten blind";
  EXPECT_EQ((*store)->queue_length().value(), 0u) << "the ack stands";
  EXPECT_EQ((*store)->last_seq().value(), 0u) << "no event without its write";
  auto read = (*store)->get_agent("a");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, Errc::corrupt);
}

// A task row written before tasks carried enqueued_ms is the same encoding without its last
// eight bytes: it must still decode (as enqueued at 0), so an existing store opens and its
// queue keeps working. Made here by cutting those bytes off a row the store wrote.
TEST(LmdbStateStore, ATaskRowWrittenWithoutAnEnqueueTimeReadsZero) {
  warden::test::TempDir dir;
  {
    auto store = open_lmdb_state_store(dir / "state");
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->enqueue(Task{"claimed", 0, "runner.s", "p", 77}));
    ASSERT_TRUE((*store)->enqueue(Task{"waiting", 0, "runner.s", "q", 77}));
  }
  edit_raw(dir / "state", "tasks", [](lmdb::Txn& txn, MDB_dbi tasks) {
    for (const char* id : {"claimed", "waiting"}) {
      auto row = txn.get(tasks, id);
      ASSERT_TRUE(row) << row.error().message;
      ASSERT_GT(row->size(), 8u);
      const std::string old(row->substr(0, row->size() - 8));
      ASSERT_TRUE(txn.put(tasks, id, old, 0, "writing an old-format row"));
    }
  });
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  auto store = open_lmdb_state_store(dir / "state");
  ASSERT_TRUE(store) << store.error().message;
  auto c = (*store)->claim("a", 0, 10, ClaimFilter{});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->task, (Task{"claimed", 0, "runner.s", "p", 0}));
  auto removed = (*store)->expire("runner.", 1, 5, 10);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(*removed, (std::vector<Task>{{"waiting", 0, "runner.s", "q", 0}}));
  // The claim rewrote its row in the new format, still read as 0.
  auto lapsed = (*store)->expire("runner.", 1, 10, 10);
  ASSERT_TRUE(lapsed) << lapsed.error().message;
  EXPECT_EQ(*lapsed, (std::vector<Task>{{"claimed", 0, "runner.s", "p", 0}}));
}

}  // namespace
}  // namespace warden::store::test
