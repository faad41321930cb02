#include "runner/model/preflight.h"

#include <unistd.h>

#include <set>
#include <sstream>

#include "common/file.h"
#include "common/json_reader.h"
#include "common/strings.h"

namespace warden {
namespace {

constexpr const char* kNamespaces[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
// Host paths a profile must never expose: homes, keys, sockets, kernel interfaces.
constexpr const char* kHostSecrets[] = {"/root",    "/home",       "/run",     "/var/run", "/etc/shadow", "/etc/gshadow",
                                        "/etc/ssh", "/etc/sudoers", "/var/lib", "/sys",     "/boot"};

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Splits the probe's output into its "@name" sections.
std::map<std::string, std::vector<std::string>> sections(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 1 && line[0] == '@') {
      current = line.substr(1);
      out[current];
    } else if (!current.empty()) {
      out[current].push_back(line);
    }
  }
  return out;
}

// "Key:\tvalue" from /proc/self/status.
std::string status_field(const std::vector<std::string>& lines, std::string_view key) {
  for (const auto& l : lines) {
    if (l.size() > key.size() && l.compare(0, key.size(), key) == 0 && l[key.size()] == ':') {
      size_t start = l.find_first_not_of(" \t", key.size() + 1);
      return start == std::string::npos ? "" : l.substr(start);
    }
  }
  return "";
}

// The soft limit of one /proc/self/limits row ("Max cpu time  600  601  seconds").
std::string soft_limit(const std::vector<std::string>& lines, std::string_view name) {
  for (const auto& l : lines) {
    if (l.compare(0, name.size(), name) == 0) {
      std::istringstream fields(l.substr(name.size()));
      std::string soft;
      fields >> soft;
      return soft;
    }
  }
  return "";
}

PreflightCheck check(std::string name, std::string problems) {
  return PreflightCheck{std::move(name), problems.empty(), std::move(problems)};
}

void add(std::string& problems, const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; }

}  // namespace

std::vector<EnforcedLimit> enforced_limits(const SandboxProfile& profile, const HostFacts& facts) {
  const ResourceLimits& l = profile.limits;
  const std::string cgroup = facts.cgroup_by;
  auto by_cgroup = [&](bool has) { return has ? cgroup : std::string("none"); };
  // A tmpfs's pages and inodes are charged to the memory cgroup of whoever writes them.
  const std::string memory_bound = by_cgroup(facts.cgroup_memory);
  std::vector<EnforcedLimit> out;
  out.push_back({"memory", "", l.memory_bytes, memory_bound});
  out.push_back({"pids", "", l.processes, facts.cgroup_pids ? cgroup : "rlimit"});
  if (facts.cgroup_pids) out.push_back({"processes_per_uid", "", facts.nproc_limit, "rlimit"});
  out.push_back({"cpu", "", l.cpu_quota_percent, by_cgroup(facts.cgroup_cpu)});
  out.push_back({"cpu_seconds", "", l.cpu_seconds, "rlimit"});
  out.push_back({"address_space", "", l.address_space_bytes, "rlimit"});
  out.push_back({"file_size", "", l.file_size_bytes, "rlimit"});
  out.push_back({"open_files", "", l.open_files, "rlimit"});
  if (facts.run_tmpfs) {
    out.push_back({"disk_bytes", "", l.disk_bytes, "tmpfs"});
    out.push_back({"disk_inodes", "", l.disk_inodes, "tmpfs"});
  } else {
    std::string by = facts.scratch_on_tmpfs ? memory_bound : "none";
    uint64_t value = by == "none" ? 0 : l.memory_bytes;
    out.push_back({"disk_bytes", "", value, by});
    out.push_back({"disk_inodes", "", value, by});
  }
  for (const auto& t : profile.tmpfs) {
    out.push_back({"tmpfs_bytes", t.path, t.size_bytes, "tmpfs"});
    // bwrap sets a tmpfs's size only; its inodes are bounded by the run's memory.
    out.push_back({"tmpfs_inodes", t.path, facts.cgroup_memory ? l.memory_bytes : 0, memory_bound});
  }
  return out;
}

