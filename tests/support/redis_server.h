// A redis-server child for tests and benches: one server on DIR/redis.sock (never TCP),
// its data and log in DIR, started under setpriv --pdeathsig KILL so it dies with the
// process that started it even if that crashes. Debian's redis-server package (tools/deps
// installs it); without it start() fails saying so.
//
// Ownership: the object owns the process; stop() or the destructor (SIGKILL) ends it. Not
// thread-safe.
#pragma once

#include <signal.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/error.h"
#include "store/redis_state_store.h"
#include "tests/support/process.h"

namespace warden::test {

class RedisServer {
 public:
  // `appendfsync` is Redis's setting: "always" (every write fsynced before the reply, what
  // the durability tests need) or "everysec".
  explicit RedisServer(std::filesystem::path dir, std::string appendfsync = "always")
      : dir_(std::move(dir)), appendfsync_(std::move(appendfsync)) {}
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() { stop(SIGKILL); }

  store::RedisAddress address() const { return store::RedisAddress::unix_socket(socket()); }

  // Starts the server on the data already in DIR (if any; DIR is created) and waits until it
  // answers PING (10 s at most).
  Status start();
  // Sends `signal` and waits for the server to exit: SIGTERM shuts down cleanly, SIGKILL is a
  // crash (only what was fsynced survives).
  void stop(int signal = SIGTERM);
  std::string log() const;

 private:
  std::string socket() const { return (dir_ / "redis.sock").string(); }
  bool answers_ping() const;

  std::filesystem::path dir_;
  std::string appendfsync_;
  std::optional<Child> child_;
};

}  // namespace warden::test
