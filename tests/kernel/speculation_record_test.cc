// The speculation record: a merge queue's run no decision used, for auditors. It reads back
// exactly, and strictly: a record that does not is evidence of tampering or of a bug.
#include <gtest/gtest.h>

#include "kernel/record/records.h"

namespace warden::kernel {
namespace {

SpeculationRecord sample() {
  SpeculationRecord s;
  s.run_id = "run-1";
  s.step_id = "s4";
  s.attempt = 1;
  s.run = "checks";
  s.base_tree = std::string(40, 'a');
  s.tree = std::string(40, 'b');
  s.diff_sha256 = Digest::parse("sha256:" + std::string(64, 'c')).value();
  s.reason = "built on s3 attempt 1, which was refused";
  return s;
}

TEST(SpeculationRecord, RoundTrips) {
  const SpeculationRecord s = sample();
  auto back = SpeculationRecord::from_json(s.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->to_json(), s.to_json());
  SpeculationRecord base = s;
  base.run = "base";
  base.diff_sha256.reset();
  auto base_back = SpeculationRecord::from_json(base.to_json());
  ASSERT_TRUE(base_back) << base_back.error().message;
  EXPECT_FALSE(base_back->diff_sha256);
  EXPECT_FALSE(base.to_json().contains("diff_sha256"));
}

TEST(SpeculationRecord, ReadsStrictly) {
  for (auto [field, value] : std::vector<std::pair<std::string, Json>>{{"run", "tests"},
                                                                        {"attempt", 0},
                                                                        {"reason", ""},
                                                                        {"diff_sha256", "sha256:xyz"},
                                                                        {"ran", true}}) {
    Json j = sample().to_json();
    j[field] = value;
    auto r = SpeculationRecord::from_json(j);
    ASSERT_FALSE(r) << field;
    EXPECT_NE(r.error().message.find("speculation record." + field), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace warden::kernel
