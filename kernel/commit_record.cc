#include "kernel/commit_record.h"

#include "common/json_reader.h"

namespace warden {
namespace {

constexpr uint64_t kMaxCanonical = static_cast<uint64_t>(kMaxCanonicalInteger);

void git_id(JsonReader& r, const std::string& key, std::string& out) {
  r.string(key, out);
  if (r.ok() && !is_git_object_id(out)) r.fail(key, "must be a git object id (40 lowercase hex characters)");
}

}  // namespace

bool is_git_object_id(std::string_view text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Json CommitRecord::to_json() const {
  return {{"run_id", run_id},
          {"step_id", step_id},
          {"attempt", attempt},
          {"commit", commit},
          {"tree", tree},
          {"parent", parent},
          {"branch", branch},
          {"plan_sha256", plan_sha256.str()},
          {"proposal_sha256", proposal_sha256.str()},
          {"run_result_sha256", run_result_sha256.str()},
          {"policy_sha256", policy_sha256.str()},
          {"decision_seq", decision_seq}};
}

Result<CommitRecord> CommitRecord::from_json(const Json& json, std::string_view where) {
  CommitRecord c;
  JsonReader r(json, std::string(where));
  r.string("run_id", c.run_id);
  if (r.ok() && c.run_id.empty()) r.fail("run_id", "must not be empty");
  r.string("step_id", c.step_id);
  if (r.ok() && c.step_id.empty()) r.fail("step_id", "must not be empty");
  r.unsigned_integer("attempt", c.attempt, 0, kMaxCanonical);
  git_id(r, "commit", c.commit);
  git_id(r, "tree", c.tree);
  git_id(r, "parent", c.parent);
  r.string("branch", c.branch);
  if (r.ok() && (!c.branch.starts_with("refs/heads/") || c.branch.size() == 11)) {
    r.fail("branch", "must be a full branch ref (refs/heads/NAME)");
  }
  r.digest("plan_sha256", c.plan_sha256);
  r.digest("proposal_sha256", c.proposal_sha256);
  r.digest("run_result_sha256", c.run_result_sha256);
  r.digest("policy_sha256", c.policy_sha256);
  r.unsigned_integer("decision_seq", c.decision_seq, 0, kMaxCanonical);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return c;
}

}  // namespace warden
