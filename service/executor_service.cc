#include "service/executor_service.h"

#include <thread>

#include "common/canonical_json.h"
#include "common/sha256.h"
#include "kernel/record/records.h"
#include "service/grpc_status.h"

namespace warden::service {
namespace {

// How long Propose waits for the kernel to decide: the checks run in the sandbox first.
constexpr auto kDecisionWait = std::chrono::minutes(10);
// After the run is gone, or the decision is in, how long the refusal or commit may lag.
constexpr auto kFollowUpWait = std::chrono::seconds(10);
// How long an Attach stream waits, after the run ended, for the executor to close its side.
constexpr auto kCloseWait = std::chrono::seconds(5);
// The longest idempotency key: a name for a retry, not a payload the server keeps.
constexpr size_t kMaxKeyBytes = 256;

grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

}  // namespace

ExecutorService::ExecutorService(RemoteExecutors& remote, SharedLedger& ledger, RunManager& runs, InFlight& in_flight,
                                 const TokenTable& tokens, StreamQuota& streams)
    : remote_(remote), ledger_(ledger), runs_(runs), in_flight_(in_flight), tokens_(tokens), streams_(streams) {}

grpc::Status ExecutorService::Attach(grpc::ServerContext* context,
                                     grpc::ServerReaderWriter<v1::KernelMessage, v1::ExecutorMessage>* stream) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::executor, denied);
  if (!identity) return denied;
  auto held = streams_.acquire(identity->name);
  if (!held) return too_many_streams(identity->name, streams_.per_caller());
  v1::ExecutorMessage first;
  if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "the executor left before attaching");
  if (!first.has_attach()) return invalid("attach", "the first message must be attach");
  if (first.attach().run_id().empty() && first.attach().label().empty()) {
    return invalid("attach", "name a run_id, or a label to wait for the next run started for it");
  }
  Attachment attachment;
  attachment.identity = identity->name;
  attachment.admin = identity->roles.contains(Role::admin);
  auto run_id = remote_.attach(attachment, first.attach().run_id(), first.attach().label(),
                               [context] { return context->IsCancelled(); });
  if (!run_id) return to_status(run_id.error());

  v1::KernelMessage attached;
  attached.mutable_attached()->set_run_id(*run_id);
  bool writable = stream->Write(attached);

  // Reading and writing a sync stream at once takes two threads: this one writes.
  std::mutex reader_mu;
  std::condition_variable reader_done_cv;
  bool reader_done = false;
  std::string left_why = "the executor " + identity->name + " disconnected while it held the request";
  std::thread reader([&] {
    v1::ExecutorMessage message;
    while (stream->Read(&message)) {
      if (message.has_answer()) {
        (void)remote_.answer(attachment, message.answer());  // a late answer is dropped
      }
      // Heartbeats only keep the connection in use; the step's deadline is the kernel's.
    }
    remote_.detach(attachment, left_why);
    std::lock_guard lock(reader_mu);
    reader_done = true;
    reader_done_cv.notify_all();
  });
  bool ended = false;
  while (writable && !ended) {
    {
      std::lock_guard lock(reader_mu);
      if (reader_done) break;
    }
    for (v1::KernelMessage& m : remote_.take(attachment, std::chrono::milliseconds(200), ended)) {
      if (!stream->Write(m)) {
        writable = false;
        break;
      }
    }
    if (context->IsCancelled()) break;
  }
  {
    std::unique_lock lock(reader_mu);
    // The executor closes its side after RunEnded; one that does not is cut off.
    if (!reader_done_cv.wait_for(lock, kCloseWait, [&] { return reader_done; })) context->TryCancel();
  }
  reader.join();
  remote_.detach(attachment, left_why);  // idempotent; covers a stream that ended by writing
  return grpc::Status::OK;
}

