#include "runner/environment/toolchain.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/file.h"
#include "runner/environment/tree_manifest.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

std::string file_digest(const fs::path& path) {
  std::error_code ec;
  auto resolved = fs::canonical(path, ec);
  if (ec) return "absent";
  auto d = digest_file(resolved);
  return d ? d->str() : "absent";
}

std::string tree_digest(const fs::path& dir, FileDigestMemo& memo) {
  std::error_code ec;
  auto resolved = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(resolved, ec)) return "absent";
  // A file this process may not read still counts by its name, mode and size: one such file
  // must not make the whole directory "absent", where later changes would go unseen.
  auto m = TreeManifest::scan(resolved, memo, TreeManifest::Normalize::none, true);
  return m ? m->digest().str() : "absent";
}

}  // namespace

std::filesystem::path default_file_digest_memo() {
  if (::geteuid() == 0) return "/var/cache/warden/file-digests";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "warden" / "file-digests";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "warden" / "file-digests";
  return "/tmp/warden-cache-" + std::to_string(::getuid()) + "/file-digests";
}

std::vector<std::string> expand_toolchain_dirs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const auto& p : patterns) {
    if (!p.ends_with('*')) {
      out.push_back(p);
      continue;
    }
    fs::path prefix = p.substr(0, p.size() - 1);
    std::string start = prefix.filename().string();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(prefix.parent_path(), ec)) {
      std::string name = e.path().filename().string();
      if (name.starts_with(start) && e.is_directory(ec)) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Json toolchain_identity(const SandboxProfile& profile, const SandboxHost& host, FileDigestMemo& memo,
                        const ToolchainInputs& inputs) {
  utsname u{};
  ::uname(&u);
  Json id = {{"runner", kRunnerIdentity},
             {"bwrap", {{"path", host.bwrap}, {"sha256", file_digest(host.bwrap)}}},
             {"kernel", std::string(u.sysname) + " " + (inputs.kernel_release ? std::string(u.release) + " " : "") + u.machine}};
  if (inputs.environment) {
    id["environment"] = inputs.environment->identity();
    return id;
  }
  id["os_release_sha256"] = file_digest("/etc/os-release");
  Json files = Json::object();
  for (const auto& f : profile.toolchain) files[f] = file_digest(f);
  id["files"] = files;
  if (!profile.toolchain_dirs.empty()) {
    Json dirs = Json::object();
    for (const auto& d : expand_toolchain_dirs(profile.toolchain_dirs)) dirs[d] = tree_digest(d, memo);
    id["dirs"] = dirs;
  }
  return id;
}

}  // namespace warden
