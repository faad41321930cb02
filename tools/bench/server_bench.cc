// What the kernel service costs, measured against a real `warden serve` on a fresh state
// directory, in one run:
//   1. unary: a call that does no work (grpc.health.v1 Check) over the unix socket and over
//      TCP with TLS on loopback: the transport's own cost per call (p50, p99);
//   2. events: one watcher reading a recorded run of --events events (WatchRun from seq 0),
//      in events per second; the target is at least 50,000/s;
//   3. build: the calculator built with the plan executor by `warden build` in-process, next to
//      the same build started over gRPC (StartRun, then WatchRun to its end): what the service
//      adds to a whole build;
//   4. checks on runners: the same served build with its checks on three `warden runner`
//      processes and in the server's own sandbox, alternating (base checkouts cached by a
//      first build of each): what a remote runner adds per check run beyond the sandbox's own
//      time (the median of the pairs' differences over the check runs of a build); the target
//      is at most 15 ms;
//   5. a generated repository of --files files (default 2,000) and a blueprint adding a small
//      package and its tests, built over gRPC with the server's own sandbox and with its
//      checks on the three runners.
// Each figure is the median of --runs runs where it is a time.
//
//   server_bench [--runs N] [--events N] [--calls N] [--files N] [--quick]
//   server_bench --runners-only [--json] ...   sections 4 and 5 alone (supervisor_bench runs
//                                              them so, as part of its one run)
// Exit 0 when the events target holds, 1 when it does not, 2 when something could not run.
#include <grpcpp/grpcpp.h>
#include <health/v1/health.grpc.pb.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fleet.grpc.pb.h>
#include <warden.grpc.pb.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "ledger/ledger.h"
#include "tools/bench/median.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::cerr << "server_bench: " << why << "\n";
  std::exit(2);
}

fs::path beside_me(const std::string& name) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::path(".") : self.parent_path()) / name;
}

std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

void run_or_die(const std::vector<std::string>& argv) {
  warden::SubprocessSpec spec;
  spec.argv = argv;
  spec.env = environment();
  spec.timeout = std::chrono::minutes(5);
  spec.max_stdout = size_t{64} << 20;
  auto r = warden::run_subprocess(spec);
  if (!r || r->exit_code != 0) die(argv[0] + " " + argv[1] + " failed: " + (r ? r->err : r.error().message));
}

// A run of `count` recorded events (the last one terminal), appended straight to the ledger.
void record_synthetic_run(const fs::path& ledger_dir, const std::string& run_id, int count) {
  warden::SystemClock clock;
  auto ledger = warden::Ledger::open(ledger_dir, warden::Ledger::Mode::read_write, clock);
  if (!ledger) die("opening the ledger: " + ledger.error().message);
  constexpr int kBatch = 10'000;
  for (int first = 0; first < count; first += kBatch) {
    std::vector<warden::AppendEntry> entries;
    for (int i = first; i < std::min(count, first + kBatch); ++i) {
      const bool last = i + 1 == count;
      entries.push_back({"run_event",
                         warden::Json{{"data", {{"n", i}}},
                                      {"event_id", "ev-" + std::to_string(i)},
                                      {"event_type", last ? "run_completed" : "tool_output"},
                                      {"run_id", run_id},
                                      {"timestamp_ms", 1'700'000'000'000 + i}}});
    }
    if (auto st = ledger->append_batch(entries); !st) die("appending: " + st.error().message);
  }
}

struct Server {
  pid_t pid = -1;
  Server() = default;
  Server(Server&& o) noexcept : pid(std::exchange(o.pid, -1)) {}
  Server& operator=(Server&& o) noexcept {
    stop();
    pid = std::exchange(o.pid, -1);
    return *this;
  }
  ~Server() { stop(); }
  void stop() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
      pid = -1;
    }
  }
};

