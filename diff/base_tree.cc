#include "diff/base_tree.h"

#include <nettle/sha1.h>

#include <memory>
#include <set>

#include "common/encoding.h"

namespace warden {

std::string git_blob_id(std::string_view content) {
  std::string header = "blob " + std::to_string(content.size());
  header += '\0';
  uint8_t out[SHA1_DIGEST_SIZE];
  sha1_ctx ctx;
  sha1_init(&ctx);
  sha1_update(&ctx, header.size(), reinterpret_cast<const uint8_t*>(header.data()));
  sha1_update(&ctx, content.size(), reinterpret_cast<const uint8_t*>(content.data()));
  sha1_digest(&ctx, sizeof out, out);
  return to_hex(std::span<const uint8_t>(out, sizeof out));
}

void MemoryFileTree::put(std::string path, std::string content, uint32_t mode) {
  std::string id = git_blob_id(content);
  files_[std::move(path)] = BaseFile{std::move(content), mode, std::move(id)};
}

Checked<EntryKind> MemoryFileTree::kind(std::string_view path) {
  if (auto it = files_.find(path); it != files_.end()) {
    return it->second.mode == 0120000 ? EntryKind::symlink : EntryKind::file;
  }
  std::string prefix = std::string(path) + "/";
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && it->first.starts_with(prefix)) return EntryKind::directory;
  return EntryKind::none;
}

Checked<std::optional<BaseFile>> MemoryFileTree::read(std::string_view path) {
  auto it = files_.find(path);
  if (it == files_.end()) return std::optional<BaseFile>();
  return std::optional<BaseFile>(it->second);
}

Checked<std::vector<std::string>> MemoryFileTree::names(std::string_view dir) {
  std::string prefix = dir.empty() ? "" : std::string(dir) + "/";
  std::set<std::string> out;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.starts_with(prefix); ++it) {
    std::string_view rest = std::string_view(it->first).substr(prefix.size());
    out.insert(std::string(rest.substr(0, rest.find('/'))));
  }
  return std::vector<std::string>(out.begin(), out.end());
}

}  // namespace warden
