// In-process tests of the sandbox's pure parts: profile parsing and digests, the seccomp
// compiler's refusals and its programs' prefixes, bounded output capture, and the
// preflight's judgement of probe output.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "runner/model/check_spec.h"
#include "runner/check/check_verdict.h"
#include "runner/sandbox/output_capture.h"
#include "runner/check/test_report.h"
#include "runner/model/preflight.h"
#include "runner/model/sandbox_profile.h"
#include "runner/sandbox/seccomp_filter.h"

namespace warden {
namespace {

Json default_json() { return parse_json(builtin_profile_text("default")).value(); }

TEST(SandboxProfile, BuiltinProfilesParseAndRoundTrip) {
  for (auto name : builtin_profile_names()) {
    auto p = SandboxProfile::load(name);
    ASSERT_TRUE(p) << p.error().message;
    auto again = SandboxProfile::from_json(p->to_json());
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->digest(), p->digest());
  }
  EXPECT_NE(SandboxProfile::load("default")->digest(), SandboxProfile::load("strict")->digest());
}

TEST(SandboxProfile, DigestIgnoresFormattingButNotContent) {
  Json j = default_json();
  auto a = SandboxProfile::from_json(j).value();
  auto b = SandboxProfile::parse(j.dump(4), "reformatted").value();
  EXPECT_EQ(a.digest(), b.digest());
  j["limits"]["processes"] = 255;
  EXPECT_NE(SandboxProfile::from_json(j)->digest(), a.digest());
}

TEST(SandboxProfile, RefusalsNameTheField) {
  auto refused = [](auto edit) {
    Json j = default_json();
    edit(j);
    auto p = SandboxProfile::from_json(j);
    return p ? std::string("accepted") : p.error().message;
  };
  EXPECT_EQ(refused([](Json& j) { j["env"].erase("TZ"); }), "profile.env: TZ is required (a fixed environment)");
  EXPECT_EQ(refused([](Json& j) { j["limits"]["processes"] = 0; }), "profile.limits.processes: must be between 4 and 1000000");
  EXPECT_EQ(refused([](Json& j) { j["surprise"] = 1; }), "profile.surprise: unknown field");
  EXPECT_EQ(refused([](Json& j) { j["ro_binds"][0]["src"] = "usr"; }),
            "profile.ro_binds[0].src: \"usr\" must be an absolute, normalized path other than /");
  EXPECT_EQ(refused([](Json& j) { j["workspace"] = "/a/../b"; }),
            "profile.workspace: \"/a/../b\" must be an absolute, normalized path other than /");
  EXPECT_EQ(refused([](Json& j) { j["uid"] = 0; }), "profile.uid: must be between 1 and 65535");
  EXPECT_EQ(refused([](Json& j) { j["limits"].erase("wall_timeout_ms"); }), "profile.limits.wall_timeout_ms: missing");
  EXPECT_EQ(refused([](Json& j) { j["limits"]["cpu_seconds"] = 1.5; }), "profile.limits.cpu_seconds: must be an integer");
  EXPECT_NE(SandboxProfile::load("nonexistent").error().message.find("no built-in sandbox profile"), std::string::npos);
}

TEST(Seccomp, CompilesTheBuiltinPoliciesAndRefusesUnknownNames) {
  for (auto name : builtin_profile_names()) {
    auto program = compile_seccomp(SandboxProfile::load(name)->seccomp);
    ASSERT_TRUE(program) << program.error().message;
    EXPECT_EQ(program->size() % 8, 0u);  // whole struct sock_filter instructions
  }
  SeccompPolicy bad;
  bad.deny = {"ptrace", "no_such_call"};
  EXPECT_EQ(compile_seccomp(bad).error().message, "seccomp: unknown system call \"no_such_call\"");
  bad.deny = {};
  bad.deny_socket_families = {"AF_MARTIAN"};
  EXPECT_EQ(compile_seccomp(bad).error().message, "seccomp: unknown socket family \"AF_MARTIAN\"");
}

// bwrap takes its program at EOF (SandboxChild::release()); a Warden killed in the middle of
// handing it over would leave a prefix. The kernel must refuse every proper prefix of every
// built-in program (libseccomp's architecture check jumps to the last instruction), and load
// the whole one. Each load is tried in a child of its own: a filter, once loaded, stays.
TEST(Seccomp, EveryProperPrefixIsRefused) {
  auto loads = [](const std::string& program, size_t instructions) {
    pid_t pid = ::fork();
    if (pid == 0) {
      sock_fprog prog{static_cast<unsigned short>(instructions),
                      reinterpret_cast<sock_filter*>(const_cast<char*>(program.data()))};
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(3);
      if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0) ::_exit(0);
      ::_exit(errno == EINVAL ? 1 : 2);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
  };
  for (auto name : builtin_profile_names()) {
    auto program = compile_seccomp(SandboxProfile::load(name)->seccomp);
    ASSERT_TRUE(program) << program.error().message;
    const size_t n = program->size() / sizeof(sock_filter);
    ASSERT_GT(n, 2u);
    for (size_t k = 0; k < n; ++k) EXPECT_EQ(loads(*program, k), 1) << name << ": a prefix of " << k << " of " << n << " instructions";
    EXPECT_EQ(loads(*program, n), 0) << name << ": the whole program";
  }
}

TEST(OutputCapture, KeepsHeadTailAndDigestWithinBounds) {
  OutputLimits limits{10, 4, 4, 25};
  StreamCapture c(limits);
  std::string all;
  for (int i = 0; i < 10; ++i) {
    std::string chunk = std::to_string(i) + "abc";
    size_t accepted = c.append(chunk);
    all += chunk.substr(0, accepted);
  }
  EXPECT_TRUE(c.over_limit());
  StreamEvidence e = c.finish();
  EXPECT_EQ(e.bytes, 25u);
  EXPECT_EQ(all.size(), 25u);
  EXPECT_EQ(e.sha256, sha256(all));
  EXPECT_EQ(e.kept, all.substr(0, 10));
  EXPECT_EQ(e.kept_sha256, sha256(all.substr(0, 10)));
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.head, all.substr(0, 4));
  EXPECT_EQ(e.tail, all.substr(21));
}

