// One unit (~1,090 lines), and hiredis's only home: why in redis_state_store.h.
#include "store/redis_state_store.h"

#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <poll.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "common/sigpipe_guard.h"
#include "store/record_checks.h"

namespace warden::store {
namespace {

// ---- Numbers as the layout writes them ----

constexpr uint64_t kSignBit = uint64_t{1} << 63;

uint64_t ordered(int64_t v) { return static_cast<uint64_t>(v) ^ kSignBit; }

// Sixteen lowercase hex digits: fixed width, so byte order is numeric order.
std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return std::string(buf, 16);
}

// The time `ms` as the leases set and the task hashes hold it.
std::string time_key(int64_t ms) { return hex16(ordered(ms)); }

template <typename T>
std::optional<T> parse_number(std::string_view s, int base = 10) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_time_key(std::string_view s) {
  if (s.size() != 16) return std::nullopt;
  auto v = parse_number<uint64_t>(s, 16);
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v ^ kSignBit);
}

// ---- The scripts ----
//
// Each returns an array of strings: "ok" and the results, or a refusal code and its
// details. A script checks everything before its first write, so a refusal changed nothing.

// Shared by the scripts that compare times or queue places. Byte by byte, not with '<':
// Lua compares strings with strcoll, and Redis sets the collation from its locale.
constexpr std::string_view kBeforePrelude = R"lua(
local function before(a, b)  -- a < b, for equal-width hex strings, byte by byte
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
)lua";

// Shared by ack, release and renew; needs kBeforePrelude. ARGV[1..3]: agent, token, now
// (time key).
constexpr std::string_view kHeldPrelude = R"lua(
-- The task's claim fields (token, agent, expires, lease, ready) if ARGV names its live claim.
local function held(key)
  local t = redis.call('HMGET', key, 'token', 'agent', 'expires', 'lease', 'ready')
  if not t[1] then return nil, {'not_found'} end
  if t[1] == '0' then return nil, {'not_claimed'} end
  if t[2] ~= ARGV[1] then return nil, {'other_agent', t[2]} end
  if t[1] ~= ARGV[2] then return nil, {'later_claim', t[1]} end
  if not before(ARGV[3], t[3]) then return nil, {'expired', t[3]} end
  return t
end
)lua";

// Shared by put_agent and ack_and_put: writes the agent hash `key` afresh at `version` with
// the field/value pairs ARGV[first..] (at most 64 labels: record_checks.h keeps unpack() far
// below Lua's limit) and appends `event` (none if '') to the stream `events`.
constexpr std::string_view kWriteAgentPrelude = R"lua(
local function write_agent(key, version, events, event, first)
  redis.call('DEL', key)
  redis.call('HSET', key, 'version', version, unpack(ARGV, first))
  if event ~= '' then
    redis.call('XADD', events, string.format('%d-0', redis.call('XLEN', events) + 1), 'b', event)
  end
end
)lua";

// KEYS: agent hash, agents set, events stream, retired hash. ARGV: expected version, new
// version, id, event ('' for none), field, value, ... Returns "ok" and the version written.
constexpr std::string_view kPutAgent = R"lua(
local cur = redis.call('HGET', KEYS[1], 'version')
local version = ARGV[2]
if ARGV[1] == '0' then
  if cur then return {'already_exists', cur} end
  -- A removed agent's next incarnation continues from its last version.
  local retired = redis.call('HGET', KEYS[4], ARGV[3])
  if retired then version = string.format('%d', tonumber(retired) + 1) end
  redis.call('ZADD', KEYS[2], 0, ARGV[3])
elseif not cur then
  return {'not_found'}
elseif cur ~= ARGV[1] then
  return {'failed_precondition', cur}
end
write_agent(KEYS[1], version, KEYS[3], ARGV[4], 5)
return {'ok', version}
)lua";

// KEYS: agent hash, agents set, retired hash. ARGV: expected version, id.
constexpr std::string_view kRemoveAgent = R"lua(
local cur = redis.call('HGET', KEYS[1], 'version')
if not cur then return {'not_found'} end
if cur ~= ARGV[1] then return {'failed_precondition', cur} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], cur)
return {'ok'}
)lua";

// KEYS: agents set. ARGV: agent key prefix. Returns "ok", then per agent: id, n, n strings.
constexpr std::string_view kListAgents = R"lua(
local out = {'ok'}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fields = redis.call('HGETALL', ARGV[1] .. id)
  out[#out + 1] = id
  out[#out + 1] = string.format('%d', #fields)
  for _, f in ipairs(fields) do out[#out + 1] = f end
end
return out
)lua";

// KEYS: task hash, ready set, seq counter, done hash. ARGV: priority rank (hex), priority, kind,
// payload, id, enqueued (time key). Returns "ok", or "done" and the id's done mark.
constexpr std::string_view kEnqueue = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return {'already_exists'} end
local mark = redis.call('HGET', KEYS[4], ARGV[5])
if mark then return {'done', mark} end
local member = ARGV[1] .. string.format('%016x', redis.call('INCR', KEYS[3])) .. ARGV[5]
redis.call('HSET', KEYS[1], 'priority', ARGV[2], 'kind', ARGV[3], 'payload', ARGV[4],
           'attempts', '0', 'ready', member, 'token', '0', 'enqueued', ARGV[6])
redis.call('ZADD', KEYS[2], 0, member)
return {'ok'}
)lua";

// KEYS: ready set, leases set, token counter. ARGV: task key prefix, the ZRANGEBYLEX bound
// of expired leases, agent, expiry (time key), then the kinds to take (none: any).
// Returns "ok", id, priority, kind, payload, token, attempt, enqueued (time key; '' for a task
// written before tasks carried it); or "none".
constexpr std::string_view kClaim = R"lua(
local expired = redis.call('ZRANGEBYLEX', KEYS[2], '-', ARGV[2])
local back = {}
for i, lease in ipairs(expired) do
  local key = ARGV[1] .. string.sub(lease, 33)
  local ready = redis.call('HGET', key, 'ready')
  if not ready then return {'corrupt', 'a lease names missing task "' .. string.sub(lease, 33) .. '"'} end
  back[i] = {key, ready}
end
for i, lease in ipairs(expired) do
  redis.call('ZREM', KEYS[2], lease)
  redis.call('ZADD', KEYS[1], 0, back[i][2])
  redis.call('HSET', back[i][1], 'token', '0')
  redis.call('HDEL', back[i][1], 'agent', 'expires', 'lease')
end
local any = #ARGV < 5
local kinds = {}
for i = 5, #ARGV do kinds[ARGV[i]] = true end
local member, key
local start = 0
while not member do
  local batch = redis.call('ZRANGE', KEYS[1], start, start + 63)
  if #batch == 0 then break end
  for _, m in ipairs(batch) do
    local k = ARGV[1] .. string.sub(m, 33)
    if any or kinds[redis.call('HGET', k, 'kind')] then
      member, key = m, k
      break
    end
  end
  start = start + 64
end
if not member then return {'none'} end
local row = redis.call('HMGET', key, 'priority', 'kind', 'payload', 'enqueued')
if not row[1] then return {'corrupt', 'the ready set names missing task "' .. string.sub(member, 33) .. '"'} end
local n = redis.call('INCR', KEYS[3])
local token = string.format('%d', n)
local lease = ARGV[4] .. string.format('%016x', n) .. string.sub(member, 33)
local attempt = redis.call('HINCRBY', key, 'attempts', 1)
redis.call('ZREM', KEYS[1], member)
redis.call('ZADD', KEYS[2], 0, lease)
redis.call('HSET', key, 'token', token, 'agent', ARGV[3], 'expires', ARGV[4], 'lease', lease)
return {'ok', string.sub(member, 33), row[1], row[2], row[3], token, string.format('%d', attempt), row[4] or ''}
)lua";

