// The one-shot sandbox's remembered preflight: a pass is remembered and reused, a verdict
// planted by anyone else (another uid, a writable directory, a renamed file, a stale or
// failing one) is ignored, a sandbox that then fails to start drops it; what a profile
// compiles to is remembered too, equals a fresh derivation, and a tampered, misplaced or
// foreign entry is ignored; and a workspace the sandbox's uid cannot enter is refused before
// bwrap starts, naming the user and the fix.
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/file.h"
#include "common/process_identity.h"
#include "runner/sandbox/preflight_cache.h"
#include "runner/sandbox/seccomp_filter.h"
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/scratch_dir.h"
#include "tests/support/process.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// `sandbox exec --json` with its cache in `cache`: whether the verdict was remembered.
bool exec_used_remembered_verdict(const fs::path& cache, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"sandbox", "exec", "--json", "--cache", cache.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "/bin/true"});
  ProcessResult r = warden(args);
  EXPECT_TRUE(r.exited_with(0)) << r.status() << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["preflight"]["ok"], true);
  return j["preflight_cached"].get<bool>();
}

bool is_compiled_entry(const fs::path& p) { return p.filename().string().ends_with(".profile.json"); }

std::vector<fs::path> verdict_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json" && !is_compiled_entry(e.path())) out.push_back(e.path());
  }
  return out;
}

std::vector<fs::path> compiled_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (is_compiled_entry(e.path())) out.push_back(e.path());
  }
  return out;
}

// A workspace the sandbox's user owns, whose command appends a line to `runs` each time it
// runs (then does `then`): how often a command ran, counted from outside.
struct CountingWorkspace {
  explicit CountingWorkspace(const SandboxHost& host, const std::string& then = "true")
      : dir(ScratchDir::create(host.scratch_root, "warden-count-test-", 0711).value()), ws(dir / "ws") {
    EXPECT_TRUE(make_owned_dir(ws, host.uid, host.gid));
    request.argv = {"/bin/sh", "-c", "echo run >> /workspace/runs; " + then};
    request.workspace_dir = ws;
  }
  long runs() const {
    auto text = read_file(ws / "runs");
    return text ? std::count(text->begin(), text->end(), '\n') : 0;
  }
  ScratchDir dir;
  fs::path ws;
  SandboxRequest request;
};

TEST(PreflightCache, APassIsRememberedAndReused) {
  TempDir tmp;
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path()));
  ASSERT_EQ(verdict_files(tmp / "preflight").size(), 1u);
  struct stat st;
  ASSERT_EQ(::stat((tmp / "preflight").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(exec_used_remembered_verdict(tmp.path()));
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path(), {"--probe"}));
}

TEST(PreflightCache, VerdictsPlantedByOthersAreIgnored) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant files as another uid";
  TempDir tmp;
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path()));
  fs::path file = verdict_files(tmp / "preflight").at(0);
  // Another uid's file, even with the right bytes, is not ours.
  ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path()));
  // The probe passed again and its own verdict replaced the planted one.
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_TRUE(exec_used_remembered_verdict(tmp.path()));
  // A directory others may write into is not trusted at all.
  ASSERT_EQ(::chmod((tmp / "preflight").c_str(), 0770), 0);
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path()));
  ASSERT_EQ(::chmod((tmp / "preflight").c_str(), 0700), 0);
  EXPECT_TRUE(exec_used_remembered_verdict(tmp.path()));
  // Group- or world-writable file.
  ASSERT_EQ(::chmod(file.c_str(), 0622), 0);
  EXPECT_FALSE(exec_used_remembered_verdict(tmp.path()));
}

