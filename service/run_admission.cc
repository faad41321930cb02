#include "service/run_admission.h"

#include <algorithm>
#include <utility>

#include "common/canonical_json.h"
#include "common/identifier.h"
#include "kernel/judge/policy.h"
#include "kernel/record/committed_plan.h"
#include "runner/model/sandbox_profile.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

// The longest name of ours that becomes a path component.
constexpr size_t kMaxNameBytes = 100;

Error invalid(std::string_view field, const std::string& why) {
  return Error{Errc::invalid_argument, std::string(field) + ": " + why};
}

bool safe_name(const std::string& name) { return is_identifier(name, kMaxNameBytes); }
const std::string kNameRule = "must be a name of " + std::string(kIdentifierRule);

std::string join(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool builtin_policy(std::string_view name) {
  auto names = kernel::builtin_policy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A document's policy, when it names one: a built-in name.
Status check_policy_name(const std::string& policy, const std::string& field) {
  if (policy.empty() || builtin_policy(policy)) return {};
  return std::unexpected(invalid(field, "\"" + policy + "\" is not a built-in policy name (" +
                                            join(kernel::builtin_policy_names()) + ")"));
}

// A document's branch, when it names one: Warden's own.
Status check_branch(const std::string& branch, const std::string& field) {
  if (branch.empty() || branch.starts_with("warden/")) return {};
  return std::unexpected(invalid(field, "\"" + branch + "\": a client's build commits on a branch named warden/..."));
}

// A client's JSON document, an object; errors name it by its field.
Result<Json> parse_document(std::string_view text, std::string_view field) {
  auto parsed = parse_json(text);
  if (!parsed) return std::unexpected(invalid(field, parsed.error().message));
  if (!parsed->is_object()) return std::unexpected(invalid(field, "not a JSON object"));
  return parsed;
}

// What the run builds, and its name.
Status admit_source(const v1::StartRunRequest& request, const AdmissionScope& scope, AdmittedRun& run) {
  switch (request.plan_case()) {
    case v1::StartRunRequest::kBlueprint: {
      run.name = request.blueprint();
      if (!safe_name(run.name)) return std::unexpected(invalid("blueprint", kNameRule));
      const fs::path file = scope.blueprints_dir / run.name / "blueprint.json";
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) {
        return fail(Errc::not_found, "blueprint: the server serves no blueprint " + run.name + " (no " + file.string() + ")");
      }
      auto spec = kernel::BlueprintSpec::load(file.string());
      if (!spec) return std::unexpected(spec.error().with_context("blueprint " + run.name));
      run.source = ServedBlueprint{file, std::move(*spec)};
      return {};
    }
    case v1::StartRunRequest::kBlueprintJson: {
      auto spec = admit_client_blueprint(request.blueprint_json(), "blueprint_json");
      if (!spec) return std::unexpected(spec.error());
      run.name = spec->name;
      run.source = ClientBlueprint{std::move(*spec), request.blueprint_json()};
      return {};
    }
    case v1::StartRunRequest::kPlanSha256: {
      auto digest = Digest::parse(request.plan_sha256());
      if (!digest) return std::unexpected(invalid("plan_sha256", "not a SHA-256 digest (\"sha256:\" and 64 hex digits)"));
      // Found here for its name and a clear NOT_FOUND; the run's process finds and checks it again.
      auto plan = scope.ledger.with([&](const Ledger& ledger) { return kernel::find_committed_plan(ledger, *digest); });
      if (!plan) return std::unexpected(plan.error());
      if (request.policy().empty() && !plan->policy.empty() && !builtin_policy(plan->policy)) {
        return std::unexpected(invalid("policy", "the committed plan names the policy \"" + plan->policy +
                                                     "\", which is not built-in: name a built-in policy to build it under"));
      }
      if (Status st = check_branch(plan->branch, "plan_sha256: the plan's branch"); !st) return st;
      run.name = plan->name;
      run.source = CommittedPlan{*digest, std::move(*plan)};
      return {};
    }
    default:
      return std::unexpected(invalid("plan", "give blueprint (a name the server serves), blueprint_json or plan_sha256"));
  }
}

// Where it builds: the repository named, or the one named after what it builds.
Status admit_repository(const v1::StartRunRequest& request, AdmittedRun& run) {
  run.repository = request.repository().empty() ? run.name : request.repository();
  if (safe_name(run.repository)) return {};
  return std::unexpected(invalid("repository", request.repository().empty()
                                                   ? "the plan's name \"" + run.name + "\" " + kNameRule + "; name one"
                                                   : kNameRule));
}

Status admit_executor(const v1::StartRunRequest& request, const std::string& owner, AdmittedRun& run) {
  const std::string& executor = request.executor();
  if (executor == "remote") {
    if (!safe_name(request.executor_label())) return std::unexpected(invalid("executor_label", kNameRule));
    run.executor = RemoteExecutor{request.executor_label(),
                                  request.executor_identity().empty() ? owner : request.executor_identity()};
    return {};
  }
  const bool command = executor.starts_with("command:");
  if (!executor.empty() && executor != "plan" && !command) {
    return std::unexpected(invalid("executor", "\"" + executor + "\" is not plan, command:CMD or remote"));
  }
  if (!request.executor_label().empty()) return std::unexpected(invalid("executor_label", "only a remote executor has a label"));
  if (!request.executor_identity().empty()) {
    return std::unexpected(invalid("executor_identity", "only a remote executor is served by one"));
  }
  if (!command) {
    run.executor = PlanExecutor{};
    return {};
  }
  std::string program = executor.substr(std::string_view("command:").size());
  if (program.empty()) return std::unexpected(invalid("executor", "command: names no command"));
  run.executor = CommandExecutor{std::move(program)};
  return {};
}

// Where its checks run, and how many runners must agree on each.
Status admit_checks(const v1::StartRunRequest& request, AdmittedRun& run) {
  const std::string& checks_on = request.checks_on();
  if (!request.runner_quorum().empty()) {
    if (checks_on != "runners") return std::unexpected(invalid("runner_quorum", "only checks on runners have a quorum"));
    auto quorum = RunnerQuorum::parse(request.runner_quorum());
    if (!quorum) return std::unexpected(invalid("runner_quorum", quorum.error().message));
    run.runner_quorum = *quorum;
  }
  if (!checks_on.empty() && checks_on != "local" && checks_on != "runners") {
    return std::unexpected(invalid("checks_on", "\"" + checks_on + "\" is not local or runners"));
  }
  run.checks_on_runners = checks_on == "runners";
  return {};
}

// The policy it is built under, when the request names one: a built-in one.
Status admit_policy(const v1::StartRunRequest& request, AdmittedRun& run) {
  if (request.policy().empty()) return {};
  if (!builtin_policy(request.policy())) {
    return std::unexpected(invalid("policy", "\"" + request.policy() + "\" is not a built-in policy"));
  }
  run.policy = request.policy();
  return {};
}

Status admit_clock(const v1::StartRunRequest& request, AdmittedRun& run) {
  if (request.clock().empty() || request.clock() == "system") return {};
  if (request.clock() != "logical") return std::unexpected(invalid("clock", "system or logical"));
  run.clock = RunClock::logical;
  return {};
}

}  // namespace

