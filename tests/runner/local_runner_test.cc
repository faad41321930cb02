// The Runner end to end on real git repositories: overlay workspaces (base checkout + diff
// layer + a fresh upper layer per run), checks with their evidence, JUnit/TAP parsing and
// FAIL_TO_PASS / PASS_TO_PASS judgement, flaky oracles, invariants, the result cache, and
// the determinism of the deterministic digest.
#include <sys/stat.h>

#include "runner/check/check_verdict.h"
#include "runner/check/local_runner.h"
#include "runner/check/report_detection.h"
#include "runner/workspace/tree_hash.h"
#include "runner/workspace/workspace.h"
#include "tests/support/git_fixture.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

class LocalRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("a.txt", "alpha\n");
    repo_.write("dir/b.txt", "bravo\n");
    repo_.write("dir/c.txt", "charlie\n");
    repo_.write("gone/only.txt", "soon removed\n");
    base_commit_ = repo_.commit_all("base");
    repo_.write("a.txt", "alpha, changed\n");
    repo_.remove("dir/c.txt");
    repo_.remove("gone");
    repo_.write("new/d.txt", "delta\n");
    std::string patch = repo_.staged_patch();
    repo_.reset_hard(base_commit_);
    auto ws = Workspace::open(repo_.repo());
    ASSERT_TRUE(ws);
    auto diff = ws->diff_from_patch(patch, base_commit_, "step-1");
    ASSERT_TRUE(diff) << diff.error().message();
    diff_ = *diff;
    auto git = GitRepo::open(repo_.repo());
    ASSERT_TRUE(git);
    git_.emplace(std::move(*git));
    base_tree_ = *git_->tree_of(*git_->resolve_commit(base_commit_));
    auto cache = ScratchDir::create("/tmp", "warden-cache-test-", 0711);
    ASSERT_TRUE(cache);
    cache_.emplace(std::move(*cache));
  }

  LocalRunner make_runner(bool use_cache = true, SandboxHost host = SandboxHost::detect()) {
    RunnerOptions o;
    o.cache_dir = cache_->path() / "cache";
    o.use_cache = use_cache;
    auto r = LocalRunner::create(test_profile(), o, host);
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
  }

  RunOutcome run(Runner& runner, std::vector<CheckSpec> checks, bool with_diff = true) {
    RunRequest req;
    req.base_tree = base_tree_;
    req.diff = with_diff ? &diff_ : nullptr;
    req.checks = std::move(checks);
    auto out = runner.run(*git_, req);
    if (!out) throw std::runtime_error(out.error().message());
    return std::move(*out);
  }

  // Runs `checks` on a tree of its own: the base plus `files`, committed.
  RunOutcome run_files(Runner& runner, const std::map<std::string, std::string>& files, std::vector<CheckSpec> checks) {
    for (const auto& [path, bytes] : files) repo_.write(path, bytes);
    std::string commit = repo_.commit_all("project files");
    RunRequest req;
    req.base_tree = *git_->tree_of(*git_->resolve_commit(commit));
    req.checks = std::move(checks);
    auto out = runner.run(*git_, req);
    if (!out) throw std::runtime_error(out.error().message());
    return std::move(*out);
  }

  GitRepoFixture repo_;
  std::string base_commit_;
  Diff diff_;
  std::optional<GitRepo> git_;
  ObjectId base_tree_;
  std::optional<ScratchDir> cache_;
};

CheckSpec shell(std::string name, std::string command) { return CheckSpec::shell(std::move(name), command); }

TEST_F(LocalRunnerTest, ChecksSeeExactlyTheTreeUnderTest) {
  LocalRunner runner = make_runner(false);
  RunOutcome out = run(runner, {shell("view", "cat a.txt; ls dir; cat new/d.txt; ls; test ! -e dir/c.txt")});
  const CheckResult& c = out.result.checks.at(0);
  EXPECT_EQ(c.verdict, kPassed) << c.runs.at(0).err.head << c.runs.at(0).error;
  EXPECT_EQ(c.runs.at(0).out.head, "alpha, changed\nb.txt\ndelta\na.txt\ndir\nnew\n");
  EXPECT_EQ(out.result.base_tree, base_tree_.hex());
  EXPECT_EQ(out.result.diff_sha256, diff_.digest());
  // The tree under test is the one git itself makes of the patch.
  auto applied = Workspace::open(repo_.repo())->apply(diff_, base_commit_);
  ASSERT_TRUE(applied);
  EXPECT_EQ(out.result.tree, applied->tree.hex());
  // The output body is in the blob store under its digest.
  EXPECT_EQ(out.bodies.at(c.runs.at(0).out.blob), c.runs.at(0).out.head);
}

