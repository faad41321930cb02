// One unit (~740 lines): why in lmdb_state_store.h.
#include "store/lmdb_state_store.h"

#include <algorithm>
#include <limits>
#include <system_error>
#include <type_traits>
#include <utility>

#include "common/lmdb.h"
#include "store/record_checks.h"

namespace warden::store {
namespace {

// The database handles, fixed at open and read-only afterwards.
struct Dbis {
  MDB_dbi agents, tasks, ready, leases, events, positions, meta, done;
};

// Records are a format byte, then fixed-width big-endian integers and length-prefixed
// strings in a fixed order. Binary, not JSON: details and payloads are arbitrary bytes.
constexpr char kFormat = 1;
constexpr uint64_t kSignBit = uint64_t{1} << 63;

// Maps int64 onto uint64 keeping order, so a big-endian key sorts signed values right.
uint64_t ordered(int64_t v) { return static_cast<uint64_t>(v) ^ kSignBit; }
int64_t unordered(uint64_t v) { return static_cast<int64_t>(v ^ kSignBit); }

class Writer {
 public:
  Writer() { out_.push_back(kFormat); }
  void u64(uint64_t v) { out_.append(lmdb::U64Key(v).view()); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// Reads what Writer wrote; any shortfall or leftover sets !ok() instead of reading past.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) { ok_ = take(1) == std::string_view(&kFormat, 1); }
  uint64_t u64() {
    std::string_view b = take(8);
    uint64_t v = 0;
    for (char c : b) v = (v << 8) | static_cast<unsigned char>(c);
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    uint64_t n = u64();
    if (n > in_.size()) ok_ = false;
    return std::string(take(ok_ ? n : 0));
  }
  bool ok_at_end() const { return ok_ && in_.empty(); }
  bool ok() const { return ok_; }
  bool at_end() const { return in_.empty(); }

 private:
  std::string_view take(size_t n) {
    if (!ok_ || n > in_.size()) {
      ok_ = false;
      return {};
    }
    std::string_view head = in_.substr(0, n);
    in_.remove_prefix(n);
    return head;
  }
  std::string_view in_;
  bool ok_ = true;
};

std::string encode_agent(const AgentRecord& r) {
  Writer w;
  w.str(r.id);
  w.str(r.role);
  w.u64(r.labels.size());
  for (const auto& [k, v] : r.labels) {
    w.str(k);
    w.str(v);
  }
  w.str(r.state);
  w.u64(r.version);
  w.i64(r.last_heartbeat_ms);
  w.str(r.details);
  return w.bytes();
}

Result<AgentRecord> decode_agent(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  AgentRecord a;
  a.id = r.str();
  a.role = r.str();
  for (uint64_t n = r.u64(); r.ok() && n > 0; --n) {
    std::string k = r.str();
    a.labels[std::move(k)] = r.str();
  }
  a.state = r.str();
  a.version = r.u64();
  a.last_heartbeat_ms = r.i64();
  a.details = r.str();
  if (!r.ok_at_end() || a.id != key) {
    return fail(Errc::corrupt, "agent record \"" + std::string(key) + "\" does not decode: the state store is damaged");
  }
  return a;
}

// A task as stored: the task, where it stands in the queue and its current claim.
struct TaskRow {
  Task task;
  uint64_t seq = 0;  // enqueue order, the FIFO tie-break
  uint32_t attempts = 0;
  uint64_t token = 0;  // the current claim's token; 0 when unclaimed
  std::string agent;
  int64_t expires_ms = 0;
};

std::string encode_task(const TaskRow& t) {
  Writer w;
  w.str(t.task.id);
  w.i64(t.task.priority);
  w.str(t.task.kind);
  w.str(t.task.payload);
  w.u64(t.seq);
  w.u64(t.attempts);
  w.u64(t.token);
  w.str(t.agent);
  w.i64(t.expires_ms);
  w.i64(t.task.enqueued_ms);
  return w.bytes();
}

Result<TaskRow> decode_task(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  TaskRow t;
  t.task.id = r.str();
  t.task.priority = r.i64();
  t.task.kind = r.str();
  t.task.payload = r.str();
  t.seq = r.u64();
  uint64_t attempts = r.u64();
  t.token = r.u64();
  t.agent = r.str();
  t.expires_ms = r.i64();
  // A row written before tasks carried enqueued_ms ends here (same format byte): it reads 0,
  // so a store made by an older build opens, and expire() counts its tasks as oldest.
  if (r.ok() && !r.at_end()) t.task.enqueued_ms = r.i64();
  if (!r.ok_at_end() || t.task.id != key || attempts > std::numeric_limits<uint32_t>::max()) {
    return fail(Errc::corrupt, "task record \"" + std::string(key) + "\" does not decode: the state store is damaged");
  }
  t.attempts = static_cast<uint32_t>(attempts);
  return t;
}

// (priority descending, enqueue seq ascending): the first key is the next task to claim.
std::string ready_key(const TaskRow& t) {
  std::string key(lmdb::U64Key(~ordered(t.task.priority)).view());
  key.append(lmdb::U64Key(t.seq).view());
  return key;
}

// The ready index carries the kind so a filtered claim can skip a task without loading it.
std::string ready_value(const TaskRow& t) {
  Writer w;
  w.str(t.task.id);
  w.str(t.task.kind);
  return w.bytes();
}

// (expiry, token): the first key is the claim that expires first; tokens are unique.
std::string lease_key(const TaskRow& t) {
  std::string key(lmdb::U64Key(ordered(t.expires_ms)).view());
  key.append(lmdb::U64Key(t.token).view());
  return key;
}

Error damaged(std::string_view what) {
  return Error{Errc::corrupt, std::string(what) + ": the state store is damaged"};
}

// Runs body(txn) in one write transaction and commits it if body succeeded; on any error the
// transaction is aborted and nothing is written.
template <typename F>
std::invoke_result_t<F, lmdb::Txn&> in_write_txn(const lmdb::Env& env, F&& body) {
  auto txn = lmdb::Txn::begin(env, false);
  if (!txn) return std::unexpected(txn.error());
  auto result = body(*txn);
  if (!result) return result;
  if (Status st = txn->commit(); !st) return std::unexpected(st.error());
  return result;
}

template <typename F>
std::invoke_result_t<F, lmdb::Txn&> in_read_txn(const lmdb::Env& env, F&& body) {
  auto txn = lmdb::Txn::begin(env, true);
  if (!txn) return std::unexpected(txn.error());
  return body(*txn);
}

// The value at `key`, or nullopt if absent.
Result<std::optional<std::string_view>> lookup(lmdb::Txn& txn, MDB_dbi dbi, std::string_view key) {
  auto value = txn.get(dbi, key);
  if (value) return std::optional<std::string_view>(*value);
  if (value.error().code == Errc::not_found) return std::optional<std::string_view>();
  return std::unexpected(value.error());
}

Status erase(lmdb::Txn& txn, MDB_dbi dbi, std::string_view key, std::string_view what) {
  MDB_val k = lmdb::val(key);
  if (int rc = mdb_del(txn.get(), dbi, &k, nullptr); rc != 0) return std::unexpected(lmdb::error(rc, what));
  return {};
}

// Takes the next value of a counter in `meta` (counters start at 1) and advances it.
Result<uint64_t> next_counter(lmdb::Txn& txn, const Dbis& d, std::string_view name) {
  auto stored = lookup(txn, d.meta, name);
  if (!stored) return std::unexpected(stored.error());
  uint64_t next = 1;
  if (*stored) {
    auto v = lmdb::decode_u64(**stored);
    if (!v) return std::unexpected(damaged("counter " + std::string(name)));
    next = *v;
  }
  if (Status st = txn.put(d.meta, name, lmdb::U64Key(next + 1).view(), 0, "advancing a counter"); !st) {
    return std::unexpected(st.error());
  }
  return next;
}

Result<std::optional<TaskRow>> load_task(lmdb::Txn& txn, const Dbis& d, std::string_view id) {
  auto bytes = lookup(txn, d.tasks, id);
  if (!bytes) return std::unexpected(bytes.error());
  if (!*bytes) return std::optional<TaskRow>();
  auto row = decode_task(id, **bytes);
  if (!row) return std::unexpected(row.error());
  return std::optional<TaskRow>(std::move(*row));
}

Status store_task(lmdb::Txn& txn, const Dbis& d, const TaskRow& row) {
  return txn.put(d.tasks, row.task.id, encode_task(row), 0, "storing a task");
}

Status make_ready(lmdb::Txn& txn, const Dbis& d, TaskRow& row) {
  row.token = 0;
  row.agent.clear();
  row.expires_ms = 0;
  if (Status st = txn.put(d.ready, ready_key(row), ready_value(row), 0, "indexing a ready task"); !st) return st;
  return store_task(txn, d, row);
}

// Moves every claim that expired by now_ms back to the ready index, at its old key.
Status requeue_expired(lmdb::Txn& txn, const Dbis& d, int64_t now_ms) {
  auto cursor = lmdb::Cursor::open(txn, d.leases);
  if (!cursor) return std::unexpected(cursor.error());
  for (;;) {
    MDB_val k{}, v{};
    auto found = cursor->get(k, v, MDB_FIRST);
    if (!found) return std::unexpected(found.error());
    if (!*found) return {};
    auto expiry = lmdb::decode_u64(lmdb::view(k).substr(0, 8));
    if (!expiry || k.mv_size != 16) return std::unexpected(damaged("a lease key"));
    if (unordered(*expiry) > now_ms) return {};
    std::string id(lmdb::view(v));
    if (int rc = mdb_cursor_del(cursor->get(), 0); rc != 0) return std::unexpected(lmdb::error(rc, "dropping a lease"));
    auto row = load_task(txn, d, id);
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::unexpected(damaged("lease on missing task \"" + id + "\""));
    if (Status st = make_ready(txn, d, **row); !st) return st;
  }
}

bool matches(const ClaimFilter& filter, std::string_view kind) {
  return filter.kinds.empty() || std::ranges::find(filter.kinds, kind) != filter.kinds.end();
}

// Removes and returns the id of the first ready task the filter matches.
Result<std::optional<std::string>> take_ready(lmdb::Txn& txn, const Dbis& d, const ClaimFilter& filter) {
  auto cursor = lmdb::Cursor::open(txn, d.ready);
  if (!cursor) return std::unexpected(cursor.error());
  MDB_val k{}, v{};
  for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
    auto found = cursor->get(k, v, op);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::optional<std::string>();
    Reader r(lmdb::view(v));
    std::string id = r.str();
    std::string kind = r.str();
    if (!r.ok_at_end()) return std::unexpected(damaged("a ready index entry"));
    if (!matches(filter, kind)) continue;
    if (int rc = mdb_cursor_del(cursor->get(), 0); rc != 0) {
      return std::unexpected(lmdb::error(rc, "taking a ready task"));
    }
    return std::optional<std::string>(std::move(id));
  }
}

// What `done` keeps of an ack: the claim that made it, so only that claim's retry is answered ok.
std::string ack_mark(const ClaimRef& ref) { return ref.agent_id + " " + std::to_string(ref.token); }
// What `done` keeps of an expired task: ids hold no space, so no ack_mark() equals it.
constexpr std::string_view kExpiredMark = "expired";

// The task `ref` names, if `ref` is its live claim at now_ms; the refusal otherwise.

Result<TaskRow> held_claim(lmdb::Txn& txn, const Dbis& d, const ClaimRef& ref, int64_t now_ms) {
  auto row = load_task(txn, d, ref.task_id);
  if (!row) return std::unexpected(row.error());
  const std::string task = "task \"" + ref.task_id + "\"";
  if (!*row) {
    return fail(Errc::not_found, task + " is not in the queue (acknowledged or expired already, or never enqueued)");
  }
  TaskRow& t = **row;
  if (t.token == 0) {
    return fail(Errc::failed_precondition,
                task + " is not claimed: its claim expired or was released, and it waits in the queue");
  }
  if (t.agent != ref.agent_id) {
    return fail(Errc::failed_precondition, task + " is claimed by agent \"" + t.agent + "\", not \"" + ref.agent_id + "\"");
  }
  if (t.token != ref.token) {
    return fail(Errc::failed_precondition, task + " is held by a later claim (token " + std::to_string(t.token) +
                                               "); claim " + std::to_string(ref.token) + " expired");
  }
  if (now_ms >= t.expires_ms) {
    return fail(Errc::failed_precondition, task + ": the claim expired at " + std::to_string(t.expires_ms) +
                                               " ms (now " + std::to_string(now_ms) + "); the task goes back to the queue");
  }
  return std::move(t);
}



Result<uint64_t> stream_end(lmdb::Txn& txn, const Dbis& d) {
  auto cursor = lmdb::Cursor::open(txn, d.events);
  if (!cursor) return std::unexpected(cursor.error());
  MDB_val k{}, v{};
  auto found = cursor->get(k, v, MDB_LAST);
  if (!found) return std::unexpected(found.error());
  if (!*found) return uint64_t{0};
  auto seq = lmdb::decode_u64(lmdb::view(k));
  if (!seq) return std::unexpected(damaged("an event key"));
  return *seq;
}

class LmdbStateStore final : public StateStore {
 public:
  LmdbStateStore(lmdb::Env env, Dbis dbis) : env_(std::move(env)), dbis_(dbis) {}

