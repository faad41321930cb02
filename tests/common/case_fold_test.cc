// Unicode case folding (full, CaseFolding.txt C+F): ASCII, the letters whose folding is not
// their lowercase (ẞ/ß, final sigma, the Kelvin sign), other scripts, and bytes that are not
// UTF-8.
#include "common/case_fold.h"

#include <gtest/gtest.h>

namespace warden {
namespace {

TEST(CaseFold, Ascii) {
  EXPECT_EQ(fold_case(".ENV"), ".env");
  EXPECT_EQ(fold_case("Key.PEM"), "key.pem");
  EXPECT_EQ(fold_case("already lower 123/_-"), "already lower 123/_-");
}

TEST(CaseFold, LettersBeyondAscii) {
  EXPECT_EQ(fold_case("\u1E9E"), "ss");         // ẞ LATIN CAPITAL LETTER SHARP S (full folding)
  EXPECT_EQ(fold_case("\u00DF"), "ss");         // ß
  EXPECT_EQ(fold_case("STRASSE"), fold_case("stra\u00DFe"));
  EXPECT_EQ(fold_case("\u03A3"), "\u03C3");     // Σ -> σ
  EXPECT_EQ(fold_case("\u03C2"), "\u03C3");     // ς -> σ
  EXPECT_EQ(fold_case("\u212A"), "k");          // KELVIN SIGN
  EXPECT_EQ(fold_case("\u212Aey.pem"), "key.pem");
  EXPECT_EQ(fold_case("\u0414\u0410\u041D\u041D\u042B\u0415"), "\u0434\u0430\u043D\u043D\u044B\u0435");  // ДАННЫЕ
  EXPECT_EQ(fold_case("\u0130"), "i\u0307");    // İ: full folding, not the Turkic one
  EXPECT_EQ(fold_case("\U00010400"), "\U00010428");  // DESERET CAPITAL LONG I (four bytes)
  EXPECT_EQ(fold_case("\u00E9\u4E2D"), "\u00E9\u4E2D");  // no folding: kept
}

TEST(CaseFold, IsIdempotent) {
  for (const char* s : {"\u1E9E", "\u0130", "\u212A", "\u03A3\u03C2", "\u1F88", "\uFB03"}) {
    std::string once = fold_case(s);
    EXPECT_EQ(fold_case(once), once) << s;
  }
}

TEST(CaseFold, BytesThatAreNotUtf8AreKept) {
  EXPECT_EQ(fold_case(std::string("A\xff" "B\xc3", 4)), std::string("a\xff" "b\xc3", 4));
  EXPECT_EQ(fold_case(std::string("\xc0\x81", 2)), std::string("\xc0\x81", 2));  // overlong
  EXPECT_EQ(fold_case(std::string("\xed\xa0\x80", 3)), std::string("\xed\xa0\x80", 3));  // a surrogate
}

}  // namespace
}  // namespace warden
