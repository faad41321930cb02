#include "common/canonical_json.h"

#include <gtest/gtest.h>

namespace warden {
namespace {

std::string canon(std::string_view text) {
  auto parsed = parse_json(text);
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
  auto out = canonicalize(*parsed);
  EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().message);
  return out.value_or("");
}

TEST(CanonicalJson, SortsKeysAndDropsWhitespace) {
  EXPECT_EQ(canon(R"( { "b" : [1, 2 , {"z":null,"a":true}], "a": "x" } )"), R"({"a":"x","b":[1,2,{"a":true,"z":null}]})");
}

TEST(CanonicalJson, SortsKeysByUtf16CodeUnitsAsRfc8785Example) {
  // RFC 8785 section 3.2.3: U+1F600 (a surrogate pair, D83D DE00) sorts before U+FB33,
  // although its UTF-8 bytes sort after.
  std::string in = R"({"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",)"
                   R"("1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control",)"
                   R"("\u00f6":"Latin Small Letter O With Diaeresis"})";
  std::string expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
                         "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\","
                         "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
                         "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}";
  EXPECT_EQ(canon(in), expected);
}

TEST(CanonicalJson, EscapesMinimally) {
  EXPECT_EQ(canon(R"(["\u0000\u001f\b\f\n\r\t\"\\/\u007f\u00e9"])"),
            "[\"\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\/\x7f\xc3\xa9\"]");
}

TEST(CanonicalJson, IntegersWithinTheExactRange) {
  EXPECT_EQ(canon("[0,-0,1,-1,9007199254740991,-9007199254740991]"), "[0,0,1,-1,9007199254740991,-9007199254740991]");
  auto big = parse_json("{\"n\":9007199254740992}");
  ASSERT_TRUE(big);
  auto out = canonicalize(*big);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("/n"), std::string::npos);
}

TEST(CanonicalJson, RefusesFloatsNamingThePath) {
  auto parsed = parse_json(R"({"a":{"b":[1,2.5]}})");
  ASSERT_TRUE(parsed);
  auto out = canonicalize(*parsed);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, Errc::invalid_argument);
  EXPECT_NE(out.error().message.find("floating-point"), std::string::npos);
  EXPECT_NE(out.error().message.find("/a/b/1"), std::string::npos);
  EXPECT_FALSE(canonicalize(Json(1.0)));
}

TEST(CanonicalJson, ParseRefusesDuplicateKeysBadUtf8AndGarbage) {
  auto dup = parse_json(R"({"a":1,"b":{"c":1,"c":2}})", "payload");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("duplicate object key \"c\""), std::string::npos);
  EXPECT_TRUE(parse_json(R"({"a":{"c":1},"b":{"c":2}})"));  // same key in sibling objects is fine
  EXPECT_FALSE(parse_json("{\"a\":\"\xff\"}"));
  EXPECT_FALSE(parse_json(R"(["\ud800"])"));  // lone surrogate
  auto garbage = parse_json("{\"a\":", "payload file x.json");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("payload file x.json"), std::string::npos);
  // A syntax error says where: line and column.
  auto broken = parse_json("{\n  \"a\": 1,\n}", "config.json");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("config.json is not valid JSON at line 3, column 1"), std::string::npos)
      << broken.error().message;
  EXPECT_FALSE(parse_json(""));
  EXPECT_FALSE(parse_json("[1] [2]"));
  // A duplicate after a nested value, and at the top level, where the first is an object.
  EXPECT_FALSE(parse_json(R"({"a":{"x":[1,{"y":2}]},"a":3})"));
  auto kept = parse_json(R"({"a":{"x":[1,{"y":2}]},"b":[{"a":1},{"a":2}]})");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->dump(), R"({"a":{"x":[1,{"y":2}]},"b":[{"a":1},{"a":2}]})");
}

