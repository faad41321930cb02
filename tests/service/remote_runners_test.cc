// Check work on remote runners, with real processes: `warden serve` and `warden
// runner` processes on state directories of their own (as if on other machines), builds
// started with `--checks-on runners`, and a raw warden.v1.Runners stream for a runner that
// lies. What must hold: every check runs on a runner and the ledger names which one, with a
// signature an auditor verifies offline; the decisions are those of a local build; a runner
// killed mid-check has its task run by another and one decision is recorded; a forged result
// (another tree, a wrong digest, a bad signature) never reaches the kernel, and the runner
// that sent it is failed with the reason in the ledger.
#include <fleet.grpc.pb.h>
#include <netdb.h>
#include <stdlib.h>
#include <signal.h>

#include <atomic>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "diff/diff.h"
#include "runner/model/check_spec.h"
#include "runner/check/check_verdict.h"
#include "runner/check/remote_run.h"
#include "runner/environment/environment_store.h"
#include "runner/sandbox/sandbox.h"
#include "runner/model/run_result.h"
#include "runner/model/sandbox_profile.h"
#include "runner/workspace/tree_hash.h"
#include "store/lmdb_state_store.h"
#include "store/redis_state_store.h"
#include "tests/service/runs_fixture.h"
#include "tests/service/serve_fixture.h"
#include "tests/support/files.h"
#include "tests/support/redis_server.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

// What a runner signs, spelled out as proto/fleet.proto documents it (not the library's own
// function: a test that shared it would agree with any change to it).
std::string enrol_message(const std::string& id, const std::string& identity, const std::string& nonce) {
  return "warden-runner-enrol-v1\n" + id + "\n" + identity + "\n" + nonce;
}
std::string result_message(const std::string& id, const std::string& task, const std::string& nonce_hex,
                           const std::string& digest) {
  return "warden-runner-result-v1\n" + id + "\n" + task + "\n" + nonce_hex + "\n" + digest;
}

class RemoteChecks : public ServeRuns {
 protected:
  // With tokens (tokens()): the tokens file, and the token the test's own calls use.
  fs::path tokens_file;
  std::string client_token;

  static std::string secret(const std::string& name) { return "secret-of-" + name; }
  fs::path token_file(const std::string& name) { return tmp / (name + ".token"); }

