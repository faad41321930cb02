#include "tests/store/state_store_conformance.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace warden::store::test {

void StateStoreConformance::SetUp() {
  backing_ = GetParam().make();
  auto opened = backing_->open();
  ASSERT_TRUE(opened) << opened.error().message;
  store_ = std::move(*opened);
}

void StateStoreConformance::reopen() {
  store_.reset();
  auto opened = backing_->open();
  ASSERT_TRUE(opened) << opened.error().message;
  store_ = std::move(*opened);
}

namespace {

constexpr int64_t kLease = 1000;
const ClaimFilter kAny{};

AgentRecord agent(std::string id, std::string state) {
  AgentRecord r;
  r.id = std::move(id);
  r.role = "executor";
  r.labels = {{"zone", "a"}, {"arch", "x86_64"}};
  r.state = std::move(state);
  r.last_heartbeat_ms = 42;
  r.details = R"({"pid":7})";
  return r;
}

Task task(std::string id, int64_t priority, std::string kind = "build") {
  return Task{id, priority, std::move(kind), "payload of " + id};
}

// Claims until the queue is empty, acking each; the ids in claim order.
std::vector<std::string> drain(StateStore& store, int64_t now_ms) {
  std::vector<std::string> ids;
  for (;;) {
    auto c = store.claim("drainer", now_ms, kLease, kAny);
    EXPECT_TRUE(c) << c.error().message;
    if (!c || !*c) return ids;
    ids.push_back((*c)->task.id);
    auto acked = store.ack((*c)->ref(), now_ms);
    EXPECT_TRUE(acked) << acked.error().message;
  }
}

// ---- Agents ----

TEST_P(StateStoreConformance, CreateOnlyWithVersionZero) {
  auto v = store().put_agent(agent("a1", "Idle"), 0, "");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, 1u);

  auto again = store().put_agent(agent("a1", "Working"), 0, "");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::already_exists);

  auto got = store().get_agent("a1");
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(got->has_value());
  AgentRecord expected = agent("a1", "Idle");
  expected.version = 1;
  EXPECT_EQ(**got, expected);
}

TEST_P(StateStoreConformance, CompareAndSetSucceedsOnlyAtTheStoredVersion) {
  ASSERT_TRUE(store().put_agent(agent("a1", "Idle"), 0, ""));
  auto v2 = store().put_agent(agent("a1", "Assigned"), 1, "");
  ASSERT_TRUE(v2) << v2.error().message;
  EXPECT_EQ(*v2, 2u);

  // A writer that read version 1 loses.
  auto stale = store().put_agent(agent("a1", "Working"), 1, "");
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::failed_precondition);
  auto ahead = store().put_agent(agent("a1", "Working"), 7, "");
  ASSERT_FALSE(ahead);
  EXPECT_EQ(ahead.error().code, Errc::failed_precondition);

  auto got = store().get_agent("a1");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->state, "Assigned");
  EXPECT_EQ((*got)->version, 2u);
}

TEST_P(StateStoreConformance, UpdateOfAMissingAgentIsNotFound) {
  auto v = store().put_agent(agent("ghost", "Idle"), 3, "");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, Errc::not_found);
  auto got = store().get_agent("ghost");
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->has_value());
}

TEST_P(StateStoreConformance, AnAgentWritesEventIsRecordedExactlyWhenTheWriteIs) {
  ASSERT_TRUE(store().append("before"));
  ASSERT_TRUE(store().put_agent(agent("a1", "Idle"), 0, "registered a1"));
  // Refused writes record nothing: a conflict, a create over an existing agent, a ghost.
  EXPECT_FALSE(store().put_agent(agent("a1", "Working"), 5, "lost the race"));
  EXPECT_FALSE(store().put_agent(agent("a1", "Working"), 0, "created twice"));
  EXPECT_FALSE(store().put_agent(agent("ghost", "Idle"), 2, "ghost"));
  ASSERT_TRUE(store().put_agent(agent("a1", "Working"), 1, "a1 working"));
  ASSERT_TRUE(store().put_agent(agent("a1", "Idle"), 2, ""));  // no event
  auto events = store().read(1, 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0], (Event{1, "before"}));
  EXPECT_EQ((*events)[1], (Event{2, "registered a1"}));
  EXPECT_EQ((*events)[2], (Event{3, "a1 working"}));
  EXPECT_EQ(store().last_seq().value(), 3u);
  // The stream stays dense after them.
  EXPECT_EQ(store().append("after").value(), 4u);
}

