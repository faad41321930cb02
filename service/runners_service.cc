#include "service/runners_service.h"

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <thread>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "runner/model/quorum.h"
#include "service/grpc_status.h"
#include "service/runner_requests.h"
#include "store/record_checks.h"

namespace warden::service {
namespace {

// How long a stream may take from opening to a verified proof: a caller that opens streams
// and never enrols holds a server thread only this long.
constexpr auto kEnrolWait = std::chrono::seconds(10);
constexpr size_t kNonceBytes = 32;
constexpr size_t kMaxAgentsPerOwner = 1024;

grpc::Status invalid(const std::string& what) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, what); }

// Cancels the call unless fed within `wait` of the last feed: ends a stream whose peer
// stalls mid-handshake, or stops heartbeating while keeping its connection open (a server
// thread is held per stream; a silent peer must not keep one forever).
class StreamWatchdog {
 public:
  StreamWatchdog(grpc::ServerContext* context, std::chrono::milliseconds wait)
      : wait_(wait), deadline_(std::chrono::steady_clock::now() + wait), thread_([this, context] {
          std::unique_lock lock(mu_);
          while (!done_) {
            if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && !done_ &&
                std::chrono::steady_clock::now() >= deadline_) {
              fired_ = true;
              context->TryCancel();
              return;
            }
          }
        }) {}
  ~StreamWatchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
    thread_.join();
  }
  // The peer is alive: the next `wait` (or the new one) starts now.
  void feed(std::optional<std::chrono::milliseconds> wait = std::nullopt) {
    std::lock_guard lock(mu_);
    if (wait) wait_ = *wait;
    deadline_ = std::chrono::steady_clock::now() + wait_;
  }
  // It cancelled the call: the peer was silent past its wait.
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }
  std::chrono::milliseconds wait() {
    std::lock_guard lock(mu_);
    return wait_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::milliseconds wait_;                   // guarded by mu_
  std::chrono::steady_clock::time_point deadline_;  // guarded by mu_
  bool done_ = false;                                // guarded by mu_
  bool fired_ = false;                               // guarded by mu_
  std::thread thread_;  // last: started once the fields it reads exist
};

// A session in RunnerSessions for as long as it lives: left on every way out of the handler,
// so the context pointer the registry holds never outlives the call.
class SessionGuard {
 public:
  SessionGuard(RunnerSessions& sessions, std::string agent_id, uint64_t number)
      : sessions_(sessions), agent_id_(std::move(agent_id)), number_(number) {}
  ~SessionGuard() { leave(); }
  // True when this was still the agent's current session.
  bool leave() {
    if (left_) return false;
    left_ = true;
    return sessions_.leave(agent_id_, number_);
  }
  uint64_t number() const { return number_; }

 private:
  RunnerSessions& sessions_;
  std::string agent_id_;
  uint64_t number_;
  bool left_ = false;
};

