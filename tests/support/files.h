// Whole-file reads and writes for tests; failures throw, so a broken fixture cannot pass
// silently.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace warden::test {

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, std::string_view bytes);
// Lines without their '\n'; a trailing line with no newline is dropped (a torn write).
std::vector<std::string> complete_lines(std::string_view text);
// Copies a directory tree (a ledger or an export) so each tampering gets its own copy.
void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace warden::test
