#include "kernel/record/replan.h"

#include "common/encoding.h"
#include "kernel/record/records.h"

namespace warden::kernel {

Json replan_request(const BuildPlan& plan, const std::string& failed_step, const std::set<std::string>& completed,
                    const Json& refusals) {
  Json done = Json::array();
  for (const auto& id : completed) done.push_back(id);
  return {{"plan", plan.to_json()}, {"failed_step", failed_step}, {"completed_steps", done}, {"refusals", refusals}};
}

void keep_kernel_fields(const BuildPlan& current, BuildPlan& p) {
  p.name = current.name;
  p.blueprint_sha256 = current.blueprint_sha256;
  p.language = current.language;
  p.policy = current.policy;
  p.branch = current.branch;
  p.intent = current.intent;
  p.allowed_paths = current.allowed_paths;
  p.invariants = current.invariants;
  p.checks = current.checks;
  p.max_retries = current.max_retries;
  p.max_replans = current.max_replans;
  p.step_timeout_ms = current.step_timeout_ms;
  p.merge_queue_depth = current.merge_queue_depth;
  // An executor's plan cannot drop the tests it is not to see, nor rename the steps they judge
  // away from them: in a replacement plan they judge every step.
  p.held_out = current.held_out;
  if (p.held_out) p.held_out->steps.clear();
  std::vector<std::string> every_step;
  for (const auto& s : p.steps) every_step.push_back(s.id);
  p.verification_checkpoints = current.verification_checkpoints;
  for (auto& cp : p.verification_checkpoints) cp.after = every_step;
}

Status record_unreadable_plan(RunRecorder& rec, const std::string& text, const std::string& why) {
  std::string kept = is_valid_utf8(text) ? text : base64_encode(text);
  auto blob = rec.ledger().put_blob(kept);
  if (!blob) return std::unexpected(blob.error());
  PlanRefusalRecord refusal;
  refusal.run_id = rec.run_id();
  refusal.plan_sha256 = sha256(text);
  refusal.plan_blob = Digest::parse(*blob).value();
  refusal.reasons.push_back({"plan_malformed", why});
  (void)rec.record(refusal);
  return {};
}

}  // namespace warden::kernel
