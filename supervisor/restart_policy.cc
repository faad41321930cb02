#include "supervisor/restart_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace warden::supervisor {
namespace {

// now + delay without wrapping: a logical clock may start anywhere.
int64_t add_saturating(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return sum;
}

Status check(bool ok, std::string_view field, std::string_view rule) {
  if (ok) return {};
  return fail(Errc::invalid_argument, std::string(field) + ": " + std::string(rule));
}

}  // namespace

int64_t backoff_ceiling_ms(const BackoffConfig& config, uint32_t attempt) {
  // In double so a large attempt saturates at max_ms instead of overflowing; pow of small
  // integers is exact, so the usual factor 2 gives exact milliseconds.
  const double delay = static_cast<double>(config.base_ms) * std::pow(config.factor, static_cast<double>(attempt));
  if (!(delay < static_cast<double>(config.max_ms))) return config.max_ms;
  return static_cast<int64_t>(delay);
}

int64_t backoff_delay_ms(const BackoffConfig& config, uint32_t attempt, RandomSource& random) {
  const int64_t ceiling = backoff_ceiling_ms(config, attempt);
  const auto spread = static_cast<int64_t>(static_cast<double>(ceiling) * config.jitter);
  if (spread <= 0) return ceiling;
  return ceiling - static_cast<int64_t>(uniform_below(random, static_cast<uint64_t>(spread) + 1));
}

bool RestartIntensity::record_restart(int64_t now) {
  if (exceeded_) return false;
  while (!restarts_.empty() && now - restarts_.front() >= config_.window_ms) restarts_.pop_front();
  if (static_cast<int>(restarts_.size()) >= config_.max_restarts) {
    exceeded_ = true;
    return false;
  }
  restarts_.push_back(now);
  return true;
}

int RestartIntensity::restarts_within_window(int64_t now) const {
  return static_cast<int>(
      std::count_if(restarts_.begin(), restarts_.end(), [&](int64_t t) { return now - t < config_.window_ms; }));
}

std::string_view to_string(BreakerState state) {
  switch (state) {
    case BreakerState::closed: return "closed";
    case BreakerState::open: return "open";
    case BreakerState::half_open: return "half_open";
  }
  return "unknown";
}

int64_t CircuitBreaker::half_open_at_ms() const { return add_saturating(opened_at_ms_, config_.cool_off_ms); }

BreakerState CircuitBreaker::state(int64_t now) const {
  if (!open_) return BreakerState::closed;
  return now >= half_open_at_ms() ? BreakerState::half_open : BreakerState::open;
}

bool CircuitBreaker::allows(int64_t now) const {
  switch (state(now)) {
    case BreakerState::closed: return true;
    case BreakerState::open: return false;
    case BreakerState::half_open: return !probe_taken_;
  }
  return false;
}

bool CircuitBreaker::try_acquire(int64_t now) {
  if (!allows(now)) return false;
  if (state(now) == BreakerState::half_open) probe_taken_ = true;
  return true;
}

void CircuitBreaker::record_success() {
  open_ = false;
  consecutive_failures_ = 0;
  probe_taken_ = false;
}

void CircuitBreaker::record_failure(int64_t now) {
  if (consecutive_failures_ < std::numeric_limits<int>::max()) ++consecutive_failures_;
  if (open_ || consecutive_failures_ >= config_.failure_threshold) {
    open_ = true;
    opened_at_ms_ = now;
    probe_taken_ = false;
  }
}

Status validate(const RestartPolicyConfig& config) {
  const BackoffConfig& b = config.backoff;
  if (auto st = check(b.base_ms > 0, "backoff.base_ms", "must be positive"); !st) return st;
  if (auto st = check(std::isfinite(b.factor) && b.factor >= 1.0, "backoff.factor", "must be at least 1"); !st) return st;
  if (auto st = check(b.max_ms >= b.base_ms, "backoff.max_ms", "must be at least backoff.base_ms"); !st) return st;
  if (auto st = check(b.jitter >= 0.0 && b.jitter <= 1.0, "backoff.jitter", "must be between 0 and 1"); !st) return st;
  if (auto st = check(config.intensity.max_restarts >= 0, "intensity.max_restarts", "must not be negative"); !st) return st;
  if (auto st = check(config.intensity.window_ms > 0, "intensity.window_ms", "must be positive"); !st) return st;
  if (auto st = check(config.breaker.failure_threshold >= 1, "breaker.failure_threshold", "must be at least 1"); !st) return st;
  return check(config.breaker.cool_off_ms >= 0, "breaker.cool_off_ms", "must not be negative");
}

std::string_view to_string(RestartAction action) {
  switch (action) {
    case RestartAction::restart: return "restart";
    case RestartAction::give_up: return "give_up";
  }
  return "unknown";
}

Result<RestartPolicy> RestartPolicy::create(RestartPolicyConfig config) {
  if (auto st = validate(config); !st) return std::unexpected(st.error());
  return RestartPolicy(config);
}

RestartDecision RestartPolicy::give_up(int64_t now) const {
  RestartDecision decision;
  decision.action = RestartAction::give_up;
  decision.attempt = consecutive_failures_ == 0 ? 0 : consecutive_failures_ - 1;
  decision.breaker = breaker_.state(now);
  decision.reason = "restart intensity exceeded: more than " + std::to_string(config_.intensity.max_restarts) +
                    " restarts within " + std::to_string(config_.intensity.window_ms) + " ms";
  return decision;
}

RestartDecision RestartPolicy::on_failure(int64_t now, RandomSource& random) {
  cooldown_.clear_sentinel();
  if (!intensity_.record_restart(now)) return give_up(now);

  breaker_.record_failure(now);
  RestartDecision decision;
  decision.attempt = consecutive_failures_;
  if (consecutive_failures_ < std::numeric_limits<uint32_t>::max()) ++consecutive_failures_;
  decision.delay_ms = backoff_delay_ms(config_.backoff, decision.attempt, random);
  decision.not_before_ms = add_saturating(now, decision.delay_ms);
  decision.breaker = breaker_.state(now);
  if (decision.breaker != BreakerState::closed) {
    decision.not_before_ms = std::max(decision.not_before_ms, breaker_.half_open_at_ms());
  }
  cooldown_.hold_until(decision.not_before_ms);
  return decision;
}

void RestartPolicy::on_success() {
  breaker_.record_success();
  consecutive_failures_ = 0;
  cooldown_.release();
}

bool RestartPolicy::may_assign(int64_t now) const {
  return !given_up() && cooldown_.may_assign(now) && breaker_.allows(now);
}

bool RestartPolicy::try_assign(int64_t now) {
  if (!may_assign(now)) return false;
  return breaker_.try_acquire(now);
}

}  // namespace warden::supervisor
