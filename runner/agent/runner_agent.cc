#include "runner/agent/runner_agent.h"

#include <fleet.grpc.pb.h>

#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "common/encoding.h"
#include "common/fail_point.h"
#include "common/random_source.h"
#include "diff/diff.h"
#include "runner/agent/profile_acceptance.h"
#include "runner/check/local_runner.h"
#include "runner/check/remote_run.h"
#include "runner/environment/environment_store.h"
#include "runner/model/quorum.h"

namespace warden::agent {
namespace {

namespace fs = std::filesystem;

constexpr auto kFirstBackoff = std::chrono::seconds(1);
constexpr auto kMostBackoff = std::chrono::seconds(30);

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

}  // namespace

class RunnerAgent::Impl {
 public:
  Impl(AgentOptions options, RunnerIdentity identity)
      : options_(std::move(options)), state_(options_.state), identity_(std::move(identity)), labels_(options_.labels) {}

  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (context_) context_->TryCancel();
    cv_.notify_all();
  }

  grpc::Status run() {
    auto backoff = std::chrono::milliseconds(kFirstBackoff);
    std::mt19937_64 jitter(SystemRandomSource().next_u64());
    for (;;) {
      if (stopping()) return grpc::Status::OK;
      bool enrolled = false;
      const auto began = std::chrono::steady_clock::now();
      grpc::Status status = session(enrolled);
      if (stopping()) return grpc::Status::OK;
      if (permanent(status)) return status;
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
    client::ConnectOptions connect = options_.connect;
    connect.keepalive = true;
    auto connection = client::Connection::open(connect, std::chrono::seconds(5));
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
        enrol_message(identity_.agent_id, answer.challenge().identity(), answer.challenge().nonce()));
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
    std::cerr << "warden runner: enrolled as " << answer.enrolled().agent_id() << " with " << options_.connect.server
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
        if (message.has_environment()) session.environments.push_back(message.environment());
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
    std::deque<v1::EnvironmentBatch> environments;  // guarded by Runner::mu_
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
    if (request->environment) {
      if (Status st = ensure_environment(session, task.task_id(), *request->environment, stop); !st) {
        return std::unexpected(st.error());
      }
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

  // The environment a task's checks run in, in this host's store (EnvironmentStore's default
  // one): when it is not there, its record and manifest, then each file the store lacks, are
  // fetched from the server and installed. Nothing fetched is believed: the manifest and
  // variables must give the digest the task names, and the store hashes every file before it
  // keeps it.
  Status ensure_environment(Session& session, const std::string& task_id, const Digest& digest, const std::stop_token& stop) {
    auto store = EnvironmentStore::open(EnvironmentStore::default_dir(), SandboxHost::detect().uid);
    if (!store) return std::unexpected(store.error());
    auto held = store->find(digest);
    if (!held) return std::unexpected(held.error());
    if (*held) return {};
    auto first = ask_environment(session, task_id, {}, stop);
    if (!first) return std::unexpected(first.error());
    auto record = Environment::from_json(Json::parse(first->record_json(), nullptr, false));
    if (!record) return fail(Errc::verification_failed, "the server's environment record: " + record.error().message);
    auto manifest = TreeManifest::parse(first->manifest());
    if (!manifest) return fail(Errc::verification_failed, "the server's environment manifest: " + manifest.error().message);
    if (record->digest != digest || manifest->digest() != record->tree) {
      return fail(Errc::verification_failed, "the server sent another environment than the task's " + digest.str());
    }
    // Refused before a byte of it is fetched, not after; and no gc removes what was fetched
    // before it is installed.
    if (Status st = EnvironmentStore::check_installable(*manifest, record->env); !st) {
      return fail(Errc::verification_failed, "the server's environment: " + st.error().message);
    }
    auto fetching = store->hold_fetched_objects();
    if (!fetching) return std::unexpected(fetching.error());
    std::vector<std::string> want;
    std::set<std::string> named;
    for (const TreeEntry& e : manifest->entries) {
      if (e.type != TreeEntry::Type::file || store->object(e.sha256, e.executable())) continue;
      std::string name = e.sha256.hex() + (e.executable() ? "x" : "");
      if (named.insert(name).second) want.push_back(std::move(name));
    }
    // Each file is stored as it arrives (hashed first): a fetch cut short by the step's end
    // or a broken stream keeps what came, and the next asks only for the rest.
    uint64_t bytes = 0;
    for (size_t at = 0; at < want.size();) {
      std::vector<std::string> ask(want.begin() + static_cast<std::ptrdiff_t>(at),
                                   want.begin() + static_cast<std::ptrdiff_t>(std::min(want.size(), at + kMaxFetchObjects)));
      auto batch = ask_environment(session, task_id, ask, stop);
      if (!batch) return std::unexpected(batch.error());
      if (batch->files_size() == 0) return fail(Errc::io_error, "the server sent no environment file");
      for (const v1::EnvironmentFile& f : batch->files()) {
        if (at >= want.size() || f.name() != want[at]) return fail(Errc::verification_failed, "the server sent a file not asked for");
        auto sha256 = Digest::from_hex(std::string_view(f.name()).substr(0, 64));
        if (!sha256) return fail(Errc::verification_failed, "the server sent a file not asked for");
        if (Status st = store->add_object(*sha256, f.name().size() == 65, f.data()); !st) return st;
        bytes += f.data().size();
        ++at;
      }
    }
    Json source = {{"kind", "fetched"}, {"from", options_.connect.server}, {"record_source", record->source}};
    auto installed = store->install(*manifest, record->env, source, [&](const TreeEntry& e, const fs::path&) -> Status {
      // Only when an object stored above went away before the install (a gc meanwhile).
      return fail(Errc::io_error, "the fetched file " + e.sha256.hex() + " is no longer in the store");
    });
    if (!installed) return std::unexpected(installed.error());
    if (installed->digest != digest) return fail(Errc::verification_failed, "the fetched environment is not " + digest.str());
    std::cerr << "warden runner: environment " << digest.str() << " fetched (" << want.size() << " files, " << bytes
              << " bytes)\n";
    return {};
  }

  // Sends `ask` and takes the next answer from `queue` (a Session's) once the reader put it
  // there. `what` names the fetch in the error when the stream ends or the task stops first.
  template <typename Answer>
  Result<Answer> ask_and_await(Session& session, const v1::RunnerMessage& ask, std::deque<Answer> Session::*queue,
                               const std::stop_token& stop, std::string_view what) {
    if (!session.send(ask)) return fail(Errc::io_error, "the server went away while " + std::string(what) + " fetched");
    std::unique_lock lock(mu_);
    std::deque<Answer>& answers = session.*queue;
    cv_.wait(lock, [&] { return !answers.empty() || session.ended || stop.stop_requested(); });
    if (answers.empty()) return fail(Errc::io_error, "stopped while " + std::string(what) + " fetched");
    Answer answer = std::move(answers.front());
    answers.pop_front();
    return answer;
  }

  // One FetchEnvironment asked and its answer awaited.
  Result<v1::EnvironmentBatch> ask_environment(Session& session, const std::string& task_id, const std::vector<std::string>& files,
                                               const std::stop_token& stop) {
    v1::RunnerMessage ask;
    ask.mutable_fetch_environment()->set_task_id(task_id);
    for (const auto& f : files) ask.mutable_fetch_environment()->add_files(f);
    auto batch = ask_and_await(session, ask, &Session::environments, stop, "the environment was");
    if (batch && !batch->error().empty()) return fail(Errc::io_error, "the server refused the environment: " + batch->error());
    return batch;
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
      const size_t n = std::min<size_t>(want.size(), kMaxFetchObjects);
      std::set<std::string> asked(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n));
      for (size_t i = 0; i < n; ++i) ask.mutable_fetch()->add_ids(want[i]);
      auto batch = ask_and_await(session, ask, &Session::batches, stop, "objects were");
      if (!batch) return std::unexpected(batch.error());
      if (!batch->error().empty()) return fail(Errc::io_error, "the server refused the objects: " + batch->error());
      if (batch->objects_size() == 0) return fail(Errc::io_error, "the server sent no object");
      std::set<std::string> got;
      for (const v1::GitObject& o : batch->objects()) {
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

  // One LocalRunner per profile (and toolchain rule), kept: its preflight and base checkouts
  // serve every later task.
  Result<LocalRunner*> local_runner(const RemoteRunRequest& request) {
    auto profile = SandboxProfile::from_json(request.profile);
    if (!profile) return std::unexpected(profile.error());
    if (Status st = acceptable_profile(*profile, state_, options_.allow_network); !st) return std::unexpected(st.error());
    const std::string key = profile->digest().str() + (request.host_independent ? "/host-independent" : "") +
                            (request.environment ? "/" + request.environment->str() : "");
    if (auto it = runners_.find(key); it != runners_.end()) return it->second.get();
    RunnerOptions options;
    options.cache_dir = state_ / "cache";
    options.use_cache = false;  // as the kernel's own: a run's evidence is made for its ledger
    options.kernel_release_in_toolchain = !request.host_independent;
    options.environment = request.environment;
    auto runner = LocalRunner::create(std::move(*profile), options);
    if (!runner) return std::unexpected(runner.error());
    auto [it, fresh] = runners_.emplace(key, std::make_unique<LocalRunner>(std::move(*runner)));
    return it->second.get();
  }

  const AgentOptions options_;
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

RunnerAgent::RunnerAgent(AgentOptions options, RunnerIdentity identity)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(identity))) {}
RunnerAgent::~RunnerAgent() = default;
grpc::Status RunnerAgent::run() { return impl_->run(); }
void RunnerAgent::stop() { impl_->stop(); }

}  // namespace warden::agent