  Result<uint64_t> put_agent(const AgentRecord& record, uint64_t expected_version, std::string_view event) override;
  Result<std::optional<AgentRecord>> get_agent(std::string_view id) override;
  Result<std::vector<AgentRecord>> list_agents() override;
  Status remove_agent(std::string_view id, uint64_t expected_version) override;

  Status enqueue(const Task& task) override;
  Result<std::optional<Claim>> claim(std::string_view agent_id, int64_t now_ms, int64_t visibility_timeout_ms,
                                     const ClaimFilter& filter) override;
  Status ack(const ClaimRef& ref, int64_t now_ms) override;
  Result<std::optional<uint64_t>> ack_and_put(const ClaimRef& ref, int64_t now_ms, const AgentWrite& then) override;
  Status release(const ClaimRef& ref, int64_t now_ms) override;
  Result<int64_t> renew(const ClaimRef& ref, int64_t now_ms, int64_t visibility_timeout_ms) override;
  Result<uint64_t> queue_length() override;
  Result<std::vector<Task>> expire(std::string_view kind_prefix, int64_t enqueued_before_ms, int64_t now_ms,
                                   size_t max) override;

  Result<uint64_t> append(std::string_view bytes) override;
  Result<std::vector<Event>> read(uint64_t from_seq, uint64_t max) override;
  Result<uint64_t> last_seq() override;
  Status set_position(std::string_view consumer, uint64_t seq) override;
  Result<uint64_t> position(std::string_view consumer) override;

