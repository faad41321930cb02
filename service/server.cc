#include "service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/clock.h"
#include "common/file.h"
#include "common/random_source.h"
#include "ledger/ledger_keys.h"
#include "runner/sandbox/preflight_cache.h"
#include "runner/sandbox/sandbox.h"
#include "service/agent_spawner.h"
#include "service/agents_service.h"
#include "service/fleet_recorder.h"
#include "service/health_service.h"
#include "service/in_flight.h"
#include "service/executor_service.h"
#include "service/kernel_service.h"
#include "service/ledger_service.h"
#include "service/pipeline_service.h"
#include "service/run_manager.h"
#include "service/runners_service.h"
#include "service/shared_ledger.h"
#include "service/reflection_gate.h"
#include "service/tokens.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

constexpr auto kShutdownGrace = std::chrono::seconds(5);
// How long live runs get to record their cancellation when the server stops.
constexpr auto kRunStopGrace = std::chrono::seconds(20);

// A fresh state directory gets its ledger (and its signer key) the way `warden ledger init` makes one.
Status ensure_ledger(const fs::path& dir, std::ostream& log) {
  std::error_code ec;
  if (fs::exists(dir / "data.mdb", ec)) return {};
  auto made = run_warden({"ledger", "init", dir.string()});
  if (!made) return std::unexpected(made.error().with_context("creating the ledger " + dir.string()));
  log << "warden serve: created the ledger " << dir.string() << "\n";
  return {};
}

Status prepare_state_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::unexpected(errno_error("mkdir " + dir.string(), errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + dir.string(), errno));
  if (!S_ISDIR(st.st_mode)) return fail(Errc::invalid_argument, "--state " + dir.string() + ": not a directory");
  // The socket, ledger and keys live here: another user able to write it could swap them.
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return fail(Errc::invalid_argument, "--state " + dir.string() + ": owned by uid " + std::to_string(st.st_uid) +
                                            " with mode " + mode + "; it must be yours and writable by you alone: chown " +
                                            std::to_string(::geteuid()) + " " + dir.string() + " && chmod 0700 " +
                                            dir.string());
  }
  return {};
}

// A socket file left by a server that died is removed; one a live server answers on is not.
Status claim_socket(const fs::path& path) {
  if (path.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
    return fail(Errc::invalid_argument, "--socket " + path.string() + ": longer than a unix socket path may be (" +
                                            std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes)");
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return std::unexpected(errno_error("stat " + path.string(), errno));
  }
  if (!S_ISSOCK(st.st_mode)) return fail(Errc::already_exists, path.string() + " exists and is not a socket: not replacing it");
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe) return std::unexpected(errno_error("socket", errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.string().size());
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    return fail(Errc::already_exists, "a server is already listening on " + path.string());
  }
  if (::unlink(path.c_str()) != 0) return std::unexpected(errno_error("removing the stale socket " + path.string(), errno));
  return {};
}

// Whether the sandbox checks run in works here (remembered like `warden sandbox exec` does),
// and if not, why.
struct SandboxReadiness {
  bool ok = false;
  std::string why;
};

SandboxReadiness sandbox_preflight(const ServeOptions& options) {
  auto profile = SandboxProfile::load(options.sandbox_profile);
  if (!profile) return {false, "profile " + options.sandbox_profile + ": " + profile.error().message};
  auto sandbox = Sandbox::create(std::move(*profile));
  if (!sandbox) return {false, sandbox.error().message};
  sandbox->set_preflight_cache(PreflightCache(options.state_dir / "cache" / "preflight"));
  const PreflightReport& report = sandbox->preflight();
  return {report.ok, report.ok ? "" : report.failures()};
}

}  // namespace