TEST_P(StateStoreConformance, ConcurrentWritersAtOneVersionHaveOneWinner) {
  ASSERT_TRUE(store().put_agent(agent("a1", "Idle"), 0, ""));
  std::atomic<int> won{0}, lost{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto v = store().put_agent(agent("a1", "writer" + std::to_string(i)), 1, "");
      if (v) {
        ++won;
      } else if (v.error().code == Errc::failed_precondition) {
        ++lost;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(lost.load(), 7);
  auto got = store().get_agent("a1");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->version, 2u);
}

TEST_P(StateStoreConformance, ListIsInIdOrderAndRemoveComparesVersions) {
  ASSERT_TRUE(store().put_agent(agent("b", "Idle"), 0, ""));
  ASSERT_TRUE(store().put_agent(agent("a", "Idle"), 0, ""));
  ASSERT_TRUE(store().put_agent(agent("c", "Idle"), 0, ""));
  ASSERT_TRUE(store().put_agent(agent("c", "Working"), 1, ""));

  auto all = store().list_agents();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "a");
  EXPECT_EQ((*all)[1].id, "b");
  EXPECT_EQ((*all)[2].id, "c");
  EXPECT_EQ((*all)[2].state, "Working");
  EXPECT_EQ((*all)[2].version, 2u);

  auto wrong = store().remove_agent("c", 1);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, Errc::failed_precondition);
  ASSERT_TRUE(store().remove_agent("c", 2));
  auto gone = store().remove_agent("c", 2);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::not_found);

  all = store().list_agents();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  // Removed, the id may be created again from version 0; its versions go on from the removed
  // one's (2), so a writer holding a view of the old incarnation at version 1 or 2 loses.
  auto again = store().put_agent(agent("c", "Idle"), 0, "");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 3u);
  EXPECT_EQ(store().put_agent(agent("c", "stale"), 1, "").error().code, Errc::failed_precondition);
  EXPECT_EQ(store().put_agent(agent("c", "stale"), 2, "").error().code, Errc::failed_precondition);
  EXPECT_EQ(store().get_agent("c").value()->version, 3u);
}

TEST_P(StateStoreConformance, DetailsAreOpaqueBytes) {
  AgentRecord r = agent("bin", "Idle");
  r.details = std::string("\0\xff\x01{not json", 12);
  r.labels.clear();
  r.last_heartbeat_ms = -5;
  ASSERT_TRUE(store().put_agent(r, 0, ""));
  auto got = store().get_agent("bin");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->details, r.details);
  EXPECT_TRUE((*got)->labels.empty());
  EXPECT_EQ((*got)->last_heartbeat_ms, -5);
}

TEST_P(StateStoreConformance, EmptyIdsAreInvalid) {
  auto a = store().put_agent(agent("", "Idle"), 0, "");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, Errc::invalid_argument);
  auto t = store().enqueue(task("", 1));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Errc::invalid_argument);
  auto c = store().claim("", 0, kLease, kAny);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::invalid_argument);
  ASSERT_TRUE(store().enqueue(task("t", 1)));
  auto zero = store().claim("a", 0, 0, kAny);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, Errc::invalid_argument);
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 1u);
}

// ---- The task queue ----

TEST_P(StateStoreConformance, ClaimsByPriorityThenFifo) {
  ASSERT_TRUE(store().enqueue(task("low-1", -3)));
  ASSERT_TRUE(store().enqueue(task("mid-1", 5)));
  ASSERT_TRUE(store().enqueue(task("high-1", 100)));
  ASSERT_TRUE(store().enqueue(task("mid-2", 5)));
  ASSERT_TRUE(store().enqueue(task("zero", 0)));
  ASSERT_TRUE(store().enqueue(task("mid-3", 5)));
  ASSERT_TRUE(store().enqueue(task("low-2", -3)));
  ASSERT_TRUE(store().enqueue(task("high-2", 100)));
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 8u);

  EXPECT_EQ(drain(store(), 10),
            (std::vector<std::string>{"high-1", "high-2", "mid-1", "mid-2", "mid-3", "zero", "low-1", "low-2"}));
  auto empty = store().claim("a", 10, kLease, kAny);
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->has_value());
  length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 0u);
}

TEST_P(StateStoreConformance, AClaimCarriesTheTaskAndItsLease) {
  Task t{"t1", 4, "runner", std::string("\0payload", 8), 1'700'000'000'123};
  ASSERT_TRUE(store().enqueue(t));
  auto c = store().claim("agent-1", 500, 250, kAny);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->task, t);
  EXPECT_EQ((*c)->agent_id, "agent-1");
  EXPECT_EQ((*c)->attempt, 1u);
  EXPECT_EQ((*c)->expires_ms, 750);
  EXPECT_NE((*c)->token, 0u);
  EXPECT_EQ((*c)->ref(), (ClaimRef{"t1", "agent-1", (*c)->token}));
}

TEST_P(StateStoreConformance, DuplicateEnqueueIsRefusedAndChangesNothing) {
  ASSERT_TRUE(store().enqueue(Task{"t1", 1, "build", "first"}));
  auto dup = store().enqueue(Task{"t1", 99, "build", "second"});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, Errc::already_exists);

  auto c = store().claim("a", 0, kLease, kAny);
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->task.payload, "first");
  EXPECT_EQ((*c)->task.priority, 1);
  // Claimed, it is still in the queue.
  auto while_claimed = store().enqueue(Task{"t1", 1, "build", "third"});
  ASSERT_FALSE(while_claimed);
  EXPECT_EQ(while_claimed.error().code, Errc::already_exists);
  ASSERT_TRUE(store().ack((*c)->ref(), 1));
  // Acked, the id is done for good: a retried submit cannot run a decided task again.
  auto after_ack = store().enqueue(Task{"t1", 1, "build", "fourth"});
  ASSERT_FALSE(after_ack);
  EXPECT_EQ(after_ack.error().code, Errc::already_exists);
  EXPECT_NE(after_ack.error().message.find("acknowledged already"), std::string::npos) << after_ack.error().message;
  auto next = store().claim("a", 2, kLease, kAny);
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->has_value());
}

