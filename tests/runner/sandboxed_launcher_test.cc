// The executor's sandbox (runner/sandbox/sandboxed_launcher.h) with real bwrap: what a launched
// program sees (its stdin bytes, the files its command names as read-only copies where it
// names them, the profile's environment plus its declared one, loopback only unless the
// profile says network) and how it ends (its output cap, its deadline, a stop request, a
// signal, and nothing it started left behind). Also the profile's network field and the
// preflight's judgement of it: opt-in, recorded in the digest, and failing closed without it.
#include "runner/sandbox/sandboxed_launcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/file.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"

namespace warden {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::shared_ptr<SandboxedLauncher> launcher(bool network = false) {
  SandboxProfile profile = SandboxProfile::load("executor").value();
  profile.network = network;
  auto made = SandboxedLauncher::create(std::move(profile));
  if (!made) throw std::runtime_error(made.error().message);
  return *made;
}

LaunchRequest shell(std::string script) {
  LaunchRequest r;
  r.argv = {"/bin/sh", "-c", std::move(script)};
  r.timeout = 20s;
  return r;
}

SubprocessResult launched(CommandLauncher& l, const LaunchRequest& r) {
  auto ran = l.launch(r);
  if (!ran) throw std::runtime_error(ran.error().message);
  return std::move(*ran);
}

TEST(SandboxedLauncher, StdinIsTheRequestsBytesAndTheWorkspaceIsPrivate) {
  auto l = launcher();
  LaunchRequest r = shell("pwd; ls -A; cat | sha256sum | cut -c1-64; echo x > mine && cat mine");
  r.stdin_data = std::string(3 << 20, 'q');
  SubprocessResult out = launched(*l, r);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "/workspace\n" + sha256(r.stdin_data).hex() + "\nx\n");
}

TEST(SandboxedLauncher, NamedFilesAreReadOnlyCopiesWhereTheCommandNamesThem) {
  test::TempDir tmp;
  fs::create_directories(tmp / "folder" / "agents");
  fs::permissions(tmp / "folder", fs::perms::owner_all);  // 0700: the sandbox's uid cannot enter
  ASSERT_TRUE(write_file_atomic(tmp / "folder" / "agents" / "run.sh", "#!/bin/sh\necho ran $1\n", 0755));
  ASSERT_TRUE(write_file_atomic(tmp / "folder" / "key.txt", "api-key\n", 0600));
  ASSERT_TRUE(write_file_atomic(tmp / "folder" / "unnamed.txt", "secret\n", 0644));
  ASSERT_TRUE(write_file_atomic(tmp / "outside.txt", "outside\n", 0644));
  LaunchRequest r;
  const std::string absolute_key = (tmp / "folder" / "key.txt").string();
  r.argv = {"/bin/sh", "-c",
            "agents/run.sh ok; cat " + absolute_key + "; ls -A; [ -e unnamed.txt ] || echo no-unnamed; "
            "[ -e ../outside.txt ] || echo no-outside; (echo x > agents/run.sh) 2>/dev/null || echo read-only; "
            "(rm -f agents/run.sh) 2>/dev/null; [ -x agents/run.sh ] && echo still-there"};
  r.dir = tmp / "folder";
  r.files = {"agents/run.sh", absolute_key, "../outside.txt", "agents", "not-a-file", "/usr/bin/env"};
  r.timeout = 20s;
  SubprocessResult out = launched(*launcher(), r);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "ran ok\napi-key\nagents\nno-unnamed\nno-outside\nread-only\nstill-there\n");
  EXPECT_EQ(read_file(tmp / "folder" / "agents" / "run.sh").value(), "#!/bin/sh\necho ran $1\n");
}

// Warden reads the named files as root: a name that is, or passes through, a symlink (a file
// in a repository an earlier proposal changed into a link to the ledger's key) is not copied.
TEST(SandboxedLauncher, NamedFilesReachedThroughSymlinksAreNotCopied) {
  test::TempDir tmp;
  fs::create_directories(tmp / "folder" / "real");
  fs::create_directories(tmp / "secrets");
  ASSERT_TRUE(write_file_atomic(tmp / "secrets" / "signer.key", "the-signing-key\n", 0600));
  ASSERT_TRUE(write_file_atomic(tmp / "folder" / "real" / "prompt.txt", "a prompt\n", 0644));
  fs::create_symlink(tmp / "secrets" / "signer.key", tmp / "folder" / "prompt.txt");
  fs::create_symlink("../secrets", tmp / "folder" / "linked");
  fs::create_symlink(tmp / "secrets", tmp / "secrets-link");
  LaunchRequest r = shell("cat prompt.txt linked/signer.key " + (tmp / "secrets-link" / "signer.key").string() +
                          " real/prompt.txt 2>/dev/null; true");
  r.dir = tmp / "folder";
  r.files = {"prompt.txt", "linked/signer.key", (tmp / "secrets-link" / "signer.key").string(), "real/prompt.txt"};
  SubprocessResult out = launched(*launcher(), r);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "a prompt\n");
  EXPECT_EQ(out.out.find("the-signing-key"), std::string::npos);
}

TEST(SandboxedLauncher, TheEnvironmentIsTheProfilesAndTheDeclaredOnly) {
  ::setenv("WARDEN_TEST_SECRET", "hunter2", 1);
  LaunchRequest r = shell("env | sort");
  r.env = {{"WARDEN_STAGE", "critic"}, {"TZ", "Europe/Paris"}};
  SubprocessResult out = launched(*launcher(), r);
  ::unsetenv("WARDEN_TEST_SECRET");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out,
            "HOME=/tmp\nLANG=C.UTF-8\nLC_ALL=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\nPWD=/workspace\n"
            "PYTHONDONTWRITEBYTECODE=1\nPYTHONHASHSEED=0\nSOURCE_DATE_EPOCH=0\nTZ=Europe/Paris\nUSER=warden\n"
            "WARDEN_STAGE=critic\n");
}

