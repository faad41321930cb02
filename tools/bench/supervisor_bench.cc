// supervisor_bench: what the agent supervisor costs, in one run on one machine.
//
//   assignments/s   the whole path per task, as the server's remote runners take it: enqueue,
//                   Supervisor::assign (the store's atomic claim, then the agent's
//                   compare-and-set to working: a runner starts at once), delivered straight
//                   from working (the store's ack and the agent back to idle, one
//                   transaction), with every fleet event appended;
//                   16 agents, on the embedded LMDB store (fsync per commit,
//                   and without) and on a real Redis server this bench starts (a unix socket
//                   in a private directory, appendfsync everysec, stopped at exit), once with
//                   the bench and the server on one core (judged) and once on two (context).
//   bare Redis      the Redis commands one task's path issues (EVALSHA of the store's scripts
//                   aside), as plain commands in a loop over one connection: the floor the
//                   Redis figure is compared with.
//   detection       failure-detection latency on the system clock: an agent heartbeats every
//                   interval, then stops; a loop calls detect_failures every 10 ms; the time
//                   from the agent's last heartbeat to its failure, against two intervals plus
//                   100 ms.
//   runners         checks on three `warden runner` processes against the server's own
//                   sandbox, on a real `warden serve`: what a remote runner adds per check
//                   run once the base is cached, and a generated 2,000-file repository built
//                   both ways (median of --runs paired builds). server_bench owns that
//                   harness; this bench runs its sections 4 and 5 (server_bench
//                   --runners-only --json, beside this binary) and reports them here.
//
// Targets: LMDB at least 20,000 assignments/s; Redis at least 5,000/s and within
// 2x of its bare primitives; detection within two heartbeat intervals plus 100 ms; a remote
// runner adds at most 15 ms per check run.
//
// Usage:
//   cmake --build build --target supervisor_bench server_bench warden warden-grpc
//   build/supervisor_bench [--tasks N] [--runs N] [--json]
//   build/supervisor_bench --quick       CI smoke run: small counts, no runner section
//                                        (server_bench_quick covers it), always exits 0
// Exit status: 0; 1 when a full run misses a target; 2 when a step cannot run at all.
#include <hiredis/hiredis.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/random_source.h"
#include "store/lmdb_state_store.h"
#include "store/redis_state_store.h"
#include "supervisor/supervisor.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using warden::store::StateStore;
using warden::supervisor::Supervisor;
using warden::supervisor::SupervisorConfig;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "supervisor_bench: " << what << "\n";
  std::exit(2);
}

constexpr int kAgents = 16;

