#include "common/identifier.h"

#include <algorithm>
#include <string>

#include "common/canonical_json.h"

namespace warden {

bool is_identifier(std::string_view text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes || text[0] == '.' || text[0] == '-') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

Status check_identifier(std::string_view text, std::string_view what, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return fail(Errc::invalid_argument, std::string(what) + " is " + std::to_string(text.size()) + " bytes (at most " +
                                            std::to_string(max_bytes) + ")");
  }
  if (!is_identifier(text, max_bytes)) {
    return fail(Errc::invalid_argument, std::string(what) + " \"" + escape_invalid_utf8(text) + "\" is not a name: " +
                                            std::string(kIdentifierRule));
  }
  return {};
}

}  // namespace warden
