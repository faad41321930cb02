#include "tests/support/git_fixture.h"

#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "diff/diff.h"
#include "tests/support/files.h"
#include "tests/support/warden_cli.h"

namespace warden::test {

namespace fs = std::filesystem;

namespace {

// The developer's ~/.gitconfig and /etc/gitconfig must not change what git writes (a
// diff.noprefix, a core.quotePath=false or a diff.renames would change every patch), and
// commit dates are pinned so base commits are the same on every run. Set once in this
// process; every git and warden child inherits it.
void isolate_git_environment() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    ::setenv("GIT_AUTHOR_DATE", "1600000000 +0000", 1);
    ::setenv("GIT_COMMITTER_DATE", "1600000000 +0000", 1);
    ::setenv("GIT_TERMINAL_PROMPT", "0", 1);
    ::setenv("TZ", "UTC", 1);
    ::setenv("LC_ALL", "C", 1);
  });
}

const std::string& git_program() {
  static const std::string path = find_program("git");
  return path;
}

}  // namespace

std::string find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    auto colon = dirs.find(':');
    fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  throw std::runtime_error("cannot find " + std::string(name) + " on PATH");
}

std::string trim_newline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

GitRepoFixture::GitRepoFixture() : repo_(tmp_.path() / "repo") {
  isolate_git_environment();
  fs::create_directories(repo_);
  git({"init", "-q", "-b", "main"});
  git({"config", "user.name", "Warden Test"});
  git({"config", "user.email", "test@warden.invalid"});
  // Checked-in bytes must be the bytes written: no line-ending conversion either way.
  git({"config", "core.autocrlf", "false"});
  git({"config", "core.filemode", "true"});
  git({"config", "core.symlinks", "true"});
}

