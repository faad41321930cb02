// Environments on a real file system: the file-digest memo (what stat() proves and what it
// does not), tree manifests (content only: owners and times never count, modes and links
// do), and the store (deduplicated by file, every object verified as it arrives, a stored
// tree scanned again before use, least-recently-used collection).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runner/environment/environment_store.h"
#include "runner/environment/environment_recipe.h"
#include "runner/environment/file_digest_memo.h"
#include "runner/environment/tree_manifest.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

struct stat lstat_of(const fs::path& p) {
  struct stat st{};
  if (::lstat(p.c_str(), &st) != 0) throw std::runtime_error("lstat " + p.string());
  return st;
}

void set_mtime(const fs::path& p, const timespec& when) {
  timespec times[2] = {when, when};
  if (::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) throw std::runtime_error("utimensat " + p.string());
}

// File times come from the kernel's coarse clock (one tick, up to 10 ms): two events that
// must be told apart by a time are a tick apart.
void next_clock_tick() { std::this_thread::sleep_for(std::chrono::milliseconds(25)); }

void write_tree(const fs::path& root, const std::map<std::string, std::string>& files) {
  for (const auto& [path, bytes] : files) {
    fs::create_directories((root / path).parent_path());
    write_file(root / path, bytes);
  }
}

TreeManifest scan(const fs::path& root, TreeManifest::Normalize normalize = TreeManifest::Normalize::none) {
  FileDigestMemo memo;
  auto m = TreeManifest::scan(root, memo, normalize);
  if (!m) throw std::runtime_error(m.error().message);
  return *m;
}

const TreeEntry& entry(const TreeManifest& m, std::string_view path) {
  auto it = std::find_if(m.entries.begin(), m.entries.end(), [&](const TreeEntry& e) { return e.path == path; });
  if (it == m.entries.end()) throw std::runtime_error("no entry " + std::string(path));
  return *it;
}

// --- FileDigestMemo ---