TEST(OutputCapture, ShortOutputHasNoRepeatedTailAndValidUtf8) {
  StreamCapture c(OutputLimits{100, 4, 4, 1000});
  c.append("ab\xff");
  StreamEvidence e = c.finish();
  EXPECT_FALSE(e.truncated);
  EXPECT_EQ(e.head, "ab\xEF\xBF\xBD");
  EXPECT_EQ(e.tail, "");
  EXPECT_EQ(e.kept_sha256, e.sha256);
  EXPECT_EQ(sanitize_utf8("\xe2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Preflight, JudgesProbeOutputPartByPart) {
  SandboxProfile p = SandboxProfile::load("default").value();
  HostFacts facts;
  facts.namespaces = {{"net", "net:[1]"}, {"user", "user:[2]"}};
  facts.probe_started = true;
  facts.exit_code = 0;
  facts.workspace_write_seen = true;
  facts.nproc_limit = 256;
  std::string limits = "Limit                     Soft Limit           Hard Limit           Units\n"
                       "Max cpu time              600                  601                  seconds\n"
                       "Max file size             1073741824           1073741824           bytes\n"
                       "Max processes             256                  256                  processes\n"
                       "Max open files            1024                 1024                 files\n"
                       "Max address space         8589934592           8589934592           bytes\n";
  auto probe = [&](std::string status, std::string netdev) {
    return "@status\n" + status + "@limits\n" + limits + "@netdev\nInter-| Receive\n face |bytes\n" + netdev +
           "@usrowner\n65534\n@tmp\n@ns\nuser user:[9]\nmnt mnt:[8]\npid pid:[7]\nnet net:[6]\nipc ipc:[5]\nuts uts:[4]\n"
           "cgroup cgroup:[3]\n@visible\n@writes\ntmp-ok\nworkspace-ok\n@workspace\nwarden-lower\n@end\n";
  };
  std::string good_status = "Uid:\t1000\t1000\t1000\t1000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                            "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";
  facts.stdout_text = probe(good_status, "    lo: 0 0\n");
  PreflightReport ok = judge_preflight(p, facts);
  EXPECT_TRUE(ok.ok) << ok.failures();

  std::string no_seccomp = good_status;
  no_seccomp.replace(no_seccomp.find("Seccomp:\t2"), 10, "Seccomp:\t0");
  facts.stdout_text = probe(no_seccomp, "    lo: 0 0\n  eth0: 1 2\n");
  PreflightReport bad = judge_preflight(p, facts);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.failures(),
            "network: interface eth0 is present; seccomp: Seccomp is \"0\", want 2 (filter)");

  facts.stdout_text.clear();
  facts.exit_code = 1;
  facts.stderr_text = "bwrap: Creating new namespace failed";
  PreflightReport dead = judge_preflight(p, facts);
  EXPECT_FALSE(dead.ok);
  EXPECT_EQ(dead.checks.size(), 1u);
  EXPECT_EQ(dead.failures(), "sandbox_start: the probe did not finish (exit 1): bwrap: Creating new namespace failed");
  auto round = PreflightReport::from_json(dead.to_json());
  ASSERT_TRUE(round);
  EXPECT_EQ(round->to_json(), dead.to_json());
  // Results recorded before reports said what enforces each limit still parse.
  Json old = ok.to_json();
  old.erase("enforced");
  auto older = PreflightReport::from_json(old);
  ASSERT_TRUE(older) << older.error().message;
  EXPECT_TRUE(older->enforced.empty());
  EXPECT_EQ(older->to_json(), old);  // and keep their bytes
}

TEST(Preflight, EnforcedLimitsNameWhatBoundsEachLimit) {
  SandboxProfile p = SandboxProfile::load("default").value();
  auto find = [](const std::vector<EnforcedLimit>& list, std::string_view limit, std::string_view where = "") {
    for (const auto& e : list) {
      if (e.limit == limit && e.where == where) return e;
    }
    return EnforcedLimit{"absent", "", 0, "absent"};
  };
  HostFacts root_v1;
  root_v1.cgroup_by = "cgroup-v1";
  root_v1.cgroup_pids = root_v1.cgroup_memory = root_v1.cgroup_cpu = true;
  root_v1.nproc_limit = 8192;
  root_v1.run_tmpfs = true;
  auto all = enforced_limits(p, root_v1);
  EXPECT_EQ(find(all, "memory").by, "cgroup-v1");
  EXPECT_EQ(find(all, "memory").value, p.limits.memory_bytes);
  EXPECT_EQ(find(all, "pids").by, "cgroup-v1");
  EXPECT_EQ(find(all, "processes_per_uid").value, 8192u);
  EXPECT_EQ(find(all, "cpu").by, "cgroup-v1");
  EXPECT_EQ(find(all, "disk_bytes").by, "tmpfs");
  EXPECT_EQ(find(all, "disk_inodes").value, p.limits.disk_inodes);
  EXPECT_EQ(find(all, "tmpfs_bytes", "/dev/shm").by, "tmpfs");
  EXPECT_EQ(find(all, "tmpfs_inodes", "/tmp").by, "cgroup-v1");

  // No cgroup, not root, scratch on a tmpfs: the RLIMITs, and nothing for memory or disk.
  HostFacts bare;
  bare.nproc_limit = p.limits.processes;
  bare.scratch_on_tmpfs = true;
  auto little = enforced_limits(p, bare);
  EXPECT_EQ(find(little, "memory").by, "none");
  EXPECT_EQ(find(little, "pids").by, "rlimit");
  EXPECT_EQ(find(little, "processes_per_uid").by, "absent");
  EXPECT_EQ(find(little, "cpu").by, "none");
  EXPECT_EQ(find(little, "disk_bytes").by, "none");
  EXPECT_EQ(find(little, "address_space").by, "rlimit");

  // Not root with a memory cgroup: the writable layer's tmpfs pages are the run's memory.
  HostFacts user = bare;
  user.cgroup_by = "cgroup-v2";
  user.cgroup_memory = true;
  EXPECT_EQ(find(enforced_limits(p, user), "disk_bytes").by, "cgroup-v2");
  EXPECT_EQ(find(enforced_limits(p, user), "disk_bytes").value, p.limits.memory_bytes);
}

TEST(TestReports, JUnitStatusesIdsAndRefusals) {
  auto tests = parse_junit(
      "<?xml version='1.0'?><testsuite><testcase classname='m' name='ok'/>"
      "<testcase classname='m' name='bad'><failure/></testcase><testcase name='err'><error/></testcase>"
      "<testcase classname='m' name='skip'><skipped/></testcase>"
      "<testcase classname='m' name='ok'><failure/></testcase></testsuite>");
  ASSERT_TRUE(tests) << tests.error().message;
  EXPECT_EQ(*tests, (std::vector<TestCase>{{"err", "error"}, {"m::bad", "failed"}, {"m::ok", "failed"}, {"m::skip", "skipped"}}));
  EXPECT_FALSE(parse_junit("<testsuite><testcase name='x'>"));
  EXPECT_FALSE(parse_junit("<html/>"));
  EXPECT_FALSE(parse_junit("<testsuite><testcase/></testsuite>"));
  // No entity expansion beyond XML's own five, no external anything.
  auto doctype = parse_junit("<!DOCTYPE t [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><testsuite><testcase name='&x;'/></testsuite>");
  if (doctype) {
    EXPECT_EQ(doctype->at(0).id.find("root:"), std::string::npos);
  }
}

TEST(TestReports, TapLinesDirectivesPlansAndBailOut) {
  auto tests = parse_tap("TAP version 13\n1..5\nok 1 - first\nnot ok 2 second # TODO later\nok 3 # SKIP why\n"
                         "    ok 1 - indented subtest\nnot ok 4 - fourth\nok\n");
  ASSERT_TRUE(tests);
  EXPECT_EQ(*tests, (std::vector<TestCase>{{"#3", "skipped"}, {"#5", "passed"}, {"first", "passed"},
                                           {"fourth", "failed"}, {"second", "skipped"}}));
  EXPECT_EQ(parse_tap("1..3\nok 1 - a\n")->back(), (TestCase{"plan", "error"}));
  EXPECT_EQ(parse_tap("ok 1 - a\nBail out! db down\nok 2 - b\n")->front(), (TestCase{"a", "passed"}));
  EXPECT_EQ(parse_tap("ok 1 - a\nBail out! db down\n")->size(), 2u);
}

TEST(TestReports, Judgement) {
  std::vector<TestCase> tests = {{"a", "passed"}, {"b", "failed"}, {"c", "passed"}};
  TestJudgement ok = judge_tests(tests, {"a"}, {"c"});
  EXPECT_TRUE(ok.ok);
  TestJudgement bad = judge_tests(tests, {"a", "z"}, {"b"});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.fail_to_pass[1].status, "missing");
  EXPECT_EQ(bad.pass_to_pass[0].status, "failed");
}

