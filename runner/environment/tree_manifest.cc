#include "runner/environment/tree_manifest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/file.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

struct Walker {
  FileDigestMemo& memo;
  TreeManifest::Normalize normalize;
  bool unreadable_as_entries;
  std::vector<TreeEntry>& out;


  bool environment() const { return normalize == TreeManifest::Normalize::environment; }

  Status entry(const fs::path& abs, const std::string& rel, const struct stat& st) {
    TreeEntry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      e.type = TreeEntry::Type::directory;
      if (environment()) e.mode = 0755;
      out.push_back(e);
      bool skip_contents = environment() && (rel == "proc" || rel == "sys" || rel == "dev");
      return skip_contents ? Status{} : directory(abs, rel);
    }
    if (S_ISREG(st.st_mode)) {
      e.type = TreeEntry::Type::file;
      if (environment()) e.mode = (st.st_mode & 0111) ? 0555 : 0444;
      e.size = static_cast<uint64_t>(st.st_size);
      if (unreadable_as_entries && ::access(abs.c_str(), R_OK) != 0) {
        e.sha256 = Digest{};  // counted by name, mode and size
      } else {
        auto d = memo.digest(abs, st);
        if (!d) return std::unexpected(d.error());
        e.sha256 = *d;
      }
    } else if (S_ISLNK(st.st_mode)) {
      e.type = TreeEntry::Type::symlink;
      e.mode = 0;
      std::error_code ec;
      e.target = fs::read_symlink(abs, ec).string();
      if (ec) return std::unexpected(errno_error("reading the link " + abs.string(), ec.value()));
    } else {
      if (environment()) return {};
      e.type = TreeEntry::Type::other;
    }
    out.push_back(std::move(e));
    return {};
  }

  Status directory(const fs::path& abs, const std::string& rel) {
    DIR* dir = ::opendir(abs.c_str());
    if (!dir && unreadable_as_entries && (errno == EACCES || errno == EPERM)) return {};
    if (!dir) return std::unexpected(errno_error("opening the directory " + abs.string(), errno));
    std::vector<std::string> names;
    while (dirent* d = ::readdir(dir)) {
      std::string_view n = d->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      fs::path child = abs / n;
      struct stat st{};
      if (::lstat(child.c_str(), &st) != 0) return std::unexpected(errno_error("lstat " + child.string(), errno));
      if (Status s = entry(child, rel.empty() ? n : rel + "/" + n, st); !s) return s;
    }
    return {};
  }
};

Json entry_json(const TreeEntry& e) {
  switch (e.type) {
    case TreeEntry::Type::directory: return Json::array({"d", e.mode, e.path});
    case TreeEntry::Type::file: return Json::array({"f", e.mode, e.size, e.sha256.hex(), e.path});
    case TreeEntry::Type::symlink: return Json::array({"l", e.target, e.path});
    case TreeEntry::Type::other: return Json::array({"o", e.mode, e.path});
  }
  return Json::array();
}

}  // namespace

Result<TreeManifest> TreeManifest::scan(const fs::path& root, FileDigestMemo& memo, Normalize normalize,
                                        bool unreadable_as_entries) {
  struct stat st{};
  if (::lstat(root.c_str(), &st) != 0) return std::unexpected(errno_error("lstat " + root.string(), errno));
  if (!S_ISDIR(st.st_mode)) return std::unexpected(Error{Errc::invalid_argument, root.string() + " is not a directory"});
  TreeManifest m;
  Walker w{memo, normalize, unreadable_as_entries, m.entries};
  if (Status s = w.entry(root, "", st); !s) return std::unexpected(s.error());
  // Walked in sorted name order per directory; sorted by whole path here so that "a/b" and
  // "a-b" order the same way on every host.
  std::sort(m.entries.begin(), m.entries.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return m;
}

std::string TreeManifest::text() const {
  std::string out;
  for (const auto& e : entries) {
    out += canonicalize(entry_json(e)).value();
    out += '\n';
  }
  return out;
}

Result<TreeManifest> TreeManifest::parse(std::string_view text) {
  TreeManifest m;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) return std::unexpected(Error{Errc::corrupt, "manifest: a torn last line"});
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    auto bad = [&] { return std::unexpected(Error{Errc::corrupt, "manifest line " + std::to_string(line_no) + " is malformed"}); };
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_array() || j.empty() || !j[0].is_string()) return bad();
    TreeEntry e;
    const std::string t = j[0].get<std::string>();
    auto u32 = [](const Json& v) { return v.is_number_unsigned() && v.get<uint64_t>() <= 07777; };
    if (t == "d" && j.size() == 3 && u32(j[1]) && j[2].is_string()) {
      e.type = TreeEntry::Type::directory;
      e.mode = j[1].get<uint32_t>();
      e.path = j[2].get<std::string>();
    } else if (t == "f" && j.size() == 5 && u32(j[1]) && j[2].is_number_unsigned() && j[3].is_string() && j[4].is_string()) {
      e.type = TreeEntry::Type::file;
      e.mode = j[1].get<uint32_t>();
      e.size = j[2].get<uint64_t>();
      auto d = Digest::from_hex(j[3].get<std::string>());
      if (!d) return bad();
      e.sha256 = *d;
      e.path = j[4].get<std::string>();
    } else if (t == "l" && j.size() == 3 && j[1].is_string() && j[2].is_string()) {
      e.type = TreeEntry::Type::symlink;
      e.target = j[1].get<std::string>();
      e.path = j[2].get<std::string>();
    } else if (t == "o" && j.size() == 3 && u32(j[1]) && j[2].is_string()) {
      e.type = TreeEntry::Type::other;
      e.mode = j[1].get<uint32_t>();
      e.path = j[2].get<std::string>();
    } else {
      return bad();
    }
    if (!m.entries.empty() && !(m.entries.back().path < e.path)) return bad();
    m.entries.push_back(std::move(e));
  }
  return m;
}

Digest TreeManifest::digest() const { return sha256(text()); }

uint64_t TreeManifest::file_bytes() const {
  uint64_t n = 0;
  for (const auto& e : entries) n += e.type == TreeEntry::Type::file ? e.size : 0;
  return n;
}

size_t TreeManifest::files() const {
  return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), [](const TreeEntry& e) { return e.type == TreeEntry::Type::file; }));
}

std::vector<std::string> differing_paths(const TreeManifest& a, const TreeManifest& b, size_t limit) {
  std::vector<std::string> out;
  size_t i = 0, j = 0;
  while ((i < a.entries.size() || j < b.entries.size()) && out.size() < limit) {
    if (j == b.entries.size() || (i < a.entries.size() && a.entries[i].path < b.entries[j].path)) {
      out.push_back(a.entries[i++].path);
    } else if (i == a.entries.size() || b.entries[j].path < a.entries[i].path) {
      out.push_back(b.entries[j++].path);
    } else {
      if (!(a.entries[i] == b.entries[j])) out.push_back(a.entries[i].path);
      ++i, ++j;
    }
  }
  return out;
}

}  // namespace warden
