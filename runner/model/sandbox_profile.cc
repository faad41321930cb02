#include "runner/model/sandbox_profile.h"

#include <algorithm>
#include <cctype>

#include "common/file.h"
#include "common/json_reader.h"
#include "common/strings.h"

namespace warden {
namespace {

// Absolute, normalized, not the root: "/usr/lib", never "usr", "/a/../b", "/a//b" or "/a/".
bool normal_absolute_path(std::string_view p) {
  if (p.size() < 2 || p[0] != '/' || p.back() == '/') return false;
  if (p.find('\0') != std::string_view::npos) return false;
  for (std::string_view part : split_path(p.substr(1))) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '-' || c == '_';
         });
}

// Calls item(reader) for each object of the array `key`; nested errors surface through `parent`.
template <typename Item>
void each_object(JsonReader& parent, const std::string& key, Item&& item) {
  const Json* array = parent.value(key, Json::value_t::array, true);
  if (!array) return;
  for (size_t i = 0; i < array->size() && parent.ok(); ++i) {
    JsonReader r((*array)[i], parent.path(key) + "[" + std::to_string(i) + "]");
    item(r);
    parent.adopt(r.finish());
  }
}

void check_path(JsonReader& r, const std::string& key, const std::string& path) {
  if (r.ok() && !normal_absolute_path(path)) r.fail(key, "\"" + path + "\" must be an absolute, normalized path other than /");
}

}  // namespace

