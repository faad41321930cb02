// RedisStateStore against the conformance suite, on a real redis-server this test starts
// (unix socket only, append-only file fsynced on every write), each test under its own key
// prefix; then what only Redis has: a server that crashes and restarts under a live store,
// int64 priorities and times past a double's 53 bits, and the address parser.
//
// redis-server comes from Debian's redis-server package (tools/deps installs it). Without
// it these tests fail, saying so: they never skip.
#include "store/redis_state_store.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/store/state_store_conformance.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/temp_dir.h"

namespace warden::store::test {
namespace {

using warden::test::RedisServer;

// Runs one command on a fresh connection, for the tests' own bookkeeping; its integer reply
// (nullopt for any other).
std::optional<long long> command(const RedisAddress& address, const std::vector<std::string>& args) {
  redisContext* c = redisConnectUnix(address.path.c_str());
  if (c == nullptr) return std::nullopt;
  std::optional<long long> out;
  if (c->err == 0) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.c_str());
      lens.push_back(a.size());
    }
    void* sent = redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data());
    auto* reply = static_cast<redisReply*>(sent);
    if (reply != nullptr && reply->type == REDIS_REPLY_INTEGER) out = reply->integer;
    if (reply != nullptr) freeReplyObject(reply);
  }
  redisFree(c);
  return out;
}

// How many keys live under `prefix`.
std::optional<long long> keys_under(const RedisAddress& address, const std::string& prefix) {
  return command(address, {"EVAL", "return #redis.call('KEYS', ARGV[1] .. '*')", "0", prefix});
}

// The server every test of this process shares (each under its own prefix), started on
// first use and stopped when the suite ends: by the environment's TearDown, else by the
// static's destructor, else (a crash) by the kernel's parent-death signal.
struct Shared {
  std::unique_ptr<warden::test::TempDir> dir;
  std::unique_ptr<RedisServer> server;
  std::optional<Error> failed;
};
Shared& shared() {
  static Shared s;
  return s;
}

Result<RedisAddress> shared_address() {
  Shared& s = shared();
  if (s.failed) return std::unexpected(*s.failed);
  if (!s.server) {
    s.dir = std::make_unique<warden::test::TempDir>();
    s.server = std::make_unique<RedisServer>(s.dir->path());
    if (Status st = s.server->start(); !st) {
      s.failed = st.error();
      return std::unexpected(st.error());
    }
  }
  return s.server->address();
}

class SharedServerEnvironment : public testing::Environment {
 public:
  void TearDown() override {
    Shared& s = shared();
    if (s.server) s.server->stop();
    s.server.reset();
    s.dir.reset();
  }
};
[[maybe_unused]] testing::Environment* const kEnvironment =
    testing::AddGlobalTestEnvironment(new SharedServerEnvironment);

// A fresh prefix per backing, whose keys are deleted when the backing goes.
std::string fresh_prefix(std::string_view what) {
  static int counter = 0;
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ":";
}

class RedisBacking final : public StoreBacking {
 public:
  RedisBacking() : prefix_(fresh_prefix("conformance")) {}
  ~RedisBacking() override {
    auto address = shared_address();
    if (!address) return;
    command(*address, {"EVAL", "for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do redis.call('DEL', k) end",
                       "0", prefix_});
  }
  // A new connection to the same server and prefix each time.
  Result<std::unique_ptr<StateStore>> open() override {
    auto address = shared_address();
    if (!address) return std::unexpected(address.error());
    return open_redis_state_store(*address, RedisStateStoreOptions{.key_prefix = prefix_});
  }

 private:
  std::string prefix_;
};

std::unique_ptr<StoreBacking> make_redis() { return std::make_unique<RedisBacking>(); }

INSTANTIATE_TEST_SUITE_P(Redis, StateStoreConformance, testing::Values(ConformanceBacking{"unix_socket", &make_redis}),
                         conformance_name);

Task task(std::string id, int64_t priority) { return Task{id, priority, "build", "payload of " + id}; }

AgentRecord agent(std::string id, std::string state) {
  AgentRecord r;
  r.id = std::move(id);
  r.role = "executor";
  r.labels = {{"zone", "a"}};
  r.state = std::move(state);
  r.last_heartbeat_ms = 7;
  return r;
}

