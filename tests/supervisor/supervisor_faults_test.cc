// The Supervisor when its store fails part-way: a real LMDB store behind a decorator that
// makes chosen calls fail, either before doing anything (the write certainly did not happen)
// or after doing it (the write happened but the reply was lost: the outcome is unknown to the
// caller). What must hold: a claim is never released under an agent record that may name it,
// a pass returns what it assigned before the store failed, and a made ack is a delivery.
#include <gtest/gtest.h>

#include <memory>

#include "common/random_source.h"
#include "store/lmdb_state_store.h"
#include "supervisor/supervisor.h"
#include "tests/support/temp_dir.h"

namespace warden::supervisor {
namespace {

class SetClock final : public Clock {
 public:
  int64_t now_ms() override { return now_; }
  void advance(int64_t d) { now_ += d; }

 private:
  int64_t now_ = 1000;
};

// Forwards to a real store; `fail_puts` makes the next put_agent calls fail with io_error
// (`applied` deciding whether the call is carried out first) and the next ack_and_put calls
// ack without their write, as when another writer moved the record on; `claims_allowed` lets that many
// more claims through and fails the ones after (-1: no limit).
class FailingStore final : public store::StateStore {
 public:
  explicit FailingStore(store::StateStore& real) : real_(real) {}

  int fail_puts = 0;
  int claims_allowed = -1;
  bool applied = false;

  Result<uint64_t> put_agent(const store::AgentRecord& record, uint64_t expected, std::string_view event) override {
    if (fail_puts > 0) {
      --fail_puts;
      if (applied) (void)real_.put_agent(record, expected, event);
      return fail(Errc::io_error, "injected: the reply was lost");
    }
    return real_.put_agent(record, expected, event);
  }
  Result<std::optional<store::Claim>> claim(std::string_view agent, int64_t now, int64_t timeout,
                                            const store::ClaimFilter& filter) override {
    if (claims_allowed == 0) return fail(Errc::io_error, "injected: the store is unreachable");
    if (claims_allowed > 0) --claims_allowed;
    return real_.claim(agent, now, timeout, filter);
  }
  Result<std::optional<store::AgentRecord>> get_agent(std::string_view id) override { return real_.get_agent(id); }
  Result<std::vector<store::AgentRecord>> list_agents() override { return real_.list_agents(); }
  Status remove_agent(std::string_view id, uint64_t expected) override { return real_.remove_agent(id, expected); }
  Status enqueue(const store::Task& task) override { return real_.enqueue(task); }
  Status ack(const store::ClaimRef& ref, int64_t now) override { return real_.ack(ref, now); }
  Result<std::optional<uint64_t>> ack_and_put(const store::ClaimRef& ref, int64_t now, const store::AgentWrite& then) override {
    if (fail_puts > 0) {
      --fail_puts;
      if (Status acked = real_.ack(ref, now); !acked) return std::unexpected(acked.error());
      return std::optional<uint64_t>();
    }
    return real_.ack_and_put(ref, now, then);
  }
  Status release(const store::ClaimRef& ref, int64_t now) override { return real_.release(ref, now); }
  Result<int64_t> renew(const store::ClaimRef& ref, int64_t now, int64_t timeout) override {
    return real_.renew(ref, now, timeout);
  }
  Result<uint64_t> queue_length() override { return real_.queue_length(); }
  Result<std::vector<store::Task>> expire(std::string_view kind_prefix, int64_t before, int64_t now,
                                          size_t max) override {
    return real_.expire(kind_prefix, before, now, max);
  }
  Result<uint64_t> append(std::string_view bytes) override { return real_.append(bytes); }
  Result<std::vector<store::Event>> read(uint64_t from, uint64_t max) override { return real_.read(from, max); }
  Result<uint64_t> last_seq() override { return real_.last_seq(); }
  Status set_position(std::string_view consumer, uint64_t seq) override { return real_.set_position(consumer, seq); }
  Result<uint64_t> position(std::string_view consumer) override { return real_.position(consumer); }

 private:
  store::StateStore& real_;
};

struct FaultyFleet {
  test::TempDir dir;
  std::unique_ptr<store::StateStore> real;
  std::unique_ptr<FailingStore> store;
  SetClock clock;
  SeededRandomSource random{3};
  std::unique_ptr<Supervisor> sup;