TEST(FileDigestMemo, ADigestRememberedSurvivesSaveAndLoad) {
  TempDir dir;
  write_file(dir / "f", "hello\n");
  FileDigestMemo memo(dir / "memo");
  memo.set_settle_time(std::chrono::nanoseconds(0));
  auto first = memo.digest(dir / "f", lstat_of(dir / "f"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, sha256("hello\n"));
  EXPECT_EQ(memo.files_read(), 1u);
  ASSERT_TRUE(memo.save());

  FileDigestMemo again = FileDigestMemo::load(dir / "memo");
  EXPECT_EQ(again.size(), 1u);
  auto second = again.digest(dir / "f", lstat_of(dir / "f"));
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(again.files_read(), 0u) << "stat() alone should have answered";
}

// The same size, and the modification time put back as it was: only the change time, which
// no caller can set, says the bytes are new.
TEST(FileDigestMemo, AFileRewrittenIsReadAgainEvenWithItsMtimeSetBack) {
  TempDir dir;
  const fs::path f = dir / "f";
  write_file(f, "aaaa");
  const struct stat before = lstat_of(f);
  FileDigestMemo memo(dir / "memo");
  memo.set_settle_time(std::chrono::nanoseconds(0));
  ASSERT_EQ(memo.digest(f, before).value(), sha256("aaaa"));
  ASSERT_TRUE(memo.save());

  next_clock_tick();
  write_file(f, "bbbb");
  set_mtime(f, before.st_mtim);
  const struct stat after = lstat_of(f);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

  FileDigestMemo loaded = FileDigestMemo::load(dir / "memo");
  EXPECT_EQ(loaded.digest(f, after).value(), sha256("bbbb"));
  EXPECT_EQ(loaded.files_read(), 1u);
  EXPECT_EQ(memo.digest(f, after).value(), sha256("bbbb"));
}

// A file rewritten with the same size right after its digest was taken (no time passes that
// a test waits for) is read again.
TEST(FileDigestMemo, AFileRewrittenRightAfterItWasReadIsReadAgain) {
  TempDir dir;
  const fs::path f = dir / "f";
  FileDigestMemo memo(dir / "memo");
  for (int i = 0; i < 20; ++i) {
    const std::string a = "a" + std::to_string(i % 10), b = "b" + std::to_string(i % 10);
    write_file(f, a);
    ASSERT_EQ(memo.digest(f, lstat_of(f)).value(), sha256(a));
    write_file(f, b);
    ASSERT_EQ(memo.digest(f, lstat_of(f)).value(), sha256(b)) << "round " << i;
  }
}

// Garbage, a line whose stat fields match the file but whose digest does not parse, and a
// torn last line: each is a miss, so the file is read, never vouched for.
// A file changed a moment ago could change again within one tick of a coarse file system
// clock without its stat() moving: it is read, not remembered.
TEST(FileDigestMemo, AFileChangedAMomentAgoIsNotRemembered) {
  TempDir dir;
  write_file(dir / "f", "fresh");
  FileDigestMemo memo(dir / "memo");
  ASSERT_EQ(memo.digest(dir / "f", lstat_of(dir / "f")).value(), sha256("fresh"));
  EXPECT_EQ(memo.size(), 0u);
  memo.set_settle_time(std::chrono::nanoseconds(0));
  ASSERT_EQ(memo.digest(dir / "f", lstat_of(dir / "f")).value(), sha256("fresh"));
  EXPECT_EQ(memo.size(), 1u);
}

TEST(FileDigestMemo, ACorruptMemoFileIsAMissNotAnError) {
  TempDir dir;
  write_file(dir / "f", "content");
  const struct stat st = lstat_of(dir / "f");
  const std::string stat_fields = std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
                                  std::to_string(int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec) + " " +
                                  std::to_string(int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec);
  write_file(dir / "memo", std::string("\x00\xff garbage\n") + stat_fields + " " + std::string(64, 'z') + " " +
                               (dir / "f").string() + "\n" + stat_fields + " " + sha256("other").hex() + " " + (dir / "f").string());
  FileDigestMemo memo = FileDigestMemo::load(dir / "memo");
  memo.set_settle_time(std::chrono::nanoseconds(0));
  EXPECT_EQ(memo.size(), 0u);
  auto d = memo.digest(dir / "f", lstat_of(dir / "f"));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, sha256("content"));
  EXPECT_EQ(memo.files_read(), 1u);
  // And it is replaced by a good one.
  ASSERT_TRUE(memo.save());
  EXPECT_EQ(FileDigestMemo::load(dir / "memo").size(), 1u);
}

TEST(FileDigestMemo, PathsGoneOrChangedAreLeftOutWhenItIsSaved) {
  TempDir dir;
  write_file(dir / "kept", "kept");
  write_file(dir / "gone", "gone");
  write_file(dir / "changed", "before");
  FileDigestMemo memo(dir / "memo");
  memo.set_settle_time(std::chrono::nanoseconds(0));
  for (const char* name : {"kept", "gone", "changed"}) ASSERT_TRUE(memo.digest(dir / name, lstat_of(dir / name)));
  ASSERT_EQ(memo.size(), 3u);
  fs::remove(dir / "gone");
  next_clock_tick();
  write_file(dir / "changed", "after!");
  ASSERT_TRUE(memo.save());
  FileDigestMemo loaded = FileDigestMemo::load(dir / "memo");
  EXPECT_EQ(loaded.size(), 1u);
  loaded.set_settle_time(std::chrono::nanoseconds(0));
  EXPECT_EQ(loaded.digest(dir / "kept", lstat_of(dir / "kept")).value(), sha256("kept"));
  EXPECT_EQ(loaded.files_read(), 0u);
  EXPECT_EQ(loaded.digest(dir / "changed", lstat_of(dir / "changed")).value(), sha256("after!"));
  EXPECT_EQ(loaded.files_read(), 1u);
}

TEST(FileDigestMemo, ItsFileIsReadOnlyWhenItIsFirstAsked) {
  TempDir dir;
  write_file(dir / "f", "content");
  {
    FileDigestMemo memo(dir / "memo");
    memo.set_settle_time(std::chrono::nanoseconds(0));
    ASSERT_TRUE(memo.digest(dir / "f", lstat_of(dir / "f")));
    ASSERT_TRUE(memo.save());
  }
  FileDigestMemo memo = FileDigestMemo::load(dir / "memo");
  // Replaced after load(): what is read is the file as it is at first use.
  fs::remove(dir / "memo");
  EXPECT_EQ(memo.size(), 0u);
}

