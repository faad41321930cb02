// Which process drives a run: while a build runs, <ledger>/runs/<run id>.pid holds its pid,
// so `warden run cancel` can reach it from another shell and `warden run status` can tell a
// live run from one whose process died. The file is removed when the run's process is done
// with it; a stale file (a killed process) is recognized by the pid no longer being a warden.
//
// A RunRegistration owns its pid file: the destructor removes it, moving transfers it.
// create() returns nullopt (no reason given) for an unsafe run id or a file it cannot write;
// a build goes on without one, it just cannot be cancelled from another shell. The file is
// written with write_file_atomic (durable), and a second registration of the same run id
// overwrites the first. "Still a warden" is judged by the process's command line containing
// "warden", so a recycled pid of another process with that word is taken as live.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/error.h"

namespace warden::kernel {

class RunRegistration {
 public:
  static std::optional<RunRegistration> create(const std::filesystem::path& ledger_dir, const std::string& run_id);
  RunRegistration(RunRegistration&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  RunRegistration& operator=(RunRegistration&&) = delete;
  ~RunRegistration();

 private:
  explicit RunRegistration(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// The live warden process driving `run_id`, if there is one.
std::optional<pid_t> live_run_process(const std::filesystem::path& ledger_dir, const std::string& run_id);

}  // namespace warden::kernel