// Shared by ack and ack_and_put; ARGV[1..4]: agent, token, now, task id. Removes the task
// its live claim names and remembers who acked it; nil then, or when the same claim acks
// again (a retry after a lost reply), else the refusal.
constexpr std::string_view kAckPrelude = R"lua(
local function ack_task(task, leases, done)
  local t, refusal = held(task)
  if not t then
    if refusal[1] == 'not_found' and redis.call('HGET', done, ARGV[4]) == ARGV[1] .. ' ' .. ARGV[2] then
      return nil
    end
    return refusal
  end
  redis.call('ZREM', leases, t[4])
  redis.call('DEL', task)
  redis.call('HSET', done, ARGV[4], ARGV[1] .. ' ' .. ARGV[2])
  return nil
end
)lua";

// KEYS: task hash, leases set, done hash. ARGV: agent, token, now, task id.
constexpr std::string_view kAck = R"lua(
local refusal = ack_task(KEYS[1], KEYS[2], KEYS[3])
if refusal then return refusal end
return {'ok'}
)lua";

// KEYS: task hash, leases set, done hash, agent hash, events stream. ARGV: agent, token,
// now, task id, the agent's expected version, its next version, event, field, value, ...
// Returns "ok" and the version written, or "ok" alone when the agent moved on.
constexpr std::string_view kAckAndPut = R"lua(
local refusal = ack_task(KEYS[1], KEYS[2], KEYS[3])
if refusal then return refusal end
if redis.call('HGET', KEYS[4], 'version') ~= ARGV[5] then return {'ok'} end
write_agent(KEYS[4], ARGV[6], KEYS[5], ARGV[7], 8)
return {'ok', ARGV[6]}
)lua";

// KEYS: task hash, leases set, ready set. ARGV: agent, token, now.
constexpr std::string_view kRelease = R"lua(
local t, refusal = held(KEYS[1])
if not t then return refusal end
redis.call('ZREM', KEYS[2], t[4])
redis.call('ZADD', KEYS[3], 0, t[5])
redis.call('HSET', KEYS[1], 'token', '0')
redis.call('HDEL', KEYS[1], 'agent', 'expires', 'lease')
return {'ok'}
)lua";

// KEYS: task hash, leases set. ARGV: agent, token, now, new expiry.
constexpr std::string_view kRenew = R"lua(
local t, refusal = held(KEYS[1])
if not t then return refusal end
local lease = ARGV[4] .. string.sub(t[4], 17)
redis.call('ZREM', KEYS[2], t[4])
redis.call('ZADD', KEYS[2], 0, lease)
redis.call('HSET', KEYS[1], 'expires', ARGV[4], 'lease', lease)
return {'ok'}
)lua";

