#include "runner/base_checkout.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/file.h"
#include "runner/diff_layer.h"
#include "runner/scratch_dir.h"

namespace warden {

namespace fs = std::filesystem;

Checked<fs::path> BaseCheckouts::get(GitRepo& repo, const ObjectId& tree, bool* made) {
  if (made) *made = false;
  fs::path final_path = path_of(tree);
  struct stat st;
  if (::stat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return final_path;
  auto failure = [](const Error& e) { return std::unexpected(Refusal{RefusalCode::workspace_error, "", e.message}); };
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    fs::create_directories(dir_, ec);
    if (ec) return failure(Error{Errc::io_error, "creating " + dir_.string() + ": " + ec.message()});
    ::chmod(dir_.c_str(), 0711);
  }
  std::random_device rd;
  fs::path tmp = dir_ / (".tmp-" + tree.hex() + "-" + std::to_string(rd()));
  // The temporary directory is removed on every failure path.
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      if (!path.empty()) remove_tree(path);
    }
  } cleanup{tmp};
  if (Status st = make_owned_dir(tmp, host_.uid, host_.gid, 0755); !st) return failure(st.error());
  if (auto st = write_full_tree(repo, tree, tmp, host_); !st) return std::unexpected(st.error());
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    // Another runner made the same checkout first: theirs is as good as ours.
    if ((errno == EEXIST || errno == ENOTEMPTY) && fs::is_directory(final_path, ec)) return final_path;
    return failure(errno_error("rename " + final_path.string(), errno));
  }
  cleanup.path.clear();
  if (made) *made = true;
  return final_path;
}

}  // namespace warden