TEST(PreflightCache, RenamedStaleAndFailingVerdictsAreMisses) {
  TempDir tmp;
  PreflightCache cache(tmp / "preflight");
  PreflightReport pass;
  pass.ok = true;
  pass.checks.push_back({"sandbox_start", true, ""});
  Digest key = sha256("key one"), other = sha256("key two");
  cache.put(key, pass);
  ASSERT_TRUE(cache.get(key));
  EXPECT_FALSE(cache.get(other));
  // A verdict file renamed to another key's name says which key it was made for.
  fs::copy_file(tmp / "preflight" / (key.hex() + ".json"), tmp / "preflight" / (other.hex() + ".json"));
  EXPECT_FALSE(cache.get(other));
  // Older than a day.
  fs::path file = tmp / "preflight" / (key.hex() + ".json");
  struct timeval old[2] = {{::time(nullptr) - 25 * 3600, 0}, {::time(nullptr) - 25 * 3600, 0}};
  ASSERT_EQ(::utimes(file.c_str(), old), 0);
  EXPECT_FALSE(cache.get(key));
  // A failing verdict is never kept, and a forged "ok" with garbage is a miss.
  PreflightReport failing = pass;
  failing.ok = false;
  Digest third = sha256("key three");
  cache.put(third, failing);
  EXPECT_FALSE(fs::exists(tmp / "preflight" / (third.hex() + ".json")));
  std::ofstream(tmp / "preflight" / (third.hex() + ".json")) << "{\"key\":\"" << third.hex() << "\",\"report\":{\"ok\":true}}";
  ::chmod((tmp / "preflight" / (third.hex() + ".json")).c_str(), 0600);
  EXPECT_FALSE(cache.get(third));
  cache.forget(key);
  EXPECT_FALSE(fs::exists(file));
}

TEST(PreflightCache, ASandboxThatFailsToStartDropsTheVerdict) {
  TempDir tmp;
  auto profile = SandboxProfile::load("default");
  ASSERT_TRUE(profile);
  SandboxHost host = SandboxHost::detect();
  PreflightCache cache(tmp / "preflight");
  {
    auto first = Sandbox::create(*profile, host);
    ASSERT_TRUE(first);
    first->set_preflight_cache(cache);
    ASSERT_TRUE(first->preflight().ok);
    EXPECT_FALSE(first->preflight_from_cache());
  }
  auto second = Sandbox::create(*profile, host);
  ASSERT_TRUE(second);
  second->set_preflight_cache(cache);
  ASSERT_TRUE(second->preflight().ok);
  EXPECT_TRUE(second->preflight_from_cache());
  ASSERT_EQ(verdict_files(tmp / "preflight").size(), 1u);
  // bwrap refuses a workspace that is not there: a start failure.
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0711), 0);
  SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = tmp / "missing-workspace";
  auto run = second->run(req);
  ASSERT_TRUE(run);
  EXPECT_NE(run->exit_code, 0);
  EXPECT_TRUE(verdict_files(tmp / "preflight").empty());
}

// The one-shot path looks its verdict up while bwrap is already setting up, held before its
// seccomp program. Without a remembered verdict that bwrap is stopped, the probe runs, and
// the command then runs in a sandbox of its own: once, never in the one that was stopped.
// With one, the command runs in the held sandbox, once.
TEST(PreflightCache, AVerdictLookedUpWhileBwrapSetsUpRunsTheCommandOnce) {
  TempDir tmp;
  SandboxHost host = SandboxHost::detect();
  CountingWorkspace counted(host);
  const SandboxRequest& req = counted.request;
  auto lines = [&] { return counted.runs(); };
  for (int call = 1; call <= 2; ++call) {
    auto sandbox = Sandbox::open("default", host, PreflightCache(tmp / "preflight"));
    ASSERT_TRUE(sandbox) << sandbox.error().message;
    auto run = sandbox->run(req);
    ASSERT_TRUE(run) << run.error().message;
    EXPECT_EQ(run->exit_code, 0) << run->err.kept;
    EXPECT_EQ(sandbox->preflight_from_cache(), call == 2);
    EXPECT_TRUE(sandbox->preflight().ok);
    EXPECT_EQ(lines(), call) << "call " << call;
  }
}

