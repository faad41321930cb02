// Checks run in an environment (runner/environment) instead of on the host's /usr: a small
// root made of the host's shell and core utilities, imported into a store, run on by the
// real runner and by `warden sandbox exec --environment`, and managed with `warden env`.
// Nothing of the host's /usr is visible there.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "runner/check/local_runner.h"
#include "runner/environment/environment_store.h"
#include "tests/support/files.h"
#include "tests/support/runner_tree.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// What the sandbox's preflight and the checks below use.
const std::vector<std::string> kPrograms = {"sh", "cat", "echo", "env", "ls", "true", "stat", "readlink"};

class EnvironmentRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The sandbox runs as another uid when Warden is root: it must reach the store.
    fs::permissions(tmp_.path(), fs::perms(0755));
    copy_host_programs(tmp_ / "root", kPrograms);
    auto store = EnvironmentStore::open(store_dir(), SandboxHost::detect().uid);
    ASSERT_TRUE(store) << store.error().message;
    auto env = store->import_tree(tmp_ / "root", {{"GREETING", "from the environment"}}, {{"kind", "directory"}});
    ASSERT_TRUE(env) << env.error().message;
    env_ = *env;

  }

  fs::path store_dir() const { return tmp_ / "store"; }

  Result<LocalRunner> runner(std::optional<Digest> environment) {
    RunnerOptions o;
    o.cache_dir = tree_.cache_dir();
    o.use_cache = false;
    o.environment = environment;
    o.env_store = store_dir();
    return LocalRunner::create(test_profile(), o, SandboxHost::detect());
  }

  RunOutcome run(LocalRunner& r, std::vector<CheckSpec> checks) { return tree_.run(r, std::move(checks)); }

  TempDir tmp_;
  Environment env_;
  RunnerTestTree tree_{{{"a.txt", "alpha\n"}}};
};

TEST_F(EnvironmentRunTest, ChecksRunInTheEnvironmentAndSeeNothingOfTheHostsUsr) {
  auto r = runner(env_.digest);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->environment());
  EXPECT_EQ(r->environment()->digest, env_.digest);
  RunOutcome out = run(*r, {CheckSpec::shell("tree", "cat a.txt; ls /usr/bin"),
                            CheckSpec::shell("vars", "echo \"$GREETING\""),
                            CheckSpec::shell("python", "/usr/bin/python3 -c 'print(1)'")});
  ASSERT_TRUE(out.result.preflight.ok) << out.result.preflight.failures();
  EXPECT_EQ(out.result.environment, env_.digest);
  ASSERT_TRUE(out.result.toolchain.contains("environment")) << out.result.toolchain.dump();
  EXPECT_EQ(out.result.toolchain["environment"]["digest"], env_.digest.str());
  EXPECT_FALSE(out.result.toolchain.contains("files")) << "nothing of the host's /usr identifies this toolchain";

  const CheckResult& tree = out.result.checks.at(0);
  EXPECT_EQ(tree.verdict, kPassed) << tree.runs.at(0).err.head;
  EXPECT_EQ(tree.runs.at(0).out.head, "alpha\ncat\necho\nenv\nls\nreadlink\nsh\nstat\ntrue\n");
  EXPECT_EQ(out.result.checks.at(1).runs.at(0).out.head, "from the environment\n");
  const CheckResult& python = out.result.checks.at(2);
  EXPECT_EQ(python.verdict, kFailed);
  EXPECT_EQ(python.runs.at(0).exit_code, 127) << python.runs.at(0).err.head;

  // The same checks on the host: python is there, and the result says no environment.
  auto host = runner(std::nullopt);
  ASSERT_TRUE(host) << host.error().message;
  RunOutcome on_host = run(*host, {CheckSpec::shell("python", "/usr/bin/python3 -c 'print(1)'")});
  EXPECT_EQ(on_host.result.checks.at(0).verdict, kPassed) << on_host.result.checks.at(0).runs.at(0).err.head;
  EXPECT_FALSE(on_host.result.environment);
  EXPECT_NE(on_host.result.toolchain_sha256, out.result.toolchain_sha256);
}

