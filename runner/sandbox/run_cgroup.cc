#include "runner/sandbox/run_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "common/process_identity.h"
#include "common/strings.h"

namespace warden {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kControllers[] = {"pids", "memory", "cpu"};
constexpr uint64_t kCpuPeriodUs = 100'000;  // the kernel's default CFS period
constexpr auto kKillPatience = std::chrono::seconds(2);

// One line of /proc/self/mountinfo that mounts a cgroup file system.
struct CgroupMount {
  std::string root, point, fstype;
  std::vector<std::string> options;  // super options: "rw", "memory", ...
};

std::vector<std::string> words(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::string_view w : split(text, sep)) out.emplace_back(w);
  return out;
}

std::vector<CgroupMount> cgroup_mounts() {
  std::vector<CgroupMount> out;
  auto text = read_file("/proc/self/mountinfo", 1 << 22);
  if (!text) return out;
  // Views into the text: only the cgroup mounts' fields become strings (the one-shot sandbox
  // reads this on every call).
  for (std::string_view line : split(*text, '\n')) {
    // "id parent maj:min root point opts [optional...] - fstype source superopts"
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    auto head = split(line.substr(0, dash), ' ');
    auto tail = split(line.substr(dash + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    if (tail[0] != "cgroup" && tail[0] != "cgroup2") continue;
    out.push_back(CgroupMount{std::string(head[3]), std::string(head[4]), std::string(tail[0]), words(tail[2], ',')});
  }
  return out;
}

// The directory of `own` (a path from /proc/self/cgroup) inside `mount`; empty when the
// mount does not show it (a mount of another subtree).
fs::path own_dir(const CgroupMount& mount, const std::string& own) {
  if (own == mount.root) return mount.point;
  std::string prefix = mount.root == "/" ? "/" : mount.root + "/";
  if (!own.starts_with(prefix)) return {};
  return fs::path(mount.point) / own.substr(prefix.size());
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Writes `value` to the file `name` of the cgroup directory `dir` (open as `dir_fd`):
// relative to the open directory, so the kernel walks one name, not the whole path.
Status write_value(int dir_fd, const fs::path& dir, const char* name, std::string_view value, bool if_present = false) {
  UniqueFd fd(::openat(dir_fd, name, O_WRONLY | O_CLOEXEC));
  // A file the kernel may not offer (memsw without swap accounting, swap.max) is no error.
  if (!fd && if_present && errno == ENOENT) return {};
  if (!fd) return std::unexpected(errno_error("open " + (dir / name).string(), errno));
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    return std::unexpected(errno_error("write " + std::string(value) + " to " + (dir / name).string(), errno));
  }
  return {};
}

Status write_value(const fs::path& path, std::string_view value) {
  UniqueFd dir(::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return std::unexpected(errno_error("open " + path.parent_path().string(), errno));
  return write_value(dir.get(), path.parent_path(), path.filename().c_str(), value);
}

// The text of the file `name` in the directory open as `dir_fd`; nullopt when unreadable.
std::optional<std::string> read_in(int dir_fd, const char* name, uint64_t max_bytes) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  auto text = read_fd(fd.get(), max_bytes, name);
  if (!text) return std::nullopt;
  return std::move(*text);
}

Status make_parent(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(errno_error("mkdir " + dir.string(), errno));
  return {};
}

uint64_t number_in(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// "key N" lines (memory.events, memory.oom_control, pids.events): N for `key`, else 0.
uint64_t keyed_value(int dir_fd, const char* file, std::string_view key) {
  auto text = read_in(dir_fd, file, 1 << 16);
  if (!text) return 0;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ' ') {
      return number_in(std::string_view(line).substr(key.size() + 1));
    }
  }
  return 0;
}

uint64_t file_number(int dir_fd, const char* file) {
  auto text = read_in(dir_fd, file, 4096);
  return text ? number_in(*text) : 0;
}

// Removes a run cgroup that should be empty; a process still exiting keeps it busy briefly.
void remove_cgroup(const fs::path& dir) {
  const auto deadline = SteadyClock::now() + kKillPatience;
  while (::rmdir(dir.c_str()) != 0 && errno == EBUSY && SteadyClock::now() < deadline) {
    kill_cgroup_processes(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The delegated v2 subtree's "warden" directory, with pids and memory (and cpu when
// offered) enabled for its children; nullopt with `why` set when there is none.
std::optional<fs::path> detect_v2(const std::vector<CgroupMount>& mounts, const std::string& own, std::string& why) {
  auto mount = std::find_if(mounts.begin(), mounts.end(), [](const CgroupMount& m) { return m.fstype == "cgroup2"; });
  if (mount == mounts.end()) {
    why = "cgroup v2: not mounted";
    return std::nullopt;
  }
  fs::path dir = own_dir(*mount, own);
  auto enabled = dir.empty() ? Result<std::string>(fail(Errc::not_found, "")) : read_file(dir / "cgroup.subtree_control", 4096);
  if (!enabled) {
    why = "cgroup v2: own cgroup " + own + " not visible";
    return std::nullopt;
  }
  auto names = words(trim(*enabled), ' ');
  if (!contains(names, "pids") || !contains(names, "memory")) {
    why = "cgroup v2: " + dir.string() + " delegates no pids and memory (subtree_control \"" + std::string(trim(*enabled)) + "\")";
    return std::nullopt;
  }
  fs::path parent = dir / "warden";
  if (::access(dir.c_str(), W_OK) != 0 || !make_parent(parent)) {
    why = "cgroup v2: " + dir.string() + " is not writable";
    return std::nullopt;
  }
  std::string enable = "+pids +memory";
  if (contains(names, "cpu")) enable += " +cpu";
  if (!write_value(parent / "cgroup.subtree_control", enable)) {
    why = "cgroup v2: cannot enable " + enable + " in " + parent.string();
    return std::nullopt;
  }
  return parent;
}

}  // namespace

CgroupHost CgroupHost::none(std::string reason) {
  CgroupHost h;
  h.unavailable_ = std::move(reason);
  return h;
}

Json CgroupHost::to_json() const {
  Json controllers = Json::array();
  for (const auto& c : controllers_) controllers.push_back({{"name", c.name}, {"parent", c.parent.string()}});
  return {{"v2", v2_}, {"controllers", controllers}, {"unavailable", unavailable_}};
}

std::optional<CgroupHost> CgroupHost::from_json(const Json& json) {
  if (!json.is_object() || !json.contains("v2") || !json["v2"].is_boolean() || !json.contains("controllers") ||
      !json["controllers"].is_array() || !json.contains("unavailable") || !json["unavailable"].is_string()) {
    return std::nullopt;
  }
  CgroupHost h;
  h.v2_ = json["v2"].get<bool>();
  h.unavailable_ = json["unavailable"].get<std::string>();
  for (const auto& c : json["controllers"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("parent") || !c["parent"].is_string()) {
      return std::nullopt;
    }
    const std::string name = c["name"].get<std::string>();
    if (std::find(std::begin(kControllers), std::end(kControllers), name) == std::end(kControllers)) return std::nullopt;
    // A parent detect() could have found: below /sys/fs/cgroup, spelled without a detour.
    const std::filesystem::path parent = c["parent"].get<std::string>();
    if (!parent.is_absolute() || parent.lexically_normal() != parent || !parent.string().starts_with("/sys/fs/cgroup/") ||
        parent.filename() != "warden") {
      return std::nullopt;
    }
    h.controllers_.push_back({name, parent});
  }
  h.owner_ = "p" + ProcessIdentity::self().str();
  return h;
}

CgroupHost CgroupHost::detect() {
  CgroupHost h;
  h.owner_ = "p" + ProcessIdentity::self().str();
  auto self = read_file("/proc/self/cgroup", 1 << 16);
  if (!self) return none("cannot read /proc/self/cgroup");
  std::map<std::string, std::string> own;  // controller ("" for v2) -> path
  for (std::string_view line : split(*self, '\n')) {
    // "id:controllers:path"; the path may itself hold ':'.
    size_t first = line.find(':'), second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (controllers.empty()) own[""] = path;
    for (std::string_view c : split(controllers, ',')) own[std::string(c)] = path;
  }
  auto mounts = cgroup_mounts();

  std::string v2_why = "cgroup v2: not a member";
  if (own.contains("")) {
    if (auto parent = detect_v2(mounts, own[""], v2_why)) {
      h.v2_ = true;
      auto enabled = read_file(*parent / "cgroup.subtree_control", 4096);
      auto names = words(trim(enabled.value_or("")), ' ');
      for (const char* c : kControllers) {
        if (contains(names, c)) h.controllers_.push_back({c, *parent});
        else h.unavailable_ += (h.unavailable_.empty() ? "" : "; ") + std::string("cgroup v2: no ") + c + " controller";
      }
      return h;
    }
  }

  std::string v1_why;
  for (const char* c : kControllers) {
    auto mount = std::find_if(mounts.begin(), mounts.end(),
                              [c](const CgroupMount& m) { return m.fstype == "cgroup" && contains(m.options, c); });
    std::string problem;
    if (mount == mounts.end() || !own.contains(c)) {
      problem = std::string("no ") + c + " hierarchy";
    } else {
      fs::path dir = own_dir(*mount, own[c]);
      fs::path parent = dir / "warden";
      // Made by an earlier run as a rule: one check then, not two system calls.
      const bool made = !dir.empty() && ::access(parent.c_str(), W_OK) == 0;
      if (dir.empty()) problem = std::string(c) + ": own cgroup " + own[c] + " not under the mount";
      else if (!made && (::access(dir.c_str(), W_OK) != 0 || !make_parent(parent))) problem = std::string(c) + ": " + dir.string() + " is not writable";
      else h.controllers_.push_back({c, parent});
    }
    if (!problem.empty()) v1_why += (v1_why.empty() ? "" : "; ") + problem;
  }
  if (h.controllers_.empty()) {
    h.unavailable_ = v2_why + "; cgroup v1: " + v1_why;
  } else if (!v1_why.empty()) {
    h.unavailable_ = "cgroup v1: " + v1_why;
  }
  return h;
}

bool CgroupHost::has(std::string_view controller) const {
  return std::any_of(controllers_.begin(), controllers_.end(), [&](const Controller& c) { return c.name == controller; });
}

std::string_view CgroupHost::by() const {
  if (!usable()) return "";
  return v2_ ? "cgroup-v2" : "cgroup-v1";
}

std::vector<fs::path> CgroupHost::parents() const {
  std::vector<fs::path> out;
  for (const auto& c : controllers_) {
    if (std::find(out.begin(), out.end(), c.parent) == out.end()) out.push_back(c.parent);
  }
  return out;
}

size_t CgroupHost::reclaim_orphans() const {
  size_t removed = 0;
  for (const auto& parent : parents()) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      // p<pid>.<start>-<tid>.<n>: the owner sits between the 'p' and the first '-'.
      const std::string name = it->path().filename().string();
      const size_t dash = name.find('-');
      if (!name.starts_with("p") || dash == std::string::npos) continue;
      auto owner = ProcessIdentity::parse(std::string_view(name).substr(1, dash - 1));
      if (!owner || owner->alive()) continue;
      kill_cgroup_processes(it->path());
      remove_cgroup(it->path());
      if (::access(it->path().c_str(), F_OK) != 0) ++removed;
    }
  }
  return removed;
}

Result<RunCgroup> RunCgroup::create(const CgroupHost& host, const CgroupLimits& limits) {
  auto cg = make(host);
  if (!cg) return cg;
  if (Status st = cg->limit(limits); !st) return std::unexpected(st.error());
  return cg;
}

Result<RunCgroup> RunCgroup::make(const CgroupHost& host) {
  if (!host.usable()) return fail(Errc::invalid_argument, "run cgroup: " + host.unavailable());
  RunCgroup cg;
  cg.v2_ = host.v2_;
  const auto parents = host.parents();
  const std::string base = host.owner_ + "-" + std::to_string(::gettid()) + ".";
  // A leftover of this thread (one whose removal failed) holds a name: take the next.
  for (int n = 0; cg.dirs_.empty(); ++n) {
    if (n == 64) return fail(Errc::io_error, "run cgroup: 64 names of this thread are taken under " + parents[0].string());
    const std::string name = base + std::to_string(n);
    bool taken = false;
    for (const auto& parent : parents) {
      fs::path dir = parent / name;
      if (::mkdir(dir.c_str(), 0755) == 0) {
        cg.dirs_.push_back(dir);
        continue;
      }
      if (errno != EEXIST) return std::unexpected(errno_error("mkdir " + dir.string(), errno));
      taken = true;
      break;
    }
    if (taken) {
      for (const auto& d : cg.dirs_) ::rmdir(d.c_str());
      cg.dirs_.clear();
    }
  }
  for (const auto& d : cg.dirs_) {
    UniqueFd fd(::open(d.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return std::unexpected(errno_error("open " + d.string(), errno));
    cg.dir_fds_.push_back(std::move(fd));
  }
  auto index_of = [&](std::string_view controller) -> int {
    for (const auto& c : host.controllers_) {
      if (c.name != controller) continue;
      for (size_t i = 0; i < cg.dirs_.size(); ++i) {
        if (cg.dirs_[i].parent_path() == c.parent) return static_cast<int>(i);
      }
    }
    return -1;
  };
  cg.pids_ = index_of("pids");
  cg.memory_ = index_of("memory");
  cg.cpu_ = index_of("cpu");
  // v1: the joining process is single-threaded (just forked), so moving its one thread
  // through `tasks` moves it whole, and a thread moving itself skips the global threadgroup
  // lock that a cgroup.procs write takes (an RCU grace period, milliseconds, per run).
  const char* join_file = cg.v2_ ? "cgroup.procs" : "tasks";
  for (size_t i = 0; i < cg.dirs_.size(); ++i) {
    UniqueFd fd(::openat(cg.dir_fds_[i].get(), join_file, O_WRONLY | O_CLOEXEC));
    if (!fd) return std::unexpected(errno_error("open " + (cg.dirs_[i] / join_file).string(), errno));
    cg.procs_.push_back(std::move(fd));
  }
  return cg;
}

Status RunCgroup::limit(const CgroupLimits& limits) const {
  auto write = [&](int i, const char* name, const std::string& value, bool if_present = false) -> Status {
    return write_value(dir_fds_[i].get(), dirs_[i], name, value, if_present);
  };
  if (pids_ >= 0) {
    if (Status st = write(pids_, "pids.max", std::to_string(limits.pids)); !st) return st;
  }
  if (memory_ >= 0) {
    std::string bytes = std::to_string(limits.memory_bytes);
    // No swap: a run's memory is its RAM (and the host here has none to give anyway).
    Status st = v2_ ? write(memory_, "memory.max", bytes) : write(memory_, "memory.limit_in_bytes", bytes);
    if (st) st = v2_ ? write(memory_, "memory.swap.max", "0", true) : write(memory_, "memory.memsw.limit_in_bytes", bytes, true);
    if (!st) return st;
  }
  if (cpu_ >= 0) {
    uint64_t quota = limits.cpu_quota_percent * kCpuPeriodUs / 100;
    Status st = v2_ ? write(cpu_, "cpu.max", std::to_string(quota) + " " + std::to_string(kCpuPeriodUs))
                    : write(cpu_, "cpu.cfs_quota_us", std::to_string(quota));
    if (!st) return st;
  }
  return {};
}

RunCgroup::~RunCgroup() {
  // rmdir first: an empty cgroup (every run that ended on its own) goes at once, and one
  // still holding processes answers EBUSY, which remove_cgroup() meets by killing them.
  for (const auto& d : dirs_) remove_cgroup(d);
}

std::vector<int> RunCgroup::join_fds() const {
  std::vector<int> out;
  for (const auto& fd : procs_) out.push_back(fd.get());
  return out;
}

void RunCgroup::kill() const {
  for (size_t i = 0; i < dirs_.size(); ++i) {
    // cgroup.kill (Linux 5.14) kills the whole subtree at once, forks in flight included.
    if (v2_) (void)write_value(dir_fds_[i].get(), dirs_[i], "cgroup.kill", "1", true);
    kill_cgroup_processes(dirs_[i], false);
  }
}

CgroupEvents RunCgroup::events() const {
  CgroupEvents e;
  if (memory_ >= 0) {
    const int dir = dir_fds_[memory_].get();
    e.memory_oom = keyed_value(dir, v2_ ? "memory.events" : "memory.oom_control", "oom_kill") > 0;
    e.memory_peak = file_number(dir, v2_ ? "memory.peak" : "memory.max_usage_in_bytes");
  }
  if (pids_ >= 0) {
    const int dir = dir_fds_[pids_].get();
    e.pids_max = keyed_value(dir, "pids.events", "max") > 0;
    e.pids_peak = file_number(dir, "pids.peak");
  }
  return e;
}

bool kill_cgroup_processes(const fs::path& dir, bool wait) {
  const auto deadline = SteadyClock::now() + kKillPatience;
  for (;;) {
    auto listed = read_file(dir / "cgroup.procs", 1 << 22);
    if (!listed) return true;  // gone already
    bool any = false;
    std::istringstream in(*listed);
    for (pid_t pid = 0; in >> pid;) {
      // A pid read here could in principle be reused before the kill; the window is the
      // few microseconds since the read, and pids.max keeps the list short.
      if (pid > 0) ::kill(pid, SIGKILL);
      any = true;
    }
    if (!any) return true;
    if (!wait || SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

}  // namespace warden