// A check that fills memory or its workspace is stopped at its run's limits (a cgroup, a
// tmpfs of the run's own), with the limit named in its evidence; the host is not the one
// that runs out.
TEST_F(LocalRunnerTest, ChecksFillingMemoryOrTheWorkspaceStopAtTheirRunsLimits) {
  SandboxHost host = SandboxHost::detect();
  if (!host.cgroups.has("memory") || !host.run_tmpfs) GTEST_SKIP() << "needs root and a memory cgroup";
  SandboxProfile p = test_profile();
  p.limits.memory_bytes = uint64_t{128} << 20;
  p.limits.address_space_bytes = uint64_t{64} << 30;  // out of the way: the cgroup must stop it
  p.limits.file_size_bytes = uint64_t{1} << 30;
  p.limits.disk_bytes = uint64_t{16} << 20;
  RunnerOptions o;
  o.cache_dir = cache_->path() / "limits";
  o.use_cache = false;
  auto runner = LocalRunner::create(p, o, host);
  ASSERT_TRUE(runner) << runner.error().message;
  RunOutcome out = run(*runner, {shell("hog", "python3 -c \"s = 'x' * (1 << 30)\""),
                                 shell("fill", "dd if=/dev/zero of=big bs=1M count=64")});
  const CheckResult& hog = out.result.checks[0];
  EXPECT_EQ(hog.verdict, kFailed);
  EXPECT_EQ(hog.runs[0].limits_hit, std::vector<std::string>{"memory"});
  const CheckResult& fill = out.result.checks[1];
  EXPECT_EQ(fill.verdict, kFailed);
  EXPECT_NE(fill.runs[0].err.head.find("No space left on device"), std::string::npos) << fill.runs[0].err.head;
  auto memory = std::find_if(out.result.preflight.enforced.begin(), out.result.preflight.enforced.end(),
                             [](const EnforcedLimit& e) { return e.limit == "memory"; });
  ASSERT_NE(memory, out.result.preflight.enforced.end());
  EXPECT_EQ(memory->by, host.cgroups.by());
  // The limit reached is part of the recorded evidence.
  auto round = RunResult::from_json(out.result.to_json());
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(round->checks[0].runs[0].limits_hit, std::vector<std::string>{"memory"});
}

TEST_F(LocalRunnerTest, WritesStayInTheirRunAndNeverReachTheBase) {
  LocalRunner runner = make_runner(false);
  RunOutcome first = run(runner, {shell("write", "echo scribble > a.txt && rm dir/b.txt && echo x > fresh.txt")});
  EXPECT_EQ(first.result.checks.at(0).verdict, kPassed) << first.result.checks.at(0).runs.at(0).err.head;
  RunOutcome second = run(runner, {shell("look", "cat a.txt dir/b.txt; test ! -e fresh.txt")});
  EXPECT_EQ(second.result.checks.at(0).verdict, kPassed);
  EXPECT_EQ(second.result.checks.at(0).runs.at(0).out.head, "alpha, changed\nbravo\n");
  EXPECT_EQ(read_file(cache_->path() / "cache" / "checkouts" / base_tree_.hex() / "checkout" / "a.txt"), "alpha\n");
}

TEST_F(LocalRunnerTest, SameCheckSameTreeSameDeterministicDigest) {
  LocalRunner runner = make_runner(false);
  std::vector<CheckSpec> checks = {shell("list", "ls -la --time-style=+ . dir new; env | sort; id"), shell("fail", "exit 3")};
  RunOutcome a = run(runner, checks);
  RunOutcome b = run(runner, checks);
  EXPECT_FALSE(b.cache_hit);
  EXPECT_EQ(a.result.checks.at(1).verdict, kFailed);
  EXPECT_EQ(a.result.checks.at(1).runs.at(0).exit_code, 3);
  EXPECT_EQ(a.result.deterministic_digest(), b.result.deterministic_digest())
      << a.result.deterministic_json().dump(1) << b.result.deterministic_json().dump(1);
}

