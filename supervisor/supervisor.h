// The agent supervisor: the fleet's control over a StateStore. Agents (executors, runners)
// register and heartbeat; the supervisor detects the ones whose heartbeats stopped, assigns
// queued tasks to idle agents of the task's kind, moves each agent through the pure state
// machine (supervisor/agent_state.h), and on every failure decides with the agent's
// RestartPolicy (backoff, restart intensity, circuit breaker, cooldown) when it may work again.
// Every step is a FleetEvent on the store's event stream.
//
// Several supervisors (several `warden serve` processes on one Redis) may share one store:
// a task is claimed atomically in the store, and an agent moves only by compare-and-set on its
// record's version, so two supervisors never assign one task twice nor one agent two tasks.
// Restart policies are this process's own (an agent's backoff and breaker live with the
// supervisor that watches it).
//
// Delivery is at least once: a task whose agent fails or whose claim expires goes back to the
// queue and runs again. Decisions are exactly once: only the current claim's holder can
// deliver() (the store refuses a stale claim's ack), and a caller records a decision only
// after deliver() succeeded.
//
// Time and randomness come from the Clock and RandomSource given at creation; the supervisor
// reads nothing else and starts no thread: the caller's loop calls detect_failures() and
// assign() (service/, tools/bench/supervisor_bench).
//
// Ownership: a Supervisor borrows its store, clock and random source; they must outlive it.
// Thread safety: every method may be called from any thread; mu_ serializes this process's
// decisions (the cooldown sentinel relies on it), the store serializes everyone's.
// Errors: not_found (no such agent), failed_precondition (the agent is not in a state that
// allows the call, or the claim is no longer the agent's), invalid_argument (bad config or
// spec), and whatever the store returned (io_error, corrupt).
//
// supervisor.cc is one unit (~620 lines): one class whose calls all move agents' records by
// compare-and-set under mu_, through the same update, failure and settling paths.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "common/random_source.h"
#include "store/state_store.h"
#include "supervisor/agent_state.h"
#include "supervisor/fleet_event.h"
#include "supervisor/restart_policy.h"

namespace warden::supervisor {

struct SupervisorConfig {
  int64_t heartbeat_interval_ms = 1000;  // how often agents are told to heartbeat
  uint32_t missed_heartbeats = 2;        // failed after this many intervals without one...
  int64_t detection_slack_ms = 100;      // ...plus this slack (network, scheduling)
  int64_t visibility_timeout_ms = 60000; // an assigned task returns to the queue after this
  RestartPolicyConfig restart;
};

// invalid_argument naming the first bad field.
Status validate(const SupervisorConfig& config);

struct AgentSpec {
  std::string id;    // store::check_id: 1-128 bytes of [A-Za-z0-9._:-]
  std::string role;  // the task kind it takes ("runner", "executor"), as store::check_id
  std::map<std::string, std::string> labels;
  // Who enrolled it and with which key (a remote runner: its token's identity and its
  // Ed25519 public key, hex). Pinned by the first registration that names them: a later
  // one naming others is refused until an operator forgets the agent. Empty: not pinned.
  std::string owner{};
  std::string key{};
  // The agent restarts itself (a remote runner reconnecting), rather than being restarted by
  // the supervisor's caller: each registration starts its restart intensity over
  // (RestartPolicy::start_intensity_over), so reconnects never give it up for good.
  bool self_restarting = false;
};

// An agent as the store holds it, decoded.
struct AgentView {
  store::AgentRecord record;
  AgentState state = AgentState::idle;
  std::string task_id;     // the task it holds, if any
  uint64_t claim_token = 0;
  int64_t claim_expires_ms = 0;  // when the store gives the task back unless renewed
  bool down = false;       // failed for missed heartbeats; a heartbeat brings it back
  bool drained = false;    // taken out of assignment by an operator
  std::string owner;       // AgentSpec::owner, as pinned
  std::string key;         // AgentSpec::key, as pinned
  // Which registration (which process, or which runner stream, possibly at another server)
  // the record is now: the record version the registration was written at, so never the
  // same for two registrations of one id, across forget too.
  uint64_t epoch = 0;
  bool given_up = false;   // past the restart intensity (this supervisor's view)
  std::string given_up_reason;  // with given_up: the intensity exceeded, and the failure that exceeded it
  BreakerState breaker = BreakerState::closed;  // this supervisor's view
};

// The task kind addressed to the agents of one owner: "<role>:<owner>" (a quorum's member,
// which an agent of another owner must not take); empty when the owner is empty or the kind
// would not be a valid id. Agents with an owner claim these besides tasks of their role.
std::string owner_kind(std::string_view role, std::string_view owner);

// Which agents one assignment pass may give tasks, and of which kinds. The default: every
// agent, tasks of its role and those addressed to its owner (owner_kind). A server whose
// runners' tasks only it can deliver narrows both (service/fleet.h).
// An agent for which `starts_at_once` holds begins its task the moment it is given it (a
// runner, whose task the server sends on at once): it goes straight to working in the
// assignment's one write, through assigned in the state machine, and the assigned event
// says it started; started() is not called for it.
struct AssignScope {
  std::function<bool(const AgentView&)> may_take;                 // empty: every agent
  std::function<std::vector<std::string>(const AgentView&)> kinds;  // empty: the default kinds
  std::function<bool(const AgentView&)> starts_at_once;           // empty: none
};

struct Assignment {
  std::string agent_id;
  store::Claim claim;
};

class Supervisor {
 public:
  // invalid_argument if `config` is not valid.
  static Result<std::unique_ptr<Supervisor>> create(store::StateStore& store, Clock& clock, RandomSource& random,
                                                    SupervisorConfig config);