TEST_F(EnvironmentRunTest, ARunnerRefusesAnEnvironmentChangedInTheStore) {
  const fs::path victim = env_.root / "usr/bin/true";
  ASSERT_EQ(::chmod(victim.c_str(), 0755), 0);
  write_file(victim, "#!/bin/sh\nexit 0\n");
  auto r = runner(env_.digest);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::corrupt) << r.error().message;
  auto missing = runner(sha256("no such environment"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found) << missing.error().message;
}

// A runner holds its environment while a run lasts, not while it lives: an idle runner (a
// `warden runner` keeps one per environment for its whole life) leaves it to gc, and a run
// after it was removed is a runner error naming it, not a run on a missing root.
TEST_F(EnvironmentRunTest, AnIdleRunnerDoesNotHoldItsEnvironmentAgainstRemoval) {
  auto r = runner(env_.digest);
  ASSERT_TRUE(r) << r.error().message;
  RunOutcome first = run(*r, {CheckSpec::shell("true", "true")});
  EXPECT_EQ(first.result.checks.at(0).verdict, kPassed) << first.result.checks.at(0).runs.at(0).err.head;
  auto store = EnvironmentStore::open(store_dir(), SandboxHost::detect().uid);
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(store->remove(env_.digest));
  try {
    (void)run(*r, {CheckSpec::shell("true", "true")});
    ADD_FAILURE() << "a run on a removed environment";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(env_.digest.str()), std::string::npos) << e.what();
  }
}

// The commands: import, list, show and gc by a digest prefix, and a one-shot sandbox on it.
TEST_F(EnvironmentRunTest, TheEnvCommandsAndSandboxExecOnAnEnvironment) {
  const std::string store = "--env-store=" + store_dir().string();
  ProcessResult imported = warden({"env", "import", (tmp_ / "root").string(), "--env", "GREETING=from the environment", store});
  ASSERT_TRUE(imported.exited_with(0)) << describe(imported);
  EXPECT_EQ(imported.out, env_.digest.str() + "\n") << "the same tree and variables are the same environment";

  const std::string prefix = env_.digest.hex().substr(0, 10);
  ProcessResult list = warden({"env", "list", "--json", store});
  ASSERT_TRUE(list.exited_with(0)) << describe(list);
  auto lines = stdout_json_lines(list);
  ASSERT_EQ(lines.size(), 2u) << list.out;
  EXPECT_EQ(lines[0]["type"], "environment");
  EXPECT_EQ(lines[0]["digest"], env_.digest.str());
  EXPECT_EQ(lines[0]["source"], "directory");
  EXPECT_EQ(lines[1]["environments"], 1);

  ProcessResult show = warden({"env", "show", prefix, "--json", store});
  ASSERT_TRUE(show.exited_with(0)) << describe(show);
  EXPECT_EQ(stdout_json(show)["env"]["GREETING"], "from the environment");
  EXPECT_EQ(stdout_json(show)["source"]["kind"], "directory");
  EXPECT_TRUE(warden({"env", "show", "abc", store}).exited_with(3)) << "a prefix shorter than 8 is refused";
  EXPECT_TRUE(warden({"env", "show", "00000000", store}).exited_with(4));

  ProcessResult exec = warden({"sandbox", "exec", "--environment", prefix, store, "--", "/bin/sh", "-c",
                               "echo \"$GREETING\"; test ! -e /usr/bin/python3"});
  EXPECT_TRUE(exec.exited_with(0)) << describe(exec);
  EXPECT_EQ(exec.out, "from the environment\n");
  ProcessResult exec_json = warden({"sandbox", "exec", "--json", "--environment", env_.digest.str(), store, "--", "/bin/true"});
  ASSERT_TRUE(exec_json.exited_with(0)) << describe(exec_json);
  EXPECT_EQ(stdout_json(exec_json)["environment"], env_.digest.str());

  ProcessResult gc = warden({"env", "gc", "--remove", prefix, "--json", store});
  ASSERT_TRUE(gc.exited_with(0)) << describe(gc);
  EXPECT_EQ(stdout_json(gc)["removed"], nlohmann::json::array({env_.digest.str()}));
  EXPECT_EQ(stdout_json(gc)["bytes_kept"], 0);
  ProcessResult gone = warden({"sandbox", "exec", "--environment", env_.digest.str(), store, "--", "/bin/true"});
  EXPECT_TRUE(gone.exited_with(125)) << describe(gone);
}