 private:
  // Appends to the event stream inside `txn` (append() and put_agent's event).
  Result<uint64_t> append_in(lmdb::Txn& txn, std::string_view bytes);
  // put_agent's compare-and-set and ack's removal, inside `txn`.
  Result<uint64_t> put_in(lmdb::Txn& txn, const AgentRecord& record, uint64_t expected_version, std::string_view event);
  Status ack_in(lmdb::Txn& txn, const ClaimRef& ref, int64_t now_ms);

  // Both fixed at construction: the object is safe to share between threads because every
  // call works in its own LMDB transaction.
  lmdb::Env env_;
  Dbis dbis_;
};

// ---- Agents ----

Result<uint64_t> LmdbStateStore::put_agent(const AgentRecord& record, uint64_t expected_version, std::string_view event) {
  if (Status st = check_agent_record(record); !st) return std::unexpected(st.error());
  if (Status st = check_event(event); !st) return std::unexpected(st.error());
  return in_write_txn(env_, [&](lmdb::Txn& txn) { return put_in(txn, record, expected_version, event); });
}

Result<uint64_t> LmdbStateStore::put_in(lmdb::Txn& txn, const AgentRecord& record, uint64_t expected_version,
                                        std::string_view event) {
  auto stored = lookup(txn, dbis_.agents, record.id);
  if (!stored) return std::unexpected(stored.error());
  const std::string agent = "agent \"" + record.id + "\"";
  if (!*stored && expected_version != 0) {
    return fail(Errc::not_found, agent + " does not exist (expected version " + std::to_string(expected_version) + ")");
  }
  if (*stored) {
    auto current = decode_agent(record.id, **stored);
    if (!current) return std::unexpected(current.error());
    if (expected_version == 0) {
      return fail(Errc::already_exists, agent + " exists already (version " + std::to_string(current->version) + ")");
    }
    if (current->version != expected_version) {
      return fail(Errc::failed_precondition, agent + " is at version " + std::to_string(current->version) +
                                                 ", not " + std::to_string(expected_version) + ": re-read it");
    }
  }
  AgentRecord next = record;
  next.version = expected_version + 1;
  if (expected_version == 0) {
    auto retired = lookup(txn, dbis_.meta, "retired:" + record.id);
    if (!retired) return std::unexpected(retired.error());
    if (*retired) {
      auto last = lmdb::decode_u64(**retired);
      if (!last) return std::unexpected(last.error());
      next.version = *last + 1;
    }
  }
  if (Status st = txn.put(dbis_.agents, next.id, encode_agent(next), 0, "storing an agent"); !st) {
    return std::unexpected(st.error());
  }
  if (!event.empty()) {
    if (auto seq = append_in(txn, event); !seq) return std::unexpected(seq.error());
  }
  return next.version;
}

Result<std::optional<AgentRecord>> LmdbStateStore::get_agent(std::string_view id) {
  if (Status st = check_id(id, "agent id"); !st) return std::unexpected(st.error());
  return in_read_txn(env_, [&](lmdb::Txn& txn) -> Result<std::optional<AgentRecord>> {
    auto stored = lookup(txn, dbis_.agents, id);
    if (!stored) return std::unexpected(stored.error());
    if (!*stored) return std::optional<AgentRecord>();
    auto record = decode_agent(id, **stored);
    if (!record) return std::unexpected(record.error());
    return std::optional<AgentRecord>(std::move(*record));
  });
}

Result<std::vector<AgentRecord>> LmdbStateStore::list_agents() {
  return in_read_txn(env_, [&](lmdb::Txn& txn) -> Result<std::vector<AgentRecord>> {
    std::vector<AgentRecord> agents;
    Status st = lmdb::for_each(txn, dbis_.agents, [&](std::string_view key, std::string_view value) -> Status {
      auto record = decode_agent(key, value);
      if (!record) return std::unexpected(record.error());
      agents.push_back(std::move(*record));
      return {};
    });
    if (!st) return std::unexpected(st.error());
    return agents;
  });
}

Status LmdbStateStore::remove_agent(std::string_view id, uint64_t expected_version) {
  if (Status st = check_id(id, "agent id"); !st) return st;
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Status {
    auto stored = lookup(txn, dbis_.agents, id);
    if (!stored) return std::unexpected(stored.error());
    const std::string agent = "agent \"" + std::string(id) + "\"";
    if (!*stored) return fail(Errc::not_found, agent + " does not exist");
    auto current = decode_agent(id, **stored);
    if (!current) return std::unexpected(current.error());
    if (current->version != expected_version) {
      return fail(Errc::failed_precondition, agent + " is at version " + std::to_string(current->version) + ", not " +
                                                 std::to_string(expected_version) + ": re-read it");
    }
    if (Status st = erase(txn, dbis_.agents, id, "removing an agent"); !st) return st;
    // The next incarnation continues from this version, so a view of this one can never
    // compare equal to it.
    return txn.put(dbis_.meta, "retired:" + std::string(id), lmdb::U64Key(current->version).view(), 0,
                   "remembering a removed agent's version");
  });
}

// ---- The task queue ----

Status LmdbStateStore::enqueue(const Task& task) {
  if (Status st = check_task(task); !st) return st;
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Status {
    auto existing = lookup(txn, dbis_.tasks, task.id);
    if (!existing) return std::unexpected(existing.error());
    if (*existing) return fail(Errc::already_exists, "task \"" + task.id + "\" is already in the queue");
    auto acked = lookup(txn, dbis_.done, task.id);
    if (!acked) return std::unexpected(acked.error());
    if (*acked) {
      const bool expired = **acked == kExpiredMark;
      return fail(Errc::already_exists, "task \"" + task.id + "\" was " + (expired ? "expired" : "acknowledged") +
                                            " already: a task id is done once");
    }
    auto seq = next_counter(txn, dbis_, "next_task_seq");
    if (!seq) return std::unexpected(seq.error());
    TaskRow row{task, *seq, 0, 0, {}, 0};
    return make_ready(txn, dbis_, row);
  });
}