TEST(SandboxedLauncher, EndingsCapDeadlineStopAndSignal) {
  auto l = launcher();
  LaunchRequest flood = shell("yes");
  flood.max_output = 1 << 16;
  EXPECT_EQ(launched(*l, flood).ending, SubprocessResult::Ending::stdout_overflow);

  LaunchRequest hang = shell("sleep 60");
  hang.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(launched(*l, hang).ending, SubprocessResult::Ending::timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

  std::stop_source stop;
  LaunchRequest stopped = shell("sleep 60");
  stopped.stop = stop.get_token();
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  EXPECT_EQ(launched(*l, stopped).ending, SubprocessResult::Ending::timed_out);
  stopper.join();

  SubprocessResult crashed = launched(*l, shell("echo dying >&2; kill -SEGV $$"));
  EXPECT_EQ(crashed.ending, SubprocessResult::Ending::signaled);
  EXPECT_EQ(crashed.signal, 11);
  EXPECT_EQ(crashed.err, "dying\n");
}

TEST(SandboxedLauncher, NothingItStartsOutlivesIt) {
  const std::string marker = test::fresh_marker();
  SubprocessResult out = launched(*launcher(), shell("setsid sh -c 'sleep 30; : " + marker + "' </dev/null >/dev/null 2>&1 & "
                                                     "(sh -c 'while :; do sleep 1; done; : " + marker + "' &) ; echo left"));
  ASSERT_EQ(out.out, "left\n");
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (test::count_processes_with(marker) > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(test::count_processes_with(marker), 0);
}

TEST(SandboxedLauncher, ConcurrentLaunchesEachGetASandbox) {
  auto l = launcher();
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      LaunchRequest r = shell("sleep 0.3; echo " + std::to_string(i));
      auto ran = l->launch(r);
      if (ran && ran->out == std::to_string(i) + "\n") ++good;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good, 3);
}

TEST(SandboxedLauncher, NetworkIsTheProfilesChoiceAndPartOfItsConfinement) {
  const std::string interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,";
  auto off = launcher(false);
  EXPECT_EQ(launched(*off, shell(interfaces)).out, "lo,");
  auto on = launcher(true);
  ASSERT_TRUE(on->preflight()) << "a profile with network passes its own preflight";
  SubprocessResult seen = launched(*on, shell(interfaces + "; [ -r /etc/resolv.conf ] && echo resolv"));
  EXPECT_NE(seen.out.find("resolv"), std::string::npos) << seen.out;
  EXPECT_EQ(off->confinement().profile, "executor");
  EXPECT_FALSE(off->confinement().network);
  EXPECT_TRUE(on->confinement().network);
  EXPECT_NE(on->confinement().profile_sha256, off->confinement().profile_sha256);
  EXPECT_EQ(off->confinement().profile_sha256, SandboxProfile::load("executor").value().digest());
}

TEST(SandboxedLauncher, AFailingPreflightRefusesEveryLaunch) {
  SandboxProfile leaky = SandboxProfile::load("executor").value();
  leaky.name = "leaky";
  leaky.ro_binds.push_back(BindMount{"/usr/share", "/run", false});
  auto l = SandboxedLauncher::create(std::move(leaky)).value();
  Status st = l->preflight();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::verification_failed);
  EXPECT_NE(st.error().message.find("host path /run is visible"), std::string::npos) << st.error().message;
  auto ran = l->launch(shell("echo should-not-run"));
  ASSERT_FALSE(ran);
  EXPECT_EQ(ran.error().code, Errc::verification_failed);
}

TEST(SandboxProfileNetwork, OptInAndOnlyInTheDigestWhenOn) {
  SandboxProfile p = SandboxProfile::load("default").value();
  EXPECT_FALSE(p.network);
  EXPECT_FALSE(p.to_json().contains("network"));  // profiles without it keep their digests
  p.network = true;
  auto again = SandboxProfile::from_json(p.to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->network);
  EXPECT_NE(again->digest(), SandboxProfile::load("default").value().digest());
}

TEST(SandboxProfileNetwork, ThePreflightAcceptsTheHostsNetworkOnlyWhenTheProfileAsksForIt) {
  SandboxProfile p = SandboxProfile::load("executor").value();
  HostFacts facts;
  facts.namespaces = {{"net", "net:[6]"}};  // the sandbox's net namespace is the host's
  facts.probe_started = true;
  facts.exit_code = 0;
  facts.stdout_text = "@netdev\nInter-| Receive\n face |bytes\n    lo: 0 0\n  eth0: 1 2\n@ns\nnet net:[6]\n@end\n";
  auto network_failures = [&](const SandboxProfile& profile) {
    std::string out;
    for (const auto& c : judge_preflight(profile, facts).checks) {
      if ((c.name == "network" || c.name == "namespaces") && !c.ok) out += c.name + ": " + c.detail + "\n";
    }
    return out;
  };
  std::string closed = network_failures(p);
  EXPECT_NE(closed.find("network: interface eth0 is present"), std::string::npos) << closed;
  EXPECT_NE(closed.find("net namespace is the host's"), std::string::npos) << closed;
  p.network = true;
  std::string open = network_failures(p);
  EXPECT_EQ(open.find("network:"), std::string::npos) << open;
  EXPECT_EQ(open.find("net namespace is the host's"), std::string::npos) << open;
}

}  // namespace
}  // namespace warden
