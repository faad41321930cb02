// Warden's unittest reporter: a sitecustomize module that makes a `python -m unittest` run name
// every test it ends on stderr, in -v's format ("test_x (pkg.mod.Class.test_x) ... ok"), whatever
// verbosity the command asks for. A check whose spec says unittest_reporter gets it as a
// read-only file at kUnittestReporterDir/sitecustomize.py with that directory first on
// PYTHONPATH; the command itself runs as the user wrote it. The module raises the verbosity of
// unittest's TextTestRunner only when the interpreter was started as `-m unittest`, then runs
// the interpreter's own sitecustomize (one under /usr), if there is one.
//
// What it does not change: the tested code shares the process and its stderr, as with -v
// itself (docs/threat-model.md).
#pragma once

#include <string_view>

#include "common/error.h"
#include "common/file.h"

namespace warden {

inline constexpr std::string_view kUnittestReporterDir = "/warden/python";

// The module's source.
std::string_view unittest_reporter_source();

// A sealed memfd holding the module, at offset 0, for SandboxRequest::files.
Result<UniqueFd> unittest_reporter_file();

}  // namespace warden
