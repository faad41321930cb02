#include "service/fleet.h"

#include <algorithm>

#include "common/file.h"

#include "store/lmdb_state_store.h"
#include "supervisor/fleet_event.h"
#include "store/record_checks.h"
#include "store/redis_state_store.h"

namespace warden::service {

Result<std::unique_ptr<store::StateStore>> open_fleet_store(const FleetOptions& options) {
  if (options.store.empty() || options.store == "lmdb") {
    // Synced: an acknowledged assignment or ack survives a power loss, and the server's
    // fleet moves at heartbeat pace, far below LMDB's synced commit rate.
    auto opened = store::open_lmdb_state_store(options.state_dir / "fleet", {.sync = true});
    if (!opened) return std::unexpected(opened.error().with_context("the fleet's store " + (options.state_dir / "fleet").string()));
    return opened;
  }
  if (options.store.starts_with("redis://") || options.store.starts_with("unix:")) {
    auto address = store::parse_redis_address(options.store);
    if (!address) return std::unexpected(address.error().with_context("--store"));
    auto opened = store::open_redis_state_store(*address, {.key_prefix = options.redis_prefix});
    if (!opened) return std::unexpected(opened.error().with_context("the fleet's store " + options.store));
    return opened;
  }
  return fail(Errc::invalid_argument,
              "--store " + options.store + ": expected lmdb, redis://HOST:PORT[/DB] or unix:PATH (a Redis socket)");
}

uint64_t RunnerSessions::enter(const std::string& agent_id, grpc::ServerContext* context) {
  std::lock_guard lock(mu_);
  if (closing_) return 0;
  auto [it, fresh] = live_.try_emplace(agent_id);
  if (!fresh) cut_locked(it->second, "a newer connection of the runner took its place");
  it->second = Session{next_++, context};
  return it->second.number;
}

void RunnerSessions::cut_locked(const Session& session, std::string why) {
  if (!session.context) return;
  cut_.try_emplace(session.number, std::move(why));
  session.context->TryCancel();
}

std::string RunnerSessions::cut_reason(uint64_t session) {
  std::lock_guard lock(mu_);
  auto it = cut_.find(session);
  if (it == cut_.end()) return "";
  std::string why = std::move(it->second);
  cut_.erase(it);
  return why;
}

bool RunnerSessions::leave(const std::string& agent_id, uint64_t session) {
  std::lock_guard lock(mu_);
  auto it = live_.find(agent_id);
  if (it == live_.end() || it->second.number != session) return false;
  live_.erase(it);
  return true;
}

bool RunnerSessions::connected(const std::string& agent_id) const {
  std::lock_guard lock(mu_);
  return live_.contains(agent_id);
}

void RunnerSessions::disconnect(const std::string& agent_id) {
  std::lock_guard lock(mu_);
  auto it = live_.find(agent_id);
  // The handler owning the context leaves (under mu_) before it returns, so the pointer is
  // live while the entry is.
  if (it != live_.end()) cut_locked(it->second, "an operator forgot it");
}

void RunnerSessions::disconnect_all() {
  std::lock_guard lock(mu_);
  closing_ = true;
  for (auto& [id, session] : live_) cut_locked(session, "the server is stopping");
}

// The server's instance name, made once and kept in STATE/server.id: the runner tasks it
// queued are of its kind (runner_task_kind), so after a crash and restart the same server
// finds them again (and withdraws those no build waits for) instead of leaving them to a
// name nobody answers to.
static Result<std::string> server_instance(const std::filesystem::path& state_dir, RandomSource& random) {
  const std::filesystem::path file = state_dir / "server.id";
  auto stored = read_file(file, 64);
  if (stored) {
    std::string id = *stored;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    const bool hex = id.size() == 16 && std::all_of(id.begin(), id.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (!hex) return fail(Errc::corrupt, file.string() + ": not a server id (16 hex digits); remove it to make a new one");
    return id;
  }
  if (stored.error().code != Errc::not_found) return std::unexpected(stored.error());
  char instance[17];
  std::snprintf(instance, sizeof instance, "%016llx", static_cast<unsigned long long>(random.next_u64()));
  if (Status st = create_file_atomic(file, std::string(instance) + "\n", 0600); !st) return std::unexpected(st.error());
  return std::string(instance);
}

Result<std::unique_ptr<Fleet>> Fleet::open(const FleetOptions& options, Clock& clock, RandomSource& random,
                                           std::function<void(bool, const std::string&)> on_ready) {
  if (options.tick <= std::chrono::milliseconds(0)) return fail(Errc::invalid_argument, "fleet tick: must be positive");
  auto store = open_fleet_store(options);
  if (!store) return std::unexpected(store.error());
  auto sup = supervisor::Supervisor::create(**store, clock, random, options.supervisor);
  if (!sup) return std::unexpected(sup.error());
  auto instance = server_instance(options.state_dir, random);
  if (!instance) return std::unexpected(instance.error());
  return std::unique_ptr<Fleet>(new Fleet(options, *instance, clock, std::move(*store), std::move(*sup), std::move(on_ready)));
}

void Fleet::start(std::function<Status()> after_tick,
                  std::function<void(const std::vector<supervisor::Assignment>&)> on_assigned,
                  std::function<void(const std::vector<store::Task>&)> on_expired) {
  std::lock_guard lock(mu_);
  if (loop_.joinable() || stopping_) return;
  after_tick_ = std::move(after_tick);
  on_assigned_ = std::move(on_assigned);
  on_expired_ = std::move(on_expired);
  loop_ = std::thread([this] { loop(); });
}

Fleet::Fleet(FleetOptions options, std::string instance, Clock& clock, std::unique_ptr<store::StateStore> store,
             std::unique_ptr<supervisor::Supervisor> sup, std::function<void(bool, const std::string&)> on_ready)
    : options_(std::move(options)),
      instance_(std::move(instance)),
      clock_(clock),
      started_ms_(clock.now_ms()),
      store_(std::move(store)),
      supervisor_(std::move(sup)),
      on_ready_(std::move(on_ready)) {}

Fleet::~Fleet() { stop(); }

std::string Fleet::store_name() const {
  if (options_.store.empty() || options_.store == "lmdb") return "lmdb";
  return options_.store + " " + options_.redis_prefix;
}

std::string Fleet::runner_task_kind(std::string_view owner) const {
  std::string kind = "runner." + instance_;
  if (owner.empty()) return kind;
  kind.append(":").append(owner);
  return store::check_id(kind, "kind") ? kind : std::string();
}

std::string Fleet::describe() const {
  if (options_.store.empty() || options_.store == "lmdb") return "lmdb " + (options_.state_dir / "fleet").string();
  return options_.store;
}

void Fleet::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  wake_cv_.notify_all();
}

void Fleet::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_cv_.notify_all();
  }
  // Joined outside mu_ (the loop takes it); only stop() joins, and start() refuses once
  // stopping_ is set.
  if (loop_.joinable()) loop_.join();
  // Not ready, and nothing failed: no reason, so a clean stop logs no failure.
  if (ready_.exchange(false) && on_ready_) on_ready_(false, "");
}