// --- TreeManifest ---

class TreeManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const fs::path& root : {a_, b_}) {
      write_tree(root, {{"bin/tool", "#!/bin/sh\necho tool\n"}, {"lib/data.txt", "data\n"}, {"README", "read me\n"}});
      fs::permissions(root / "bin/tool", fs::perms(0755));
      fs::permissions(root / "lib/data.txt", fs::perms(0644));
      fs::permissions(root / "README", fs::perms(0644));
      fs::create_directory_symlink("lib", root / "lib64");
    }
  }
  TempDir tmp_;
  const fs::path a_ = tmp_ / "a", b_ = tmp_ / "b";
};

TEST_F(TreeManifestTest, TheSameContentGivesTheSameDigestWhoeverOwnsItAndWhenever) {
  timespec old{1'000'000'000, 0};
  for (const char* p : {"bin/tool", "lib/data.txt", "README", "lib", "bin", "lib64"}) set_mtime(b_ / p, old);
  for (const char* p : {"bin/tool", "lib/data.txt", "README"}) ASSERT_EQ(::lchown((b_ / p).c_str(), 65534, 65534), 0);
  EXPECT_EQ(scan(a_).digest(), scan(b_).digest()) << scan(a_).text() << "\n" << scan(b_).text();
  EXPECT_EQ(scan(a_, TreeManifest::Normalize::environment).digest(), scan(b_, TreeManifest::Normalize::environment).digest());
}

TEST_F(TreeManifestTest, AModeASymlinkTargetOrAnAddedFileEachChangeTheDigest) {
  const Digest original = scan(a_).digest();
  ASSERT_EQ(scan(b_).digest(), original);

  fs::permissions(b_ / "README", fs::perms(0755));  // the exec bit
  EXPECT_NE(scan(b_).digest(), original);
  EXPECT_NE(scan(b_, TreeManifest::Normalize::environment).digest(), scan(a_, TreeManifest::Normalize::environment).digest());
  fs::permissions(b_ / "README", fs::perms(0600));  // a mode alone, as the host has it
  EXPECT_NE(scan(b_).digest(), original);
  fs::permissions(b_ / "README", fs::perms(0644));
  ASSERT_EQ(scan(b_).digest(), original);

  fs::remove(b_ / "lib64");
  fs::create_directory_symlink("bin", b_ / "lib64");
  EXPECT_NE(scan(b_).digest(), original);
  fs::remove(b_ / "lib64");
  fs::create_directory_symlink("lib", b_ / "lib64");
  ASSERT_EQ(scan(b_).digest(), original);

  write_file(b_ / "lib/x.pth", "import os\n");
  EXPECT_NE(scan(b_).digest(), original);
}

TEST_F(TreeManifestTest, AnEnvironmentReadingMakesFilesReadOnlyByWhetherTheyExecute) {
  fs::permissions(a_ / "lib", fs::perms(0700));
  TreeManifest m = scan(a_, TreeManifest::Normalize::environment);
  EXPECT_EQ(entry(m, "README").mode, 0444u);
  EXPECT_EQ(entry(m, "lib/data.txt").mode, 0444u);
  EXPECT_EQ(entry(m, "bin/tool").mode, 0555u);
  EXPECT_EQ(entry(m, "lib").mode, 0755u);
  EXPECT_EQ(entry(m, "lib64").type, TreeEntry::Type::symlink);
  EXPECT_EQ(entry(m, "lib64").target, "lib");
  // As the host has them, the modes are what they are.
  TreeManifest host = scan(a_);
  EXPECT_EQ(entry(host, "README").mode, 0644u);
  EXPECT_EQ(entry(host, "bin/tool").mode, 0755u);
  EXPECT_EQ(entry(host, "lib").mode, 0700u);
}

TEST_F(TreeManifestTest, DifferingPathsNamesWhatChanged) {
  write_file(b_ / "lib/data.txt", "other\n");
  write_file(b_ / "added", "new\n");
  fs::remove(b_ / "README");
  EXPECT_EQ(differing_paths(scan(a_), scan(b_)), (std::vector<std::string>{"README", "added", "lib/data.txt"}));
  EXPECT_EQ(differing_paths(scan(a_), scan(b_), 1), (std::vector<std::string>{"README"}));
  EXPECT_TRUE(differing_paths(scan(a_), scan(a_)).empty());
}

TEST_F(TreeManifestTest, ParseOfTextRoundTrips) {
  for (auto normalize : {TreeManifest::Normalize::none, TreeManifest::Normalize::environment}) {
    TreeManifest m = scan(a_, normalize);
    auto parsed = TreeManifest::parse(m.text());
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->entries, m.entries);
    EXPECT_EQ(parsed->digest(), m.digest());
  }
  EXPECT_FALSE(TreeManifest::parse("[\"f\",420]\n"));
  EXPECT_FALSE(TreeManifest::parse(scan(a_).text() + "[\"d\",493,\"zz\"]"));  // torn last line
}