// KEYS: ready set, leases set, done hash. ARGV: task key prefix, the ZRANGEBYLEX bound of
// expired leases, kind prefix, enqueued before (time key), max. Needs kBeforePrelude.
// Candidates are the ready tasks and those under an expired lease (which keep their ready
// member, their place in the queue); live leases are never looked at. Reads and decides
// everything first, then removes, marking each id done with 'expired' (kExpiredMark).
// Returns "ok", then per removed task in queue order: id, priority, kind, payload, enqueued
// (time key, '' if the task has none).
constexpr std::string_view kExpire = R"lua(
local prefix, kind_prefix, bound, max = ARGV[1], ARGV[3], ARGV[4], tonumber(ARGV[5])
-- A task written before tasks carried 'enqueued' counts as enqueued at 0: time_key(0).
local function old(enqueued) return before(enqueued or '8000000000000000', bound) end
local function matches(kind) return string.sub(kind, 1, #kind_prefix) == kind_prefix end
local function place_before(a, b) return before(string.sub(a.member, 1, 32), string.sub(b.member, 1, 32)) end
-- Under expired leases, sorted by queue place.
local leased = {}
for _, lease in ipairs(redis.call('ZRANGEBYLEX', KEYS[2], '-', ARGV[2])) do
  local id = string.sub(lease, 33)
  local t = redis.call('HMGET', prefix .. id, 'ready', 'kind', 'enqueued')
  if not t[1] then return {'corrupt', 'a lease names missing task "' .. id .. '"'} end
  if matches(t[2]) and old(t[3]) then leased[#leased + 1] = {member = t[1], id = id, lease = lease} end
end
table.sort(leased, place_before)
-- Ready ones, in queue order, until max of them match.
local ready = {}
local start = 0
while #ready < max do
  local batch = redis.call('ZRANGE', KEYS[1], start, start + 63)
  if #batch == 0 then break end
  for _, m in ipairs(batch) do
    local id = string.sub(m, 33)
    local t = redis.call('HMGET', prefix .. id, 'kind', 'enqueued')
    if not t[1] then return {'corrupt', 'the ready set names missing task "' .. id .. '"'} end
    if matches(t[1]) and old(t[2]) then
      ready[#ready + 1] = {member = m, id = id}
      if #ready >= max then break end
    end
  end
  start = start + 64
end
-- The first max of both lists, merged in queue order.
local chosen = {}
local i, j = 1, 1
while #chosen < max and (i <= #leased or j <= #ready) do
  if j > #ready or (i <= #leased and place_before(leased[i], ready[j])) then
    chosen[#chosen + 1] = leased[i]
    i = i + 1
  else
    chosen[#chosen + 1] = ready[j]
    j = j + 1
  end
end
local out = {'ok'}
for _, c in ipairs(chosen) do
  local t = redis.call('HMGET', prefix .. c.id, 'priority', 'kind', 'payload', 'enqueued')
  out[#out + 1] = c.id
  out[#out + 1] = t[1]
  out[#out + 1] = t[2]
  out[#out + 1] = t[3]
  out[#out + 1] = t[4] or ''
end
for _, c in ipairs(chosen) do
  if c.lease then redis.call('ZREM', KEYS[2], c.lease) else redis.call('ZREM', KEYS[1], c.member) end
  redis.call('DEL', prefix .. c.id)
  redis.call('HSET', KEYS[3], c.id, 'expired')
end
return out
)lua";

// KEYS: ready set, leases set.
constexpr std::string_view kQueueLength = R"lua(
return {'ok', string.format('%d', redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]))}
)lua";

// KEYS: events stream. ARGV: bytes.
constexpr std::string_view kAppend = R"lua(
local seq = redis.call('XLEN', KEYS[1]) + 1
redis.call('XADD', KEYS[1], string.format('%d-0', seq), 'b', ARGV[1])
return {'ok', string.format('%d', seq)}
)lua";

// KEYS: events stream, positions hash. ARGV: consumer, seq.
constexpr std::string_view kSetPosition = R"lua(
local last = redis.call('XLEN', KEYS[1])
if tonumber(ARGV[2]) > last then return {'past_end', string.format('%d', last)} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {'ok'}
)lua";

enum class ScriptId { put_agent, remove_agent, list_agents, enqueue, claim, ack, ack_and_put, release, renew,
                      queue_length, expire, append, set_position, count };

std::string script_body(ScriptId id) {
  switch (id) {
    case ScriptId::put_agent: return std::string(kWriteAgentPrelude) + std::string(kPutAgent);
    case ScriptId::remove_agent: return std::string(kRemoveAgent);
    case ScriptId::list_agents: return std::string(kListAgents);
    case ScriptId::enqueue: return std::string(kEnqueue);
    case ScriptId::claim: return std::string(kClaim);
    case ScriptId::ack:
      return std::string(kBeforePrelude) + std::string(kHeldPrelude) + std::string(kAckPrelude) + std::string(kAck);
    case ScriptId::ack_and_put:
      return std::string(kBeforePrelude) + std::string(kHeldPrelude) + std::string(kAckPrelude) +
             std::string(kWriteAgentPrelude) + std::string(kAckAndPut);
    case ScriptId::release: return std::string(kBeforePrelude) + std::string(kHeldPrelude) + std::string(kRelease);
    case ScriptId::renew: return std::string(kBeforePrelude) + std::string(kHeldPrelude) + std::string(kRenew);
    case ScriptId::queue_length: return std::string(kQueueLength);
    case ScriptId::expire: return std::string(kBeforePrelude) + std::string(kExpire);
    case ScriptId::append: return std::string(kAppend);
    case ScriptId::set_position: return std::string(kSetPosition);
    case ScriptId::count: break;
  }
  return {};
}

// A script as the store sends it: the body (for EVAL) and its SHA-1 (for EVALSHA).
struct Script {
  std::string body;
  std::string sha;
};

// ---- hiredis handles ----

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

std::string_view text(const redisReply& r) { return std::string_view(r.str, r.len); }

bool is_bulk(const redisReply& r) { return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS; }

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// Whether a call may be sent twice: a read, or a write whose second run leaves what the
// first one left (set_position, renew).
enum class Idempotent { no, yes };

// Why one round trip failed: whether the command may have reached the server.
struct Broken {
  bool maybe_applied;
  std::string what;
};

// Sends one command and reads its reply over `c` (blocking, under its timeout).
std::expected<ReplyPtr, Broken> round_trip(redisContext* c, const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* formatted = nullptr;
  int len = redisFormatCommandArgv(&formatted, static_cast<int>(args.size()), argv.data(), lens.data());
  if (len < 0) return std::unexpected(Broken{false, "out of memory formatting a command"});
  int appended = redisAppendFormattedCommand(c, formatted, static_cast<size_t>(len));
  redisFreeCommand(formatted);
  if (appended != REDIS_OK) return std::unexpected(Broken{false, c->errstr});
  SigpipeGuard sigpipe;  // a server that went away is an EPIPE, not the end of the process
  for (int done = 0; !done;) {
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      // Nothing left the buffer: the server cannot have seen the command.
      bool unsent = c->obuf != nullptr && sdslen(c->obuf) == static_cast<size_t>(len);
      return std::unexpected(Broken{!unsent, c->errstr});
    }
  }
  void* reply = nullptr;
  if (redisGetReply(c, &reply) != REDIS_OK || reply == nullptr) {
    std::string what = c->err == REDIS_ERR_EOF ? "the server closed the connection" : c->errstr;
    return std::unexpected(Broken{true, what});
  }
  return ReplyPtr(static_cast<redisReply*>(reply));
}

// True if the server closed an idle connection (or sent something unasked): a connection
// with no reply outstanding has nothing to read.
bool hung_up(const redisContext& c) {
  pollfd p{c.fd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

// An error reply as an Error, by the code Redis puts first.
Error refused(const RedisAddress& address, std::string_view what, std::string_view message) {
  std::string_view code = message.substr(0, message.find(' '));
  std::string text = "Redis at " + address.to_string() + " refused " + std::string(what) + ": " + std::string(message);
  if (code == "OOM") return Error{Errc::limit_exceeded, text + " (raise maxmemory or free memory)"};
  if (code == "WRONGTYPE") {
    return Error{Errc::corrupt, text + ": a key under the store's prefix holds something else; is another program using it?"};
  }
  if (message.find("user_script") != std::string_view::npos || message.starts_with("ERR Error running script")) {
    return Error{Errc::internal, text};
  }
  return Error{Errc::io_error, text};
}

// ---- Records ----

constexpr std::string_view kLabelPrefix = "label:";

Error damaged(std::string what) { return Error{Errc::corrupt, std::move(what) + ": the state store is damaged"}; }

// An agent from its hash's field/value pairs.
Result<AgentRecord> decode_agent(std::string_view id, const std::vector<std::string_view>& pairs) {
  AgentRecord a;
  a.id = std::string(id);
  bool has_version = false, has_heartbeat = false;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    std::string_view f = pairs[i], v = pairs[i + 1];
    if (f == "role") {
      a.role = std::string(v);
    } else if (f == "state") {
      a.state = std::string(v);
    } else if (f == "details") {
      a.details = std::string(v);
    } else if (f == "version") {
      auto n = parse_number<uint64_t>(v);
      if (!n) break;
      a.version = *n;
      has_version = true;
    } else if (f == "heartbeat_ms") {
      auto n = parse_number<int64_t>(v);
      if (!n) break;
      a.last_heartbeat_ms = *n;
      has_heartbeat = true;
    } else if (f.starts_with(kLabelPrefix)) {
      a.labels[std::string(f.substr(kLabelPrefix.size()))] = std::string(v);
    } else {
      break;
    }
  }
  if (pairs.size() % 2 != 0 || !has_version || !has_heartbeat) {
    return std::unexpected(damaged("agent record \"" + std::string(id) + "\" does not decode"));
  }
  return a;
}

// An agent's hash fields as a script's field/value arguments (the views point into `record`
// and this object, which must outlive them).
class AgentFields {
 public:
  explicit AgentFields(const AgentRecord& record) : record_(record), heartbeat_(std::to_string(record.last_heartbeat_ms)) {
    label_fields_.reserve(record.labels.size());
    for (const auto& [name, value] : record.labels) label_fields_.push_back(std::string(kLabelPrefix) + name);
  }
  void append_to(std::vector<std::string_view>& args) const {
    args.insert(args.end(), {"role", record_.role, "state", record_.state, "heartbeat_ms", heartbeat_, "details",
                             record_.details});
    size_t i = 0;
    for (const auto& [name, value] : record_.labels) args.insert(args.end(), {label_fields_[i++], value});
  }

 private:
  const AgentRecord& record_;
  std::string heartbeat_;
  std::vector<std::string> label_fields_;
};

// A task hash's 'enqueued' field as a script returns it: '' for a task written before tasks
// carried it, which reads as enqueued at 0.
std::optional<int64_t> parse_enqueued(std::string_view s) {
  if (s.empty()) return int64_t{0};
  return parse_time_key(s);
}

// What the done hash keeps of an expired task: ids hold no space, so no ack's "agent token"
// equals it, and no ack is answered as a retry.
constexpr std::string_view kExpiredMark = "expired";

// The ready set's rank of a priority: higher priorities first.
std::string priority_rank(int64_t priority) { return hex16(~ordered(priority)); }



// The refusal a held() check in a script returned, as the interface words it.
Error claim_refused(const ClaimRef& ref, int64_t now_ms, const std::vector<std::string>& r) {
  const std::string task = "task \"" + ref.task_id + "\"";
  const std::string detail = r.size() > 1 ? r[1] : "";
  if (r[0] == "not_found") {
    return Error{Errc::not_found, task + " is not in the queue (acknowledged or expired already, or never enqueued)"};
  }
  if (r[0] == "not_claimed") {
    return Error{Errc::failed_precondition,
                 task + " is not claimed: its claim expired or was released, and it waits in the queue"};
  }
  if (r[0] == "other_agent") {
    return Error{Errc::failed_precondition, task + " is claimed by agent \"" + detail + "\", not \"" + ref.agent_id + "\""};
  }
  if (r[0] == "later_claim") {
    return Error{Errc::failed_precondition, task + " is held by a later claim (token " + detail + "); claim " +
                                                std::to_string(ref.token) + " expired"};
  }
  if (r[0] == "expired") {
    auto at = parse_time_key(detail);
    return Error{Errc::failed_precondition, task + ": the claim expired at " + (at ? std::to_string(*at) : detail) +
                                                " ms (now " + std::to_string(now_ms) + "); the task goes back to the queue"};
  }
  return damaged("an unexpected answer \"" + r[0] + "\" about " + task);
}

class RedisStateStore final : public StateStore {
 public:
  RedisStateStore(RedisAddress address, RedisStateStoreOptions options)
      : address_(std::move(address)), options_(std::move(options)) {
    const std::string& p = options_.key_prefix;
    agents_ = p + "agents";
    agent_prefix_ = p + "agent:";
    task_prefix_ = p + "task:";
    ready_ = p + "ready";
    leases_ = p + "leases";
    next_task_seq_ = p + "next_task_seq";
    next_token_ = p + "next_token";
    events_ = p + "events";
    positions_ = p + "positions";
    done_ = p + "done";
    retired_ = p + "retired";
  }

  // Connects and loads every script, keeping their SHA-1s.
  Status start();

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
  // One command, reconnecting as the header describes. An error reply is returned as a
  // reply; the caller decides what it means.
  Result<ReplyPtr> call(const std::vector<std::string_view>& args, Idempotent idempotent, std::string_view what);
  // Runs a script (EVALSHA; EVAL if the server's cache lost it) and returns its strings.
  Result<std::vector<std::string>> run(ScriptId id, const std::vector<std::string_view>& keys,
                                       const std::vector<std::string_view>& args, Idempotent idempotent,
                                       std::string_view what);
  Status connect_locked();  // requires mu_
  Error unreachable(std::string_view what, std::string_view why) const;

  // Fixed at construction or start(), read-only afterwards.
  const RedisAddress address_;
  const RedisStateStoreOptions options_;
  std::string agents_, agent_prefix_, task_prefix_, ready_, leases_, next_task_seq_, next_token_, events_, positions_, done_, retired_;
  Script scripts_[static_cast<size_t>(ScriptId::count)];

  std::mutex mu_;
  ContextPtr ctx_;  // guarded by mu_; null or failed: reconnect before the next command
};

Error RedisStateStore::unreachable(std::string_view what, std::string_view why) const {
  return Error{Errc::io_error, "Redis at " + address_.to_string() + ", " + std::string(what) + ": " + std::string(why)};
}

Status RedisStateStore::connect_locked() {
  ctx_.reset();
  const timeval connect_timeout = to_timeval(options_.connect_timeout);
  ContextPtr c(address_.kind == RedisAddress::Kind::unix_socket
                   ? redisConnectUnixWithTimeout(address_.path.c_str(), connect_timeout)
                   : redisConnectWithTimeout(address_.host.c_str(), address_.port, connect_timeout));
  if (!c) return std::unexpected(unreachable("connecting", "out of memory"));
  if (c->err) return std::unexpected(unreachable("connecting", c->errstr));
  if (redisSetTimeout(c.get(), to_timeval(options_.command_timeout)) != REDIS_OK) {
    return std::unexpected(unreachable("setting the command timeout", c->errstr));
  }
  if (address_.db != 0) {
    const std::string db = std::to_string(address_.db);
    auto reply = round_trip(c.get(), {"SELECT", db});
    if (!reply) return std::unexpected(unreachable("selecting database " + db, reply.error().what));
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      Error e = refused(address_, "SELECT " + db, text(**reply));
      if (e.code == Errc::io_error) e.code = Errc::invalid_argument;  // "DB index is out of range"
      return std::unexpected(e);
    }
  }
  ctx_ = std::move(c);
  return {};
}

Result<ReplyPtr> RedisStateStore::call(const std::vector<std::string_view>& args, Idempotent idempotent,
                                       std::string_view what) {
  std::lock_guard lock(mu_);
  // A connection that failed, or that the server closed while idle, is replaced before
  // anything is sent on it: no ambiguity there.
  if (!ctx_ || ctx_->err || hung_up(*ctx_)) {
    if (Status st = connect_locked(); !st) return std::unexpected(st.error());
  }
  auto first = round_trip(ctx_.get(), args);
  if (first) return std::move(*first);
  ctx_.reset();
  if (first.error().maybe_applied && idempotent == Idempotent::no) {
    return std::unexpected(unreachable(what, "the connection broke after the command was sent (" + first.error().what +
                                                 "): its outcome is unknown; re-read the state before retrying"));
  }
  if (Status st = connect_locked(); !st) {
    return std::unexpected(st.error().with_context("reconnecting after \"" + first.error().what + "\""));
  }
  auto second = round_trip(ctx_.get(), args);
  if (second) return std::move(*second);
  ctx_.reset();
  const bool maybe = first.error().maybe_applied || second.error().maybe_applied;
  return std::unexpected(unreachable(
      what, "the connection broke twice (" + first.error().what + "; " + second.error().what + "): " +
                (!maybe ? "nothing was sent, so nothing changed"
                 : idempotent == Idempotent::yes
                     ? "the call may have taken effect; it is idempotent, so calling it again is safe"
                     : "its outcome is unknown; re-read the state before retrying")));
}

Result<std::vector<std::string>> RedisStateStore::run(ScriptId id, const std::vector<std::string_view>& keys,
                                                      const std::vector<std::string_view>& args,
                                                      Idempotent idempotent, std::string_view what) {
  const Script& script = scripts_[static_cast<size_t>(id)];
  const std::string nkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv{"EVALSHA", script.sha, nkeys};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  auto reply = call(argv, idempotent, what);
  if (reply && (*reply)->type == REDIS_REPLY_ERROR && text(**reply).starts_with("NOSCRIPT")) {
    // The server restarted and lost its script cache; NOSCRIPT ran nothing, so resend the
    // body (which caches it again).
    argv[0] = "EVAL";
    argv[1] = script.body;
    reply = call(argv, idempotent, what);
  }
  if (!reply) return std::unexpected(reply.error());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_ERROR) return std::unexpected(refused(address_, what, text(r)));
  std::vector<std::string> out;
  bool ok = r.type == REDIS_REPLY_ARRAY && r.elements > 0;
  for (size_t i = 0; ok && i < r.elements; ++i) {
    ok = is_bulk(*r.element[i]);
    if (ok) out.emplace_back(text(*r.element[i]));
  }
  if (!ok) return fail(Errc::internal, "Redis answered " + std::string(what) + " with something other than strings");
  if (out[0] == "corrupt") return std::unexpected(damaged(out.size() > 1 ? out[1] : std::string(what)));
  return out;
}

Status RedisStateStore::start() {
  for (size_t i = 0; i < static_cast<size_t>(ScriptId::count); ++i) {
    Script& s = scripts_[i];
    s.body = script_body(static_cast<ScriptId>(i));
    auto reply = call({"SCRIPT", "LOAD", s.body}, Idempotent::yes, "loading a script");
    if (!reply) return std::unexpected(reply.error());
    if ((*reply)->type != REDIS_REPLY_STRING) {
      std::string why = (*reply)->type == REDIS_REPLY_ERROR ? std::string(text(**reply)) : "no SHA-1 in the reply";
      return fail(Errc::internal, "Redis at " + address_.to_string() + " rejected a state store script: " + why);
    }
    s.sha = std::string(text(**reply));
  }
  return {};
}

// ---- Agents ----

Result<uint64_t> RedisStateStore::put_agent(const AgentRecord& record, uint64_t expected_version,
                                            std::string_view event) {
  if (Status st = check_agent_record(record); !st) return std::unexpected(st.error());
  if (Status st = check_event(event); !st) return std::unexpected(st.error());
  const std::string key = agent_prefix_ + record.id;
  const std::string expected = std::to_string(expected_version), next = std::to_string(expected_version + 1);
  std::vector<std::string_view> args{expected, next, record.id, event};
  const AgentFields fields(record);
  fields.append_to(args);
  auto r = run(ScriptId::put_agent, {key, agents_, events_, retired_}, args, Idempotent::no, "put_agent");
  if (!r) return std::unexpected(r.error());
  const std::string agent = "agent \"" + record.id + "\"";
  const std::string& code = (*r)[0];
  const std::string stored = r->size() > 1 ? (*r)[1] : "";
  if (code == "ok") {
    auto version = r->size() == 2 ? parse_number<uint64_t>((*r)[1]) : std::nullopt;
    if (!version) return std::unexpected(damaged("the version of " + agent));
    return *version;
  }
  if (code == "already_exists") return fail(Errc::already_exists, agent + " exists already (version " + stored + ")");
  if (code == "not_found") return fail(Errc::not_found, agent + " does not exist (expected version " + expected + ")");
  if (code == "failed_precondition") {
    return fail(Errc::failed_precondition, agent + " is at version " + stored + ", not " + expected + ": re-read it");
  }
  return std::unexpected(damaged("an unexpected answer \"" + code + "\" storing " + agent));
}

Result<std::optional<AgentRecord>> RedisStateStore::get_agent(std::string_view id) {
  if (Status st = check_id(id, "agent id"); !st) return std::unexpected(st.error());
  const std::string key = agent_prefix_ + std::string(id);
  auto reply = call({"HGETALL", key}, Idempotent::yes, "get_agent");
  if (!reply) return std::unexpected(reply.error());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_ERROR) return std::unexpected(refused(address_, "get_agent", text(r)));
  if (r.type != REDIS_REPLY_ARRAY) return std::unexpected(damaged("agent record \"" + std::string(id) + "\""));
  if (r.elements == 0) return std::optional<AgentRecord>();
  std::vector<std::string_view> pairs;
  for (size_t i = 0; i < r.elements; ++i) {
    if (!is_bulk(*r.element[i])) return std::unexpected(damaged("agent record \"" + std::string(id) + "\""));
    pairs.push_back(text(*r.element[i]));
  }
  auto a = decode_agent(id, pairs);
  if (!a) return std::unexpected(a.error());
  return std::optional<AgentRecord>(std::move(*a));
}

Result<std::vector<AgentRecord>> RedisStateStore::list_agents() {
  auto r = run(ScriptId::list_agents, {agents_}, {agent_prefix_}, Idempotent::yes, "list_agents");
  if (!r) return std::unexpected(r.error());
  std::vector<AgentRecord> agents;
  for (size_t i = 1; i < r->size();) {
    const std::string& id = (*r)[i];
    auto n = i + 1 < r->size() ? parse_number<size_t>((*r)[i + 1]) : std::nullopt;
    if (!n || *n > r->size() - i - 2) return std::unexpected(damaged("the agent list"));
    std::vector<std::string_view> pairs(r->begin() + static_cast<ptrdiff_t>(i + 2),
                                        r->begin() + static_cast<ptrdiff_t>(i + 2 + *n));
    auto a = decode_agent(id, pairs);
    if (!a) return std::unexpected(a.error());
    agents.push_back(std::move(*a));
    i += 2 + *n;
  }
  return agents;
}

Status RedisStateStore::remove_agent(std::string_view id, uint64_t expected_version) {
  if (Status st = check_id(id, "agent id"); !st) return st;
  const std::string key = agent_prefix_ + std::string(id), expected = std::to_string(expected_version);
  auto r = run(ScriptId::remove_agent, {key, agents_, retired_}, {expected, id}, Idempotent::no, "remove_agent");
  if (!r) return std::unexpected(r.error());
  const std::string agent = "agent \"" + std::string(id) + "\"";
  if ((*r)[0] == "ok") return {};
  if ((*r)[0] == "not_found") return fail(Errc::not_found, agent + " does not exist");
  if ((*r)[0] == "failed_precondition" && r->size() > 1) {
    return fail(Errc::failed_precondition, agent + " is at version " + (*r)[1] + ", not " + expected + ": re-read it");
  }
  return std::unexpected(damaged("an unexpected answer \"" + (*r)[0] + "\" removing " + agent));
}

// ---- The task queue ----

Status RedisStateStore::enqueue(const Task& task) {
  if (Status st = check_task(task); !st) return st;
  const std::string key = task_prefix_ + task.id;
  const std::string rank = priority_rank(task.priority), priority = std::to_string(task.priority);
  const std::string enqueued = time_key(task.enqueued_ms);
  auto r = run(ScriptId::enqueue, {key, ready_, next_task_seq_, done_},
               {rank, priority, task.kind, task.payload, task.id, enqueued}, Idempotent::no, "enqueue");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "ok") return {};
  if ((*r)[0] == "already_exists") return fail(Errc::already_exists, "task \"" + task.id + "\" is already in the queue");
  if ((*r)[0] == "done" && r->size() == 2) {
    const bool expired = (*r)[1] == kExpiredMark;
    return fail(Errc::already_exists, "task \"" + task.id + "\" was " + (expired ? "expired" : "acknowledged") +
                                          " already: a task id is done once");
  }
  return std::unexpected(damaged("an unexpected answer \"" + (*r)[0] + "\" enqueueing task \"" + task.id + "\""));
}