// Label values are shown on operators' terminals: no control characters.
bool printable(const std::string& text) {
  return std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

grpc::Status RunnersService::Work(grpc::ServerContext* context,
                                  grpc::ServerReaderWriter<v1::ServerMessage, v1::RunnerMessage>* stream) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::runner, denied);
  if (!identity) return denied;
  auto held = streams_.acquire(identity->name);
  if (!held) return too_many_streams(identity->name, streams_.per_caller());

  StreamWatchdog watchdog(context, kEnrolWait);
  v1::RunnerMessage first;
  if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "the runner left before enrolling");
  if (!first.has_enrol()) return invalid("the first message must be enrol");
  const v1::Enrol& enrol = first.enrol();
  store::AgentRecord shape;
  shape.id = enrol.agent_id();
  shape.role = "runner";
  shape.state = "idle";
  if (enrol.labels_size() > static_cast<int>(store::kMaxLabels)) {
    return invalid("enrol.labels: more than " + std::to_string(store::kMaxLabels));
  }
  for (const auto& [k, v] : enrol.labels()) {
    if (!printable(v)) return invalid("enrol.labels." + k + ": control characters");
    shape.labels[k] = v;
  }
  if (auto ok = store::check_agent_record(shape); !ok) return invalid("enrol: " + ok.error().message);
  if (enrol.public_key().size() != sizeof(Ed25519PublicKey)) {
    return invalid("enrol.public_key: " + std::to_string(enrol.public_key().size()) +
                   " bytes; an Ed25519 public key is 32");
  }
  Ed25519PublicKey key{};
  std::copy(enrol.public_key().begin(), enrol.public_key().end(), key.begin());
  if (ed25519_small_order(key)) {
    return invalid("enrol.public_key: a key of small order, under which signatures nobody made verify; generate one");
  }

  std::string nonce(kNonceBytes, '\0');
  {
    std::lock_guard lock(random_mu_);
    for (size_t i = 0; i < kNonceBytes; i += 8) {
      uint64_t word = random_.next_u64();
      for (size_t j = 0; j < 8; ++j) nonce[i + j] = static_cast<char>(word >> (8 * j));
    }
  }
  v1::ServerMessage challenge;
  challenge.mutable_challenge()->set_nonce(nonce);
  challenge.mutable_challenge()->set_identity(identity->name);
  if (!stream->Write(challenge)) return grpc::Status(grpc::StatusCode::CANCELLED, "the runner left before its challenge");
  v1::RunnerMessage proof;
  if (!stream->Read(&proof)) return grpc::Status(grpc::StatusCode::CANCELLED, "the runner left before its proof");
  if (!proof.has_proof()) return invalid("the second message must be proof");
  if (!ed25519_verify(key, enrol_message(enrol.agent_id(), identity->name, nonce), proof.proof().signature())) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "enrol proof: not a signature of the challenge by the key enrol named");
  }

  supervisor::AgentSpec spec{.id = enrol.agent_id(), .role = "runner", .labels = shape.labels,
                             .owner = identity->name, .key = to_hex(std::string_view(enrol.public_key())),
                             .self_restarting = true};
  auto refused = [](const Error& error) {
    if (error.code == Errc::verification_failed) return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, error.message);
    return to_status(error);
  };
  // The pins first, so a caller that may not take the agent over cannot end its stream
  // either; register_agent checks them again under its compare-and-set.
  auto existing = fleet_.supervisor().agent(spec.id);
  if (!existing) return to_status(existing.error());
  if (*existing && (((*existing)->owner.size() && (*existing)->owner != spec.owner) ||
                    ((*existing)->key.size() && (*existing)->key != spec.key))) {
    return refused(Error{Errc::verification_failed, "agent " + spec.id + " is enrolled by another identity or key; an "
                                                    "operator must forget it first (warden agents forget " + spec.id + ")"});
  }
  // A caller may hold only so many agents: enrolling ids without end would grow the store
  // and every pass of the supervisor's loop.
  if (!*existing) {
    auto all = fleet_.supervisor().agents();
    if (!all) return to_status(all.error());
    const auto owned = std::count_if(all->begin(), all->end(), [&](const auto& v) { return v.owner == identity->name; });
    if (static_cast<size_t>(owned) >= kMaxAgentsPerOwner) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          identity->name + " holds " + std::to_string(owned) + " agents already, the most one identity "
                                           "may; forget some (warden agents forget ID)");
    }
  }
  // This stream speaks for the agent from here on (an older one, of a runner that
  // reconnected, is cancelled), before the registration: the older stream's end then cannot
  // fail the agent this one registers.
  const uint64_t number = fleet_.sessions().enter(spec.id, context);
  if (number == 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is stopping");
  SessionGuard session(fleet_.sessions(), spec.id, number);
  // Its mailbox before its registration: a task assigned the moment it is idle finds it.
  Mailbox mailbox;
  mailbox.agent_id = spec.id;
  mailbox.owner = spec.owner;
  mailbox.key = spec.key;
  mailbox.context = context;
  work_.attach(mailbox);
  struct Detach {
    RemoteRunners& work;
    Mailbox& mailbox;
    ~Detach() { work.detach(mailbox); }
  } detach{work_, mailbox};
  auto registered = fleet_.supervisor().register_agent(spec);
  if (!registered) return refused(registered.error());
  fleet_.wake();  // an idle runner: the next tick may give it a task
  const int64_t interval = fleet_.supervisor().config().heartbeat_interval_ms;
  // Silent for two stale bounds (it is failed after one): the stream is ended.
  watchdog.feed(std::chrono::milliseconds(2 * fleet_.supervisor().stale_after_ms() + 1000));
  v1::ServerMessage enrolled;
  enrolled.mutable_enrolled()->set_agent_id(spec.id);
  enrolled.mutable_enrolled()->set_heartbeat_interval_ms(interval);
  grpc::Status status = grpc::Status::OK;
  std::string why = "the runner's stream ended";
  std::atomic<bool> write_failed{false};
  if (stream->Write(enrolled)) {
    // From here on only the writer writes: tasks and object batches, as they come.
    std::thread writer([&] {
      v1::ServerMessage out;
      while (work_.next(mailbox, out)) {
        if (!stream->Write(out)) {
          write_failed = true;
          context->TryCancel();
          break;
        }
      }
    });
    struct JoinWriter {
      RemoteRunners& work;
      Mailbox& mailbox;
      std::thread& writer;
      ~JoinWriter() {
        work.detach(mailbox);
        writer.join();
      }
    } join_writer{work_, mailbox, writer};
    // Declared after the writer's join: its destructor handles what is queued while the
    // mailbox is still attached and the writer still sends.
    RunnerRequests requests(
        [&](const v1::RunnerMessage& m) {
          if (m.has_fetch_environment()) work_.fetch_environment(mailbox, m.fetch_environment());
          else if (m.has_fetch()) work_.fetch(mailbox, m.fetch());
          else if (m.has_result()) work_.complete(mailbox, m.result());
          else if (m.has_failed()) work_.failed(mailbox, m.failed());
        },
        [&](const std::string& why) { work_.cut_off(mailbox, why); });
    v1::RunnerMessage message;
    while (stream->Read(&message)) {
      if (message.has_heartbeat()) {
        // A token revoked since the stream opened ends it (the tokens file is re-read when
        // it changes; this costs a stat and a hash per heartbeat).
        grpc::Status revoked;
        if (!tokens_.authorize(*context, Role::runner, revoked)) {
          why = "the runner's token is no longer accepted";
          status = revoked;
          break;
        }
        watchdog.feed();
        // Only for this stream's registration: a runner that re-enrolled at another server
        // sharing the store, or an id forgotten (and perhaps enrolled by another runner),
        // ends this stream instead of keeping someone else's record alive. A store that fails
        // a heartbeat otherwise is the store's problem, not the runner's: the supervisor's
        // loop reports it as readiness; the runner keeps its stream.
        Status beat = fleet_.supervisor().heartbeat(spec.id, registered->epoch);
        if (!beat && (beat.error().code == Errc::failed_precondition || beat.error().code == Errc::not_found)) {
          why = "";
          status = grpc::Status(grpc::StatusCode::ABORTED, beat.error().message + ": this stream no longer speaks for it");
          break;
        }
        work_.renew(mailbox);
        continue;
      }
      if (message.has_fetch_environment() || message.has_fetch() || message.has_result() || message.has_failed()) {
        requests.push(std::move(message));
        continue;
      }
      why = "the runner sent " + std::string(message.has_enrol() ? "enrol" : message.has_proof() ? "proof" : "an empty message") +
            " after enrolling";
      status = invalid(why + "; an enrolled runner sends heartbeats, fetches and task answers only");
      break;
    }
  }
  // The cause that happened, not a list of those that might have: this server cut the stream
  // (and says why), or the runner's end or the network did.
  if (context->IsCancelled() && status.ok()) {
    const std::string cut = fleet_.sessions().cut_reason(session.number());
    if (!cut.empty()) why = cut;
    else if (watchdog.fired()) why = "it was silent for " + std::to_string(watchdog.wait().count()) + " ms";
    else if (const std::string own = work_.cut_reason(mailbox); !own.empty()) why = own;
    else if (write_failed) why = "sending to it failed (its connection broke)";
    else why = "it disconnected (its connection closed or was reset)";
  } else {
    (void)fleet_.sessions().cut_reason(session.number());
  }
  // Only the agent's current stream fails it: one superseded by a newer enrolment (the
  // runner reconnected) or forgotten by an operator leaves the agent as it is. The runner is
  // gone, so it is down at once (not failed again when its heartbeats go stale).
  if (session.leave() && !why.empty()) (void)fleet_.supervisor().fail_agent(spec.id, why, /*gone=*/true, registered->epoch);
  return status;
}

}  // namespace warden::service
