// What the Kernel service admits from a client, before anything runs or is written: every
// document a call sends (a blueprint, a plan, a policy) is parsed by the kernel's own typed
// parser (kernel/plan/blueprint.h, kernel/plan/build_plan.h, kernel/judge/policy.h) and held,
// as the typed value, to the server's rules; a StartRun request becomes one typed value,
// AdmittedRun, which is all a run is started from (service/kernel_service.h).
//
// The server's rules, on top of the kernel's: nothing a client sends may make this host read
// a file of its own, or commit anywhere but on a branch of Warden's.
//   - A client's blueprint is self-contained: parsed without a directory, so a content_file
//     or draft_files is refused; it names no seed directory and no held-out directory (their
//     files would be read here; a held-out test a client sends it has also seen). A served
//     blueprint (warden serve --blueprints DIR) is the operator's and may name both.
//   - A client's blueprint or plan names its policy, when it names one, by a built-in name:
//     any other is a path the CLI child would load here, and a policy decides what is
//     accepted and in which sandbox.
//   - A policy a client sends is a built-in name, or a policy's JSON naming a built-in
//     sandbox profile (a path there is a profile file on this host).
//   - A client's blueprint or plan commits on a branch named warden/..., never on a
//     repository's base branch.
//   - A name that becomes a path (a served blueprint, a repository, an executor label) is one
//     plain path component (common/identifier.h).
//
// Errors are values: invalid_argument naming the request's field ("blueprint_json.policy:
// ..."), not_found for a served blueprint or committed plan there is not, limit_exceeded for
// a document over its size limit, and the ledger's own errors; the caller answers with
// to_status(). Pure but for the reads named (the served blueprint's files, the ledger).
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "runner/model/quorum.h"
#include "service/shared_ledger.h"
#include "service/tokens.h"

namespace warden::service {

// The largest blueprint a client may send inline: the CLI's own limit on a content file.
inline constexpr size_t kMaxClientBlueprintBytes = size_t{16} << 20;

// A client's self-contained blueprint (StartRun or GeneratePlan blueprint_json): the
// BlueprintSpec, held to the rules above. `field` names the document in errors.
Result<kernel::BlueprintSpec> admit_client_blueprint(std::string_view text, std::string_view field);
// A client's plan (VerifyPlan, CommitPlan plan_json): the BuildPlan, held to the rules above.
Result<kernel::BuildPlan> admit_client_plan(std::string_view text, std::string_view field);

// A policy a client names for a plan call: a built-in policy's name, or a policy's JSON
// (parsed by Policy::parse, its sandbox profile a built-in one), kept as sent for the CLI
// child to load.
struct ClientPolicy {
  std::string builtin;  // set: a built-in policy's name
  std::string json;     // otherwise: the policy's JSON
};
// `text` is not empty (an empty policy names none).
Result<ClientPolicy> admit_client_policy(std::string_view text, std::string_view field);

// What a StartRun builds: a blueprint the server serves, ...
struct ServedBlueprint {
  std::filesystem::path file;  // BLUEPRINTS/<name>/blueprint.json
  kernel::BlueprintSpec spec;
};
// ... a client's blueprint (the child reads the very bytes that were admitted) ...
struct ClientBlueprint {
  kernel::BlueprintSpec spec;
  std::string text;
};
// ... or a plan the ledger holds committed.
struct CommittedPlan {
  Digest digest;
  kernel::BuildPlan plan;
};

// Who proposes a run's changes: the plan itself (its content), ...
struct PlanExecutor {};
// ... a program run on this host (admin only) ...
struct CommandExecutor {
  std::string command;  // not empty
};
// ... or an executor attached to the service (Executor.Attach) with this label.
struct RemoteExecutor {
  std::string label;      // a plain name
  std::string served_by;  // the identity whose executor serves it: the caller's, unless named
};

enum class RunClock { system, logical };

// A StartRun request, admitted: every name checked and every document parsed; nothing
// opened, started or written yet.
struct AdmittedRun {
  std::variant<ServedBlueprint, ClientBlueprint, CommittedPlan> source;
  std::string name;        // the served blueprint's name, or the blueprint's or plan's own
  std::string repository;  // a plain name: the run builds in STATE/repos/<repository>
  std::variant<PlanExecutor, CommandExecutor, RemoteExecutor> executor = PlanExecutor{};
  bool checks_on_runners = false;
  std::optional<RunnerQuorum> runner_quorum;  // only with checks on runners
  std::string policy;                         // a built-in policy's name; empty: the document's own
  RunClock clock = RunClock::system;
  int64_t step_timeout_ms = 0;                // 0: the plan's
  std::string owner;                          // the caller who started it (its token's name)
};

// Where a StartRun's names resolve: the blueprints the server serves, and the ledger that
// holds committed plans. Borrowed for the call.
struct AdmissionScope {
  const std::filesystem::path& blueprints_dir;
  SharedLedger& ledger;
};

// The role StartRun needs: admin for a command executor (a program of the caller's choosing
// run on this host), executor for any other.
Role start_run_role(const v1::StartRunRequest& request);

// `request` from `owner`, admitted (see above).
Result<AdmittedRun> admit_start_run(const v1::StartRunRequest& request, const std::string& owner, const AdmissionScope& scope);

}  // namespace warden::service