// --- EnvironmentStore ---

class EnvironmentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = EnvironmentStore::open(tmp_ / "store");
    ASSERT_TRUE(s) << s.error().message;
    store_.emplace(std::move(*s));
  }

  // A small tree: usr/bin/tool (executable), usr/share/common, and `extra` files.
  fs::path make_tree(const std::string& name, const std::map<std::string, std::string>& extra = {}) {
    fs::path root = tmp_ / name;
    write_tree(root, {{"usr/bin/tool", "#!/bin/sh\n"}, {"usr/share/common", "shared by every tree\n"}});
    write_tree(root, extra);
    fs::permissions(root / "usr/bin/tool", fs::perms(0755));
    return root;
  }

  Environment import(const fs::path& root, const std::map<std::string, std::string>& env = {}) {
    auto e = store_->import_tree(root, env, {{"kind", "directory"}});
    if (!e) throw std::runtime_error(e.error().message);
    return *e;
  }

  std::vector<std::string> stored_envs() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(store_->dir() / "envs")) out.push_back(e.path().filename().string());
    return out;
  }

  TempDir tmp_;
  std::optional<EnvironmentStore> store_;
};

TEST_F(EnvironmentStoreTest, IdenticalTreesImportedTwiceAreOneEnvironment) {
  Environment a = import(make_tree("a"));
  Environment b = import(make_tree("b"));
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.tree, b.tree);
  EXPECT_EQ(stored_envs().size(), 1u);
  EXPECT_EQ(a.files, 2u);
  // Variables are part of what an environment is.
  Environment with_var = import(make_tree("c"), {{"NODE_PATH", "/opt/app"}});
  EXPECT_NE(with_var.digest, a.digest);
  EXPECT_EQ(with_var.tree, a.tree);
  EXPECT_EQ(stored_envs().size(), 2u);
  // The stored root is the tree in its environment reading.
  EXPECT_EQ(scan(a.root, TreeManifest::Normalize::environment).digest(), a.tree);
  EXPECT_EQ(lstat_of(a.root / "usr/bin/tool").st_mode & 07777, 0555u);
  EXPECT_EQ(lstat_of(a.root / "usr/share/common").st_mode & 07777, 0444u);
}

TEST_F(EnvironmentStoreTest, EnvironmentsSharingAFileShareOneObject) {
  Environment a = import(make_tree("a", {{"usr/share/only-a", "a\n"}}));
  Environment b = import(make_tree("b", {{"usr/share/only-b", "b\n"}}));
  ASSERT_NE(a.digest, b.digest);
  auto object = store_->object(sha256("shared by every tree\n"), false);
  ASSERT_TRUE(object) << object.error().message;
  const struct stat obj = lstat_of(*object);
  EXPECT_GE(obj.st_nlink, 3u);  // the object and a link in each tree
  EXPECT_EQ(lstat_of(a.root / "usr/share/common").st_ino, obj.st_ino);
  EXPECT_EQ(lstat_of(b.root / "usr/share/common").st_ino, obj.st_ino);
  EXPECT_EQ(lstat_of(*store_->object(sha256("a\n"), false)).st_nlink, 2u);
}