Result<std::optional<Claim>> LmdbStateStore::claim(std::string_view agent_id, int64_t now_ms,
                                                   int64_t visibility_timeout_ms, const ClaimFilter& filter) {
  if (Status st = check_id(agent_id, "agent id"); !st) return std::unexpected(st.error());
  auto expires = lease_expiry(now_ms, visibility_timeout_ms);
  if (!expires) return std::unexpected(expires.error());
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Result<std::optional<Claim>> {
    if (Status st = requeue_expired(txn, dbis_, now_ms); !st) return std::unexpected(st.error());
    auto id = take_ready(txn, dbis_, filter);
    if (!id) return std::unexpected(id.error());
    if (!*id) return std::optional<Claim>();
    auto row = load_task(txn, dbis_, **id);
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::unexpected(damaged("ready index names missing task \"" + **id + "\""));
    auto token = next_counter(txn, dbis_, "next_claim_token");
    if (!token) return std::unexpected(token.error());
    TaskRow& t = **row;
    t.attempts += 1;
    t.token = *token;
    t.agent = std::string(agent_id);
    t.expires_ms = *expires;
    if (Status st = txn.put(dbis_.leases, lease_key(t), t.task.id, 0, "recording a lease"); !st) {
      return std::unexpected(st.error());
    }
    if (Status st = store_task(txn, dbis_, t); !st) return std::unexpected(st.error());
    return std::optional<Claim>(Claim{std::move(t.task), std::move(t.agent), t.token, t.attempts, t.expires_ms});
  });
}

