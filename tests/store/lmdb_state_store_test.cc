// LmdbStateStore against the conformance suite, each test in its own temp directory.
#include "store/lmdb_state_store.h"

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
  {
    auto env = lmdb::Env::open(dir / "state", 0, size_t{1} << 30, 8);
    ASSERT_TRUE(env) << env.error().message;
    auto txn = lmdb::Txn::begin(*env, false);
    ASSERT_TRUE(txn);
    auto agents = txn->open_db("agents", 0);
    ASSERT_TRUE(agents);
    ASSERT_TRUE(txn->put(*agents, "a", "not an agent record", 0, "damaging the record"));
    ASSERT_TRUE(txn->commit());
  }
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

}  // namespace
}  // namespace warden::store::test
