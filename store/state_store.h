// The agent supervisor's shared state: agent records under optimistic locking, a priority
// task queue with leased claims, and an append-only event stream with consumer positions.
// StateStore is the interface; LmdbStateStore (store/lmdb_state_store.h) is the embedded
// default, and a fleet of kernels will share one on Redis behind the same interface. The
// interface names no storage type, and tests/store/state_store_conformance.h holds every
// implementation to the same behaviour.
//
// Time: the store never reads a clock. Every call that depends on time takes `now_ms` from
// the caller (a Clock, common/clock.h), so a golden run with a LogicalClock is reproducible.
// Every party sharing one store must pass readings of the same clock: a lease that expires
// at `expires_ms` is judged against whichever `now_ms` the next caller brings.
//
// Atomicity: each mutating call is one transaction, all of it or none of it, and calls from
// any number of threads and processes sharing the store are serialized. A call that returns
// an error changed nothing.
//
// Errors (Errc):
//   invalid_argument     an empty id, a non-positive timeout, a position past the stream's end,
//                        expire with max 0
//   not_found            the named agent or task is not there (remove_agent, ack, release, renew)
//   already_exists       put_agent with expected_version 0 on an agent that exists; enqueue of a
//                        task id that is still in the queue, or was acknowledged or expired
//   failed_precondition  the stored version differs from expected_version; a claim that is no
//                        longer this caller's (another claim took the task, or it expired)
//   corrupt              a stored record does not decode: stop and discard the store
//   io_error, limit_exceeded: the storage refused (disk, map full); retrying may help
// A caller that loses a compare-and-set (already_exists, failed_precondition) re-reads and
// decides again; nothing was written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace warden::store {

// One registered agent (an executor, a runner) as the supervisor last wrote it.
struct AgentRecord {
  std::string id;
  std::string role;
  std::map<std::string, std::string> labels;
  std::string state;  // the agent state machine's state name ("idle", "working", ...: supervisor/agent_state.h)
  // Written by the store: 1 on creation, +1 on every put_agent. Ignored in put_agent's input.
  uint64_t version = 0;
  int64_t last_heartbeat_ms = 0;
  std::string details;  // opaque to the store: JSON or any bytes the owner chooses

  bool operator==(const AgentRecord&) const = default;
};

// A unit of work in the queue. Higher priority is claimed first; among equal priorities the
// task enqueued first is claimed first.
struct Task {
  std::string id;  // unique among the tasks in the queue; non-empty
  int64_t priority = 0;
  std::string kind;     // what sort of agent may take it; ClaimFilter matches on it
  std::string payload;  // opaque bytes
  // When it was enqueued, by the caller's clock (the store reads none): expire() judges age
  // by it. Stored with the task and returned by claim(). Last, so Task{id, priority, kind,
  // payload} still compiles (and leaves it 0).
  int64_t enqueued_ms = 0;

  bool operator==(const Task&) const = default;
};

// Names one claim: the only handle that can ack, release or renew it.
struct ClaimRef {
  std::string task_id;
  std::string agent_id;
  uint64_t token = 0;

  bool operator==(const ClaimRef&) const = default;
};

// A task leased to one agent until expires_ms. If it is not acked by then, it goes back to
// the queue and the next claim may take it again (at-least-once delivery); from that moment
// this claim's ack is refused, so one decision is recorded per task (exactly-once decisions).
struct Claim {
  Task task;
  std::string agent_id;
  uint64_t token = 0;    // unique among every claim the store has ever made, never 0
  uint32_t attempt = 0;  // 1 on the task's first claim, +1 on each later one (expired or released)
  int64_t expires_ms = 0;

  ClaimRef ref() const { return ClaimRef{task.id, agent_id, token}; }
};

// Which tasks a claim may take: those whose kind is listed; an empty list takes any task.
// A claim with a filter passes over non-matching tasks ahead of the first match, so its cost
// grows with how many of them wait at the head of the queue.
struct ClaimFilter {
  std::vector<std::string> kinds;
};

// An agent's compare-and-set carried by another call (ack_and_put) and written in that call's
// transaction: `record` at expected_version + 1, with `event` appended as put_agent appends
// its. expected_version is never 0: it updates an agent, it does not create one.
struct AgentWrite {
  AgentRecord record;
  uint64_t expected_version = 0;
  std::string event;
};

struct Event {
  uint64_t seq = 0;  // 1, 2, 3, ... with no gaps, in append order
  std::string bytes;

  bool operator==(const Event&) const = default;
};

