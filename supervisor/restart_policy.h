// OTP-style restart decisions for one agent: when an agent fails, how long to wait before it
// may work again (exponential backoff with jitter), when to stop restarting it at all (restart
// intensity: more than R restarts within T ms), when to stop sending it work until a probe
// succeeds (a circuit breaker), and a cooldown that assignment checks (with a sentinel that
// closes the check-then-assign race while a crash is being handled).
//
// Pure decisions: time comes in as int64 milliseconds from the caller's Clock (a
// LogicalClock in tests) and randomness from a borrowed RandomSource, so the same inputs
// give the same decisions. Nothing here reads a clock, sleeps, or starts a thread.
//
// Ownership and threads: every type is a copyable value holding only its own counters.
// None is thread-safe; the supervisor keeps one RestartPolicy per agent and calls it under
// that agent's lock — the same lock under which it checks may_assign and assigns, which is
// what makes the cooldown sentinel work.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/random_source.h"

namespace warden::supervisor {

// ---- Exponential backoff -------------------------------------------------------------

// Restart n (0 for the first failure since the last success) waits up to
// min(max_ms, base_ms * factor^n), less a random part of at most `jitter` of it, so agents
// that failed together do not all come back in the same millisecond.
struct BackoffConfig {
  int64_t base_ms = 100;   // > 0
  double factor = 2.0;     // >= 1
  int64_t max_ms = 30000;  // >= base_ms
  double jitter = 0.2;     // in [0, 1]: the fraction of the delay that may be taken off
};

// The delay before jitter: min(max_ms, base_ms * factor^attempt). `config` must be valid.
int64_t backoff_ceiling_ms(const BackoffConfig& config, uint32_t attempt);

// The jittered delay, uniform in [ceiling - floor(ceiling * jitter), ceiling]: never above
// max_ms and never below (1 - jitter) of the ceiling. Draws from `random` only when that
// range holds more than one value, so jitter 0 consumes no randomness.
int64_t backoff_delay_ms(const BackoffConfig& config, uint32_t attempt, RandomSource& random);

// ---- Restart intensity ---------------------------------------------------------------

// As in OTP: an agent restarted more than max_restarts times within window_ms is failing
// faster than restarts can help, and is given up on.
struct IntensityConfig {
  int max_restarts = 3;     // R, >= 0 (0: the first failure gives up)
  int64_t window_ms = 60000;  // T, > 0
};

// The restarts of the last window_ms, and whether the bound was ever passed. Giving up is
// final: a RestartIntensity that said no keeps saying no (forget the agent and register it
// again to start over: Supervisor::forget drops its policy).
class RestartIntensity {
 public:
  // `config` must be valid (validate()).
  explicit RestartIntensity(IntensityConfig config) : config_(config) {}

  // Counts a restart at `now` if one more fits in the window ending at `now` (restarts at
  // t with now - t < window_ms), and returns true; otherwise gives up and returns false.
  bool record_restart(int64_t now);
  bool exceeded() const { return exceeded_; }
  // Restarts recorded within the window ending at `now`.
  int restarts_within_window(int64_t now) const;

 private:
  IntensityConfig config_;
  std::deque<int64_t> restarts_;  // times of recorded restarts, oldest first, at most R
  bool exceeded_ = false;
};

// ---- Circuit breaker -----------------------------------------------------------------

// closed: work flows. open: failure_threshold consecutive failures; no work until
// cool_off_ms has passed. half_open: the cool-off has passed; one probe task may go, and
// its outcome closes the breaker (success) or opens it again (failure).
enum class BreakerState { closed, open, half_open };
std::string_view to_string(BreakerState state);

struct BreakerConfig {
  int failure_threshold = 5;     // N consecutive failures open the breaker, >= 1
  int64_t cool_off_ms = 30000;   // open -> half_open, >= 0
};

class CircuitBreaker {
 public:
  // `config` must be valid (validate()).
  explicit CircuitBreaker(BreakerConfig config) : config_(config) {}

  // An open breaker whose cool-off has passed reads as half_open, probe taken or not.
  BreakerState state(int64_t now) const;
  // Whether a task may go now: closed, or half_open with the probe not yet taken.
  bool allows(int64_t now) const;
  // allows(now), and if the breaker is half_open, takes its one probe.
  bool try_acquire(int64_t now);
  // A task succeeded: closed, failure count 0.
  void record_success();
  // A task failed. Closed: counts it, and opens at `now` on reaching failure_threshold.
  // Half-open or open: opens again at `now` — the probe (or a straggler) just showed the
  // agent still fails, so the cool-off starts over.
  void record_failure(int64_t now);

  int consecutive_failures() const { return consecutive_failures_; }
  bool probe_taken() const { return probe_taken_; }
  // When an open breaker turns half_open; meaningless while closed.
  int64_t half_open_at_ms() const;

