#include "runner/check/channel_runner.h"

#include <fcntl.h>

#include <cstdio>
#include <set>

#include "common/encoding.h"
#include "common/random_source.h"
#include "runner/check/local_runner.h"

namespace warden {
namespace {

std::unexpected<Refusal> runner_failed(std::string detail) { return refuse(RefusalCode::runner_error, "", std::move(detail)); }

// The socket's second descriptor, for the senders (the reader keeps the first).
UniqueFd dup_of(const UniqueFd& fd) { return UniqueFd(fd ? ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0) : -1); }

}  // namespace

ChannelRunner::ChannelRunner(UniqueFd socket, SandboxProfile profile, bool host_independent, RunnerQuorum quorum,
                             std::optional<Digest> environment)
    : profile_(profile.to_json()),
      host_independent_(host_independent),
      environment_(environment),
      quorum_(quorum),
      out_(dup_of(socket), kMaxLineBytes, "runner"),
      in_(std::move(socket), kMaxLineBytes, "runner") {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(SystemRandomSource().next_u64()));
  nonce_ = hex;
  reader_ = std::jthread([this](std::stop_token stop) { read_lines(stop); });
}

ChannelRunner::~ChannelRunner() {
  {
    std::lock_guard lock(send_mu_);
    out_.send_now("{\"type\":\"end\"}\n");
  }
  reader_.request_stop();
  reader_.join();
}

void ChannelRunner::read_lines(std::stop_token stop) {
  const auto forever = std::chrono::steady_clock::now() + std::chrono::hours(24 * 365);
  std::string why;
  for (;;) {
    auto text = in_.read(forever, stop);
    if (!text) {
      why = text.error().detail;
      break;
    }
    auto parsed = parse_json(*text, "the runner channel's answer");
    // A line that is not an answer ends the channel both ways: the server reads EOF and
    // drops this build's tasks rather than sending results no one reads.
    if (!parsed || !parsed->is_object()) {
      in_.shutdown();
      why = "the runner channel sent a line that is not a JSON object";
      break;
    }
    auto rid = parsed->find("request_id");
    if (rid == parsed->end() || !rid->is_string()) {
      in_.shutdown();
      why = "the runner channel sent an answer without a request_id";
      break;
    }
    const std::string id = rid->get<std::string>();
    {
      std::lock_guard lock(mu_);
      // Its caller's, once: a late answer to a request given up, or a second answer, is dropped.
      if (waiting_.erase(id)) arrived_.emplace(id, std::move(*parsed));
    }
    cv_.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    closed_ = why;
  }
  cv_.notify_all();
}

std::expected<void, LineFailure> ChannelRunner::send(const std::string& line) {
  // Never cut short by one caller's stop: half a line would break the channel for every other
  // job of the build. A server that takes nothing for this long is gone, and breaks it anyway.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::lock_guard lock(send_mu_);
  return out_.send(line, deadline, {});
}

Checked<RunOutcome> ChannelRunner::run(GitRepo& repo, const RunRequest& request) {
  if (request.sealed()) {
    return std::unexpected(Refusal{RefusalCode::sandbox_unavailable, "",
                                   "held-out checks run on this host's sandbox only: remote runners are not given the bundle"});
  }
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
  sent.environment = environment_;
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (closed_) return runner_failed(*closed_);
    id = nonce_ + "-" + std::to_string(next_request_++);
  }
  Json line = {{"type", "run"}, {"request_id", id}, {"request", sent.to_json()}};
  if (!quorum_.single()) line["quorum"] = quorum_.to_json();
  // Waiting before the line goes, so an answer that comes at once finds its caller.
  const std::string text = line.dump() + "\n";
  {
    std::lock_guard lock(mu_);
    waiting_.insert(id);
  }
  auto give_up = [&](const std::string& why, bool tell) {
    {
      std::lock_guard lock(mu_);
      waiting_.erase(id);
      arrived_.erase(id);
    }
    if (tell) {
      // Without waiting: a server too slow to take it reads the cancel from EOF at the end.
      std::lock_guard send_lock(send_mu_);
      out_.send_now(Json{{"type", "cancel"}, {"request_id", id}}.dump() + "\n");
    }
    return runner_failed(why);
  };
  if (auto ok = send(text); !ok) return give_up(ok.error().detail, false);
  if (request.stop.stop_requested()) return give_up("stopped while waiting for the runner", true);
  std::unique_lock lock(mu_);
  const bool answered = cv_.wait(lock, request.stop, [&] { return arrived_.contains(id) || closed_.has_value(); });
  if (!answered) {
    lock.unlock();
    return give_up("stopped while waiting for the runner", true);
  }
  auto it = arrived_.find(id);
  if (it == arrived_.end()) {
    const std::string why = *closed_;
    waiting_.erase(id);
    return runner_failed(why);
  }
  Json got = std::move(it->second);
  arrived_.erase(it);
  lock.unlock();
  return answer(repo, sent, id, got);
}

Checked<RunOutcome> ChannelRunner::answer(GitRepo& repo, const RemoteRunRequest& sent, const std::string& id, const Json& line) {
  const std::string type = line.contains("type") && line["type"].is_string() ? line["type"].get<std::string>() : "";
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