  FaultyFleet() {
    auto opened = store::open_lmdb_state_store(dir.path() / "store", {.sync = false});
    if (!opened) throw std::runtime_error(opened.error().message);
    real = std::move(*opened);
    store = std::make_unique<FailingStore>(*real);
    SupervisorConfig config;
    config.visibility_timeout_ms = 10000;
    config.restart.backoff = {100, 2.0, 1000, 0.0};
    auto made = Supervisor::create(*store, clock, random, config);
    if (!made) throw std::runtime_error(made.error().message);
    sup = std::move(*made);
  }
  // Whether another agent could take `task` now: claims it for a probe agent and gives it back.
  bool claimable(const std::string& task) {
    auto c = real->claim("probe", clock.now_ms(), 1, {});
    if (!c || !*c) return false;
    const bool it = (*c)->task.id == task;
    (void)real->release((*c)->ref(), clock.now_ms());
    return it;
  }
};

TEST(SupervisorFaults, AFailedAgentsClaimIsNotReleasedWhileItsRecordMayStillNameIt) {
  FaultyFleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  ASSERT_TRUE(fleet.store->enqueue({"t", 1, "runner", "p"}));
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);
  // The write that would record the failure is lost after it happened: the supervisor cannot
  // know whether the record still names the task, so the task must stay claimed.
  fleet.store->fail_puts = 1;
  fleet.store->applied = false;
  EXPECT_FALSE(fleet.sup->fail_agent("r1", "crashed"));
  EXPECT_FALSE(fleet.claimable("t")) << "released while the agent's record still names it";
  auto view = fleet.sup->agent("r1");
  ASSERT_TRUE(view && *view);
  EXPECT_EQ((*view)->task_id, "t");
  // Once the failure is recorded, the task goes back at once.
  ASSERT_TRUE(fleet.sup->fail_agent("r1", "crashed"));
  EXPECT_TRUE(fleet.claimable("t"));
}

TEST(SupervisorFaults, AnAssignmentWhoseRecordWriteHasAnUnknownOutcomeKeepsItsClaim) {
  FaultyFleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  ASSERT_TRUE(fleet.store->enqueue({"t", 1, "runner", "p"}));
  fleet.store->fail_puts = 1;
  fleet.store->applied = true;  // the record was written; only the reply was lost
  auto made = fleet.sup->assign();
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, Errc::io_error);
  auto view = fleet.sup->agent("r1");
  ASSERT_TRUE(view && *view);
  EXPECT_EQ((*view)->task_id, "t") << "the write did land";
  EXPECT_FALSE(fleet.claimable("t")) << "the claim must not be released under a record that names it";
  // The agent can carry on with the claim its record names.
  store::ClaimRef ref{"t", "r1", (*view)->claim_token};
  ASSERT_TRUE(fleet.sup->started("r1", ref));
  ASSERT_TRUE(fleet.sup->output_ready("r1", ref));
  ASSERT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_EQ(fleet.store->queue_length().value(), 0u);
}

TEST(SupervisorFaults, APassReturnsWhatItAssignedBeforeTheStoreFailed) {
  FaultyFleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"a", "runner", {}}));
  ASSERT_TRUE(fleet.sup->register_agent({"b", "runner", {}}));
  ASSERT_TRUE(fleet.store->enqueue({"t1", 1, "runner", "p"}));
  ASSERT_TRUE(fleet.store->enqueue({"t2", 1, "runner", "p"}));
  fleet.store->claims_allowed = 1;  // the pass's first claim succeeds, its second fails
  auto made = fleet.sup->assign();
  ASSERT_TRUE(made) << "one agent holds a task now: the pass must say which";
  ASSERT_EQ(made->size(), 1u);
  EXPECT_EQ((*made)[0].claim.task.id, "t1");
  auto holder = fleet.sup->agent((*made)[0].agent_id);
  ASSERT_TRUE(holder && *holder);
  EXPECT_EQ((*holder)->task_id, "t1");
  // With nothing assigned before it, the failure itself is the answer.
  auto none = fleet.sup->assign();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::io_error);
  fleet.store->claims_allowed = -1;
  auto rest = fleet.sup->assign();
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].claim.task.id, "t2");
}

TEST(SupervisorFaults, AMadeAckIsADeliveryEvenWhenTheRecordAfterItFails) {
  FaultyFleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  ASSERT_TRUE(fleet.store->enqueue({"t", 1, "runner", "p"}));
  auto made = fleet.sup->assign();
  ASSERT_EQ(made->size(), 1u);
  const store::ClaimRef ref = (*made)[0].claim.ref();
  ASSERT_TRUE(fleet.sup->started("r1", ref));
  ASSERT_TRUE(fleet.sup->output_ready("r1", ref));
  fleet.store->fail_puts = 16;  // every write of the agent's record after the ack fails
  fleet.store->applied = false;
  EXPECT_TRUE(fleet.sup->delivered("r1", ref)) << "the store acked: the decision is authorized";
  EXPECT_EQ(fleet.store->queue_length().value(), 0u);
  fleet.store->fail_puts = 0;
  // The delivery was recorded even though the agent's record was not.
  auto events = fleet.store->read(1, 100);
  ASSERT_TRUE(events);
  bool delivered = false;
  for (const auto& e : *events) delivered |= decode_fleet_event(e.bytes)->type == FleetEventType::delivered;
  EXPECT_TRUE(delivered);
  // The record still names the acked claim; once its lease runs out the agent is freed.
  fleet.clock.advance(10001);
  ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  auto failed = fleet.sup->detect_failures();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, std::vector<std::string>{"r1"});
  auto view = fleet.sup->agent("r1");
  ASSERT_TRUE(view && *view);
  EXPECT_TRUE((*view)->task_id.empty());
}

}  // namespace
}  // namespace warden::supervisor