  // A tokens file: "ops" (admin, the test's own calls) and a runner identity for each name.
  void tokens(const std::vector<std::string>& runner_names) {
    std::string entries = "{\"name\": \"ops\", \"sha256\": \"" + sha256(secret("ops")).str() + "\", \"roles\": [\"admin\"]}";
    std::vector<std::string> names = runner_names;
    names.push_back("ops");
    for (const std::string& name : runner_names) {
      entries += ", {\"name\": \"" + name + "\", \"sha256\": \"" + sha256(secret(name)).str() + "\", \"roles\": [\"runner\"]}";
    }
    for (const std::string& name : names) {
      write_file(token_file(name), secret(name));
      fs::permissions(token_file(name), fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    }
    tokens_file = tmp / "tokens.json";
    write_file(tokens_file, "{\"tokens\": [" + entries + "]}");
    fs::permissions(tokens_file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    client_token = token_file("ops").string();
  }

  std::vector<std::string> connect() {
    std::vector<std::string> c{"--server", socket.string()};
    if (!client_token.empty()) c.insert(c.end(), {"--token", client_token});
    return c;
  }

  Child serve(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--heartbeat-interval-ms", "200", "--missed-heartbeats", "2"};
    if (!tokens_file.empty()) args.insert(args.end(), {"--tokens", tokens_file.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    return start(args);
  }

  ProcessResult stop(Child& server) {
    server.kill(SIGTERM);
    return server.wait();
  }

  // `fail_point`: the runner kills itself (SIGKILL) when it reaches that point of its work
  // (common/fail_point.h).
  Child runner(const std::string& id, const std::string& token = "", const std::string& server = "",
               const std::string& fail_point = "") {
    fs::create_directory(tmp / id);
    fs::permissions(tmp / id, fs::perms::owner_all, fs::perm_options::replace);
    std::vector<std::string> argv{warden_binary(), "runner", "--server", server.empty() ? socket.string() : server,
                                  "--state", (tmp / id).string(), "--id", id};
    if (!fail_point.empty()) argv.insert(argv.begin(), {"/usr/bin/env", "WARDEN_FAIL_POINT=" + fail_point});
    if (!token.empty()) argv.insert(argv.end(), {"--token", token_file(token).string()});
    return Child::spawn(argv);
  }

  AgentListing listed() { return agents_listed(connect()); }

  void wait_connected(const std::vector<std::string>& ids) {
    ASSERT_TRUE(eventually_listed(connect(), [&](const AgentListing& agents) {
      return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
        auto it = agents.find(id);
        return it != agents.end() && it->second.value("connected", false);
      });
    }, 30s));
  }

  std::vector<std::string> build_argv(const std::string& blueprint, const std::string& repository,
                                      const std::string& checks_on = "runners") {
    std::vector<std::string> argv{"build", blueprint, "--repository", repository, "--checks-on", checks_on, "--json"};
    for (const std::string& c : connect()) argv.push_back(c);
    return argv;
  }

  // The run's decisions, as "step#attempt=verdict", in ledger order.
  std::vector<std::string> decisions(const std::string& run_id) {
    std::vector<std::string> out;
    for (const auto& r : recorded(ledger, "decision", run_id)) {
      const auto& p = r["payload"];
      out.push_back(p.value("step_id", "") + "#" + std::to_string(p.value("attempt", 0)) + "=" +
                    (p["verdict"].value("accepted", false) ? "accepted" : "refused"));
    }
    return out;
  }

  // Every record of the run that holds a RunResult, with its attestation (null when none).
  std::vector<nlohmann::json> results(const std::string& run_id) {
    std::vector<nlohmann::json> out;
    for (const char* kind : {"run_result", "base_run", "oracle_run"}) {
      for (auto& r : recorded(ledger, kind, run_id)) out.push_back(r["payload"]);
    }
    return out;
  }

  // `warden build` over the server, in the background (its JSON summary on stdout).
  Child start_build(const std::string& blueprint, const std::string& repository) {
    std::vector<std::string> argv{warden_binary()};
    for (auto& a : build_argv(blueprint, repository)) argv.push_back(a);
    return Child::spawn(argv);
  }

  // `--store` for a fault test's store: none for the state directory's LMDB; for "redis", a
  // Redis started in `redis` on the test's directory.
  std::vector<std::string> store_args(const std::string& kind, std::optional<RedisServer>& redis) {
    if (kind != "redis") return {};
    redis.emplace(tmp / "redis");
    EXPECT_TRUE(redis->start()) << redis->log();
    return {"--store", "unix:" + (tmp / "redis" / "redis.sock").string()};
  }

  // The fleet's store as the server sees it, opened beside it.
  Result<std::unique_ptr<store::StateStore>> open_store(const std::optional<RedisServer>& redis) {
    if (redis) return store::open_redis_state_store(redis->address(), {.key_prefix = "warden:"});
    return store::open_lmdb_state_store(state / "fleet", {.sync = true});
  }

  // The tasks in the fleet's store once it has none or 120 s have passed (99: unreadable).
  uint64_t tasks_left(const std::optional<RedisServer>& redis) {
    auto store = open_store(redis);
    EXPECT_TRUE(store) << store.error().message;
    if (!store) return 99;
    uint64_t left = 99;
    for (auto until = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < until;) {
      left = (*store)->queue_length().value_or(99);
      if (left == 0) break;
      std::this_thread::sleep_for(200ms);
    }
    return left;
  }

  // Every run in the ledger has a recorded end.
  void expect_no_live_run() {
    ProcessResult listed = warden({"runs", "list", ledger.string(), "--json"});
    ASSERT_TRUE(listed.exited_with(0)) << describe(listed);
    for (const auto& line : stdout_json_lines(listed)) {
      if (line.value("type", "") != "run") continue;
      EXPECT_NE(line.value("status", "live"), "live") << "a run is still live: " << line.dump();
    }
  }

  // Drains both children until `doomed` has ended (its fail point killed it) or 180 s.
  static ProcessResult until_killed(Child& doomed, Child& build) {
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    while (doomed.output_open() && std::chrono::steady_clock::now() < deadline) {
      doomed.pump(std::chrono::steady_clock::now() + 50ms);
      build.pump(std::chrono::steady_clock::now() + 50ms);
    }
    return doomed.wait();
  }

  void expect_replays(const std::string& repository) {
    ProcessResult replay = warden({"replay", ledger.string(), "--repo", (state / "repos" / repository).string()});
    EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  }
};

// An attestation, checked here as an auditor would: the key's signature over exactly the
// recorded result.
void expect_signed(const nlohmann::json& record, const std::set<std::string>& runners, size_t signers = 1) {
  ASSERT_TRUE(record.contains("attestations")) << record.dump();
  ASSERT_EQ(record["attestations"].size(), signers) << record.dump();
  for (const auto& a : record["attestations"]) {
    EXPECT_TRUE(runners.contains(a.value("agent_id", ""))) << a.dump();
    auto key = from_hex(a.value("key", "")).value();
    auto sig = from_hex(a.value("signature", "")).value();
    Ed25519PublicKey pub{};
    ASSERT_EQ(key.size(), pub.size());
    std::copy(key.begin(), key.end(), pub.begin());
    EXPECT_TRUE(ed25519_verify(pub, result_message(a["agent_id"], a["task_id"], a["nonce"], record["run_result_sha256"]), sig))
        << a.dump();
  }
}

// One server and three runners with state directories of their own, as if on three machines,
// reaching the server over loopback TCP with tokens of their own.
TEST_F(RemoteChecks, ThreeRunnersOnLoopbackRunEveryCheckTheLedgerNamesWhichAndTheDecisionsAreALocalBuilds) {
  tokens({"r1", "r2", "r3"});
  Child server = serve({"--insecure-listen", "127.0.0.1:0"});
  const int port = logged_listening_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  const std::string tcp = "127.0.0.1:" + std::to_string(port);
  Child a = runner("runner-a", "r1", tcp);
  Child b = runner("runner-b", "r2", tcp);
  Child c = runner("runner-c", "r3", tcp);
  wait_connected({"runner-a", "runner-b", "runner-c"});

  ProcessResult remote = warden(build_argv("calculator", "remote"));
  ASSERT_TRUE(remote.exited_with(0)) << describe(remote) << read_file_or_empty(state / "runs" / "children.log");
  const auto summary = stdout_json(remote);
  EXPECT_EQ(summary.value("status", ""), "completed") << summary.dump();
  const std::string run_id = summary.value("run_id", "");

  auto held = results(run_id);
  ASSERT_GE(held.size(), 6u);
  for (const auto& r : held) expect_signed(r, {"runner-a", "runner-b", "runner-c"});
  expect_replays("remote");

  // The same build with the server's own sandbox decides the same.
  ProcessResult local = warden(build_argv("calculator", "local", "local"));
  ASSERT_TRUE(local.exited_with(0)) << describe(local);
  const std::string local_id = stdout_json(local).value("run_id", "");
  EXPECT_EQ(decisions(run_id), decisions(local_id));
  for (const auto& r : results(local_id)) EXPECT_FALSE(r.contains("attestations")) << "the server's own sandbox ran it";
  stop(server);

  // Replay holds each attestation to its record and to the fleet's record of enrolments: a
  // record as an enrolled runner signed it replays; one whose signature or runner was changed,
  // or signed by a key the fleet never recorded for that runner, does not. (A result of its
  // own, naming no blobs, so that the record stands alone in a ledger after its enrolments.)
  using Enrolment = std::tuple<std::string, std::string, std::string>;  // agent, owner, key
  std::vector<Enrolment> enrolments;
  auto replayed = [&](const nlohmann::json& payload) {
    TempDir dir;
    const fs::path l = dir / "ledger";
    EXPECT_TRUE(warden({"ledger", "init", l.string()}).exited_with(0));
    uint64_t store_seq = 0;
    for (const auto& [agent, owner, pub] : enrolments) {
      const nlohmann::json event = {
          {"store", "lmdb"}, {"store_seq", ++store_seq},
          {"event", {{"type", "registered"}, {"agent", agent}, {"at_ms", 0}, {"owner", owner}, {"key", pub}}}};
      write_file(dir / "e.json", event.dump());
      EXPECT_TRUE(warden({"ledger", "append", l.string(), "--kind", "fleet_event", "--payload", (dir / "e.json").string()})
                      .exited_with(0));
    }
    write_file(dir / "p.json", payload.dump());
    EXPECT_TRUE(warden({"ledger", "append", l.string(), "--kind", "run_result", "--payload", (dir / "p.json").string()})
                    .exited_with(0));
    return warden({"replay", l.string()});
  };
  RunResult result = RunResult::from_json(held.front()["run_result"]).value();
  for (auto& c : result.checks) c.runs.clear();
  auto key = Ed25519PrivateKey::generate().value();
  const std::string digest = result.deterministic_digest().str();
  const std::string nonce(64, 'c');
  auto sig = key.sign(result_message("runner-a", "task-1", nonce, digest)).value();
  const nlohmann::json made = {
      {"run_id", "run-1"}, {"step_id", "s1"}, {"attempt", 1}, {"run_result_sha256", digest},
      {"run_result", result.deterministic_json()},
      {"attestations", nlohmann::json::array({{{"agent_id", "runner-a"}, {"owner", "r1"},
                                               {"key", to_hex(std::string(key.public_key().begin(), key.public_key().end()))},
                                               {"task_id", "task-1"}, {"nonce", nonce},
                                               {"signature", to_hex(std::string(sig.begin(), sig.end()))}}})}};
  const std::string pub = made["attestations"][0]["key"];
  // Signed well, but by a key no enrolment names: the key in the attestation vouches for
  // nothing. Refused once the ledger records enrolment keys at all.
  enrolments = {{"runner-b", "r2", std::string(64, 'b')}};
  ProcessResult unenrolled = replayed(made);
  EXPECT_TRUE(unenrolled.exited_with(1)) << describe(unenrolled);
  EXPECT_NE(unenrolled.out.find("no fleet event in the ledger records that runner enrolling"), std::string::npos)
      << unenrolled.out;
  enrolments = {{"runner-a", "r2", pub}, {"runner-b", "r1", pub}};
  EXPECT_TRUE(replayed(made).exited_with(1)) << "another identity's or another runner's enrolment counted";
  // A ledger from before enrolments named their keys replays, saying the check was not made.
  enrolments = {};
  ProcessResult legacy = replayed(made);
  EXPECT_TRUE(legacy.exited_with(0)) << describe(legacy);
  EXPECT_NE((legacy.out + legacy.err).find("could not be checked against its enrolment"), std::string::npos)
      << describe(legacy);
  enrolments = {{"runner-a", "r1", std::string(64, 'a')}, {"runner-a", "r1", pub}};
  ProcessResult as_made = replayed(made);
  EXPECT_TRUE(as_made.exited_with(0)) << describe(as_made);
  nlohmann::json resigned = made;
  std::string bad = resigned["attestations"][0]["signature"];
  bad[0] = bad[0] == '0' ? '1' : '0';
  resigned["attestations"][0]["signature"] = bad;
  ProcessResult bad_signature = replayed(resigned);
  EXPECT_TRUE(bad_signature.exited_with(1)) << describe(bad_signature);
  EXPECT_NE(bad_signature.out.find("the signature is not its key's"), std::string::npos) << bad_signature.out;
  nlohmann::json renamed = made;
  renamed["attestations"][0]["agent_id"] = "runner-c";
  EXPECT_TRUE(replayed(renamed).exited_with(1));
  // One runner counted twice is no quorum.
  nlohmann::json twice = made;
  twice["attestations"].push_back(made["attestations"][0]);
  ProcessResult doubled = replayed(twice);
  EXPECT_TRUE(doubled.exited_with(1)) << describe(doubled);
  EXPECT_NE(doubled.out.find("signs the result twice"), std::string::npos) << doubled.out;
}

// A parallel plan (examples/textkit, merge_queue_depth 8) on the server's runners: the build
// child sends its jobs' runs over one channel at once, the answers come back by request id,
// several runners do the work, and the decisions and the ledger's trees are those of the same
// plan on the server's own sandbox.
TEST_F(RemoteChecks, AMergeQueueSpreadsItsChecksOverTheRunnersAndDecidesAsALocalBuild) {
  fs::create_directory_symlink(fs::path(WARDEN_SOURCE_DIR) / "examples" / "textkit", blueprints / "textkit");
  Child server = serve();
  Child a = runner("runner-a");
  Child b = runner("runner-b");
  Child c = runner("runner-c");
  wait_connected({"runner-a", "runner-b", "runner-c"});

  ProcessResult remote = warden(build_argv("textkit", "remote"));
  ASSERT_TRUE(remote.exited_with(0)) << describe(remote) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(remote).value("run_id", "");
  std::set<std::string> signers;
  for (const auto& r : results(run_id)) {
    expect_signed(r, {"runner-a", "runner-b", "runner-c"});
    signers.insert(r["attestations"][0].value("agent_id", ""));
  }
  EXPECT_GE(signers.size(), 2u) << "one runner did every check";
  EXPECT_FALSE(recorded(ledger, "speculation", run_id).empty()) << "the refused draft threw speculations away";
  expect_replays("remote");

  ProcessResult local = warden(build_argv("textkit", "local", "local"));
  ASSERT_TRUE(local.exited_with(0)) << describe(local);
  const std::string local_id = stdout_json(local).value("run_id", "");
  EXPECT_EQ(decisions(run_id), decisions(local_id));
  auto trees = [&](const std::string& id) {
    std::vector<std::string> out;
    for (const auto& r : recorded(ledger, "commit", id)) out.push_back(r["payload"].value("tree", ""));
    return out;
  };
  EXPECT_EQ(trees(run_id), trees(local_id));
  stop(server);
  // The fleet's own record of the work: at some moment two runners held tasks at once.
  ProcessResult fleet = warden({"ledger", "show", ledger.string(), "--kind", "fleet_event", "--json"});
  ASSERT_TRUE(fleet.exited_with(0)) << describe(fleet);
  std::set<std::string> busy;
  size_t most = 0;
  for (const auto& line : stdout_json_lines(fleet)) {
    if (line.value("type", "") != "record") continue;
    const auto& e = line["payload"]["event"];
    const std::string type = e.value("type", ""), agent = e.value("agent", "");
    if (type == "assigned") busy.insert(agent);
    if (type == "delivered" || type == "failed") busy.erase(agent);
    most = std::max(most, busy.size());
  }
  EXPECT_GE(most, 2u) << "the queue's runs went to the runners one at a time";
}

// Held-out checks (examples/calculator/blueprint-held-out.json) with the checks on a runner:
// the proposals' runs go to the runner, the held-out runs stay on the server's own sandbox,
// and nothing of the bundle reaches the runner's state before or after the reveal.
TEST_F(RemoteChecks, HeldOutRunsStayOnTheServersSandboxAndTheRunnerNeverHoldsTheBundle) {
  const fs::path example = fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator";
  const fs::path served = blueprints / "calculator-held-out";
  fs::create_directories(served);
  fs::copy_file(example / "blueprint-held-out.json", served / "blueprint.json");
  for (const char* d : {"files", "seed", "held_out"}) fs::create_directory_symlink(example / d, served / d);
  Child server = serve();
  Child a = runner("runner-a");
  wait_connected({"runner-a"});

  ProcessResult built = warden(build_argv("calculator-held-out", "held"));
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const nlohmann::json summary = stdout_json(built);
  const std::string run_id = summary.value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                          "s4#1=accepted", "s5#1=accepted"}));
  for (const auto& r : results(run_id)) expect_signed(r, {"runner-a"});
  EXPECT_EQ(recorded(ledger, "held_out_run", run_id).size(), 4u);
  ProcessResult reveals = warden({"ledger", "show", ledger.string(), "--kind", "held_out_reveal", "--json"});
  ASSERT_TRUE(reveals.exited_with(0)) << describe(reveals);
  EXPECT_NE(reveals.out.find(summary["held_out"].value("sha256", "")), std::string::npos) << "revealed when the run ended";
  stop(server);
  a.kill(SIGTERM);
  (void)a.wait();
  for (const auto& e : fs::recursive_directory_iterator(tmp / "runner-a")) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(read_file_or_empty(e.path()).find("test_nested_parentheses"), std::string::npos) << e.path();
  }
  expect_replays("held");
}