TEST_P(StateStoreConformance, AnAckRetriedByItsClaimIsOkAndByAnyOtherIsRefused) {
  ASSERT_TRUE(store().enqueue(task("t1", 1)));
  auto c = store().claim("a", 0, kLease, kAny);
  ASSERT_TRUE(c && c->has_value());
  const ClaimRef ref = (*c)->ref();
  ASSERT_TRUE(store().ack(ref, 1));
  EXPECT_TRUE(store().ack(ref, 2)) << "the same claim's retry after a lost reply";
  auto other_agent = store().ack(ClaimRef{"t1", "b", ref.token}, 2);
  ASSERT_FALSE(other_agent);
  EXPECT_EQ(other_agent.error().code, Errc::not_found);
  auto other_token = store().ack(ClaimRef{"t1", "a", ref.token + 1}, 2);
  ASSERT_FALSE(other_token);
  EXPECT_EQ(other_token.error().code, Errc::not_found);
  EXPECT_EQ(store().queue_length().value(), 0u);
}

// The supervisor's delivery: the ack and the agent's record in one transaction.
TEST_P(StateStoreConformance, AckAndPutWritesTheRecordWithTheAckOrTheAckAlone) {
  ASSERT_TRUE(store().put_agent(agent("a", "working"), 0, ""));
  ASSERT_TRUE(store().enqueue(task("t1", 1)));
  ASSERT_TRUE(store().enqueue(task("t2", 1)));
  auto c1 = store().claim("a", 0, kLease, kAny);
  ASSERT_TRUE(c1 && c1->has_value());
  AgentRecord idle = agent("a", "idle");
  idle.labels = {{"zone", "b"}};  // the record is written afresh: a label dropped is gone

  // At the expected version: both, the event with them.
  auto both = store().ack_and_put((*c1)->ref(), 1, AgentWrite{idle, 1, "delivered t1"});
  ASSERT_TRUE(both) << both.error().message;
  ASSERT_TRUE(both->has_value());
  EXPECT_EQ(**both, 2u);
  auto stored = store().get_agent("a");
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->state, "idle");
  EXPECT_EQ((*stored)->labels, idle.labels);
  EXPECT_EQ((*stored)->version, 2u);
  EXPECT_EQ(store().queue_length().value(), 1u);
  auto events = store().read(1, 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].bytes, "delivered t1");

  // The same claim again (a lost reply): the ack is answered ok, the write finds the version
  // it made and is not made twice.
  auto again = store().ack_and_put((*c1)->ref(), 2, AgentWrite{idle, 1, "delivered t1"});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(store().last_seq().value(), 1u);
  EXPECT_EQ(store().get_agent("a").value()->version, 2u);

  // The record moved on: the ack alone.
  auto c2 = store().claim("a", 3, kLease, kAny);
  ASSERT_TRUE(c2 && c2->has_value());
  auto alone = store().ack_and_put((*c2)->ref(), 4, AgentWrite{agent("a", "stale"), 1, "from a stale read"});
  ASSERT_TRUE(alone) << alone.error().message;
  EXPECT_FALSE(alone->has_value());
  EXPECT_EQ(store().queue_length().value(), 0u) << "the ack stands";
  EXPECT_EQ(store().get_agent("a").value()->state, "idle");
  EXPECT_EQ(store().last_seq().value(), 1u) << "no event without its write";

  // A refused ack writes nothing; nor does a write that could not be a put_agent.
  ASSERT_TRUE(store().enqueue(task("t3", 1)));
  auto c3 = store().claim("a", 5, 10, kAny);
  ASSERT_TRUE(c3 && c3->has_value());
  auto late = store().ack_and_put((*c3)->ref(), 15, AgentWrite{agent("a", "late"), 2, "late"});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::failed_precondition);
  auto foreign = store().ack_and_put(ClaimRef{"t3", "b", (*c3)->token}, 6, AgentWrite{agent("a", "x"), 2, "x"});
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code, Errc::failed_precondition);
  auto creating = store().ack_and_put((*c3)->ref(), 6, AgentWrite{agent("new", "idle"), 0, ""});
  ASSERT_FALSE(creating);
  EXPECT_EQ(creating.error().code, Errc::invalid_argument);
  EXPECT_EQ(store().get_agent("a").value()->state, "idle");
  EXPECT_EQ(store().get_agent("a").value()->version, 2u);
  EXPECT_FALSE(store().get_agent("new").value());
  EXPECT_EQ(store().last_seq().value(), 1u);
  EXPECT_EQ(store().queue_length().value(), 1u);
}