// What the one-shot sandbox derives from its profile is remembered, and what a later process
// takes from the cache is exactly what it would have derived: the digest, the seccomp program
// and the key its verdict is filed under.
TEST(CompiledProfile, IsRememberedAndEqualsAFreshDerivation) {
  if (::geteuid() != 0) GTEST_SKIP() << "remembered only as root (the sandbox then runs as another uid)";
  TempDir tmp;
  SandboxHost host = SandboxHost::detect();
  auto first = Sandbox::open("default", host, PreflightCache(tmp / "preflight"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->compiled_from_cache());
  ASSERT_EQ(compiled_files(tmp / "preflight").size(), 1u);
  auto second = Sandbox::open("default", host, PreflightCache(tmp / "preflight"));
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->compiled_from_cache());
  auto fresh = Sandbox::create(SandboxProfile::load("default").value(), host);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(second->profile_digest(), fresh->profile_digest());
  EXPECT_EQ(second->seccomp_program(), fresh->seccomp_program());
  ASSERT_TRUE(second->preflight().ok);
  const Digest key = preflight_key(fresh->profile(), fresh->profile_digest(), fresh->seccomp_program(), host);
  EXPECT_TRUE(fs::exists(tmp / "preflight" / (key.hex() + ".json")));
  // And through the CLI: the second call takes both from the cache.
  TempDir cli;
  for (bool again : {false, true}) {
    ProcessResult r = warden({"sandbox", "exec", "--json", "--cache", cli.path().string(), "--", "/bin/true"});
    ASSERT_TRUE(r.exited_with(0)) << r.status() << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["compiled_cached"], again);
    EXPECT_EQ(j["profile_sha256"], fresh->profile_digest().str());
  }
}

// An entry that is not what its key says is ignored, and the profile is derived afresh: a
// program that is not the one its digest names, an entry filed under another profile's key,
// one owned by another uid.
TEST(CompiledProfile, TamperedMisplacedAndForeignEntriesAreIgnored) {
  if (::geteuid() != 0) GTEST_SKIP() << "remembered only as root (the sandbox then runs as another uid)";
  TempDir tmp;
  SandboxHost host = SandboxHost::detect();
  const fs::path dir = tmp / "preflight";
  // Two profile files that differ in one field.
  const std::string text_a(builtin_profile_text("default"));
  auto edited = nlohmann::json::parse(text_a);
  edited["hostname"] = "elsewhere";
  const std::string text_b = edited.dump(2);
  std::ofstream(tmp / "a.json") << text_a;
  std::ofstream(tmp / "b.json") << text_b;
  const fs::path a = tmp / "a.json", b = tmp / "b.json";
  auto fresh = [&](const std::string& text) { return Sandbox::create(SandboxProfile::parse(text, "p").value(), host).value(); };
  const Sandbox want_a = fresh(text_a), want_b = fresh(text_b);
  ASSERT_NE(want_a.profile_digest(), want_b.profile_digest());
  auto open = [&](const fs::path& p) { return Sandbox::open(p.string(), host, PreflightCache(dir)).value(); };

  ASSERT_FALSE(open(a).compiled_from_cache());
  const fs::path entry_a = dir / (compiled_profile_key(text_a, host)->hex() + ".profile.json");
  const fs::path entry_b = dir / (compiled_profile_key(text_b, host)->hex() + ".profile.json");
  ASSERT_TRUE(fs::exists(entry_a));
  const std::string good = read_file(entry_a, 1 << 20).value();

  // Filed under b's key: it names a's key inside, so b is derived afresh and gets its own.
  fs::copy_file(entry_a, entry_b);
  ::chmod(entry_b.c_str(), 0600);
  Sandbox got_b = open(b);
  EXPECT_FALSE(got_b.compiled_from_cache());
  EXPECT_EQ(got_b.profile_digest(), want_b.profile_digest());
  EXPECT_TRUE(open(b).compiled_from_cache());

  // One byte of the program changed: it no longer matches its digest.
  std::string tampered = good;
  size_t at = tampered.find("\"seccomp_program\":\"") + 20;
  tampered[at] = tampered[at] == '0' ? '1' : '0';
  ASSERT_TRUE(write_file_atomic(entry_a, tampered));
  ::chmod(entry_a.c_str(), 0600);
  Sandbox got_a = open(a);
  EXPECT_FALSE(got_a.compiled_from_cache());
  EXPECT_EQ(got_a.seccomp_program(), want_a.seccomp_program());
  EXPECT_EQ(got_a.profile_digest(), want_a.profile_digest());
  EXPECT_TRUE(open(a).compiled_from_cache());

  // Another uid's entry, even with the right bytes, is not ours.
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(entry_a.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(open(a).compiled_from_cache());
  }
}