// bwrap resolves its bind sources on the host: an environment whose /opt or /etc/ld.so.cache
// is a symlink out of its root (an image can hold any) must not bind the host's /etc there.
// The digest names only the links; what they point at on the host is nothing of the
// environment's, so those binds are left out.
TEST_F(EnvironmentRunTest, LinksOutOfTheEnvironmentsRootBindNothingOfTheHost) {
  const fs::path root = tmp_ / "linked-root";
  copy_host_programs(root, kPrograms);
  fs::create_directory_symlink("/etc", root / "opt");
  fs::create_directories(root / "etc");
  fs::create_symlink("/etc/passwd", root / "etc" / "ld.so.cache");
  auto store = EnvironmentStore::open(store_dir(), SandboxHost::detect().uid);
  ASSERT_TRUE(store) << store.error().message;
  auto linked = store->import_tree(root, {}, {{"kind", "directory"}});
  ASSERT_TRUE(linked) << linked.error().message;
  auto r = runner(linked->digest);
  ASSERT_TRUE(r) << r.error().message;
  RunOutcome out = run(*r, {CheckSpec::shell("opt", "[ ! -e /opt/passwd ] && [ ! -e /opt/hostname ]"),
                            CheckSpec::shell("cache", "[ ! -s /etc/ld.so.cache ]")});
  ASSERT_TRUE(out.result.preflight.ok) << out.result.preflight.failures();
  for (const CheckResult& c : out.result.checks) EXPECT_EQ(c.verdict, kPassed) << c.name << ": the host's /etc was bound";
}

// A proposal whose checks run in an environment (`warden propose --environment`): the ledger
// names the environment in the policy and in every result; `replay --rerun` runs the checks
// again in it, found by its digest, and refuses to run them anywhere else — here, from a
// store that lacks it, with no recipe recorded to build it again.
TEST_F(EnvironmentRunTest, AProposalRunsInItsEnvironmentAndReplayRerunsThereOrNowhere) {
  GitRepoFixture repo;
  repo.write("greeting.txt", "hi\n");
  const std::string base = repo.commit_all("base");
  const fs::path patch = repo.patch_file(base, "hello.patch", {{"greeting.txt", "hello\n"}});
  const fs::path ledger = tmp_ / "ledger";
  const std::string check = "[ \"$(cat greeting.txt)\" = hello ] && [ ! -e /usr/bin/python3 ]";
  ProcessResult proposed = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--check",
                                   check, "--ledger", ledger.string(), "--environment", env_.digest.str(), "--env-store",
                                   store_dir().string(), "--cache", (tmp_ / "cache").string()});
  ASSERT_TRUE(proposed.exited_with(0)) << describe(proposed);

  ProcessResult exported = warden({"ledger", "export", ledger.string(), (tmp_ / "export").string()});
  ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  const std::string records = read_file(tmp_ / "export" / "records.jsonl");
  const std::string named = "\"environment\":\"" + env_.digest.str() + "\"";
  size_t results = 0;
  for (size_t at = records.find(named); at != std::string::npos; at = records.find(named, at + 1)) ++results;
  EXPECT_GE(results, 2u) << "the policy and the proposal's run name the environment";

  ProcessResult rerun = warden({"replay", ledger.string(), "--repo", repo.repo().string(), "--rerun", "--env-store",
                                store_dir().string(), "--cache", (tmp_ / "cache").string()});
  EXPECT_TRUE(rerun.exited_with(0)) << describe(rerun);
  EXPECT_NE(rerun.out.find("re-executed"), std::string::npos) << rerun.out;

  fs::create_directories(tmp_ / "empty-store");
  ProcessResult elsewhere = warden({"replay", ledger.string(), "--repo", repo.repo().string(), "--rerun", "--env-store",
                                    (tmp_ / "empty-store").string(), "--cache", (tmp_ / "cache").string()});
  EXPECT_FALSE(elsewhere.exited_with(0)) << describe(elsewhere);
  EXPECT_NE((elsewhere.out + elsewhere.err).find("does not hold"), std::string::npos) << describe(elsewhere);
}

}  // namespace
}  // namespace warden::test