// A store on the shared server under a fresh prefix, with what a test needs to look at its
// keys directly.
struct Prefixed {
  RedisAddress address;
  std::string prefix;
  std::unique_ptr<StateStore> store;  // null if it could not be opened (the test has failed)
};

Prefixed open_prefixed(std::string_view what) {
  Prefixed p;
  auto address = shared_address();
  EXPECT_TRUE(address) << address.error().message;
  if (!address) return p;
  p.address = *address;
  p.prefix = fresh_prefix(what);
  auto store = open_redis_state_store(p.address, RedisStateStoreOptions{.key_prefix = p.prefix});
  EXPECT_TRUE(store) << store.error().message;
  if (store) p.store = std::move(*store);
  return p;
}

std::unique_ptr<StateStore> open_shared(std::string_view what) { return open_prefixed(what).store; }

// ---- A server that goes away under a live store ----

#define ASSERT_STARTED(server)                            \
  do {                                                    \
    Status started = (server).start();                    \
    ASSERT_TRUE(started) << started.error().message;      \
  } while (0)

// Its own server in its own directory, stopped by the fixture's destructor whatever happens.
class RedisRestart : public testing::Test {
 protected:
  warden::test::TempDir dir_;
  RedisServer server_{dir_.path()};
};

TEST_F(RedisRestart, AcknowledgedWritesSurviveACrashAndTheStoreReconnects) {
  ASSERT_STARTED(server_);
  auto opened = open_redis_state_store(server_.address());
  ASSERT_TRUE(opened) << opened.error().message;
  StateStore& store = **opened;

  ASSERT_TRUE(store.put_agent(agent("a1", "Idle"), 0, ""));
  ASSERT_TRUE(store.put_agent(agent("a1", "Working"), 1, ""));
  ASSERT_TRUE(store.enqueue(task("held", 5)));
  ASSERT_TRUE(store.enqueue(task("waiting-1", 1)));
  ASSERT_TRUE(store.enqueue(task("waiting-2", 1)));
  auto held = store.claim("a1", 0, 1000, {});
  ASSERT_TRUE(held && held->has_value());
  ASSERT_TRUE(store.append("one"));
  ASSERT_TRUE(store.append("two"));
  ASSERT_TRUE(store.set_position("c", 2));

  // SIGKILL: no shutdown, no final write; only the fsynced append-only file is left.
  server_.stop(SIGKILL);
  auto down = store.enqueue(task("while-down", 1));
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, Errc::io_error) << down.error().message;
  auto down_read = store.last_seq();
  ASSERT_FALSE(down_read);
  EXPECT_EQ(down_read.error().code, Errc::io_error) << down_read.error().message;

  ASSERT_STARTED(server_);
  // The same store object: it reconnects, and re-sends its scripts to the emptied cache.
  auto a = store.get_agent("a1");
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->state, "Working");
  EXPECT_EQ((*a)->version, 2u);
  auto length = store.queue_length();
  ASSERT_TRUE(length) << length.error().message;
  EXPECT_EQ(*length, 3u);  // the refused enqueue left nothing
  auto acked = store.ack((*held)->ref(), 1);
  ASSERT_TRUE(acked) << acked.error().message;
  auto next = store.claim("a2", 2, 1000, {});
  ASSERT_TRUE(next && next->has_value());
  EXPECT_EQ((*next)->task.id, "waiting-1");
  EXPECT_GT((*next)->token, (*held)->token);
  auto seq = store.append("three");
  ASSERT_TRUE(seq) << seq.error().message;
  EXPECT_EQ(*seq, 3u);
  auto events = store.read(1, 10);
  ASSERT_TRUE(events);
  EXPECT_EQ(*events, (std::vector<Event>{{1, "one"}, {2, "two"}, {3, "three"}}));
  auto pos = store.position("c");
  ASSERT_TRUE(pos);
  EXPECT_EQ(*pos, 2u);
}