ProcessResult GitRepoFixture::try_git(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{git_program(), "-C", repo_.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::string GitRepoFixture::git(const std::vector<std::string>& args) const {
  ProcessResult r = try_git(args);
  if (!r.exited_with(0)) {
    std::string cmd = "git";
    for (const auto& a : args) cmd += " " + a;
    throw std::runtime_error(cmd + " failed: " + describe(r));
  }
  return r.out;
}

std::string GitRepoFixture::git_line(const std::vector<std::string>& args) const { return trim_newline(git(args)); }

void GitRepoFixture::write(std::string_view path, std::string_view bytes) const {
  fs::path p = repo_ / std::string(path);
  fs::create_directories(p.parent_path());
  write_file(p, bytes);
}

std::string GitRepoFixture::read(std::string_view path) const { return read_file(repo_ / std::string(path)); }

void GitRepoFixture::remove(std::string_view path) const {
  fs::path p = repo_ / std::string(path);
  if (!fs::is_symlink(p) && !fs::exists(p)) throw std::runtime_error("nothing to remove at " + p.string());
  fs::remove_all(p);
}

void GitRepoFixture::symlink(std::string_view path, std::string_view target) const {
  fs::path p = repo_ / std::string(path);
  fs::create_directories(p.parent_path());
  fs::create_symlink(std::string(target), p);
}

void GitRepoFixture::set_executable(std::string_view path, bool executable) const {
  fs::permissions(repo_ / std::string(path), fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  executable ? fs::perm_options::add : fs::perm_options::remove);
}

std::string GitRepoFixture::commit_all(const std::string& message) {
  git({"add", "-A"});
  git({"commit", "-q", "--allow-empty", "-m", message});
  return git_line({"rev-parse", "HEAD"});
}

std::filesystem::path GitRepoFixture::patch_file(const std::string& base, const std::string& name,
                                                const std::map<std::string, std::string>& files) {
  for (const auto& [path, content] : files) write(path, content);
  std::filesystem::path out = scratch(name);
  std::ofstream(out, std::ios::binary) << staged_patch();
  reset_hard(base);
  return out;
}

std::string GitRepoFixture::staged_patch(const std::vector<std::string>& flags) {
  git({"add", "-A"});
  std::vector<std::string> args{"diff", "--cached", "--full-index", "--binary"};
  args.insert(args.end(), flags.begin(), flags.end());
  return git(args);
}

void GitRepoFixture::reset_hard(const std::string& rev) {
  git({"reset", "-q", "--hard", rev});
  git({"clean", "-q", "-f", "-d", "-x"});
}

std::string GitRepoFixture::git_apply_tree(const std::string& base, const std::string& patch,
                                           const std::vector<std::string>& apply_flags) {
  fs::path file = scratch("git-apply-" + std::to_string(++patch_counter_) + ".patch");
  write_file(file, patch);
  git({"read-tree", base});
  std::vector<std::string> args{"apply", "--cached"};
  args.insert(args.end(), apply_flags.begin(), apply_flags.end());
  args.push_back(file.string());
  ProcessResult applied = try_git(args);
  std::string tree = applied.exited_with(0) ? git_line({"write-tree"}) : "";
  git({"read-tree", base});  // leave the index as the base had it
  if (!applied.exited_with(0)) throw std::runtime_error("git apply --cached refused the patch: " + describe(applied));
  return tree;
}

RepoSnapshot GitRepoFixture::snapshot() const {
  RepoSnapshot s;
  fs::path git_dir = repo_ / ".git";
  for (const auto& e : fs::recursive_directory_iterator(git_dir / "objects")) {
    if (!e.is_directory()) s.objects.insert(fs::relative(e.path(), git_dir).string());
  }
  for (const auto& e : fs::recursive_directory_iterator(git_dir / "refs")) {
    if (!e.is_directory()) s.refs[fs::relative(e.path(), git_dir).string()] = read_file(e.path());
  }
  for (const char* top : {"HEAD", "packed-refs"}) {
    if (fs::exists(git_dir / top)) s.refs[top] = read_file(git_dir / top);
  }
  return s;
}

std::string describe_difference(const RepoSnapshot& before, const RepoSnapshot& after) {
  std::ostringstream out;
  for (const auto& o : after.objects) {
    if (!before.objects.contains(o)) out << "new object file " << o << "\n";
  }
  for (const auto& o : before.objects) {
    if (!after.objects.contains(o)) out << "removed object file " << o << "\n";
  }
  for (const auto& [name, value] : after.refs) {
    auto it = before.refs.find(name);
    if (it == before.refs.end()) out << "new ref " << name << " = " << value;
    else if (it->second != value) out << "moved ref " << name << ": " << it->second << " -> " << value;
  }
  for (const auto& [name, value] : before.refs) {
    if (!after.refs.contains(name)) out << "removed ref " << name << "\n";
  }
  return out.str();
}

ProcessResult warden_diff(const std::string& sub, const std::string& input, const GitRepoFixture& repo,
                          const std::string& base, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"diff", sub, input, "--repo", repo.repo().string(), "--base", base};
  args.insert(args.end(), extra.begin(), extra.end());
  return warden(args);
}

fs::path parse_to_diff(GitRepoFixture& repo, const std::string& base, const std::string& patch, const std::string& step) {
  fs::path patch_file = repo.scratch("change.patch");
  fs::path diff_file = repo.scratch("DIFF.json");
  write_file(patch_file, patch);
  ProcessResult parsed = warden_diff("parse", patch_file.string(), repo, base, {"--step", step});
  EXPECT_TRUE(parsed.exited_with(0)) << "warden diff parse refused a patch git made:\n" << describe(parsed)
                                     << "\npatch:\n" << patch;
  write_file(diff_file, parsed.out);
  return diff_file;
}

nlohmann::json reseal(nlohmann::json diff) {
  diff.erase("diff_sha256");
  auto parsed = Diff::from_json(diff);
  if (!parsed) throw std::runtime_error("reseal: not a well-formed Diff: " + parsed.error().message());
  diff["diff_sha256"] = parsed->digest().str();
  return diff;
}

std::string numbered(int count, std::string_view tag) {
  std::string out;
  for (int i = 1; i <= count; ++i) out += std::string(tag) + " " + std::to_string(i) + "\n";
  return out;
}

std::string replace_line(std::string text, int n, std::string_view with) {
  size_t start = 0;
  for (int i = 1; i < n; ++i) start = text.find('\n', start) + 1;
  size_t end = text.find('\n', start);
  return text.replace(start, end - start, with);
}

}  // namespace warden::test