// The one-shot starts bwrap from the host layout remembered beside the compiled profile, and
// a fresh detection must agree before the command may start. One that is stale (the other
// scratch root, no cgroups where there are, a cgroup that is gone, another RLIMIT_NPROC
// backstop) never reaches the command: bwrap is stopped, the run starts again from the host
// as it is, the command runs once with the host's real limits, and the entry is corrected.
// One naming a place detect() could never find (a scratch root elsewhere, a cgroup parent
// outside /sys/fs/cgroup or with a detour) is not even taken as a guess.
TEST(CompiledProfile, AStaleRememberedLayoutIsReplacedBeforeTheCommandStarts) {
  if (::geteuid() != 0) GTEST_SKIP() << "remembered only as root (the sandbox then runs as another uid)";
  TempDir tmp;
  const fs::path cache_dir = tmp / "preflight";
  const SandboxHost host = SandboxHost::detect();
  CountingWorkspace counted(host, "ulimit -p");  // dash's name for RLIMIT_NPROC
  const SandboxRequest& req = counted.request;
  auto lines = [&] { return counted.runs(); };
  const uint64_t want_nproc = Sandbox::create(SandboxProfile::load("default").value(), host).value().nproc_limit();
  auto entry = [&] {
    auto files = compiled_files(cache_dir);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files[0];
  };
  auto remembered_layout = [&] { return nlohmann::json::parse(read_file(entry(), 1 << 20).value())["host_layout"]; };
  auto plant_layout = [&](const nlohmann::json& layout) {
    auto j = nlohmann::json::parse(read_file(entry(), 1 << 20).value());
    j["host_layout"] = layout;
    ASSERT_TRUE(write_file_atomic(entry(), j.dump()));
    ::chmod(entry().c_str(), 0600);
  };
  int runs = 0;
  auto run_once = [&](const std::string& what) {
    auto sandbox = Sandbox::open("default", PreflightCache(cache_dir));
    ASSERT_TRUE(sandbox) << what << ": " << sandbox.error().message;
    auto run = sandbox->run(req);
    ASSERT_TRUE(run) << what << ": " << run.error().message;
    EXPECT_EQ(run->exit_code, 0) << what << ": " << run->err.kept;
    EXPECT_EQ(run->out.kept, std::to_string(want_nproc) + "\n") << what;
    EXPECT_EQ(lines(), ++runs) << what << ": the command ran once";
    EXPECT_TRUE(sandbox->host().same_layout(host)) << what;
    EXPECT_EQ(sandbox->nproc_limit(), want_nproc) << what;
    EXPECT_EQ(remembered_layout(), host.layout()) << what << ": the entry holds the host as it is";
  };
  run_once("first call");
  run_once("remembered, right");

  const std::string other_root = host.scratch_root == "/tmp" ? "/dev/shm" : "/tmp";
  nlohmann::json stale = host.layout();
  stale["scratch_root"] = other_root;
  stale["nproc_backstop"] = 3;
  stale["run_tmpfs"] = !host.run_tmpfs;
  stale["cgroups"] = {{"v2", true}, {"controllers", nlohmann::json::array()}, {"unavailable", "planted"}};
  plant_layout(stale);
  {
    // Taken as the guess, then replaced.
    auto guessed = Sandbox::open("default", PreflightCache(cache_dir));
    ASSERT_TRUE(guessed);
    EXPECT_EQ(guessed->host().nproc_backstop, 3u);
    EXPECT_EQ(guessed->host().scratch_root, other_root);
  }
  plant_layout(stale);
  run_once("no cgroups remembered");

  if (host.cgroups.usable()) {
    stale = host.layout();
    stale["cgroups"]["controllers"] = {{{"name", "pids"}, {"parent", "/sys/fs/cgroup/pids/no-such-cgroup/warden"}}};
    plant_layout(stale);
    run_once("a cgroup that is gone remembered");
  } else {
    stale = host.layout();
    stale["cgroups"] = {{"v2", true}, {"controllers", {{{"name", "pids"}, {"parent", "/sys/fs/cgroup/no-such-cgroup/warden"}}}}, {"unavailable", ""}};
    plant_layout(stale);
    run_once("cgroups remembered where there are none");
  }

  // Never a guess: places detect() could not have found.
  for (auto [field, planted] : {std::pair{"scratch_root", nlohmann::json((tmp / "elsewhere").string())},
                                std::pair{"cgroups", nlohmann::json{{"v2", false}, {"unavailable", ""},
                                                                    {"controllers", {{{"name", "pids"}, {"parent", (tmp / "warden").string()}}}}}},
                                std::pair{"cgroups", nlohmann::json{{"v2", false}, {"unavailable", ""},
                                                                    {"controllers", {{{"name", "pids"}, {"parent", "/sys/fs/cgroup/pids/../../../tmp/warden"}}}}}}}) {
    stale = host.layout();
    stale[field] = planted;
    plant_layout(stale);
    auto opened = Sandbox::open("default", PreflightCache(cache_dir));
    ASSERT_TRUE(opened);
    EXPECT_TRUE(opened->host().same_layout(host)) << planted.dump();
    run_once("a layout naming elsewhere: " + planted.dump());
  }

  // Malformed: ignored as a guess, the host is detected first.
  plant_layout(nlohmann::json{{"scratch_root", 7}});
  run_once("a malformed layout");

  // Through the CLI without a workspace, whose scratch goes under the remembered root.
  stale = host.layout();
  stale["scratch_root"] = other_root;
  plant_layout(stale);
  const fs::path cli_cache = tmp / "cli";
  ASSERT_TRUE(warden({"sandbox", "exec", "--cache", cli_cache.string(), "--", "/bin/true"}).exited_with(0));
  for (const auto& e : fs::directory_iterator(cli_cache / "preflight")) {
    if (!is_compiled_entry(e.path())) continue;
    auto j = nlohmann::json::parse(read_file(e.path(), 1 << 20).value());
    j["host_layout"] = stale;
    ASSERT_TRUE(write_file_atomic(e.path(), j.dump()));
    ::chmod(e.path().c_str(), 0600);
  }
  ProcessResult r = warden({"sandbox", "exec", "--json", "--cache", cli_cache.string(), "--", "/bin/sh", "-c", "ulimit -p"});
  ASSERT_TRUE(r.exited_with(0)) << r.status() << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["compiled_cached"], true);
  EXPECT_EQ(j["stdout"]["head"], std::to_string(want_nproc) + "\n");
}