Result<std::optional<Claim>> RedisStateStore::claim(std::string_view agent_id, int64_t now_ms,
                                                    int64_t visibility_timeout_ms, const ClaimFilter& filter) {
  if (Status st = check_id(agent_id, "agent id"); !st) return std::unexpected(st.error());
  auto expires = lease_expiry(now_ms, visibility_timeout_ms);
  if (!expires) return std::unexpected(expires.error());
  // Leases whose expiry is <= now_ms: members below time_key(now_ms + 1) (now_ms + 1 cannot
  // overflow: lease_expiry() checked now_ms + a positive timeout).
  const std::string expired_bound = "(" + time_key(now_ms + 1), expires_key = time_key(*expires);
  std::vector<std::string_view> args{task_prefix_, expired_bound, agent_id, expires_key};
  for (const std::string& kind : filter.kinds) args.push_back(kind);
  auto r = run(ScriptId::claim, {ready_, leases_, next_token_}, args, Idempotent::no, "claim");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "none") return std::optional<Claim>();
  if ((*r)[0] != "ok" || r->size() != 8) return std::unexpected(damaged("an unexpected answer to a claim"));
  auto priority = parse_number<int64_t>((*r)[2]);
  auto token = parse_number<uint64_t>((*r)[5]);
  auto attempt = parse_number<uint32_t>((*r)[6]);
  auto enqueued = parse_enqueued((*r)[7]);
  if (!priority || !token || !attempt || !enqueued) {
    return std::unexpected(damaged("task \"" + (*r)[1] + "\" does not decode"));
  }
  Claim c{Task{std::move((*r)[1]), *priority, std::move((*r)[3]), std::move((*r)[4]), *enqueued}, std::string(agent_id),
          *token, *attempt, *expires};
  return std::optional<Claim>(std::move(c));
}