Server start_process(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Server s;
  s.pid = ::fork();
  if (s.pid < 0) die("fork failed");
  if (s.pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return s;
}

Server start_server(std::vector<std::string> args) {
  args.insert(args.begin(), {beside_me("warden-grpc").string(), "serve"});
  return start_process(std::move(args));
}

// Check runs recorded for the runs (run_result, base_run and oracle_run records).
size_t check_runs(const fs::path& ledger_dir, const std::set<std::string>& run_ids) {
  warden::SystemClock clock;
  auto ledger = warden::Ledger::open(ledger_dir, warden::Ledger::Mode::read_only, clock);
  if (!ledger) die("opening " + ledger_dir.string() + ": " + ledger.error().message);
  auto snap = ledger->snapshot();
  if (!snap) die(snap.error().message);
  size_t n = 0;
  auto walked = snap->for_each_record(0, snap->size(), [&](const warden::RecordView& r) -> warden::Result<bool> {
    if (r.kind != "run_result" && r.kind != "base_run" && r.kind != "oracle_run") return true;
    auto p = warden::parse_json(r.payload);
    if (p && run_ids.contains(p->value("run_id", std::string()))) ++n;
    return true;
  });
  if (!walked) die(walked.error().message);
  return n;
}

// A blueprint served as "generated": a seed of `files` text files of 20 lines in two levels of
// directories, and five steps adding a small typed package and its tests (python policy).
void write_generated_blueprint(const fs::path& dir, int files) {
  for (int i = 0; i < files; ++i) {
    const fs::path path = dir / "seed" / ("d" + std::to_string(i / 1024)) / ("e" + std::to_string(i / 32 % 32)) /
                          ("f" + std::to_string(i) + ".txt");
    fs::create_directories(path.parent_path());
    std::ofstream out(path);
    for (int line = 0; line < 20; ++line) out << "line " << line << " of file " << i << "\n";
  }
  auto function = [](const std::string& name, const std::string& body) {
    return warden::Json{{"names", {name}}, {"module", "pkg"}, {"path", "src/pkg/" + name + ".py"},
                        {"content", "def " + name + "(x: int) -> int:\n    return " + body + "\n"}};
  };
  auto test = [](const std::string& name, const std::string& assertion) {
    return warden::Json{{"name", "test_" + name}, {"path", "tests/test_" + name + ".py"}, {"covers", {name}},
                        {"content", "from pkg." + name + " import " + name + "\n\n\ndef test_" + name + "() -> None:\n    assert " +
                                        assertion + "\n"}};
  };
  const warden::Json blueprint = {
      {"format", "warden.blueprint/v1"},
      {"name", "generated"},
      {"language", "python"},
      {"repository", {{"seed", "seed"}, {"base", "HEAD"}}},
      {"goals", {"a small package added to a large repository"}},
      {"policy", "python"},
      {"modules", {{{"name", "pkg"}, {"path", "src/pkg/__init__.py"}, {"content", "\"\"\"The bench package.\"\"\"\n"}}}},
      {"functions", {function("inc", "x + 1"), function("twice", "2 * x")}},
      {"tests", {test("inc", "inc(1) == 2"), test("twice", "twice(2) == 4")}},
      {"constraints", {{"allowed_paths", {"src/**", "tests/**"}}}}};
  std::ofstream(dir / "blueprint.json") << blueprint.dump(2);
}

// Until `count` runners are connected to the server (Agents.List), or 60 s.
void wait_for_runners(const std::shared_ptr<grpc::Channel>& channel, int count) {
  auto agents = warden::v1::Agents::NewStub(channel);
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer bench-token");
    warden::v1::ListAgentsResponse listed;
    if (agents->List(&context, warden::v1::ListAgentsRequest{}, &listed).ok()) {
      int connected = 0;
      for (const auto& a : listed.agents()) connected += a.connected() && a.state() == "idle" ? 1 : 0;
      if (connected >= count) return;
    }
    std::this_thread::sleep_for(50ms);
  }
  die(std::to_string(count) + " runners did not enrol within 60 s");
}

// A loopback port nobody uses now (the server binds it a moment later).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    die("no free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// p50 and p99 of a no-op call (health Check) on `channel`, after 100 warm-up calls.
struct Percentiles {
  double p50 = 0, p99 = 0;
};
Percentiles unary_latency(const std::shared_ptr<grpc::Channel>& channel, int calls) {
  auto health = grpc::health::v1::Health::NewStub(channel);
  std::vector<double> us;
  for (int i = 0; i < calls + 100; ++i) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckResponse response;
    const auto start = Clock::now();
    grpc::Status st = health->Check(&context, {}, &response);
    const double took = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!st.ok()) die("Health.Check: " + st.error_message());
    if (i >= 100) us.push_back(took);  // the first calls warm the connection
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

std::shared_ptr<grpc::Channel> wait_for(const fs::path& socket) {
  auto channel = grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials());
  for (int i = 0; i < 600; ++i) {
    if (fs::exists(socket) && channel->WaitForConnected(std::chrono::system_clock::now() + 100ms)) return channel;
    std::this_thread::sleep_for(50ms);
  }
  die("the server did not listen on " + socket.string());
}