// A sandbox that runs as Warden's own uid could reach the cache through a workspace holding it
// and plant a weaker program for later calls: there, nothing compiled is remembered or taken.
TEST(CompiledProfile, NothingIsRememberedWhenTheSandboxRunsAsWardensOwnUid) {
  TempDir tmp;
  SandboxHost host = SandboxHost::detect();
  host.drop = false;
  for (int i = 0; i < 2; ++i) {
    auto s = Sandbox::open("default", host, PreflightCache(tmp / "preflight"));
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_FALSE(s->compiled_from_cache());
  }
  EXPECT_TRUE(!fs::exists(tmp / "preflight") || compiled_files(tmp / "preflight").empty());
}

// The host's part of the key names bwrap by its file: a rewritten or replaced bwrap is a new
// key (a miss, so the probe runs again), and reading the identity in detect() or on demand
// gives the same key.
TEST(PreflightKey, ARewrittenOrReplacedBwrapIsANewKey) {
  TempDir tmp;
  auto profile = SandboxProfile::load("default");
  ASSERT_TRUE(profile);
  auto program = compile_seccomp(profile->seccomp);
  ASSERT_TRUE(program);
  fs::path bwrap = tmp / "bwrap";
  fs::copy_file("/usr/bin/bwrap", bwrap);
  SandboxHost host = SandboxHost::detect();
  host.bwrap = bwrap;
  host.identity = HostIdentity::read(bwrap);
  auto key = [&] { return preflight_key(*profile, profile->digest(), *program, host); };
  const Digest first = key();
  SandboxHost on_demand = host;
  on_demand.identity.reset();
  EXPECT_EQ(preflight_key(*profile, profile->digest(), *program, on_demand), first);
  EXPECT_EQ(key(), first);

  // The same bytes written again: the change time moved, and no caller can set it back.
  std::string bytes = read_file(bwrap, 16 << 20).value();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(bwrap, std::ios::binary | std::ios::trunc) << bytes;
  host.identity = HostIdentity::read(bwrap);
  const Digest rewritten = key();
  EXPECT_NE(rewritten, first);

  // Another file renamed over it.
  fs::copy_file("/usr/bin/bwrap", tmp / "bwrap.new");
  fs::rename(tmp / "bwrap.new", bwrap);
  host.identity = HostIdentity::read(bwrap);
  EXPECT_NE(key(), rewritten);
  EXPECT_NE(key(), first);

  // Gone: an identity of its own (the sandbox will not start, and nothing is remembered).
  fs::remove(bwrap);
  host.identity = HostIdentity::read(bwrap);
  EXPECT_TRUE(host.identity->bwrap_file.empty());
  EXPECT_NE(key(), first);
}