Status RedisStateStore::ack(const ClaimRef& ref, int64_t now_ms) {
  if (Status st = check_claim_ref(ref); !st) return st;
  const std::string key = task_prefix_ + ref.task_id, token = std::to_string(ref.token), now = time_key(now_ms);
  // Idempotent: a second ack by the same claim is answered ok (the done hash remembers it).
  auto r = run(ScriptId::ack, {key, leases_, done_}, {ref.agent_id, token, now, ref.task_id}, Idempotent::yes, "ack");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "ok") return {};
  return std::unexpected(claim_refused(ref, now_ms, *r));
}

Result<std::optional<uint64_t>> RedisStateStore::ack_and_put(const ClaimRef& ref, int64_t now_ms, const AgentWrite& then) {
  if (Status st = check_claim_ref(ref); !st) return std::unexpected(st.error());
  if (Status st = check_agent_write(then); !st) return std::unexpected(st.error());
  const std::string key = task_prefix_ + ref.task_id, token = std::to_string(ref.token), now = time_key(now_ms);
  const std::string agent_key = agent_prefix_ + then.record.id;
  const std::string expected = std::to_string(then.expected_version), next = std::to_string(then.expected_version + 1);
  std::vector<std::string_view> args{ref.agent_id, token, now, ref.task_id, expected, next, then.event};
  const AgentFields fields(then.record);
  fields.append_to(args);
  // Idempotent as ack is: sent again after it ran, the ack is its claim's retry and the write
  // finds the version it made, not the one expected, so it is not made twice.
  auto r = run(ScriptId::ack_and_put, {key, leases_, done_, agent_key, events_}, args, Idempotent::yes, "ack_and_put");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] != "ok") return std::unexpected(claim_refused(ref, now_ms, *r));
  if (r->size() == 1) return std::optional<uint64_t>();
  auto version = r->size() == 2 ? parse_number<uint64_t>((*r)[1]) : std::nullopt;
  if (!version) return std::unexpected(damaged("the version of agent \"" + then.record.id + "\""));
  return std::optional<uint64_t>(*version);
}