TEST_P(StateStoreConformance, IdsRecordsAndEventsOutsideTheBoundsAreRefusedAndChangeNothing) {
  const std::string long_id(129, 'a');
  for (const std::string& bad : {std::string("a b"), std::string("a/b"), std::string("\xff"), long_id,
                                 std::string("a\0b", 3)}) {
    EXPECT_EQ(store().put_agent(agent(bad, "Idle"), 0, "").error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().get_agent(bad).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().remove_agent(bad, 1).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().enqueue(task(bad, 1)).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().claim(bad, 0, kLease, kAny).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().ack(ClaimRef{bad, "a", 1}, 0).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().release(ClaimRef{"t", bad, 1}, 0).error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(store().set_position(bad, 0).error().code, Errc::invalid_argument) << bad;
  }
  EXPECT_TRUE(store().get_agent(std::string(128, 'a')));  // exactly the bound
  AgentRecord crowded = agent("crowded", "Idle");
  for (int i = 0; i < 65; ++i) crowded.labels["l" + std::to_string(i)] = "v";
  EXPECT_EQ(store().put_agent(crowded, 0, "").error().code, Errc::invalid_argument);
  AgentRecord bad_value = agent("bad-value", "Idle");
  bad_value.labels["zone"] = "\xff";
  EXPECT_EQ(store().put_agent(bad_value, 0, "").error().code, Errc::invalid_argument);
  EXPECT_EQ(store().put_agent(agent("ok", "Idle"), 0, std::string(65537, 'e')).error().code, Errc::invalid_argument);
  EXPECT_EQ(store().append(std::string(65537, 'e')).error().code, Errc::invalid_argument);
  EXPECT_EQ(store().enqueue(Task{"big", 1, "k", std::string((1 << 20) + 1, 'p')}).error().code, Errc::invalid_argument);
  EXPECT_EQ(store().list_agents().value().size(), 0u);
  EXPECT_EQ(store().queue_length().value(), 0u);
  EXPECT_EQ(store().last_seq().value(), 0u);
}

TEST_P(StateStoreConformance, FilterTakesTheBestMatchingKind) {
  ASSERT_TRUE(store().enqueue(task("build-hi", 9, "build")));
  ASSERT_TRUE(store().enqueue(task("test-lo", 1, "test")));
  ASSERT_TRUE(store().enqueue(task("lint", 5, "lint")));
  ASSERT_TRUE(store().enqueue(task("test-hi", 7, "test")));

  auto c = store().claim("tester", 0, kLease, ClaimFilter{{"test"}});
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->task.id, "test-hi");
  c = store().claim("tester", 0, kLease, ClaimFilter{{"lint", "test"}});
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->task.id, "lint");
  c = store().claim("tester", 0, kLease, ClaimFilter{{"deploy"}});
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->has_value());
  c = store().claim("any", 0, kLease, kAny);
  ASSERT_TRUE(c && c->has_value());
  EXPECT_EQ((*c)->task.id, "build-hi");
}

TEST_P(StateStoreConformance, ThreadsClaimEachTaskExactlyOnce) {
  constexpr int kTasks = 200, kThreads = 4;
  for (int i = 0; i < kTasks; ++i) ASSERT_TRUE(store().enqueue(task("t" + std::to_string(i), i % 7)));

  std::vector<std::vector<std::string>> claimed(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      const std::string me = "worker-" + std::to_string(w);
      for (;;) {
        auto c = store().claim(me, 0, 1'000'000, kAny);
        if (!c) {
          ++errors;
          return;
        }
        if (!*c) return;
        claimed[w].push_back((*c)->task.id);
        if (!store().ack((*c)->ref(), 1)) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  std::multiset<std::string> all;
  for (const auto& ids : claimed) all.insert(ids.begin(), ids.end());
  ASSERT_EQ(all.size(), size_t{kTasks});
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(all.count("t" + std::to_string(i)), 1u) << i;
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 0u);
}

TEST_P(StateStoreConformance, AnExpiredClaimReturnsTheTaskInItsPlace) {
  ASSERT_TRUE(store().enqueue(task("first", 1)));
  ASSERT_TRUE(store().enqueue(task("second", 1)));
  auto dead = store().claim("dead-agent", 0, 100, kAny);
  ASSERT_TRUE(dead && dead->has_value());
  EXPECT_EQ((*dead)->task.id, "first");

  // Before the lease ends the next claim gets the next task...
  auto live = store().claim("b", 99, 100, kAny);
  ASSERT_TRUE(live && live->has_value());
  EXPECT_EQ((*live)->task.id, "second");
  auto none = store().claim("b", 99, 100, kAny);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());

  // ...and at the expiry the dead agent's task comes back, as a new attempt.
  ASSERT_TRUE(store().release((*live)->ref(), 99));
  auto retry = store().claim("c", 100, 100, kAny);
  ASSERT_TRUE(retry && retry->has_value());
  EXPECT_EQ((*retry)->task.id, "first");  // enqueued before "second": its place is kept
  EXPECT_EQ((*retry)->attempt, 2u);
  EXPECT_EQ((*retry)->agent_id, "c");
  EXPECT_EQ((*retry)->expires_ms, 200);
  EXPECT_NE((*retry)->token, (*dead)->token);
}

