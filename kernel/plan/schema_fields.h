// Field rules the kernel's schemas share (blueprint, plan, policy): what a path, an
// identifier and a list of checks may be, and how arrays of objects are read with errors
// that name their JSON path ("plan.steps[2].targets: ..."). Pure functions; the readers
// record their first error in the JsonReader they are given (common/json_reader.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/model/check_spec.h"

namespace warden {
class JsonReader;
}

namespace warden::kernel {

// A path a blueprint or plan may name: relative, normalized, not under .git
// (diff/path_safety.h's rule). Returns why not, or an empty string.
std::string unsafe_path_reason(std::string_view path);
// Step ids, names and symbols: 1-128 of [A-Za-z0-9_.-].
bool valid_identifier(std::string_view id);
// Calls item(reader) for each object of the array `key` ("where.key[i]" in errors); nested
// errors surface through `parent`. An absent optional array calls nothing.
void for_each_object(JsonReader& parent, const std::string& key, bool required,
                     const std::function<void(JsonReader&, size_t)>& item);
// An optional array of CheckSpecs with unique names.
void read_checks(JsonReader& parent, const std::string& key, std::vector<CheckSpec>& out);

}  // namespace warden::kernel
