// git's base85 encoding of binary patch data, written from its definition (a length
// character, then 5 characters per 4 bytes), so tests can build binary patches git would
// write. Header-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warden::test {

inline std::string git_base85_line(std::string_view bytes) {
  static constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
  std::string out(1, bytes.size() <= 26 ? static_cast<char>('A' + bytes.size() - 1) : static_cast<char>('a' + bytes.size() - 27));
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t acc = 0;
    for (size_t k = 0; k < 4; ++k) acc = (acc << 8) | (i + k < bytes.size() ? static_cast<uint8_t>(bytes[i + k]) : 0);
    char group[5];
    for (int k = 4; k >= 0; --k) {
      group[k] = kAlphabet[acc % 85];
      acc /= 85;
    }
    out.append(group, 5);
  }
  return out;
}

}  // namespace warden::test
