// `warden runner --server ADDR --token FILE [--state DIR] [--id ID] [--label K=V ...]`: a
// runner that other machines start and the kernel governs (issue 16). It keeps its identity
// in its state directory (an Ed25519 key made on first start, and its agent id), enrols with
// the server over warden.v1.Runners (proto/fleet.proto) by signing the server's challenge,
// then heartbeats until SIGTERM or SIGINT. A lost server is retried with backoff (1 s
// doubling to 30 s, with jitter); an enrolment the server refuses for good (a pinned id, a
// token without the runner role) ends the runner with the server's reason.
#include <fleet.grpc.pb.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/file.h"
#include "common/random_source.h"
#include "service/runners_service.h"
#include "store/record_checks.h"
#include "tools/warden/json_lines.h"
#include "tools/warden_grpc/client_commands.h"
#include "tools/warden_grpc/client_interrupt.h"

namespace warden::grpc_client {
namespace {

namespace fs = std::filesystem;

constexpr auto kFirstBackoff = std::chrono::seconds(1);
constexpr auto kMostBackoff = std::chrono::seconds(30);

struct RunnerArgs {
  ConnectOptions connect;
  std::string state;
  std::string id;
  std::vector<std::string> labels;  // K=V
};

// What the runner keeps between starts.
struct RunnerIdentity {
  std::string agent_id;
  std::optional<Ed25519PrivateKey> key;
};

std::string default_state_dir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return std::string(xdg) + "/warden/runner";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/state/warden/runner";
  return "";
}

Status make_private_dir(const fs::path& dir) {
  std::error_code ec;
  const bool fresh = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating the runner's state directory " + dir.string() + ": " + ec.message());
  if (fresh && ::chmod(dir.c_str(), 0700) != 0) return std::unexpected(errno_error("chmod " + dir.string(), errno));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + dir.string(), errno));
  // Its key proves who the runner is: a directory others can read or write may have given
  // it away, so it is refused, not quietly tightened.
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument, "--state " + dir.string() + ": must be yours and private (chmod 0700)");
  }
  return {};
}

// One runner per state directory: two sharing a key and an id would take the agent from each
// other on every reconnect. Held (by the returned descriptor) for the process's life.
Result<UniqueFd> lock_state_dir(const fs::path& dir) {
  const fs::path path = dir / "runner.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return std::unexpected(errno_error("open " + path.string(), errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return fail(Errc::already_exists, "another runner uses the state directory " + dir.string());
    return std::unexpected(errno_error("flock " + path.string(), errno));
  }
  return fd;
}

// An id for a runner that was given none: the host's name (as an agent id may spell it)
// and 32 random bits, so runners sharing a host name stay apart.
std::string fresh_agent_id() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string id;
  for (const char* p = host; *p && id.size() < 64; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    id += ok ? c : '-';
  }
  if (id.empty()) id = "runner";
  SystemRandomSource random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(random.next_u64()));
  return id + suffix;
}

Result<RunnerIdentity> load_identity(const fs::path& dir, const std::string& given_id) {
  if (Status st = make_private_dir(dir); !st) return std::unexpected(st.error());
  RunnerIdentity identity;
  const fs::path key_file = dir / "runner.key";
  std::error_code ec;
  if (!fs::exists(key_file, ec)) {
    auto key = Ed25519PrivateKey::generate();
    if (!key) return std::unexpected(key.error());
    if (Status st = create_file_atomic(key_file, to_hex(key->seed()) + "\n", 0600); !st) return std::unexpected(st.error());
  }
  // The key is the runner's identity: only a regular file of ours that nobody else can read.
  struct stat st;
  if (::lstat(key_file.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + key_file.string(), errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return fail(Errc::invalid_argument, key_file.string() + ": not a regular file of yours (a link is refused)");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument, key_file.string() + ": others may read the runner's key; it may have leaked: "
                                                            "remove it to make a new one, then forget the runner's id");
  }
  auto text = read_file(key_file, 4096);
  if (!text) return std::unexpected(text.error());
  std::string hex = *text;
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.pop_back();
  auto seed = from_hex(hex);
  if (!seed || seed->size() != 32) return fail(Errc::invalid_argument, key_file.string() + ": not a runner key (64 hex digits)");
  auto key = Ed25519PrivateKey::from_seed(*seed);
  if (!key) return std::unexpected(key.error());
  identity.key.emplace(std::move(*key));

  const fs::path id_file = dir / "runner.id";
  if (!given_id.empty()) {
    identity.agent_id = given_id;
  } else if (fs::exists(id_file, ec)) {
    auto stored = read_file(id_file, 4096);
    if (!stored) return std::unexpected(stored.error());
    identity.agent_id = *stored;
    while (!identity.agent_id.empty() && identity.agent_id.back() == '\n') identity.agent_id.pop_back();
  } else {
    identity.agent_id = fresh_agent_id();
    if (Status st = create_file_atomic(id_file, identity.agent_id + "\n", 0600); !st) return std::unexpected(st.error());
  }
  if (auto ok = store::check_id(identity.agent_id, "the runner's id"); !ok) return std::unexpected(ok.error());
  return identity;
}

