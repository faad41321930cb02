// The one way Warden runs an ordinary program to completion (command agents and command
// proposers today): argv with a complete environment, a working directory and stdin bytes,
// stdout and stderr captured by poll() under byte caps, a deadline and a std::stop_token, all
// in the program's own process group. On timeout, a stop request or a stdout flood the whole
// group is killed; when the program exits, whatever it left running in its group is killed
// too, so nothing it started outlives the call (a process that leaves the group with setsid
// escapes this; confinement is the sandbox's job, runner/sandbox_process.h).
//
// Ownership: run_subprocess owns every descriptor and the child; it always reaps the child
// and closes everything before it returns. Thread safety: it may be called from several
// threads at once (SIGPIPE from a child that stops reading is blocked and absorbed on the
// calling thread only). Errors: an Error means the program could not be started (not
// found, not executable, no resources); everything the program itself did, including being
// killed, is in the SubprocessResult.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <stop_token>
#include <string>
#include <vector>

#include "common/error.h"

namespace warden {

struct SubprocessSpec {
  std::vector<std::string> argv;  // argv[0] without a '/' is looked up in PATH
  std::vector<std::string> env;   // the complete environment, "NAME=value"
  std::filesystem::path cwd;      // empty: the caller's
  std::string stdin_data;
  std::chrono::milliseconds timeout{30'000};
  size_t max_stdout = size_t{1} << 20;  // more than this kills the process group
  size_t max_stderr = size_t{64} << 10;  // more than this is read and dropped
  std::stop_token stop;  // a stop request ends the program as a timeout would
};

struct SubprocessResult {
  enum class Ending { exited, signaled, timed_out, stdout_overflow };
  Ending ending = Ending::exited;
  int exit_code = -1;  // Ending::exited
  int signal = 0;      // Ending::signaled
  std::string out;
  std::string err;
  bool err_truncated = false;
  std::chrono::milliseconds elapsed{0};
};

// Fails only when the program cannot be started (not found, not executable, no resources);
// everything the program itself does is described by the result.
Result<SubprocessResult> run_subprocess(const SubprocessSpec& spec);

}  // namespace warden
