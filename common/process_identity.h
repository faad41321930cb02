// Which process is alive, robust to pid reuse: a process is named by its pid and its start
// time (field 22 of /proc/<pid>/stat, clock ticks since boot), so a pid the kernel has since
// given to another process does not pass for the one that wrote a marker. Used by whatever
// leaves a marker for "this process owns that" (a run's registration, a scratch directory)
// and by whoever must tell a live owner from a dead one.
//
// Plain values; alive() reads /proc and is safe from any thread. Linux only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warden {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_time = 0;

  static ProcessIdentity self();
  // The identity of `pid` now; nullopt when no such process exists, it has ended (a zombie),
  // or /proc is unreadable.
  static std::optional<ProcessIdentity> of(pid_t pid);
  // "<pid>.<start time>", the form markers carry; parse() reads it back (nullopt otherwise).
  std::string str() const;
  static std::optional<ProcessIdentity> parse(std::string_view text);

  // True while this very process (same pid, same start time) exists, zombies included.
  bool alive() const;
  bool operator==(const ProcessIdentity&) const = default;
};

}  // namespace warden
