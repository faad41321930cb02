#include "supervisor/restart_policy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/random_source.h"
#include "tests/supervisor/scripted_random.h"

namespace warden::supervisor {
namespace {

using test::ScriptedRandom;

BackoffConfig backoff(double jitter) { return BackoffConfig{100, 2.0, 1000, jitter}; }

// ---- Backoff ---------------------------------------------------------------------------

TEST(Backoff, GrowsByFactorUntilTheCap) {
  const BackoffConfig config = backoff(0.0);
  std::vector<int64_t> ceilings;
  for (uint32_t attempt = 0; attempt < 7; ++attempt) ceilings.push_back(backoff_ceiling_ms(config, attempt));
  EXPECT_EQ(ceilings, (std::vector<int64_t>{100, 200, 400, 800, 1000, 1000, 1000}));
  EXPECT_EQ(backoff_ceiling_ms(config, 4'000'000'000u), 1000);
}

TEST(Backoff, FractionalFactorRoundsDown) {
  const BackoffConfig config{100, 1.5, 10000, 0.0};
  EXPECT_EQ(backoff_ceiling_ms(config, 0), 100);
  EXPECT_EQ(backoff_ceiling_ms(config, 1), 150);
  EXPECT_EQ(backoff_ceiling_ms(config, 2), 225);
  EXPECT_EQ(backoff_ceiling_ms(config, 3), 337);
}

TEST(Backoff, FactorOneIsConstant) {
  const BackoffConfig config{250, 1.0, 1000, 0.0};
  EXPECT_EQ(backoff_ceiling_ms(config, 0), 250);
  EXPECT_EQ(backoff_ceiling_ms(config, 50), 250);
}

TEST(Backoff, NoJitterDrawsNothing) {
  ScriptedRandom random({});
  EXPECT_EQ(backoff_delay_ms(backoff(0.0), 2, random), 400);
  EXPECT_EQ(random.draws(), 0);
}

TEST(Backoff, JitterSpansFromCeilingDownByTheFraction) {
  // attempt 2: ceiling 400, jitter 0.5: spread 200, so a draw of k takes k % 201 off.
  ScriptedRandom random({0, 200, 201, 150});
  EXPECT_EQ(backoff_delay_ms(backoff(0.5), 2, random), 400);
  EXPECT_EQ(backoff_delay_ms(backoff(0.5), 2, random), 200);
  EXPECT_EQ(backoff_delay_ms(backoff(0.5), 2, random), 400);
  EXPECT_EQ(backoff_delay_ms(backoff(0.5), 2, random), 250);
}

TEST(Backoff, JitteredDelaysStayWithinBoundsAndUnderTheCap) {
  SeededRandomSource random(1234);
  for (uint32_t attempt = 0; attempt < 8; ++attempt) {
    const int64_t ceiling = backoff_ceiling_ms(backoff(0.25), attempt);
    for (int i = 0; i < 200; ++i) {
      const int64_t delay = backoff_delay_ms(backoff(0.25), attempt, random);
      EXPECT_LE(delay, ceiling);
      EXPECT_LE(delay, 1000);
      EXPECT_GE(delay, ceiling - ceiling / 4);
    }
  }
}

TEST(Backoff, FullJitterCanReachZero) {
  ScriptedRandom random({100});
  EXPECT_EQ(backoff_delay_ms(backoff(1.0), 0, random), 0);
}

TEST(Backoff, SeededJitterIsDeterministic) {
  SeededRandomSource a(42);
  SeededRandomSource b(42);
  std::vector<int64_t> from_a, from_b;
  for (uint32_t attempt = 0; attempt < 6; ++attempt) {
    from_a.push_back(backoff_delay_ms(backoff(0.5), attempt, a));
    from_b.push_back(backoff_delay_ms(backoff(0.5), attempt, b));
  }
  EXPECT_EQ(from_a, (std::vector<int64_t>{87, 137, 367, 696, 777, 559}));
  EXPECT_EQ(from_a, from_b);
}

// ---- Restart intensity -----------------------------------------------------------------

TEST(RestartIntensity, AllowsRWithinTAndGivesUpOnTheNext) {
  RestartIntensity intensity({3, 1000});
  EXPECT_TRUE(intensity.record_restart(0));
  EXPECT_TRUE(intensity.record_restart(100));
  EXPECT_TRUE(intensity.record_restart(200));
  EXPECT_EQ(intensity.restarts_within_window(200), 3);
  EXPECT_FALSE(intensity.exceeded());
  EXPECT_FALSE(intensity.record_restart(300));
  EXPECT_TRUE(intensity.exceeded());
}

TEST(RestartIntensity, GivingUpIsFinal) {
  RestartIntensity intensity({1, 1000});
  EXPECT_TRUE(intensity.record_restart(0));
  EXPECT_FALSE(intensity.record_restart(10));
  // Long after the window has emptied, still no.
  EXPECT_FALSE(intensity.record_restart(1'000'000));
  EXPECT_TRUE(intensity.exceeded());
}

TEST(RestartIntensity, WindowSlides) {
  RestartIntensity intensity({3, 1000});
  EXPECT_TRUE(intensity.record_restart(0));
  EXPECT_TRUE(intensity.record_restart(100));
  EXPECT_TRUE(intensity.record_restart(200));
  // 0 and 100 are exactly T or more behind 1100: they have left the window.
  EXPECT_EQ(intensity.restarts_within_window(1100), 1);
  EXPECT_TRUE(intensity.record_restart(1100));
  EXPECT_TRUE(intensity.record_restart(1150));
  EXPECT_EQ(intensity.restarts_within_window(1150), 3);
  // 200 is 999 ms behind 1199: still inside, so this is the fourth within T.
  EXPECT_FALSE(intensity.record_restart(1199));
}

TEST(RestartIntensity, RestartExactlyTLaterFits) {
  RestartIntensity intensity({1, 1000});
  EXPECT_TRUE(intensity.record_restart(0));
  EXPECT_TRUE(intensity.record_restart(1000));
  EXPECT_FALSE(intensity.record_restart(1999));
}

TEST(RestartIntensity, ZeroRestartsGivesUpAtOnce) {
  RestartIntensity intensity({0, 1000});
  EXPECT_FALSE(intensity.record_restart(0));
  EXPECT_TRUE(intensity.exceeded());
}

// ---- Circuit breaker -------------------------------------------------------------------

TEST(CircuitBreaker, OpensAfterNConsecutiveFailures) {
  CircuitBreaker breaker({3, 1000});
  EXPECT_EQ(breaker.state(0), BreakerState::closed);
  breaker.record_failure(10);
  breaker.record_failure(20);
  EXPECT_EQ(breaker.state(20), BreakerState::closed);
  EXPECT_TRUE(breaker.allows(20));
  breaker.record_failure(30);
  EXPECT_EQ(breaker.consecutive_failures(), 3);
  EXPECT_EQ(breaker.state(30), BreakerState::open);
  EXPECT_FALSE(breaker.allows(30));
  EXPECT_FALSE(breaker.try_acquire(1029));
  EXPECT_EQ(breaker.half_open_at_ms(), 1030);
}

TEST(CircuitBreaker, SuccessResetsTheCount) {
  CircuitBreaker breaker({3, 1000});
  breaker.record_failure(0);
  breaker.record_failure(1);
  breaker.record_success();
  EXPECT_EQ(breaker.consecutive_failures(), 0);
  breaker.record_failure(2);
  breaker.record_failure(3);
  EXPECT_EQ(breaker.state(3), BreakerState::closed);
}

TEST(CircuitBreaker, HalfOpenAllowsOneProbeAndSuccessCloses) {
  CircuitBreaker breaker({3, 1000});
  for (int64_t t : {10, 20, 30}) breaker.record_failure(t);
  EXPECT_EQ(breaker.state(1029), BreakerState::open);
  EXPECT_EQ(breaker.state(1030), BreakerState::half_open);
  EXPECT_TRUE(breaker.allows(1030));
  EXPECT_TRUE(breaker.try_acquire(1030));
  EXPECT_TRUE(breaker.probe_taken());
  EXPECT_EQ(breaker.state(1031), BreakerState::half_open);
  EXPECT_FALSE(breaker.allows(1031));
  EXPECT_FALSE(breaker.try_acquire(5000));
  breaker.record_success();
  EXPECT_EQ(breaker.state(5000), BreakerState::closed);
  EXPECT_EQ(breaker.consecutive_failures(), 0);
  EXPECT_FALSE(breaker.probe_taken());
  EXPECT_TRUE(breaker.try_acquire(5000));
  EXPECT_TRUE(breaker.try_acquire(5000));
}

TEST(CircuitBreaker, FailedProbeOpensAgain) {
  CircuitBreaker breaker({3, 1000});
  for (int64_t t : {10, 20, 30}) breaker.record_failure(t);
  ASSERT_TRUE(breaker.try_acquire(1030));
  breaker.record_failure(1500);
  EXPECT_EQ(breaker.state(1500), BreakerState::open);
  EXPECT_FALSE(breaker.probe_taken());
  EXPECT_FALSE(breaker.allows(2499));
  EXPECT_EQ(breaker.state(2500), BreakerState::half_open);
  EXPECT_TRUE(breaker.try_acquire(2500));
  EXPECT_EQ(breaker.consecutive_failures(), 4);
}

TEST(CircuitBreaker, FailureWhileOpenRestartsCoolOff) {
  CircuitBreaker breaker({1, 1000});
  breaker.record_failure(0);
  breaker.record_failure(600);
  EXPECT_EQ(breaker.state(1000), BreakerState::open);
  EXPECT_EQ(breaker.state(1600), BreakerState::half_open);
}

TEST(CircuitBreaker, StateNames) {
  EXPECT_EQ(to_string(BreakerState::closed), "closed");
  EXPECT_EQ(to_string(BreakerState::open), "open");
  EXPECT_EQ(to_string(BreakerState::half_open), "half_open");
}

// ---- Cooldown ----------------------------------------------------------------------------

TEST(Cooldown, NoneByDefault) {
  Cooldown cooldown;
  EXPECT_TRUE(cooldown.may_assign(0));
  EXPECT_TRUE(cooldown.may_assign(-1'000'000));
  EXPECT_FALSE(cooldown.sentinel());
}

TEST(Cooldown, HoldsUntilItsTime) {
  Cooldown cooldown;
  cooldown.hold_until(500);
  EXPECT_FALSE(cooldown.may_assign(499));
  EXPECT_TRUE(cooldown.may_assign(500));
  cooldown.release();
  EXPECT_TRUE(cooldown.may_assign(0));
}

TEST(Cooldown, SentinelBlocksAtAnyTime) {
  Cooldown cooldown;
  cooldown.set_sentinel();
  EXPECT_FALSE(cooldown.may_assign(0));
  EXPECT_FALSE(cooldown.may_assign(INT64_MAX));
  cooldown.hold_until(300);
  EXPECT_FALSE(cooldown.sentinel());
  EXPECT_FALSE(cooldown.may_assign(299));
  EXPECT_TRUE(cooldown.may_assign(300));
}

TEST(Cooldown, ClearingTheSentinelKeepsTheEarlierCooldown) {
  Cooldown cooldown;
  cooldown.hold_until(500);
  cooldown.set_sentinel();
  EXPECT_FALSE(cooldown.may_assign(600));
  cooldown.clear_sentinel();
  EXPECT_FALSE(cooldown.may_assign(499));
  EXPECT_TRUE(cooldown.may_assign(500));
  EXPECT_EQ(cooldown.until_ms(), 500);
}

// ---- The per-agent policy ----------------------------------------------------------------

RestartPolicyConfig config(double jitter = 0.0) {
  RestartPolicyConfig c;
  c.backoff = backoff(jitter);
  c.intensity = {10, 100'000};
  c.breaker = {3, 5000};
  return c;
}

RestartPolicy policy(const RestartPolicyConfig& c) {
  auto created = RestartPolicy::create(c);
  EXPECT_TRUE(created.has_value()) << (created ? "" : created.error().message);
  return *created;
}

TEST(RestartPolicy, RejectsBadConfigNamingTheField) {
  struct Case {
    void (*mutate)(RestartPolicyConfig&);
    const char* message;
  };
  const Case cases[] = {
      {[](RestartPolicyConfig& c) { c.backoff.base_ms = 0; }, "backoff.base_ms: must be positive"},
      {[](RestartPolicyConfig& c) { c.backoff.factor = 0.5; }, "backoff.factor: must be at least 1"},
      {[](RestartPolicyConfig& c) { c.backoff.max_ms = 99; }, "backoff.max_ms: must be at least backoff.base_ms"},
      {[](RestartPolicyConfig& c) { c.backoff.jitter = 1.5; }, "backoff.jitter: must be between 0 and 1"},
      {[](RestartPolicyConfig& c) { c.backoff.jitter = -0.1; }, "backoff.jitter: must be between 0 and 1"},
      {[](RestartPolicyConfig& c) { c.intensity.max_restarts = -1; }, "intensity.max_restarts: must not be negative"},
      {[](RestartPolicyConfig& c) { c.intensity.window_ms = 0; }, "intensity.window_ms: must be positive"},
      {[](RestartPolicyConfig& c) { c.breaker.failure_threshold = 0; }, "breaker.failure_threshold: must be at least 1"},
      {[](RestartPolicyConfig& c) { c.breaker.cool_off_ms = -1; }, "breaker.cool_off_ms: must not be negative"},
  };
  for (const Case& bad : cases) {
    RestartPolicyConfig c = config();
    bad.mutate(c);
    auto created = RestartPolicy::create(c);
    ASSERT_FALSE(created.has_value()) << bad.message;
    EXPECT_EQ(created.error().code, Errc::invalid_argument);
    EXPECT_EQ(created.error().message, bad.message);
  }
  EXPECT_TRUE(validate(config()).has_value());
}

TEST(RestartPolicy, BacksOffThenBreakerHoldsUntilHalfOpen) {
  RestartPolicy p = policy(config());
  ScriptedRandom random({});
  EXPECT_TRUE(p.may_assign(0));

  RestartDecision first = p.on_failure(0, random);
  EXPECT_EQ(first, (RestartDecision{RestartAction::restart, 0, 100, 100, BreakerState::closed, ""}));
  EXPECT_FALSE(p.may_assign(99));
  EXPECT_TRUE(p.may_assign(100));

  RestartDecision second = p.on_failure(200, random);
  EXPECT_EQ(second, (RestartDecision{RestartAction::restart, 1, 200, 400, BreakerState::closed, ""}));

  // The third consecutive failure opens the breaker: the cooldown runs to its half-open time.
  RestartDecision third = p.on_failure(500, random);
  EXPECT_EQ(third, (RestartDecision{RestartAction::restart, 2, 400, 5500, BreakerState::open, ""}));
  EXPECT_FALSE(p.may_assign(5499));
  EXPECT_TRUE(p.may_assign(5500));
  EXPECT_TRUE(p.try_assign(5500));
  // The one probe is out; nothing else goes until it reports.
  EXPECT_FALSE(p.may_assign(5501));
  EXPECT_FALSE(p.try_assign(6000));

  p.on_success();
  EXPECT_EQ(p.consecutive_failures(), 0u);
  EXPECT_EQ(p.breaker().state(6000), BreakerState::closed);
  EXPECT_TRUE(p.may_assign(6000));
  RestartDecision after = p.on_failure(7000, random);
  EXPECT_EQ(after, (RestartDecision{RestartAction::restart, 0, 100, 7100, BreakerState::closed, ""}));
  EXPECT_EQ(random.draws(), 0);
}

TEST(RestartPolicy, FailedProbeOpensTheBreakerAgain) {
  RestartPolicy p = policy(config());
  ScriptedRandom random({});
  for (int64_t t : {0, 10, 20}) p.on_failure(t, random);
  ASSERT_TRUE(p.try_assign(5020));
  RestartDecision probe_failed = p.on_failure(5100, random);
  EXPECT_EQ(probe_failed, (RestartDecision{RestartAction::restart, 3, 800, 10100, BreakerState::open, ""}));
  EXPECT_FALSE(p.may_assign(10099));
  EXPECT_TRUE(p.may_assign(10100));
}

TEST(RestartPolicy, GivesUpPastRestartIntensity) {
  RestartPolicyConfig c = config();
  c.intensity = {2, 1000};
  RestartPolicy p = policy(c);
  ScriptedRandom random({});
  EXPECT_EQ(p.on_failure(0, random).action, RestartAction::restart);
  EXPECT_EQ(p.on_failure(10, random).action, RestartAction::restart);
  RestartDecision third = p.on_failure(20, random);
  EXPECT_EQ(third, (RestartDecision{RestartAction::give_up, 1, 0, 0, BreakerState::closed,
                                    "restart intensity exceeded: more than 2 restarts within 1000 ms"}));
  EXPECT_TRUE(p.given_up());
  EXPECT_FALSE(p.may_assign(1'000'000));
  // Given up stays given up: a later failure or success changes nothing.
  EXPECT_EQ(p.on_failure(1'000'000, random), third);
  p.on_success();
  EXPECT_FALSE(p.may_assign(2'000'000));
  EXPECT_FALSE(p.try_assign(2'000'000));
}

TEST(RestartPolicy, SentinelClosesTheCheckThenAssignRace) {
  RestartPolicy p = policy(config());
  ScriptedRandom random({});
  // The crash handler marks the agent before applying agent_failed; an assignment loop
  // checking in between is refused, however late it looks.
  p.mark_failing();
  EXPECT_FALSE(p.may_assign(0));
  EXPECT_FALSE(p.try_assign(1'000'000'000));
  // The decision replaces the sentinel with the real backoff.
  RestartDecision decision = p.on_failure(0, random);
  EXPECT_EQ(decision.not_before_ms, 100);
  EXPECT_FALSE(p.cooldown().sentinel());
  EXPECT_FALSE(p.may_assign(99));
  EXPECT_TRUE(p.may_assign(100));
}

TEST(RestartPolicy, SpuriousCrashKeepsTheEarlierCooldown) {
  RestartPolicy p = policy(config());
  ScriptedRandom random({});
  p.on_failure(0, random);  // cooldown until 100
  p.mark_failing();
  EXPECT_FALSE(p.may_assign(150));
  p.unmark_failing();
  EXPECT_FALSE(p.may_assign(99));
  EXPECT_TRUE(p.may_assign(100));
  EXPECT_EQ(p.consecutive_failures(), 1u);
}

TEST(RestartPolicy, SeededJitterGivesTheSameDecisions) {
  RestartPolicyConfig c = config(0.5);
  c.breaker.failure_threshold = 100;
  RestartPolicy a = policy(c);
  RestartPolicy b = policy(c);
  SeededRandomSource ra(42);
  SeededRandomSource rb(42);
  std::vector<int64_t> delays;
  for (int64_t t : {0, 1000, 2000}) {
    RestartDecision da = a.on_failure(t, ra);
    EXPECT_EQ(da, b.on_failure(t, rb));
    EXPECT_EQ(da.not_before_ms, t + da.delay_ms);
    delays.push_back(da.delay_ms);
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{87, 137, 367}));
}

TEST(RestartPolicy, ActionNames) {
  EXPECT_EQ(to_string(RestartAction::restart), "restart");
  EXPECT_EQ(to_string(RestartAction::give_up), "give_up");
}

}  // namespace
}  // namespace warden::supervisor
