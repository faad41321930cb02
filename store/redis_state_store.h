// The shared StateStore: one Redis server (7.0; streams need 5.0) holding the state of a
// fleet whose `warden serve` processes, on one or several machines, all open it.
//
// Ownership and sharing: the StateStore open_redis_state_store returns owns one connection
// to the server (a hiredis context, closed on destruction); the caller owns the unique_ptr.
// Any number of store objects, in any number of processes, may open the same server and
// prefix. One object is safe to share between threads: a mutex serializes its calls over its
// one connection (Redis runs commands one at a time anyway; open more objects for more
// calls in flight). A forked child must open its own object: a connection is never shared
// across processes.
//
// Atomicity: every mutating call is one server-side Lua script (or one command), and Redis
// runs a script with nothing else interleaved, so a claim is atomic across the fleet. The
// scripts check everything before they write, so a call that returns an error changed
// nothing, except as noted for io_error below. The client never reads a value and writes it
// back: compare-and-set, claim, ack, release and renew are decided inside the server.
//
// Connection failures: before each call the connection is checked (a zero-timeout poll: a
// server that restarted or closed an idle connection is noticed then, before anything is
// sent) and re-opened.
// If it breaks during a call, the store reconnects once and resends the call only if the
// call is idempotent (every read, set_position and renew) or the command was never written
// to the socket. Otherwise the call returns io_error saying the outcome is unknown: the
// script may or may not have run, so the caller re-reads (get_agent, queue_length,
// last_seq) before it decides again; a retried enqueue that gets already_exists has
// succeeded. A command that outlives `command_timeout` counts as a broken connection.
//
// Errors, besides the StateStore ones: io_error when the server cannot be reached, refuses
// (LOADING, READONLY, MISCONF: it cannot persist) or the outcome is unknown (above);
// limit_exceeded when Redis is out of memory (maxmemory, OOM); corrupt when a key under the
// prefix holds something this store did not write (WRONGTYPE, a record that does not
// decode); internal when a script fails (a bug).
//
// Durability is the server's configuration, not this client's: with `appendonly yes` and
// `appendfsync always` a call that returned has been fsynced to the append-only file and
// survives a crash of Redis or of its machine; with `everysec` (Redis's default) up to the
// last second of calls may be lost; without the append-only file, everything since the
// last snapshot. Use `appendfsync always` for a fleet's queue. Scripts are kept in the
// server's cache and re-sent (EVAL after NOSCRIPT) after a restart empties it.
//
// Layout, every key under options.key_prefix (P, "warden:" by default) in one database:
//   P agents          sorted set of agent ids (all scored 0, so in byte order: list_agents)
//   P agent:<id>      hash: role, state, version, heartbeat_ms, details, label:<name>...
//   P task:<id>       hash: priority, kind, payload, attempts, ready (its member of P ready),
//                     enqueued (enqueued_ms as hex, below; absent in a task written before
//                     it existed, which reads 0), and, while claimed, token, agent, expires
//                     (hex, below), lease
//   P ready           sorted set of unclaimed tasks, all scored 0 and ordered by member:
//                     hex16(~ordered(priority)) hex16(enqueue seq) task id. Scores are
//                     doubles, exact to 53 bits only; priorities are int64 and the FIFO
//                     seq grows without bound, so the order lives in fixed-width hex
//                     members (byte order is numeric order) and claim takes the first one.
//   P leases          sorted set of claimed tasks, scored 0, member hex16(ordered(expires_ms))
//                     hex16(token) task id: a claim first moves every lease up to now_ms
//                     (ZRANGEBYLEX) back to P ready under its old member, so the task keeps
//                     its place, then takes the head of P ready.
//   P next_task_seq, P next_token   counters (INCR); tokens are never reused
//   P events          stream; event n is entry "<n>-0" with one field "b" (XLEN is the last
//                     seq; nothing is ever deleted from it)
//   P positions       hash: consumer -> seq
//   P retired         hash: removed agent id -> its last version (the next incarnation goes on)
//   P done            hash: acknowledged task id -> "agent token" of the claim that acked it
//                     (a task id is done once; the same claim's retried ack is answered ok);
//                     expired task id -> "expired" (no space: no claim's "agent token")
// ordered(x) maps int64 onto uint64 preserving order (x XOR 2^63). The layout uses keys a
// script computes (P task:<id>) beside the ones it declares: standalone Redis (or one
// Sentinel-managed primary), not Redis Cluster.
//
// redis_state_store.cc is one unit (~1,090 lines, some 240 of them its Lua scripts): one
// StateStore implementation whose scripts and C++ callers share key names and reply shapes,
// and the one file that may include hiredis (tools/check-architecture).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "store/state_store.h"

namespace warden::store {

// Where the server listens.
struct RedisAddress {
  enum class Kind { tcp, unix_socket };
  Kind kind = Kind::tcp;
  std::string host;  // tcp: a name or an address ("[::1]" is written without brackets here)
  uint16_t port = 0;  // tcp
  std::string path;   // unix_socket
  int db = 0;         // the database SELECTed on every connection (tcp: from the URL; unix: 0)

  static RedisAddress unix_socket(std::string path) {
    RedisAddress a;
    a.kind = Kind::unix_socket;
    a.path = std::move(path);
    return a;
  }
  static RedisAddress tcp(std::string host, uint16_t port, int db = 0) {
    RedisAddress a;
    a.host = std::move(host);
    a.port = port;
    a.db = db;
    return a;
  }

  // "redis://HOST:PORT/DB" or "unix:PATH", as parse_redis_address reads it.
  std::string to_string() const;
  bool operator==(const RedisAddress&) const = default;
};

// Reads "redis://HOST:PORT" or "redis://HOST:PORT/DB" (HOST a name, an IPv4 address or a
// bracketed IPv6 address; PORT 1..65535; DB a decimal 0..2^31-1, default 0) and
// "unix:PATH" (PATH non-empty; database 0). Anything else is invalid_argument naming what
// is wrong. No user name or password: a server reachable by Warden only (a unix socket with
// tight permissions, or a private network).
Result<RedisAddress> parse_redis_address(std::string_view text);

struct RedisStateStoreOptions {
  // Every key lives under it; stores with different prefixes are apart. As store::check_id,
  // with one ':' and only at its end.
  std::string key_prefix = "warden:";
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds command_timeout{10'000};  // past it the connection counts as broken
};

// Connects (io_error if the server cannot be reached; invalid_argument if it refuses to
// SELECT the address's database), loads the scripts (internal if the server rejects them)
// and returns the store. Nothing is written at open:
// an empty prefix is an empty store.
Result<std::unique_ptr<StateStore>> open_redis_state_store(const RedisAddress& address,
                                                           const RedisStateStoreOptions& options = {});

}  // namespace warden::store
