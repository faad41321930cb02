#include "tools/warden/working_line.h"

#include <unistd.h>

#include <string>

namespace warden::cli {

kernel::WorkingListener working_lines() {
  return [](const kernel::WorkingNotice& n) {
    const int64_t s = n.elapsed.count();
    if (s > 3 && s % 5 != 0) return;
    const char* doing = n.what == "executor" ? " working… " : " running… ";
    std::string line = "  [" + std::to_string(n.step_index + 1) + "/" + std::to_string(n.steps_total) + "] " + n.step_id +
                       ": " + n.what + doing + std::to_string(s) + "s\n";
    // stderr is unbuffered: one write(2) per line keeps it whole beside the build's stdout.
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  };
}

}  // namespace warden::cli