TEST(CanonicalJson, ParseNamesAnOutOfRangeNumberAndWhereItIs) {
  auto big = parse_json("{\"a\": [1,\n  2, 1e400]}", "plan file p.json");
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, Errc::invalid_argument);
  EXPECT_EQ(big.error().message,
            "plan file p.json is not acceptable JSON: number 1e400 at line 2, column 6 is out of range "
            "(beyond a double's largest value)");
  // A number spelled inside a string before it is not the one named.
  auto after_string = parse_json(R"({"1e999": "-2e999", "b": -2e999})");
  ASSERT_FALSE(after_string);
  EXPECT_NE(after_string.error().message.find("number -2e999 at line 1, column 26"), std::string::npos)
      << after_string.error().message;
  auto digits = parse_json("[" + std::string(500, '7') + "]");
  ASSERT_FALSE(digits);
  EXPECT_NE(digits.error().message.find("number " + std::string(40, '7') + "... at line 1, column 2"), std::string::npos)
      << digits.error().message;
  // Underflow is not out of range: it reads as a float, refused where floats are.
  EXPECT_TRUE(parse_json("[1e-400]"));
}

TEST(CanonicalJson, ParseBoundsTheNumberOfValues) {
#if defined(__SANITIZE_ADDRESS__)
  // 16 million values take minutes under the sanitizers; the limit is the same code either way.
  GTEST_SKIP() << "too slow under the sanitizers; run in the main build";
#endif
  std::string many = "[0";
  many.reserve(2 * kMaxJsonValues + 2);
  for (uint64_t i = 0; i < kMaxJsonValues; ++i) many += ",0";  // one more than the limit
  many += "]";
  auto refused = parse_json(many, "report");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::limit_exceeded);
  EXPECT_EQ(refused.error().message, "report is not acceptable JSON: more than 16777216 values");
  many.resize(many.size() - 5);  // the array and its elements, the limit's worth exactly
  many += "]";
  EXPECT_TRUE(parse_json(many));
}

TEST(CanonicalJson, EscapeInvalidUtf8SpellsOnlyStrayBytes) {
  EXPECT_EQ(escape_invalid_utf8("plain \\ text \xc3\xa9"), "plain \\ text \xc3\xa9");
  EXPECT_EQ(escape_invalid_utf8("a\xff" "b\xc3"), "a\\xffb\\xc3");
  EXPECT_EQ(escape_invalid_utf8("\xc0\x80"), "\\xc0\\x80");  // overlong
  EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_TRUE(is_valid_utf8(escape_invalid_utf8(std::string("\x80\xbf\xfe\x00x", 5))));
}

TEST(CanonicalJson, ParseBoundsNesting) {
  std::string deep(10000, '[');
  deep += std::string(10000, ']');
  auto parsed = parse_json(deep);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("nesting"), std::string::npos);
  // The limit stands exactly where it always has: a value inside 256 containers, and an empty
  // container as the 257th, are the deepest accepted.
  auto nested = [](int n, std::string_view inner) { return std::string(n, '[') + std::string(inner) + std::string(n, ']'); };
  EXPECT_TRUE(parse_json(nested(256, "1")));
  EXPECT_FALSE(parse_json(nested(257, "1")));
  EXPECT_TRUE(parse_json(nested(257, "")));
  EXPECT_FALSE(parse_json(nested(258, "")));
}

TEST(CanonicalJson, SerializerRefusesInvalidUtf8BuiltInMemory) {
  Json j = {{"k", std::string("\xc0\x80")}};  // overlong encoding
  EXPECT_FALSE(canonicalize(j));
}

TEST(CanonicalJson, ParseCanonicalAcceptsOnlyCanonicalBytes) {
  EXPECT_TRUE(parse_canonical_json(R"({"a":1,"b":2})"));
  auto spaced = parse_canonical_json(R"({"a": 1,"b":2})");
  ASSERT_FALSE(spaced);
  EXPECT_NE(spaced.error().message.find("byte 5"), std::string::npos);
  EXPECT_FALSE(parse_canonical_json(R"({"b":2,"a":1})"));
  EXPECT_FALSE(parse_canonical_json(R"(["\u0041"])"));  // escaped where no escape is needed
}

}  // namespace
}  // namespace warden