// Drives `tasks` tasks through the whole path on `store`; returns tasks per second.
double assignments_per_second(StateStore& store, int tasks) {
  warden::SystemClock clock;
  warden::SeededRandomSource random(1);
  SupervisorConfig config;
  config.visibility_timeout_ms = 600'000;
  auto made = Supervisor::create(store, clock, random, config);
  if (!made) die(made.error().message);
  Supervisor& sup = **made;
  for (int a = 0; a < kAgents; ++a) {
    if (auto r = sup.register_agent({"agent-" + std::to_string(a), "runner", {}}); !r) die(r.error().message);
  }
  int done = 0;
  int next = 0;
  const auto start = Clock::now();
  while (done < tasks) {
    for (int a = 0; a < kAgents && next < tasks; ++a, ++next) {
      if (auto q = store.enqueue({"task-" + std::to_string(next), next % 5, "runner", "check"}); !q) die(q.error().message);
    }
    warden::supervisor::AssignScope scope;
    scope.starts_at_once = [](const warden::supervisor::AgentView&) { return true; };
    auto assigned = sup.assign(scope);
    if (!assigned) die(assigned.error().message);
    if (assigned->empty()) die("an assignment pass assigned nothing");
    for (const auto& a : *assigned) {
      const auto ref = a.claim.ref();
      if (auto s = sup.delivered(a.agent_id, ref); !s) die(s.error().message);
      ++done;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return tasks / seconds;
}

// The commands of one task's path as plain Redis commands, over one connection: enqueue
// (HSET + ZADD), claim (ZRANGE + ZREM + ZADD lease + HSET), the agent's record written twice
// (HSET: working, idle), ack (ZREM + DEL + HSET done), two events (XADD).
double bare_redis_per_second(const std::string& socket, int tasks) {
  redisContext* c = redisConnectUnix(socket.c_str());
  if (!c || c->err) die("connecting to redis");
  std::unique_ptr<redisContext, decltype(&redisFree)> conn(c, redisFree);
  auto cmd = [&](const std::vector<std::string>& argv) {
    std::vector<const char*> args;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(redisCommandArgv(conn.get(), static_cast<int>(args.size()), args.data(), lens.data()));
    if (!reply) die("redis command failed");
    freeReplyObject(reply);
  };
  const auto start = Clock::now();
  for (int i = 0; i < tasks; ++i) {
    const std::string id = "task-" + std::to_string(i);
    cmd({"HSET", "bare:task:" + id, "payload", "check", "kind", "runner"});
    cmd({"ZADD", "bare:ready", std::to_string(i), id});
    cmd({"ZRANGE", "bare:ready", "0", "0"});
    cmd({"ZREM", "bare:ready", id});
    cmd({"ZADD", "bare:leases", std::to_string(i + 600000), id});
    cmd({"HSET", "bare:task:" + id, "token", std::to_string(i + 1)});
    for (int w = 0; w < 2; ++w) cmd({"HSET", "bare:agent:a", "state", "s" + std::to_string(w), "version", std::to_string(i * 2 + w)});
    cmd({"ZREM", "bare:leases", id});
    cmd({"DEL", "bare:task:" + id});
    cmd({"HSET", "bare:done", id, "a " + std::to_string(i + 1)});
    for (int e = 0; e < 2; ++e) cmd({"XADD", "bare:events", "*", "e", "assigned"});
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return tasks / seconds;
}

// PINGs per second over one connection: the round trip every Redis call pays at least.
double redis_round_trips_per_second(const std::string& socket, int count) {
  redisContext* c = redisConnectUnix(socket.c_str());
  if (!c || c->err) die("connecting to redis");
  std::unique_ptr<redisContext, decltype(&redisFree)> conn(c, redisFree);
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    auto* reply = static_cast<redisReply*>(redisCommand(conn.get(), "PING"));
    if (!reply) die("PING failed");
    freeReplyObject(reply);
  }
  return count / std::chrono::duration<double>(Clock::now() - start).count();
}

// The Redis figures on one placement of the bench and its server.
struct RedisFigures {
  double store = 0;  // assignments/s through the whole path
  double bare = 0;   // the path's commands, plain
  double pings = 0;  // round trips/s
  bool ok() const { return store >= 5000 && store * 2 >= bare; }
};

// Starts a Redis server of the bench's own (a unix socket in `dir`, appendfsync everysec, as
// a fleet that can lose a second to an OS crash would run it: `always` makes every figure the
// disk's fsync rate) with the bench's current CPU affinity, which the server inherits.
RedisFigures redis_figures(const fs::path& dir, int tasks) {
  warden::test::RedisServer server(dir, "everysec");
  if (auto started = server.start(); !started) die(started.error().message);
  auto store = warden::store::open_redis_state_store(server.address());
  if (!store) die(store.error().message);
  RedisFigures f;
  f.store = assignments_per_second(**store, tasks);
  f.bare = bare_redis_per_second(server.address().path, tasks);
  f.pings = redis_round_trips_per_second(server.address().path, tasks);
  return f;
}

// Runs `body` with the process (and so any server it starts) on one CPU, the first it may
// use, when `one` holds, or as it was; the affinity is restored after.
template <typename F>
auto on_cpus(bool one, F body) {
  cpu_set_t before;
  if (::sched_getaffinity(0, sizeof before, &before) != 0) die("sched_getaffinity");
  int cpu = -1;
  for (int c = 0; one && cpu < 0 && c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &before)) cpu = c;
  }
  if (cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) die("sched_setaffinity");
  }
  auto result = body();
  if (::sched_setaffinity(0, sizeof before, &before) != 0) die("sched_setaffinity");
  return result;
}