// Scratch a killed Warden left behind is removed by the next sandbox's first run (not when the
// sandbox is made: the one-shot CLI would pay for the scan before bwrap starts).
TEST(SandboxScratch, ADeadProcesssScratchIsReclaimedByTheFirstRun) {
  TempDir tmp;
  auto profile = SandboxProfile::load("default");
  ASSERT_TRUE(profile);
  SandboxHost host = SandboxHost::detect();
  // A scratch root of its own: any Warden's first run reclaims a dead process's scratch, and
  // tests running beside this one would otherwise take the orphan before this sandbox's run.
  TempDir root;
  ASSERT_EQ(::chmod(root.path().c_str(), 0711), 0);
  host.scratch_root = root.path();
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const fs::path orphan = host.scratch_root / ("warden-run-p" + ProcessIdentity{dead, 1}.str() + "-AbC123");
  const fs::path live = host.scratch_root / ("warden-run-p" + ProcessIdentity::self().str() + "-AbC123");
  for (const auto& dir : {orphan, live}) {
    fs::create_directories(dir / "upper");
    std::ofstream(dir / "upper" / "left.txt") << "left behind\n";
  }
  auto sandbox = Sandbox::create(*profile, host);
  ASSERT_TRUE(sandbox);
  EXPECT_TRUE(fs::exists(orphan)) << "reclaimed before any run";
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0777), 0);
  SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = tmp.path();
  auto run = sandbox->run(req);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(fs::exists(orphan)) << "a dead process's scratch survived the first run";
  EXPECT_TRUE(fs::exists(live)) << "a live process's scratch was removed";
  fs::remove_all(live);
}