// Statuses that another try cannot change: the runner stops and says why.
bool permanent(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
      return true;
    default:
      return false;
  }
}

class Runner {
 public:
  Runner(const RunnerArgs& args, RunnerIdentity identity, std::map<std::string, std::string> labels)
      : args_(args), identity_(std::move(identity)), labels_(std::move(labels)) {}

  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (context_) context_->TryCancel();
    cv_.notify_all();
  }

  // Serves until stopped (0) or refused for good (the status's exit code).
  int run() {
    auto backoff = std::chrono::milliseconds(kFirstBackoff);
    std::mt19937_64 jitter(SystemRandomSource().next_u64());
    for (;;) {
      if (stopping()) return kOk;
      bool enrolled = false;
      const auto began = std::chrono::steady_clock::now();
      grpc::Status status = session(enrolled);
      if (stopping()) return kOk;
      if (permanent(status)) {
        std::cerr << "warden runner: the server refused " << identity_.agent_id << "\n";
        return report_status(status, false);
      }
      // A session that held for a while starts the backoff over; one cut at once (another
      // process with this identity, a server refusing it after enrolling) keeps it growing.
      if (enrolled && std::chrono::steady_clock::now() - began > kMostBackoff) backoff = kFirstBackoff;
      const auto wait = backoff / 2 + std::chrono::milliseconds(jitter() % static_cast<uint64_t>(backoff.count() / 2 + 1));
      std::cerr << "warden runner: " << (status.error_message().empty() ? "the server went away" : status.error_message())
                << "; trying again in " << wait.count() << " ms\n";
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, wait, [&] { return stopping_; });
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMostBackoff);
    }
  }

 private:
  bool stopping() {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  // One connection: enrol, then heartbeat until the stream ends.
  grpc::Status session(bool& enrolled) {
    ConnectOptions connect = args_.connect;
    connect.keepalive = true;
    auto connection = Connection::open(connect, std::chrono::seconds(5));
    if (!connection) {
      // A bad address or token file will not get better; a server not up yet may.
      const bool ours = connection.error().code == Errc::invalid_argument;
      return grpc::Status(ours ? grpc::StatusCode::INVALID_ARGUMENT : grpc::StatusCode::UNAVAILABLE, connection.error().message);
    }
    auto stub = v1::Runners::NewStub(connection->channel());
    grpc::ClientContext context;
    connection->prepare(context, std::nullopt);
    {
      std::lock_guard lock(mu_);
      if (stopping_) return grpc::Status::CANCELLED;
      context_ = &context;
    }
    grpc::Status status = converse(*stub, context, enrolled);
    std::lock_guard lock(mu_);
    context_ = nullptr;
    return status;
  }

  grpc::Status converse(v1::Runners::Stub& stub, grpc::ClientContext& context, bool& enrolled) {
    auto stream = stub.Work(&context);
    v1::RunnerMessage enrol;
    enrol.mutable_enrol()->set_agent_id(identity_.agent_id);
    for (const auto& [k, v] : labels_) (*enrol.mutable_enrol()->mutable_labels())[k] = v;
    const Ed25519PublicKey& pub = identity_.key->public_key();
    enrol.mutable_enrol()->set_public_key(std::string(pub.begin(), pub.end()));
    v1::ServerMessage answer;
    if (!stream->Write(enrol) || !stream->Read(&answer)) return stream->Finish();
    if (!answer.has_challenge()) {
      context.TryCancel();
      (void)stream->Finish();
      return grpc::Status(grpc::StatusCode::INTERNAL, "the server answered enrol without a challenge");
    }
    auto signature = identity_.key->sign(
        service::enrol_message(identity_.agent_id, answer.challenge().identity(), answer.challenge().nonce()));
    if (!signature) {
      context.TryCancel();
      (void)stream->Finish();
      return grpc::Status(grpc::StatusCode::INTERNAL, "signing the challenge: " + signature.error().message);
    }
    v1::RunnerMessage proof;
    proof.mutable_proof()->set_signature(std::string(signature->begin(), signature->end()));
    if (!stream->Write(proof) || !stream->Read(&answer)) return stream->Finish();
    if (!answer.has_enrolled()) {
      context.TryCancel();
      (void)stream->Finish();
      return grpc::Status(grpc::StatusCode::INTERNAL, "the server answered the proof without enrolling");
    }
    enrolled = true;
    const auto interval = std::chrono::milliseconds(std::max<int64_t>(answer.enrolled().heartbeat_interval_ms(), 10));
    std::cerr << "warden runner: enrolled as " << answer.enrolled().agent_id() << " with " << args_.connect.server
              << " (heartbeat every " << interval.count() << " ms)\n";

    // The server may end the stream at any moment (a newer enrolment, an operator's forget,
    // its own stop): a reader notices while this thread heartbeats.
    std::atomic<bool> ended{false};
    std::thread reader([&] {
      v1::ServerMessage message;
      while (stream->Read(&message)) {
      }
      ended = true;
      std::lock_guard lock(mu_);
      cv_.notify_all();
    });
    v1::RunnerMessage beat;
    beat.mutable_heartbeat();
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, interval, [&] { return stopping_ || ended.load(); });
        if (stopping_ || ended) break;
      }
      if (!stream->Write(beat)) break;
    }
    if (!ended) stream->WritesDone();
    if (stopping()) context.TryCancel();
    reader.join();
    return stream->Finish();
  }

  const RunnerArgs& args_;
  RunnerIdentity identity_;
  std::map<std::string, std::string> labels_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                      // guarded by mu_
  grpc::ClientContext* context_ = nullptr;     // guarded by mu_: the live session's call
};