TEST_F(LocalRunnerTest, CacheHitReturnsTheRecordedResultWithoutRunning) {
  LocalRunner runner = make_runner(true);
  std::vector<CheckSpec> checks = {shell("ok", "true")};
  RunOutcome miss = run(runner, checks);
  EXPECT_FALSE(miss.cache_hit);
  RunOutcome hit = run(runner, checks);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.cache_key, miss.cache_key);
  EXPECT_EQ(hit.result.digest(), miss.result.digest());
  // A different check, profile or tree is a different key.
  EXPECT_FALSE(run(runner, {shell("ok", "true ")}).cache_hit);
  EXPECT_FALSE(run(runner, checks, false).cache_hit);
  LocalRunner no_cache = make_runner(false);
  EXPECT_FALSE(run(no_cache, checks).cache_hit);
}

TEST_F(LocalRunnerTest, FailingChecksAreNotCachedAsPassesAndTimeoutsNotAtAll) {
  LocalRunner runner = make_runner(true);
  CheckSpec slow = shell("slow", "sleep 5");
  slow.timeout_ms = 200;
  RunOutcome t = run(runner, {slow});
  EXPECT_EQ(t.result.checks.at(0).verdict, kTimeout);
  EXPECT_TRUE(t.result.checks.at(0).runs.at(0).timed_out);
  EXPECT_FALSE(run(runner, {slow}).cache_hit);
}

TEST_F(LocalRunnerTest, DisagreeingRunsAreAFlakyOracle) {
  LocalRunner runner = make_runner(false);
  // Each run flips a coin from /dev/urandom: twenty runs all agreeing has odds 2^-19.
  CheckSpec coin = shell("coin", "test $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) -eq 0");
  coin.runs = 20;
  RunOutcome out = run(runner, {coin});
  const CheckResult& c = out.result.checks.at(0);
  EXPECT_EQ(c.verdict, kFlakyOracle);
  EXPECT_EQ(c.runs.size(), 20u);
  CheckSpec steady = shell("steady", "true");
  steady.runs = 3;
  EXPECT_EQ(run(runner, {steady}).result.checks.at(0).verdict, kPassed);
}

TEST_F(LocalRunnerTest, JUnitFailToPassAndPassToPass) {
  LocalRunner runner = make_runner(false);
  std::string xml =
      "<testsuites><testsuite name='s'>"
      "<testcase classname='pkg.test_a' name='test_fixed'/>"
      "<testcase classname='pkg.test_a' name='test_broken'><failure message='boom'/></testcase>"
      "<testcase classname='pkg.test_b' name='test_kept'/>"
      "<testcase classname='pkg.test_b' name='test_skip'><skipped/></testcase>"
      "</testsuite></testsuites>";
  CheckSpec spec = shell("tests", "mkdir -p reports && printf \"%s\" \"" + xml + "\" > reports/junit.xml; exit 1");
  spec.report_format = "junit";
  spec.report_path = "reports/junit.xml";
  spec.fail_to_pass = {"pkg.test_a::test_fixed"};
  spec.pass_to_pass = {"pkg.test_b::test_kept"};
  spec.proves = {"fixed_bug"};
  RunOutcome good = run(runner, {spec});
  const CheckResult& c = good.result.checks.at(0);
  EXPECT_EQ(c.verdict, kPassed) << c.runs.at(0).report << " " << c.runs.at(0).report_detail;
  ASSERT_EQ(c.tests.size(), 4u);
  EXPECT_EQ(c.tests[0], (TestCase{"pkg.test_a::test_broken", "failed"}));
  ASSERT_TRUE(c.judgement);
  EXPECT_TRUE(c.judgement->ok);
  EXPECT_TRUE(good.result.invariants.at("fixed_bug").proven);

  spec.pass_to_pass = {"pkg.test_b::test_kept", "pkg.test_a::test_broken", "pkg.test_c::absent"};
  RunOutcome bad = run(runner, {spec});
  const CheckResult& b = bad.result.checks.at(0);
  EXPECT_EQ(b.verdict, kFailed);
  EXPECT_EQ(b.judgement->pass_to_pass.at(1).status, "failed");
  EXPECT_EQ(b.judgement->pass_to_pass.at(2).status, "missing");
  EXPECT_EQ(bad.result.invariants.at("fixed_bug").proven, false);
  EXPECT_EQ(bad.result.invariants.at("fixed_bug").check, "tests");
}