// Anyone may create entries in the scratch root (/dev/shm is world-writable): a directory
// named like a dead Warden's scratch but owned by another uid is not Warden's, and root's
// Warden must not descend into it (its owner could swap a directory for a symlink to /etc
// between a check and the descent, and have root delete what the link points at).
TEST(SandboxScratch, ScratchNamedLikeWardensButOwnedByAnotherUidIsLeftAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a directory as another uid";
  TempDir tmp;
  auto profile = SandboxProfile::load("default");
  ASSERT_TRUE(profile);
  SandboxHost host = SandboxHost::detect();
  const fs::path planted = host.scratch_root / ("warden-run-p" + ProcessIdentity{1, 1}.str() + "-PlAnT1");
  fs::create_directories(planted / "inner");
  std::ofstream(planted / "inner" / "precious.txt") << "not Warden's to delete\n";
  for (const auto& p : {planted, planted / "inner", planted / "inner" / "precious.txt"}) {
    ASSERT_EQ(::lchown(p.c_str(), 65534, 65534), 0);
  }
  auto sandbox = Sandbox::create(*profile, host);
  ASSERT_TRUE(sandbox);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0777), 0);
  SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = tmp.path();
  auto run = sandbox->run(req);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_TRUE(fs::exists(planted / "inner" / "precious.txt")) << "root's Warden removed another uid's directory";
  fs::remove_all(planted);
}

// remove_tree never follows a link, at the top or inside: what a link points at survives.
TEST(SandboxScratch, RemovingATreeNeverFollowsItsLinks) {
  TempDir tmp;
  fs::create_directories(tmp / "outside" / "sub");
  std::ofstream(tmp / "outside" / "sub" / "keep.txt") << "keep\n";
  fs::create_directories(tmp / "tree" / "a" / "b");
  std::ofstream(tmp / "tree" / "a" / "b" / "gone.txt") << "gone\n";
  fs::create_directory_symlink(tmp / "outside", tmp / "tree" / "a" / "link");
  fs::create_symlink(tmp / "outside" / "sub" / "keep.txt", tmp / "tree" / "file-link");
  ASSERT_EQ(::chmod((tmp / "tree" / "a" / "b").c_str(), 0), 0);  // the run may leave a directory closed to its owner
  remove_tree(tmp / "tree");
  EXPECT_FALSE(fs::exists(fs::symlink_status(tmp / "tree")));
  EXPECT_TRUE(fs::exists(tmp / "outside" / "sub" / "keep.txt"));
  fs::create_directory_symlink(tmp / "outside", tmp / "top-link");
  remove_tree(tmp / "top-link");
  EXPECT_FALSE(fs::exists(fs::symlink_status(tmp / "top-link")));
  EXPECT_TRUE(fs::exists(tmp / "outside" / "sub" / "keep.txt"));
}

TEST(SandboxWorkspace, RootWithAWorkspaceTheSandboxUserCannotEnterIsRefusedClearly) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox drops to another uid only when Warden is root";
  TempDir tmp;
  fs::path ws = tmp / "private";
  ASSERT_EQ(::mkdir(ws.c_str(), 0700), 0);
  ProcessResult r = warden({"sandbox", "exec", "--cache", (tmp / "cache").string(), "--workspace", ws.string(), "--", "/bin/true"});
  EXPECT_TRUE(r.exited_with(125)) << r.status() << r.err;
  EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chown 65534:65534 " + ws.string()), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Can't chdir"), std::string::npos) << r.err;
  // The fix the message names makes it work.
  ASSERT_EQ(::chown(ws.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0711), 0);
  ProcessResult ok = warden({"sandbox", "exec", "--cache", (tmp / "cache").string(), "--workspace", ws.string(), "--",
                             "/bin/sh", "-c", "echo hi > /workspace/f && cat /workspace/f"});
  EXPECT_TRUE(ok.exited_with(0)) << ok.status() << ok.err;
  EXPECT_EQ(ok.out, "hi\n");
}

}  // namespace
}  // namespace warden::test