TEST_F(RedisRestart, AnIdleConnectionToARestartedServerIsReplacedBeforeAWrite) {
  ASSERT_STARTED(server_);
  auto opened = open_redis_state_store(server_.address());
  ASSERT_TRUE(opened) << opened.error().message;
  StateStore& store = **opened;
  ASSERT_TRUE(store.append("before"));

  // Restarted between two calls: the store's connection is dead but it has not noticed.
  server_.stop(SIGTERM);
  ASSERT_STARTED(server_);
  // append is not idempotent: it may be sent only because the dead connection is found
  // before anything is written to it.
  auto seq = store.append("after");
  ASSERT_TRUE(seq) << seq.error().message;
  EXPECT_EQ(*seq, 2u);
  auto events = store.read(1, 10);
  ASSERT_TRUE(events);
  EXPECT_EQ(*events, (std::vector<Event>{{1, "before"}, {2, "after"}}));
}

TEST(RedisStateStore, OpeningWhereNothingListensIsAnIoError) {
  warden::test::TempDir dir;
  auto opened = open_redis_state_store(RedisAddress::unix_socket((dir / "nobody.sock").string()));
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, Errc::io_error);
  EXPECT_NE(opened.error().message.find("nobody.sock"), std::string::npos) << opened.error().message;
}

TEST(RedisStateStore, ACallCutOffAfterItWasSentHasAnUnknownOutcome) {
  auto address = shared_address();
  ASSERT_TRUE(address) << address.error().message;
  auto opened = open_redis_state_store(*address, RedisStateStoreOptions{.key_prefix = fresh_prefix("cut-off"),
                                                                        .command_timeout = std::chrono::milliseconds(100)});
  ASSERT_TRUE(opened) << opened.error().message;
  StateStore& store = **opened;
  ASSERT_TRUE(store.last_seq());

  // The server holds every write for 400 ms: the append is sent, then times out unanswered.
  command(*address, {"CLIENT", "PAUSE", "400", "WRITE"});
  auto cut = store.append("sent");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, Errc::io_error);
  EXPECT_NE(cut.error().message.find("outcome is unknown"), std::string::npos) << cut.error().message;

  // Whether it ran is up to the server (Redis drops a paused client's command when the
  // client hangs up), but it was not sent twice, and the store works again at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto events = store.read(1, 10);
  ASSERT_TRUE(events) << events.error().message;
  EXPECT_LE(events->size(), 1u);
  auto seq = store.append("after");
  ASSERT_TRUE(seq) << seq.error().message;
  EXPECT_EQ(*seq, events->size() + 1);
}

// ---- What the layout must get exactly right ----

TEST(RedisStateStore, PrioritiesBeyondADoublesPrecisionKeepTheirOrder) {
  auto store = open_shared("extremes");
  ASSERT_TRUE(store);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t k2p53 = int64_t{1} << 53;  // 2^53 and 2^53 + 1 are one double
  ASSERT_TRUE(store->enqueue(task("min", kMin)));
  ASSERT_TRUE(store->enqueue(task("2p53", k2p53)));
  ASSERT_TRUE(store->enqueue(task("max-1", kMax - 1)));
  ASSERT_TRUE(store->enqueue(task("2p53plus1", k2p53 + 1)));
  ASSERT_TRUE(store->enqueue(task("max", kMax)));
  ASSERT_TRUE(store->enqueue(task("-1", -1)));
  const std::map<std::string, int64_t> priority_of{{"min", kMin},           {"2p53", k2p53}, {"max-1", kMax - 1},
                                                   {"2p53plus1", k2p53 + 1}, {"max", kMax},   {"-1", -1}};
  std::vector<std::string> order;
  for (;;) {
    auto c = store->claim("a", 0, 10, {});
    ASSERT_TRUE(c) << c.error().message;
    if (!*c) break;
    order.push_back((*c)->task.id);
    EXPECT_EQ((*c)->task.priority, priority_of.at((*c)->task.id));
    ASSERT_TRUE(store->ack((*c)->ref(), 1));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"max", "max-1", "2p53plus1", "2p53", "-1", "min"}));
}

