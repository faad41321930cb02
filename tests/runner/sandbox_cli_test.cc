// The real `warden sandbox` and `warden run` commands: output, exit codes (the command's own,
// 124 when Warden's limits killed it, 125 when the sandbox could not run), JSON evidence, the
// preflight, a run with a diff, the result cache and --no-cache.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "runner/model/run_result.h"
#include "runner/sandbox/sandbox.h"
#include "tests/support/process.h"
#include "tests/support/git_fixture.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// `warden run --json`'s result line, read back as the RunResult it carries.
Result<RunResult> run_result_line(const ProcessResult& r) {
  nlohmann::json line = stdout_json(r);
  EXPECT_EQ(line["type"], "result") << describe(r);
  line.erase("type");
  return RunResult::from_json(line);
}

TEST(SandboxCli, ExecPrintsOutputAndExitsWithTheCommandsStatus) {
  ProcessResult r = warden({"sandbox", "exec", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_TRUE(r.exited_with(7)) << r.status() << r.err;
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

// An ignored SIGCHLD is inherited across exec. Left so, the kernel would reap the sandbox
// unasked: the one-shot reported 127 and a reaper child waited for good.
TEST(SandboxCli, ExecCollectsTheStatusWhenItsCallerIgnoresSigchld) {
  ProcessResult r = run({"/bin/sh", "-c", "trap '' CHLD; exec \"$0\" sandbox exec -- /bin/sh -c 'echo ok; exit 3'", warden_binary()});
  EXPECT_TRUE(r.exited_with(3)) << r.status() << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

// A process that embeds the sandbox with SIGCHLD ignored is told so, rather than judging a run
// on a status that never came.
TEST(SandboxCli, ASandboxRefusesToStartWhileSigchldIsIgnored) {
  const SandboxHost host = SandboxHost::detect();
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(SandboxProfile::load("default").value(), host);
  ASSERT_TRUE(sandbox);
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &previous), 0);
  SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = ws.dir();
  auto r = sandbox->run(req);
  ::sigaction(SIGCHLD, &previous, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("SIGCHLD is ignored"), std::string::npos) << r.error().message;
}

// Every file of a profile reaches bwrap on a descriptor of its own (a policy adds one per check
// program): many still run, and too many are refused with the count, never half set up.
TEST(SandboxCli, AProfileWithManyFilesRunsAndTooManyAreRefusedClearly) {
  const SandboxHost host = SandboxHost::detect();
  HostileWorkspace ws(host);
  auto with_files = [&](int n) {
    SandboxProfile p = SandboxProfile::load("default").value();
    for (int i = 0; i < n; ++i) p.files.push_back({"/etc/warden-extra-" + std::to_string(i), "x" + std::to_string(i)});
    return Sandbox::create(std::move(p), host).value();
  };
  SandboxRequest req;
  req.argv = {"/bin/cat", "/etc/warden-extra-29"};
  req.workspace_dir = ws.dir();
  Sandbox many = with_files(30);
  auto r = many.run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 0) << r->err.head;
  EXPECT_EQ(r->out.head, "x29");
  Sandbox too_many = with_files(40);
  auto refused = too_many.run(req);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("at most 40"), std::string::npos) << refused.error().message;
}

TEST(SandboxCli, ExecTimeoutIs124AndBrokenProfilesAre125) {
  ProcessResult slow = warden({"sandbox", "exec", "--timeout", "0.2", "--", "sleep", "30"});
  EXPECT_TRUE(slow.exited_with(124)) << slow.status();
  EXPECT_NE(slow.err.find("timed out"), std::string::npos);
  ProcessResult missing = warden({"sandbox", "exec", "--profile", "no-such-profile", "--", "true"});
  EXPECT_TRUE(missing.exited_with(125)) << missing.status();
  EXPECT_NE(missing.err.find("no built-in sandbox profile"), std::string::npos);
}

TEST(SandboxCli, ExecJsonIsTheEvidence) {
  ProcessResult r = warden({"sandbox", "exec", "--json", "--profile", "strict", "--", "/bin/sh", "-c", "printf abc; exit 2"});
  EXPECT_TRUE(r.exited_with(2)) << r.status() << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["stdout"]["sha256"], sha256("abc").str());
  EXPECT_EQ(j["stdout"]["head"], "abc");
  EXPECT_EQ(j["profile"], "strict");
  EXPECT_EQ(j["profile_sha256"], SandboxProfile::load("strict")->digest().str());
  EXPECT_EQ(j["preflight"]["ok"], true);
}

