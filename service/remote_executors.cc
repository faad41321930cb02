#include "service/remote_executors.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/canonical_json.h"

namespace warden::service {
namespace {

// A request line holds the step's context (the current content of its targets): generous,
// but bounded so a runaway child cannot make the server buffer without end.
constexpr size_t kMaxLineBytes = size_t{64} << 20;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string canonical_or_dump(const Json& value) {
  auto text = canonicalize(value);
  return text ? std::move(*text) : value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

RemoteExecutors::~RemoteExecutors() {
  shutdown();
  std::map<uint64_t, std::unique_ptr<RemoteRun>> runs;
  {
    std::lock_guard lock(mu_);
    for (auto& [ticket, run] : runs_) ::shutdown(run->fd.get(), SHUT_RDWR);  // wakes the reader
    runs.swap(runs_);
  }
  runs.clear();  // joins the readers
}

Result<RemoteExecutors::Opened> RemoteExecutors::open(const std::string& label, const std::string& served_by) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return std::unexpected(errno_error("socketpair", errno));
  UniqueFd ours(fds[0]), theirs(fds[1]);
  // Runs that are over and that no executor holds are dropped (their channel closed, their
  // reader joined) as new ones come: the table holds live runs only.
  std::vector<std::unique_ptr<RemoteRun>> over;  // destroyed after the lock: joins readers
  std::lock_guard lock(mu_);
  if (stopping_) return fail(Errc::io_error, "the server is stopping");
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (it->second->closed && !it->second->executor) {
      over.push_back(std::move(it->second));
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  auto run = std::make_unique<RemoteRun>();
  run->ticket = next_ticket_++;
  run->label = label;
  run->served_by = served_by;
  run->fd = std::move(ours);
  RemoteRun& r = *run;
  r.reader = std::jthread([this, &r] { read_channel(r); });
  runs_.emplace(r.ticket, std::move(run));
  return Opened{std::move(theirs), r.ticket};
}

void RemoteExecutors::bind(uint64_t ticket, const std::string& run_id) {
  std::lock_guard lock(mu_);
  auto it = runs_.find(ticket);
  if (it == runs_.end()) return;
  RemoteRun& run = *it->second;
  run.run_id = run_id;
  // A request the child sent before its id was known names it now.
  if (run.pending && run.pending->message.has_proposal_request()) run.pending->message.mutable_proposal_request()->set_run_id(run_id);
  if (run.pending && run.pending->message.has_replan()) run.pending->message.mutable_replan()->set_run_id(run_id);
  changed_.notify_all();
}

void RemoteExecutors::discard(uint64_t ticket) {
  std::unique_ptr<RemoteRun> gone;
  {
    std::lock_guard lock(mu_);
    auto it = runs_.find(ticket);
    if (it == runs_.end()) return;
    ::shutdown(it->second->fd.get(), SHUT_RDWR);
    gone = std::move(it->second);
    runs_.erase(it);
  }
}

void RemoteExecutors::read_channel(RemoteRun& run) {
  std::string buffer;
  char chunk[65536];
  const int fd = run.fd.get();
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::lock_guard lock(mu_);
      on_line(run, buffer.substr(start, nl - start));
    }
    buffer.erase(0, start);
    if (buffer.size() > kMaxLineBytes) break;  // not the protocol: the run is treated as over
  }
  std::lock_guard lock(mu_);
  run.closed = true;
  run.pending.reset();
  if (Attachment* a = run.executor) {
    v1::KernelMessage ended;
    ended.mutable_run_ended()->mutable_run()->set_run_id(run.run_id);
    a->outbox.push_back(std::move(ended));
    a->ended = true;
    run.executor = nullptr;
  }
  changed_.notify_all();
}

void RemoteExecutors::on_line(RemoteRun& run, const std::string& line) {
  auto parsed = parse_json(line);
  if (!parsed || !parsed->is_object()) return;  // the child is ours; a line it did not mean is skipped
  const Json& m = *parsed;
  const std::string type = m.value("type", std::string());
  if (type == "propose" || type == "replan") {
    const Json& request = m.contains("request") && m["request"].is_object() ? m["request"] : Json::object();
    const int64_t timeout_ms = m.value("timeout_ms", int64_t{0});
    Pending p;
    p.request_id = m.value("request_id", std::string());
    p.replan = type == "replan";
    if (!p.replan) {
      const Json& step = request.contains("step") && request["step"].is_object() ? request["step"] : Json::object();
      const Json& context = request.contains("context") && request["context"].is_object() ? request["context"] : Json::object();
      p.step_id = step.value("id", std::string());
      p.attempt = static_cast<uint32_t>(context.value("attempt", int64_t{0}));
      v1::ProposalRequest* r = p.message.mutable_proposal_request();
      r->set_request_id(p.request_id);
      r->set_run_id(run.run_id);
      r->set_step_id(p.step_id);
      r->set_attempt(p.attempt);
      r->set_step_json(canonical_or_dump(step));
      r->set_context_json(canonical_or_dump(context));
      if (context.contains("refusals") && context["refusals"].is_array()) {
        for (const Json& refusal : context["refusals"]) r->add_refusals_json(canonical_or_dump(refusal));
      }
      r->set_timeout_ms(timeout_ms);
      r->set_deadline_ms(wall_ms() + timeout_ms);
    } else {
      v1::ReplanRequest* r = p.message.mutable_replan();
      r->set_request_id(p.request_id);
      r->set_run_id(run.run_id);
      r->set_plan_json(canonical_or_dump(request.value("plan", Json::object())));
      r->set_reason("step " + request.value("failed_step", std::string()) + " exhausted its retries");
    }
    // A newer request replaces an older one: the child stopped waiting for that one.
    run.pending = std::move(p);
    offer_pending(run);
  } else if (type == "learn" && run.executor) {
    const Json& refusal = m.contains("refusal") ? m["refusal"] : Json::object();
    v1::KernelMessage message;
    v1::RefusalReport* r = message.mutable_refusal();
    r->set_run_id(run.run_id);
    if (refusal.is_object()) {
      r->set_step_id(refusal.value("step_id", std::string()));
      r->set_attempt(static_cast<uint32_t>(refusal.value("attempt", int64_t{0})));
    }
    r->set_report_json(canonical_or_dump(refusal));
    run.executor->outbox.push_back(std::move(message));
    changed_.notify_all();
  }
}

void RemoteExecutors::offer_pending(RemoteRun& run) {
  if (!run.pending || run.pending->sent_to || !run.executor) return;
  run.executor->outbox.push_back(run.pending->message);
  run.pending->sent_to = run.executor;
  changed_.notify_all();
}

void RemoteExecutors::send_to_child(RemoteRun& run, const std::string& line) {
  // A child that is gone has nothing to be told; its reader sees the end.
  write_all(run.fd.get(), line + "\n");
}

void RemoteExecutors::answer_error(RemoteRun& run, const std::string& why, const std::string& identity) {
  if (!run.pending) return;
  Json line = {{"type", "answer"}, {"request_id", run.pending->request_id}, {"error", why}, {"code", "executor_failed"}};
  if (!identity.empty()) line["executor_identity"] = identity;
  run.pending.reset();
  send_to_child(run, line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

bool RemoteExecutors::may_serve(const RemoteRun& run, const std::string& identity, bool admin) {
  return admin || run.served_by == identity;
}

RemoteExecutors::RemoteRun* RemoteExecutors::find(const std::string& run_id) {
  for (auto& [ticket, run] : runs_) {
    if (!run_id.empty() && run->run_id == run_id) return run.get();
  }
  return nullptr;
}

Result<std::string> RemoteExecutors::attach(Attachment& attachment, const std::string& run_id, const std::string& label,
                                            const std::function<bool()>& cancelled) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_) return fail(Errc::io_error, "the server is stopping");
    RemoteRun* chosen = nullptr;
    if (!run_id.empty()) {
      chosen = find(run_id);
      if (!chosen || chosen->closed) return fail(Errc::not_found, "no live run " + run_id + " started with a remote executor");
      if (!label.empty() && chosen->label != label) {
        return fail(Errc::invalid_argument, "label: run " + run_id + " was started for executors labelled " + chosen->label);
      }
      if (chosen->executor) return fail(Errc::already_exists, "an executor is already attached to run " + run_id);
      if (!may_serve(*chosen, attachment.identity, attachment.admin)) {
        return fail(Errc::failed_precondition, "run " + run_id + " is served by the executor " + chosen->served_by +
                                                   ": only it (or an admin) may attach to it");
      }
    } else {
      for (auto& [ticket, run] : runs_) {
        if (run->label == label && !run->run_id.empty() && !run->closed && !run->executor &&
            run->served_by == attachment.identity) {
          chosen = run.get();
          break;
        }
      }
    }
    if (chosen) {
      chosen->executor = &attachment;
      // A request sent to an executor that left was answered then; one never sent goes now.
      offer_pending(*chosen);
      return chosen->run_id;
    }
    if (cancelled()) return fail(Errc::io_error, "the executor left before a run with label " + label + " started");
    changed_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void RemoteExecutors::detach(Attachment& attachment, const std::string& why) {
  std::lock_guard lock(mu_);
  for (auto& [ticket, run] : runs_) {
    if (run->executor != &attachment) continue;
    run->executor = nullptr;
    if (run->pending && run->pending->sent_to == &attachment) {
      answer_error(*run, why, attachment.identity);
    } else if (run->pending) {
      run->pending->sent_to = nullptr;
    }
  }
  changed_.notify_all();
}

std::vector<v1::KernelMessage> RemoteExecutors::take(Attachment& attachment, std::chrono::milliseconds timeout, bool& ended) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return !attachment.outbox.empty() || attachment.ended || stopping_; });
  std::vector<v1::KernelMessage> out(std::make_move_iterator(attachment.outbox.begin()),
                                     std::make_move_iterator(attachment.outbox.end()));
  attachment.outbox.clear();
  ended = attachment.ended || stopping_;
  return out;
}

