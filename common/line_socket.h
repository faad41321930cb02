// LineSocket: one end of a connected SOCK_STREAM unix socket that carries JSON Lines (one
// object per line, ending in "\n"), with a deadline and a stop token on every wait. It is the
// kernel's side of the channels to `warden serve` (executor/channel_proposer.h for proposals,
// runner/check/channel_runner.h for check runs); both speak lines and neither may block past its
// deadline or a stop.
//
// Bounds: a line read is at most max_line_bytes (not counting the "\n"); no more than the
// bound plus one byte is ever buffered, and a longer line cannot be framed, so the socket is
// broken from then on. Lines sent are not bounded. A send cut short by a timeout or a stop
// also breaks the socket (the peer holds half a line). EOF, a read or write error, or a
// broken socket fail every later call with `closed`.
//
// Messages name the peer by `noun` ("executor", "runner"): "the executor channel closed",
// "stopped while waiting for the executor", "executor timed out".
//
// Ownership: owns the socket. Threads: one caller at a time; `stop` may be requested from any
// thread.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "common/file.h"

namespace warden {

struct LineFailure {
  enum class Kind { timed_out, stopped, closed };
  Kind kind;
  std::string detail;
};

class LineSocket {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  LineSocket(UniqueFd socket, size_t max_line_bytes, std::string noun);

  std::expected<void, LineFailure> send(std::string_view line, Deadline deadline, const std::stop_token& stop);
  // Sends without waiting, or not at all (a goodbye the peer also infers from EOF).
  void send_now(std::string_view line);
  // The next complete line, without its "\n".
  std::expected<std::string, LineFailure> read(Deadline deadline, const std::stop_token& stop);
  // Shuts the connection down both ways (the peer reads EOF, a read here ends) and breaks it:
  // for a channel that lost a line half sent, which the peer must not wait on.
  void shutdown();
  // Breaks the socket for good with `detail` (the caller found the peer's lines unusable).
  LineFailure close(std::string detail);
  const std::optional<std::string>& broken() const { return broken_; }
  // "the <noun> channel closed"
  std::string closed_text() const { return "the " + noun_ + " channel closed"; }

 private:
  std::expected<void, LineFailure> wait_ready(short events, Deadline deadline, const std::stop_token& stop);

  UniqueFd socket_;
  size_t max_line_bytes_;
  std::string noun_;
  std::string buffered_;               // bytes read past the last line taken; <= max_line_bytes_ + 1
  std::optional<std::string> broken_;  // why the socket is closed for good
};

}  // namespace warden