// How long each proposal took as the kernel saw it: from its tool_called event (the kernel
// asks the executor) to its proposal record (the answer parsed and recorded), in ms, for
// every proposal of every run in the ledger at `ledger_dir` whose id starts with `prefix`.
// The same clock stamps both; what an executor's transport adds shows up here.
std::vector<double> proposal_latencies(const fs::path& ledger_dir, const std::set<std::string>& run_ids) {
  warden::SystemClock clock;
  auto ledger = warden::Ledger::open(ledger_dir, warden::Ledger::Mode::read_only, clock);
  if (!ledger) die("opening " + ledger_dir.string() + ": " + ledger.error().message);
  auto snap = ledger->snapshot();
  if (!snap) die(snap.error().message);
  std::map<std::string, int64_t> asked;
  std::vector<double> ms;
  auto walked = snap->for_each_record(0, snap->size(), [&](const warden::RecordView& r) -> warden::Result<bool> {
    if (r.kind != "run_event" && r.kind != "proposal") return true;
    auto p = warden::parse_json(r.payload);
    if (!p || !run_ids.contains(p->value("run_id", std::string()))) return true;
    if (r.kind == "run_event") {
      if (p->value("event_type", std::string()) != "tool_called") return true;
      const warden::Json& d = (*p)["data"];
      asked[p->value("run_id", std::string()) + "/" + d.value("step_id", std::string()) + "/" +
            std::to_string(d.value("attempt", 0))] = p->value("timestamp_ms", int64_t{0});
    } else {
      auto it = asked.find(p->value("run_id", std::string()) + "/" + p->value("step_id", std::string()) + "/" +
                           std::to_string(p->value("attempt", 0)));
      if (it != asked.end()) ms.push_back(static_cast<double>(r.ts - it->second));
    }
    return true;
  });
  if (!walked) die(walked.error().message);
  return ms;
}

// What the plan executor would propose for this request (the step's drafts first, one per
// refusal of the step so far, then its content), as a Diff JSON: the same proposals, so a
// remote build does exactly the plan executor's work.
std::string plan_answer(const warden::v1::ProposalRequest& r) {
  auto step = warden::parse_json(r.step_json());
  auto context = warden::parse_json(r.context_json());
  if (!step || !context) die("a proposal request that is not JSON");
  warden::Json versions = step->value("drafts", warden::Json::array());
  if (step->contains("content")) versions.push_back((*step)["content"]);
  size_t refused = 0;
  for (const warden::Json& refusal : context->value("refusals", warden::Json::array())) {
    if (refusal.value("step_id", std::string()) == r.step_id()) ++refused;
  }
  const warden::Json version = versions.at(std::min(refused, versions.size() - 1));
  const warden::Json existing = context->value("files", warden::Json::object());
  warden::Json files = warden::Json::array();
  for (auto it = version.begin(); it != version.end(); ++it) {
    const std::string text = it.value().get<std::string>();
    const bool exists = existing.contains(it.key());
    if (exists && existing[it.key()].value("content", std::string()) == text) continue;
    warden::Json change = {{"path", it.key()}, {"new_mode", "100644"}, {"after_sha256", warden::sha256(text).str()},
                           {"after_content", text}, {"op", exists ? "modify" : "add"}};
    if (exists) {
      change["old_mode"] = "100644";
      change["before_sha256"] = existing[it.key()].value("sha256", std::string());
    }
    files.push_back(change);
  }
  return warden::Json{{"step_id", r.step_id()}, {"files", files}}.dump();
}

// A remote executor attached to `run_id` over `channel`, answering as the plan executor would
// until the run ends.
void serve_as_plan(const std::shared_ptr<grpc::Channel>& channel, const std::string& run_id) {
  auto executor = warden::v1::Executor::NewStub(channel);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer bench-token");
  auto stream = executor->Attach(&context);
  warden::v1::ExecutorMessage attach;
  attach.mutable_attach()->set_run_id(run_id);
  stream->Write(attach);
  warden::v1::KernelMessage m;
  while (stream->Read(&m)) {
    if (m.has_run_ended()) break;
    if (!m.has_proposal_request()) continue;
    warden::v1::ExecutorMessage answer;
    answer.mutable_answer()->set_request_id(m.proposal_request().request_id());
    answer.mutable_answer()->mutable_proposal()->set_diff_json(plan_answer(m.proposal_request()));
    stream->Write(answer);
  }
  stream->WritesDone();
  grpc::Status st = stream->Finish();
  if (!st.ok()) die("Attach: " + st.error_message());
}