TEST_P(StateStoreConformance, OnlyExpiredLeasesReturn) {
  ASSERT_TRUE(store().enqueue(task("short", 1)));
  ASSERT_TRUE(store().enqueue(task("long", 1)));
  auto s = store().claim("a", 0, 100, kAny);
  auto l = store().claim("b", 0, 300, kAny);
  ASSERT_TRUE(s && s->has_value() && l && l->has_value());
  ASSERT_EQ((*s)->task.id, "short");

  auto back = store().claim("c", 200, 1000, kAny);
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ((*back)->task.id, "short");
  EXPECT_EQ((*back)->attempt, 2u);
  auto held = store().claim("c", 299, 1000, kAny);
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->has_value());
  ASSERT_TRUE(store().ack((*l)->ref(), 299));  // live until 300
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 1u);
}

TEST_P(StateStoreConformance, ALateAckOfAnExpiredClaimIsRefused) {
  ASSERT_TRUE(store().enqueue(task("t", 1)));
  auto first = store().claim("slow", 0, 100, kAny);
  ASSERT_TRUE(first && first->has_value());

  // Expired, even before anyone claims it again.
  auto at_expiry = store().ack((*first)->ref(), 100);
  ASSERT_FALSE(at_expiry);
  EXPECT_EQ(at_expiry.error().code, Errc::failed_precondition);

  auto second = store().claim("fast", 150, 100, kAny);
  ASSERT_TRUE(second && second->has_value());
  auto late = store().ack((*first)->ref(), 160);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::failed_precondition);

  // The same agent claiming again gets a new token; the old one stays dead.
  ASSERT_TRUE(store().release((*second)->ref(), 170));
  auto third = store().claim("slow", 180, 100, kAny);
  ASSERT_TRUE(third && third->has_value());
  EXPECT_EQ((*third)->attempt, 3u);
  auto stale_token = store().ack((*first)->ref(), 190);
  ASSERT_FALSE(stale_token);
  EXPECT_EQ(stale_token.error().code, Errc::failed_precondition);

  ASSERT_TRUE(store().ack((*third)->ref(), 190));
  auto after = store().ack((*second)->ref(), 195);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, Errc::not_found);
}

TEST_P(StateStoreConformance, AckByAnotherAgentIsRefused) {
  ASSERT_TRUE(store().enqueue(task("t", 1)));
  auto c = store().claim("owner", 0, kLease, kAny);
  ASSERT_TRUE(c && c->has_value());
  ClaimRef forged = (*c)->ref();
  forged.agent_id = "intruder";
  auto refused = store().ack(forged, 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::failed_precondition);
  auto refused_release = store().release(forged, 1);
  ASSERT_FALSE(refused_release);
  EXPECT_EQ(refused_release.error().code, Errc::failed_precondition);

  ASSERT_TRUE(store().ack((*c)->ref(), 2));
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 0u);
}

TEST_P(StateStoreConformance, ReleaseReturnsTheTaskAtOnce) {
  ASSERT_TRUE(store().enqueue(task("a", 1)));
  ASSERT_TRUE(store().enqueue(task("b", 1)));
  auto c = store().claim("x", 0, kLease, kAny);
  ASSERT_TRUE(c && c->has_value());
  ASSERT_EQ((*c)->task.id, "a");
  ASSERT_TRUE(store().release((*c)->ref(), 5));
  auto again = store().release((*c)->ref(), 5);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::failed_precondition);

  auto next = store().claim("y", 6, kLease, kAny);
  ASSERT_TRUE(next && next->has_value());
  EXPECT_EQ((*next)->task.id, "a");
  EXPECT_EQ((*next)->attempt, 2u);
  auto old = store().ack((*c)->ref(), 7);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, Errc::failed_precondition);
}

TEST_P(StateStoreConformance, RenewExtendsALiveClaimOnly) {
  ASSERT_TRUE(store().enqueue(task("long", 1)));
  auto c = store().claim("worker", 0, 100, kAny);
  ASSERT_TRUE(c && c->has_value());
  auto renewed = store().renew((*c)->ref(), 90, 100);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_EQ(*renewed, 190);

  // Past the first expiry the task is still held.
  auto other = store().claim("other", 150, 100, kAny);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_value());
  ASSERT_TRUE(store().ack((*c)->ref(), 189));

  ASSERT_TRUE(store().enqueue(task("lapsed", 1)));
  auto d = store().claim("worker", 200, 100, kAny);
  ASSERT_TRUE(d && d->has_value());
  auto too_late = store().renew((*d)->ref(), 300, 100);
  ASSERT_FALSE(too_late);
  EXPECT_EQ(too_late.error().code, Errc::failed_precondition);
}

// ---- Expiring tasks nobody will take ----

Task aged(std::string id, int64_t priority, std::string kind, int64_t enqueued_ms) {
  return Task{id, priority, std::move(kind), "payload of " + id, enqueued_ms};
}