// server_bench's runner sections, run beside this binary; its JSON object of figures.
nlohmann::json runner_figures(int runs) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path server_bench = (ec ? fs::path(".") : self.parent_path()) / "server_bench";
  warden::test::Child child =
      warden::test::Child::spawn({server_bench.string(), "--runners-only", "--json", "--runs", std::to_string(runs)});
  warden::test::ProcessResult r = child.wait();
  auto figures = nlohmann::json::parse(r.out, nullptr, false);
  if (!r.exited_with(0) && !r.exited_with(1)) die("server_bench --runners-only: " + r.status() + "\n" + r.err);
  if (!figures.is_object() || !figures.contains("per_check_added_ms")) die("server_bench --runners-only printed no figures: " + r.out);
  return figures;
}

struct Detection {
  double median_ms = 0;
  double max_ms = 0;
  double bound_ms = 0;
};

Detection detection_latency(const fs::path& dir, int trials) {
  auto opened = warden::store::open_lmdb_state_store(dir / "detect", {.sync = false});
  if (!opened) die(opened.error().message);
  warden::SystemClock clock;
  warden::SystemRandomSource random;
  SupervisorConfig config;
  config.heartbeat_interval_ms = 100;
  config.missed_heartbeats = 2;
  config.detection_slack_ms = 50;
  auto made = Supervisor::create(**opened, clock, random, config);
  if (!made) die(made.error().message);
  Supervisor& sup = **made;
  std::vector<double> latencies;
  for (int t = 0; t < trials; ++t) {
    const std::string id = "agent-" + std::to_string(t);
    if (auto r = sup.register_agent({id, "runner", {}}); !r) die(r.error().message);
    // A few heartbeats, then silence: the agent died right after its last one.
    for (int h = 0; h < 3; ++h) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config.heartbeat_interval_ms));
      if (auto b = sup.heartbeat(id); !b) die(b.error().message);
    }
    const auto died = Clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      auto failed = sup.detect_failures();
      if (!failed) die(failed.error().message);
      if (std::find(failed->begin(), failed->end(), id) != failed->end()) break;
    }
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - died).count());
  }
  std::sort(latencies.begin(), latencies.end());
  return {latencies[latencies.size() / 2], latencies.back(), 2.0 * config.heartbeat_interval_ms + 100};
}

}  // namespace

