#include "runner/remote_run.h"

#include <algorithm>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/json_reader.h"
#include "diff/diff.h"
#include "runner/check_verdict.h"
#include "runner/sandbox_profile.h"

namespace warden {
namespace {

Status mismatch(std::string what) { return fail(Errc::verification_failed, "the runner's result " + std::move(what)); }

bool is_hex(std::string_view s, size_t size) {
  return s.size() == size && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

Result<RunnerQuorum> RunnerQuorum::make(uint32_t k, uint32_t n) {
  if (k < 1 || n < k || n > 9 || 2 * k <= n) {
    return fail(Errc::invalid_argument, "runner quorum " + std::to_string(k) + "/" + std::to_string(n) +
                                            ": needs 1 <= k <= n <= 9 and k more than half of n");
  }
  return RunnerQuorum{k, n};
}

Result<RunnerQuorum> RunnerQuorum::from_json(const Json& json) {
  JsonReader r(json, "runner_quorum");
  uint64_t k = 0, n = 0;
  r.unsigned_integer("k", k, 1, 9);
  r.unsigned_integer("n", n, 1, 9);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return make(static_cast<uint32_t>(k), static_cast<uint32_t>(n));
}

Result<RunnerQuorum> RunnerQuorum::parse(std::string_view text) {
  const size_t slash = text.find('/');
  auto number = [](std::string_view digits) -> std::optional<uint32_t> {
    if (digits.size() != 1 || digits[0] < '0' || digits[0] > '9') return std::nullopt;
    return static_cast<uint32_t>(digits[0] - '0');
  };
  auto k = slash == std::string_view::npos ? std::nullopt : number(text.substr(0, slash));
  auto n = slash == std::string_view::npos ? std::nullopt : number(text.substr(slash + 1));
  if (!k || !n) return fail(Errc::invalid_argument, "runner quorum \"" + std::string(text) + "\": expected K/N, such as 2/3");
  return make(*k, *n);
}

Json RemoteRunRequest::to_json() const {
  Json checks_json = Json::array();
  for (const CheckSpec& c : checks) checks_json.push_back(c.to_json());
  Json j = {{"base_tree", base_tree}, {"tree", tree}, {"checks", checks_json}, {"profile", profile},
            {"reuse", reuse}, {"host_independent", host_independent}};
  if (diff) j["diff"] = *diff;
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

Json ResultAttestation::to_json() const {
  return {{"agent_id", agent_id}, {"owner", owner}, {"key", key}, {"task_id", task_id}, {"nonce", nonce}, {"signature", signature}};
}

Result<ResultAttestation> ResultAttestation::from_json(const Json& json) {
  JsonReader r(json, "runner attestation");
  ResultAttestation a;
  r.string("agent_id", a.agent_id);
  r.string("owner", a.owner);
  r.string("key", a.key);
  r.string("task_id", a.task_id);
  r.string("nonce", a.nonce);
  r.string("signature", a.signature);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  if (a.agent_id.empty() || a.task_id.empty()) return fail(Errc::invalid_argument, "runner attestation: an empty agent_id or task_id");
  if (!is_hex(a.key, 64) || !is_hex(a.nonce, 64) || !is_hex(a.signature, 128)) {
    return fail(Errc::invalid_argument, "runner attestation: key, nonce and signature must be 64, 64 and 128 lowercase hex");
  }
  return a;
}

std::string attestation_message(std::string_view agent_id, std::string_view task_id, std::string_view nonce,
                                 const Digest& result_digest) {
  std::string m = "warden-runner-result-v1\n";
  m.append(agent_id).append("\n").append(task_id).append("\n").append(nonce).append("\n").append(result_digest.str());
  return m;
}

Status verify_attestation(const ResultAttestation& a, const Digest& result_digest) {
  auto key_bytes = from_hex(a.key);
  auto signature = from_hex(a.signature);
  if (!key_bytes || key_bytes->size() != 32 || !signature) {
    return fail(Errc::verification_failed, "runner " + a.agent_id + ": a malformed key or signature");
  }
  Ed25519PublicKey key{};
  std::copy(key_bytes->begin(), key_bytes->end(), key.begin());
  if (!ed25519_verify(key, attestation_message(a.agent_id, a.task_id, a.nonce, result_digest), *signature)) {
    return fail(Errc::verification_failed, "runner " + a.agent_id + ": the signature is not its key's over this result of task " +
                                               a.task_id);
  }
  return {};
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