TEST_F(LocalRunnerTest, TapOnStdout) {
  LocalRunner runner = make_runner(false);
  CheckSpec spec = shell("tap", "printf '1..3\\nok 1 - adds\\nnot ok 2 - subtracts\\nok 3 - skipped # SKIP no\\n'");
  spec.report_format = "tap";
  RunOutcome out = run(runner, {spec});
  const CheckResult& c = out.result.checks.at(0);
  EXPECT_EQ(c.verdict, kFailed);
  EXPECT_EQ(c.tests, (std::vector<TestCase>{{"adds", "passed"}, {"skipped", "skipped"}, {"subtracts", "failed"}}));
}

TEST_F(LocalRunnerTest, AReportSymlinkToAHostFileIsNeverFollowed) {
  LocalRunner runner = make_runner(false);
  // /etc/hostname exists on the host; inside the sandbox it does not. The link is the check's.
  CheckSpec spec = shell("link", "ln -s /etc/hostname report.xml; ln -s /etc report-dir");
  spec.report_format = "junit";
  spec.report_path = "report.xml";
  RunOutcome out = run(runner, {spec});
  EXPECT_EQ(out.result.checks.at(0).runs.at(0).report, "missing");
  EXPECT_EQ(out.result.checks.at(0).verdict, kFailed);
  spec.report_path = "report-dir/hostname";
  RunOutcome through_dir = run(runner, {spec});
  EXPECT_EQ(through_dir.result.checks.at(0).runs.at(0).report, "missing");
}

TEST_F(LocalRunnerTest, DeclaredArtifactsAreKeptAsBlobsAndLinksAreNotFollowed) {
  LocalRunner runner = make_runner(false);
  CheckSpec spec = shell("build", "mkdir -p out && printf 'BIN' > out/prog && ln -s /etc/hostname out/link");
  spec.artifacts = {{"out/prog", "binary"}, {"out/link", "report"}, {"out/never", "report"}};
  auto round = CheckSpec::from_json(spec.to_json());
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(round->artifacts, spec.artifacts);
  EXPECT_FALSE(CheckSpec::from_json(Json{{"name", "x"}, {"argv", {"true"}}, {"artifacts", {{{"path", "../up"}, {"type", "t"}}}}}));
  RunOutcome out = run(runner, {spec});
  const auto& artifacts = out.result.checks.at(0).runs.at(0).artifacts;
  ASSERT_EQ(artifacts.size(), 3u);
  EXPECT_TRUE(artifacts[0].present);
  EXPECT_EQ(artifacts[0].bytes, 3u);
  EXPECT_EQ(artifacts[0].sha256, sha256("BIN"));
  EXPECT_EQ(out.bodies.at(*artifacts[0].sha256), "BIN");
  EXPECT_FALSE(artifacts[1].present);  // a symlink the sandbox made is never followed on the host
  EXPECT_FALSE(artifacts[2].present);
  auto back = RunResult::from_json(out.result.deterministic_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->deterministic_digest(), out.result.deterministic_digest());
}

TEST_F(LocalRunnerTest, RunResultJsonRoundTripsCanonically) {
  LocalRunner runner = make_runner(false);
  CheckSpec spec = shell("out", "printf 'caf\\303\\251 \\377\\n'; echo err >&2");
  RunOutcome out = run(runner, {spec});
  auto bytes = canonicalize(out.result.to_json());
  ASSERT_TRUE(bytes) << bytes.error().message;
  auto back = RunResult::from_json(*parse_json(*bytes));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->digest(), out.result.digest());
  EXPECT_EQ(back->checks.at(0).runs.at(0).out.head, "caf\xc3\xa9 \xEF\xBF\xBD\n");
  Json tampered = out.result.to_json();
  tampered["checks"][0]["verdict"] = "excellent";
  EXPECT_FALSE(RunResult::from_json(tampered));
}