// A build whose checks run in an environment (examples/leaderboard: a Debian root with a
// package the host lacks) on a runner whose store does not hold it: the runner fetches it
// from the server once, verifies it, and runs every check there; a second build on the same
// environment fetches nothing. Needs the network the environment is built from, once.
TEST_F(RemoteChecks, ARunnerFetchesAnEnvironmentItLacksOnceAndRunsTheChecksThere) {
  addrinfo* found = nullptr;
  if (::getaddrinfo("deb.debian.org", "443", nullptr, &found) != 0) GTEST_SKIP() << "the environment's recipe needs the network";
  ::freeaddrinfo(found);
  // The first task's step includes the runner's fetch of 175 MiB, each file hashed as it is
  // installed (the whole test took 37 s under ASan alone, 78 s beside two busy cores): the
  // test's copy gives its steps more than the blueprint's 60 s.
  const fs::path example = tmp / "leaderboard";
  fs::copy(fs::path(WARDEN_SOURCE_DIR) / "examples" / "leaderboard", example, fs::copy_options::recursive);
  nlohmann::json blueprint = nlohmann::json::parse(read_file(example / "blueprint.json"));
  blueprint["constraints"]["step_timeout_ms"] = 300000;
  write_file(example / "blueprint.json", blueprint.dump());
  fs::create_directory_symlink(example, blueprints / "leaderboard");
  // The runner's store is its own (the server's builds keep theirs in the default store); the
  // sandbox's uid must reach it.
  fs::permissions(tmp.path(), fs::perms(0755));
  const fs::path runner_store = tmp / "runner-environments";
  Child server = serve();
  fs::create_directory(tmp / "runner-a");
  fs::permissions(tmp / "runner-a", fs::perms::owner_all, fs::perm_options::replace);
  Child a = Child::spawn({"/usr/bin/env", "WARDEN_ENV_STORE=" + runner_store.string(), warden_binary(), "runner", "--server",
                          socket.string(), "--state", (tmp / "runner-a").string(), "--id", "runner-a"});
  wait_connected({"runner-a"});

  std::string environment;
  for (const char* repository : {"first", "second"}) {
    ProcessResult built = warden(build_argv("leaderboard", repository));
    ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
    const auto summary = stdout_json(built);
    ASSERT_EQ(summary.value("status", ""), "completed") << summary.dump();
    auto held = results(summary.value("run_id", ""));
    ASSERT_FALSE(held.empty());
    for (const auto& r : held) {
      expect_signed(r, {"runner-a"});
      ASSERT_TRUE(r["run_result"].contains("environment")) << r.dump();
      if (environment.empty()) environment = r["run_result"]["environment"].get<std::string>();
      EXPECT_EQ(r["run_result"]["environment"], environment);
    }
  }
  ProcessResult ran = stop(a);
  size_t fetched = 0;
  for (size_t at = ran.err.find("environment " + environment + " fetched"); at != std::string::npos;
       at = ran.err.find("environment " + environment + " fetched", at + 1)) {
    ++fetched;
  }
  EXPECT_EQ(fetched, 1u) << ran.err;
  EXPECT_TRUE(fs::exists(runner_store / "envs" / environment.substr(7) / "root" / "usr"));
  stop(server);
}

TEST_F(RemoteChecks, ARunnerKilledMidCheckHasItsTaskRunByAnotherAndTheRunDecidesOnce) {
  // Every test run sleeps in the package's import: the checks of the later steps take seconds.
  const fs::path slow = tmp / "slowcalc";
  fs::copy(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", slow, fs::copy_options::recursive);
  const fs::path init = slow / "files" / "src" / "calculator" / "__init__.py";
  write_file(init, "import time\ntime.sleep(2)\n" + read_file_or_empty(init));
  fs::remove(blueprints / "calculator");
  fs::create_directory_symlink(slow, blueprints / "calculator");

  Child server = serve();
  Child a = runner("runner-a");
  wait_connected({"runner-a"});
  Child build = start_build("calculator", "calc");

  // Killed once it has held one task for a second (in the middle of its check).
  std::string task;
  auto since = std::chrono::steady_clock::now();
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto agents = listed();
    const std::string now = agents.contains("runner-a") ? agents["runner-a"].value("task_id", "") : "";
    if (now.empty() || now != task) {
      task = now;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since > 1s) {
      break;
    }
    build.pump(std::chrono::steady_clock::now() + 100ms);
  }
  ASSERT_FALSE(task.empty()) << "runner-a never held a task long";
  a.kill(SIGKILL);
  (void)a.wait();
  Child b = runner("runner-b");

  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const auto summary = stdout_json(built);
  EXPECT_EQ(summary.value("status", ""), "completed");
  const std::string run_id = summary.value("run_id", "");
  // The killed runner's task was run again, by the other, as its second claim.
  b.kill(SIGTERM);
  ProcessResult b_done = b.wait();
  EXPECT_NE(b_done.err.find("task " + task + " (attempt 2)"), std::string::npos) << b_done.err;
  // One decision per attempt, as in any build of the calculator; each result signed by the
  // runner that ran it.
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  for (const auto& r : results(run_id)) expect_signed(r, {"runner-a", "runner-b"});
  expect_replays("calc");
  stop(server);
}