TEST(RedisStateStore, LeaseTimesBeyondADoublesPrecisionAreExact) {
  auto store = open_shared("times");
  ASSERT_TRUE(store);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t now = (int64_t{1} << 60) + 1;
  ASSERT_TRUE(store->enqueue(task("t", 1)));
  auto c = store->claim("a", now, 1, {});  // expires at now + 1
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->expires_ms, now + 1);
  auto held = store->claim("b", now, 1, {});  // one millisecond before expiry: still held
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->has_value());
  auto back = store->claim("b", now + 1, kMax - now - 1, {});  // at expiry: back, until int64's end
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ((*back)->attempt, 2u);
  EXPECT_EQ((*back)->expires_ms, kMax);
  auto renewed = store->renew((*back)->ref(), kMax - 1, 1);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_EQ(*renewed, kMax);
  auto late = store->ack((*c)->ref(), now);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::failed_precondition);
  ASSERT_TRUE(store->ack((*back)->ref(), kMax - 1));
}

// The fleet calls expire every few seconds for as long as it runs: what it removes must
// leave no key behind, only its id in the one done hash.
TEST(RedisStateStore, ExpiringTasksLeavesNoKeysBehind) {
  Prefixed p = open_prefixed("expire-keys");
  ASSERT_TRUE(p.store);
  StateStore& store = *p.store;
  // The counters and the done hash exist once anything was enqueued, claimed and acked.
  ASSERT_TRUE(store.enqueue(Task{"warm-up", 0, "build", "", 0}));
  auto c = store.claim("a", 0, 10, {});
  ASSERT_TRUE(c && c->has_value());
  ASSERT_TRUE(store.ack((*c)->ref(), 1));
  auto before = keys_under(p.address, p.prefix);
  ASSERT_TRUE(before);
  EXPECT_EQ(*before, 3) << "next_task_seq, next_token, done";

  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(store.enqueue(Task{"t" + std::to_string(i), i % 4, "runner.gone", "p", i}));
  }
  // Some of them claimed by a server that then went away: their leases expire.
  for (int i = 0; i < 10; ++i) {
    auto claimed = store.claim("gone", 0, 50, {});
    ASSERT_TRUE(claimed && claimed->has_value());
  }
  auto removed = store.expire("runner.gone", 100, 50, 1000);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(removed->size(), 100u);
  EXPECT_EQ(store.queue_length().value(), 0u);
  auto after = keys_under(p.address, p.prefix);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *before) << "no task hash, ready or leases set left";
  auto done = command(p.address, {"HLEN", p.prefix + "done"});
  ASSERT_TRUE(done);
  EXPECT_EQ(*done, 101);
}

// A task hash written before tasks carried 'enqueued' has no such field: it reads as
// enqueued at 0, so a fleet's existing queue keeps working and expires as the oldest.
TEST(RedisStateStore, ATaskWrittenWithoutAnEnqueueTimeReadsZero) {
  Prefixed p = open_prefixed("old-task");
  ASSERT_TRUE(p.store);
  StateStore& store = *p.store;
  ASSERT_TRUE(store.enqueue(Task{"claimed", 0, "runner.s", "p", 77}));
  ASSERT_TRUE(store.enqueue(Task{"waiting", 0, "runner.s", "q", 77}));
  ASSERT_EQ(command(p.address, {"HDEL", p.prefix + "task:claimed", "enqueued"}), 1);
  ASSERT_EQ(command(p.address, {"HDEL", p.prefix + "task:waiting", "enqueued"}), 1);
  auto c = store.claim("a", 0, 10, {});
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->task, (Task{"claimed", 0, "runner.s", "p", 0}));
  auto removed = store.expire("runner.", 1, 5, 10);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(*removed, (std::vector<Task>{{"waiting", 0, "runner.s", "q", 0}}));
  auto lapsed = store.expire("runner.", 1, 10, 10);
  ASSERT_TRUE(lapsed) << lapsed.error().message;
  EXPECT_EQ(*lapsed, (std::vector<Task>{{"claimed", 0, "runner.s", "p", 0}}));
}

TEST(RedisStateStore, PrefixesKeepStoresApart) {
  auto one = open_shared("one");
  auto two = open_shared("two");
  ASSERT_TRUE(one && two);
  ASSERT_TRUE(one->enqueue(task("t", 1)));
  ASSERT_TRUE(one->put_agent(agent("a", "Idle"), 0, ""));
  ASSERT_TRUE(one->append("e"));
  ASSERT_TRUE(two->enqueue(task("t", 1)));  // the same id, another queue
  auto length = two->queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 1u);
  auto agents = two->list_agents();
  ASSERT_TRUE(agents);
  EXPECT_TRUE(agents->empty());
  auto last = two->last_seq();
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, 0u);
}

