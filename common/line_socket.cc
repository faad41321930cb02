#include "common/line_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

namespace warden {
namespace {

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

}  // namespace

LineSocket::LineSocket(UniqueFd socket, size_t max_line_bytes, std::string noun)
    : socket_(std::move(socket)), max_line_bytes_(max_line_bytes), noun_(std::move(noun)) {}

LineFailure LineSocket::close(std::string detail) {
  broken_ = detail;
  return LineFailure{LineFailure::Kind::closed, std::move(detail)};
}

void LineSocket::shutdown() {
  ::shutdown(socket_.get(), SHUT_RDWR);
  if (!broken_) broken_ = closed_text();
}

void LineSocket::send_now(std::string_view line) {
  if (broken_) return;
  [[maybe_unused]] ssize_t n = ::send(socket_.get(), line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

std::expected<void, LineFailure> LineSocket::wait_ready(short events, Deadline deadline, const std::stop_token& stop) {
  StopWake wake(stop);
  for (;;) {
    if (stop.stop_requested()) return std::unexpected(LineFailure{LineFailure::Kind::stopped, "stopped while waiting for the " + noun_});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::unexpected(LineFailure{LineFailure::Kind::timed_out, noun_ + " timed out"});
    pollfd fds[2] = {{socket_.get(), events, 0}, {wake.fd(), POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000));
    const int ready = ::poll(fds, wake.fd() >= 0 ? 2 : 1, wait_ms);
    if (ready < 0 && errno != EINTR) return std::unexpected(close(closed_text() + ": poll: " + std::strerror(errno)));
    // Readable/writable, hung up or in error: the read or write that follows says which.
    if (ready > 0 && fds[0].revents != 0) return {};
  }
}

std::expected<void, LineFailure> LineSocket::send(std::string_view line, Deadline deadline, const std::stop_token& stop) {
  if (broken_) return std::unexpected(LineFailure{LineFailure::Kind::closed, *broken_});
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
        if (done > 0) broken_ = closed_text() + ": a request was cut short";
        return ready;
      }
      continue;
    }
    return std::unexpected(close(closed_text() + (n < 0 ? std::string(": ") + std::strerror(errno) : "")));
  }
  return {};
}

std::expected<std::string, LineFailure> LineSocket::read(Deadline deadline, const std::stop_token& stop) {
  if (broken_) return std::unexpected(LineFailure{LineFailure::Kind::closed, *broken_});
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
      return std::unexpected(close(closed_text()));
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return std::unexpected(close(closed_text() + ": " + std::strerror(errno)));
    }
  }
  buffered_.clear();
  return std::unexpected(close("the " + noun_ + " sent a line longer than the bound of " + std::to_string(max_line_bytes_) + " bytes"));
}

}  // namespace warden
