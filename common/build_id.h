// Which build of Warden is running: the GNU build id the linker wrote into this executable
// (a hash of its contents), read from the loaded program's notes, with no system call. Lets
// a cache keep what only this build's code derives (runner/sandbox/preflight_cache.h) without a
// version number someone must remember to bump.
#pragma once

#include <string>

namespace warden {

// The running executable's build id in lowercase hex; empty when it was linked without one.
std::string executable_build_id();

}  // namespace warden
