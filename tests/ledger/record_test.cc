#include "ledger/record.h"

#include <gtest/gtest.h>

#include "ledger/merkle.h"

namespace warden {
namespace {

Record sample() {
  Record r;
  r.seq = 7;
  r.kind = "proposal";
  r.prev = sha256("previous");
  r.ts = 1700000000123;
  r.payload = R"({"a":[1,"x"],"b":null})";
  return r;
}

TEST(Record, CanonicalBytesAreJcsWithSortedKeys) {
  Record r = sample();
  std::string expected = R"({"kind":"proposal","payload":{"a":[1,"x"],"b":null},"prev":")" + r.prev.str() +
                         R"(","seq":7,"ts":1700000000123})";
  EXPECT_EQ(r.canonical_bytes(), expected);
  EXPECT_EQ(*canonicalize(r.to_json()), expected);  // an independent serializer agrees
  EXPECT_EQ(r.hash(), leaf_hash(expected));
}

TEST(Record, StoredFormRoundTrips) {
  Record r = sample();
  r.ts = -5;
  std::string stored;
  r.encode_stored(stored);
  auto back = Record::decode_stored(r.seq, stored);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->canonical_bytes(), r.canonical_bytes());
  EXPECT_FALSE(Record::decode_stored(7, stored.substr(0, 20)));
  stored[0] = 9;
  EXPECT_EQ(Record::decode_stored(7, stored).error().code, Errc::corrupt);
}

TEST(Record, FromCanonicalAcceptsOnlyWellFormedCanonicalRecords) {
  Record r = sample();
  auto back = Record::from_canonical(r.canonical_bytes());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->canonical_bytes(), r.canonical_bytes());
  std::string spaced = r.canonical_bytes();
  spaced.insert(1, " ");
  EXPECT_FALSE(Record::from_canonical(spaced));
  EXPECT_FALSE(Record::from_canonical(R"({"kind":"x","payload":{},"prev":"sha256:00","seq":0,"ts":0})"));
  EXPECT_FALSE(Record::from_canonical(R"({"kind":"x","payload":[],"prev":"sha256:)" + std::string(64, '0') +
                                      R"(","seq":0,"ts":0})"));
  EXPECT_FALSE(Record::from_canonical(R"({"extra":1,"kind":"x","payload":{},"prev":"sha256:)" + std::string(64, '0') +
                                      R"(","seq":0,"ts":0})"));
}

TEST(Record, KindsAreRestricted) {
  EXPECT_TRUE(validate_kind("run_result"));
  EXPECT_TRUE(validate_kind("a.b-c_9"));
  EXPECT_FALSE(validate_kind(""));
  EXPECT_FALSE(validate_kind("Upper"));
  EXPECT_FALSE(validate_kind("with space"));
  EXPECT_FALSE(validate_kind("quote\""));
  EXPECT_FALSE(validate_kind(std::string(65, 'a')));
}

}  // namespace
}  // namespace warden
