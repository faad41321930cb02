// Running real child processes from integration tests: fork/exec with stdin, stdout and
// stderr on pipes, an optional stdin string, optional uid/gid to drop to, and a handle that
// never leaks a child or a descriptor (the destructor SIGKILLs and reaps a live child).
// Running to completion (wait(), run()) is common/subprocess.h's drive(), as for every other
// child Warden starts. What stays here is what drive() deliberately does not do: pump() reads
// for a while and leaves the child running, kill() sends any signal to the child alone (crash
// tests), and spawning inherits the test's environment, execs argv[0] as a path and may drop
// to another uid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/file.h"

namespace warden::test {

using warden::UniqueFd;


struct SpawnOptions {
  std::optional<std::string> stdin_data;  // closed stdin (EOF) when absent
  // Drop to this identity in the child before exec (needs root). Root ignores permission
  // bits, so tests that need a permission failure run the binary as someone else.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
};

struct ProcessResult {
  int exit_code = -1;    // valid when the child exited normally
  int term_signal = 0;   // non-zero when a signal ended it
  std::string out, err;  // everything it wrote

  bool exited_with(int code) const { return term_signal == 0 && exit_code == code; }
  // "exit 3" / "signal 9", for assertion messages.
  std::string status() const;
};

// A running child. Move-only; the destructor SIGKILLs and reaps a child that is still
// running, so a failed ASSERT never leaves a stray process behind.
class Child {
 public:
  // Throws std::runtime_error if the pipes or fork fail, or if exec fails (the child reports
  // exec's errno through a close-on-exec pipe, so "cannot exec" is not mistaken for an exit).
  static Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  Child(Child&&) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // Output read so far (pump() and wait() append to it).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Feeds stdin and collects output until `deadline`, or until all pipes reach EOF. Draining
  // as we go matters: a child blocked on a full pipe would not be doing what we measure.
  void pump(std::chrono::steady_clock::time_point deadline);
  // True while any of the child's pipes is still open (it may still produce output).
  bool output_open() const { return pipes_open(); }
  void kill(int signal);
  // Drains every pipe to EOF, reaps the child and returns its status and all its output.
  ProcessResult wait();

 private:
  Child() = default;
  bool pipes_open() const { return in_ || out_fd_ || err_fd_; }
  // One poll() round: false when nothing is left to do before `timeout_ms`.
  bool pump_once(int timeout_ms);

  pid_t pid_ = -1;
  UniqueFd in_, out_fd_, err_fd_;
  std::string stdin_data_;
  size_t stdin_written_ = 0;
  std::string out_, err_;
};

// Spawns, feeds stdin, waits and collects.
ProcessResult run(const std::vector<std::string>& argv, const SpawnOptions& options = {});

}  // namespace warden::test
