// One unit (~620 lines): why in supervisor.h.
#include "supervisor/supervisor.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/canonical_json.h"
#include "common/json_reader.h"
#include "store/record_checks.h"

namespace warden::supervisor {

std::string owner_kind(std::string_view role, std::string_view owner) {
  if (owner.empty()) return {};
  std::string kind = std::string(role) + ":" + std::string(owner);
  return store::check_id(kind, "kind") ? kind : std::string();
}
namespace {

constexpr int kCasTries = 16;

// What the supervisor keeps in AgentRecord::details: the task an agent holds and its flags.
std::string encode_details(const AgentView& view) {
  Json json = {{"down", view.down}, {"drained", view.drained}};
  if (!view.owner.empty()) json["owner"] = view.owner;
  if (!view.key.empty()) json["key"] = view.key;
  if (view.epoch != 0) json["epoch"] = view.epoch;
  if (!view.task_id.empty()) {
    json["task"] = view.task_id;
    json["token"] = view.claim_token;
    json["expires_ms"] = view.claim_expires_ms;
  }
  auto canonical = canonicalize(json);
  if (canonical) return std::move(*canonical);
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status decode_into(const store::AgentRecord& record, AgentView& view) {
  auto state = parse_agent_state(record.state);
  if (!state) return fail(Errc::corrupt, "agent " + record.id + ": unknown state \"" + record.state + "\"");
  view.state = *state;
  if (record.details.empty()) return {};
  auto json = parse_json(record.details, "agent " + record.id + " details");
  if (!json) return std::unexpected(Error{Errc::corrupt, json.error().message});
  JsonReader r(*json, "agent " + record.id + " details", JsonDialect::null_is_value, Errc::corrupt);
  r.boolean("down", view.down);
  r.boolean("drained", view.drained);
  r.string("task", view.task_id, false);
  r.string("owner", view.owner, false);
  r.string("key", view.key, false);
  r.unsigned_integer("epoch", view.epoch, 0, std::numeric_limits<uint64_t>::max(), false);
  r.unsigned_integer("token", view.claim_token, 0, std::numeric_limits<uint64_t>::max(), false);
  r.integer("expires_ms", view.claim_expires_ms, std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max(), false);
  return r.finish();
}

// The claim the agent holds, for the store's ack and release.
store::ClaimRef held_claim(const AgentView& view) {
  return store::ClaimRef{view.task_id, view.record.id, view.claim_token};
}

// The registration a caller speaks for must still be the record's.
Status same_epoch(const AgentView& view, std::optional<uint64_t> epoch) {
  if (!epoch || view.epoch == *epoch) return {};
  return fail(Errc::failed_precondition, "agent " + view.record.id + " was registered again since (registration " +
                                             std::to_string(view.epoch) + ", not " + std::to_string(*epoch) + ")");
}

bool same_claim(const AgentView& view, const store::ClaimRef& claim) {
  return !view.task_id.empty() && view.task_id == claim.task_id && view.claim_token == claim.token &&
         claim.agent_id == view.record.id;
}

}  // namespace

Status validate(const SupervisorConfig& config) {
  if (config.heartbeat_interval_ms <= 0) return fail(Errc::invalid_argument, "heartbeat_interval_ms: must be positive");
  if (config.missed_heartbeats == 0) return fail(Errc::invalid_argument, "missed_heartbeats: must be at least 1");
  if (config.detection_slack_ms < 0) return fail(Errc::invalid_argument, "detection_slack_ms: must not be negative");
  if (config.visibility_timeout_ms <= 0) return fail(Errc::invalid_argument, "visibility_timeout_ms: must be positive");
  if (config.heartbeat_interval_ms > std::numeric_limits<int32_t>::max() ||
      config.detection_slack_ms > std::numeric_limits<int32_t>::max() || config.missed_heartbeats > 1000) {
    return fail(Errc::invalid_argument, "heartbeat settings: out of range");
  }
  return validate(config.restart);
}

Result<std::unique_ptr<Supervisor>> Supervisor::create(store::StateStore& store, Clock& clock, RandomSource& random,
                                                       SupervisorConfig config) {
  if (auto ok = validate(config); !ok) return std::unexpected(ok.error().with_context("supervisor config"));
  return std::unique_ptr<Supervisor>(new Supervisor(store, clock, random, std::move(config)));
}

int64_t Supervisor::stale_after_ms() const {
  return config_.heartbeat_interval_ms * static_cast<int64_t>(config_.missed_heartbeats) + config_.detection_slack_ms;
}

RestartPolicy& Supervisor::policy_locked(const std::string& agent_id) {
  auto it = policies_.find(agent_id);
  if (it == policies_.end()) {
    // The config was validated in create(), so this cannot fail.
    it = policies_.emplace(agent_id, *RestartPolicy::create(config_.restart)).first;
  }
  return it->second;
}

AgentView Supervisor::view_locked(store::AgentRecord record, int64_t now) {
  AgentView view;
  view.record = std::move(record);
  auto it = policies_.find(view.record.id);
  if (it != policies_.end()) {
    view.given_up = it->second.given_up();
    view.breaker = it->second.breaker().state(now);
  }
  if (auto why = given_up_why_.find(view.record.id); view.given_up && why != given_up_why_.end()) view.given_up_reason = why->second;
  return view;
}

Status Supervisor::emit(FleetEvent event) {
  auto seq = store_.append(encode(event));
  if (!seq) return std::unexpected(seq.error().with_context("recording the fleet event"));
  return {};
}

Result<AgentView> Supervisor::update(std::string_view agent_id, int64_t now,
                                     const std::function<Status(AgentView&)>& change, const FleetEvent* event,
                                     std::optional<AgentView> known) {
  if (!known) {
    // The record as this supervisor last wrote or read it: right unless another supervisor
    // wrote since, which the compare-and-set below tells, at the cost of one re-read.
    auto cached = known_.find(std::string(agent_id));
    if (cached != known_.end()) known = cached->second;
  }
  for (int attempt = 0; attempt < kCasTries; ++attempt) {
    AgentView view;
    if (known) {
      view = std::move(*known);  // read by the caller just now: the first try writes against it
      known.reset();
    } else {
      auto stored = store_.get_agent(agent_id);
      if (!stored) return std::unexpected(stored.error());
      if (!*stored) return fail(Errc::not_found, "no agent " + std::string(agent_id));
      view = view_locked(std::move(**stored), now);
      if (auto decoded = decode_into(view.record, view); !decoded) return std::unexpected(decoded.error());
    }
    const uint64_t version = view.record.version;
    if (auto changed = change(view); !changed) {
      known_.erase(std::string(agent_id));
      return std::unexpected(changed.error());
    }
    view.record.state = std::string(to_string(view.state));
    view.record.details = encode_details(view);
    auto put = store_.put_agent(view.record, version, event ? encode(*event) : std::string());
    if (put) {
      view.record.version = *put;
      known_[std::string(agent_id)] = view;
      return view;
    }
    known_.erase(std::string(agent_id));
    if (put.error().code != Errc::failed_precondition) return std::unexpected(put.error());
  }
  return fail(Errc::failed_precondition, "agent " + std::string(agent_id) + " kept changing under the supervisor");
}

Result<AgentView> Supervisor::register_agent(const AgentSpec& spec) {
  if (auto ok = store::check_id(spec.id, "agent id"); !ok) return std::unexpected(ok.error());
  if (auto ok = store::check_id(spec.role, "agent " + spec.id + ": role"); !ok) return std::unexpected(ok.error());
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  RestartPolicy& policy = policy_locked(spec.id);
  for (int attempt = 0; attempt < kCasTries; ++attempt) {
    auto stored = store_.get_agent(spec.id);
    if (!stored) return std::unexpected(stored.error());
    AgentView view = view_locked(store::AgentRecord{}, now);
    uint64_t expected = 0;
    if (*stored) {
      AgentView old = view_locked(**stored, now);
      if (auto decoded = decode_into(old.record, old); !decoded) return std::unexpected(decoded.error());
      expected = old.record.version;
      if ((!old.owner.empty() && old.owner != spec.owner) || (!old.key.empty() && old.key != spec.key)) {
        return fail(Errc::verification_failed,
                    "agent " + spec.id + " is enrolled by " + (old.owner.empty() ? "no identity" : old.owner) +
                        (old.key.empty() ? "" : " with another key") + "; an operator must forget it first (warden agents forget " +
                        spec.id + ")");
      }
      // A registering process holds nothing: whatever its previous life held goes back.
      if (!old.task_id.empty()) (void)store_.release(held_claim(old), now);
      view.drained = old.drained;
    }
    // A registration is named by the record version it is written at: versions never repeat
    // for an id, not even after forget (the store continues from the removed record's), so a
    // stream of an earlier registration can never pass for this one. Over an existing record
    // that version is expected + 1; a new record's is known only once written (0 until then,
    // which no registration's stream carries).
    view.epoch = expected == 0 ? 0 : expected + 1;
    view.record.id = spec.id;
    view.record.role = spec.role;
    view.record.labels = spec.labels;
    view.owner = spec.owner;
    view.key = spec.key;
    view.record.last_heartbeat_ms = now;
    view.state = AgentState::idle;
    view.record.state = std::string(to_string(view.state));
    view.record.details = encode_details(view);
    auto put = store_.put_agent(view.record, expected,
                                encode({.type = FleetEventType::registered, .agent_id = spec.id, .at_ms = now,
                                        .owner = spec.owner, .key = spec.key}));
    if (put && view.epoch != *put) {
      view.epoch = *put;
      view.record.details = encode_details(view);
      auto named = store_.put_agent(view.record, *put, "");
      if (!named) {
        if (named.error().code != Errc::failed_precondition && named.error().code != Errc::not_found) {
          return std::unexpected(named.error());
        }
        continue;  // changed or forgotten meanwhile: register again over what is there now
      }
      put = named;
    }
    if (put) {
      if (spec.self_restarting) policy.start_intensity_over();
      view.record.version = *put;
      view.given_up = policy.given_up();
      known_[spec.id] = view;
      return view;
    }
    if (put.error().code != Errc::failed_precondition && put.error().code != Errc::already_exists) {
      return std::unexpected(put.error());
    }
  }
  return fail(Errc::failed_precondition, "agent " + spec.id + " kept changing while it registered");
}

Status Supervisor::heartbeat(std::string_view agent_id, std::optional<uint64_t> epoch) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  // A heartbeat within a quarter interval of the last one this process recorded changes
  // nothing detection needs, so it writes nothing: an agent (or a flood of calls in its name)
  // cannot turn heartbeats into store writes faster than four per interval.
  auto cached = known_.find(std::string(agent_id));
  if (cached != known_.end() && !cached->second.down && (!epoch || cached->second.epoch == *epoch) &&
      now - cached->second.record.last_heartbeat_ms < config_.heartbeat_interval_ms / 4 &&
      now >= cached->second.record.last_heartbeat_ms) {
    return {};
  }
  auto done = update(agent_id, now, [&](AgentView& view) -> Status {
    if (Status st = same_epoch(view, epoch); !st) return st;
    // Heartbeats carry no clock of the agent's: the supervisor's reading is the one compared.
    view.record.last_heartbeat_ms = std::max(view.record.last_heartbeat_ms, now);
    view.down = false;
    return {};
  });
  if (!done) return std::unexpected(done.error());
  return {};
}

Result<RestartDecision> Supervisor::fail_locked(const std::string& agent_id, std::string_view reason, bool down, bool stale,
                                                int64_t now, std::optional<uint64_t> lapsed_claim,
                                                std::optional<uint64_t> epoch) {
  RestartPolicy& policy = policy_locked(agent_id);
  // Held out of assignment from this moment until the decision below replaces the sentinel:
  // an assign() between the failure and the decision cannot pick the agent.
  policy.mark_failing();
  // The failed event is written with the record; its task is known only inside the change.
  FleetEvent failed_event{.type = FleetEventType::failed, .agent_id = agent_id, .at_ms = now,
                          .reason = escape_invalid_utf8(reason)};
  std::optional<store::ClaimRef> held;
  auto failed = update(agent_id, now, [&](AgentView& view) -> Status {
    // A heartbeat failure re-checked on the record it writes: a heartbeat that landed since
    // the agent was listed (here or at another supervisor) wins.
    if (stale && (view.down || now - view.record.last_heartbeat_ms <= stale_after_ms())) {
      return fail(Errc::failed_precondition, "agent " + agent_id + " is not stale any more");
    }
    if (Status st = same_epoch(view, epoch); !st) return st;
    if (lapsed_claim && (view.task_id.empty() || view.claim_token != *lapsed_claim)) {
      return fail(Errc::failed_precondition, "agent " + agent_id + " no longer holds the lapsed claim");
    }
    auto next = apply(AgentSnapshot{view.state, view.state, std::nullopt, view.record.version}, AgentEvent::agent_failed);
    if (!next) return std::unexpected(next.error().to_error());
    held.reset();
    failed_event.task_id.clear();
    if (!view.task_id.empty()) {
      held = held_claim(view);
      failed_event.task_id = view.task_id;
    }
    view.state = next->state;
    view.task_id.clear();
    view.claim_token = 0;
    view.claim_expires_ms = 0;
    if (down) view.down = true;
    return {};
  }, &failed_event);
  if (!failed) {
    policy.unmark_failing();
    return std::unexpected(failed.error());
  }
  if (held) {
    // Released only once the record no longer holds it: a release whose record write then
    // lost a race would leave the record naming a task another agent may take. A refused
    // release (the claim expired, the task is gone) is fine: the task is back or done; a
    // failed one leaves the lease to expire.
    (void)store_.release(*held, now);
  }
  const BreakerState before = policy.breaker().state(now);
  RestartDecision decision = policy.on_failure(now, random_);
  std::vector<FleetEvent> events;
  if (decision.action == RestartAction::give_up) {
    given_up_why_[agent_id] = decision.reason + "; the last failure: " + escape_invalid_utf8(reason);
    events.push_back({.type = FleetEventType::given_up, .agent_id = agent_id, .at_ms = now, .reason = decision.reason});
  } else {
    events.push_back({.type = FleetEventType::restart, .agent_id = agent_id, .at_ms = now, .attempt = decision.attempt,
                      .delay_ms = decision.delay_ms});
  }
  if (decision.breaker != before) {
    events.push_back({.type = FleetEventType::circuit, .agent_id = agent_id, .at_ms = now,
                      .circuit = std::string(to_string(decision.breaker))});
  }
  for (FleetEvent& event : events) {
    if (auto e = emit(std::move(event)); !e) return std::unexpected(e.error());
  }
  return decision;
}

Result<RestartDecision> Supervisor::fail_agent(std::string_view agent_id, std::string_view reason, bool gone,
                                               std::optional<uint64_t> epoch) {
  std::lock_guard lock(mu_);
  return fail_locked(std::string(agent_id), reason, gone, false, clock_.now_ms(), std::nullopt, epoch);
}

Result<std::vector<std::string>> Supervisor::detect_failures() {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto listed = store_.list_agents();
  if (!listed) return std::unexpected(listed.error());
  std::vector<std::string> failed;
  for (store::AgentRecord& record : *listed) {
    AgentView view = view_locked(std::move(record), now);
    if (auto decoded = decode_into(view.record, view); !decoded) return std::unexpected(decoded.error());
    if (view.down) continue;
    const bool stale = now - view.record.last_heartbeat_ms > stale_after_ms();
    // A live agent that holds a claim past its lease (it never delivered nor renewed, its
    // delivery was refused, or its assignment was lost) would never be assigned again: it
    // fails too, and the store has already given the task back.
    const bool lapsed = !view.task_id.empty() && now >= view.claim_expires_ms;
    if (!stale && !lapsed) continue;
    std::string reason = stale ? "no heartbeat for " + std::to_string(now - view.record.last_heartbeat_ms) +
                                     " ms (at most " + std::to_string(stale_after_ms()) + ")"
                               : "its claim on task " + view.task_id + " ran out at " +
                                     std::to_string(view.claim_expires_ms) + " ms without a delivery or renewal";
    auto decided = fail_locked(view.record.id, reason, stale, stale, now,
                               stale ? std::nullopt : std::optional<uint64_t>(view.claim_token));
    if (!decided) {
      // Another supervisor got there first, or the agent heartbeat in between: not ours.
      if (decided.error().code == Errc::failed_precondition || decided.error().code == Errc::not_found) continue;
      return std::unexpected(decided.error());
    }
    failed.push_back(view.record.id);
  }
  return failed;
}

Result<std::vector<Assignment>> Supervisor::assign(const AssignScope& scope) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto listed = store_.list_agents();
  if (!listed) return std::unexpected(listed.error());
  std::vector<Assignment> made;
  const size_t n = listed->size();
  if (n == 0) return made;
  const size_t start = next_start_ % n;
  next_start_ = start + 1;
  for (size_t k = 0; k < n; ++k) {
    store::AgentRecord& record = (*listed)[(start + k) % n];
    AgentView view = view_locked(record, now);
    // One undecodable record costs its agent its turn, not the fleet its pass.
    if (auto decoded = decode_into(view.record, view); !decoded) continue;
    if (view.state != AgentState::idle || view.down || view.drained) continue;
    if (scope.may_take && !scope.may_take(view)) continue;
    RestartPolicy& policy = policy_locked(view.record.id);
    if (!policy.may_assign(now)) continue;
    // Tasks of its role, and those addressed to its owner ("runner:<owner>": one member of a
    // quorum, which must be run by a distinct identity).
    store::ClaimFilter filter{{view.record.role}};
    if (const std::string owned = owner_kind(view.record.role, view.owner); !owned.empty()) filter.kinds.push_back(owned);
    if (scope.kinds) filter.kinds = scope.kinds(view);
    if (filter.kinds.empty()) continue;
    auto claimed = store_.claim(view.record.id, now, config_.visibility_timeout_ms, filter);
    if (!claimed) {
      // The store failed: what this pass already assigned is returned (those agents hold
      // their tasks now); the error shows again on the next pass.
      if (!made.empty()) return made;
      return std::unexpected(claimed.error());
    }
    if (!*claimed) continue;
    const store::Claim claim = **claimed;
    const bool start = scope.starts_at_once && scope.starts_at_once(view);
    const FleetEvent assigned{.type = FleetEventType::assigned, .agent_id = view.record.id, .at_ms = now,
                              .task_id = claim.task.id, .attempt = claim.attempt, .started = start};
    auto moved = update(view.record.id, now, [&](AgentView& current) -> Status {
      // Another supervisor may have assigned or failed the agent since it was listed, or it
      // registered again with another role.
      const bool its_kind = std::find(filter.kinds.begin(), filter.kinds.end(), claim.task.kind) != filter.kinds.end() &&
                            current.record.role == view.record.role && current.owner == view.owner;
      if (current.down || current.drained || !its_kind) {
        return fail(Errc::failed_precondition, "agent no longer available");
      }
      auto next = apply(AgentSnapshot{current.state, current.state, std::nullopt, current.record.version},
                        AgentEvent::task_assigned);
      if (next && start) next = apply(*next, AgentEvent::work_started);
      if (!next) return std::unexpected(next.error().to_error());
      current.state = next->state;
      current.task_id = claim.task.id;
      current.claim_token = claim.token;
      current.claim_expires_ms = claim.expires_ms;
      return {};
    }, &assigned, view);
    if (!moved) {
      const Errc code = moved.error().code;
      if (code == Errc::failed_precondition || code == Errc::not_found || code == Errc::corrupt) {
        (void)store_.release(claim.ref(), now);  // certainly not recorded: give the task back now
        continue;
      }
      // The write's outcome is unknown (a broken connection): it may have landed, so the task
      // is not released under a record that may name it; its lease returns it if not.
      if (!made.empty()) return made;
      return std::unexpected(moved.error());
    }
    policy.try_assign(now);  // takes a half-open breaker's one probe
    made.push_back(Assignment{view.record.id, claim});
  }
  return made;
}

