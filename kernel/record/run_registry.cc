#include "kernel/record/run_registry.h"

#include <algorithm>

#include "common/file.h"
#include "common/identifier.h"
#include "common/process_identity.h"
#include "common/strings.h"

namespace warden::kernel {

namespace {

constexpr std::string_view kMarkerSuffix = ".pid";

std::filesystem::path marker_path(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  return ledger_dir / "runs" / (run_id + std::string(kMarkerSuffix));
}

bool safe_run_id(const std::string& id) { return is_identifier(id); }

// The marker's owner; nullopt for a missing or unreadable marker, or one written before
// markers carried a start time (its owner cannot be told from a reused pid: taken as dead).
std::optional<ProcessIdentity> marker_owner(const std::filesystem::path& path) {
  auto text = read_file(path, 256);
  if (!text) return std::nullopt;
  return ProcessIdentity::parse(trim(*text));
}

}  // namespace

std::optional<RunRegistration> RunRegistration::create(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  if (!safe_run_id(run_id)) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(ledger_dir / "runs", ec);
  auto path = marker_path(ledger_dir, run_id);
  if (ec || !write_file_atomic(path, ProcessIdentity::self().str() + "\n")) return std::nullopt;
  return RunRegistration(path);
}

RunRegistration::~RunRegistration() {
  if (path_.empty() || !ended_) return;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

std::optional<pid_t> live_run_process(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  if (!safe_run_id(run_id)) return std::nullopt;
  auto owner = marker_owner(marker_path(ledger_dir, run_id));
  if (!owner || !owner->alive()) return std::nullopt;
  return owner->pid;
}

std::vector<std::string> orphaned_runs(const std::filesystem::path& ledger_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(ledger_dir / "runs", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.ends_with(kMarkerSuffix)) continue;
    std::string run_id = name.substr(0, name.size() - kMarkerSuffix.size());
    if (!safe_run_id(run_id)) continue;
    auto owner = marker_owner(it->path());
    if (!owner || !owner->alive()) out.push_back(std::move(run_id));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void remove_run_marker(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  if (!safe_run_id(run_id)) return;
  std::error_code ec;
  std::filesystem::remove(marker_path(ledger_dir, run_id), ec);
}

}  // namespace warden::kernel
