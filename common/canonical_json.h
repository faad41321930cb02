// Canonical JSON (RFC 8785, JCS) for everything Warden hashes: object keys sorted by UTF-16
// code units, no whitespace, minimal string escapes. Hashed objects hold integers, strings,
// booleans, null, arrays and objects only: a floating-point number is refused with the path
// to it, and so is an integer outside +-(2^53-1), which JCS could not represent exactly.
//
// Pure functions with no shared state: safe from any thread. An error always means the input
// is not acceptable (invalid_argument, or limit_exceeded for nesting deeper than 256); it
// names the JSON pointer or byte offset and retrying cannot help. nlohmann exceptions are
// caught inside and never escape.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace warden {

using Json = nlohmann::json;

// The largest integer every JCS implementation represents exactly.
inline constexpr int64_t kMaxCanonicalInteger = (int64_t{1} << 53) - 1;
inline constexpr uint64_t kMaxJsonValues = uint64_t{1} << 24;

Result<std::string> canonicalize(const Json& value);
// Appends to `out` (reused buffers keep hot paths allocation-free). On error `out` holds
// a partial serialization the caller must discard.
Status canonicalize_to(const Json& value, std::string& out);

// Strict JSON parsing: UTF-8 only, duplicate object keys refused, nesting bounded, and at
// most kMaxJsonValues values and keys (a parsed value takes 16 to 80 bytes however short
// its text: "[0,0,...]" would take eight times its size), refused as limit_exceeded; a
// number too large for a double is refused naming it and its line and column.
// `what` names the input in error messages ("payload file x.json").
Result<Json> parse_json(std::string_view text, std::string_view what = "JSON");

// Parses and checks that `text` is already in canonical form, byte for byte.
Result<Json> parse_canonical_json(std::string_view text, std::string_view what = "JSON");

// Well-formed UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
bool is_valid_utf8(std::string_view text);

// `text` with every byte that is not part of well-formed UTF-8 spelled "\xNN": for quoting
// untrusted bytes in messages and refusals, which are recorded and printed as JSON strings
// and so must be UTF-8. Valid UTF-8 comes back unchanged.
std::string escape_invalid_utf8(std::string_view text);

// Appends `text` as a JCS string literal (quotes included). Fails on invalid UTF-8.
Status append_json_string(std::string_view text, std::string& out);

}  // namespace warden