Status LmdbStateStore::ack(const ClaimRef& ref, int64_t now_ms) {
  if (Status st = check_claim_ref(ref); !st) return st;
  return in_write_txn(env_, [&](lmdb::Txn& txn) { return ack_in(txn, ref, now_ms); });
}

Status LmdbStateStore::ack_in(lmdb::Txn& txn, const ClaimRef& ref, int64_t now_ms) {
  const std::string acker = ack_mark(ref);
  auto row = held_claim(txn, dbis_, ref, now_ms);
  if (!row) {
    // The same claim acking again (a retry after a lost reply) is answered as the first ack was.
    auto acked = lookup(txn, dbis_.done, ref.task_id);
    if (acked && *acked && **acked == acker) return Status{};
    return std::unexpected(row.error());
  }
  if (Status st = erase(txn, dbis_.leases, lease_key(*row), "dropping a lease"); !st) return st;
  if (Status st = erase(txn, dbis_.tasks, ref.task_id, "removing an acknowledged task"); !st) return st;
  return txn.put(dbis_.done, ref.task_id, acker, 0, "marking a task done");
}

Result<std::optional<uint64_t>> LmdbStateStore::ack_and_put(const ClaimRef& ref, int64_t now_ms, const AgentWrite& then) {
  if (Status st = check_claim_ref(ref); !st) return std::unexpected(st.error());
  if (Status st = check_agent_write(then); !st) return std::unexpected(st.error());
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Result<std::optional<uint64_t>> {
    if (Status st = ack_in(txn, ref, now_ms); !st) return std::unexpected(st.error());
    auto put = put_in(txn, then.record, then.expected_version, then.event);
    if (put) return std::optional<uint64_t>(*put);
    // The record moved on, or no longer decodes: the ack stands alone (put_in refuses before
    // it writes), as on Redis; the caller's re-read then meets the damage.
    if (put.error().code == Errc::failed_precondition || put.error().code == Errc::not_found ||
        put.error().code == Errc::corrupt) {
      return std::optional<uint64_t>();
    }
    return std::unexpected(put.error());
  });
}