int run_runner(const RunnerArgs& a) {
  std::map<std::string, std::string> labels;
  for (const std::string& l : a.labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return cli::report_error(Error{Errc::invalid_argument, "--label " + l + ": expected KEY=VALUE"}, false, kUsage);
    labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  const std::string state = a.state.empty() ? default_state_dir() : a.state;
  if (state.empty()) return cli::report_error(Error{Errc::invalid_argument, "--state: no HOME to keep the runner's key under; name a directory"}, false, kUsage);
  if (Status st = make_private_dir(state); !st) return cli::report_error(st.error(), false);
  auto lock = lock_state_dir(state);
  if (!lock) return cli::report_error(lock.error(), false);
  auto identity = load_identity(state, a.id);
  if (!identity) return cli::report_error(identity.error(), false);
  InterruptToCancel interrupt;  // before any gRPC thread starts
  Runner runner(a, std::move(*identity), std::move(labels));
  interrupt.on_interrupt([&runner] { runner.stop(); });
  return runner.run();
}

}  // namespace

void add_runner_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunnerArgs>();
  auto* cmd = app.add_subcommand(
      "runner", "Run a runner for a `warden serve` (possibly on another machine): it enrols with its own Ed25519 key "
                "(kept in --state), heartbeats, and reconnects when the server goes away; SIGTERM or SIGINT stop it");
  add_connect_options(*cmd, args->connect);
  cmd->add_option("--state", args->state,
                  "Directory for the runner's key and id (created 0700; default $XDG_STATE_HOME/warden/runner or "
                  "~/.local/state/warden/runner)");
  cmd->add_option("--id", args->id,
                  "The runner's agent id, 1-128 of [A-Za-z0-9._:-] (default: made once from the host name and kept in --state)");
  cmd->add_option("--label", args->labels, "A label tasks may ask for, KEY=VALUE (repeatable)");
  cmd->callback([&action, args] { action = [args] { return guarded(false, [&] { return run_runner(*args); }); }; });
}

}  // namespace warden::grpc_client
