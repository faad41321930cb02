// What the two halves of RemoteRunners (remote_runners.h) share, private to service/: a build
// child's channel, and the lines and text both send. remote_runners.cc holds the children's
// side (channels, queued requests, quorums, settling); remote_runner_streams.cc the runners'
// side (tasks out on their streams, object fetches, results and failure reports in).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "common/canonical_json.h"
#include "common/line_socket.h"
#include "service/remote_runners.h"

namespace warden::service {

struct RemoteRunners::Channel {
  std::filesystem::path repo;
  std::unique_ptr<LineSocket> in;  // the reader thread's alone
  std::mutex out_mu;
  std::unique_ptr<LineSocket> out;  // guarded by out_mu
  std::stop_source stop;
  std::thread reader;
  std::atomic<bool> done{false};  // the reader has ended: the channel may be reaped
};

namespace detail {

inline Json error_line(const std::string& task_id, const std::string& why) {
  return {{"type", "error"}, {"request_id", task_id}, {"error", why}};
}

// Runner-sent text (a reason, an id) as it may go into fleet events, logs and terminals.
inline std::string printable(std::string text) {
  if (text.size() > 4096) text.resize(4096);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

}  // namespace detail

}  // namespace warden::service
