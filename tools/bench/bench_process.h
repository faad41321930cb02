// Running a program from a benchmark: its wall time, with a failure to start or an unexpected
// exit status ending the benchmark (exit 2, naming the program). Header-only; each benchmark
// is one executable.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace warden::bench {

inline std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

// Runs argv in `cwd`; returns its wall time in ms, and its stdout in `out` when given.
inline double timed(const std::vector<std::string>& argv, const std::filesystem::path& cwd, int want = 0,
                    std::string* out = nullptr) {
  SubprocessSpec spec;
  spec.argv = argv;
  spec.env = environment();
  spec.cwd = cwd;
  spec.timeout = std::chrono::minutes(5);
  const auto start = std::chrono::steady_clock::now();
  auto r = run_subprocess(spec);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!r) {
    std::cerr << "bench: " << argv[0] << ": " << r.error().message << "\n";
    std::exit(2);
  }
  if (r->exit_code != want) {
    std::cerr << "bench: " << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << " exited " << r->exit_code << ", wanted "
              << want << "\n"
              << r->out << r->err;
    std::exit(2);
  }
  if (out) *out = r->out;
  return ms;
}

}  // namespace warden::bench
