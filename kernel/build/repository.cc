#include "kernel/build/repository.h"

#include <algorithm>

#include "common/file.h"

namespace warden::kernel {

namespace {

Error refused(const Refusal& r) { return Error{Errc::invalid_argument, r.message()}; }

// Every regular file under `seed`, by relative path, sorted: the order git trees need and
// the one that makes the seed commit deterministic.
Result<std::vector<ResolvedFile>> seed_files(const std::filesystem::path& seed) {
  std::error_code ec;
  if (!std::filesystem::is_directory(seed, ec)) return fail(Errc::not_found, "seed directory " + seed.string() + " does not exist");
  std::vector<ResolvedFile> files;
  for (auto it = std::filesystem::recursive_directory_iterator(seed, ec); !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_symlink(ec)) return fail(Errc::invalid_argument, "seed " + it->path().string() + " is a symlink");
    if (!it->is_regular_file(ec)) continue;
    auto content = read_file(it->path());
    if (!content) return std::unexpected(content.error());
    ResolvedFile f;
    f.path = std::filesystem::relative(it->path(), seed).generic_string();
    f.content = std::move(*content);
    auto perms = it->status(ec).permissions();
    f.mode = (perms & std::filesystem::perms::owner_exec) != std::filesystem::perms::none ? 0100755 : 0100644;
    files.push_back(std::move(f));
  }
  if (ec) return fail(Errc::io_error, "reading seed " + seed.string() + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const ResolvedFile& a, const ResolvedFile& b) { return a.path < b.path; });
  return files;
}

}  // namespace

Result<OpenedRepository> open_or_seed_repository(const std::filesystem::path& dir, const std::optional<RepositorySeed>& seed,
                                                 Clock& clock) {
  std::error_code ec;
  if (std::filesystem::exists(dir / ".git", ec) || std::filesystem::exists(dir / "HEAD", ec)) {
    auto ws = Workspace::open(dir);
    if (!ws) return std::unexpected(refused(ws.error()));
    return OpenedRepository{std::move(*ws), false};
  }
  if (!seed) {
    return fail(Errc::not_found, dir.string() + " is not a git repository, and the blueprint names no seed to create it from");
  }
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    return fail(Errc::already_exists, dir.string() + " exists and is not a git repository; Warden will not write into it");
  }
  std::vector<ResolvedFile> no_files;
  auto files = seed->dir ? seed_files(*seed->dir) : Result<std::vector<ResolvedFile>>(std::move(no_files));
  if (!files) return std::unexpected(files.error());
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating " + dir.string() + ": " + ec.message());
  if (auto made = GitRepo::init(dir, /*bare=*/false); !made) return std::unexpected(refused(made.error()));
  auto ws = Workspace::open(dir);
  if (!ws) return std::unexpected(refused(ws.error()));
  CommitRequest request;
  request.branch = "main";
  request.message = seed->dir ? "seed: " + seed->dir->filename().string() + "\n" : std::string("seed: (no files)\n");
  request.time_seconds = clock.now_ms() / 1000;
  auto root = ws->repo().commit_root(*files, request);
  if (!root) return std::unexpected(refused(root.error()));
  auto tree = ws->repo().tree_of(*root);
  if (!tree) return std::unexpected(refused(tree.error()));
  if (auto out = ws->repo().checkout(*tree, dir); !out) return std::unexpected(refused(out.error()));
  // The checkout leaves the index alone; without the seed in it, git would call every
  // checked-out file deleted from the commit and untracked in the work tree.
  if (auto index = ws->repo().reset_index(*tree); !index) return std::unexpected(refused(index.error()));
  return OpenedRepository{std::move(*ws), true};
}

}  // namespace warden::kernel
