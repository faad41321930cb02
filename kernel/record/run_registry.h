// Which process drives a run: while a build runs, <ledger>/runs/<run id>.pid names its
// process (ProcessIdentity: pid and start time, so a reused pid never passes for it), so
// `warden run cancel` can reach it from another shell, `warden run status` can tell a live run
// from one whose process died, and the next process to open the ledger can record a dead
// run's end (run_recovery.h).
//
// A RunRegistration owns its marker. ended() says the run's terminal state is durable in the
// ledger; only then does the destructor remove the marker. A process that dies, or fails to
// record its run's end (a full disk), leaves the marker behind: that is how the run is found
// and recorded `interrupted` later. create() returns nullopt (no reason given) for an unsafe
// run id or a file it cannot write; a build goes on without one, it just cannot be cancelled
// from another shell or recovered by its marker. Moving transfers the marker.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace warden::kernel {

class RunRegistration {
 public:
  static std::optional<RunRegistration> create(const std::filesystem::path& ledger_dir, const std::string& run_id);
  RunRegistration(RunRegistration&& other) noexcept : path_(std::move(other.path_)), ended_(other.ended_) {
    other.path_.clear();
  }
  RunRegistration& operator=(RunRegistration&&) = delete;
  ~RunRegistration();

  void ended() { ended_ = true; }

 private:
  explicit RunRegistration(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
  bool ended_ = false;
};

// The live process driving `run_id`, if there is one.
std::optional<pid_t> live_run_process(const std::filesystem::path& ledger_dir, const std::string& run_id);
// The runs whose marker outlived their process, sorted by id.
std::vector<std::string> orphaned_runs(const std::filesystem::path& ledger_dir);
// Removes the marker of a run whose end has been recorded (by recovery).
void remove_run_marker(const std::filesystem::path& ledger_dir, const std::string& run_id);

}  // namespace warden::kernel