Status RedisStateStore::release(const ClaimRef& ref, int64_t now_ms) {
  if (Status st = check_claim_ref(ref); !st) return st;
  const std::string key = task_prefix_ + ref.task_id, token = std::to_string(ref.token), now = time_key(now_ms);
  auto r = run(ScriptId::release, {key, leases_, ready_}, {ref.agent_id, token, now}, Idempotent::no, "release");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "ok") return {};
  return std::unexpected(claim_refused(ref, now_ms, *r));
}

Result<int64_t> RedisStateStore::renew(const ClaimRef& ref, int64_t now_ms, int64_t visibility_timeout_ms) {
  if (Status st = check_claim_ref(ref); !st) return std::unexpected(st.error());
  auto expires = lease_expiry(now_ms, visibility_timeout_ms);
  if (!expires) return std::unexpected(expires.error());
  const std::string key = task_prefix_ + ref.task_id, token = std::to_string(ref.token), now = time_key(now_ms);
  const std::string expires_key = time_key(*expires);
  auto r = run(ScriptId::renew, {key, leases_}, {ref.agent_id, token, now, expires_key}, Idempotent::yes, "renew");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "ok") return *expires;
  return std::unexpected(claim_refused(ref, now_ms, *r));
}

Result<uint64_t> RedisStateStore::queue_length() {
  auto r = run(ScriptId::queue_length, {ready_, leases_}, {}, Idempotent::yes, "queue_length");
  if (!r) return std::unexpected(r.error());
  auto n = r->size() == 2 ? parse_number<uint64_t>((*r)[1]) : std::nullopt;
  if (!n) return std::unexpected(damaged("the queue length"));
  return *n;
}