// The fleet's events as the ledger holds them: type, agent, task and reason of each.
std::vector<nlohmann::json> fleet_events(const fs::path& ledger) {
  std::vector<nlohmann::json> out;
  ProcessResult shown = warden({"ledger", "show", ledger.string(), "--kind", "fleet_event", "--json"});
  EXPECT_TRUE(shown.exited_with(0)) << describe(shown);
  for (const auto& line : stdout_json_lines(shown)) {
    if (line.value("type", "") == "record") out.push_back(line["payload"]["event"]);
  }
  return out;
}

// A runner killed between storing a tree and storing what the tree holds leaves its object
// store with a tree whose entries are missing. Restarted, it completes the tree (the server
// serves any object the task's trees reach, not only those under trees fetched in the same
// task), and the build decides as any build of the calculator. Before, the server refused
// the entries and every later task on that tree failed on the runner.
TEST_F(RemoteChecks, ARunnerKilledBetweenATreeAndItsEntriesCompletesTheTreeWhenItComesBack) {
  Child server = serve();
  Child doomed = runner("runner-a", "", "", "runner.fetch.tree_stored");
  wait_connected({"runner-a"});
  Child build = start_build("calculator", "calc");
  ProcessResult died = until_killed(doomed, build);
  ASSERT_EQ(died.term_signal, SIGKILL) << describe(died);
  // Its store holds the tree and nothing under it.
  Child again = runner("runner-a");
  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(built).value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  again.kill(SIGTERM);
  ProcessResult again_done = again.wait();
  EXPECT_TRUE(again_done.exited_with(0)) << describe(again_done);
  EXPECT_EQ(again_done.err.find("failed"), std::string::npos) << again_done.err;
  expect_replays("calc");
  stop(server);
  // The kill is named as what it was: the runner's connection closed.
  bool named = false;
  for (const auto& e : fleet_events(ledger)) {
    if (e.value("type", "") != "failed" || e.value("agent", "") != "runner-a") continue;
    EXPECT_EQ(e.value("reason", ""), "it disconnected (its connection closed or was reset)") << e.dump();
    named = true;
  }
  EXPECT_TRUE(named) << "no failed event for the killed runner";
}

// A server killed with a check task queued for its runners, and restarted on the same state
// directory: it is the same server (STATE/server.id), so the task is its own, and since no
// build waits for it any more it is disposed of unrun: expired by the server's first sweep,
// or withdrawn by a runner that took it first, with a fleet event naming why (before, a new
// random identity per start left the task to a name no server answered to, in the store for
// good). Nothing is left in the store.
TEST_F(RemoteChecks, ATaskQueuedBeforeTheServerWasKilledIsWithdrawnAfterItsRestartAndLeavesNothing) {
  Child server = serve();
  Child build = start_build("calculator", "calc");
  // No runner is connected: the build's first task waits in the queue, and the server says
  // it is not ready for such builds.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (health_status(channel(), "") == 1 && std::chrono::steady_clock::now() < deadline) {
    build.pump(std::chrono::steady_clock::now() + 100ms);
  }
  ASSERT_NE(health_status(channel(), ""), 1) << "the build's task never waited for a runner";
  const std::string id = read_file_or_empty(state / "server.id");
  ASSERT_EQ(id.size(), 17u) << id;
  server.kill(SIGKILL);
  (void)server.wait();
  build.kill(SIGKILL);
  (void)build.wait();

  Child restarted = serve();
  EXPECT_EQ(read_file_or_empty(state / "server.id"), id) << "the server's identity changed with its restart";
  Child a = runner("runner-a");
  wait_connected({"runner-a"});
  std::vector<nlohmann::json> disposed;
  for (auto until = std::chrono::steady_clock::now() + 60s; disposed.empty() && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(200ms);
    for (const auto& e : fleet_events(ledger)) {
      if (e.value("type", "") == "withdrawn" || e.value("type", "") == "expired") disposed.push_back(e);
    }
  }
  ASSERT_EQ(disposed.size(), 1u);
  EXPECT_NE(disposed[0].value("reason", "").find("the build that queued it is gone"), std::string::npos) << disposed[0].dump();
  for (const auto& e : fleet_events(ledger)) {
    EXPECT_NE(e.value("type", ""), "delivered") << "a task no runner ran was recorded delivered: " << e.dump();
  }
  a.kill(SIGTERM);
  EXPECT_TRUE(a.wait().exited_with(0));
  EXPECT_TRUE(stop(restarted).exited_with(0));
  auto store = store::open_lmdb_state_store(state / "fleet", {});
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ((*store)->queue_length().value_or(99), 0u);
}

// A runner's raw warden.v1.Runners stream for the fakes below: enrolled with `key` as `id`
// (false when the server refused), then heartbeating every 100 ms on a thread until
// destroyed. send() writes one message beside the heartbeats.
class RawStream {
 public:
  using Stream = grpc::ClientReaderWriter<v1::RunnerMessage, v1::ServerMessage>;
  RawStream(v1::Runners::Stub& stub, grpc::ClientContext& context) : stream_(stub.Work(&context)) {}
  ~RawStream() {
    done_ = true;
    if (beats_.joinable()) beats_.join();
  }
  bool enrol(const std::string& id, const Ed25519PrivateKey& key) {
    v1::RunnerMessage enrol;
    enrol.mutable_enrol()->set_agent_id(id);
    enrol.mutable_enrol()->set_public_key(std::string(key.public_key().begin(), key.public_key().end()));
    v1::ServerMessage in;
    if (!stream_->Write(enrol) || !stream_->Read(&in) || !in.has_challenge()) return false;
    auto s = key.sign(enrol_message(id, in.challenge().identity(), in.challenge().nonce())).value();
    v1::RunnerMessage proof;
    proof.mutable_proof()->set_signature(std::string(s.begin(), s.end()));
    if (!stream_->Write(proof) || !stream_->Read(&in) || !in.has_enrolled()) return false;
    beats_ = std::thread([this] {
      v1::RunnerMessage beat;
      beat.mutable_heartbeat();
      while (!done_ && send(beat)) std::this_thread::sleep_for(100ms);
    });
    return true;
  }
  bool read(v1::ServerMessage& in) { return stream_->Read(&in); }
  bool send(const v1::RunnerMessage& m) {
    std::lock_guard lock(write_mu_);
    return stream_->Write(m);
  }
  // Stops the heartbeats and ends the call.
  void finish() {
    done_ = true;
    if (beats_.joinable()) beats_.join();
    (void)stream_->Finish();
  }

 private:
  std::unique_ptr<Stream> stream_;
  std::mutex write_mu_;
  std::atomic<bool> done_{false};
  std::thread beats_;
};

// A runner on a raw stream that lies. Forging: it answers each task with a forged result,
// first one whose tree hash is made up, then one about another tree, then one signed by
// another key, and hangs up after the third. Dissenting (given the repository, as a runner
// that fetched it would have it): every result is consistent with its request (the right
// trees, tree hash, checks and profile, signed by its own key) and says every check passed,
// without running any; it never hangs up.
class LyingRunner {
 public:
  LyingRunner(std::shared_ptr<grpc::Channel> channel, std::string id, std::string bearer = "", fs::path dissent_repo = {})
      : stub_(v1::Runners::NewStub(channel)), id_(std::move(id)), dissent_repo_(std::move(dissent_repo)) {
    if (!bearer.empty()) context_.AddMetadata("authorization", "Bearer " + bearer);
    thread_ = std::thread([this] { serve(); });
  }
  ~LyingRunner() {
    context_.TryCancel();
    thread_.join();
  }
  int forged() const { return forged_.load(); }
  bool enrolled() const { return enrolled_.load(); }