Status RemoteExecutors::answer(Attachment& attachment, const v1::ProposalAnswer& answer) {
  std::lock_guard lock(mu_);
  RemoteRun* run = nullptr;
  for (auto& [ticket, r] : runs_) {
    if (r->executor == &attachment) run = r.get();
  }
  if (!run) return fail(Errc::invalid_argument, "answer: this executor is attached to no live run");
  if (!run->pending || run->pending->sent_to != &attachment || run->pending->request_id != answer.request_id()) {
    // Late (the child gave up on it) or never asked: dropped, never taken for another request.
    return fail(Errc::invalid_argument, "answer.request_id: " + answer.request_id() + " is not the request awaited");
  }
  Json line = {{"type", "answer"}, {"request_id", answer.request_id()}, {"executor_identity", attachment.identity}};
  const bool replan = run->pending->replan;
  std::string body;
  if (!answer.error().empty()) {
    line["error"] = "the executor says: " + answer.error();
    line["code"] = "executor_failed";
  } else if (replan) {
    body = answer.plan_json();
    if (body.empty()) {
      line["error"] = "the executor answered a replan request without plan_json";
      line["code"] = "executor_failed";
    }
  } else {
    body = answer.proposal().has_diff_json() ? answer.proposal().diff_json() : answer.proposal().patch();
    if (body.empty()) {
      line["error"] = "the executor's answer holds no proposal (proposal.diff_json or proposal.patch)";
      line["code"] = "executor_failed";
    }
  }
  if (!line.contains("error")) {
    if (!is_valid_utf8(body)) {
      line["error"] = "the executor's answer is not UTF-8 text";
      line["code"] = "executor_failed";
    } else {
      line[replan ? "plan" : "proposal"] = body;
    }
  }
  run->pending.reset();
  send_to_child(*run, line.dump(-1, ' ', false, Json::error_handler_t::replace));
  return {};
}