grpc::Status ExecutorService::Propose(grpc::ServerContext* context, const v1::ProposeRequest* request, v1::Verdict* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::executor, denied);
  if (!identity) return denied;
  if (request->run_id().empty()) return invalid("run_id", "empty");
  if (request->step_id().empty()) return invalid("step_id", "empty");
  if (request->attempt() == 0) return invalid("attempt", "attempts count from 1");
  const std::string& body = request->proposal().has_diff_json() ? request->proposal().diff_json() : request->proposal().patch();
  if (body.empty()) return invalid("proposal", "give diff_json or patch");
  if (request->idempotency_key().size() > kMaxKeyBytes) {
    return invalid("idempotency_key", "longer than " + std::to_string(kMaxKeyBytes) + " bytes");
  }

  const std::string key = request->idempotency_key().empty() ? "" : identity->name + "\n" + request->idempotency_key();
  const std::string fingerprint = request->run_id() + "\n" + request->step_id() + "\n" +
                                  std::to_string(request->attempt()) + "\n" + sha256(body).str();
  if (!key.empty()) {
    std::unique_lock lock(mu_);
    for (;;) {
      auto [it, fresh] = by_key_.try_emplace(key);
      if (fresh) {
        it->second.fingerprint = fingerprint;
        break;
      }
      if (it->second.fingerprint != fingerprint) {
        return invalid("idempotency_key", "already used for another proposal (run, step, attempt or content differ)");
      }
      // A retry: the first call's answer, once it has one; nothing is proposed again. A first
      // call whose proposal never reached the run leaves no entry, and this one tries anew.
      answered_.wait(lock, [&] {
        auto found = by_key_.find(key);
        return found == by_key_.end() || found->second.status.has_value();
      });
      auto found = by_key_.find(key);
      if (found == by_key_.end()) continue;
      *out = found->second.verdict;
      return *found->second.status;
    }
  }
  // The answer, kept under the key for retries; a proposal that never reached the run keeps
  // nothing (a retry may try again), so only proposals the ledger records hold table entries.
  auto finish = [&](grpc::Status status) {
    if (key.empty()) return status;
    std::lock_guard lock(mu_);
    auto& entry = by_key_[key];
    entry.status = status;
    entry.verdict = *out;
    answered_.notify_all();
    if (!entry.delivered) by_key_.erase(key);
    return status;
  };
  Status delivered = remote_.answer_unary(request->run_id(), request->step_id(), request->attempt(),
                                         request->proposal(), identity->name, identity->roles.contains(Role::admin));
  if (delivered && !key.empty()) {
    std::lock_guard lock(mu_);
    by_key_[key].delivered = true;
  }
  if (Status st = std::move(delivered); !st) {
    return finish(st.error().code == Errc::invalid_argument
                      ? grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, st.error().message)
                      : to_status(st.error()));
  }
  return finish(await_verdict(request->run_id(), request->step_id(), request->attempt(), kDecisionWait, out));
}

grpc::Status ExecutorService::await_verdict(const std::string& run_id, const std::string& step_id, uint32_t attempt,
                                            std::chrono::milliseconds timeout, v1::Verdict* out) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::chrono::steady_clock::time_point> follow_up_deadline;
  bool decided = false;
  uint64_t from = 0;
  for (;;) {
    const uint64_t seen = runs_.generation();
    const bool live = runs_.live(run_id);
    bool complete = false;
    auto read = ledger_.read_run(run_id, from, [&](uint64_t seq, const RecordView& record, LedgerSnapshot&) -> Result<bool> {
      if (record.kind != kernel::record_kind::decision && record.kind != kernel::record_kind::refusal &&
          record.kind != kernel::record_kind::commit) {
        return true;
      }
      auto payload = parse_json(record.payload);
      if (!payload) return std::unexpected(payload.error());
      if (record.kind == kernel::record_kind::decision) {
        auto d = kernel::DecisionRecord::from_json(*payload);
        if (!d || d->step_id != step_id || d->attempt != attempt) return true;
        decided = true;
        out->set_accepted(d->verdict.accepted);
        for (const std::string& code : d->verdict.reason_codes()) out->add_refusal_codes(code);
        out->set_decision_seq(seq);
      } else if (record.kind == kernel::record_kind::refusal && decided) {
        if (kernel::refusal_subject(*payload) != kernel::ProposalRefusalRecord::subject) return true;
        auto r = kernel::ProposalRefusalRecord::from_json(*payload);
        if (!r || r->report.step_id != step_id || r->report.attempt != attempt) return true;
        auto report = canonicalize(r->report.to_json());
        if (report) out->set_report_json(*report);
        complete = true;
      } else if (record.kind == kernel::record_kind::commit && decided) {
        auto c = kernel::CommitRecord::from_json(*payload);
        if (!c || c->step_id != step_id || c->attempt != attempt) return true;
        out->set_commit(c->commit);
        complete = true;
      }
      return !complete;
    });
    if (!read) return to_status(read.error());
    from = read->next;
    if (complete) return grpc::Status::OK;
    const auto now = std::chrono::steady_clock::now();
    if (decided || !live) {
      if (!follow_up_deadline) follow_up_deadline = now + kFollowUpWait;
      if (now >= *follow_up_deadline) {
        if (decided) return grpc::Status::OK;  // the verdict, without its report or commit
        return grpc::Status(grpc::StatusCode::ABORTED, "run " + run_id + " ended before it decided step " + step_id +
                                                           " attempt " + std::to_string(attempt));
      }
    }
    if (now >= deadline) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no decision on step " + step_id + " attempt " +
                                                                   std::to_string(attempt) + " within " +
                                                                   std::to_string(timeout.count() / 1000) + " s");
    }
    runs_.wait_change(seen, std::chrono::milliseconds(50));
  }
}

}  // namespace warden::service