Status LmdbStateStore::release(const ClaimRef& ref, int64_t now_ms) {
  if (Status st = check_claim_ref(ref); !st) return st;
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Status {
    auto row = held_claim(txn, dbis_, ref, now_ms);
    if (!row) return std::unexpected(row.error());
    if (Status st = erase(txn, dbis_.leases, lease_key(*row), "dropping a lease"); !st) return st;
    return make_ready(txn, dbis_, *row);
  });
}

Result<int64_t> LmdbStateStore::renew(const ClaimRef& ref, int64_t now_ms, int64_t visibility_timeout_ms) {
  if (Status st = check_claim_ref(ref); !st) return std::unexpected(st.error());
  auto expires = lease_expiry(now_ms, visibility_timeout_ms);
  if (!expires) return std::unexpected(expires.error());
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Result<int64_t> {
    auto row = held_claim(txn, dbis_, ref, now_ms);
    if (!row) return std::unexpected(row.error());
    if (Status st = erase(txn, dbis_.leases, lease_key(*row), "dropping a lease"); !st) return std::unexpected(st.error());
    row->expires_ms = *expires;
    if (Status st = txn.put(dbis_.leases, lease_key(*row), row->task.id, 0, "recording a lease"); !st) {
      return std::unexpected(st.error());
    }
    if (Status st = store_task(txn, dbis_, *row); !st) return std::unexpected(st.error());
    return *expires;
  });
}

