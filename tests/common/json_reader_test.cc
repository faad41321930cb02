#include "common/json_reader.h"

#include <gtest/gtest.h>

namespace warden {
namespace {

std::string message(const Status& st) { return st ? std::string("ok") : st.error().message; }

TEST(JsonReader, ReadsTypedFieldsAndRefusesUnknownOnes) {
  Json j = {{"name", "x"}, {"n", 3}, {"on", true}, {"list", {"a", "b"}}, {"extra", 1}};
  JsonReader r(j, "thing");
  std::string name;
  int64_t n = 0;
  bool on = false;
  std::vector<std::string> list;
  r.string("name", name);
  r.integer("n", n, 0, 10);
  r.boolean("on", on);
  r.strings("list", list);
  EXPECT_EQ(name, "x");
  EXPECT_EQ(n, 3);
  EXPECT_TRUE(on);
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(message(r.finish()), "thing.extra: unknown field");
}

TEST(JsonReader, KeepsTheFirstError) {
  Json j = {{"n", 11}, {"s", 1}};
  JsonReader r(j, "thing");
  int64_t n = 0;
  std::string s;
  r.integer("n", n, 0, 10);
  r.string("s", s);
  r.string("absent", s);
  EXPECT_EQ(message(r.finish()), "thing.n: must be between 0 and 10");
  EXPECT_EQ(n, 0);
}

TEST(JsonReader, NullIsAValueInTheRecordDialect) {
  Json j = {{"s", nullptr}, {"maybe", nullptr}};
  JsonReader r(j, "rec");
  std::optional<std::string> maybe;
  r.nullable_string("maybe", maybe);
  EXPECT_FALSE(maybe);
  EXPECT_TRUE(r.has("s"));
  std::string s;
  r.string("s", s);
  EXPECT_EQ(message(r.finish()), "rec.s: must be a string");

  const Json empty = Json::object();
  JsonReader missing(empty, "rec");
  bool b = false;
  missing.boolean("flag", b);
  EXPECT_EQ(message(missing.finish()), "rec.flag: missing");
}

TEST(JsonReader, NullIsAbsentInTheConfigDialect) {
  Json j = {{"s", nullptr}, {"flag", "yes"}};
  JsonReader r(j, "cfg", JsonDialect::null_is_absent);
  EXPECT_FALSE(r.has("s"));
  EXPECT_EQ(r.string_or("s", "fallback"), "fallback");
  EXPECT_FALSE(r.boolean_or("flag", false));
  EXPECT_EQ(message(r.finish()), "cfg.flag: must be true or false");

  const Json none = Json::object();
  JsonReader required(none, "cfg", JsonDialect::null_is_absent);
  EXPECT_EQ(required.integer("n", 5, 9), 5);
  EXPECT_EQ(message(required.finish()), "cfg.n: is required");
}

TEST(JsonReader, ChildrenReportIntoTheParentWithTheParentsCode) {
  Json j = {{"stages", {{{"name", "a"}}, {{"name", 2}}}}};
  JsonReader r(j, "", JsonDialect::null_is_absent, Errc::corrupt);
  const Json& stages = r.array("stages");
  for (size_t i = 0; i < stages.size(); ++i) {
    JsonReader s = r.element("stages", stages, i);
    s.string("name");
    EXPECT_TRUE(s.finish().has_value() == (i == 0));
  }
  auto st = r.finish();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::corrupt);
  EXPECT_EQ(st.error().message, "stages[1].name: must be a string");
}

TEST(JsonReader, RefusesANonObject) {
  const Json array = Json::array();
  EXPECT_EQ(message(JsonReader(array, "thing").finish()), "thing: must be a JSON object");
  EXPECT_EQ(message(JsonReader(array, "").finish()), "must be a JSON object");
}

TEST(JsonReader, DigestsAndMaps) {
  Json j = {{"d", "sha256:00"}, {"m", {{"k", 1}}}};
  JsonReader r(j, "x");
  Digest d;
  r.digest("d", d);
  EXPECT_EQ(message(r.finish()), "x.d: must be sha256:<64 lowercase hex>");
  JsonReader m(j, "x", JsonDialect::null_is_absent);
  m.get("d");
  m.string_map("m");
  EXPECT_EQ(message(m.finish()), "x.m.k: must be a string");
}

TEST(CheckCanonicalNumbers, NamesTheFirstBadNumber) {
  EXPECT_TRUE(check_canonical_numbers(Json{{"a", {1, 2}}}, "out"));
  EXPECT_EQ(message(check_canonical_numbers(Json{{"a", {1, 2.5}}}, "out")),
            "out: floating-point number at /a/1 (recorded JSON holds integers only; use an integer or a string)");
  EXPECT_EQ(message(check_canonical_numbers(Json{{"big", int64_t{1} << 60}}, "out")),
            "out: integer at /big is outside +-(2^53-1)");
}

}  // namespace
}  // namespace warden
