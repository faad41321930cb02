#include "executor/plan_proposer.h"

#include "common/encoding.h"
#include "common/sha256.h"

namespace warden::executor {

namespace {

Error bad_step(std::string message) { return Error{Errc::invalid_argument, "plan executor: " + std::move(message)}; }

}  // namespace

Result<Json> full_content_diff(std::string_view step_id, const Json& files, const Json& context) {
  if (!files.is_object()) return std::unexpected(bad_step("step content must be an object of path -> text"));
  const Json* current = nullptr;
  if (auto it = context.find("files"); it != context.end() && it->is_object()) current = &*it;
  Json changes = Json::array();
  for (const auto& [path, value] : files.items()) {  // nlohmann orders keys: deterministic
    if (!value.is_string()) return std::unexpected(bad_step("content of " + path + " must be a string"));
    const std::string& content = value.get_ref<const std::string&>();
    Json f = {{"path", path}, {"new_mode", "100644"}, {"after_sha256", sha256(content).str()}};
    if (is_valid_utf8(content)) f["after_content"] = content;
    else f["after_content_base64"] = base64_encode(content);
    const Json* now = current && current->contains(path) ? &(*current)[path] : nullptr;
    if (now && now->contains("sha256")) {
      f["op"] = "modify";
      f["old_mode"] = "100644";
      f["before_sha256"] = (*now)["sha256"];
    } else {
      f["op"] = "add";
    }
    changes.push_back(std::move(f));
  }
  Json diff = {{"step_id", std::string(step_id)}, {"files", std::move(changes)}};
  auto canonical = canonicalize(diff);
  if (!canonical) return std::unexpected(canonical.error());
  diff["diff_sha256"] = sha256(*canonical).str();
  return diff;
}

Checked<std::string> PlanProposer::propose(const ProposalRequest& request) {
  const Json& step = request.step;
  if (!step.is_object() || !step.contains("id") || !step["id"].is_string()) {
    return refuse(RefusalCode::executor_failed, "", bad_step("the step has no id").message);
  }
  const std::string& id = step["id"].get_ref<const std::string&>();
  const int64_t refused = [&] {
    std::lock_guard lock(mu_);
    return refusals_[id];
  }();
  const Json* files = nullptr;
  if (auto drafts = step.find("drafts"); drafts != step.end() && drafts->is_array() &&
                                         refused < static_cast<int64_t>(drafts->size())) {
    files = &(*drafts)[static_cast<size_t>(refused)];
  } else if (auto content = step.find("content"); content != step.end() && content->is_object()) {
    files = &*content;
  }
  if (!files) return refuse(RefusalCode::executor_failed, "", bad_step("step " + id + " has no content to propose").message);
  auto diff = full_content_diff(id, *files, request.context);
  if (!diff) return refuse(RefusalCode::executor_failed, "", diff.error().message);
  return diff->dump();
}

void PlanProposer::learn(const Json& refusal) {
  if (!refusal.is_object()) return;
  const std::string step_id = refusal.value("step_id", std::string());
  std::lock_guard lock(mu_);
  ++refusals_[step_id];
}

}  // namespace warden::executor