TEST_F(LocalRunnerTest, ASandboxThatCannotProveItselfRunsNothing) {
  SandboxHost broken = SandboxHost::detect();
  broken.bwrap = "/nonexistent/bwrap";
  LocalRunner runner = make_runner(false, broken);
  RunRequest req;
  req.base_tree = base_tree_;
  req.checks = {shell("ok", "true")};
  auto out = runner.run(*git_, req);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, RefusalCode::sandbox_unavailable);
  EXPECT_NE(out.error().detail.find("sandbox_start"), std::string::npos) << out.error().detail;
}

TEST_F(LocalRunnerTest, ATamperedDiffIsRefusedBeforeAnythingRuns) {
  LocalRunner runner = make_runner(false);
  Diff bad = diff_;
  for (auto& f : bad.files) {
    if (f.path == "a.txt") f.before_sha256 = sha256("something else\n");
  }
  RunRequest req;
  req.base_tree = base_tree_;
  req.diff = &bad;
  req.checks = {shell("ok", "true")};
  auto out = runner.run(*git_, req);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, RefusalCode::hash_mismatch);
}

TEST_F(LocalRunnerTest, TreeSha256FollowsItsDocumentedConstruction) {
  GitRepoFixture small;
  small.write("a.txt", "alpha\n");
  small.write("bin/run", "#!/bin/sh\n");
  small.set_executable("bin/run", true);
  std::string commit = small.commit_all("small");
  auto git = GitRepo::open(small.repo());
  ASSERT_TRUE(git);
  ObjectId tree = *git->tree_of(*git->resolve_commit(commit));
  MemoryHashMemo memo;
  auto hash = tree_sha256(*git, tree, memo);
  ASSERT_TRUE(hash);
  auto node = [](std::vector<std::tuple<std::string, std::string, Digest>> entries) {
    std::string bytes("warden-tree-v1\0", 15);
    for (const auto& [mode, name, h] : entries) bytes += mode + " " + name + std::string(1, '\0') + std::string(h.view());
    return sha256(bytes);
  };
  Digest bin = node({{"100755", "run", sha256("#!/bin/sh\n")}});
  EXPECT_EQ(*hash, node({{"100644", "a.txt", sha256("alpha\n")}, {"40000", "bin", bin}}));
  // The memo gives the same answer as a fresh computation, and a mode change changes it.
  EXPECT_EQ(*tree_sha256(*git, tree, memo), *hash);
  small.set_executable("bin/run", false);
  ObjectId changed = *git->tree_of(*git->resolve_commit(small.commit_all("mode")));
  MemoryHashMemo fresh;
  EXPECT_NE(*tree_sha256(*git, changed, fresh), *hash);
}

TEST_F(LocalRunnerTest, WorkspacePreparationReusesTheBaseAndWritesOnlyTheDiff) {
  LocalRunner runner = make_runner(false);
  auto tree = runner.tree_under_test(*git_, RunRequest{base_tree_, std::nullopt, &diff_, {}, {}});
  ASSERT_TRUE(tree);
  auto first = runner.prepare(*git_, base_tree_, *tree);
  ASSERT_TRUE(first) << first.error().message();
  // a.txt and new/d.txt written, plus the directory new/ and dir/ (merged); c.txt and gone/ whited out.
  EXPECT_EQ(first->layer_stats.whiteouts, 2u);
  EXPECT_EQ(first->layer_stats.written, 4u);
  struct stat whiteout;
  ASSERT_EQ(::lstat((first->layer->path() / "tree" / "gone").c_str(), &whiteout), 0);
  EXPECT_TRUE(S_ISCHR(whiteout.st_mode));
  auto base_mtime = fs::last_write_time(first->base_dir);
  auto second = runner.prepare(*git_, base_tree_, *tree);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->base_dir, first->base_dir);
  EXPECT_EQ(fs::last_write_time(second->base_dir), base_mtime);
  EXPECT_EQ(second->tree_sha256, first->tree_sha256);
}

constexpr const char* kUnittestOps = R"py(import unittest


class TestOps(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(2 * 3, 6)

    def test_div(self):
        """Divides."""
        self.assertEqual(6 / 3, 3)
)py";

CheckSpec detected(std::string name, const std::string& command) {
  auto check = command_check(std::move(name), command);
  if (!check) throw std::runtime_error(check.error().message);
  return check->spec;
}