std::vector<std::string> ids(const std::vector<Task>& tasks) {
  std::vector<std::string> out;
  for (const Task& t : tasks) out.push_back(t.id);
  return out;
}

TEST_P(StateStoreConformance, TheEnqueueTimeComesBackExactlyWithTheClaim) {
  // Past a double's 53 bits, negative, and int64's ends: the store keeps the caller's clock as is.
  const std::vector<int64_t> times{0, -5, (int64_t{1} << 53) + 1, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max()};
  for (size_t i = 0; i < times.size(); ++i) {
    ASSERT_TRUE(store().enqueue(aged("t" + std::to_string(i), 0, "runner.s", times[i])));
  }
  for (size_t i = 0; i < times.size(); ++i) {
    auto c = store().claim("a", 0, kLease, kAny);
    ASSERT_TRUE(c && c->has_value());
    EXPECT_EQ((*c)->task, aged("t" + std::to_string(i), 0, "runner.s", times[i]));
  }
}

TEST_P(StateStoreConformance, ExpireTakesOldUnclaimedTasksOfTheKindPrefixInQueueOrder) {
  const Task a = aged("a", 0, "runner.s1", 100);
  const Task b = aged("b", 5, "runner.s1:owner", 200);  // a quorum member's kind
  const Task c = aged("c", 0, "runner.s2", 100);        // another server's
  const Task d = aged("d", 0, "runner.s1", 300);        // not old enough: enqueued at the cutoff
  const Task e = aged("e", 0, "build", 50);
  for (const Task& t : {a, b, c, d, e}) ASSERT_TRUE(store().enqueue(t));

  auto removed = store().expire("runner.s1", 300, 1000, 10);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(*removed, (std::vector<Task>{b, a}));  // b's priority puts it first
  EXPECT_EQ(store().queue_length().value(), 3u);

  // Done for good, across a restart too: a retried enqueue cannot bring it back.
  reopen();
  ASSERT_TRUE(store_);
  auto again = store().enqueue(a);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::already_exists);
  EXPECT_NE(again.error().message.find("expired"), std::string::npos) << again.error().message;
  auto nothing_more = store().expire("runner.s1", 300, 1000, 10);
  ASSERT_TRUE(nothing_more) << nothing_more.error().message;
  EXPECT_TRUE(nothing_more->empty());
  EXPECT_EQ(drain(store(), 1000), (std::vector<std::string>{"c", "d", "e"}));
}

TEST_P(StateStoreConformance, AnEmptyKindPrefixExpiresEveryKind) {
  ASSERT_TRUE(store().enqueue(aged("no-kind", 0, "", 1)));
  ASSERT_TRUE(store().enqueue(aged("runner", 0, "runner.s1", 1)));
  ASSERT_TRUE(store().enqueue(aged("build", 0, "build", 1)));
  ASSERT_TRUE(store().enqueue(aged("young", 0, "build", 2)));
  auto removed = store().expire("", 2, 0, 10);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(ids(*removed), (std::vector<std::string>{"no-kind", "runner", "build"}));
  EXPECT_EQ(store().queue_length().value(), 1u);
}

TEST_P(StateStoreConformance, ExpireLeavesLiveClaimsAndTakesTasksWhoseClaimExpired) {
  for (const char* id : {"live", "lapsed", "boundary", "unclaimed"}) {
    ASSERT_TRUE(store().enqueue(aged(id, 0, "runner.s1", 0)));
  }
  auto live = store().claim("worker", 0, 1000, kAny);  // until 1000
  // An agent named as the expired-task marker: no ack of its claim may pass for a retry.
  auto lapsed = store().claim("expired", 0, 100, kAny);  // until 100
  auto boundary = store().claim("late", 0, 500, kAny);   // until 500
  ASSERT_TRUE(live && live->has_value() && lapsed && lapsed->has_value() && boundary && boundary->has_value());
  ASSERT_EQ((*live)->task.id, "live");
  ASSERT_EQ((*lapsed)->task.id, "lapsed");
  ASSERT_EQ((*boundary)->task.id, "boundary");

  // At 99 every claim is live: only the unclaimed task goes.
  auto early = store().expire("runner.", 1, 99, 10);
  ASSERT_TRUE(early) << early.error().message;
  EXPECT_EQ(ids(*early), (std::vector<std::string>{"unclaimed"}));

  // At 500 "lapsed" (expired at 100) and "boundary" (expires_ms <= now_ms) go, in their
  // places; "live" is held until 1000.
  auto removed = store().expire("runner.", 1, 500, 10);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(*removed, (std::vector<Task>{aged("lapsed", 0, "runner.s1", 0), aged("boundary", 0, "runner.s1", 0)}));
  EXPECT_EQ(store().queue_length().value(), 1u);

  // The claims that held the expired tasks went with them: not_found, never ok.
  for (const Claim* stale : {&**lapsed, &**boundary}) {
    auto ack = store().ack(stale->ref(), 500);
    ASSERT_FALSE(ack);
    EXPECT_EQ(ack.error().code, Errc::not_found) << ack.error().message;
    auto release = store().release(stale->ref(), 500);
    ASSERT_FALSE(release);
    EXPECT_EQ(release.error().code, Errc::not_found);
    auto renew = store().renew(stale->ref(), 500, 100);
    ASSERT_FALSE(renew);
    EXPECT_EQ(renew.error().code, Errc::not_found);
  }
  // The live claim acks as before, and its retry is still answered ok.
  ASSERT_TRUE(store().ack((*live)->ref(), 600));
  EXPECT_TRUE(store().ack((*live)->ref(), 601));
  EXPECT_EQ(store().queue_length().value(), 0u);
  auto none = store().claim("worker", 2000, 100, kAny);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  for (const char* id : {"lapsed", "boundary", "unclaimed"}) {
    auto again = store().enqueue(aged(id, 0, "runner.s1", 0));
    ASSERT_FALSE(again) << id;
    EXPECT_EQ(again.error().code, Errc::already_exists) << id;
  }
}

