#include "common/strings.h"

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

}  // namespace warden
