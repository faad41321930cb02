#include "kernel/run_registry.h"

#include <unistd.h>

#include "common/file.h"

namespace warden::kernel {

namespace {

std::filesystem::path pid_path(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  return ledger_dir / "runs" / (run_id + ".pid");
}

bool safe_run_id(const std::string& id) {
  return !id.empty() && id.size() <= 128 && id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == std::string::npos &&
         id != "." && id != "..";
}

}  // namespace

std::optional<RunRegistration> RunRegistration::create(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  if (!safe_run_id(run_id)) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(ledger_dir / "runs", ec);
  auto path = pid_path(ledger_dir, run_id);
  if (ec || !write_file_atomic(path, std::to_string(::getpid()) + "\n")) return std::nullopt;
  return RunRegistration(path);
}

RunRegistration::~RunRegistration() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

std::optional<pid_t> live_run_process(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  if (!safe_run_id(run_id)) return std::nullopt;
  auto text = read_file(pid_path(ledger_dir, run_id));
  if (!text) return std::nullopt;
  pid_t pid = 0;
  try {
    pid = static_cast<pid_t>(std::stol(*text));
  } catch (...) {
    return std::nullopt;
  }
  if (pid <= 1) return std::nullopt;
  // Still a warden? A recycled pid belongs to someone else.
  auto cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline || cmdline->find("warden") == std::string::npos) return std::nullopt;
  return pid;
}

}  // namespace warden::kernel