// Implementations say who may share them and what is durable; the contract below holds for
// every one. Thread-safe: one StateStore may be called from many threads at once.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // ---- Agents: compare-and-set on `version` ----

  // Writes `record` (its version field ignored) if the stored version is expected_version:
  // 0 means "must not exist yet" (already_exists if it does); otherwise the agent must exist
  // (not_found) at exactly that version (failed_precondition). Returns the new version:
  // expected_version + 1, or on creation one past the last version of an agent of that id
  // removed before (so no view of an earlier incarnation can compare equal to the new one).
  // A non-empty `event` is appended to the event stream in the same
  // transaction: recorded exactly when the write is, and never for a refused one.
  virtual Result<uint64_t> put_agent(const AgentRecord& record, uint64_t expected_version, std::string_view event) = 0;
  // nullopt if no agent has that id.
  virtual Result<std::optional<AgentRecord>> get_agent(std::string_view id) = 0;
  // Every agent, in id order.
  virtual Result<std::vector<AgentRecord>> list_agents() = 0;
  // Removes the agent if it is stored at expected_version (not_found, failed_precondition).
  virtual Status remove_agent(std::string_view id, uint64_t expected_version) = 0;

  // ---- The task queue ----

  // Adds a task, ready to claim. A task id still in the queue (ready or claimed), or one
  // acknowledged or expired before, is refused with already_exists and the queue is
  // unchanged: a submitter that retries after a lost reply may treat already_exists as
  // success, and a task id is done at most once (the store remembers every acknowledged and
  // expired id), so a retried submit can never run a decided task again.
  virtual Status enqueue(const Task& task) = 0;
  // Atomically leases the highest-priority, then oldest, task that matches `filter` and is
  // either unclaimed or held by a claim that expired (expires_ms <= now_ms) to `agent_id`
  // until now_ms + visibility_timeout_ms. An expired task keeps its place: it is claimed
  // ahead of tasks of its priority enqueued after it. nullopt if no task is claimable.
  virtual Result<std::optional<Claim>> claim(std::string_view agent_id, int64_t now_ms, int64_t visibility_timeout_ms,
                                             const ClaimFilter& filter) = 0;
  // Removes the task: its work is done, for good (its id is remembered). Refused
  // (failed_precondition) unless `ref` is the task's current claim, by that agent, and
  // now_ms < its expires_ms; not_found if the task is not in the queue (acked by another
  // claim, or never enqueued). Idempotent: the claim that acked a task acking it again gets
  // ok, so a caller that lost the reply can retry.
  virtual Status ack(const ClaimRef& ref, int64_t now_ms) = 0;
  // ack(), and in the same transaction `then`'s compare-and-set, so the agent's record
  // follows the ack at no extra round trip. A refused ack writes nothing. If the ack holds
  // (or is its claim's retry) but the agent is gone, not at then.expected_version or its
  // record does not decode, the ack alone is written and nullopt returned: the caller
  // re-reads the agent and writes again.
  // Otherwise returns the version written. invalid_argument for a `then` put_agent would
  // refuse, or one with expected_version 0.
  virtual Result<std::optional<uint64_t>> ack_and_put(const ClaimRef& ref, int64_t now_ms, const AgentWrite& then) = 0;
  // Gives the task back unfinished: it is claimable at once, in its original place, and its
  // attempt count is kept. Refused as ack is.
  virtual Status release(const ClaimRef& ref, int64_t now_ms) = 0;
  // Extends a live claim to now_ms + visibility_timeout_ms (a long task's heartbeat) and
  // returns the new expiry. Refused as ack is: an expired claim cannot be revived.
  virtual Result<int64_t> renew(const ClaimRef& ref, int64_t now_ms, int64_t visibility_timeout_ms) = 0;
  // Tasks in the queue, claimed or not.
  virtual Result<uint64_t> queue_length() = 0;
  // Removes, unrun, up to `max` tasks whose kind begins with `kind_prefix` (empty: any kind),
  // that were enqueued before `enqueued_before_ms` (Task::enqueued_ms < it), and that no live
  // claim holds at now_ms (a claim that expired by now_ms, expires_ms <= now_ms, counts as
  // none): the tasks of a server that is gone, which nobody will take. Returns the removed
  // tasks in queue order (the order claim() would take them). Each removed id is remembered as
  // done, as an ack remembers it, so a retried enqueue of it is refused (already_exists), and
  // any claim that held it gets not_found from ack, release and renew (no claim acked it, so
  // no ack is answered as a retry). A live claim's task is never removed: its ack works as
  // before. max 0 is invalid_argument. One transaction; its cost grows with the number of
  // tasks in the queue (it may scan them all).
  virtual Result<std::vector<Task>> expire(std::string_view kind_prefix, int64_t enqueued_before_ms, int64_t now_ms,
                                           size_t max) = 0;

  // ---- The event stream ----

  // Appends an event and returns its sequence number: one more than the last one (1 first).
  virtual Result<uint64_t> append(std::string_view bytes) = 0;
  // Up to `max` events with seq >= from_seq, in order; empty past the end.
  virtual Result<std::vector<Event>> read(uint64_t from_seq, uint64_t max) = 0;
  // The last sequence number appended, 0 for an empty stream.
  virtual Result<uint64_t> last_seq() = 0;
  // Records that `consumer` has handled every event up to and including `seq` (0: none).
  // A position past last_seq() is invalid_argument; moving back is allowed (a replay).
  virtual Status set_position(std::string_view consumer, uint64_t seq) = 0;
  // The consumer's recorded position, 0 if it never set one.
  virtual Result<uint64_t> position(std::string_view consumer) = 0;
};

}  // namespace warden::store