 private:
  BreakerConfig config_;
  bool open_ = false;  // open or half_open; state(now) tells which
  int64_t opened_at_ms_ = 0;
  int consecutive_failures_ = 0;
  bool probe_taken_ = false;
};

// ---- Cooldown and its sentinel -------------------------------------------------------

// Whether assignment must skip the agent. A cooldown holds it out until a time (the end of
// its backoff). The sentinel holds it out with no end: the supervisor sets it, under the
// agent's lock, the moment it starts handling a crash and before it applies agent_failed,
// so an assignment loop that checks may_assign between the crash and the backoff decision
// cannot hand the agent a task. The decision then replaces the sentinel with the real
// cooldown (hold_until), or, if the crash proves spurious, clear_sentinel leaves whatever
// cooldown was there before.
class Cooldown {
 public:
  bool may_assign(int64_t now) const { return !sentinel_ && now >= until_ms_; }
  void set_sentinel() { sentinel_ = true; }
  void clear_sentinel() { sentinel_ = false; }
  // Clears the sentinel; the agent may be assigned again from `until_ms` on.
  void hold_until(int64_t until_ms) {
    sentinel_ = false;
    until_ms_ = until_ms;
  }
  // No cooldown and no sentinel.
  void release() { hold_until(kNone); }

  bool sentinel() const { return sentinel_; }
  // The end of the cooldown, or a time far in the past when there is none.
  int64_t until_ms() const { return until_ms_; }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  bool sentinel_ = false;
  int64_t until_ms_ = kNone;
};

// ---- The per-agent policy ------------------------------------------------------------

struct RestartPolicyConfig {
  BackoffConfig backoff;
  IntensityConfig intensity;
  BreakerConfig breaker;
};

// invalid_argument naming the first bad field ("backoff.factor: must be at least 1").
Status validate(const RestartPolicyConfig& config);

enum class RestartAction { restart, give_up };
std::string_view to_string(RestartAction action);

// What to do about one failure.
struct RestartDecision {
  RestartAction action = RestartAction::restart;
  uint32_t attempt = 0;        // failures since the last success, less one (backoff's n)
  int64_t delay_ms = 0;        // the jittered backoff; 0 when giving up
  int64_t not_before_ms = 0;   // assign no earlier: now + delay, or the breaker's half-open time if later
  BreakerState breaker = BreakerState::closed;  // after this failure
  std::string reason;          // why the agent is given up on; empty for restart

  bool operator==(const RestartDecision&) const = default;
};

// One agent's restart state: its intensity window, breaker, cooldown and failure count.
class RestartPolicy {
 public:
  // invalid_argument from validate() if the config is bad.
  static Result<RestartPolicy> create(RestartPolicyConfig config);

  // The agent failed at `now`: records the restart against the intensity bound (past it:
  // give_up, permanently), counts the failure in the breaker, draws the backoff and holds
  // the agent in cooldown until not_before_ms. Replaces the sentinel. Once given up, every
  // later call returns the same give_up and changes nothing.
  RestartDecision on_failure(int64_t now, RandomSource& random);
  // The agent delivered its output: breaker closed, backoff back to attempt 0, cooldown
  // lifted. Restarts already in the intensity window stay there until they age out.
  void on_success();

  // The agent came back on its own (a remote runner enrolling again): the restart intensity
  // bounds the restarts the supervisor makes, so its window starts over and a give-up is
  // lifted. The breaker, the backoff count and any cooldown stand.
  void start_intensity_over() { intensity_ = RestartIntensity(config_.intensity); }

  // Crash handling begins: hold the agent out of assignment until on_failure decides.
  void mark_failing() { cooldown_.set_sentinel(); }
  // The crash was spurious (e.g. agent_failed was an InvalidTransition): drop the sentinel;
  // a cooldown from an earlier failure still stands.
  void unmark_failing() { cooldown_.clear_sentinel(); }

  // Whether a task may be assigned at `now`: not given up, no sentinel, cooldown over, and
  // the breaker allows it.
  bool may_assign(int64_t now) const;
  // may_assign(now), and if so records the assignment (taking a half-open breaker's probe).
  bool try_assign(int64_t now);

  bool given_up() const { return intensity_.exceeded(); }
  const RestartIntensity& intensity() const { return intensity_; }
  const CircuitBreaker& breaker() const { return breaker_; }
  const Cooldown& cooldown() const { return cooldown_; }
  uint32_t consecutive_failures() const { return consecutive_failures_; }

 private:
  explicit RestartPolicy(const RestartPolicyConfig& config)
      : config_(config), intensity_(config.intensity), breaker_(config.breaker) {}
  RestartDecision give_up(int64_t now) const;

  RestartPolicyConfig config_;
  RestartIntensity intensity_;
  CircuitBreaker breaker_;
  Cooldown cooldown_;
  uint32_t consecutive_failures_ = 0;
};

}  // namespace warden::supervisor
