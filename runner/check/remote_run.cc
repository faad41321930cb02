#include "runner/check/remote_run.h"

#include <algorithm>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/json_reader.h"
#include "diff/diff.h"
#include "runner/check/check_verdict.h"
#include "runner/model/sandbox_profile.h"

namespace warden {
namespace {

Status mismatch(std::string what) { return fail(Errc::verification_failed, "the runner's result " + std::move(what)); }

bool is_hex(std::string_view s, size_t size) {
  return s.size() == size && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace


Json RemoteRunRequest::to_json() const {
  Json checks_json = Json::array();
  for (const CheckSpec& c : checks) checks_json.push_back(c.to_json());
  Json j = {{"base_tree", base_tree}, {"tree", tree}, {"checks", checks_json}, {"profile", profile},
            {"reuse", reuse}, {"host_independent", host_independent}};
  if (diff) j["diff"] = *diff;
  if (environment) j["environment"] = environment->str();
  return j;
}

Result<RemoteRunRequest> RemoteRunRequest::from_json(const Json& json) {
  JsonReader r(json, "run request");
  RemoteRunRequest q;
  r.string("base_tree", q.base_tree);
  r.string("tree", q.tree);
  r.boolean("reuse", q.reuse);
  r.boolean("host_independent", q.host_independent);
  if (const Json* p = r.value("profile", Json::value_t::object)) q.profile = *p;
  if (const Json* d = r.value("diff", Json::value_t::object, /*required=*/false)) q.diff = *d;
  r.optional_digest("environment", q.environment);
  if (const Json* list = r.value("checks", Json::value_t::array)) {
    for (size_t i = 0; i < list->size() && r.ok(); ++i) {
      auto spec = CheckSpec::from_json((*list)[i], "run request.checks[" + std::to_string(i) + "]");
      if (!spec) {
        r.adopt(std::unexpected(spec.error()));
        break;
      }
      q.checks.push_back(std::move(*spec));
    }
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  for (const std::string* id : {&q.base_tree, &q.tree}) {
    if (!is_hex(*id, 40)) return fail(Errc::invalid_argument, "run request: \"" + *id + "\" is not a 40-hex git object id");
  }
  if (q.checks.empty()) return fail(Errc::invalid_argument, "run request: no checks");
  if (auto profile = SandboxProfile::from_json(q.profile); !profile) {
    return std::unexpected(profile.error().with_context("run request.profile"));
  }
  if (q.diff) {
    if (auto diff = Diff::from_json(*q.diff); !diff) return fail(Errc::invalid_argument, "run request.diff: " + diff.error().message());
  }
  return q;
}


Status check_remote_result(GitRepo& repo, const RemoteRunRequest& request, const RunResult& result,
                           const RunBodies& bodies, HashMemo& memo) {
  if (result.tree != request.tree) return mismatch("names tree " + result.tree + ", not the tree under test " + request.tree);
  // As LocalRunner describes a request: a base only when the tree is not the base itself.
  const bool has_base = request.diff || request.tree != request.base_tree;
  if (result.base_tree != (has_base ? std::optional<std::string>(request.base_tree) : std::nullopt)) {
    return mismatch("names base tree " + result.base_tree.value_or("(none)") + ", not " +
                    (has_base ? request.base_tree : std::string("(none)")));
  }
  std::optional<Digest> diff_sha256;
  if (request.diff) {
    auto diff = Diff::from_json(*request.diff);
    if (!diff) return fail(Errc::invalid_argument, "the request's diff: " + diff.error().message());
    diff_sha256 = diff->digest();
  }
  if (result.diff_sha256 != diff_sha256) return mismatch("names another diff than the one it was sent");
  auto profile = SandboxProfile::from_json(request.profile);
  if (!profile) return std::unexpected(profile.error());
  if (result.profile_sha256 != profile->digest() || result.profile != profile->name) {
    return mismatch("was not run in the profile it was sent (" + profile->name + ", " + profile->digest().str() + ")");
  }
  if (result.environment != request.environment) {
    return mismatch("names another environment than the one it was sent (" +
                    (request.environment ? request.environment->str() : std::string("none: the runner's /usr")) + ")");
  }
  if (!result.preflight.ok) return mismatch("comes from a sandbox whose preflight failed: " + result.preflight.failures());
  if (result.checks.size() != request.checks.size()) {
    return mismatch("holds " + std::to_string(result.checks.size()) + " checks, not the " +
                    std::to_string(request.checks.size()) + " it was sent");
  }
  for (size_t i = 0; i < request.checks.size(); ++i) {
    const CheckSpec& spec = request.checks[i];
    if (result.checks[i].name != spec.name || result.checks[i].spec_sha256 != spec.digest()) {
      return mismatch("check " + std::to_string(i + 1) + " (" + result.checks[i].name + ") is not the check " + spec.name +
                      " it was sent");
    }
  }
  // The verdicts follow from the recorded runs by the rules every runner applies
  // (check_verdict.h): a runner may lie about what a run did, which a quorum catches, but not
  // about what its own evidence means.
  for (size_t i = 0; i < request.checks.size(); ++i) {
    const CheckSpec& spec = request.checks[i];
    const CheckResult& c = result.checks[i];
    if (static_cast<int64_t>(c.runs.size()) != spec.runs) {
      return mismatch("holds " + std::to_string(c.runs.size()) + " runs of check " + spec.name + ", whose spec asks for " +
                      std::to_string(spec.runs));
    }
    for (size_t j = 0; j < c.runs.size(); ++j) {
      const std::string derived = judge_run(c.runs[j], spec);
      if (derived != c.runs[j].outcome) {
        return mismatch("gives run " + std::to_string(j + 1) + " of check " + spec.name + " the outcome \"" + c.runs[j].outcome +
                        "\"; its evidence gives \"" + derived + "\"");
      }
    }
    CheckResult judged = c;
    judge_check(judged, spec);
    if (judged.verdict != c.verdict) {
      return mismatch("gives check " + spec.name + " the verdict \"" + c.verdict + "\"; its runs give \"" + judged.verdict + "\"");
    }
    if (judged.tests != c.tests || judged.judgement != c.judgement) {
      return mismatch("gives check " + spec.name + " tests or a judgement its runs do not");
    }
  }
  if (prove_invariants(request.checks, result.checks) != result.invariants) {
    return mismatch("names invariants (proven or not) that its checks' verdicts do not give");
  }
  auto tree = ObjectId::parse(request.tree);
  if (!tree) return fail(Errc::invalid_argument, tree.error().message());
  auto hash = tree_sha256(repo, *tree, memo);
  if (!hash) return fail(Errc::io_error, "hashing tree " + request.tree + ": " + hash.error().message());
  if (result.tree_sha256 != *hash) return mismatch("gives tree hash " + result.tree_sha256.str() + "; the tree's is " + hash->str());
  const std::vector<Digest> named = result.named_blobs();
  for (const Digest& d : named) {
    auto it = bodies.find(d);
    if (it == bodies.end()) return mismatch("names blob " + d.str() + " but did not send it");
    if (sha256(it->second) != d) return mismatch("sent bytes under " + d.str() + " that hash to " + sha256(it->second).str());
  }
  for (const auto& [d, bytes] : bodies) {
    if (!std::binary_search(named.begin(), named.end(), d)) return mismatch("sent blob " + d.str() + ", which it does not name");
  }
  return {};
}

}  // namespace warden