  // Registers the agent idle, heartbeating now. An agent registering again under its id
  // (a restarted process) keeps its restart policy but drops what it held: its task goes
  // back to the queue. verification_failed, writing nothing, when the agent is pinned to
  // another owner or key than `spec` names (AgentSpec::owner).
  Result<AgentView> register_agent(const AgentSpec& spec);
  // Records a heartbeat now; an agent that was down is up again. One within a quarter
  // interval of the last this process recorded is answered without a write. With `epoch`,
  // only for that registration: failed_precondition, writing nothing, once the agent was
  // registered again (elsewhere) or forgotten (not_found).
  Status heartbeat(std::string_view agent_id, std::optional<uint64_t> epoch = std::nullopt);

  // Fails every agent that is not already down and whose last heartbeat is older than
  // stale_after_ms() (it is marked down), or that holds a claim whose lease has run out:
  // agent_failed, its task released to the queue, a restart decision. Returns their ids, in
  // id order.
  Result<std::vector<std::string>> detect_failures();
  // One assignment pass: every idle agent that is up, not drained and allowed by its policy
  // (cooldown over, breaker closed or probing, not given up) gets the highest-priority
  // claimable task of its role, if there is one. Agents are visited from a rotating start,
  // so no agent is always first.
  Result<std::vector<Assignment>> assign(const AssignScope& scope = {});

