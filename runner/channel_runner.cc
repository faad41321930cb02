#include "runner/channel_runner.h"

#include <cstdio>
#include <set>

#include "common/encoding.h"
#include "common/random_source.h"
#include "runner/local_runner.h"

namespace warden {
namespace {

std::unexpected<Refusal> runner_failed(std::string detail) { return refuse(RefusalCode::runner_error, "", std::move(detail)); }

}  // namespace

ChannelRunner::ChannelRunner(UniqueFd socket, SandboxProfile profile, bool host_independent, RunnerQuorum quorum)
    : socket_(std::move(socket), kMaxLineBytes, "runner"),
      profile_(profile.to_json()),
      host_independent_(host_independent),
      quorum_(quorum) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(SystemRandomSource().next_u64()));
  nonce_ = hex;
}

ChannelRunner::~ChannelRunner() { socket_.send_now("{\"type\":\"end\"}\n"); }

Checked<RunOutcome> ChannelRunner::run(GitRepo& repo, const RunRequest& request) {
  auto tree = LocalRunner::tree_under_test(repo, request);
  if (!tree) return std::unexpected(tree.error());
  RemoteRunRequest sent;
  sent.base_tree = request.base_tree.hex();
  sent.tree = tree->hex();
  if (request.diff) sent.diff = request.diff->to_json();
  sent.checks = request.checks;
  sent.profile = profile_;
  sent.reuse = request.reuse;
  sent.host_independent = host_independent_;
  // Checks bound their own time; only a stop ends the wait.
  const auto forever = std::chrono::steady_clock::now() + std::chrono::hours(24 * 365);
  std::string id;
  // Called with io_mu_ held: this request is given up.
  auto stopped = [&](const LineFailure& f) {
    waiting_.erase(id);
    if (f.kind != LineFailure::Kind::closed) socket_.send_now(Json{{"type", "cancel"}, {"request_id", id}}.dump() + "\n");
    return runner_failed(f.detail);
  };
  {
    std::lock_guard io(io_mu_);
    if (socket_.broken()) return runner_failed(*socket_.broken());
    id = nonce_ + "-" + std::to_string(next_request_++);
    Json line = {{"type", "run"}, {"request_id", id}, {"request", sent.to_json()}};
    if (!quorum_.single()) line["quorum"] = quorum_.to_json();
    waiting_.insert(id);
    if (auto ok = socket_.send(line.dump() + "\n", forever, request.stop); !ok) return stopped(ok.error());
  }
  for (;;) {
    std::optional<Json> got;
    {
      std::lock_guard io(io_mu_);
      if (auto it = arrived_.find(id); it != arrived_.end()) {
        got = std::move(it->second);
        arrived_.erase(it);
      } else {
        // A slice, so another caller can send or take its answer between reads.
        auto text = socket_.read(std::chrono::steady_clock::now() + std::chrono::milliseconds(20), request.stop);
        if (!text) {
          if (text.error().kind == LineFailure::Kind::timed_out) continue;
          return stopped(text.error());
        }
        auto parsed = parse_json(*text, "the runner channel's answer");
        if (!parsed || !parsed->is_object()) {
          waiting_.erase(id);
          return runner_failed(socket_.close("the runner channel sent a line that is not a JSON object").detail);
        }
        auto rid = parsed->find("request_id");
        if (rid == parsed->end() || !rid->is_string()) {
          waiting_.erase(id);
          return runner_failed(socket_.close("the runner channel sent an answer without a request_id").detail);
        }
        const std::string of = rid->get<std::string>();
        if (of == id) {
          got = std::move(*parsed);
        } else if (waiting_.contains(of)) {
          arrived_[of] = std::move(*parsed);  // another caller's, kept for it
        }  // else a late answer to a request that was given up
      }
      if (got) waiting_.erase(id);
    }
    // Checked outside the lock: the other callers keep reading meanwhile.
    if (got) return answer(repo, sent, id, *got);
  }
}

Checked<RunOutcome> ChannelRunner::answer(GitRepo& repo, const RemoteRunRequest& sent, const std::string& id, const Json& line) {
  const std::string type = line.value("type", "");
  if (type == "error") {
    const Json* why = line.contains("error") && line["error"].is_string() ? &line["error"] : nullptr;
    return runner_failed("remote runners: " + (why ? why->get<std::string>() : std::string("(no reason given)")));
  }
  if (type != "result") return runner_failed("the runner channel answered with type \"" + type + "\"");
  auto bad = [](const std::string& what) { return runner_failed("the runner channel's result: " + what); };
  if (!line.contains("run_result") || !line.contains("bodies") || !line["bodies"].is_object() || !line.contains("attestations") ||
      !line["attestations"].is_array()) {
    return bad("needs run_result, bodies (an object) and attestations (an array)");
  }
  auto result = RunResult::from_json(line["run_result"]);
  if (!result) return bad(result.error().message);
  RunOutcome outcome;
  for (const auto& [name, encoded] : line["bodies"].items()) {
    auto digest = Digest::parse(name);
    if (!digest || !encoded.is_string()) return bad("bodies: " + name + " is not a digest with a base64 string");
    auto bytes = base64_decode(encoded.get_ref<const std::string&>());
    if (!bytes) return bad("bodies: " + name + ": " + bytes.error().message);
    outcome.bodies.emplace(*digest, std::move(*bytes));
  }
  const Digest digest = result->deterministic_digest();
  std::set<std::string> agents, owners;
  std::string who;
  for (const Json& j : line["attestations"]) {
    auto a = ResultAttestation::from_json(j);
    if (!a) return bad(a.error().message);
    const bool ours = quorum_.single() ? a->task_id == id
                                       : a->task_id.size() == id.size() + 3 && a->task_id.starts_with(id + ".q");
    if (!ours) return bad("an attestation names task " + a->task_id + ", not " + id);
    if (Status st = verify_attestation(*a, digest); !st) return runner_failed(st.error().message);
    if (!agents.insert(a->agent_id).second || !owners.insert(a->owner).second) {
      return bad("runner " + a->agent_id + " (" + a->owner + ") counts twice; a quorum's runners are of distinct identities");
    }
    who += (who.empty() ? "runner " : ", ") + a->agent_id + " (" + a->owner + ")";
    outcome.attestations.push_back(std::move(*a));
  }
  if (outcome.attestations.size() < quorum_.k || outcome.attestations.empty()) {
    return bad(std::to_string(outcome.attestations.size()) + " runners signed it; the quorum is " + std::to_string(quorum_.k) +
               " of " + std::to_string(quorum_.n));
  }
  Status checked = [&] {
    std::lock_guard memo(memo_mu_);
    return check_remote_result(repo, sent, *result, outcome.bodies, memo_);
  }();
  if (!checked) return runner_failed(who + ": " + checked.error().message);
  outcome.result = std::move(*result);
  return outcome;
}

}  // namespace warden
