// The one way Warden watches a program run: every child process Warden starts (a command
// agent's, a command proposer's, a sandboxed command's) is driven to its end by drive().
//
// drive() takes a started child (a ChildProcess: whoever started it knows how to stop its
// whole group and reap it) and the parent's ends of its pipes, and polls them (and the
// child's pidfd when there is one) until the child has been reaped and both output pipes are
// at EOF. Bytes go to a StreamSink per stream as they arrive; a deadline, a std::stop_token
// or a sink reporting its stream over its limit makes it stop() the child's group, after
// which (as after a normal exit) the pipes have a grace period to reach EOF. How the child
// was started (posix_spawn in its own process group here; bwrap under a reaper with a uid
// drop, overlay and seccomp in runner/sandbox/sandbox_process.h) is the starter's business.
//
// run_subprocess() is the ordinary case built on it: argv with a complete environment, a
// working directory and stdin bytes, stdout and stderr captured under byte caps, all in the
// program's own process group. On timeout, a stop request or a stdout flood the whole group
// is killed; when the program exits, whatever it left running in its group is killed too,
// so nothing it started outlives the call (a process that leaves the group with setsid
// escapes this; confinement is the sandbox's job, runner/sandbox/sandbox_process.h).
//
// Ownership: drive() borrows the child (it calls stop() and reap(), never destroys it) and
// owns the descriptors it is given, closing them before it returns; run_subprocess owns
// every descriptor and the child and always reaps it and closes everything before it
// returns. Thread safety: both may be called from several threads at once on distinct
// children; a sink is called on the calling thread only (SIGPIPE from a child that stops
// reading its stdin is blocked and absorbed on the calling thread only).
// Errors: an Error from run_subprocess means the program could not be started (not found,
// not executable, no resources); from drive() that poll() itself failed (the child is left
// to its owner, who kills and reaps it). Everything the program did, including being
// killed, is in the outcome.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file.h"

namespace warden {

// A started child as drive() sees it. Implementations own the process; drive() only asks.
class ChildProcess {
 public:
  virtual ~ChildProcess() = default;
  // Readable (POLLIN) once the child has exited; -1 when pidfds are unavailable (drive()
  // then asks exited() every 10 ms).
  virtual int pidfd() const = 0;
  // True once the child has exited (it stays unreaped until reap()).
  virtual bool exited() = 0;
  // Kills the child and everything it started (its process group, its sandbox). Called at
  // most once by drive(), only before reap(); must not block.
  virtual void stop() = 0;
  // Reaps the exited child and returns its wait status. Called once, after exited().
  virtual int reap() = 0;
};

// Where one stream's bytes go. `take` is called with every chunk read, in order; it returns
// false once the stream has passed its limit, and drive() then stops the child
// (DriveOutcome::overflow) but keeps reading (and passing on) what is left, so no writer
// blocks on a full pipe while it dies. Empty: the bytes are read and dropped.
struct StreamSink {
  std::function<bool(std::string_view)> take;
};

// The parent's ends of the child's standard streams; drive() makes them non-blocking.
struct ChildPipes {
  UniqueFd in;               // empty when the child's stdin is not ours to write
  std::string_view in_data;  // written to `in`, which is then closed so the child sees EOF
  UniqueFd out, err;
};

struct DriveOptions {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();   // the deadline and the duration count from here
  std::chrono::milliseconds timeout{30'000};
  std::stop_token stop;  // a stop request stops the child (DriveOutcome::cancelled)
  // After the child exits or is stopped, how long its pipes may stay open (and a stopped
  // child may take to exit) before drive() gives up on them (DriveOutcome::outlived).
  std::chrono::milliseconds grace{5'000};
  StreamSink out, err;
};

struct DriveOutcome {
  // Why the run ended: on its own, or the reason drive() stopped it (the first one found).
  enum class Ending { exited, timed_out, cancelled, overflow };
  Ending ending = Ending::exited;
  // A sink reported its stream over its limit, whether or not that is what ended the run
  // (output can arrive after a timeout or an exit).
  bool overflow = false;
  // The grace period ran out with a pipe still open or the child not yet exited: some
  // process outlived the child that was supposed to take everything with it. The caller
  // decides whether that is an error (the sandbox's) or just the end of the output.
  bool outlived = false;
  std::optional<int> wait_status;  // set once reaped (always, unless outlived)
  std::chrono::milliseconds elapsed{0};  // from options.start to the end
};

// Drives `child` to its end as described at the top of this file.
Result<DriveOutcome> drive(ChildProcess& child, ChildPipes pipes, const DriveOptions& options);

struct SubprocessSpec {
  std::vector<std::string> argv;  // argv[0] without a '/' is looked up in PATH
  std::vector<std::string> env;   // the complete environment, "NAME=value"
  std::filesystem::path cwd;      // empty: the caller's
  std::string stdin_data;
  std::chrono::milliseconds timeout{30'000};
  size_t max_stdout = size_t{1} << 20;  // more than this kills the process group
  size_t max_stderr = size_t{64} << 10;  // more than this is read and dropped
  std::stop_token stop;  // a stop request ends the program as a timeout would
  // When set, stdout and stderr go here as they arrive, from the calling thread, and are
  // neither captured nor capped (max_stdout does not apply): a long-lived program's log.
  std::function<void(std::string_view)> output;
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

// Fails only when the program cannot be started (not found, not executable, no resources)
// or poll() fails; everything the program itself does is described by the result.
Result<SubprocessResult> run_subprocess(const SubprocessSpec& spec);

}  // namespace warden