TEST_F(EnvironmentStoreTest, ObjectsThatAreNotWhatTheManifestSaysAreRefused) {
  fs::path root = make_tree("a");
  TreeManifest m = scan(root, TreeManifest::Normalize::environment);
  auto installed = store_->install(m, {}, {{"kind", "test"}}, [&](const TreeEntry& e, const fs::path& dest) -> Status {
    write_file(dest, e.path == "usr/share/common" ? "not what the manifest names\n" : read_file(root / e.path));
    return {};
  });
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().code, Errc::verification_failed) << installed.error().message;
  EXPECT_NE(installed.error().message.find("usr/share/common"), std::string::npos) << installed.error().message;
  EXPECT_TRUE(stored_envs().empty());
  EXPECT_FALSE(store_->object(sha256("not what the manifest names\n"), false));
  EXPECT_FALSE(store_->find(environment_digest(m.digest(), {})).value().has_value());
}

// A store directory that is not this uid's own, or a link to one, is refused as it is: open()
// changes the mode of none of them.
TEST_F(EnvironmentStoreTest, AStoreThatIsNotThisUsersOwnIsRefusedAndLeftAsItIs) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another uid needs root";
  const fs::path theirs = tmp_ / "theirs";
  fs::create_directory(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(theirs.c_str(), 0700), 0);
  auto opened = EnvironmentStore::open(theirs);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, Errc::verification_failed) << opened.error().message;
  EXPECT_EQ(lstat_of(theirs).st_mode & 07777, 0700u);

  const fs::path target = tmp_ / "target";
  fs::create_directory(target);
  ASSERT_EQ(::chmod(target.c_str(), 0700), 0);
  fs::create_directory_symlink(target, tmp_ / "link");
  EXPECT_FALSE(EnvironmentStore::open(tmp_ / "link"));
  EXPECT_EQ(lstat_of(target).st_mode & 07777, 0700u);
}

// What a runner's fetch does: objects added one by one (each hashed), then the install asks
// only for those still missing, so a fetch cut short is resumed rather than begun again.
TEST_F(EnvironmentStoreTest, ObjectsAddedAheadAreNotAskedForByTheInstall) {
  fs::path root = make_tree("a");
  TreeManifest m = scan(root, TreeManifest::Normalize::environment);
  const Digest tool = sha256("#!/bin/sh\n");
  Status wrong = store_->add_object(tool, true, "not the tool\n");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, Errc::verification_failed) << wrong.error().message;
  EXPECT_FALSE(store_->object(tool, true));
  ASSERT_TRUE(store_->add_object(tool, true, "#!/bin/sh\n"));
  ASSERT_TRUE(store_->object(tool, true));
  EXPECT_FALSE(store_->object(tool, false));  // executable or not, they are two objects
  std::vector<std::string> asked;
  auto installed = store_->install(m, {}, {{"kind", "test"}}, [&](const TreeEntry& e, const fs::path& dest) -> Status {
    asked.push_back(e.path);
    write_file(dest, read_file(root / e.path));
    return {};
  });
  ASSERT_TRUE(installed) << installed.error().message;
  EXPECT_EQ(asked, std::vector<std::string>{"usr/share/common"});
  EXPECT_EQ(installed->tree, m.digest());
}

