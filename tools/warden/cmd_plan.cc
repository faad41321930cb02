// warden plan generate|verify|commit: BuildPlans from blueprints, checked against a policy,
// and committed to a ledger (a refused plan is recorded as a PLANNING_ERROR refusal).
#include <iostream>

#include "common/clock.h"
#include "common/file.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/build/build_setup.h"
#include "kernel/record/plan_commit.h"
#include "kernel/judge/plan_verify.h"
#include "tools/warden/cli.h"
#include "tools/warden/signer_keys.h"

namespace warden::cli {
namespace {

using kernel::BuildPlan;
using kernel::Policy;
using kernel::Reason;

constexpr uint64_t kMaxPlanBytes = uint64_t{64} << 20;

struct Options {
  std::string input, policy, output, ledger, run_id;
  bool json = false;
};

Result<BuildPlan> load_plan(const std::string& path) {
  auto text = read_file(path, kMaxPlanBytes);
  if (!text) return std::unexpected(text.error());
  auto json = parse_json(*text, "plan file " + path);
  if (!json) return std::unexpected(json.error());
  auto plan = BuildPlan::from_json(*json);
  if (!plan) return std::unexpected(plan.error().with_context(path));
  return plan;
}

// --policy when given, else the plan's own.
Result<Policy> plan_policy(const Options& o, const BuildPlan& plan) {
  return Policy::load(o.policy.empty() ? plan.policy : o.policy);
}

Json reasons_json(const std::vector<Reason>& reasons) {
  Json out = Json::array();
  for (const Reason& r : reasons) out.push_back({{"code", r.code}, {"detail", r.detail}});
  return out;
}

void print_refusal(const std::vector<Reason>& reasons) {
  std::cerr << "warden: refused (PLANNING_ERROR): " << reasons.size() << (reasons.size() == 1 ? " reason\n" : " reasons\n");
  for (const Reason& r : reasons) std::cerr << "  " << r.code << ": " << r.detail << "\n";
}

int run_generate(const Options& o) {
  auto blueprint = kernel::BlueprintSpec::load(o.input);
  if (!blueprint) return report_error(blueprint.error(), o.json);
  auto policy_name = o.policy.empty() ? kernel::blueprint_policy(*blueprint) : Result<std::string>(o.policy);
  if (!policy_name) return report_error(policy_name.error(), o.json);
  auto policy = Policy::load(*policy_name);
  if (!policy) return report_error(policy.error(), o.json);
  auto plan = kernel::generate_plan(*blueprint, *policy);
  if (!plan) return report_error(plan.error(), o.json);
  std::string text = plan->to_json().dump(2) + "\n";
  if (!o.output.empty()) {
    if (Status st = write_file_atomic(o.output, text); !st) return report_error(st.error(), o.json);
  }
  auto reasons = kernel::verify_plan(*plan, *policy);
  if (o.json) {
    Json out = {{"ok", reasons.empty()}, {"plan_sha256", plan->digest().str()}, {"steps", plan->steps.size()},
                {"reasons", reasons_json(reasons)}};
    if (o.output.empty()) out["plan"] = plan->to_json();
    print_json(out);
  } else if (o.output.empty()) {
    std::cout << text;
  } else {
    std::cerr << "plan " << plan->digest().str() << ": " << plan->steps.size() << " steps written to " << o.output << "\n";
  }
  // A blueprint whose plan the policy would refuse is worth knowing before a build starts.
  if (!reasons.empty()) {
    print_refusal(reasons);
    return kVerificationFailed;
  }
  return kOk;
}

int run_verify(const Options& o) {
  auto plan = load_plan(o.input);
  if (!plan) return report_error(plan.error(), o.json);
  auto policy = plan_policy(o, *plan);
  if (!policy) return report_error(policy.error(), o.json);
  auto reasons = kernel::verify_plan(*plan, *policy);
  if (o.json) {
    Json out = {{"ok", reasons.empty()}, {"plan_sha256", plan->digest().str()}, {"policy", policy->name},
                {"steps", plan->steps.size()}, {"reasons", reasons_json(reasons)}};
    if (!reasons.empty()) out["error_type"] = "PLANNING_ERROR";
    print_json(out);
  }
  if (!reasons.empty()) {
    print_refusal(reasons);
    return kVerificationFailed;
  }
  if (!o.json) std::cout << "OK: plan " << plan->digest().str() << " (" << plan->steps.size() << " steps) satisfies policy " << policy->name << "\n";
  return kOk;
}

// The ledger at `dir`; a missing one is created as `warden ledger init` creates it, its keys
// in it (ledger/ledger_keys.h). Committing a plan signs nothing, so an existing ledger needs
// no key here.
Result<Ledger> open_or_create_ledger(const std::filesystem::path& dir, Clock& clock) {
  std::error_code ec;
  if (std::filesystem::exists(dir / "data.mdb", ec)) return Ledger::open(dir, Ledger::Mode::read_write, clock);
  auto signer = signer_for_ledger(dir, "", "warden.local/" + std::filesystem::absolute(dir).filename().string(), "--key");
  if (!signer) return std::unexpected(signer.error());
  return kernel::open_kernel_ledger(dir, *signer, clock);
}

int run_commit(const Options& o) {
  auto plan = load_plan(o.input);
  if (!plan) return report_error(plan.error(), o.json);
  auto policy = plan_policy(o, *plan);
  if (!policy) return report_error(policy.error(), o.json);
  SystemClock clock;
  auto ledger = open_or_create_ledger(o.ledger, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  std::optional<std::string> run_id;
  if (!o.run_id.empty()) run_id = o.run_id;
  auto decision = kernel::propose_plan(*ledger, *plan, *policy, run_id, kernel::PlanSource::file);
  if (!decision) return report_error(decision.error(), o.json);
  if (o.json) {
    print_json({{"ok", decision->committed()},
                {"plan_sha256", decision->plan_sha256.str()},
                {"proposal_seq", decision->proposal_seq},
                {"seq", decision->decision.seq},
                {"record_hash", decision->decision.hash.str()},
                {"kind", std::string(decision->committed() ? kernel::record_kind::plan_commit : kernel::record_kind::refusal)},
                {"reasons", reasons_json(decision->reasons)}});
  }
  if (!decision->committed()) {
    print_refusal(decision->reasons);
    std::cerr << "recorded: plan_proposal at seq " << decision->proposal_seq << ", refusal at seq " << decision->decision.seq << "\n";
    return kVerificationFailed;
  }
  if (!o.json) {
    std::cout << "committed plan " << decision->plan_sha256.str() << ": plan_proposal at seq " << decision->proposal_seq
              << ", plan_commit at seq " << decision->decision.seq << "\n";
  }
  return kOk;
}

}  // namespace

void add_plan_commands(CLI::App& app, Action& action) {
  auto* plan = app.add_subcommand("plan", "Build plans: generate one from a blueprint, verify it against a policy, commit it to a ledger");
  plan->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto bind = [&action, o](CLI::App* cmd, int (*run)(const Options&)) {
    cmd->add_flag("--json", o->json, "Print JSON");
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };
  const char* policy_help = "Policy: a builtin name (python, cpp) or a JSON file (default: the plan's own)";

  auto* generate = plan->add_subcommand(
      "generate", "Derive the BuildPlan of BLUEPRINT.json (deterministic: same blueprint, same bytes) and print it; "
                  "exit 1 if the policy would refuse it");
  generate->add_option("BLUEPRINT", o->input, "Blueprint JSON file")->required();
  generate->add_option("--policy", o->policy, "Policy: a builtin name or a JSON file (default: the blueprint's, else its language's)");
  generate->add_option("-o,--output", o->output, "Write the plan here instead of printing it");
  bind(generate, run_generate);

  auto* verify = plan->add_subcommand(
      "verify", "Check PLAN.json as the kernel would before committing it: exit 0 valid, 1 refused with every reason");
  verify->add_option("PLAN", o->input, "BuildPlan JSON file")->required();
  verify->add_option("--policy", o->policy, policy_help);
  bind(verify, run_verify);

  auto* commit = plan->add_subcommand(
      "commit", "Record PLAN.json in the ledger as a plan_proposal, verify it, and record plan_commit (exit 0) or a "
                "PLANNING_ERROR refusal (exit 1).");
  commit->add_option("PLAN", o->input, "BuildPlan JSON file")->required();
  commit->add_option("--ledger", o->ledger,
                     "Ledger directory (created when missing, with its parents and its keys, as `warden ledger init` "
                     "creates one)")
      ->required();
  commit->add_option("--policy", o->policy, policy_help);
  commit->add_option("--run-id", o->run_id, "Run id to record with the plan (default: none)");
  bind(commit, run_commit);
}

}  // namespace warden::cli