 private:
  v1::RunnerMessage forge(const v1::CheckTask& task, int kind) {
    auto request = nlohmann::json::parse(task.request_json());
    RunResult r;
    r.tree = kind == 1 ? std::string(40, 'a') : request["tree"].get<std::string>();
    r.tree_sha256 = sha256("not the tree");
    if (!dissent_repo_.empty()) {
      auto repo = GitRepo::open(dissent_repo_).value();
      MemoryHashMemo memo;
      r.tree_sha256 = tree_sha256(repo, ObjectId::parse(r.tree).value(), memo).value();
    }
    if (request.contains("diff") || request["tree"] != request["base_tree"]) r.base_tree = request["base_tree"].get<std::string>();
    if (request.contains("diff")) r.diff_sha256 = Diff::from_json(request["diff"]).value().digest();
    auto profile = SandboxProfile::from_json(request["profile"]).value();
    r.profile = profile.name;
    r.profile_sha256 = profile.digest();
    r.preflight.ok = true;
    // Runs that say every check passed, consistent with the rules a verdict follows from its
    // runs (the kernel re-derives those): the lie is in what the runs did, never ran.
    std::vector<CheckSpec> specs;
    for (const auto& spec_json : request["checks"]) {
      auto spec = CheckSpec::from_json(spec_json).value();
      CheckRun run;
      run.exit_code = 0;
      run.report = spec.report_format == "none" ? "none" : "parsed";
      for (const auto* ids : {&spec.fail_to_pass, &spec.pass_to_pass}) {
        for (const std::string& id : *ids) run.tests.push_back(TestCase{id, "passed"});
      }
      run.tests.push_back(TestCase{"made_up", "passed"});
      std::sort(run.tests.begin(), run.tests.end(), [](const TestCase& a, const TestCase& b) { return a.id < b.id; });
      run.outcome = judge_run(run, spec);
      CheckResult c;
      c.name = spec.name;
      c.argv = spec.argv;
      c.spec_sha256 = spec.digest();
      c.runs.assign(static_cast<size_t>(spec.runs), run);
      judge_check(c, spec);
      r.checks.push_back(c);
      specs.push_back(std::move(spec));
    }
    r.invariants = prove_invariants(specs, r.checks);
    const std::string nonce = to_hex(task.nonce());
    auto& signer = kind == 2 ? other_ : key_;
    auto sig = signer.sign(result_message(id_, task.task_id(), nonce, r.deterministic_digest().str())).value();
    v1::RunnerMessage m;
    m.mutable_result()->set_task_id(task.task_id());
    m.mutable_result()->set_claim_token(task.claim_token());
    m.mutable_result()->set_run_result_json(r.to_json().dump());
    m.mutable_result()->set_signature(std::string(sig.begin(), sig.end()));
    return m;
  }

  void serve() {
    RawStream stream(*stub_, context_);
    if (!stream.enrol(id_, key_)) return;
    enrolled_ = true;
    const bool dissenting = !dissent_repo_.empty();
    v1::ServerMessage in;
    while ((dissenting || forged_ < 3) && stream.read(in)) {
      if (!in.has_task()) continue;
      if (!stream.send(forge(in.task(), dissenting ? 0 : forged_.load()))) break;
      ++forged_;
    }
    // Its third lie is answered before it goes (a result in flight is not cut off).
    std::this_thread::sleep_for(300ms);
    context_.TryCancel();
    stream.finish();
  }

  std::unique_ptr<v1::Runners::Stub> stub_;
  std::string id_;
  fs::path dissent_repo_;
  Ed25519PrivateKey key_ = Ed25519PrivateKey::generate().value();
  Ed25519PrivateKey other_ = Ed25519PrivateKey::generate().value();
  grpc::ClientContext context_;
  std::atomic<int> forged_{0};
  std::atomic<bool> enrolled_{false};
  std::thread thread_;
};

// What a runner holding a task may fetch: any object the task's trees reach, even one whose
// tree it never asked for (a runner whose store kept the tree needs only the entries), and
// nothing else of the run's repository: a commit, which no tree holds, is refused.
TEST_F(RemoteChecks, ARunnerFetchesWhatTheTasksTreesReachAndNothingElse) {
  Child server = serve();
  auto stub = v1::Runners::NewStub(channel());
  grpc::ClientContext context;
  const Ed25519PrivateKey key = Ed25519PrivateKey::generate().value();
  RawStream stream(*stub, context);
  ASSERT_TRUE(stream.enrol("prober", key));
  Child build = start_build("calculator", "calc");
  v1::ServerMessage in;
  while (stream.read(in) && !in.has_task()) {
  }
  ASSERT_TRUE(in.has_task());
  const std::string task_id = in.task().task_id();
  auto request = nlohmann::json::parse(in.task().request_json());
  auto repo = GitRepo::open(state / "repos" / "calc").value();
  auto children = repo.tree_children(ObjectId::parse(request["tree"].get<std::string>()).value()).value();
  ASSERT_FALSE(children.empty());
  auto fetch = [&](const std::string& id) {
    v1::RunnerMessage ask;
    ask.mutable_fetch()->set_task_id(task_id);
    ask.mutable_fetch()->add_ids(id);
    EXPECT_TRUE(stream.send(ask));
    v1::ServerMessage batch;
    while (stream.read(batch) && !batch.has_objects()) {
    }
    return batch.objects();
  };
  v1::ObjectBatch entry = fetch(children.front().id.hex());
  EXPECT_TRUE(entry.error().empty()) << entry.error();
  ASSERT_EQ(entry.objects_size(), 1);
  EXPECT_EQ(entry.objects(0).id(), children.front().id.hex());
  ProcessResult commit = run({"/usr/bin/git", "-C", (state / "repos" / "calc").string(), "rev-list", "--all", "-1"});
  ASSERT_TRUE(commit.exited_with(0)) << describe(commit);
  const std::string commit_id = commit.out.substr(0, 40);
  v1::ObjectBatch refused = fetch(commit_id);
  EXPECT_EQ(refused.objects_size(), 0);
  EXPECT_NE(refused.error().find("not reachable from the task's trees"), std::string::npos) << refused.error();
  context.TryCancel();
  stream.finish();
  build.kill(SIGKILL);
  (void)build.wait();
  EXPECT_TRUE(stop(server).exited_with(0));
}