// A manifest whose paths would reach outside the tree (through "..", as an absolute path, or
// below one of its own symlinks) is refused before anything is made.
TEST_F(EnvironmentStoreTest, AManifestReachingOutsideItsTreeIsRefused) {
  const fs::path outside = tmp_ / "outside";
  fs::create_directories(outside);
  auto file = [](std::string path) {
    TreeEntry e;
    e.path = std::move(path);
    e.mode = 0444;
    e.size = 6;
    e.sha256 = sha256("owned\n");
    return e;
  };
  TreeEntry root{.path = "", .type = TreeEntry::Type::directory, .mode = 0755, .size = 0, .sha256 = {}, .target = {}};
  TreeEntry usr{.path = "usr", .type = TreeEntry::Type::directory, .mode = 0755, .size = 0, .sha256 = {}, .target = {}};
  TreeEntry link{.path = "usr/escape", .type = TreeEntry::Type::symlink, .mode = 0, .size = 0, .sha256 = {}, .target = outside.string()};
  const std::vector<std::vector<TreeEntry>> hostile = {
      {root, usr, link, file("usr/escape/planted")},
      {root, file((outside / "planted").string())},
      {root, usr, file("usr/../../planted")},
      {usr, file("usr/planted")},  // no root directory
  };
  for (const auto& entries : hostile) {
    TreeManifest m{entries};
    auto installed = store_->install(m, {}, {}, [](const TreeEntry&, const fs::path& dest) -> Status {
      write_file(dest, "owned\n");
      return {};
    });
    ASSERT_FALSE(installed) << m.text();
    EXPECT_EQ(installed.error().code, Errc::invalid_argument) << installed.error().message;
  }
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_FALSE(fs::exists(tmp_ / "planted"));
  EXPECT_TRUE(stored_envs().empty());
  // The same shapes inside the tree are an environment.
  TreeManifest fine{{root, usr, file("usr/planted"), TreeEntry{.path = "usr/tool", .type = TreeEntry::Type::symlink, .mode = 0, .size = 0, .sha256 = {}, .target = "planted"}}};
  EXPECT_TRUE(store_->install(fine, {}, {}, [](const TreeEntry&, const fs::path& dest) -> Status {
    write_file(dest, "owned\n");
    return {};
  }));
}

TEST_F(EnvironmentStoreTest, AStoredTreeChangedAfterInstallIsRefusedBeforeUse) {
  Environment e = import(make_tree("a"));
  ASSERT_TRUE(store_->open_verified(e.digest)) << "an untouched environment opens";
  const fs::path victim = e.root / "usr/share/common";
  ASSERT_EQ(::chmod(victim.c_str(), 0644), 0);
  write_file(victim, "tampered with after install\n");
  ASSERT_EQ(::chmod(victim.c_str(), 0444), 0);
  auto opened = store_->open_verified(e.digest);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, Errc::corrupt);
  EXPECT_NE(opened.error().message.find("usr/share/common"), std::string::npos) << opened.error().message;
  // A store opened afresh (its memo read from disk) refuses it too.
  auto reopened = EnvironmentStore::open(store_->dir());
  ASSERT_TRUE(reopened);
  EXPECT_FALSE(reopened->open_verified(e.digest));
  EXPECT_EQ(reopened->open_verified(sha256("no such environment")).error().code, Errc::not_found);
}

TEST_F(EnvironmentStoreTest, VariablesTheSandboxFixesAreRefused) {
  fs::path root = make_tree("a");
  for (const char* name : {"HOME", "TZ", "WARDEN_X"}) {
    auto e = store_->import_tree(root, {{name, "x"}}, {});
    ASSERT_FALSE(e) << name;
    EXPECT_EQ(e.error().code, Errc::invalid_argument) << name;
  }
  EXPECT_TRUE(stored_envs().empty());
  // PATH is not fixed: an environment may put its own directories first.
  EXPECT_TRUE(store_->import_tree(root, {{"PATH", "/opt/app/bin:/usr/bin:/bin"}}, {}));
}

TEST_F(EnvironmentStoreTest, ListIsMostRecentlyUsedFirstAndGcDropsTheLeastRecentlyUsed) {
  Environment a = import(make_tree("a", {{"usr/share/only-a", "a\n"}}));
  next_clock_tick();
  Environment b = import(make_tree("b", {{"usr/share/only-b", "b\n"}}));
  auto listed = store_->list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].digest, b.digest);
  EXPECT_EQ((*listed)[1].digest, a.digest);

  next_clock_tick();
  ASSERT_TRUE(store_->find(a.digest).value());  // a use
  listed = store_->list();
  EXPECT_EQ((*listed)[0].digest, a.digest);

  auto report = store_->gc({.max_bytes = uint64_t{1} << 40, .max_count = 1});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->removed, std::vector<Digest>{b.digest});
  EXPECT_EQ(report->kept, 1u);
  EXPECT_EQ(report->objects_removed, 1u);  // only-b: the others a still links
  EXPECT_EQ(report->bytes_freed, 2u);
  EXPECT_FALSE(store_->object(sha256("b\n"), false));
  EXPECT_TRUE(store_->object(sha256("a\n"), false));
  EXPECT_TRUE(store_->object(sha256("shared by every tree\n"), false));
  EXPECT_TRUE(store_->open_verified(a.digest));
  EXPECT_EQ(stored_envs(), std::vector<std::string>{a.digest.hex()});
}