Result<std::vector<Task>> RedisStateStore::expire(std::string_view kind_prefix, int64_t enqueued_before_ms,
                                                  int64_t now_ms, size_t max) {
  if (max == 0) return fail(Errc::invalid_argument, "expire: max must be at least 1");
  // Leases whose expiry is <= now_ms, as claim() bounds them; now_ms + 1 overflows only at
  // the largest int64, where every lease has expired: '+' (no upper bound) then.
  const std::string expired_bound =
      now_ms == std::numeric_limits<int64_t>::max() ? std::string("+") : "(" + time_key(now_ms + 1);
  const std::string before = time_key(enqueued_before_ms), count = std::to_string(max);
  auto r = run(ScriptId::expire, {ready_, leases_, done_}, {task_prefix_, expired_bound, kind_prefix, before, count},
               Idempotent::no, "expire");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] != "ok" || (r->size() - 1) % 5 != 0) return std::unexpected(damaged("an unexpected answer to expire"));
  std::vector<Task> removed;
  removed.reserve((r->size() - 1) / 5);
  for (size_t i = 1; i < r->size(); i += 5) {
    auto priority = parse_number<int64_t>((*r)[i + 1]);
    auto enqueued = parse_enqueued((*r)[i + 4]);
    if (!priority || !enqueued) return std::unexpected(damaged("expired task \"" + (*r)[i] + "\" does not decode"));
    removed.push_back(Task{std::move((*r)[i]), *priority, std::move((*r)[i + 2]), std::move((*r)[i + 3]), *enqueued});
  }
  return removed;
}

// ---- The event stream ----

Result<uint64_t> RedisStateStore::append(std::string_view bytes) {
  if (Status st = check_event(bytes); !st) return std::unexpected(st.error());
  auto r = run(ScriptId::append, {events_}, {bytes}, Idempotent::no, "append");
  if (!r) return std::unexpected(r.error());
  auto seq = r->size() == 2 ? parse_number<uint64_t>((*r)[1]) : std::nullopt;
  if (!seq) return std::unexpected(damaged("the sequence number of an appended event"));
  return *seq;
}