Status Supervisor::advance_locked(std::string_view agent_id, const store::ClaimRef& claim, AgentEvent event,
                                  int64_t now, const FleetEvent* fleet_event) {
  auto moved = update(agent_id, now, [&](AgentView& view) -> Status {
    if (!same_claim(view, claim)) return fail(Errc::failed_precondition, "the claim is not the agent's current one");
    auto next = apply(AgentSnapshot{view.state, view.state, std::nullopt, view.record.version}, event);
    if (!next) return std::unexpected(next.error().to_error());
    view.state = next->state;
    return {};
  }, fleet_event);
  if (!moved) return std::unexpected(moved.error());
  return {};
}

Status Supervisor::started(std::string_view agent_id, const store::ClaimRef& claim) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  const FleetEvent started{.type = FleetEventType::started, .agent_id = std::string(agent_id), .at_ms = now,
                           .task_id = claim.task_id};
  return advance_locked(agent_id, claim, AgentEvent::work_started, now, &started);
}

Status Supervisor::output_ready(std::string_view agent_id, const store::ClaimRef& claim) {
  std::lock_guard lock(mu_);
  return advance_locked(agent_id, claim, AgentEvent::output_ready, clock_.now_ms(), nullptr);
}

Status Supervisor::delivered(std::string_view agent_id, const store::ClaimRef& claim) {
  std::lock_guard lock(mu_);
  const FleetEvent event{.type = FleetEventType::delivered, .agent_id = std::string(agent_id), .at_ms = clock_.now_ms(),
                         .task_id = claim.task_id};
  return settle_locked(agent_id, claim, event, true);
}

