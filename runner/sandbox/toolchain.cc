#include "runner/sandbox/toolchain.h"

#include <sys/utsname.h>

#include <filesystem>

#include "common/file.h"

namespace warden {
namespace {

std::string file_digest(const std::filesystem::path& path) {
  std::error_code ec;
  auto resolved = std::filesystem::canonical(path, ec);
  if (ec) return "absent";
  auto bytes = read_file(resolved, uint64_t{1} << 30);
  return bytes ? sha256(*bytes).str() : "absent";
}

}  // namespace

Json toolchain_identity(const SandboxProfile& profile, const SandboxHost& host, bool kernel_release) {
  utsname u{};
  ::uname(&u);
  Json files = Json::object();
  for (const auto& f : profile.toolchain) files[f] = file_digest(f);
  return {{"runner", kRunnerIdentity},
          {"bwrap", {{"path", host.bwrap}, {"sha256", file_digest(host.bwrap)}}},
          {"kernel", std::string(u.sysname) + " " + (kernel_release ? std::string(u.release) + " " : "") + u.machine},
          {"os_release_sha256", file_digest("/etc/os-release")},
          {"files", files}};
}

}  // namespace warden