  // The agent began the task of `claim` (assigned -> working).
  Status started(std::string_view agent_id, const store::ClaimRef& claim);
  // The agent has output for `claim` (working -> reporting).
  Status output_ready(std::string_view agent_id, const store::ClaimRef& claim);
  // A long task's agent keeps its claim: the lease runs visibility_timeout_ms from now.
  // failed_precondition if the claim ran out or is not the agent's.
  Status renew(std::string_view agent_id, const store::ClaimRef& claim);
  // The output was taken: the task is acked (failed_precondition if the claim expired or is
  // not the agent's: then record no decision) and the agent is idle with its breaker closed.
  // From reporting, or from working when the output is taken as soon as it is ready (a
  // runner's result: output_ready and delivered in one step, one write).
  // Success means the store acked the task, and only then may the caller record a decision;
  // the same claim delivering again after a lost reply succeeds again (the store's ack is
  // idempotent for its claim), so a retry never turns a made decision into a failure.
  Status delivered(std::string_view agent_id, const store::ClaimRef& claim);
  // The agent's task is acked unrun (its claim was given out, but nobody waits for its result
  // any more: a quorum settled, the build ended): a withdrawn event with `reason`, the agent
  // idle again. Refused as delivered is; the agent's restart policy is left as it was.
  Status withdraw(std::string_view agent_id, const store::ClaimRef& claim, std::string_view reason);
  // The agent failed (crashed, sent something refused, timed out): agent_failed, its task
  // released, and the restart decision, which the caller acts on for agents it spawned.
  // `gone`: the agent is known to be unreachable (its stream ended), so it is marked down as
  // a heartbeat failure would, and detect_failures() does not fail it a second time; its next
  // heartbeat or registration brings it back.
  // With `epoch`, only that registration is failed (failed_precondition once a newer one
  // holds the record: a stream that ended after its runner re-enrolled elsewhere).
  Result<RestartDecision> fail_agent(std::string_view agent_id, std::string_view reason, bool gone = false,
                                     std::optional<uint64_t> epoch = std::nullopt);

  // Takes the agent out of assignment (its current task finishes); undrain puts it back.
  Status drain(std::string_view agent_id, bool drained = true);
  // Removes an idle agent's record and policy.
  Status forget(std::string_view agent_id);

  Result<std::vector<AgentView>> agents();
  Result<std::optional<AgentView>> agent(std::string_view agent_id);

  // heartbeat_interval_ms * missed_heartbeats + detection_slack_ms.
  int64_t stale_after_ms() const;
  const SupervisorConfig& config() const { return config_; }

 private:
  Supervisor(store::StateStore& store, Clock& clock, RandomSource& random, SupervisorConfig config)
      : store_(store), clock_(clock), random_(random), config_(std::move(config)) {}

  // Re-reads the agent and applies `change` to it until the compare-and-set on its version
  // holds (bounded: another writer winning every time is failed_precondition). An error from
  // `change` writes nothing and is returned. `event`, if given, is recorded in the same store
  // transaction as the agent's new record. `known`, a view the caller has just read, saves
  // the first re-read (a stale one only costs a retry).
  Result<AgentView> update(std::string_view agent_id, int64_t now, const std::function<Status(AgentView&)>& change,
                           const FleetEvent* event = nullptr, std::optional<AgentView> known = std::nullopt);
  // Moves the agent holding `claim` by `event` (started, output_ready).
  Status advance_locked(std::string_view agent_id, const store::ClaimRef& claim, AgentEvent event, int64_t now,
                        const FleetEvent* fleet_event);
  RestartPolicy& policy_locked(const std::string& agent_id);
  AgentView view_locked(store::AgentRecord record, int64_t now);
  // `down`: mark the agent down; `stale`: a heartbeat failure, re-checked on the record it
  // writes (a heartbeat since wins); `lapsed_claim`: the
  // claim token that ran out (the failure stands only if the agent still holds it).
  Result<RestartDecision> fail_locked(const std::string& agent_id, std::string_view reason, bool down, bool stale, int64_t now,
                                      std::optional<uint64_t> lapsed_claim, std::optional<uint64_t> epoch = std::nullopt);
  Status emit(FleetEvent event);
  // delivered() and withdraw(), under mu_: acks `claim` and frees its agent, recording `event`.
  Status settle_locked(std::string_view agent_id, const store::ClaimRef& claim, const FleetEvent& event, bool succeeded);

  store::StateStore& store_;
  Clock& clock_;
  RandomSource& random_;
  const SupervisorConfig config_;

  std::mutex mu_;
  std::map<std::string, RestartPolicy> policies_;  // guarded by mu_
  std::map<std::string, std::string> given_up_why_;  // guarded by mu_: by agent, once given up
  // Each agent's record as this process last wrote it: update() writes against it first, so
  // a step costs one store round trip, not two, while no other supervisor intervenes.
  std::map<std::string, AgentView> known_;         // guarded by mu_
  size_t next_start_ = 0;                           // guarded by mu_: assign()'s rotation
};

}  // namespace warden::supervisor