Json PreflightReport::to_json() const {
  Json list = Json::array();
  for (const auto& c : checks) {
    Json item = {{"name", c.name}, {"ok", c.ok}};
    if (!c.ok) item["detail"] = c.detail;
    list.push_back(item);
  }
  Json limits = Json::array();
  for (const auto& e : enforced) {
    Json item = {{"limit", e.limit}, {"value", e.value}, {"by", e.by}};
    if (!e.where.empty()) item["where"] = e.where;
    limits.push_back(item);
  }
  Json out = {{"ok", ok}, {"checks", list}};
  // Absent when empty, so results recorded before this list existed keep their digests.
  if (!enforced.empty()) out["enforced"] = limits;
  return out;
}

Result<PreflightReport> PreflightReport::from_json(const Json& json) {
  PreflightReport report;
  JsonReader r(json, "preflight");
  r.boolean("ok", report.ok);
  if (const Json* list = r.value("checks", Json::value_t::array)) {
    for (size_t i = 0; i < list->size(); ++i) {
      JsonReader c((*list)[i], r.path("checks") + "[" + std::to_string(i) + "]");
      PreflightCheck pc;
      c.string("name", pc.name);
      c.boolean("ok", pc.ok);
      c.string("detail", pc.detail, false);
      r.adopt(c.finish());
      report.checks.push_back(std::move(pc));
    }
  }
  if (const Json* list = r.value("enforced", Json::value_t::array, false)) {
    for (size_t i = 0; i < list->size(); ++i) {
      JsonReader e((*list)[i], r.path("enforced") + "[" + std::to_string(i) + "]");
      EnforcedLimit limit;
      e.string("limit", limit.limit);
      e.string("where", limit.where, false);
      e.unsigned_integer("value", limit.value, 0, static_cast<uint64_t>(kMaxCanonicalInteger));
      e.string("by", limit.by);
      r.adopt(e.finish());
      report.enforced.push_back(std::move(limit));
    }
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return report;
}

std::string PreflightReport::failures() const {
  std::string out;
  for (const auto& c : checks) {
    if (!c.ok) out += (out.empty() ? "" : "; ") + c.name + ": " + c.detail;
  }
  return out;
}

std::string preflight_script(const SandboxProfile& profile) {
  std::string ws = shell_quote(profile.workspace);
  std::string s = "echo @status; cat /proc/self/status\n"
                  "echo @limits; cat /proc/self/limits\n"
                  "echo @netdev; cat /proc/net/dev\n"
                  "echo @usrowner; stat -c %u /usr\n"
                  "echo @tmp; ls -A /tmp\n"
                  "echo @ns\n"
                  "for n in user mnt pid net ipc uts cgroup; do echo \"$n $(readlink /proc/self/ns/$n)\"; done\n"
                  "echo @visible\n"
                  "for p in";
  for (const char* p : kHostSecrets) s += std::string(" ") + p;
  s += "; do if [ -e \"$p\" ] || [ -L \"$p\" ]; then echo \"$p\"; fi; done\n"
       "echo @writes\n"
       "for d in / /usr /etc /dev; do if ( : > \"$d/.warden-probe\" ) 2>/dev/null; then echo \"writable $d\"; fi; done\n"
       "if ( : > /tmp/.warden-probe ) 2>/dev/null; then echo tmp-ok; fi\n"
       "if ( echo probe > " + ws + "/" + kProbeWrittenFile + " ) 2>/dev/null; then echo workspace-ok; fi\n"
       "echo @disk; stat -f -c '%b %S %c' " + ws + "\n"
       "echo @workspace\n"
       "cat " + ws + "/" + kProbeLowerFile + " 2>/dev/null\n"
       "if [ -e " + ws + "/" + kProbeHiddenFile + " ]; then echo hidden-visible; fi\n"
       "echo @end\n";
  return s;
}

std::map<std::string, std::string> own_namespaces() {
  std::map<std::string, std::string> out;
  for (const char* n : kNamespaces) {
    // readlink(2) alone: std::filesystem::read_symlink would lstat first, and the one-shot
    // sandbox reads these on every call.
    char target[128];
    ssize_t len = ::readlink((std::string("/proc/self/ns/") + n).c_str(), target, sizeof target);
    if (len > 0 && static_cast<size_t>(len) < sizeof target) out[n] = std::string(target, static_cast<size_t>(len));
  }
  return out;
}

std::string overflow_uid() {
  auto text = read_file("/proc/sys/kernel/overflowuid", 64);
  std::string value = text ? std::string(trim(*text)) : "";
  return value.empty() ? "65534" : value;
}

PreflightReport judge_preflight(const SandboxProfile& profile, const HostFacts& facts) {
  PreflightReport report;
  auto sec = sections(facts.stdout_text);
  bool ran = facts.probe_started && sec.contains("end");
  std::string start_problem;
  if (!facts.probe_started) {
    start_problem = "the sandbox did not start: " + facts.start_error;
  } else if (!ran) {
    std::string err = facts.stderr_text.substr(0, 400);
    start_problem = "the probe did not finish (exit " + std::to_string(facts.exit_code) + ")" + (err.empty() ? "" : ": " + err);
  }
  report.checks.push_back(check("sandbox_start", start_problem));
  if (!ran) {
    report.ok = false;
    return report;
  }

  std::string ns_problems;
  std::map<std::string, std::string> inside;
  for (const auto& line : sec["ns"]) {
    auto space = line.find(' ');
    if (space != std::string::npos) inside[line.substr(0, space)] = line.substr(space + 1);
  }
  // A profile with network shares the host's network namespace by choice; every other
  // namespace is still the sandbox's own.
  for (const char* n : kNamespaces) {
    auto host = facts.namespaces.find(n);
    bool shared_by_choice = profile.network && std::string_view(n) == "net";
    if (inside[n].empty()) add(ns_problems, std::string(n) + " namespace not visible");
    else if (host != facts.namespaces.end() && host->second == inside[n] && !shared_by_choice) add(ns_problems, std::string(n) + " namespace is the host's");
  }
  report.checks.push_back(check("namespaces", ns_problems));

  std::string net_problems;
  const auto& netdev = sec["netdev"];
  for (size_t i = 2; i < netdev.size() && !profile.network; ++i) {
    std::string name = netdev[i].substr(0, netdev[i].find(':'));
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo") add(net_problems, "interface " + name + " is present");
  }
  if (netdev.size() < 3) add(net_problems, "cannot read /proc/net/dev");
  report.checks.push_back(check("network", net_problems));

  const auto& st = sec["status"];
  std::string sc_problems;
  if (status_field(st, "Seccomp") != "2") add(sc_problems, "Seccomp is \"" + status_field(st, "Seccomp") + "\", want 2 (filter)");
  std::string filters = status_field(st, "Seccomp_filters");
  if (!filters.empty() && filters == "0") add(sc_problems, "no seccomp filter is loaded");
  if (status_field(st, "NoNewPrivs") != "1") add(sc_problems, "NoNewPrivs is not set");
  report.checks.push_back(check("seccomp", sc_problems));

  std::string cap_problems;
  for (const char* key : {"CapEff", "CapPrm", "CapAmb"}) {
    std::string v = status_field(st, key);
    if (v.find_first_not_of('0') != std::string::npos || v.empty()) add(cap_problems, std::string(key) + " is " + v);
  }
  report.checks.push_back(check("capabilities", cap_problems));

  std::string id_problems;
  std::istringstream uid_fields(status_field(st, "Uid"));
  std::string uid;
  uid_fields >> uid;
  if (uid != std::to_string(profile.uid)) add(id_problems, "uid is " + uid + ", want " + std::to_string(profile.uid));
  // The host's root owns /usr. Inside, it must show as the overflow uid: the host's root is
  // not mapped into the sandbox's user namespaces, so nothing inside can act as it.
  const auto& owner = sec["usrowner"];
  if (owner.empty() || owner[0] != facts.overflow_uid) {
    add(id_problems, "the host's root is mapped into the sandbox (/usr owner shows as " + (owner.empty() ? "?" : owner[0]) + ")");
  }
  report.checks.push_back(check("identity", id_problems));

  std::string limit_problems;
  const auto& lim = sec["limits"];
  auto want = [&](std::string_view name, uint64_t value) {
    std::string got = soft_limit(lim, name);
    if (got != std::to_string(value)) add(limit_problems, std::string(name) + " is " + got + ", want " + std::to_string(value));
  };
  want("Max cpu time", profile.limits.cpu_seconds);
  want("Max file size", profile.limits.file_size_bytes);
  want("Max processes", facts.nproc_limit);
  want("Max open files", profile.limits.open_files);
  want("Max address space", profile.limits.address_space_bytes);
  report.checks.push_back(check("limits", limit_problems));

  std::string fs_problems;
  std::set<std::string> writes(sec["writes"].begin(), sec["writes"].end());
  for (const auto& w : writes) {
    if (w.starts_with("writable ")) add(fs_problems, w.substr(9) + " is writable");
  }
  if (!writes.contains("tmp-ok")) add(fs_problems, "/tmp is not writable");
  for (const auto& v : sec["visible"]) {
    if (!v.empty()) add(fs_problems, "host path " + v + " is visible");
  }
  for (const auto& t : sec["tmp"]) {
    if (!t.empty()) add(fs_problems, "/tmp is not empty at start (" + t + ")");
  }
  report.checks.push_back(check("filesystem", fs_problems));

  std::string ws_problems;
  if (!writes.contains("workspace-ok")) add(ws_problems, profile.workspace + " is not writable");
  const auto& wsl = sec["workspace"];
  if (std::find(wsl.begin(), wsl.end(), "warden-lower") == wsl.end()) add(ws_problems, "the base layer is not visible");
  if (std::find(wsl.begin(), wsl.end(), "hidden-visible") != wsl.end()) add(ws_problems, "a whiteout in the diff layer did not hide its file");
  if (!facts.workspace_write_seen) add(ws_problems, "the workspace write did not reach the run's upper layer");
  report.checks.push_back(check("workspace", ws_problems));

  if (!facts.cgroup_by.empty()) {
    // The join is the sandbox's first step: a run whose processes the cgroup never saw was
    // not bounded by it.
    std::string cg_problems;
    if (facts.cgroup_memory && facts.cgroup_memory_peak == 0) add(cg_problems, "the probe was not charged to the run's memory cgroup");
    if (facts.cgroup_pids && facts.cgroup_pids_peak == 0) add(cg_problems, "the probe's processes were not counted by the run's pids cgroup");
    report.checks.push_back(check("cgroup", cg_problems));
  }
  if (facts.run_tmpfs) {
    // The overlay reports its upper layer's file system: the run's own tmpfs.
    std::string disk_problems;
    std::istringstream disk(sec["disk"].empty() ? "" : sec["disk"][0]);
    uint64_t blocks = 0, block_size = 0, inodes = 0;
    disk >> blocks >> block_size >> inodes;
    const uint64_t want_bytes = (profile.limits.disk_bytes + 4095) / 4096 * 4096;
    if (blocks * block_size != want_bytes || inodes != profile.limits.disk_inodes) {
      add(disk_problems, "the workspace shows " + std::to_string(blocks * block_size) + " bytes and " + std::to_string(inodes) +
                             " inodes, want " + std::to_string(want_bytes) + " and " + std::to_string(profile.limits.disk_inodes));
    }
    report.checks.push_back(check("disk", disk_problems));
  }
  report.enforced = enforced_limits(profile, facts);

  report.ok = std::all_of(report.checks.begin(), report.checks.end(), [](const auto& c) { return c.ok; });
  return report;
}

}  // namespace warden
