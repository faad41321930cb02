// LmdbStateStore against the conformance suite, each test in its own temp directory.
#include "store/lmdb_state_store.h"

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

}  // namespace
}  // namespace warden::store::test