Result<SandboxProfile> SandboxProfile::from_json(const Json& json) {
  SandboxProfile p;
  JsonReader r(json, "profile");
  r.string("name", p.name);
  if (r.ok() && !valid_name(p.name)) r.fail("name", "use 1-64 of a-z, 0-9, '-' and '_'");
  r.string("description", p.description, false);
  r.string("workspace", p.workspace);
  check_path(r, "workspace", p.workspace);
  uint64_t uid = 0, gid = 0;
  // Never 0: the sandbox's own root would keep capabilities inside its namespaces.
  r.unsigned_integer("uid", uid, 1, 65535);
  r.unsigned_integer("gid", gid, 1, 65535);
  p.uid = static_cast<uint32_t>(uid);
  p.gid = static_cast<uint32_t>(gid);
  r.string("hostname", p.hostname);
  if (r.ok() && (p.hostname.empty() || p.hostname.size() > 63 || !valid_name(p.hostname))) {
    r.fail("hostname", "use 1-63 of a-z, 0-9, '-' and '_'");
  }
  r.boolean("network", p.network, false);
  each_object(r, "ro_binds", [&](JsonReader& b) {
    BindMount m;
    b.string("src", m.src);
    b.string("dest", m.dest);
    b.boolean("optional", m.optional, false);
    check_path(b, "src", m.src);
    check_path(b, "dest", m.dest);
    p.ro_binds.push_back(std::move(m));
  });
  each_object(r, "symlinks", [&](JsonReader& s) {
    SymlinkEntry e;
    s.string("path", e.path);
    s.string("target", e.target);
    check_path(s, "path", e.path);
    if (s.ok() && (e.target.empty() || e.target.find('\0') != std::string::npos)) s.fail("target", "must not be empty");
    p.symlinks.push_back(std::move(e));
  });
  each_object(r, "files", [&](JsonReader& f) {
    DataFile d;
    f.string("path", d.path);
    f.string("content", d.content);
    check_path(f, "path", d.path);
    if (f.ok() && d.content.size() > 65536) f.fail("content", "larger than 64 KiB");
    p.files.push_back(std::move(d));
  });
  each_object(r, "tmpfs", [&](JsonReader& t) {
    TmpfsMount m;
    t.string("path", m.path);
    t.unsigned_integer("size_bytes", m.size_bytes, 4096, uint64_t{1} << 40);
    check_path(t, "path", m.path);
    p.tmpfs.push_back(std::move(m));
  });
  r.string_map("env", p.env);
  if (r.ok()) {
    for (const auto& [k, v] : p.env) {
      if (!valid_env_name(k)) r.fail("env", "\"" + k + "\" is not a valid variable name");
      else if (v.find('\0') != std::string::npos) r.fail("env", k + " contains a NUL byte");
    }
    for (std::string_view required : kRequiredEnv) {
      if (!p.env.contains(std::string(required))) r.fail("env", std::string(required) + " is required (a fixed environment)");
    }
  }
  if (const Json* limits = r.value("limits", Json::value_t::object)) {
    JsonReader l(*limits, r.path("limits"));
    constexpr uint64_t kMax = uint64_t{1} << 50;
    l.unsigned_integer("cpu_seconds", p.limits.cpu_seconds, 1, 1'000'000);
    l.unsigned_integer("address_space_bytes", p.limits.address_space_bytes, uint64_t{16} << 20, kMax);
    l.unsigned_integer("processes", p.limits.processes, 4, 1'000'000);
    l.unsigned_integer("file_size_bytes", p.limits.file_size_bytes, 4096, kMax);
    l.unsigned_integer("open_files", p.limits.open_files, 16, 1'048'576);
    l.integer("wall_timeout_ms", p.limits.wall_timeout_ms, 1, 86'400'000);
    l.unsigned_integer("memory_bytes", p.limits.memory_bytes, uint64_t{16} << 20, kMax);
    l.unsigned_integer("cpu_quota_percent", p.limits.cpu_quota_percent, 1, 100'000);
    l.unsigned_integer("disk_bytes", p.limits.disk_bytes, uint64_t{1} << 20, kMax);
    l.unsigned_integer("disk_inodes", p.limits.disk_inodes, 64, uint64_t{1} << 32);
    if (l.ok() && p.limits.disk_bytes % 4096 != 0) l.fail("disk_bytes", "must be a multiple of 4096 (a tmpfs counts pages)");
    r.adopt(l.finish());
  }
  if (const Json* output = r.value("output", Json::value_t::object)) {
    JsonReader o(*output, r.path("output"));
    o.unsigned_integer("keep_bytes", p.output.keep_bytes, 0, uint64_t{1} << 30);
    o.unsigned_integer("head_bytes", p.output.head_bytes, 0, uint64_t{1} << 20);
    o.unsigned_integer("tail_bytes", p.output.tail_bytes, 0, uint64_t{1} << 20);
    o.unsigned_integer("max_bytes", p.output.max_bytes, 1, uint64_t{1} << 40);
    if (o.ok() && p.output.keep_bytes > p.output.max_bytes) o.fail("keep_bytes", "must not exceed max_bytes");
    r.adopt(o.finish());
  }
  if (const Json* seccomp = r.value("seccomp", Json::value_t::object)) {
    JsonReader s(*seccomp, r.path("seccomp"));
    s.string("errno", p.seccomp.errno_name);
    if (s.ok() && p.seccomp.errno_name != "EPERM" && p.seccomp.errno_name != "ENOSYS" && p.seccomp.errno_name != "EACCES") {
      s.fail("errno", "must be EPERM, EACCES or ENOSYS");
    }
    s.strings("deny", p.seccomp.deny);
    s.strings("deny_socket_families", p.seccomp.deny_socket_families, false);
    s.boolean("deny_namespace_creation", p.seccomp.deny_namespace_creation);
    r.adopt(s.finish());
  }
  r.strings("toolchain", p.toolchain, false);
  if (r.ok()) {
    for (const auto& t : p.toolchain) check_path(r, "toolchain", t);
  }
  r.strings("toolchain_dirs", p.toolchain_dirs, false);
  if (r.ok()) {
    for (const auto& t : p.toolchain_dirs) {
      // A final '*' names every sibling the prefix begins (/usr/lib/python3*).
      std::string dir = t.ends_with('*') ? t.substr(0, t.size() - 1) : t;
      if (dir.find('*') != std::string::npos) r.fail("toolchain_dirs", "only a final '*' is a pattern: " + t);
      else check_path(r, "toolchain_dirs", dir.ends_with('/') || dir.empty() ? dir + "x" : dir);
    }
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return p;
}

Result<SandboxProfile> SandboxProfile::parse(std::string_view text, std::string_view what) {
  auto json = parse_json(text, what);
  if (!json) return std::unexpected(json.error());
  auto p = from_json(*json);
  if (!p) return std::unexpected(p.error().with_context(what));
  return p;
}

Result<SandboxProfile::Source> SandboxProfile::source(std::string_view name_or_path) {
  std::string_view builtin = builtin_profile_text(name_or_path);
  if (!builtin.empty()) return Source{std::string(builtin), "built-in profile " + std::string(name_or_path)};
  if (name_or_path.find('/') == std::string_view::npos && !name_or_path.ends_with(".json")) {
    std::string names;
    for (auto n : builtin_profile_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    return fail(Errc::not_found, "no built-in sandbox profile \"" + std::string(name_or_path) + "\" (built in: " + names +
                                     "; give a path to use a profile file)");
  }
  auto text = read_file(std::string(name_or_path), 1 << 20);
  if (!text) return std::unexpected(text.error());
  return Source{std::move(*text), "profile " + std::string(name_or_path)};
}

Result<SandboxProfile> SandboxProfile::load(std::string_view name_or_path) {
  auto src = source(name_or_path);
  if (!src) return std::unexpected(src.error());
  return parse(src->text, src->what);
}

Json SandboxProfile::to_json() const {
  Json binds = Json::array(), links = Json::array(), data = Json::array(), tmp = Json::array();
  for (const auto& b : ro_binds) binds.push_back({{"src", b.src}, {"dest", b.dest}, {"optional", b.optional}});
  for (const auto& s : symlinks) links.push_back({{"path", s.path}, {"target", s.target}});
  for (const auto& f : files) data.push_back({{"path", f.path}, {"content", f.content}});
  for (const auto& t : tmpfs) tmp.push_back({{"path", t.path}, {"size_bytes", t.size_bytes}});
  Json json = {{"name", name},
               {"description", description},
               {"workspace", workspace},
               {"uid", uid},
               {"gid", gid},
               {"hostname", hostname},
               {"ro_binds", binds},
               {"symlinks", links},
               {"files", data},
               {"tmpfs", tmp},
               {"env", env},
               {"limits",
                {{"cpu_seconds", limits.cpu_seconds},
                 {"address_space_bytes", limits.address_space_bytes},
                 {"processes", limits.processes},
                 {"file_size_bytes", limits.file_size_bytes},
                 {"open_files", limits.open_files},
                 {"wall_timeout_ms", limits.wall_timeout_ms},
                 {"memory_bytes", limits.memory_bytes},
                 {"cpu_quota_percent", limits.cpu_quota_percent},
                 {"disk_bytes", limits.disk_bytes},
                 {"disk_inodes", limits.disk_inodes}}},
               {"output",
                {{"keep_bytes", output.keep_bytes},
                 {"head_bytes", output.head_bytes},
                 {"tail_bytes", output.tail_bytes},
                 {"max_bytes", output.max_bytes}}},
               {"seccomp",
                {{"errno", seccomp.errno_name},
                 {"deny", seccomp.deny},
                 {"deny_socket_families", seccomp.deny_socket_families},
                 {"deny_namespace_creation", seccomp.deny_namespace_creation}}},
               {"toolchain", toolchain}};
  if (network) json["network"] = true;
  if (!toolchain_dirs.empty()) json["toolchain_dirs"] = toolchain_dirs;
  return json;
}

Digest SandboxProfile::digest() const {
  // Every field is a string, boolean or bounded integer: canonicalization cannot fail.
  return sha256(canonicalize(to_json()).value());
}

}  // namespace warden