// ---- The address parser ----

TEST(RedisAddress, ParsesTcpAndUnixForms) {
  auto unix_socket = parse_redis_address("unix:/run/redis/redis.sock");
  ASSERT_TRUE(unix_socket) << unix_socket.error().message;
  EXPECT_EQ(*unix_socket,
            RedisAddress::unix_socket("/run/redis/redis.sock"));

  auto tcp = parse_redis_address("redis://10.0.0.7:6380/3");
  ASSERT_TRUE(tcp) << tcp.error().message;
  EXPECT_EQ(*tcp, RedisAddress::tcp("10.0.0.7", 6380, 3));

  auto no_db = parse_redis_address("redis://redis.internal:6379");
  ASSERT_TRUE(no_db) << no_db.error().message;
  EXPECT_EQ(no_db->host, "redis.internal");
  EXPECT_EQ(no_db->port, 6379);
  EXPECT_EQ(no_db->db, 0);

  auto v6 = parse_redis_address("redis://[::1]:6379/0");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6379);
}

TEST(RedisAddress, PrintsWhatItParses) {
  for (const char* text : {"unix:/tmp/r.sock", "redis://10.0.0.7:6380/3", "redis://[::1]:6379/0"}) {
    auto a = parse_redis_address(text);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(a->to_string(), text);
  }
}

TEST(RedisAddress, RefusesMalformedAddressesNamingTheFault) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "unknown scheme"},
      {"localhost:6379", "unknown scheme"},
      {"http://localhost:6379/0", "unknown scheme"},
      {"unix:", "socket path is empty"},
      {"redis://", "no port"},
      {"redis://localhost", "no port"},
      {"redis://localhost/0", "no port"},
      {"redis://:6379/0", "host is empty"},
      {"redis://localhost:0/0", "port must be"},
      {"redis://localhost:65536/0", "port must be"},
      {"redis://localhost:port/0", "port must be"},
      {"redis://localhost:6379/", "database must be"},
      {"redis://localhost:6379/x", "database must be"},
      {"redis://localhost:6379/-1", "database must be"},
      {"redis://localhost:6379/99999999999", "database must be"},
      {"redis://user:secret@localhost:6379/0", "passwords are not supported"},
      {"redis://::1:6379/0", "must be in brackets"},
      {"redis://[::1/0", "closing ']'"},
      {"redis://[::1]/0", "no port"},
  };
  for (const auto& [text, why] : cases) {
    auto a = parse_redis_address(text);
    ASSERT_FALSE(a) << "accepted \"" << text << "\"";
    EXPECT_EQ(a.error().code, Errc::invalid_argument) << text;
    EXPECT_NE(a.error().message.find(why), std::string::npos) << text << ": " << a.error().message;
    EXPECT_NE(a.error().message.find("redis://HOST:PORT/DB or unix:PATH"), std::string::npos) << a.error().message;
  }
}

TEST(RedisStateStoreOptions, UnboundedTimeoutsAndNestingPrefixesAreRefusedBeforeConnecting) {
  const RedisAddress nowhere = RedisAddress::unix_socket("/nonexistent/redis.sock");
  RedisStateStoreOptions zero_timeout;
  zero_timeout.command_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(open_redis_state_store(nowhere, zero_timeout).error().code, Errc::invalid_argument);
  RedisStateStoreOptions zero_connect;
  zero_connect.connect_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(open_redis_state_store(nowhere, zero_connect).error().code, Errc::invalid_argument);
  for (const std::string bad : {"", "warden", "a:task:", "a b:", "w\xff:"}) {
    RedisStateStoreOptions options;
    options.key_prefix = bad;
    EXPECT_EQ(open_redis_state_store(nowhere, options).error().code, Errc::invalid_argument) << bad;
  }
  // A good prefix gets as far as connecting: io_error, nothing listens there.
  EXPECT_EQ(open_redis_state_store(nowhere).error().code, Errc::io_error);
}

}  // namespace
}  // namespace warden::store::test