// What a runner holding a task may fetch of the server's environments: the record, manifest
// and files of the environment its task names, and nothing else. The server's store also
// holds another environment whose file the prober knows the digest of; names that are not a
// digest, a task it does not hold and an oversized ask are refused too.
TEST_F(RemoteChecks, ARunnerFetchesOnlyTheFilesOfItsTasksEnvironment) {
  fs::permissions(tmp.path(), fs::perms(0755));  // the sandbox's uid reaches the store
  const fs::path env_store = tmp / "server-environments";
  auto store = EnvironmentStore::open(env_store, SandboxHost::detect().uid);
  ASSERT_TRUE(store) << store.error().message;
  copy_host_programs(tmp / "task-root", {"sh", "env", "true", "cat"});
  fs::create_directories(tmp / "task-root" / "etc");
  write_file(tmp / "task-root" / "etc" / "task-file", "the task's environment\n");
  auto task_env = store->import_tree(tmp / "task-root", {}, {{"kind", "directory"}});
  ASSERT_TRUE(task_env) << task_env.error().message;
  fs::create_directories(tmp / "other-root" / "etc");
  write_file(tmp / "other-root" / "etc" / "secret", "another environment's secret\n");
  auto other_env = store->import_tree(tmp / "other-root", {}, {{"kind", "directory"}});
  ASSERT_TRUE(other_env) << other_env.error().message;

  // The calculator, its checks named to run in the task's environment.
  const fs::path example = tmp / "calc-env";
  fs::copy(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", example, fs::copy_options::recursive);
  nlohmann::json blueprint = nlohmann::json::parse(read_file(example / "blueprint.json"));
  blueprint["environment"] = task_env->digest.str();
  write_file(example / "blueprint.json", blueprint.dump());
  fs::create_directory_symlink(example, blueprints / "calc-env");

  ASSERT_EQ(::setenv("WARDEN_ENV_STORE", env_store.c_str(), 1), 0);  // the server's and its builds'
  Child server = serve();
  ::unsetenv("WARDEN_ENV_STORE");
  auto stub = v1::Runners::NewStub(channel());
  grpc::ClientContext context;
  const Ed25519PrivateKey key = Ed25519PrivateKey::generate().value();
  RawStream stream(*stub, context);
  ASSERT_TRUE(stream.enrol("prober", key));
  Child build = start_build("calc-env", "calc");
  v1::ServerMessage in;
  while (stream.read(in) && !in.has_task()) {
  }
  ASSERT_TRUE(in.has_task()) << read_file_or_empty(state / "runs" / "children.log");
  const std::string task_id = in.task().task_id();
  auto request = nlohmann::json::parse(in.task().request_json());
  ASSERT_EQ(request.value("environment", ""), task_env->digest.str()) << request.dump();

  auto ask = [&](const std::string& task, const std::vector<std::string>& files) {
    v1::RunnerMessage m;
    m.mutable_fetch_environment()->set_task_id(task);
    for (const auto& f : files) m.mutable_fetch_environment()->add_files(f);
    EXPECT_TRUE(stream.send(m));
    v1::ServerMessage batch;
    while (stream.read(batch) && !batch.has_environment()) {
    }
    return batch.environment();
  };
  v1::EnvironmentBatch first = ask(task_id, {});
  ASSERT_TRUE(first.error().empty()) << first.error();
  EXPECT_EQ(nlohmann::json::parse(first.record_json()).value("digest", ""), task_env->digest.str());
  EXPECT_EQ(TreeManifest::parse(first.manifest()).value().digest(), task_env->tree);

  const std::string own = sha256("the task's environment\n").hex();
  v1::EnvironmentBatch served = ask(task_id, {own});
  ASSERT_TRUE(served.error().empty()) << served.error();
  ASSERT_EQ(served.files_size(), 1);
  EXPECT_EQ(served.files(0).data(), "the task's environment\n");

  const std::string secret = sha256("another environment's secret\n").hex();
  ASSERT_TRUE(store->object(Digest::from_hex(secret).value(), false)) << "the server holds it";
  for (const std::vector<std::string>& files : std::vector<std::vector<std::string>>{
           {secret}, {own, secret}, {"../../../../etc/passwd"}, {own + "/../" + secret}, {own.substr(0, 63) + "x"}}) {
    v1::EnvironmentBatch refused = ask(task_id, files);
    EXPECT_EQ(refused.files_size(), 0) << files.back();
    EXPECT_NE(refused.error().find("is not part of environment"), std::string::npos) << refused.error();
  }
  v1::EnvironmentBatch not_held = ask("someone-elses-task", {own});
  EXPECT_EQ(not_held.files_size(), 0);
  EXPECT_NE(not_held.error().find("is not this runner's"), std::string::npos) << not_held.error();
  v1::EnvironmentBatch too_many = ask(task_id, std::vector<std::string>(kMaxFetchObjects + 1, own));
  EXPECT_EQ(too_many.files_size(), 0);
  EXPECT_NE(too_many.error().find("at most"), std::string::npos) << too_many.error();

  context.TryCancel();
  stream.finish();
  build.kill(SIGKILL);
  (void)build.wait();
  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(RemoteChecks, ForgedResultsAreRefusedTheirRunnerIsNamedAndAnHonestRunnerDoesTheWork) {
  Child server = serve();
  LyingRunner liar(channel(), "liar");
  wait_connected({"liar"});
  Child build = start_build("calculator", "calc");
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (liar.forged() < 3 && std::chrono::steady_clock::now() < deadline) build.pump(std::chrono::steady_clock::now() + 50ms);
  ASSERT_EQ(liar.forged(), 3) << "the liar was given three tasks";
  Child honest = runner("honest");

  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(built).value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  // Not one of the liar's results reached the kernel.
  for (const auto& r : results(run_id)) expect_signed(r, {"honest"});

  // Each lie is named, with its runner, in the fleet's events in the ledger.
  stop(server);
  ProcessResult events = warden({"ledger", "show", ledger.string(), "--kind", "fleet_event", "--json"});
  ASSERT_TRUE(events.exited_with(0)) << describe(events);
  std::vector<std::string> refusals;
  for (auto& line : stdout_json_lines(events)) {
    if (line.value("type", "") != "record") continue;
    const std::string text = line["payload"].dump();
    if (text.find("liar") != std::string::npos && text.find("was refused") != std::string::npos) refusals.push_back(text);
  }
  ASSERT_EQ(refusals.size(), 3u) << events.out;
  EXPECT_NE(refusals[0].find("tree hash"), std::string::npos) << refusals[0];
  EXPECT_NE(refusals[1].find("names tree aaaa"), std::string::npos) << refusals[1];
  EXPECT_NE(refusals[2].find("signature"), std::string::npos) << refusals[2];
  expect_replays("calc");
}

TEST_F(RemoteChecks, ATwoOfThreeQuorumPassesWithOneLyingRunnerAndNamesIt) {
  tokens({"r1", "r2", "r3"});
  Child server = serve();
  Child a = runner("runner-a", "r1");
  Child b = runner("runner-b", "r2");
  // The liar enrols as r3 and says "passed" to everything, consistently enough that no
  // single check can tell: only the quorum can.
  LyingRunner liar(channel(), "liar", secret("r3"), state / "repos" / "calc");
  wait_connected({"runner-a", "runner-b", "liar"});

  std::vector<std::string> argv = build_argv("calculator", "calc");
  argv.insert(argv.end(), {"--runner-quorum", "2/3"});
  ProcessResult built = warden(argv);
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(built).value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  // Every result counted is the honest two's, each signed by both.
  for (const auto& r : results(run_id)) expect_signed(r, {"runner-a", "runner-b"}, 2);
  expect_replays("calc");
  EXPECT_GE(liar.forged(), 1);

  // A quorum the connected identities cannot make is refused with the reason, not waited on.
  std::vector<std::string> too_many = build_argv("calculator", "calc-5");
  too_many.insert(too_many.end(), {"--runner-quorum", "5/9"});
  ProcessResult short_of = warden(too_many);
  EXPECT_FALSE(short_of.exited_with(0)) << describe(short_of);

  stop(server);
  ProcessResult events = warden({"ledger", "show", ledger.string(), "--kind", "fleet_event", "--json"});
  ASSERT_TRUE(events.exited_with(0));
  EXPECT_NE(events.out.find("disagrees with the quorum"), std::string::npos) << events.out;
}

// Two servers on one Redis share one fleet, but a build's checks must come back through the
// server whose build waits for them: each server's runner tasks go only to the runners
// connected to it, so both builds complete, each on its own server's runner (before, either
// server could give a task to the other's runner, and the build waited out its step).
TEST_F(RemoteChecks, TwoServersOnOneRedisEachRunTheirBuildsChecksOnTheirOwnRunners) {
  RedisServer redis(tmp / "redis");
  ASSERT_TRUE(redis.start()) << redis.log();
  const std::string store = "unix:" + (tmp / "redis" / "redis.sock").string();
  Child first = serve({"--store", store});
  const fs::path state2 = tmp / "state2";
  fs::create_directory(state2);
  fs::permissions(state2, fs::perms::owner_all, fs::perm_options::replace);
  const fs::path socket2 = state2 / "warden.sock";
  Child second = Child::spawn({warden_binary(), "serve", "--state", state2.string(), "--blueprints", blueprints.string(),
                               "--store", store, "--heartbeat-interval-ms", "200", "--missed-heartbeats", "2"});
  for (int i = 0; i < 600 && !fs::exists(socket2); ++i) second.pump(std::chrono::steady_clock::now() + 50ms);
  ASSERT_TRUE(fs::exists(socket2)) << second.err();
  Child a = runner("runner-a");
  Child b = runner("runner-b", "", socket2.string());
  wait_connected({"runner-a"});
  ASSERT_TRUE(eventually_listed({"--server", socket2.string()}, [](const AgentListing& agents) {
    return agents.contains("runner-b") && agents.at("runner-b").value("connected", false);
  }, 30s));

  auto build_at = [&](const fs::path& sock) {
    return Child::spawn({warden_binary(), "build", "calculator", "--server", sock.string(), "--repository", "calc",
                         "--checks-on", "runners", "--json"});
  };
  Child at_first = build_at(socket);
  Child at_second = build_at(socket2);
  ProcessResult one = at_first.wait();
  ProcessResult two = at_second.wait();
  ASSERT_TRUE(one.exited_with(0)) << describe(one) << read_file_or_empty(state / "runs" / "children.log");
  ASSERT_TRUE(two.exited_with(0)) << describe(two) << read_file_or_empty(state2 / "runs" / "children.log");
  const std::string first_run = stdout_json(one).value("run_id", "");
  const std::string second_run = stdout_json(two).value("run_id", "");
  for (const auto& r : results(first_run)) expect_signed(r, {"runner-a"});
  std::vector<nlohmann::json> second_results;
  for (const char* kind : {"run_result", "base_run", "oracle_run"}) {
    for (auto& r : recorded(state2 / "ledger", kind, second_run)) second_results.push_back(r["payload"]);
  }
  ASSERT_FALSE(second_results.empty());
  for (const auto& r : second_results) expect_signed(r, {"runner-b"});
  second.kill(SIGTERM);
  (void)second.wait();
  stop(first);
}

// Readiness needs a runner when a build waits for one: with a build's checks queued and no
// runner connected, warden.v1.Runners and the server as a whole are NOT_SERVING; a runner
// that connects makes them SERVING again, and the build goes on.
TEST_F(RemoteChecks, WhileABuildWaitsForRunnersAndNoneIsConnectedTheServerIsNotReady) {
  Child server = serve();
  auto status = [&](const std::string& service) { return health_status(channel(), service); };
  auto becomes = [&](const std::string& service, int wanted) {
    for (int i = 0; i < 200; ++i) {
      if (status(service) == wanted) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  ASSERT_TRUE(becomes("", 1)) << "ready with no build waiting, runners or not";
  EXPECT_EQ(status("warden.v1.Runners"), 1);
  Child build = start_build("calculator", "calc");
  EXPECT_TRUE(becomes("warden.v1.Runners", 2)) << server.err();
  EXPECT_EQ(status(""), 2);
  EXPECT_EQ(status("warden.v1.Kernel"), 1) << "the kernel itself is fine";
  Child a = runner("runner-a");
  EXPECT_TRUE(becomes("warden.v1.Runners", 1));
  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  EXPECT_TRUE(becomes("", 1));
  stop(server);
}

// The fault suite: a runner killed (SIGKILL, by its own fail point: common/fail_point.h) at
// each point of a task's life, on the server's LMDB store and on a shared Redis. Another
// runner comes up; the build decides exactly as a local build of the calculator does, replay
// passes, and the store holds no task afterwards.
struct Fault {
  const char* store;  // "lmdb" or "redis"
  const char* point;  // the fail point that kills the process
};

// "redis_runner_fetch_tree_stored": the test's name for a fault.
std::string fault_name(const ::testing::TestParamInfo<Fault>& info) {
  std::string name = std::string(info.param.store) + "_" + info.param.point;
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

class RunnerFaults : public RemoteChecks, public ::testing::WithParamInterface<Fault> {};

TEST_P(RunnerFaults, ARunnerKilledAtThisPointCostsTheBuildNothingAndLeavesNoTask) {
  const Fault fault = GetParam();
  std::optional<RedisServer> redis;
  Child server = serve(store_args(fault.store, redis));
  Child doomed = runner("runner-a", "", "", fault.point);
  Child build = start_build("calculator", "calc");
  ProcessResult died = until_killed(doomed, build);
  ASSERT_EQ(died.term_signal, SIGKILL) << "it never reached " << fault.point << ": " << describe(died);
  Child b = runner("runner-b");
  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(built).value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  for (const auto& r : results(run_id)) expect_signed(r, {"runner-a", "runner-b"});
  expect_replays("calc");
  b.kill(SIGTERM);
  EXPECT_TRUE(b.wait().exited_with(0));
  EXPECT_TRUE(stop(server).exited_with(0));
  auto store = open_store(redis);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ((*store)->queue_length().value_or(99), 0u) << "a task was left in the store";
}

INSTANTIATE_TEST_SUITE_P(
    EachPoint, RunnerFaults,
    ::testing::Values(Fault{"lmdb", "runner.enrolled"}, Fault{"lmdb", "runner.fetch.tree_stored"},
                      Fault{"lmdb", "runner.sandbox_start"}, Fault{"lmdb", "runner.checks_ran"},
                      Fault{"lmdb", "runner.result_sent"}, Fault{"redis", "runner.enrolled"},
                      Fault{"redis", "runner.fetch.tree_stored"}, Fault{"redis", "runner.sandbox_start"},
                      Fault{"redis", "runner.checks_ran"}, Fault{"redis", "runner.result_sent"}),
    fault_name);

// A server gone for good (killed, its state directory never served again) leaves a task
// queued on the Redis it shared; another server on that Redis expires it once it is older
// than --task-expiry-s, with an `expired` fleet event naming why, and the store holds no task.
TEST_F(RemoteChecks, AGoneServersQueuedTaskIsExpiredByAnotherServerPastTheBound) {
  RedisServer redis(tmp / "redis");
  ASSERT_TRUE(redis.start()) << redis.log();
  const std::string store_spec = "unix:" + (tmp / "redis" / "redis.sock").string();
  Child gone = serve({"--store", store_spec});
  Child build = start_build("calculator", "calc");
  auto store = store::open_redis_state_store(redis.address(), {.key_prefix = "warden:"});
  ASSERT_TRUE(store) << store.error().message;
  for (auto until = std::chrono::steady_clock::now() + 60s;
       (*store)->queue_length().value_or(0) == 0 && std::chrono::steady_clock::now() < until;) {
    build.pump(std::chrono::steady_clock::now() + 100ms);
  }
  ASSERT_EQ((*store)->queue_length().value_or(0), 1u) << "the build's first task was never queued";
  gone.kill(SIGKILL);
  (void)gone.wait();
  build.kill(SIGKILL);
  (void)build.wait();

  const fs::path other = tmp / "other";
  fs::create_directory(other);
  fs::permissions(other, fs::perms::owner_all, fs::perm_options::replace);
  Child survivor = Child::spawn({warden_binary(), "serve", "--state", other.string(), "--blueprints", blueprints.string(),
                                 "--store", store_spec, "--task-expiry-s", "2"});
  uint64_t left = 1;
  for (auto until = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < until;) {
    survivor.pump(std::chrono::steady_clock::now() + 200ms);
    left = (*store)->queue_length().value_or(99);
    if (left == 0) break;
  }
  EXPECT_EQ(left, 0u);
  survivor.kill(SIGTERM);
  ProcessResult stopped = survivor.wait();
  EXPECT_TRUE(stopped.exited_with(0)) << describe(stopped);
  std::vector<nlohmann::json> expired;
  for (const auto& e : fleet_events(other / "ledger")) {
    if (e.value("type", "") == "expired") expired.push_back(e);
  }
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_NE(expired[0].value("reason", "").find("waited more than 2 s"), std::string::npos) << expired[0].dump();
  EXPECT_TRUE(expired[0].value("agent", "").starts_with("server.")) << expired[0].dump();
}

// The server killed (SIGKILL, by its fail point) at each point of a task's life on its side:
// queued for its runners, sent to a runner, its result acked in the store but not yet passed
// to the build. Restarted on the same state directory, the server records the run's end
// (interrupted, a recorded reason), disposes of the task the dead build left (expired, or
// withdrawn by the runner that takes it back), and the store holds no task; replay passes.
class ServerFaults : public RemoteChecks, public ::testing::WithParamInterface<Fault> {};

TEST_P(ServerFaults, AServerKilledAtThisPointComesBackWithTheRunEndedAndNoTaskLeft) {
  const Fault fault = GetParam();
  std::optional<RedisServer> redis;
  std::vector<std::string> extra{"--heartbeat-interval-ms", "200", "--missed-heartbeats", "2"};
  for (const std::string& a : store_args(fault.store, redis)) extra.push_back(a);
  std::vector<std::string> armed{"/usr/bin/env", std::string("WARDEN_FAIL_POINT=") + fault.point, warden_binary(), "serve",
                                 "--state", state.string(), "--blueprints", blueprints.string()};
  armed.insert(armed.end(), extra.begin(), extra.end());
  Child doomed = Child::spawn(armed);
  wait_serving(doomed);
  Child a = runner("runner-a");
  wait_connected({"runner-a"});
  Child build = start_build("calculator", "calc");
  ProcessResult died = until_killed(doomed, build);
  ASSERT_EQ(died.term_signal, SIGKILL) << "it never reached " << fault.point << ": " << describe(died);
  ProcessResult lost = build.wait();
  EXPECT_FALSE(lost.exited_with(0)) << describe(lost);

  Child server = start(extra);
  const uint64_t left = tasks_left(redis);
  EXPECT_EQ(left, 0u) << "a task of the dead build stayed in the store";
  expect_no_live_run();
  a.kill(SIGTERM);
  EXPECT_TRUE(a.wait().exited_with(0));
  EXPECT_TRUE(stop(server).exited_with(0));
  expect_replays("calc");
}

INSTANTIATE_TEST_SUITE_P(
    EachPoint, ServerFaults,
    ::testing::Values(Fault{"lmdb", "server.task_queued"}, Fault{"lmdb", "server.task_sent"},
                      Fault{"lmdb", "server.result_acked"}, Fault{"redis", "server.task_queued"},
                      Fault{"redis", "server.task_sent"}, Fault{"redis", "server.result_acked"}),
    fault_name);

// Redis killed (SIGKILL) and restarted on its append-only file while a build's checks run on
// the fleet it holds: the server's store calls fail meanwhile (the fleet is not ready), then
// reach it again. The build decides as a local build does or ends with a recorded reason;
// replay passes; no task is left in the store.
TEST_F(RemoteChecks, ARedisRestartedUnderABuildCostsNoRecordAndLeavesNoTask) {
  std::optional<RedisServer> redis;
  Child server = serve(store_args("redis", redis));
  Child a = runner("runner-a");
  wait_connected({"runner-a"});
  Child build = start_build("calculator", "calc");
  bool held = false;
  for (auto until = std::chrono::steady_clock::now() + 60s; !held && std::chrono::steady_clock::now() < until;) {
    auto agents = listed();
    held = agents.contains("runner-a") && !agents["runner-a"].value("task_id", "").empty();
    build.pump(std::chrono::steady_clock::now() + 20ms);
  }
  ASSERT_TRUE(held) << "runner-a never held a task";
  redis->stop(SIGKILL);
  build.pump(std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(redis->start()) << redis->log();
  ProcessResult built = build.wait();
  const std::string children = read_file_or_empty(state / "runs" / "children.log");
  expect_no_live_run();
  if (built.exited_with(0)) {
    EXPECT_EQ(decisions(stdout_json(built).value("run_id", "")),
              (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted", "s4#1=accepted",
                                        "s5#1=accepted"}));
  } else {
    EXPECT_FALSE(built.out.empty() && built.err.empty()) << "the build ended without saying why";
  }
  const uint64_t left = tasks_left(redis);
  EXPECT_EQ(left, 0u) << describe(built) << children;
  a.kill(SIGTERM);
  EXPECT_TRUE(a.wait().exited_with(0));
  EXPECT_TRUE(stop(server).exited_with(0));
  expect_replays("calc");
}

// A runner stopped (SIGSTOP) while it holds a task, past its heartbeat bound: the task runs
// on another runner; resumed, the stopped runner's late answer counts for nothing, and the
// build decides as a local build does.
TEST_F(RemoteChecks, ARunnerStoppedPastItsHeartbeatBoundLosesItsTaskAndItsLateAnswerCountsForNothing) {
  Child server = serve();
  Child a = runner("runner-a");
  wait_connected({"runner-a"});
  Child build = start_build("calculator", "calc");
  std::string task;
  for (auto until = std::chrono::steady_clock::now() + 60s; task.empty() && std::chrono::steady_clock::now() < until;) {
    auto agents = listed();
    if (agents.contains("runner-a")) task = agents["runner-a"].value("task_id", "");
    build.pump(std::chrono::steady_clock::now() + 20ms);
  }
  ASSERT_FALSE(task.empty()) << "runner-a never held a task";
  ::kill(a.pid(), SIGSTOP);
  Child b = runner("runner-b");
  ASSERT_TRUE(eventually_listed(connect(), [](const AgentListing& agents) {
    return agents.contains("runner-a") && agents.at("runner-a").value("down", false);
  }, 30s));
  ::kill(a.pid(), SIGCONT);
  ProcessResult built = build.wait();
  ASSERT_TRUE(built.exited_with(0)) << describe(built) << read_file_or_empty(state / "runs" / "children.log");
  const std::string run_id = stdout_json(built).value("run_id", "");
  EXPECT_EQ(decisions(run_id), (std::vector<std::string>{"s1#1=accepted", "s2#1=accepted", "s3#1=refused", "s3#2=accepted",
                                                         "s4#1=accepted", "s5#1=accepted"}));
  expect_replays("calc");
  for (Child* c : {&a, &b}) {
    c->kill(SIGTERM);
    EXPECT_TRUE(c->wait().exited_with(0));
  }
  EXPECT_TRUE(stop(server).exited_with(0));
  bool failed_a = false;
  for (const auto& e : fleet_events(ledger)) {
    if (e.value("type", "") == "failed" && e.value("agent", "") == "runner-a") failed_a = true;
  }
  EXPECT_TRUE(failed_a) << "the stopped runner was never failed";
}

// A runner on a raw stream that cannot run anything: it answers every task with a failure
// report, and keeps heartbeating.
class FailingRunner {
 public:
  FailingRunner(std::shared_ptr<grpc::Channel> channel, std::string id)
      : stub_(v1::Runners::NewStub(channel)), id_(std::move(id)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~FailingRunner() {
    context_.TryCancel();
    thread_.join();
  }
  int reports() const { return reports_.load(); }

 private:
  void serve() {
    RawStream stream(*stub_, context_);
    if (!stream.enrol(id_, key_)) return;
    v1::ServerMessage in;
    while (stream.read(in)) {
      if (!in.has_task()) continue;
      v1::RunnerMessage answer;
      answer.mutable_failed()->set_task_id(in.task().task_id());
      answer.mutable_failed()->set_claim_token(in.task().claim_token());
      answer.mutable_failed()->set_reason("no sandbox on this machine");
      if (!stream.send(answer)) break;
      ++reports_;
    }
    stream.finish();
  }

  std::unique_ptr<v1::Runners::Stub> stub_;
  std::string id_;
  Ed25519PrivateKey key_ = Ed25519PrivateKey::generate().value();
  grpc::ClientContext context_;
  std::atomic<int> reports_{0};
  std::thread thread_;
};

// The only runner cannot run the task: once the restart intensity gives it up, the build is
// told at once with the runner's reason (before, the task waited for a try that could not
// come and the build ended TIMEOUT_ERROR after its step's time), and `warden agents show`
// says why the runner was given up.
TEST_F(RemoteChecks, ARunnerGivenUpForItsFailuresTellsTheBuildAtOnceAndSaysWhy) {
  // Given up at its second failure, before the third claim that would tell the build anyway.
  const fs::path agents = tmp / "agents.json";
  write_file(agents, R"({"agents": [], "restart": {"intensity": {"max_restarts": 1}}})");
  Child server = serve({"--agents", agents.string()});
  FailingRunner broken(channel(), "broken");
  wait_connected({"broken"});
  std::vector<std::string> argv = build_argv("calculator", "calc");
  argv.insert(argv.end(), {"--step-timeout", "600"});
  const auto began = std::chrono::steady_clock::now();
  ProcessResult built = warden(argv);
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_FALSE(built.exited_with(0)) << describe(built);
  EXPECT_LT(took, 120s) << "the build waited out its step";
  const std::string everything = built.out + built.err + read_file_or_empty(state / "runs" / "children.log");
  EXPECT_NE(everything.find("no sandbox on this machine"), std::string::npos) << describe(built);
  EXPECT_EQ(broken.reports(), 2) << "told after the report that gave the runner up";
  EXPECT_NE(everything.find("was given up"), std::string::npos) << describe(built);
  std::vector<std::string> show{"agents", "show", "broken"};
  for (const std::string& c : connect()) show.push_back(c);
  ProcessResult shown = warden(show);
  ASSERT_TRUE(shown.exited_with(0)) << describe(shown);
  EXPECT_NE(shown.out.find("given up   restart intensity exceeded"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("no sandbox on this machine"), std::string::npos) << shown.out;
  stop(server);
}

}  // namespace
}  // namespace warden::test
