#include "executor/channel_proposer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

namespace warden::executor {
namespace {

constexpr std::string_view kClosed = "the executor channel closed";

// An eventfd that becomes readable when `stop` is requested, so a poll on the socket wakes
// for a cancel at once. Without a stop that can be requested it holds no fd.
class StopWake {
 public:
  explicit StopWake(const std::stop_token& stop)
      : fd_(stop.stop_possible() ? ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1),
        callback_(stop, [fd = fd_.get()] {
          if (fd < 0) return;
          uint64_t one = 1;
          [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
        }) {}
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::stop_callback<std::function<void()>> callback_;
};

// The answer's fields, checked; `field` is "proposal" or "plan".
Checked<std::string> answer_text(const Json& answer, std::string_view field, std::optional<std::string>& identity) {
  auto failed = [](std::string why) { return refuse(RefusalCode::executor_failed, "", "the executor's answer " + why); };
  if (auto it = answer.find("executor_identity"); it != answer.end()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) return failed("has an executor_identity that is not a non-empty string");
    if (it->get_ref<const std::string&>().size() > ChannelProposer::kMaxIdentityBytes) {
      return failed("has an executor_identity longer than " + std::to_string(ChannelProposer::kMaxIdentityBytes) + " bytes");
    }
    identity = it->get<std::string>();
  }
  const auto text = answer.find(field);
  const auto error = answer.find("error");
  if ((text == answer.end()) == (error == answer.end())) {
    return failed("must carry exactly one of \"" + std::string(field) + "\" and \"error\"");
  }
  if (error != answer.end()) {
    if (!error->is_string()) return failed("has an error that is not a string");
    RefusalCode code = RefusalCode::executor_failed;
    if (auto c = answer.find("code"); c != answer.end()) {
      const auto parsed = c->is_string() ? parse_refusal_code(c->get_ref<const std::string&>()) : std::nullopt;
      if (parsed != RefusalCode::executor_failed && parsed != RefusalCode::executor_timeout) {
        return failed("has a code that is neither executor_failed nor executor_timeout");
      }
      code = *parsed;
    }
    const std::string who = identity ? "executor " + *identity : "the remote executor";
    return refuse(code, "", who + ": " + error->get<std::string>());
  }
  if (!text->is_string()) return failed("has a " + std::string(field) + " that is not a string");
  if (text->get_ref<const std::string&>().empty()) return refuse(RefusalCode::executor_failed, "", "executor proposed nothing");
  return text->get<std::string>();
}

// 64 random bits in hex: no answer written before its request was sent can carry its id.
std::string random_nonce() {
  uint64_t bits = 0;
  size_t got = 0;
  while (got < sizeof bits) {
    const ssize_t n = ::getrandom(reinterpret_cast<char*>(&bits) + got, sizeof bits - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return hex;
}

}  // namespace

ChannelProposer::ChannelProposer(std::string label, UniqueFd socket, size_t max_line_bytes)
    : label_(std::move(label)), socket_(std::move(socket)), max_line_bytes_(max_line_bytes), nonce_(random_nonce()) {}

ChannelProposer::~ChannelProposer() {
  if (broken_) return;
  // Best effort and never blocking: the server also takes EOF as the end.
  static constexpr std::string_view kEnd = "{\"type\":\"end\"}\n";
  [[maybe_unused]] ssize_t n = ::send(socket_.get(), kEnd.data(), kEnd.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

Checked<std::string> ChannelProposer::propose(const ProposalRequest& request) {
  return ask("propose", "proposal", Json{{"step", request.step}, {"context", request.context}}, request.timeout,
             request.stop);
}

void ChannelProposer::learn(const Json& refusal) {
  if (broken_) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  (void)send_line(Json{{"type", "learn"}, {"refusal", refusal}}.dump() + "\n", deadline, {});
}

Result<std::string> ChannelProposer::replan(const Json& request, std::chrono::milliseconds timeout) {
  auto plan = ask("replan", "plan", request, timeout, {});
  if (!plan) {
    const Errc code = plan.error().code == RefusalCode::executor_timeout ? Errc::limit_exceeded : Errc::invalid_argument;
    return std::unexpected(Error{code, plan.error().detail});
  }
  return std::move(*plan);
}

Checked<std::string> ChannelProposer::ask(std::string_view type, std::string_view field, const Json& request,
                                          std::chrono::milliseconds timeout, std::stop_token stop) {
  answered_by_.reset();
  if (broken_) return refuse(RefusalCode::executor_failed, "", *broken_);
  if (stop.stop_requested()) return refuse(RefusalCode::executor_timeout, "", "stopped before asking the executor");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string id = nonce_ + "-" + std::to_string(next_request_++);
  const Json line = {{"type", type}, {"request_id", id}, {"request", request}, {"timeout_ms", timeout.count()}};
  auto failed = [&](Refusal refusal) {
    if (refusal.code == RefusalCode::executor_timeout && !stop.stop_requested()) {
      refusal.detail = "executor timed out after " + std::to_string(timeout.count()) + " ms";
    }
    return std::unexpected(std::move(refusal));
  };
  if (auto sent = send_line(line.dump() + "\n", deadline, stop); !sent) return failed(sent.error());
  for (;;) {
    auto text = read_line(deadline, stop);
    if (!text) return failed(text.error());
    auto answer = parse_json(*text, "the executor's answer");
    if (!answer) return refuse(RefusalCode::executor_failed, "", answer.error().message);
    if (!answer->is_object()) return refuse(RefusalCode::executor_failed, "", "the executor's answer is not a JSON object");
    const auto kind = answer->find("type");
    if (kind == answer->end() || *kind != "answer") {
      return refuse(RefusalCode::executor_failed, "", "the executor channel sent a line whose type is not \"answer\"");
    }
    const auto answer_id = answer->find("request_id");
    if (answer_id == answer->end() || !answer_id->is_string()) {
      return refuse(RefusalCode::executor_failed, "", "the executor's answer has no request_id string");
    }
    if (*answer_id != id) continue;  // a late answer to an earlier request
    return answer_text(*answer, field, answered_by_);
  }
}

std::unexpected<Refusal> ChannelProposer::closed(std::string detail) {
  broken_ = std::move(detail);
  return refuse(RefusalCode::executor_failed, "", *broken_);
}

Checked<void> ChannelProposer::wait_ready(short events, Deadline deadline, const std::stop_token& stop) {
  StopWake wake(stop);
  for (;;) {
    if (stop.stop_requested()) return refuse(RefusalCode::executor_timeout, "", "stopped while waiting for the executor");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return refuse(RefusalCode::executor_timeout, "", "executor timed out");
    pollfd fds[2] = {{socket_.get(), events, 0}, {wake.fd(), POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000));
    const int ready = ::poll(fds, wake.fd() >= 0 ? 2 : 1, wait_ms);
    if (ready < 0 && errno != EINTR) return closed(std::string(kClosed) + ": poll: " + std::strerror(errno));
    // Readable/writable, hung up or in error: the read or write that follows says which.
    if (ready > 0 && fds[0].revents != 0) return {};
  }
}

Checked<void> ChannelProposer::send_line(const std::string& line, Deadline deadline, const std::stop_token& stop) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::send(socket_.get(), line.data() + done, line.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto ready = wait_ready(POLLOUT, deadline, stop); !ready) {
        // A line cut short cannot be framed: nothing more can be said on this channel.
        if (done > 0) broken_ = std::string(kClosed) + ": a request was cut short";
        return ready;
      }
      continue;
    }
    return closed(std::string(kClosed) + (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
  }
  return {};
}

Checked<std::string> ChannelProposer::read_line(Deadline deadline, const std::stop_token& stop) {
  for (;;) {
    if (const size_t end = buffered_.find('\n'); end != std::string::npos) {
      if (end > max_line_bytes_) break;
      std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 1);
      return line;
    }
    if (buffered_.size() > max_line_bytes_) break;
    if (auto ready = wait_ready(POLLIN, deadline, stop); !ready) return std::unexpected(ready.error());
    // Never more than the bound plus the byte that shows a line is over it.
    char chunk[65536];
    const size_t room = std::min(sizeof chunk, max_line_bytes_ + 1 - buffered_.size());
    const ssize_t n = ::recv(socket_.get(), chunk, room, MSG_DONTWAIT);
    if (n > 0) {
      buffered_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return closed(std::string(kClosed));
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return closed(std::string(kClosed) + ": " + std::strerror(errno));
    }
  }
  buffered_.clear();
  return closed("the executor sent a line longer than the bound of " + std::to_string(max_line_bytes_) + " bytes");
}

}  // namespace warden::executor
