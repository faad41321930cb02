// Hex and base64 (RFC 4648 section 4, padded) encodings. Decoders are strict: they refuse
// anything a canonical encoder would not have produced, so one value has one spelling.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden {

std::string to_hex(std::span<const uint8_t> bytes);
std::string to_hex(std::string_view bytes);
// Lowercase hex only, even length.
Result<std::string> from_hex(std::string_view hex);

std::string base64_encode(std::span<const uint8_t> bytes);
std::string base64_encode(std::string_view bytes);
Result<std::string> base64_decode(std::string_view text);

}  // namespace warden
