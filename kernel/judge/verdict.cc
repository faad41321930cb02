#include "kernel/judge/verdict.h"

#include "common/json_reader.h"

namespace warden::kernel {
namespace {

Json reasons_json(const std::vector<Reason>& reasons) {
  Json out = Json::array();
  for (const Reason& r : reasons) out.push_back({{"code", r.code}, {"detail", r.detail}});
  return out;
}

// Strict: each reason an object with exactly a non-empty code and a detail; sorted by code,
// no code twice, as decide() gives them.
Status read_reasons(JsonReader& reader, const std::string& key, std::vector<Reason>& out) {
  const Json* list = reader.value(key, Json::value_t::array);
  if (!list) return {};
  for (size_t i = 0; i < list->size(); ++i) {
    JsonReader item((*list)[i], reader.path(key) + "[" + std::to_string(i) + "]");
    Reason r;
    item.string("code", r.code);
    item.string("detail", r.detail);
    if (item.ok() && r.code.empty()) item.fail("code", "must not be empty");
    if (item.ok() && !out.empty() && out.back().code >= r.code) item.fail("code", "reasons must be sorted by code, each once");
    if (auto st = item.finish(); !st) return st;
    out.push_back(std::move(r));
  }
  return {};
}

std::string_view after_colon(std::string_view code) {
  size_t colon = code.find(':');
  return colon == std::string_view::npos ? std::string_view{} : code.substr(colon + 1);
}

}  // namespace

std::vector<std::string> Verdict::reason_codes() const {
  std::vector<std::string> codes;
  for (const Reason& r : reasons) codes.push_back(r.code);
  return codes;
}

Json Verdict::to_json() const { return {{"accepted", accepted}, {"reasons", reasons_json(reasons)}}; }

Result<Verdict> Verdict::from_json(const Json& json) {
  JsonReader reader(json, "verdict");
  Verdict v;
  reader.boolean("accepted", v.accepted);
  reader.adopt(read_reasons(reader, "reasons", v.reasons));
  if (reader.ok() && v.accepted != v.reasons.empty()) {
    reader.fail("accepted", v.accepted ? "an accepted verdict has no reasons" : "a refusal needs at least one reason");
  }
  if (auto st = reader.finish(); !st) return std::unexpected(st.error());
  return v;
}

Json RefusalReport::to_json() const {
  Json evidence_json = Json::array();
  for (const Digest& d : evidence) evidence_json.push_back(d.str());
  return {{"run_id", run_id},
          {"seed_sha256", seed_sha256.str()},
          {"step_id", step_id},
          {"attempt", attempt},
          {"reasons", reasons_json(reasons)},
          {"evidence", evidence_json},
          {"policy_suggestions", policy_suggestions}};
}

Result<RefusalReport> RefusalReport::from_json(const Json& json) {
  JsonReader reader(json, "refusal_report");
  RefusalReport r;
  reader.string("run_id", r.run_id);
  reader.digest("seed_sha256", r.seed_sha256);
  reader.string("step_id", r.step_id);
  reader.integer("attempt", r.attempt, 1, kMaxCanonicalInteger);
  reader.adopt(read_reasons(reader, "reasons", r.reasons));
  std::vector<std::string> evidence;
  reader.strings("evidence", evidence);
  for (size_t i = 0; i < evidence.size() && reader.ok(); ++i) {
    auto d = Digest::parse(evidence[i]);
    if (!d) reader.fail("evidence", "[" + std::to_string(i) + "] must be sha256:<64 hex>");
    else r.evidence.push_back(*d);
  }
  reader.strings("policy_suggestions", r.policy_suggestions);
  if (auto st = reader.finish(); !st) return std::unexpected(st.error());
  return r;
}

std::string suggestion_for(const Reason& reason) {
  std::string_view code = reason.code;
  std::string why = reason.detail.empty() ? "" : " (" + reason.detail + ")";
  if (code.starts_with(reason::dependency_not_satisfied)) {
    return "wait until step " + std::string(after_colon(code)) + " is completed, then propose again";
  }
  if (code.starts_with(reason::invariant_not_proven)) {
    return "make the change satisfy invariant " + std::string(after_colon(code)) + why;
  }
  if (code == reason::step_not_in_plan) return "propose a diff for one of the committed plan's steps" + why;
  if (code == reason::step_already_completed) return "this step is done: move on to the next step of the plan";
  if (code == reason::malformed_diff) return "send a well-formed Diff with diff_sha256 and a base image of every path" + why;
  if (code == reason::hash_mismatch) {
    return "recompute before/after hashes and diff_sha256 against the current base, and anchor hunks to it" + why;
  }
  if (code == reason::content_mismatch) return "make the diff do exactly what the step asks" + why;
  if (code == reason::path_not_allowed) return "touch only paths the plan and policy allow" + why;
  if (code == reason::protected_path) return "leave protected paths (tests that judge you, CI, .git, .warden) unchanged" + why;
  if (code == reason::approval_required) return "a person must approve changes to these paths; ask for approval" + why;
  if (code == reason::diff_too_large) return "split the change or make it smaller" + why;
  if (code == reason::required_checks_failed) return "make the required checks pass; run them locally first" + why;
  if (code == reason::pass_to_pass_failed) {
    return "keep every test that passed on the base passing; fix the code, not the tests" + why;
  }
  if (code == reason::test_modified) {
    return "add new tests beside the base's ones and leave every base test and what it uses as it was; a change of what a "
           "test asserts needs a person's approval" + why;
  }
  if (code == reason::new_test_failed) return "make the tests the change adds pass, or leave out the ones that do not" + why;
  if (code == reason::held_out_failed) {
    return "make the change right for every input, not only the visible tests' (tests you cannot see judge it too)" + why;
  }
  if (code == reason::no_tests_ran) return "make the check run the project's tests (a test run of nothing proves nothing)" + why;
  if (code == reason::dangerous_operation_detected) {
    return "remove the dangerous call and use a safe alternative (no eval/exec/shell, no unbounded string copies)" + why;
  }
  if (code == reason::checkout_transform) {
    return "leave content-transforming git attributes (ident, eol, text, crlf, filter, working-tree-encoding) out of "
           ".gitattributes: the sandbox tests the committed bytes" + why;
  }
  if (code == reason::sandbox_unavailable) return "the sandbox could not run: fix the runner host, then retry" + why;
  if (code == reason::executor_timeout) return "answer within the step's time budget (a smaller change, a faster agent)" + why;
  if (code == reason::executor_failed) return "exit 0 with a Diff JSON or a git patch on stdout" + why;
  return "see the reason's detail" + why;
}

}  // namespace warden::kernel