Status Fleet::tick() {
  auto failed = supervisor_->detect_failures();
  if (!failed) return std::unexpected(failed.error().with_context("detecting failed agents"));
  // Runners take only the runner tasks of the server they are connected to, and only that
  // server assigns them; other agents (spawned executors) take any task of their role.
  supervisor::AssignScope scope;
  scope.may_take = [this](const supervisor::AgentView& v) { return v.record.role != "runner" || sessions_.connected(v.record.id); };
  scope.kinds = [this](const supervisor::AgentView& v) {
    if (v.record.role != "runner") return std::vector<std::string>{v.record.role};
    std::vector<std::string> kinds{runner_task_kind()};
    if (std::string owned = runner_task_kind(v.owner); !owned.empty()) kinds.push_back(std::move(owned));
    return kinds;
  };
  // A runner's task goes out on its stream at once (RemoteRunners::dispatch).
  scope.starts_at_once = [](const supervisor::AgentView& v) { return v.record.role == "runner"; };
  auto assigned = supervisor_->assign(scope);
  if (!assigned) return std::unexpected(assigned.error().with_context("assigning tasks"));
  if (on_assigned_ && !assigned->empty()) on_assigned_(*assigned);
  if (Status st = sweep(); !st) return std::unexpected(st.error().with_context("expiring tasks nobody will take"));
  if (after_tick_) return after_tick_();
  return {};
}

Status Fleet::sweep() {
  const int64_t now = clock_.now_ms();
  if (now < next_sweep_ms_) return {};
  next_sweep_ms_ = now + options_.sweep_every.count();
  // At most this many a pass: a backlog goes over several, each one short transaction.
  constexpr size_t kBatch = 64;
  const std::string server = "server." + instance_;
  const int64_t expiry = options_.task_expiry.count();
  struct Pass {
    std::string prefix;
    int64_t before;
    std::string reason;
  };
  const Pass passes[] = {
      {runner_task_kind(), started_ms_, "queued by this server before it restarted: the build that queued it is gone"},
      {"runner.", now - expiry,
       "waited more than " + std::to_string(expiry / 1000) + " s: its server is gone, or no runner took it"},
  };
  for (const Pass& pass : passes) {
    auto expired = store_->expire(pass.prefix, pass.before, now, kBatch);
    if (!expired) return std::unexpected(expired.error());
    for (const store::Task& task : *expired) {
      const supervisor::FleetEvent event{.type = supervisor::FleetEventType::expired, .agent_id = server, .at_ms = now,
                                         .task_id = task.id, .reason = pass.reason};
      if (auto appended = store_->append(supervisor::encode(event)); !appended) return std::unexpected(appended.error());
    }
    if (on_expired_ && !expired->empty()) on_expired_(*expired);
  }
  return {};
}

void Fleet::loop() {
  std::string last_why;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stopping_) return;
    }
    Status done = tick();
    const bool now_ready = done.has_value();
    const std::string why = done ? "" : done.error().message;
    if (now_ready != ready_.load() || why != last_why) {
      ready_.store(now_ready);
      last_why = why;
      if (on_ready_) on_ready_(now_ready, why);
    }
    std::unique_lock lock(mu_);
    wake_cv_.wait_for(lock, options_.tick, [&] { return woken_ || stopping_; });
    woken_ = false;
    if (stopping_) return;
  }
}

}  // namespace warden::service
