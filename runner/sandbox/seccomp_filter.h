// Compiles a profile's SeccompPolicy into the classic-BPF program bwrap loads with
// `--seccomp FD` right before it executes the command. libseccomp does the compiling: the
// filter checks the architecture (a foreign-ABI system call kills the process), denies the
// named calls with the profile's errno, denies socket() for the named families, refuses
// clone() with namespace flags and answers clone3() with ENOSYS so libc falls back to clone().
#pragma once

#include <string>

#include "common/error.h"
#include "runner/model/sandbox_profile.h"

namespace warden {

// The BPF program as bwrap expects it on the descriptor: an array of struct sock_filter.
// Unknown system call or socket family names are refused, naming them.
Result<std::string> compile_seccomp(const SeccompPolicy& policy);

}  // namespace warden