// A run holds its environment (use(): a shared flock: another process's gc sees it
// as this one's does): gc passes it over and remove() refuses it until the run lets go.
TEST_F(EnvironmentStoreTest, AnEnvironmentInUseIsNotRemovedUntilItIsLetGo) {
  Environment a = import(make_tree("a", {{"usr/share/only-a", "a\n"}}));
  next_clock_tick();
  Environment b = import(make_tree("b", {{"usr/share/only-b", "b\n"}}));
  std::optional<StoreHold> held(store_->use(a.digest).value());
  // No other user may open it, and so none may lock it against runs or removal.
  EXPECT_EQ(lstat_of(store_->dir() / "envs" / a.digest.hex() / "used").st_mode & 07777, 0600u);

  auto report = store_->gc({.max_bytes = uint64_t{1} << 40, .max_count = 0});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->removed, std::vector<Digest>{b.digest});
  EXPECT_EQ(report->in_use, std::vector<Digest>{a.digest});
  EXPECT_TRUE(store_->open_verified(a.digest));
  Status removed = store_->remove(a.digest);
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code, Errc::failed_precondition) << removed.error().message;

  held.reset();
  ASSERT_TRUE(store_->remove(a.digest));
  EXPECT_TRUE(stored_envs().empty());
  auto gone = store_->use(a.digest);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::not_found);
}

// Files a fetch stored for an install still to come are linked by no environment: gc keeps
// every such file while a fetch holds the store, and removes them once none does.
TEST_F(EnvironmentStoreTest, GcKeepsFilesAFetchStoredUntilTheFetchLetsGo) {
  ASSERT_TRUE(store_->add_object(sha256("fetched\n"), false, "fetched\n"));
  std::optional<StoreHold> fetching(store_->hold_fetched_objects().value());
  auto report = store_->gc({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->kept_for_fetch);
  EXPECT_EQ(report->objects_removed, 0u);
  EXPECT_TRUE(store_->object(sha256("fetched\n"), false));
  fetching.reset();
  report = store_->gc({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(report->kept_for_fetch);
  EXPECT_EQ(report->objects_removed, 1u);
  EXPECT_FALSE(store_->object(sha256("fetched\n"), false));
}

// --- Recipes ---

// A prepare step writes only a directory Warden made for it: a step directory inside another
// step's (or the same one twice) could be a link the earlier step planted, which Warden would
// follow as root when it makes and hands over the later one.
TEST(EnvironmentRecipe, StepDirectoriesThatRepeatOrNestAreRefused) {
  auto recipe = [](const std::string& a, const std::string& b) {
    Json j = {{"format", "warden.environment-recipe/v1"},
              {"debian", {{"packages", {"python3-minimal"}}}},
              {"prepare", {{{"dir", a}, {"run", {"true"}}}, {{"dir", b}, {"run", {"true"}}}}}};
    return EnvironmentRecipe::from_json(j, {});
  };
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"/opt/a", "/opt/a"}, {"/opt/a", "/opt/a/b"}, {"/opt/a/b", "/opt/a"}}) {
    auto r = recipe(a, b);
    ASSERT_FALSE(r) << a << " " << b;
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().message.find("may not repeat or nest"), std::string::npos) << r.error().message;
  }
  EXPECT_TRUE(recipe("/opt/a", "/opt/ab")) << "siblings are fine";
  auto outside = recipe("/etc/x", "/opt/b");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("below /opt/"), std::string::npos) << outside.error().message;
}

}  // namespace
}  // namespace warden::test