Status serve(const ServeOptions& given, std::ostream& log) {
  // Blocked first, before anything starts a thread (gRPC starts its own as soon as TLS
  // credentials are made), so every thread inherits the mask and only sigwait below takes
  // them: a thread with SIGTERM unblocked would let it kill the process instead.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr) != 0) return fail(Errc::internal, "pthread_sigmask failed");
  ServeOptions options = given;
  if (options.tcp.any() && options.tokens.empty()) {
    // Without tokens every caller has every role: right for the 0600 socket, not for a port.
    return fail(Errc::invalid_argument, "--listen and --insecure-listen need --tokens FILE: without it every caller "
                                        "would be trusted with every role");
  }
  auto tcp = tcp_listeners(options.tcp);
  if (!tcp) return std::unexpected(tcp.error());
  if (Status st = prepare_state_dir(options.state_dir); !st) return st;
  if (options.ledger.empty()) options.ledger = options.state_dir / "ledger";
  if (options.socket.empty()) options.socket = options.state_dir / "warden.sock";
  if (Status st = claim_socket(options.socket); !st) return st;

  AgentsFile spawned;
  if (!options.agents.empty()) {
    auto loaded = load_agents_file(options.agents);
    if (!loaded) return std::unexpected(loaded.error());
    spawned = std::move(*loaded);
    if (spawned.restart) options.fleet.supervisor.restart = *spawned.restart;
  }
  // Why a changed tokens file does not load is the log's, not the refused callers'.
  auto report = [&log](const std::string& why) { log << "warden serve: " << why << "\n" << std::flush; };
  auto tokens = options.tokens.empty() ? TokenTable::local_only() : TokenTable::load(options.tokens, report);
  if (!tokens) return std::unexpected(tokens.error());
  RunManagerOptions run_options;
  run_options.warden_binary = warden_binary();
  run_options.state_dir = options.state_dir;
  run_options.ledger_dir = options.ledger;
  run_options.cache_dir = options.state_dir / "cache";
  run_options.max_live = options.max_runs;
  if (given.ledger.empty()) {
    if (Status st = ensure_ledger(options.ledger, log); !st) return st;
  }
  // The runs an earlier server left live get their end recorded before anything is served.
  auto recovered = recover_interrupted_runs(run_options);
  if (!recovered) return std::unexpected(recovered.error());
  for (const std::string& line : *recovered) log << "warden serve: " << line << "\n";
  InFlight in_flight;
  auto ledger = SharedLedger::open(options.ledger);
  if (!ledger) return std::unexpected(ledger.error());
  SandboxReadiness preflight = sandbox_preflight(options);

  RunManager runs(run_options);
  LedgerService ledger_service(**ledger, in_flight, *tokens);
  KernelServiceOptions kernel_options{options.state_dir,
                                      options.blueprints.empty() ? options.state_dir / "blueprints" : options.blueprints};
  RemoteExecutors remote;
  StreamQuota streams(static_cast<size_t>(std::max(1, options.max_calls / 4)));
  ExecutorService executor_service(remote, **ledger, runs, in_flight, *tokens, streams);
  PipelineService pipeline_service(options.state_dir, **ledger, in_flight, *tokens, streams);
  HealthService health(in_flight);
  health.set("", false);
  health.set("warden.v1.Ledger", false);
  health.set("warden.v1.Kernel", false);
  health.set("warden.v1.Agents", false);
  health.set("warden.v1.Runners", false);
  // The fleet's loop reports its readiness from its own thread; the server as a whole is
  // ready when the kernel and the fleet are, and, while a build waits for runners to run its
  // checks, when one is connected (warden.v1.Runners says the same).
  // The readiness inputs, and the statuses derived from them, under one lock: the loop's
  // thread and this one must not set them in the wrong order.
  std::mutex ready_mu;
  bool fleet_ready = false, kernel_ready = false, runners_starved = false;  // guarded by ready_mu
  auto set_ready = [&](std::optional<bool> fleet_now, std::optional<bool> kernel_now, std::optional<bool> starved_now = {}) {
    std::lock_guard lock(ready_mu);
    if (fleet_now) fleet_ready = *fleet_now;
    if (kernel_now) kernel_ready = *kernel_now;
    if (starved_now) runners_starved = *starved_now;
    health.set("warden.v1.Runners", fleet_ready && !runners_starved);
    health.set("", fleet_ready && kernel_ready && !runners_starved);
  };
  SystemClock fleet_clock;
  SystemRandomSource fleet_random;
  FleetOptions fleet_options = options.fleet;
  fleet_options.state_dir = options.state_dir;
  auto fleet = Fleet::open(fleet_options, fleet_clock, fleet_random, [&](bool ready, const std::string& why) {
    health.set("warden.v1.Agents", ready);
    set_ready(ready, std::nullopt);
    if (!why.empty()) log << "warden serve: the fleet's store failed: " << why << "\n" << std::flush;
  });
  if (!fleet) return std::unexpected(fleet.error());
  // The fleet's events go into the ledger, signed with the ledger's key when the server has it
  // (else the next run's checkpoint covers them).
  std::optional<NoteSigner> fleet_signer;
  if (auto key = find_ledger_signer_key(options.ledger, std::nullopt)) {
    // A key that is not the ledger's would sign checkpoints no verifier accepts.
    if (key->signer.verifier().encoded() != (*ledger)->verifier_key()) {
      return fail(Errc::invalid_argument, key->path.string() + " is not the signer key of the ledger " +
                                              options.ledger.string() + " (its verifier key differs)");
    }
    fleet_signer.emplace(std::move(key->signer));
  }
  auto recorder = FleetRecorder::create(**ledger, (*fleet)->store(), (*fleet)->store_name(), std::move(fleet_signer));
  if (!recorder) return std::unexpected(recorder.error().with_context("finding the fleet's last recorded event"));
  // Runs whose checks go to the fleet's runners: declared before the loop starts (it
  // dispatches their tasks) and so destroyed after it stops.
  RemoteRunners remote_runners(**fleet, fleet_random);
  KernelService kernel_service(kernel_options, **ledger, runs, in_flight, *tokens, remote, remote_runners, streams);
  (*fleet)->start(
      [&recorder, &log, &remote_runners, &set_ready]() -> Status {
        set_ready(std::nullopt, std::nullopt, remote_runners.starved());
        auto pumped = (*recorder)->pump();
        if (!pumped) return std::unexpected(pumped.error());
        if (!pumped->note.empty()) log << "warden serve: " << pumped->note << "\n" << std::flush;
        return {};
      },
      [&remote_runners](const std::vector<supervisor::Assignment>& assigned) { remote_runners.dispatch(assigned); },
      [&remote_runners](const std::vector<store::Task>& expired) { remote_runners.expired(expired); });
  // The loop uses the recorder: it stops before the recorder goes, on every way out.
  struct StopFleet {
    Fleet& fleet;
    ~StopFleet() { fleet.stop(); }
  } stop_fleet{**fleet};
  AgentSpawner spawner((*fleet)->supervisor(), fleet_clock, options.state_dir, options.socket, log);
  AgentsService agents_service(**fleet, in_flight, *tokens);
  RunnersService runners_service(**fleet, remote_runners, in_flight, *tokens, streams, fleet_random);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + options.socket.string(), grpc::InsecureServerCredentials());
  for (TcpListener& l : *tcp) builder.AddListeningPort(l.address(), l.credentials, &l.selected_port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second server on our port is refused
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(options.max_message_bytes, INT32_MAX)));
  grpc::ResourceQuota quota("warden-serve");
  quota.SetMaxThreads(options.max_calls + 8);  // the server's own pollers need a few
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);  // a silent connection is dropped
  // Runners ping every 20 s on their long-lived streams (tools/warden_grpc/client_channel.h):
  // allowed down to every 10 s, where gRPC's default would call them abusive.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  // Reflection (registered by the plugin above) answers only callers with a known token.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> gates;
  gates.push_back(reflection_gate(*tokens));
  builder.experimental().SetInterceptorCreators(std::move(gates));
  builder.RegisterService(&health);
  builder.RegisterService(&ledger_service);
  builder.RegisterService(&agents_service);
  builder.RegisterService(&runners_service);
  if (preflight.ok) {
    builder.RegisterService(&kernel_service);
    builder.RegisterService(&executor_service);
    builder.RegisterService(&pipeline_service);
  }
  // The socket is created with the process umask: 0600 from the start, not chmod'ed after.
  mode_t old_mask = ::umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ::umask(old_mask);
  if (!server) {
    ::unlink(options.socket.c_str());
    if (tcp->empty()) return fail(Errc::io_error, "could not listen on unix:" + options.socket.string());
    return std::unexpected(listen_failure(*tcp));
  }

  health.set("warden.v1.Ledger", true);
  health.set("warden.v1.Kernel", preflight.ok);
  set_ready(std::nullopt, preflight.ok);
  log << "warden serve: listening on unix:" << options.socket.string() << " (ledger " << options.ledger.string()
      << (options.tokens.empty() ? "; the socket's user only" : "; tokens from " + options.tokens.string()) << ")\n";
  for (const TcpListener& l : *tcp) log << "warden serve: listening on " << l.host << ":" << l.selected_port << " (" << l.security << ")\n";
  log << "warden serve: fleet store " << (*fleet)->describe() << "\n";

  if (!spawned.agents.empty()) {
    log << "warden serve: starting " << spawned.agents.size() << " agent(s) from " << options.agents.string() << "\n";
    if (Status st = spawner.start(spawned.agents); !st) log << "warden serve: agents not started: " << st.error().message << "\n";
  }
  if (!preflight.ok) log << "warden serve: sandbox preflight failed, not serving runs: " << preflight.why << "\n";
  log.flush();

  int signal = 0;
  while (::sigwait(&stop_signals, &signal) != 0) {
  }
  log << "warden serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": stopping\n";
  log.flush();
  health.shutdown();  // every service NOT_SERVING from here on, and Watch streams end
  // Live runs record `cancelled` (their watchers see that terminal event and end).
  if (size_t live = runs.stop_all(kRunStopGrace)) log << "warden serve: cancelled " << live << " live run(s)\n";
  remote.shutdown();  // attached executors' streams end
  remote_runners.shutdown();  // runs' channels close (their builds were stopped above)
  spawner.stop();  // the spawned agents' process groups end
  (*fleet)->sessions().disconnect_all();  // runners' streams end; they reconnect to the next server
  (*fleet)->stop();
  // Health already says NOT_SERVING; the calls running get up to kShutdownGrace to finish,
  // then Shutdown refuses new ones and cancels any left (in_flight.h says why the grace is
  // not Shutdown's own deadline).
  bool idle = in_flight.wait_idle(kShutdownGrace);
  if (!idle) log << "warden serve: calls still running after " << kShutdownGrace.count() << " s: cancelling them\n";
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  ::unlink(options.socket.c_str());
  return {};
}

}  // namespace warden::service
