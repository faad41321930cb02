#include "tests/support/sandbox_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/process.h"

namespace warden::test {

namespace fs = std::filesystem;

SandboxProfile test_profile() {
  auto p = SandboxProfile::load("default");
  if (!p) throw std::runtime_error(p.error().message);
  p->limits.processes = 64;
  p->limits.address_space_bytes = uint64_t{512} << 20;
  p->limits.file_size_bytes = uint64_t{1} << 20;
  p->limits.wall_timeout_ms = 20'000;
  p->output.keep_bytes = 64 << 10;
  p->output.max_bytes = 4 << 20;
  return *p;
}

std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream cmdline;
    cmdline << in.rdbuf();
    if (cmdline.str().find(marker) != std::string::npos) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

int count_processes_with(const std::string& marker) {
  const std::vector<pid_t> found = processes_with(marker);
  for (pid_t pid : found) {
    std::ifstream st("/proc/" + std::to_string(pid) + "/status");
    std::stringstream ss;
    ss << st.rdbuf();
    std::fprintf(stderr, "survivor %d: %s\n", static_cast<int>(pid), ss.str().substr(0, 400).c_str());
  }
  return static_cast<int>(found.size());
}

int wait_for_uid_to_drain(uid_t uid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  const std::string wanted = std::to_string(uid);
  while (true) {
    int count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream st(entry.path() / "status");
      std::string line;
      while (std::getline(st, line)) {
        if (!line.starts_with("Uid:")) continue;
        std::istringstream fields(line.substr(4));
        std::string real;
        fields >> real;
        if (real == wanted) ++count;
        break;
      }
    }
    if (count == 0 || std::chrono::steady_clock::now() >= deadline) return count;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string fresh_marker() {
  std::random_device rd;
  std::stringstream s;
  s << "warden-marker-" << std::hex << rd() << rd();
  return s.str();
}

void install_file(const fs::path& from, const fs::path& to, unsigned mode, uid_t uid, gid_t gid) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  if (::chown(to.c_str(), uid, gid) != 0 || ::chmod(to.c_str(), mode) != 0) {
    throw std::runtime_error("cannot set owner/mode of " + to.string());
  }
}

namespace {

// Copies `from` (a link resolved) to `to` with the mode of what it resolves to.
void copy_with_mode(const fs::path& from, const fs::path& to) {
  const fs::path real = fs::canonical(from);
  fs::create_directories(to.parent_path());
  fs::copy_file(real, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::status(real).permissions());
}

}  // namespace

void copy_host_programs(const fs::path& root, const std::vector<std::string>& programs) {
  for (const auto& name : programs) {
    const fs::path program = fs::path("/usr/bin") / name;
    copy_with_mode(program, root / "usr/bin" / name);
    ProcessResult ldd = run({"/usr/bin/ldd", fs::canonical(program).string()});
    if (!ldd.exited_with(0)) throw std::runtime_error("ldd " + program.string() + ": " + ldd.err);
    // ldd prints "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
    std::istringstream words(ldd.out);
    for (std::string word; words >> word;) {
      if (!word.starts_with("/")) continue;
      std::string_view rel = std::string_view(word).substr(word.starts_with("/usr/") ? 5 : 1);
      copy_with_mode(word, root / "usr" / rel);
    }
  }
}

HostileWorkspace::HostileWorkspace(const SandboxHost& host) {
  auto dir = ScratchDir::create("/tmp", "warden-sbx-test-", 0711);
  if (!dir) throw std::runtime_error(dir.error().message);
  scratch_.emplace(std::move(*dir));
  ws_ = scratch_->path() / "ws";
  if (auto st = make_owned_dir(ws_, host.uid, host.gid); !st) throw std::runtime_error(st.error().message);
  install_file(HOSTILE_BINARY, ws_ / "hostile", 0755, host.uid, host.gid);
}

}  // namespace warden::test