TEST_P(StateStoreConformance, ExpireTakesAtMostMaxTheFirstInQueueOrder) {
  // Enough tasks to span several pages and batches, matching ones among others, and a
  // claimed-then-expired one whose place is early in the queue.
  constexpr int kTasks = 200;
  std::vector<Task> all;
  for (int i = 0; i < kTasks; ++i) {
    const std::string id = "t" + std::to_string(1000 + i);
    all.push_back(aged(id, i % 3, i % 2 == 0 ? "runner.gone" : "runner.here", i));
    ASSERT_TRUE(store().enqueue(all.back()));
  }
  // Queue order: priority descending, then enqueue order.
  std::vector<Task> order = all;
  std::stable_sort(order.begin(), order.end(), [](const Task& x, const Task& y) { return x.priority > y.priority; });
  auto first = store().claim("dead", 0, 10, ClaimFilter{{"runner.gone"}});
  ASSERT_TRUE(first && first->has_value());
  ASSERT_EQ((*first)->task, order[0]);  // kind "runner.gone" (index 2: priority 2, even)

  std::vector<Task> gone;
  for (const Task& t : order) {
    if (t.kind == "runner.gone") gone.push_back(t);
  }
  auto zero = store().expire("runner.gone", kTasks, 100, 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, Errc::invalid_argument);

  auto ten = store().expire("runner.gone", kTasks, 100, 10);
  ASSERT_TRUE(ten) << ten.error().message;
  EXPECT_EQ(*ten, std::vector<Task>(gone.begin(), gone.begin() + 10));
  EXPECT_EQ(store().queue_length().value(), uint64_t{kTasks - 10});
  auto rest = store().expire("runner.gone", kTasks, 100, 1000);
  ASSERT_TRUE(rest) << rest.error().message;
  EXPECT_EQ(*rest, std::vector<Task>(gone.begin() + 10, gone.end()));
  EXPECT_EQ(store().queue_length().value(), uint64_t{kTasks / 2});

  std::vector<std::string> here;
  for (const Task& t : order) {
    if (t.kind == "runner.here") here.push_back(t.id);
  }
  EXPECT_EQ(drain(store(), 100), here);
}

// ---- The event stream ----

TEST_P(StateStoreConformance, EventSequenceNumbersAreDense) {
  auto empty_last = store().last_seq();
  ASSERT_TRUE(empty_last);
  EXPECT_EQ(*empty_last, 0u);
  for (uint64_t i = 1; i <= 5; ++i) {
    auto seq = store().append("event-" + std::to_string(i));
    ASSERT_TRUE(seq) << seq.error().message;
    EXPECT_EQ(*seq, i);
  }
  auto last = store().last_seq();
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, 5u);

  auto all = store().read(0, 100);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ((*all)[i], (Event{i + 1, "event-" + std::to_string(i + 1)}));
  auto middle = store().read(3, 2);
  ASSERT_TRUE(middle);
  EXPECT_EQ(*middle, (std::vector<Event>{{3, "event-3"}, {4, "event-4"}}));
  auto past = store().read(6, 10);
  ASSERT_TRUE(past);
  EXPECT_TRUE(past->empty());
  auto none = store().read(1, 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_P(StateStoreConformance, ConcurrentAppendsLeaveNoGaps) {
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        if (!store().append(std::to_string(w) + ":" + std::to_string(i))) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  auto all = store().read(1, 1000);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), size_t{kThreads * kEach});
  std::set<std::string> bodies;
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].seq, i + 1);
    bodies.insert((*all)[i].bytes);
  }
  EXPECT_EQ(bodies.size(), size_t{kThreads * kEach});
}

