// The "still working" lines `warden build` and `warden propose` print on stderr while an
// executor or the checks run past a second (kernel/build/work_ticker.h): `  [2/5] s2: executor
// working… 3s` after 1, 2 and 3 seconds and then every 5, so a slow step is seen to be alive
// without flooding a log. Not in --json mode: those notices are not events and are never
// recorded.
#pragma once

#include "kernel/build/work_ticker.h"

namespace warden::cli {

// A listener that prints each notice as one line on stderr (one write, so lines from the
// ticker's thread never tear).
kernel::WorkingListener working_lines();

}  // namespace warden::cli