CheckRun run_with(std::string outcome, std::vector<TestCase> tests = {}) {
  CheckRun r;
  r.outcome = std::move(outcome);
  r.tests = std::move(tests);
  return r;
}

TEST(Verdicts, RunsMustAgreeAndMeetTheQuorum) {
  EXPECT_EQ(combine_runs({run_with(kPassed), run_with(kPassed)}, 2), kPassed);
  EXPECT_EQ(combine_runs({run_with(kPassed), run_with(kFailed), run_with(kPassed)}, 2), kFlakyOracle);
  EXPECT_EQ(combine_runs({run_with(kFailed, {{"t", "failed"}}), run_with(kFailed, {{"t", "error"}})}, 1), kFlakyOracle);
  // Runs the sandbox could not make do not vote, but the quorum must still be met.
  EXPECT_EQ(combine_runs({run_with(kPassed), run_with(kError), run_with(kPassed)}, 2), kPassed);
  EXPECT_EQ(combine_runs({run_with(kPassed), run_with(kError), run_with(kError)}, 2), kError);
  EXPECT_EQ(combine_runs({run_with(kTimeout)}, 1), kTimeout);
}

TEST(Verdicts, RunOutcomeNeverLooksAtDurations) {
  CheckSpec spec = CheckSpec::shell("c", "true");
  CheckRun r;
  r.exit_code = 0;
  r.duration_ms = 1;
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kPassed);
  r.duration_ms = 86'400'000;
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kPassed);
  r.exit_code = 1;
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kFailed);
  r.exit_code = 0;
  r.tests = {{"t", "error"}};
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kFailed);
  r.output_limit_exceeded = true;
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kFailed);
  r.timed_out = true;
  EXPECT_EQ(run_outcome(r, spec, std::nullopt), kTimeout);
  // With FAIL_TO_PASS ids the listed tests decide, whatever the exit status.
  CheckRun swe;
  swe.exit_code = 1;
  swe.report = "parsed";
  swe.tests = {{"fixed", "passed"}, {"other", "failed"}};
  TestJudgement j;
  j.ok = true;
  EXPECT_EQ(run_outcome(swe, spec, j), kPassed);
  swe.report = "missing";
  EXPECT_EQ(run_outcome(swe, spec, j), kFailed);
  // A report that names no test that ran fails, whatever the exit status or the judgement.
  CheckRun none;
  none.exit_code = 0;
  none.report = "parsed";
  EXPECT_EQ(run_outcome(none, spec, std::nullopt), kFailed);
  EXPECT_EQ(run_outcome(none, spec, j), kFailed);
  none.tests = {{"a", "skipped"}};
  EXPECT_EQ(run_outcome(none, spec, std::nullopt), kFailed);
  CheckResult check{"c", {}, {}, kFailed, {none}, none.tests, std::nullopt};
  EXPECT_TRUE(ran_no_tests(check));
  check.runs[0].report = "none";  // no report: nothing is known about its tests
  EXPECT_FALSE(ran_no_tests(check));
}

