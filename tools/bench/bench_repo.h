// The repositories the benchmarks measure against: `files` files of 20 distinct lines in two
// directory levels, built in one `git fast-import` commit on refs/heads/main, and a patch
// changing three files far apart in the tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace warden::bench {

// Runs argv (searched on PATH) with stdin and stdout redirected to files ("": /dev/null);
// a failure to start or a non-zero exit ends the benchmark with status 2.
void run_command(const std::vector<std::string>& argv, const std::string& in = "", const std::string& out = "");

std::string repo_file_path(uint64_t i);
void make_repo(const std::filesystem::path& dir, uint64_t files);
// Line 10 of files 0, files/2 and files-1, as a git diff.
std::string make_patch(uint64_t files);

}  // namespace warden::bench