TEST_P(StateStoreConformance, ConsumerPositionsAreKeptApart) {
  auto unset = store().position("indexer");
  ASSERT_TRUE(unset);
  EXPECT_EQ(*unset, 0u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store().append("e"));

  ASSERT_TRUE(store().set_position("indexer", 3));
  ASSERT_TRUE(store().set_position("notifier", 1));
  auto past = store().set_position("indexer", 5);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, Errc::invalid_argument);

  auto indexer = store().position("indexer");
  auto notifier = store().position("notifier");
  ASSERT_TRUE(indexer && notifier);
  EXPECT_EQ(*indexer, 3u);
  EXPECT_EQ(*notifier, 1u);

  // A rewind is a replay, and allowed.
  ASSERT_TRUE(store().set_position("indexer", 0));
  indexer = store().position("indexer");
  ASSERT_TRUE(indexer);
  EXPECT_EQ(*indexer, 0u);
}

// ---- Sharing and durability ----

TEST_P(StateStoreConformance, ReopeningKeepsEverything) {
  ASSERT_TRUE(store().put_agent(agent("a1", "Idle"), 0, ""));
  ASSERT_TRUE(store().put_agent(agent("a1", "Working"), 1, ""));
  ASSERT_TRUE(store().enqueue(task("held", 5)));
  ASSERT_TRUE(store().enqueue(task("waiting-1", 1)));
  ASSERT_TRUE(store().enqueue(task("waiting-2", 1)));
  auto held = store().claim("a1", 0, kLease, kAny);
  ASSERT_TRUE(held && held->has_value());
  ASSERT_TRUE(store().append("one"));
  ASSERT_TRUE(store().append("two"));
  ASSERT_TRUE(store().set_position("c", 2));

  reopen();
  ASSERT_TRUE(store_);

  auto a = store().get_agent("a1");
  ASSERT_TRUE(a && a->has_value());
  EXPECT_EQ((*a)->state, "Working");
  EXPECT_EQ((*a)->version, 2u);
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 3u);
  // The claim made before the restart is still the one that may ack.
  ASSERT_TRUE(store().ack((*held)->ref(), 1));
  auto next = store().claim("a2", 2, kLease, kAny);
  ASSERT_TRUE(next && next->has_value());
  EXPECT_EQ((*next)->task.id, "waiting-1");
  EXPECT_GT((*next)->token, (*held)->token);  // tokens never repeat across a restart
  auto seq = store().append("three");
  ASSERT_TRUE(seq);
  EXPECT_EQ(*seq, 3u);
  auto events = store().read(1, 10);
  ASSERT_TRUE(events);
  EXPECT_EQ(*events, (std::vector<Event>{{1, "one"}, {2, "two"}, {3, "three"}}));
  auto pos = store().position("c");
  ASSERT_TRUE(pos);
  EXPECT_EQ(*pos, 2u);
  auto dup = store().enqueue(task("waiting-2", 1));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, Errc::already_exists);
}

// A worker in another process: claims and acks until the queue is empty, recording each
// claim as an event "<name>:<task id>". Its exit status is 0 when every call succeeded.
int drain_in_child(StoreBacking& backing, const std::string& name) {
  auto opened = backing.open();
  if (!opened) return 2;
  StateStore& store = **opened;
  for (;;) {
    auto c = store.claim(name, 0, 1'000'000, ClaimFilter{});
    if (!c) return 3;
    if (!*c) return 0;
    if (!store.append(name + ":" + (*c)->task.id)) return 4;
    if (!store.ack((*c)->ref(), 1)) return 5;
  }
}

TEST_P(StateStoreConformance, TwoProcessesShareOneQueue) {
  constexpr int kTasks = 60;
  for (int i = 0; i < kTasks; ++i) ASSERT_TRUE(store().enqueue(task("t" + std::to_string(i), i % 3)));

  std::vector<pid_t> children;
  for (const char* name : {"child-a", "child-b"}) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    // The child never returns into the test: _exit skips destructors that belong to the parent.
    if (pid == 0) ::_exit(drain_in_child(*backing_, name));
    children.push_back(pid);
  }
  // The parent drains alongside through its own handle.
  int parent_claims = 0;
  for (;;) {
    auto c = store().claim("parent", 0, 1'000'000, kAny);
    ASSERT_TRUE(c) << c.error().message;
    if (!*c) break;
    ASSERT_TRUE(store().append("parent:" + (*c)->task.id));
    ASSERT_TRUE(store().ack((*c)->ref(), 1));
    ++parent_claims;
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }

  auto events = store().read(1, 1000);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), size_t{kTasks});
  std::map<std::string, int> claims_of_task;
  int parent_events = 0;
  for (size_t i = 0; i < events->size(); ++i) {
    const Event& e = (*events)[i];
    EXPECT_EQ(e.seq, i + 1);
    std::string claimer = e.bytes.substr(0, e.bytes.find(':'));
    if (claimer == "parent") ++parent_events;
    ++claims_of_task[e.bytes.substr(e.bytes.find(':') + 1)];
  }
  EXPECT_EQ(parent_events, parent_claims);
  ASSERT_EQ(claims_of_task.size(), size_t{kTasks});
  for (const auto& [id, n] : claims_of_task) EXPECT_EQ(n, 1) << id;
  auto length = store().queue_length();
  ASSERT_TRUE(length);
  EXPECT_EQ(*length, 0u);
}

}  // namespace
}  // namespace warden::store::test