int main(int argc, char** argv) {
  int tasks = 20000;
  bool quick = false;
  bool json = false;
  int trials = 5;
  int runs = 5;
  CLI::App app{"What the agent supervisor costs: assignments per second on LMDB and Redis, failure detection"};
  app.add_option("--tasks", tasks, "Tasks driven through the whole path per store")->check(CLI::Range(100, 10'000'000));
  app.add_option("--trials", trials, "Failure-detection trials")->check(CLI::Range(1, 100));
  app.add_option("--runs", runs, "Paired builds of the runner section (median)")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_flag("--quick", quick, "Small counts; always exits 0 unless a step fails");
  app.add_flag("--json", json, "Print one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    tasks = 500;
    trials = 2;
  }

  char tmpl[] = "/tmp/supervisor-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) die("mkdtemp");
  const fs::path work(tmpl);

  double lmdb_nosync = 0, lmdb_sync = 0;
  {
    auto store = warden::store::open_lmdb_state_store(work / "lmdb-nosync", {.sync = false});
    if (!store) die(store.error().message);
    lmdb_nosync = assignments_per_second(**store, tasks);
  }
  {
    auto store = warden::store::open_lmdb_state_store(work / "lmdb-sync", {.sync = true});
    if (!store) die(store.error().message);
    lmdb_sync = assignments_per_second(**store, std::max(100, tasks / 50));
  }
  // Every Redis call is a round trip the caller waits out. With the bench and the server on
  // one core, a round trip is two context switches; on two cores, each is also a wakeup of
  // the other core, which on a virtual machine is an inter-processor interrupt through the
  // hypervisor (here PING runs about five times slower so). The one-core figure is the
  // store's own cost and is the one judged; the two-core figure is context, as is the PING
  // rate of each.
  const RedisFigures one_core = on_cpus(true, [&] { return redis_figures(work / "redis-one-core", tasks); });
  const RedisFigures two_cores = on_cpus(false, [&] { return redis_figures(work / "redis-two-cores", tasks); });
  const Detection detect = detection_latency(work, trials);
  const nlohmann::json runners = quick ? nlohmann::json() : runner_figures(runs);
  std::error_code ec;
  fs::remove_all(work, ec);

  const bool lmdb_ok = lmdb_nosync >= 20000;
  const bool redis_ok = one_core.ok();
  const bool detect_ok = detect.max_ms <= detect.bound_ms;
  const bool runners_ok = quick || runners.value("per_check_added_ms", 1e9) <= 15;
  if (json) {
    nlohmann::json out = {{"tasks", tasks},
                          {"lmdb_assignments_per_s", lmdb_nosync},
                          {"lmdb_fsync_assignments_per_s", lmdb_sync},
                          {"redis_assignments_per_s", one_core.store},
                          {"bare_redis_paths_per_s", one_core.bare},
                          {"redis_round_trips_per_s", one_core.pings},
                          {"redis_two_cores_assignments_per_s", two_cores.store},
                          {"redis_two_cores_bare_paths_per_s", two_cores.bare},
                          {"redis_two_cores_round_trips_per_s", two_cores.pings},
                          {"detection_median_ms", detect.median_ms},
                          {"detection_max_ms", detect.max_ms},
                          {"detection_bound_ms", detect.bound_ms},
                          {"runners", runners}};
    std::cout << out.dump() << "\n";
  } else {
    auto verdict = [](bool ok) { return ok ? "PASS" : "FAIL"; };
    std::printf("%d tasks, %d agents, the whole path per task\n\n", tasks, kAgents);
    std::printf("%-44s %10.0f /s  (target >= 20,000)  %s\n", "LMDB store (no fsync per commit)", lmdb_nosync, verdict(lmdb_ok));
    std::printf("%-44s %10.0f /s  (context: the disk's fsync rate)\n", "LMDB store (fsync per commit)", lmdb_sync);
    std::printf("%-44s %10.0f /s  (target >= 5,000 and >= half the bare rate)  %s\n", "Redis store, one core", one_core.store,
                verdict(redis_ok));
    std::printf("%-44s %10.0f /s  (the same commands, plain, one connection)\n", "  bare Redis primitives per task path",
                one_core.bare);
    std::printf("%-44s %10.0f /s  (context: PING, one connection; the floor of every call)\n", "  Redis round trips",
                one_core.pings);
    std::printf("%-44s %10.0f /s  (context: %.2fx the bare rate)\n", "Redis store, two cores", two_cores.store,
                two_cores.store / two_cores.bare);
    std::printf("%-44s %10.0f /s\n", "  bare Redis primitives per task path", two_cores.bare);
    std::printf("%-44s %10.0f /s\n", "  Redis round trips", two_cores.pings);
    std::printf("%-44s %7.1f ms median, %.1f ms max  (target <= %.0f ms)  %s\n", "failure detection after the last heartbeat",
                detect.median_ms, detect.max_ms, detect.bound_ms, verdict(detect_ok));
    if (quick) {
      std::printf("%-44s skipped in --quick (server_bench_quick runs it)\n", "checks on three runner processes");
    } else {
      std::printf("%-44s %7.1f ms  (%.0f check runs a build, median of %d paired builds; target <= 15 ms)  %s\n",
                  "a remote runner adds per check run", runners.value("per_check_added_ms", 0.0),
                  runners.value("check_runs_a_build", 0.0), runs, verdict(runners_ok));
      std::printf("%-44s %7.0f ms on the server's sandbox, %.0f ms on three runners (%.2fx)\n",
                  (std::to_string(runners.value("files", 0)) + "-file repository build").c_str(),
                  runners.value("generated_local_ms", 0.0), runners.value("generated_runners_ms", 0.0),
                  runners.value("generated_runners_ms", 0.0) / std::max(1.0, runners.value("generated_local_ms", 0.0)));
    }
  }
  if (quick) return 0;
  return lmdb_ok && redis_ok && detect_ok && runners_ok ? 0 : 1;
}
