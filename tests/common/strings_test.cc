#include "common/strings.h"

#include <gtest/gtest.h>

namespace warden {
namespace {

using Parts = std::vector<std::string_view>;

TEST(SplitPath, KeepsEveryComponentIncludingEmptyOnes) {
  EXPECT_EQ(split_path("a/b/c"), (Parts{"a", "b", "c"}));
  EXPECT_EQ(split_path("a"), (Parts{"a"}));
  EXPECT_EQ(split_path(""), (Parts{""}));
  EXPECT_EQ(split_path("/a"), (Parts{"", "a"}));
  EXPECT_EQ(split_path("a/"), (Parts{"a", ""}));
  EXPECT_EQ(split_path("a//../b"), (Parts{"a", "", "..", "b"}));
}

TEST(Split, AnySeparator) {
  EXPECT_EQ(split("output.score.value", '.'), (Parts{"output", "score", "value"}));
  EXPECT_EQ(split("a..b", '.'), (Parts{"a", "", "b"}));
}

}  // namespace
}  // namespace warden
