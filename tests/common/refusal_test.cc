#include "common/refusal.h"

#include <gtest/gtest.h>

#include "common/exit_codes.h"

namespace warden {
namespace {

TEST(RefusalCode, NamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(RefusalCode::executor_failed); ++i) {
    auto code = static_cast<RefusalCode>(i);
    std::string_view name = refusal_code_name(code);
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(parse_refusal_code(name), code) << name;
  }
  EXPECT_EQ(parse_refusal_code("no_such_code"), std::nullopt);
  EXPECT_EQ(parse_refusal_code(""), std::nullopt);
}

TEST(RefusalCode, RecordedSpellingsNeverChange) {
  // These names are in ledgers and goldens.
  EXPECT_EQ(refusal_code_name(RefusalCode::hash_mismatch), "hash_mismatch");
  EXPECT_EQ(refusal_code_name(RefusalCode::path_traversal), "path_traversal");
  EXPECT_EQ(refusal_code_name(RefusalCode::malformed_patch), "malformed_patch");
  EXPECT_EQ(refusal_code_name(RefusalCode::path_case_collision), "path_case_collision");
  EXPECT_EQ(refusal_code_name(RefusalCode::sandbox_unavailable), "sandbox_unavailable");
  EXPECT_EQ(refusal_code_name(RefusalCode::executor_timeout), "executor_timeout");
  EXPECT_EQ(refusal_code_name(RefusalCode::executor_failed), "executor_failed");
}

TEST(Refusal, MessageNamesCodePathAndDetail) {
  EXPECT_EQ((Refusal{RefusalCode::path_traversal, "a/../b", "leaves"}).message(), "path_traversal (a/../b): leaves");
  EXPECT_EQ((Refusal{RefusalCode::malformed_patch, "", ""}).message(), "malformed_patch");
}

TEST(ExitCodes, OneMappingForRefusalsAndErrors) {
  EXPECT_EQ(exit_code_for(RefusalCode::malformed_patch), 3);
  EXPECT_EQ(exit_code_for(RefusalCode::invalid_check), 3);
  EXPECT_EQ(exit_code_for(RefusalCode::revision_not_found), 4);
  EXPECT_EQ(exit_code_for(RefusalCode::sandbox_unavailable), 5);
  EXPECT_EQ(exit_code_for(RefusalCode::repository_error), 5);
  EXPECT_EQ(exit_code_for(RefusalCode::hash_mismatch), 1);
  EXPECT_EQ(exit_code_for(RefusalCode::path_traversal), 1);
  EXPECT_EQ(exit_code_for(Errc::corrupt), 1);
  EXPECT_EQ(exit_code_for(Errc::invalid_argument), 3);
  EXPECT_EQ(exit_code_for(Errc::not_found), 4);
  EXPECT_EQ(exit_code_for(Errc::io_error), 5);
  EXPECT_EQ(exit_code_for(Errc::already_exists), 6);
  EXPECT_EQ(exit_code_for(Errc::internal), 70);
}

}  // namespace
}  // namespace warden
