// `warden runner --server ADDR --token FILE [--state DIR] [--id ID] [--label K=V ...]`: a
// runner that other machines start and the kernel governs (issue 16). It keeps its identity
// in its state directory (an Ed25519 key made on first start, and its agent id), enrols with
// the server over warden.v1.Runners (proto/fleet.proto) by signing the server's challenge,
// then heartbeats until SIGTERM or SIGINT. A lost server is retried with backoff (1 s
// doubling to 30 s, with jitter); an enrolment the server refuses for good (a pinned id, a
// token without the runner role) ends the runner with the server's reason.
//
// Check tasks (runner/check/remote_run.h): the runner fetches the git objects of the task's trees it
// lacks into STATE/objects.git (each checked against its id as it is stored), runs the checks
// with a LocalRunner in its own bubblewrap sandbox (its own preflight, base checkouts under
// STATE/cache), signs the result with its key over the claim's nonce, and answers; a task it
// cannot run is reported as failed. One task at a time, on a worker thread, while the main
// thread keeps heartbeating; a stream that ends stops the task's checks. The server picks
// each task's sandbox profile, so the runner refuses one with the network on (unless started
// with --allow-network) or one that binds or reads its state directory, and any tree naming
// "..", ".git" or a path with "/" (a hand-made tree that a checkout would write outside its
// directory).
#include <fleet.grpc.pb.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <set>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fail_point.h"
#include "common/file.h"
#include "common/random_source.h"
#include "diff/diff.h"
#include "runner/check/local_runner.h"
#include "runner/check/remote_run.h"
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
  bool allow_network = false;
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
  Runner(const RunnerArgs& args, fs::path state, RunnerIdentity identity, std::map<std::string, std::string> labels)
      : args_(args), state_(std::move(state)), identity_(std::move(identity)), labels_(std::move(labels)) {}

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
    fail_point("runner.enrolled");
    const auto interval = std::chrono::milliseconds(std::max<int64_t>(answer.enrolled().heartbeat_interval_ms(), 10));
    std::cerr << "warden runner: enrolled as " << answer.enrolled().agent_id() << " with " << args_.connect.server
              << " (heartbeat every " << interval.count() << " ms)\n";

    // The server may end the stream at any moment (a newer enrolment, an operator's forget,
    // its own stop): a reader notices while this thread heartbeats. It also takes the tasks
    // and object batches the worker waits for.
    Session session(*stream);
    std::thread reader([&] {
      v1::ServerMessage message;
      while (stream->Read(&message)) {
        std::lock_guard lock(mu_);
        if (message.has_task()) session.tasks.push_back(message.task());
        if (message.has_objects()) session.batches.push_back(message.objects());
        cv_.notify_all();
      }
      std::lock_guard lock(mu_);
      session.ended = true;
      cv_.notify_all();
    });
    std::stop_source stop_work;
    std::thread worker([&] { work(session, stop_work.get_token()); });
    v1::RunnerMessage beat;
    beat.mutable_heartbeat();
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, interval, [&] { return stopping_ || session.ended; });
        if (stopping_ || session.ended) break;
      }
      if (!session.send(beat)) break;
    }
    // The task in hand stops (its checks are killed): the server gives it to another runner.
    stop_work.request_stop();
    {
      std::lock_guard lock(mu_);
      cv_.notify_all();
    }
    worker.join();
    bool ended = false;
    {
      std::lock_guard lock(mu_);
      ended = session.ended;
    }
    if (!ended) {
      std::lock_guard lock(session.write_mu);
      stream->WritesDone();
    }
    if (stopping()) context.TryCancel();
    reader.join();
    return stream->Finish();
  }

  using Stream = grpc::ClientReaderWriter<v1::RunnerMessage, v1::ServerMessage>;

  // One enrolled stream's traffic between the reader, the worker and the heartbeat.
  struct Session {
    explicit Session(Stream& s) : stream(s) {}
    Stream& stream;
    std::mutex write_mu;                  // one Write at a time
    std::deque<v1::CheckTask> tasks;      // guarded by Runner::mu_
    std::deque<v1::ObjectBatch> batches;  // guarded by Runner::mu_
    bool ended = false;                   // guarded by Runner::mu_

    bool send(const v1::RunnerMessage& message) {
      std::lock_guard lock(write_mu);
      return stream.Write(message);
    }
  };

  // The worker: one task at a time until the session ends or `stop`.
  void work(Session& session, std::stop_token stop) {
    for (;;) {
      v1::CheckTask task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !session.tasks.empty() || session.ended || stop.stop_requested(); });
        if (session.tasks.empty()) return;
        task = std::move(session.tasks.front());
        session.tasks.pop_front();
      }
      std::cerr << "warden runner: task " << task.task_id() << " (attempt " << task.attempt() << ")\n";
      v1::RunnerMessage answer;
      auto done = run_task(session, task, stop);
      if (stop.stop_requested()) return;  // the server takes a stopped task back when the stream ends
      if (!done) {
        std::cerr << "warden runner: task " << task.task_id() << " failed: " << done.error().message << "\n";
        answer.mutable_failed()->set_task_id(task.task_id());
        answer.mutable_failed()->set_claim_token(task.claim_token());
        answer.mutable_failed()->set_reason(done.error().message);
      } else {
        answer = std::move(*done);
      }
      if (!session.send(answer)) return;
      fail_point(done ? "runner.result_sent" : "runner.failure_sent");
    }
  }

  // The task's result, signed, as the message to send.
  Result<v1::RunnerMessage> run_task(Session& session, const v1::CheckTask& task, const std::stop_token& stop) {
    auto json = parse_json(task.request_json(), "the task's request");
    if (!json) return std::unexpected(json.error());
    auto request = RemoteRunRequest::from_json(*json);
    if (!request) return std::unexpected(request.error());
    auto repo = objects();
    if (!repo) return std::unexpected(repo.error());
    if (Status st = fetch(session, **repo, task.task_id(), {request->base_tree, request->tree}, stop); !st) {
      return std::unexpected(st.error());
    }
    std::optional<Diff> diff;
    if (request->diff) {
      auto parsed = Diff::from_json(*request->diff);
      if (!parsed) return fail(Errc::invalid_argument, "the task's diff: " + parsed.error().message());
      diff = std::move(*parsed);
    }
    auto runner = local_runner(*request);
    if (!runner) return std::unexpected(runner.error());
    RunRequest run;
    run.base_tree = *ObjectId::parse(request->base_tree);
    run.tree = *ObjectId::parse(request->tree);
    run.diff = diff ? &*diff : nullptr;
    run.checks = request->checks;
    run.stop = stop;
    run.reuse = request->reuse;
    fail_point("runner.sandbox_start");
    auto outcome = (*runner)->run(**repo, run);
    fail_point("runner.checks_ran");
    if (!outcome) return fail(Errc::io_error, outcome.error().message());
    const std::string nonce = to_hex(task.nonce());
    auto signature = identity_.key->sign(
        attestation_message(identity_.agent_id, task.task_id(), nonce, outcome->result.deterministic_digest()));
    if (!signature) return std::unexpected(signature.error());
    v1::RunnerMessage message;
    v1::TaskResult* result = message.mutable_result();
    result->set_task_id(task.task_id());
    result->set_claim_token(task.claim_token());
    result->set_run_result_json(outcome->result.to_json().dump());
    for (const auto& [digest, bytes] : outcome->bodies) (*result->mutable_bodies())[digest.str()] = bytes;
    result->set_signature(std::string(signature->begin(), signature->end()));
    return message;
  }

  // The runner's own object store: git objects only, fetched from the server per task.
  Result<GitRepo*> objects() {
    if (repo_) return &*repo_;
    const fs::path dir = state_ / "objects.git";
    std::error_code ec;
    auto repo = fs::exists(dir / "HEAD", ec) ? GitRepo::open(dir) : GitRepo::init(dir, /*bare=*/true);
    if (!repo) return fail(Errc::io_error, "the runner's object store " + dir.string() + ": " + repo.error().message());
    repo_.emplace(std::move(*repo));
    return &*repo_;
  }

  // Makes every object of `roots` present: trees present here are walked for what they lack
  // (a tree fetched before its entries, by a task that stopped, is completed), missing ones
  // are fetched in batches. Each object is stored under the id git computes from its bytes:
  // one that is not the id asked for is refused.
  Status fetch(Session& session, GitRepo& repo, const std::string& task_id, std::vector<std::string> roots,
               const std::stop_token& stop) {
    std::deque<ObjectId> walk;
    std::vector<std::string> want;
    std::set<std::string> seen;
    std::vector<std::string> trees;  // every tree walked: complete once this returns ok
    auto visit = [&](const ObjectId& id, bool is_tree) {
      const std::string hex = id.hex();
      if (!seen.insert(hex).second) return;
      // A tree this process saw complete (all it holds stored and its names checked) is
      // not walked again: a task on a large repository walks only what changed.
      if (is_tree && complete_trees_.contains(hex)) return;
      if (is_tree) trees.push_back(hex);
      if (!repo.has_object(id)) want.push_back(hex);
      else if (is_tree) walk.push_back(id);
    };
    for (const std::string& root : roots) {
      auto id = ObjectId::parse(root);
      if (!id) return fail(Errc::invalid_argument, id.error().message());
      visit(*id, true);
    }
    for (;;) {
      while (!walk.empty()) {
        auto children = repo.tree_children(walk.front());
        walk.pop_front();
        if (!children) return fail(Errc::io_error, children.error().message());
        for (const TreeChild& c : *children) {
          // A hand-made tree may name "..", "/etc/x" or ".git": written out, it would leave
          // the workspace. None is stored past this point.
          if (!safe_entry_name(c.name)) {
            return fail(Errc::verification_failed, "the server sent a tree with an entry named \"" + c.name +
                                                       "\", which no checkout may write");
          }
          visit(c.id, c.is_tree);
        }
      }
      if (want.empty()) {
        complete_trees_.insert(trees.begin(), trees.end());
        return {};
      }
      v1::RunnerMessage ask;
      ask.mutable_fetch()->set_task_id(task_id);
      const size_t n = std::min<size_t>(want.size(), service::RemoteRunners::kMaxFetchIds);
      std::set<std::string> asked(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n));
      for (size_t i = 0; i < n; ++i) ask.mutable_fetch()->add_ids(want[i]);
      if (!session.send(ask)) return fail(Errc::io_error, "the server went away while objects were fetched");
      v1::ObjectBatch batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !session.batches.empty() || session.ended || stop.stop_requested(); });
        if (session.batches.empty()) return fail(Errc::io_error, "stopped while objects were fetched");
        batch = std::move(session.batches.front());
        session.batches.pop_front();
      }
      if (!batch.error().empty()) return fail(Errc::io_error, "the server refused the objects: " + batch.error());
      if (batch.objects_size() == 0) return fail(Errc::io_error, "the server sent no object");
      std::set<std::string> got;
      for (const v1::GitObject& o : batch.objects()) {
        if (!asked.contains(o.id()) || got.contains(o.id())) return fail(Errc::verification_failed, "the server sent object " + o.id() + ", which was not asked for");
        auto id = repo.write_object(o.type(), o.data());
        if (!id) return fail(Errc::io_error, id.error().message());
        if (id->hex() != o.id()) return fail(Errc::verification_failed, "the server sent bytes under " + o.id() + " that are object " + id->hex());
        got.insert(o.id());
        if (o.type() == "tree") walk.push_back(*id);
      }
      // A tree stored, its entries not yet: the store is left as a kill mid-fetch leaves it.
      if (!walk.empty()) fail_point("runner.fetch.tree_stored");
      std::erase_if(want, [&](const std::string& id) { return got.contains(id); });
    }
  }

  // The server chooses the profile; the runner keeps its own secrets out of it: no network
  // unless the runner allows it, and no host path that is, holds or lies in its state
  // directory (its key) bound into the sandbox or read for the toolchain.
  Status acceptable(const SandboxProfile& profile) {
    if (profile.network && !args_.allow_network) {
      return fail(Errc::failed_precondition, "the task's sandbox profile " + profile.name +
                                                 " has the network on; this runner was not started with --allow-network");
    }
    std::error_code ec;
    const fs::path state = fs::weakly_canonical(state_, ec);
    auto touches = [&](const std::string& host) {
      const fs::path p = fs::weakly_canonical(host, ec);
      auto within = [](const fs::path& inner, const fs::path& outer) {
        auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
        return o == outer.end();
      };
      return within(state, p) || within(p, state);
    };
    for (const BindMount& b : profile.ro_binds) {
      if (touches(b.src)) return fail(Errc::failed_precondition, "the task's sandbox profile binds " + b.src + ", which holds the runner's state");
    }
    for (const std::string& t : profile.toolchain) {
      if (touches(t)) return fail(Errc::failed_precondition, "the task's sandbox profile reads " + t + ", in the runner's state");
    }
    return {};
  }

  // One LocalRunner per profile (and toolchain rule), kept: its preflight and base checkouts
  // serve every later task.
  Result<LocalRunner*> local_runner(const RemoteRunRequest& request) {
    auto profile = SandboxProfile::from_json(request.profile);
    if (!profile) return std::unexpected(profile.error());
    if (Status st = acceptable(*profile); !st) return std::unexpected(st.error());
    const std::string key = profile->digest().str() + (request.host_independent ? "/host-independent" : "");
    if (auto it = runners_.find(key); it != runners_.end()) return it->second.get();
    RunnerOptions options;
    options.cache_dir = state_ / "cache";
    options.use_cache = false;  // as the kernel's own: a run's evidence is made for its ledger
    options.kernel_release_in_toolchain = !request.host_independent;
    auto runner = LocalRunner::create(std::move(*profile), options);
    if (!runner) return std::unexpected(runner.error());
    auto [it, fresh] = runners_.emplace(key, std::make_unique<LocalRunner>(std::move(*runner)));
    return it->second.get();
  }

  const RunnerArgs& args_;
  const fs::path state_;
  RunnerIdentity identity_;
  std::map<std::string, std::string> labels_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                      // guarded by mu_
  grpc::ClientContext* context_ = nullptr;     // guarded by mu_: the live session's call
  // The worker's alone (one task at a time, across sessions).
  std::optional<GitRepo> repo_;
  std::set<std::string> complete_trees_;
  std::map<std::string, std::unique_ptr<LocalRunner>> runners_;
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
  Runner runner(a, state, std::move(*identity), std::move(labels));
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
  cmd->add_flag("--allow-network", args->allow_network,
                "Run tasks whose sandbox profile has the network on (refused otherwise: the server picks the profile)");
  cmd->callback([&action, args] { action = [args] { return guarded(false, [&] { return run_runner(*args); }); }; });
}

}  // namespace warden::grpc_client
