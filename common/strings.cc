#include "common/strings.h"

#include <cctype>

namespace warden {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (true) {
    size_t next = text.find(separator, at);
    if (next == std::string_view::npos) {
      out.push_back(text.substr(at));
      return out;
    }
    out.push_back(text.substr(at, next - at));
    at = next + 1;
  }
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

}  // namespace warden
