#include "tools/bench/bench_repo.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

extern char** environ;

namespace warden::bench {
namespace {

std::string file_content(uint64_t i) {
  std::string s;
  for (int k = 1; k <= 20; ++k) s += "file " + std::to_string(i) + " line " + std::to_string(k) + "\n";
  return s;
}

}  // namespace

void run_command(const std::vector<std::string>& argv, const std::string& in, const std::string& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.empty() ? "/dev/null" : in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.empty() ? "/dev/null" : out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    std::cerr << "bench: command failed: " << cmd << "\n";
    std::exit(2);
  }
}

std::string repo_file_path(uint64_t i) {
  return "d" + std::to_string(i / 1024) + "/e" + std::to_string(i / 32 % 32) + "/f" + std::to_string(i) + ".txt";
}

void make_repo(const std::filesystem::path& dir, uint64_t files) {
  run_command({"git", "init", "-q", dir.string()});
  std::filesystem::path stream = dir / "import.stream";
  {
    std::ofstream out(stream, std::ios::binary);
    out << "commit refs/heads/main\ncommitter Bench <bench@localhost> 1700000000 +0000\ndata 4\nbase\n";
    for (uint64_t i = 0; i < files; ++i) {
      std::string content = file_content(i);
      out << "M 100644 inline " << repo_file_path(i) << "\ndata " << content.size() << "\n" << content << "\n";
    }
  }
  run_command({"git", "-C", dir.string(), "fast-import", "--quiet"}, stream.string());
  std::filesystem::remove(stream);
  run_command({"git", "-C", dir.string(), "symbolic-ref", "HEAD", "refs/heads/main"});
}

std::string make_patch(uint64_t files) {
  std::string patch;
  for (uint64_t i : {uint64_t{0}, files / 2, files - 1}) {
    std::string p = repo_file_path(i), n = std::to_string(i);
    patch += "diff --git a/" + p + " b/" + p + "\n--- a/" + p + "\n+++ b/" + p + "\n@@ -8,5 +8,5 @@\n";
    patch += " file " + n + " line 8\n file " + n + " line 9\n-file " + n + " line 10\n+file " + n +
             " line 10, changed\n file " + n + " line 11\n file " + n + " line 12\n";
  }
  return patch;
}

}  // namespace warden::bench