struct Latency {
  double p50 = 0, p99 = 0;
  size_t n = 0;
};
Latency summarize(std::vector<double> ms) {
  if (ms.empty()) die("no proposals measured");
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.size()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"server_bench: what warden serve costs per call, per event and per build"};
  int runs = 5, events = 100'000, calls = 2'000, files = 2'000;
  bool quick = false, runners_only = false, json = false;
  app.add_flag("--runners-only", runners_only, "Only sections 4 and 5: checks on three runners, the generated repository");
  app.add_flag("--json", json, "With --runners-only: one JSON object of their figures instead of the lines");
  app.add_option("--runs", runs, "Runs of each timed build (median)")->capture_default_str();
  app.add_option("--events", events, "Events in the watched run")->capture_default_str();
  app.add_option("--calls", calls, "Unary calls timed")->capture_default_str();
  app.add_option("--files", files, "Files in the generated repository")->capture_default_str();
  app.add_flag("--quick", quick,
               "One build run, 20,000 events, 500 calls: a smoke test that every path works. It still "
               "prints PASS or FAIL for each figure, but a missed figure does not fail it, because CI "
               "runs it beside other tests on a loaded machine");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    runs = 1;
    events = 20'000;
    calls = 500;
    files = 200;
  }

  char tmpl[] = "/tmp/warden-server-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) die("mkdtemp failed");
  const fs::path tmp = tmpl;
  const fs::path state = tmp / "state", blueprints = tmp / "blueprints";
  fs::create_directories(blueprints);
  fs::create_directory_symlink(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", blueprints / "calculator");
  write_generated_blueprint(blueprints / "generated", files);
  ::mkdir(state.c_str(), 0700);
  const std::string warden = beside_me("warden").string();
  run_or_die({warden, "ledger", "init", (state / "ledger").string()});
  if (!runners_only) record_synthetic_run(state / "ledger", "run-bench", events);

  int status = 0;
  {
    // TCP with TLS beside the unix socket: a self-signed certificate for 127.0.0.1.
    const fs::path pki = tmp / "pki";
    fs::create_directories(pki);
    run_or_die({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", (pki / "server.key").string(), "-out", (pki / "server.pem").string(), "-days", "1", "-subj",
                "/CN=warden bench", "-addext", "subjectAltName=IP:127.0.0.1"});
    fs::permissions(pki / "server.key", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    std::ofstream(pki / "tokens.json") << R"({"tokens": [{"name": "bench", "sha256": ")" << warden::sha256("bench-token").str()
                                       << R"(", "roles": ["admin"]}, {"name": "runners", "sha256": ")"
                                       << warden::sha256("runner-token").str() << R"(", "roles": ["runner"]}]})";
    fs::permissions(pki / "tokens.json", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    std::ofstream(pki / "runner.token") << "runner-token";
    fs::permissions(pki / "runner.token", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    const int port = free_port();
    Server server = start_server({"--state", state.string(), "--blueprints", blueprints.string(), "--tokens",
                                  (pki / "tokens.json").string(), "--listen", "127.0.0.1:" + std::to_string(port),
                                  "--tls-cert", (pki / "server.pem").string(), "--tls-key", (pki / "server.key").string()});
    auto channel = wait_for(state / "warden.sock");
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = slurp(pki / "server.pem");
    auto tls_channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(tls));

    auto kernel = warden::v1::Kernel::NewStub(channel);
    std::vector<double> in_process;
    std::set<std::string> remote_unix, remote_tls;
    int n = 0;
    if (!runners_only) {
      // 1. A call that does no work.
      const Percentiles unix_unary = unary_latency(channel, calls);
      std::printf("unary no-op call, unix socket        p50 %7.1f us   p99 %7.1f us   (%d calls)\n", unix_unary.p50,
                  unix_unary.p99, calls);
      const Percentiles tls_unary = unary_latency(tls_channel, calls);
      std::printf("unary no-op call, TCP + TLS          p50 %7.1f us   p99 %7.1f us   (%d calls)\n", tls_unary.p50,
                  tls_unary.p99, calls);

      // 2. Events to one watcher.
      // The unix socket wants the token too once a tokens file is given.
      double events_per_s = 0;
      {
        grpc::ClientContext context;
        context.AddMetadata("authorization", "Bearer bench-token");
        warden::v1::WatchRunRequest request;
        request.set_run_id("run-bench");
        const auto start = Clock::now();
        auto reader = kernel->WatchRun(&context, request);
        warden::v1::RunEvent e;
        int got = 0;
        while (reader->Read(&e)) ++got;
        grpc::Status st = reader->Finish();
        const double s = std::chrono::duration<double>(Clock::now() - start).count();
        if (!st.ok() || got != events) die("WatchRun: " + std::to_string(got) + " events, " + st.error_message());
        events_per_s = got / s;
        std::printf("events to one watcher                %9.0f events/s (%d events in %.2f s; target >= 50,000/s: %s)\n",
                    events_per_s, got, s, events_per_s >= 50'000 ? "PASS" : "FAIL");
      }
      if (events_per_s < 50'000 && !quick) status = 1;
    }  // !runners_only
    // 3. A whole build, in-process and over gRPC; and each proposal as the kernel saw it.
    // One build first, unmeasured: both sides then find the base checkout in the runner's cache.
    if (!runners_only) {
      run_or_die({warden, "build", (blueprints / "calculator" / "blueprint.json").string(), "--repo",
                  (tmp / "local" / "warm").string(), "--ledger", (tmp / "local" / "ledger").string(), "--cache",
                  (state / "cache").string(), "--json"});
    }
    // Into one ledger, as the server's runs share one: a new ledger per build would cost a key
    // and a ledger's creation that the served builds do not pay.
    std::set<std::string> local_ids;
    const double local_ms = runners_only ? 0 : warden::bench::median_ms(runs, [&] {
      const std::string id = "run-local-" + std::to_string(n++);
      local_ids.insert(id);
      run_or_die({warden, "build", (blueprints / "calculator" / "blueprint.json").string(), "--repo",
                  (tmp / "local" / id).string(), "--ledger", (tmp / "local" / "ledger").string(), "--cache",
                  (state / "cache").string(), "--run-id", id, "--json"});
    });
    if (!runners_only) in_process = proposal_latencies(tmp / "local" / "ledger", local_ids);
    // Started over gRPC, proposed by the plan executor in the run, or by a remote executor
    // attached over the unix socket or TCP with TLS answering the plan executor's proposals.
    std::string blueprint = "calculator";
    auto served = [&](const std::string& executor, const std::shared_ptr<grpc::Channel>& executor_channel,
                      std::set<std::string>* ids, const std::string& checks_on = "local", int build_runs = 0) {
      return warden::bench::median_ms(build_runs > 0 ? build_runs : runs, [&] {
        grpc::ClientContext context;
        context.AddMetadata("authorization", "Bearer bench-token");
        warden::v1::StartRunRequest request;
        request.set_blueprint(blueprint);
        request.set_repository("served-" + std::to_string(n++));
        request.set_executor(executor);
        if (executor == "remote") request.set_executor_label("bench");
        request.set_checks_on(checks_on);
        warden::v1::StartRunResponse started;
        grpc::Status st = kernel->StartRun(&context, request, &started);
        if (!st.ok()) die("StartRun: " + st.error_message());
        std::thread remote;
        if (ids) ids->insert(started.run_id());
        if (executor == "remote") remote = std::thread([&] { serve_as_plan(executor_channel, started.run_id()); });
        grpc::ClientContext watch_context;
        watch_context.AddMetadata("authorization", "Bearer bench-token");
        warden::v1::WatchRunRequest watch;
        watch.set_run_id(started.run_id());
        auto reader = kernel->WatchRun(&watch_context, watch);
        warden::v1::RunEvent e;
        std::string last;
        while (reader->Read(&e)) last = e.type();
        if (remote.joinable()) remote.join();
        if (!reader->Finish().ok() || last != "run_completed") die("the served build ended with " + last);
      });
    };
    if (!runners_only) {
      const double served_plan_ms = served("plan", nullptr, nullptr);
      const double served_unix_ms = served("remote", channel, &remote_unix);
      const double served_tls_ms = served("remote", tls_channel, &remote_tls);
      std::printf("calculator build (median of %d)       in-process, plan executor %6.0f ms\n", runs, local_ms);
      std::printf("                                     over gRPC, plan executor  %6.0f ms   (+%.0f ms)\n", served_plan_ms,
                  served_plan_ms - local_ms);
      std::printf("                                     remote executor, unix     %6.0f ms   (+%.0f ms)\n", served_unix_ms,
                  served_unix_ms - local_ms);
      std::printf("                                     remote executor, TLS      %6.0f ms   (+%.0f ms)\n", served_tls_ms,
                  served_tls_ms - local_ms);
    }  // !runners_only

    // 4. Checks on three `warden runner` processes of their own state, against the server's
    // own sandbox: the same served build, the two alternating (so the machine's drift falls
    // on both alike), each after one unmeasured build (base checkouts cached on both sides).
    std::vector<Server> runner_processes;
    for (int i = 1; i <= 3; ++i) {
      const std::string id = "bench-runner-" + std::to_string(i);
      ::mkdir((tmp / id).c_str(), 0700);
      runner_processes.push_back(start_process({beside_me("warden-grpc").string(), "runner", "--server",
                                                (state / "warden.sock").string(), "--token", (pki / "runner.token").string(),
                                                "--state", (tmp / id).string(), "--id", id}));
    }
    wait_for_runners(channel, 3);
    // Median of the per-pair differences, and the medians of each side.
    struct Paired {
      double local_ms = 0, runners_ms = 0, added_ms = 0;
    };
    auto paired = [&](const std::string& name, std::set<std::string>* runner_ids) {
      blueprint = name;
      (void)served("plan", nullptr, nullptr, "local", 1);
      (void)served("plan", nullptr, nullptr, "runners", 1);
      std::vector<double> local, remote, added;
      for (int i = 0; i < runs; ++i) {
        local.push_back(served("plan", nullptr, nullptr, "local", 1));
        remote.push_back(served("plan", nullptr, runner_ids, "runners", 1));
        added.push_back(remote.back() - local.back());
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      return Paired{median(local), median(remote), median(added)};
    };
    std::set<std::string> on_runners;
    const Paired calc = paired("calculator", &on_runners);
    // 5. The generated repository, likewise.
    const Paired generated = paired("generated", nullptr);
    runner_processes.clear();
    server = Server{};  // stop it: the ledger is read below by this process
    const double checks_a_build = static_cast<double>(check_runs(state / "ledger", on_runners)) / std::max<size_t>(on_runners.size(), 1);
    const double per_check = calc.added_ms / std::max(checks_a_build, 1.0);
    if (per_check > 15 && !quick) status = 1;
    if (json) {
      std::printf("{\"runs\":%d,\"check_runs_a_build\":%.0f,\"calculator_local_ms\":%.1f,\"calculator_runners_ms\":%.1f,"
                  "\"per_check_added_ms\":%.2f,\"files\":%d,\"generated_local_ms\":%.1f,\"generated_runners_ms\":%.1f}\n",
                  runs, checks_a_build, calc.local_ms, calc.runners_ms, per_check, files, generated.local_ms,
                  generated.runners_ms);
    } else {
      std::printf("checks on 3 runners (median of %d)   calculator: server's sandbox %6.0f ms, runners %6.0f ms, paired +%.0f ms\n",
                  runs, calc.local_ms, calc.runners_ms, calc.added_ms);
      std::printf("a remote runner adds per check run   %6.1f ms (%.0f check runs a build; target <= 15 ms: %s)\n", per_check,
                  checks_a_build, per_check <= 15 ? "PASS" : "FAIL");
      std::printf("%d-file repository build (median)   server's sandbox %6.0f ms, 3 runners %6.0f ms, paired +%.0f ms (%.2fx)\n",
                  files, generated.local_ms, generated.runners_ms, generated.added_ms,
                  generated.runners_ms / generated.local_ms);
    }
    if (!runners_only) {
      const Latency plan = summarize(in_process);
      const Latency over_unix = summarize(proposal_latencies(state / "ledger", remote_unix));
      const Latency over_tls = summarize(proposal_latencies(state / "ledger", remote_tls));
      std::printf("proposal, kernel asks -> recorded   in-process p50 %4.0f ms p99 %4.0f ms (%zu)\n", plan.p50, plan.p99, plan.n);
      std::printf("                                     remote, unix p50 %4.0f ms p99 %4.0f ms (%zu)\n", over_unix.p50,
                  over_unix.p99, over_unix.n);
      std::printf("                                     remote, TLS  p50 %4.0f ms p99 %4.0f ms (%zu)\n", over_tls.p50,
                  over_tls.p99, over_tls.n);
      const double added = std::max(over_unix.p50, over_tls.p50) - plan.p50;
      std::printf("gRPC adds per proposal (p50)         %4.0f ms (ms clock; target <= 1 ms: %s)\n", added,
                  added <= 1 ? "PASS" : "FAIL");
      if (added > 1 && !quick) status = 1;
    }  // !runners_only
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return status;
}