Result<uint64_t> LmdbStateStore::queue_length() {
  return in_read_txn(env_, [&](lmdb::Txn& txn) -> Result<uint64_t> {
    MDB_stat stat{};
    if (int rc = mdb_stat(txn.get(), dbis_.tasks, &stat); rc != 0) return std::unexpected(lmdb::error(rc, "counting tasks"));
    return uint64_t{stat.ms_entries};
  });
}

Result<std::vector<Task>> LmdbStateStore::expire(std::string_view kind_prefix, int64_t enqueued_before_ms,
                                                 int64_t now_ms, size_t max) {
  if (max == 0) return fail(Errc::invalid_argument, "expire: max must be at least 1");
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Result<std::vector<Task>> {
    // After this every task under an expired claim is in `ready`, in its place, and every
    // lease left is live: `ready` in key order is the candidates in queue order.
    if (Status st = requeue_expired(txn, dbis_, now_ms); !st) return std::unexpected(st.error());
    std::vector<Task> removed;
    auto cursor = lmdb::Cursor::open(txn, dbis_.ready);
    if (!cursor) return std::unexpected(cursor.error());
    MDB_val k{}, v{};
    // MDB_NEXT after mdb_cursor_del reads the entry that followed the deleted one: LMDB
    // leaves a cursor on its successor and does not advance it again.
    for (MDB_cursor_op op = MDB_FIRST; removed.size() < max; op = MDB_NEXT) {
      auto found = cursor->get(k, v, op);
      if (!found) return std::unexpected(found.error());
      if (!*found) break;
      Reader r(lmdb::view(v));
      std::string id = r.str();
      std::string kind = r.str();
      if (!r.ok_at_end()) return std::unexpected(damaged("a ready index entry"));
      if (!kind.starts_with(kind_prefix)) continue;
      auto row = load_task(txn, dbis_, id);
      if (!row) return std::unexpected(row.error());
      if (!*row) return std::unexpected(damaged("ready index names missing task \"" + id + "\""));
      if ((*row)->task.enqueued_ms >= enqueued_before_ms) continue;
      if (int rc = mdb_cursor_del(cursor->get(), 0); rc != 0) {
        return std::unexpected(lmdb::error(rc, "taking an expired task"));
      }
      if (Status st = erase(txn, dbis_.tasks, id, "removing an expired task"); !st) return std::unexpected(st.error());
      if (Status st = txn.put(dbis_.done, id, kExpiredMark, 0, "marking a task expired"); !st) {
        return std::unexpected(st.error());
      }
      removed.push_back(std::move((*row)->task));
    }
    return removed;
  });
}

// ---- The event stream ----

Result<uint64_t> LmdbStateStore::append_in(lmdb::Txn& txn, std::string_view bytes) {
  auto last = stream_end(txn, dbis_);
  if (!last) return std::unexpected(last.error());
  const uint64_t seq = *last + 1;
  // MDB_APPEND: the new key is the largest, so LMDB writes it without a search.
  if (Status st = txn.put(dbis_.events, lmdb::U64Key(seq).view(), bytes, MDB_APPEND, "appending an event"); !st) {
    return std::unexpected(st.error());
  }
  return seq;
}

Result<uint64_t> LmdbStateStore::append(std::string_view bytes) {
  if (Status st = check_event(bytes); !st) return std::unexpected(st.error());
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Result<uint64_t> { return append_in(txn, bytes); });
}

