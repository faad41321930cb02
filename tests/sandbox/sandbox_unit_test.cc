// In-process tests of the sandbox's pure parts: profile parsing and digests, the seccomp
// compiler's refusals, bounded output capture, and the preflight's judgement of probe output.
#include <gtest/gtest.h>

#include "runner/output_capture.h"
#include "runner/preflight.h"
#include "runner/sandbox_profile.h"
#include "runner/seccomp_filter.h"

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
}

}  // namespace
}  // namespace warden
