#include "tests/support/redis_server.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/time.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace warden::test {
namespace {

constexpr const char* kRedisServer = "/usr/bin/redis-server";
constexpr const char* kSetpriv = "/usr/bin/setpriv";

}  // namespace

Status RedisServer::start() {
  if (!std::filesystem::exists(kRedisServer)) {
    return fail(Errc::not_found, std::string(kRedisServer) +
                                     " is not installed: the Redis state store needs Debian's redis-server package; "
                                     "run tools/deps");
  }
  stop(SIGKILL);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return fail(Errc::io_error, "creating " + dir_.string() + ": " + ec.message());
  try {
    child_.emplace(Child::spawn({kSetpriv, "--pdeathsig", "KILL", kRedisServer, "--port", "0", "--unixsocket", socket(),
                                 "--unixsocketperm", "700", "--dir", dir_.string(), "--appendonly", "yes",
                                 "--appendfsync", appendfsync_, "--save", "", "--logfile", (dir_ / "redis.log").string()}));
  } catch (const std::exception& e) {
    return fail(Errc::io_error, std::string("starting redis-server: ") + e.what());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (answers_ping()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return fail(Errc::io_error, "redis-server did not answer PING on " + socket() + " within 10 s; its log:\n" + log());
}

void RedisServer::stop(int signal) {
  if (!child_) return;
  child_->kill(signal);
  child_->pump(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  if (child_->output_open()) child_->kill(SIGKILL);
  child_->wait();
  child_.reset();
}

std::string RedisServer::log() const {
  std::ifstream in(dir_ / "redis.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool RedisServer::answers_ping() const {
  timeval timeout{1, 0};
  redisContext* c = redisConnectUnixWithTimeout(socket().c_str(), timeout);
  if (c == nullptr) return false;
  bool pong = false;
  if (c->err == 0) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    pong = reply != nullptr && reply->type == REDIS_REPLY_STATUS && std::string(reply->str, reply->len) == "PONG";
    if (reply != nullptr) freeReplyObject(reply);
  }
  redisFree(c);
  return pong;
}

}  // namespace warden::test