Result<std::vector<Event>> RedisStateStore::read(uint64_t from_seq, uint64_t max) {
  std::vector<Event> events;
  if (max == 0) return events;
  const std::string start = std::to_string(std::max<uint64_t>(from_seq, 1)) + "-0";
  const std::string count = std::to_string(std::min<uint64_t>(max, std::numeric_limits<int64_t>::max()));
  auto reply = call({"XRANGE", events_, start, "+", "COUNT", count}, Idempotent::yes, "read");
  if (!reply) return std::unexpected(reply.error());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_ERROR) return std::unexpected(refused(address_, "read", text(r)));
  if (r.type != REDIS_REPLY_ARRAY) return std::unexpected(damaged("the event stream"));
  for (size_t i = 0; i < r.elements; ++i) {
    const redisReply& e = *r.element[i];
    // [id, [field, value]]
    bool ok = e.type == REDIS_REPLY_ARRAY && e.elements == 2 && is_bulk(*e.element[0]) &&
              e.element[1]->type == REDIS_REPLY_ARRAY && e.element[1]->elements == 2 &&
              is_bulk(*e.element[1]->element[1]);
    std::string_view id = ok ? text(*e.element[0]) : std::string_view();
    auto seq = ok && id.ends_with("-0") ? parse_number<uint64_t>(id.substr(0, id.size() - 2)) : std::nullopt;
    if (!seq) return std::unexpected(damaged("an event in the stream"));
    events.push_back(Event{*seq, std::string(text(*e.element[1]->element[1]))});
  }
  return events;
}

Result<uint64_t> RedisStateStore::last_seq() {
  auto reply = call({"XLEN", events_}, Idempotent::yes, "last_seq");
  if (!reply) return std::unexpected(reply.error());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_ERROR) return std::unexpected(refused(address_, "last_seq", text(r)));
  if (r.type != REDIS_REPLY_INTEGER || r.integer < 0) return std::unexpected(damaged("the event stream's length"));
  return static_cast<uint64_t>(r.integer);
}

Status RedisStateStore::set_position(std::string_view consumer, uint64_t seq) {
  if (Status st = check_id(consumer, "consumer name"); !st) return st;
  const std::string s = std::to_string(seq);
  auto r = run(ScriptId::set_position, {events_, positions_}, {consumer, s}, Idempotent::yes, "set_position");
  if (!r) return std::unexpected(r.error());
  if ((*r)[0] == "ok") return {};
  if ((*r)[0] == "past_end" && r->size() == 2) {
    return fail(Errc::invalid_argument, "position " + s + " for consumer \"" + std::string(consumer) +
                                            "\" is past the stream's last event " + (*r)[1]);
  }
  return std::unexpected(damaged("an unexpected answer \"" + (*r)[0] + "\" setting a position"));
}

Result<uint64_t> RedisStateStore::position(std::string_view consumer) {
  if (Status st = check_id(consumer, "consumer name"); !st) return std::unexpected(st.error());
  auto reply = call({"HGET", positions_, consumer}, Idempotent::yes, "position");
  if (!reply) return std::unexpected(reply.error());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_ERROR) return std::unexpected(refused(address_, "position", text(r)));
  if (r.type == REDIS_REPLY_NIL) return uint64_t{0};
  auto seq = r.type == REDIS_REPLY_STRING ? parse_number<uint64_t>(text(r)) : std::nullopt;
  if (!seq) return std::unexpected(damaged("the position of consumer \"" + std::string(consumer) + "\""));
  return *seq;
}

}  // namespace

std::string RedisAddress::to_string() const {
  if (kind == Kind::unix_socket) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "redis://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Result<RedisAddress> parse_redis_address(std::string_view text) {
  const std::string quoted = "Redis address \"" + std::string(text) + "\"";
  auto invalid = [&](std::string why) {
    return fail(Errc::invalid_argument, quoted + ": " + why + " (expected redis://HOST:PORT/DB or unix:PATH)");
  };
  RedisAddress a;
  if (text.starts_with("unix:")) {
    a.kind = RedisAddress::Kind::unix_socket;
    a.path = std::string(text.substr(5));
    if (a.path.empty()) return invalid("the socket path is empty");
    if (a.path.find('\0') != std::string::npos) return invalid("the socket path contains a NUL byte");
    return a;
  }
  constexpr std::string_view kScheme = "redis://";
  if (!text.starts_with(kScheme)) return invalid("unknown scheme");
  std::string_view rest = text.substr(kScheme.size());
  if (rest.find('@') != std::string_view::npos) return invalid("user names and passwords are not supported");
  std::string_view hostport = rest.substr(0, rest.find('/'));
  std::string_view db = hostport.size() < rest.size() ? rest.substr(hostport.size() + 1) : std::string_view();
  std::string_view port;
  if (hostport.starts_with("[")) {
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) return invalid("an IPv6 address without its closing ']'");
    a.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.starts_with(":")) return invalid("no port after the host");
    port = after.substr(1);
  } else {
    size_t colon = hostport.rfind(':');
    if (colon == std::string_view::npos) return invalid("no port after the host");
    a.host = std::string(hostport.substr(0, colon));
    port = hostport.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) return invalid("an IPv6 address must be in brackets");
  }
  if (a.host.empty()) return invalid("the host is empty");
  auto p = parse_number<uint32_t>(port);
  if (!p || *p == 0 || *p > 65535) return invalid("the port must be a number from 1 to 65535");
  a.port = static_cast<uint16_t>(*p);
  if (hostport.size() < rest.size()) {
    auto n = parse_number<int32_t>(db);
    if (!n || *n < 0) return invalid("the database must be a non-negative number after the '/'");
    a.db = *n;
  }
  return a;
}

Result<std::unique_ptr<StateStore>> open_redis_state_store(const RedisAddress& address,
                                                           const RedisStateStoreOptions& options) {
  // A zero timeout would mean "wait forever" to the socket, under the store's one mutex.
  if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0) {
    return fail(Errc::invalid_argument, "the Redis state store's connect and command timeouts must be positive");
  }
  // One ':' and only at the end: "a:" and "a:task:x:" would otherwise nest, and two stores
  // meant to be apart would share keys.
  if (auto prefix = check_id(options.key_prefix, "key prefix"); !prefix) return std::unexpected(prefix.error());
  if (options.key_prefix.find(':') != options.key_prefix.size() - 1) {
    return fail(Errc::invalid_argument, "key prefix \"" + options.key_prefix + "\": one ':', at its end (\"warden:\")");
  }
  auto store = std::make_unique<RedisStateStore>(address, options);
  if (Status st = store->start(); !st) return std::unexpected(st.error().with_context("opening the Redis state store"));
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace warden::store