TEST(CheckSpecs, ParseStrictlyAndDigestStably) {
  auto spec = CheckSpec::from_json(parse_json(R"({"name":"t","argv":["pytest"],"runs":3,"quorum":2,
      "report_format":"junit","report_path":"out/j.xml","fail_to_pass":["a"],"proves":["inv"]})").value());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->effective_quorum(), 2);
  EXPECT_EQ(CheckSpec::from_json(spec->to_json())->digest(), spec->digest());
  auto refused = [](const char* text) { return CheckSpec::from_json(parse_json(text).value()).error().message; };
  EXPECT_EQ(refused(R"({"name":"t","argv":[]})"), "check.argv: must name a command");
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"runs":2,"quorum":3})"), "check.quorum: must not exceed runs");
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"report_format":"junit","report_path":"../j.xml"})"),
            "check.report_path: must be a relative path inside the workspace");
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"fail_to_pass":["a"]})"),
            "check.report_format: fail_to_pass/pass_to_pass need a test report");
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"report_format":"nose"})"),
            "check.report_format: must be none, junit, tap, unittest, pytest, ctest or go-json");
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"report_format":"pytest","report_path":"j.xml"})").substr(0, 40),
            "check.report_path: pytest's report path ");
  auto unittest = CheckSpec::from_json(parse_json(R"({"name":"t","argv":["x"],"report_format":"unittest"})").value());
  ASSERT_TRUE(unittest);
  EXPECT_EQ(unittest->report_source(), ReportSource::stderr_stream);
  EXPECT_EQ(refused(R"({"name":"t","argv":["x"],"bogus":1})"), "check.bogus: unknown field");
}

}  // namespace
}  // namespace warden