TEST_F(LocalRunnerTest, UnittestVerboseChecksNameTheirTests) {
  LocalRunner runner = make_runner(false);
  CheckSpec spec = detected("unittest", "python3 -m unittest discover -s tests -t . -v");
  ASSERT_EQ(spec.report_format, "unittest");
  RunOutcome out = run_files(runner, {{"tests/__init__.py", ""}, {"tests/test_ops.py", kUnittestOps}}, {spec});
  const CheckResult& c = out.result.checks.at(0);
  EXPECT_EQ(c.verdict, kFailed) << c.runs.at(0).err.tail;
  EXPECT_EQ(c.tests, (std::vector<TestCase>{{"tests.test_ops.TestOps.test_div", "failed"},
                                            {"tests.test_ops.TestOps.test_mul", "passed"}}))
      << c.runs.at(0).err.tail;
  EXPECT_FALSE(ran_no_tests(c));

  // The same ids a PASS_TO_PASS list names.
  spec.pass_to_pass = {"tests.test_ops.TestOps.test_mul"};
  RunOutcome judged = run_files(runner, {}, {spec});
  EXPECT_EQ(judged.result.checks.at(0).verdict, kPassed);
}

TEST_F(LocalRunnerTest, ACheckThatRanNoTestsFails) {
  LocalRunner runner = make_runner(false);
  CheckSpec empty_suite = detected("unittest", "python3 -m unittest discover -s tests -t . -v");
  CheckSpec empty_plan = shell("tap", "echo 1..0");
  empty_plan.report_format = "tap";
  CheckSpec all_skipped = shell("skipped", "printf '1..2\\nok 1 - a # SKIP\\nok 2 - b # SKIP no db\\n'");
  all_skipped.report_format = "tap";
  CheckSpec plain = shell("plain", "true");
  RunOutcome out = run_files(runner, {{"tests/__init__.py", ""}}, {empty_suite, empty_plan, all_skipped, plain});
  for (size_t i = 0; i < 3; ++i) {
    const CheckResult& c = out.result.checks.at(i);
    EXPECT_EQ(c.runs.at(0).exit_code, 0) << c.name;  // the runner itself called it a success
    EXPECT_EQ(c.verdict, kFailed) << c.name;
    EXPECT_TRUE(ran_no_tests(c)) << c.name;
    EXPECT_EQ(c.runs.at(0).report, "parsed") << c.name;
    EXPECT_NE(c.runs.at(0).report_detail.find("no test ran"), std::string::npos) << c.runs.at(0).report_detail;
  }
  EXPECT_EQ(out.result.checks.at(3).verdict, kPassed);  // no report: the exit status alone
  EXPECT_FALSE(ran_no_tests(out.result.checks.at(3)));
}

TEST_F(LocalRunnerTest, PytestReportsThroughPytestAddopts) {
  if (std::system("/usr/bin/python3 -c 'import pytest' 2>/dev/null") != 0) GTEST_SKIP() << "no pytest";
  LocalRunner runner = make_runner(false);
  CheckSpec spec = detected("pytest", "cd tests && python3 -m pytest -p no:cacheprovider");
  ASSERT_EQ(spec.report_format, "pytest");
  spec.env["PYTEST_ADDOPTS"] = "-q";  // the spec's own options stay
  CheckSpec not_pytest = detected("wrapped", "true");
  not_pytest.report_format = "pytest";
  RunOutcome out = run_files(runner, {{"tests/test_p.py", "def test_a(): pass\ndef test_b(): assert 0\n"}}, {spec, not_pytest});
  const CheckResult& c = out.result.checks.at(0);
  EXPECT_EQ(c.tests, (std::vector<TestCase>{{"test_p::test_a", "passed"}, {"test_p::test_b", "failed"}}))
      << c.runs.at(0).report << " " << c.runs.at(0).report_detail << c.runs.at(0).out.tail << c.runs.at(0).err.tail;
  EXPECT_EQ(c.verdict, kFailed);
  // A check declared pytest whose command never ran pytest has no report: failed.
  const CheckResult& w = out.result.checks.at(1);
  EXPECT_EQ(w.runs.at(0).report, "missing");
  EXPECT_NE(w.runs.at(0).report_detail.find("PYTEST_ADDOPTS"), std::string::npos);
  EXPECT_EQ(w.verdict, kFailed);
}

}  // namespace
}  // namespace warden::test