TEST(SandboxCli, ExecLeavesNoDaemonBehind) {
  HostileWorkspace ws(SandboxHost::detect());
  std::string marker = fresh_marker();
  ProcessResult r = warden({"sandbox", "exec", "--workspace", ws.dir().string(), "--", "./hostile", "daemon", marker});
  EXPECT_TRUE(r.exited_with(0)) << r.status() << r.err;
  EXPECT_EQ(r.out, "daemon started\n");
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST(SandboxCli, PreflightAndProfile) {
  ProcessResult pre = warden({"sandbox", "preflight", "--json"});
  EXPECT_TRUE(pre.exited_with(0)) << pre.out << pre.err;
  EXPECT_EQ(nlohmann::json::parse(pre.out)["ok"], true);
  ProcessResult prof = warden({"sandbox", "profile", "--profile", "default"});
  EXPECT_TRUE(prof.exited_with(0));
  EXPECT_EQ(nlohmann::json::parse(prof.out)["sha256"], SandboxProfile::load("default")->digest().str());
}

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("lib.sh", "answer() { echo 41; }\n");
    repo_.write("test.sh", ". ./lib.sh\n[ \"$(answer)\" = 42 ] && echo 'ok 1 - answer' || echo 'not ok 1 - answer'\n");
    base_ = repo_.commit_all("base");
    repo_.write("lib.sh", "answer() { echo 42; }\n");
    diff_ = parse_to_diff(repo_, base_, repo_.staged_patch());
    repo_.reset_hard(base_);
    auto cache = ScratchDir::create("/tmp", "warden-cli-cache-", 0711);
    ASSERT_TRUE(cache);
    cache_.emplace(std::move(*cache));
  }
  std::vector<std::string> run_args(std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--repo", repo_.repo().string(), "--base", base_, "--cache",
                                     (cache_->path() / "c").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  GitRepoFixture repo_;
  std::string base_;
  fs::path diff_;
  std::optional<ScratchDir> cache_;
};

TEST_F(RunCli, AppliesTheDiffRunsChecksAndCaches) {
  std::vector<std::string> check = {"--diff", diff_.string(), "--check", "sh test.sh | grep -q '^ok'"};
  ProcessResult first = warden(run_args(check));
  EXPECT_TRUE(first.exited_with(0)) << first.out << first.err;
  EXPECT_NE(first.out.find("passed  check-1"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("result    ran"), std::string::npos);
  ProcessResult second = warden(run_args(check));
  EXPECT_NE(second.out.find("from the cache"), std::string::npos) << second.out;
  auto nocache = check;
  nocache.push_back("--no-cache");
  nocache.push_back("--json");
  ProcessResult third = warden(run_args(nocache));
  EXPECT_TRUE(third.exited_with(0));
  auto result = run_result_line(third);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->all_passed());
  EXPECT_TRUE(result->preflight.ok);
  // Without the diff the base's test fails: exit 1.
  ProcessResult base = warden(run_args({"--check", "sh test.sh | grep -q '^ok'"}));
  EXPECT_TRUE(base.exited_with(1)) << base.out;
  EXPECT_NE(base.out.find("failed  check-1"), std::string::npos);
}

TEST_F(RunCli, ChecksFileWithTapAndFailToPass) {
  fs::path checks = cache_->path() / "checks.json";
  std::ofstream(checks) << R"([{"name": "tap", "argv": ["/bin/sh", "test.sh"], "report_format": "tap",
                                "fail_to_pass": ["answer"], "proves": ["answers_correctly"]}])";
  ProcessResult r = warden(run_args({"--diff", diff_.string(), "--checks", checks.string(), "--json"}));
  EXPECT_TRUE(r.exited_with(0)) << r.out << r.err;
  auto result = run_result_line(r);
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->invariants.at("answers_correctly").proven);
  EXPECT_EQ(result->checks.at(0).tests, (std::vector<TestCase>{{"answer", "passed"}}));
}

TEST_F(RunCli, UsageAndInputErrorsHaveTheirExitCodes) {
  EXPECT_TRUE(warden({"run", "--check", "true"}).exited_with(2));
  EXPECT_TRUE(warden(run_args({})).exited_with(3));
  ProcessResult bad_rev = warden({"run", "--repo", repo_.repo().string(), "--base", "no-such-rev", "--check", "true",
                                  "--cache", (cache_->path() / "c").string()});
  EXPECT_TRUE(bad_rev.exited_with(4)) << bad_rev.status();
}

}  // namespace
}  // namespace warden::test
