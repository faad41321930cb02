#include "service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "common/file.h"
#include "runner/preflight_cache.h"
#include "runner/sandbox.h"
#include "service/health_service.h"
#include "service/in_flight.h"
#include "service/ledger_service.h"
#include "service/tokens.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

constexpr auto kShutdownGrace = std::chrono::seconds(5);

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
  ServeOptions options = given;
  if (Status st = prepare_state_dir(options.state_dir); !st) return st;
  if (options.ledger.empty()) options.ledger = options.state_dir / "ledger";
  if (options.socket.empty()) options.socket = options.state_dir / "warden.sock";
  if (Status st = claim_socket(options.socket); !st) return st;

  auto tokens = options.tokens.empty() ? TokenTable::local_only() : TokenTable::load(options.tokens);
  if (!tokens) return std::unexpected(tokens.error());
  InFlight in_flight;
  auto ledger = LedgerService::open(options.ledger, in_flight, *tokens);
  if (!ledger) return std::unexpected(ledger.error());
  SandboxReadiness preflight = sandbox_preflight(options);

  // Blocked before gRPC starts its threads, so only sigwait below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr) != 0) return fail(Errc::internal, "pthread_sigmask failed");

  HealthService health(in_flight);
  health.set("", false);
  health.set("warden.v1.Ledger", false);
  health.set("warden.v1.Kernel", false);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + options.socket.string(), grpc::InsecureServerCredentials());
  builder.RegisterService(&health);
  builder.RegisterService(ledger->get());
  // The socket is created with the process umask: 0600 from the start, not chmod'ed after.
  mode_t old_mask = ::umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ::umask(old_mask);
  if (!server) return fail(Errc::io_error, "could not listen on unix:" + options.socket.string());

  health.set("warden.v1.Ledger", true);
  health.set("warden.v1.Kernel", preflight.ok);
  health.set("", preflight.ok);
  log << "warden serve: listening on unix:" << options.socket.string() << " (ledger " << options.ledger.string()
      << (options.tokens.empty() ? "; the socket's user only" : "; tokens from " + options.tokens.string()) << ")\n";
  if (!preflight.ok) log << "warden serve: sandbox preflight failed, not serving runs: " << preflight.why << "\n";
  log.flush();

  int signal = 0;
  while (::sigwait(&stop_signals, &signal) != 0) {
  }
  log << "warden serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": stopping\n";
  log.flush();
  health.shutdown();  // every service NOT_SERVING from here on, and Watch streams end
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