Result<kernel::BlueprintSpec> admit_client_blueprint(std::string_view text, std::string_view field) {
  const std::string f(field);
  if (text.size() > kMaxClientBlueprintBytes) {
    return fail(Errc::limit_exceeded, f + ": larger than " + std::to_string(kMaxClientBlueprintBytes) + " bytes");
  }
  auto json = parse_document(text, field);
  if (!json) return std::unexpected(json.error());
  // No directory: a content_file or draft_files, which would be read on this host, is refused.
  auto spec = kernel::BlueprintSpec::from_json(*json);
  if (!spec) return std::unexpected(invalid(field, spec.error().message));
  if (spec->seed) {
    return std::unexpected(invalid(f + ".repository.seed",
                                   "an inline blueprint cannot name a seed directory on the server; serve the blueprint "
                                   "with `warden serve --blueprints DIR` and start it by name"));
  }
  if (spec->held_out) {
    return std::unexpected(invalid(f + ".held_out",
                                   "an inline blueprint cannot name held-out tests on the server (a client that sends "
                                   "them has shown them); serve the blueprint and its held-out directory with `warden "
                                   "serve --blueprints DIR` and start it by name"));
  }
  if (Status st = check_policy_name(spec->policy, f + ".policy"); !st) return std::unexpected(st.error());
  if (Status st = check_branch(spec->branch.value_or(""), f + ".repository.branch"); !st) return std::unexpected(st.error());
  if (!safe_name(spec->name)) return std::unexpected(invalid(f + ".name", kNameRule));
  return spec;
}

Result<kernel::BuildPlan> admit_client_plan(std::string_view text, std::string_view field) {
  const std::string f(field);
  auto json = parse_document(text, field);
  if (!json) return std::unexpected(json.error());
  auto plan = kernel::BuildPlan::from_json(*json);
  if (!plan) return std::unexpected(invalid(field, plan.error().message));
  if (Status st = check_policy_name(plan->policy, f + ".policy"); !st) return std::unexpected(st.error());
  if (Status st = check_branch(plan->branch, f + ".branch"); !st) return std::unexpected(st.error());
  return plan;
}

Result<ClientPolicy> admit_client_policy(std::string_view text, std::string_view field) {
  const std::string f(field);
  if (builtin_policy(text)) return ClientPolicy{std::string(text), ""};
  if (!text.starts_with("{")) {
    return std::unexpected(invalid(field, "\"" + std::string(text) + "\" is neither a built-in policy nor a policy's JSON"));
  }
  auto policy = kernel::Policy::parse(text, f);
  if (!policy) return std::unexpected(invalid(field, policy.error().message));
  auto profiles = builtin_profile_names();
  if (std::find(profiles.begin(), profiles.end(), policy->sandbox_profile) == profiles.end()) {
    return std::unexpected(invalid(f + ".sandbox_profile", "\"" + policy->sandbox_profile +
                                                               "\": a client's policy names a built-in sandbox profile (" +
                                                               join(profiles) + ")"));
  }
  return ClientPolicy{"", std::string(text)};
}

Role start_run_role(const v1::StartRunRequest& request) {
  return request.executor().starts_with("command:") ? Role::admin : Role::executor;
}

Result<AdmittedRun> admit_start_run(const v1::StartRunRequest& request, const std::string& owner, const AdmissionScope& scope) {
  AdmittedRun run;
  run.owner = owner;
  run.step_timeout_ms = request.step_timeout_ms();
  if (Status st = admit_source(request, scope, run); !st) return std::unexpected(st.error());
  if (Status st = admit_repository(request, run); !st) return std::unexpected(st.error());
  if (Status st = admit_executor(request, owner, run); !st) return std::unexpected(st.error());
  if (Status st = admit_checks(request, run); !st) return std::unexpected(st.error());
  if (Status st = admit_policy(request, run); !st) return std::unexpected(st.error());
  if (Status st = admit_clock(request, run); !st) return std::unexpected(st.error());
  return run;
}

}  // namespace warden::service