Status RemoteExecutors::answer_unary(const std::string& run_id, const std::string& step_id, uint32_t attempt,
                                     const v1::Proposal& proposal, const std::string& identity, bool admin) {
  std::lock_guard lock(mu_);
  RemoteRun* run = find(run_id);
  if (!run || run->closed) return fail(Errc::not_found, "no live run " + run_id + " started with a remote executor");
  if (run->executor && run->executor->identity != identity) {
    return fail(Errc::failed_precondition, "run " + run_id + " has an attached executor (" + run->executor->identity +
                                               "): it answers the run's requests over its stream");
  }
  if (!may_serve(*run, identity, admin)) {
    return fail(Errc::failed_precondition, "run " + run_id + " is served by the executor " + run->served_by +
                                               ": only it (or an admin) may answer it");
  }
  if (!run->pending || run->pending->replan) {
    return fail(Errc::invalid_argument, "run " + run_id + " is waiting for no proposal now");
  }
  if (run->pending->step_id != step_id || run->pending->attempt != attempt) {
    return fail(Errc::invalid_argument, "run " + run_id + " waits for step " + run->pending->step_id + " attempt " +
                                            std::to_string(run->pending->attempt) + ", not " + step_id + " attempt " +
                                            std::to_string(attempt));
  }
  const std::string& body = proposal.has_diff_json() ? proposal.diff_json() : proposal.patch();
  if (body.empty()) return fail(Errc::invalid_argument, "proposal: give diff_json or patch");
  if (!is_valid_utf8(body)) return fail(Errc::invalid_argument, "proposal: not UTF-8 text");
  if (run->pending->sent_to) {
    return fail(Errc::failed_precondition, "the request for step " + step_id + " attempt " + std::to_string(attempt) +
                                               " is held by an attached executor");
  }
  Json line = {{"type", "answer"}, {"request_id", run->pending->request_id}, {"proposal", body}, {"executor_identity", identity}};
  run->pending.reset();
  send_to_child(*run, line.dump());
  return {};
}

void RemoteExecutors::shutdown() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& [ticket, run] : runs_) {
    if (run->executor) run->executor->ended = true;
  }
  changed_.notify_all();
}

}  // namespace warden::service