Status Supervisor::withdraw(std::string_view agent_id, const store::ClaimRef& claim, std::string_view reason) {
  std::lock_guard lock(mu_);
  const FleetEvent event{.type = FleetEventType::withdrawn, .agent_id = std::string(agent_id), .at_ms = clock_.now_ms(),
                         .task_id = claim.task_id, .reason = std::string(reason)};
  return settle_locked(agent_id, claim, event, false);
}

Status Supervisor::settle_locked(std::string_view agent_id, const store::ClaimRef& claim, const FleetEvent& delivered,
                          bool succeeded) {
  const int64_t now = delivered.at_ms;
  AgentView view;
  auto cached = known_.find(std::string(agent_id));
  if (cached != known_.end() && same_claim(cached->second, claim)) {
    // Written by this process when the claim was assigned or advanced; a stale copy only
    // makes the update below re-read. The ack does not depend on it: the store checks the
    // claim itself.
    view = cached->second;
  } else {
    auto current = store_.get_agent(agent_id);
    if (!current) return std::unexpected(current.error());
    if (!*current) return fail(Errc::not_found, "no agent " + std::string(agent_id));
    view = view_locked(std::move(**current), now);
    if (auto decoded = decode_into(view.record, view); !decoded) return decoded;
  }
  if (!same_claim(view, claim)) {
    // A retry after a lost reply: the store answers ok only to the claim that acked the
    // task; anything else (an expired, released or foreign claim) stays refused.
    if (claim.agent_id == agent_id && store_.ack(claim, now)) return {};
    return fail(Errc::failed_precondition, "the claim is not the agent's current one");
  }
  // Working -> reporting -> idle, or reporting -> idle: the state machine judges each step.
  AgentSnapshot at{view.state, view.state, std::nullopt, view.record.version};
  if (view.state == AgentState::working) {
    auto ready = apply(at, AgentEvent::output_ready);
    if (!ready) return std::unexpected(ready.error().to_error());
    at = *ready;
  }
  auto next = apply(at, AgentEvent::output_delivered);
  if (!next) return std::unexpected(next.error().to_error());
  auto free = [](AgentView& v) {
    v.state = AgentState::idle;
    v.task_id.clear();
    v.claim_token = 0;
    v.claim_expires_ms = 0;
  };
  // The ack is the one gate to a decision: the store refuses it for an expired or re-claimed
  // task. The record follows it in the same transaction when it is still the one read.
  AgentView after = view;
  free(after);
  after.record.state = std::string(to_string(after.state));
  after.record.details = encode_details(after);
  auto acked = store_.ack_and_put(claim, now, store::AgentWrite{after.record, view.record.version, encode(delivered)});
  if (!acked) {
    known_.erase(std::string(agent_id));
    return std::unexpected(acked.error());
  }
  if (*acked) {
    after.record.version = **acked;
    known_[std::string(agent_id)] = std::move(after);
  } else {
    // The record moved on (another supervisor wrote it): the ack stands, and it alone
    // authorizes the decision. Free the agent on what is stored now; if that fails too, the
    // record still names the claim and detect_failures() frees the agent once the lease runs
    // out. Either way the event is recorded.
    known_.erase(std::string(agent_id));
    auto moved = update(agent_id, now, [&](AgentView& latest) -> Status {
      if (same_claim(latest, claim)) free(latest);  // else another supervisor failed it meanwhile: keep its word
      return {};
    }, &delivered);
    if (!moved) (void)emit(delivered);
  }
  if (!succeeded) return {};
  RestartPolicy& policy = policy_locked(std::string(agent_id));
  const BreakerState before = policy.breaker().state(now);
  policy.on_success();
  if (before != BreakerState::closed) {
    return emit({.type = FleetEventType::circuit, .agent_id = std::string(agent_id), .at_ms = now, .circuit = "closed"});
  }
  return {};
}