Result<std::vector<Event>> LmdbStateStore::read(uint64_t from_seq, uint64_t max) {
  return in_read_txn(env_, [&](lmdb::Txn& txn) -> Result<std::vector<Event>> {
    std::vector<Event> events;
    if (max == 0) return events;
    auto cursor = lmdb::Cursor::open(txn, dbis_.events);
    if (!cursor) return std::unexpected(cursor.error());
    lmdb::U64Key start(std::max<uint64_t>(from_seq, 1));
    MDB_val k = lmdb::val(start.view()), v{};
    for (MDB_cursor_op op = MDB_SET_RANGE; events.size() < max; op = MDB_NEXT) {
      auto found = cursor->get(k, v, op);
      if (!found) return std::unexpected(found.error());
      if (!*found) break;
      auto seq = lmdb::decode_u64(lmdb::view(k));
      if (!seq) return std::unexpected(damaged("an event key"));
      events.push_back(Event{*seq, std::string(lmdb::view(v))});
    }
    return events;
  });
}

Result<uint64_t> LmdbStateStore::last_seq() {
  return in_read_txn(env_, [&](lmdb::Txn& txn) { return stream_end(txn, dbis_); });
}

Status LmdbStateStore::set_position(std::string_view consumer, uint64_t seq) {
  if (Status st = check_id(consumer, "consumer name"); !st) return st;
  return in_write_txn(env_, [&](lmdb::Txn& txn) -> Status {
    auto last = stream_end(txn, dbis_);
    if (!last) return std::unexpected(last.error());
    if (seq > *last) {
      return fail(Errc::invalid_argument, "position " + std::to_string(seq) + " for consumer \"" + std::string(consumer) +
                                              "\" is past the stream's last event " + std::to_string(*last));
    }
    return txn.put(dbis_.positions, consumer, lmdb::U64Key(seq).view(), 0, "recording a consumer position");
  });
}

Result<uint64_t> LmdbStateStore::position(std::string_view consumer) {
  if (Status st = check_id(consumer, "consumer name"); !st) return std::unexpected(st.error());
  return in_read_txn(env_, [&](lmdb::Txn& txn) -> Result<uint64_t> {
    auto stored = lookup(txn, dbis_.positions, consumer);
    if (!stored) return std::unexpected(stored.error());
    if (!*stored) return uint64_t{0};
    auto seq = lmdb::decode_u64(**stored);
    if (!seq) return std::unexpected(damaged("the position of consumer \"" + std::string(consumer) + "\""));
    return *seq;
  });
}

}  // namespace

Result<std::unique_ptr<StateStore>> open_lmdb_state_store(const std::filesystem::path& dir,
                                                          const LmdbStateStoreOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating the state store directory " + dir.string() + ": " + ec.message());
  // MDB_NOTLS: read transactions are not tied to a thread, so callers on thread pools work.
  // Without sync, MDB_WRITEMAP writes pages in the map instead of one pwrite each: three
  // times the rate on the supervisor's path (tools/bench/supervisor_bench).
  unsigned flags = MDB_NOTLS | (options.sync ? 0u : MDB_NOSYNC | MDB_WRITEMAP | MDB_MAPASYNC);
  auto env = lmdb::Env::open(dir, flags, options.map_size, 8);
  if (!env) return std::unexpected(env.error().with_context("opening the state store"));
  auto txn = lmdb::Txn::begin(*env, false);
  if (!txn) return std::unexpected(txn.error());
  Dbis d{};
  const std::pair<MDB_dbi*, const char*> dbs[] = {{&d.agents, "agents"}, {&d.tasks, "tasks"},
                                                  {&d.ready, "ready"},   {&d.leases, "leases"},
                                                  {&d.events, "events"}, {&d.positions, "positions"},
                                                  {&d.meta, "meta"},     {&d.done, "done"}};
  for (const auto& [dbi, name] : dbs) {
    auto opened = txn->open_db(name, MDB_CREATE);
    if (!opened) return std::unexpected(opened.error());
    *dbi = *opened;
  }
  if (Status st = txn->commit(); !st) return std::unexpected(st.error());
  return std::make_unique<LmdbStateStore>(std::move(*env), d);
}

}  // namespace warden::store
