#include "runner/environment/file_digest_memo.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <vector>

#include "common/file.h"

namespace warden {
Result<Digest> digest_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::unexpected(errno_error("opening " + path.string(), errno));
  Sha256 h;
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error("reading " + path.string(), errno));
    if (n == 0) break;
    h.update(std::string_view(buffer.data(), static_cast<size_t>(n)));
  }
  return h.finish();
}

FileDigestMemo::Entry FileDigestMemo::key_of(const struct stat& st) {
  Entry e;
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  e.size = static_cast<uint64_t>(st.st_size);
  e.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  e.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
  return e;
}

namespace {

template <typename T>
bool field(std::string_view& line, T& out) {
  auto space = line.find(' ');
  if (space == std::string_view::npos) return false;
  auto [p, ec] = std::from_chars(line.data(), line.data() + space, out);
  if (ec != std::errc() || p != line.data() + space) return false;
  line.remove_prefix(space + 1);
  return true;
}

}  // namespace

// One line per file: "dev ino size mtime_ns ctime_ns hex path\n"; a path holding a newline
// is never remembered (it is read each time).
FileDigestMemo FileDigestMemo::load(std::filesystem::path file) {
  FileDigestMemo memo(std::move(file));
  memo.pending_ = true;
  return memo;
}

void FileDigestMemo::read_if_pending() {
  if (!pending_) return;
  pending_ = false;
  auto text = read_file(file_, uint64_t{1} << 30);
  if (!text) return;
  std::string_view rest = *text;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    if (nl == std::string_view::npos) break;  // a torn last line is dropped
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    Entry e;
    if (!field(line, e.dev) || !field(line, e.ino) || !field(line, e.size) || !field(line, e.mtime_ns) ||
        !field(line, e.ctime_ns) || line.size() < 66 || line[64] != ' ') {
      continue;
    }
    auto d = Digest::from_hex(line.substr(0, 64));
    if (!d) continue;
    e.digest = *d;
    entries_[std::string(line.substr(65))] = e;
  }
}

bool FileDigestMemo::same_file(const Entry& a, const Entry& b) {
  return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns;
}

Result<Digest> FileDigestMemo::digest(const std::filesystem::path& path, const struct stat& st) {
  read_if_pending();
  Entry now = key_of(st);
  const std::string key = path.string();
  if (auto it = entries_.find(key); it != entries_.end() && same_file(it->second, now)) return it->second.digest;
  auto d = digest_file(path);
  if (!d) return d;
  ++files_read_;
  bytes_read_ += now.size;
  // A file changed within the last seconds may change again within the same timestamp tick
  // (coarse file system clocks) without its stat() changing: read it again next time rather
  // than remember it, as git treats "racily clean" entries.
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const bool settled = now_ns - std::max(now.mtime_ns, now.ctime_ns) > settle_ns_;
  if (settled && key.find('\n') == std::string::npos) {
    now.digest = *d;
    entries_[key] = now;
    dirty_ = true;
  }
  return d;
}

Status FileDigestMemo::save() {
  if (!dirty_ || file_.empty()) return {};
  std::erase_if(entries_, [](const auto& item) {
    struct stat st{};
    return ::lstat(item.first.c_str(), &st) != 0 || !same_file(item.second, key_of(st));
  });
  std::string out;
  out.reserve(entries_.size() * 140);
  for (const auto& [path, e] : entries_) {
    out += std::to_string(e.dev) + ' ' + std::to_string(e.ino) + ' ' + std::to_string(e.size) + ' ' +
           std::to_string(e.mtime_ns) + ' ' + std::to_string(e.ctime_ns) + ' ' + e.digest.hex() + ' ' + path + '\n';
  }
  if (Status st = write_file_atomic(file_, out, 0600); !st) return st;
  dirty_ = false;
  return {};
}

}  // namespace warden