Status Supervisor::renew(std::string_view agent_id, const store::ClaimRef& claim) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto moved = update(agent_id, now, [&](AgentView& view) -> Status {
    if (!same_claim(view, claim)) return fail(Errc::failed_precondition, "the claim is not the agent's current one");
    auto expires = store_.renew(claim, now, config_.visibility_timeout_ms);
    if (!expires) return std::unexpected(expires.error());
    view.claim_expires_ms = *expires;
    return {};
  });
  if (!moved) return std::unexpected(moved.error());
  return {};
}

Status Supervisor::drain(std::string_view agent_id, bool drained) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  const FleetEvent event{.type = FleetEventType::drained, .agent_id = std::string(agent_id), .at_ms = now,
                         .reason = drained ? "drained" : "undrained"};
  auto moved = update(agent_id, now, [&](AgentView& view) -> Status {
    view.drained = drained;
    return {};
  }, &event);
  if (!moved) return std::unexpected(moved.error());
  return {};
}

Status Supervisor::forget(std::string_view agent_id) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto stored = store_.get_agent(agent_id);
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return fail(Errc::not_found, "no agent " + std::string(agent_id));
  AgentView view = view_locked(**stored, now);
  if (auto decoded = decode_into(view.record, view); !decoded) return decoded;
  if (view.state != AgentState::idle) {
    return fail(Errc::failed_precondition, "agent " + std::string(agent_id) + " is " +
                                               std::string(to_string(view.state)) + ": drain it and wait, or fail it");
  }
  if (auto removed = store_.remove_agent(agent_id, view.record.version); !removed) return removed;
  policies_.erase(std::string(agent_id));
  known_.erase(std::string(agent_id));
  return emit({.type = FleetEventType::forgotten, .agent_id = std::string(agent_id), .at_ms = now});
}

Result<std::vector<AgentView>> Supervisor::agents() {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto listed = store_.list_agents();
  if (!listed) return std::unexpected(listed.error());
  std::vector<AgentView> out;
  out.reserve(listed->size());
  for (store::AgentRecord& record : *listed) {
    AgentView view = view_locked(std::move(record), now);
    if (auto decoded = decode_into(view.record, view); !decoded) return std::unexpected(decoded.error());
    out.push_back(std::move(view));
  }
  return out;
}

Result<std::optional<AgentView>> Supervisor::agent(std::string_view agent_id) {
  std::lock_guard lock(mu_);
  const int64_t now = clock_.now_ms();
  auto stored = store_.get_agent(agent_id);
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return std::optional<AgentView>();
  AgentView view = view_locked(std::move(**stored), now);
  if (auto decoded = decode_into(view.record, view); !decoded) return std::unexpected(decoded.error());
  return std::optional<AgentView>(std::move(view));
}

}  // namespace warden::supervisor
