#include "common/case_fold.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace warden {
namespace {

struct Folding {
  char32_t from;
  char32_t to[3];  // unused places are 0
};

constexpr Folding kFoldings[] = {
#include "common/case_fold_table.inc"
};

static_assert(std::is_sorted(std::begin(kFoldings), std::end(kFoldings),
                             [](const Folding& a, const Folding& b) { return a.from < b.from; }));

// Decodes one UTF-8 sequence at text[i]; 0 when it is not a valid one (overlong forms,
// surrogates and values past U+10FFFF included).
size_t decode(std::string_view text, size_t i, char32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  size_t len;
  char32_t min;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void encode(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string fold_case(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    size_t len = decode(text, i, cp);
    if (len == 0) {
      out += text[i++];
      continue;
    }
    i += len;
    if (cp >= 'A' && cp <= 'Z') {  // the common case, without a search
      out += static_cast<char>(cp - 'A' + 'a');
      continue;
    }
    auto it = std::lower_bound(std::begin(kFoldings), std::end(kFoldings), cp,
                               [](const Folding& f, char32_t c) { return f.from < c; });
    if (it == std::end(kFoldings) || it->from != cp) {
      encode(cp, out);
      continue;
    }
    for (char32_t to : it->to) {
      if (to != 0) encode(to, out);
    }
  }
  return out;
}

}  // namespace warden
