// The behaviour every StateStore must have, written once against the interface. An
// implementation's test file instantiates the suite with a factory for its backing:
//
//   INSTANTIATE_TEST_SUITE_P(Lmdb, StateStoreConformance,
//                            testing::Values(ConformanceBacking{"lmdb", &make_lmdb_backing}),
//                            conformance_name);
//
// The suite's TESTs live in state_store_conformance.cc; link it into that test executable.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "common/error.h"
#include "store/state_store.h"

namespace warden::store::test {

// Where one test's data lives (a temp directory, a Redis database): empty when made, removed
// when destroyed. Every handle open() returns sees the same store. A test process holds at
// most one handle at a time (LMDB forbids two environments on one directory in a process);
// the two-process test opens the second handle in a forked child.
class StoreBacking {
 public:
  virtual ~StoreBacking() = default;
  virtual Result<std::unique_ptr<StateStore>> open() = 0;
};

struct ConformanceBacking {
  std::string name;
  std::unique_ptr<StoreBacking> (*make)();
};

inline void PrintTo(const ConformanceBacking& backing, std::ostream* os) { *os << backing.name; }
inline std::string conformance_name(const testing::TestParamInfo<ConformanceBacking>& info) { return info.param.name; }

class StateStoreConformance : public testing::TestWithParam<ConformanceBacking> {
 protected:
  void SetUp() override;
  StateStore& store() { return *store_; }
  // Closes the handle and opens a new one on the same data, as a restarted process would.
  void reopen();

  std::unique_ptr<StoreBacking> backing_;
  std::unique_ptr<StateStore> store_;
};

}  // namespace warden::store::test
