// RemoteRunners' side of the builds (remote_runners_internal.h): each `warden build` child's
// channel and its reader, the requests it queues (one task, or a quorum's members), the votes
// that settle a quorum, and what a settled or expired task tells the child.
#include "service/remote_runners.h"

#include <fcntl.h>
#include <algorithm>
#include <iterator>
#include <sys/socket.h>

#include "common/fail_point.h"
#include "common/line_socket.h"
#include "service/remote_runners_internal.h"
#include "supervisor/supervisor.h"

namespace warden::service {
namespace {

// Lines from the child: a run request is a RemoteRunRequest, at most a task's payload.
constexpr size_t kMaxRequestLine = size_t{2} << 20;
// An answer the child does not take within this long is lost with its channel.
constexpr auto kAnswerWait = std::chrono::seconds(30);

std::chrono::steady_clock::time_point forever() { return std::chrono::steady_clock::now() + std::chrono::hours(24 * 365); }

}  // namespace

using detail::error_line;
using detail::printable;

void RemoteRunners::send(Channel& channel, const Json& line) {
  std::lock_guard out(channel.out_mu);
  if (!channel.out || channel.out->broken()) return;
  if (!channel.out->send(line.dump() + "\n", std::chrono::steady_clock::now() + kAnswerWait, {})) channel.out->shutdown();
}

RemoteRunners::RemoteRunners(Fleet& fleet, RandomSource& random) : fleet_(fleet), random_(random) {}

RemoteRunners::~RemoteRunners() { shutdown(); }

Result<UniqueFd> RemoteRunners::open(std::filesystem::path repo) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return std::unexpected(errno_error("socketpair", errno));
  UniqueFd ours(fds[0]), theirs(fds[1]);
  UniqueFd ours_out(::fcntl(ours.get(), F_DUPFD_CLOEXEC, 3));
  if (!ours_out) return std::unexpected(errno_error("dup", errno));
  std::vector<std::shared_ptr<Channel>> ended;  // joined below, outside mu_
  {
    std::lock_guard lock(mu_);
    if (stopping_) return fail(Errc::io_error, "the server is stopping: no new runs");
    auto keep = std::partition(channels_.begin(), channels_.end(), [](const auto& c) { return !c->done.load(); });
    std::move(keep, channels_.end(), std::back_inserter(ended));
    channels_.erase(keep, channels_.end());
    auto channel = std::make_shared<Channel>();
    channel->repo = std::move(repo);
    channel->in = std::make_unique<LineSocket>(std::move(ours), kMaxRequestLine, "build");
    channel->out = std::make_unique<LineSocket>(std::move(ours_out), kMaxRequestLine, "build");
    channels_.push_back(channel);
    channel->reader = std::thread([this, channel] { read_channel(channel); });
  }
  for (auto& c : ended) c->reader.join();
  return theirs;
}

void RemoteRunners::shutdown() {
  std::vector<Channel*> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& c : channels_) all.push_back(c.get());
    cv_.notify_all();
  }
  for (Channel* c : all) {
    c->stop.request_stop();
    if (c->reader.joinable()) c->reader.join();
  }
}

void RemoteRunners::read_channel(std::shared_ptr<Channel> shared) {
  Channel& channel = *shared;
  for (;;) {
    auto text = channel.in->read(forever(), channel.stop.get_token());
    if (!text) break;
    auto line = parse_json(*text, "the build's line");
    if (!line || !line->is_object() || !line->contains("request_id") || !(*line)["request_id"].is_string()) break;
    const std::string type = line->value("type", "");
    const std::string id = (*line)["request_id"].get<std::string>();
    if (type == "cancel") {
      std::lock_guard lock(mu_);
      for (auto& [task, p] : pending_) {
        const std::string& of = p.quorum ? p.quorum->request_id : task;
        if (of == id && p.channel == shared) p.channel = nullptr;
      }
      continue;
    }
    if (type != "run") break;
    auto request = line->contains("request") ? RemoteRunRequest::from_json((*line)["request"])
                                             : Result<RemoteRunRequest>(fail(Errc::invalid_argument, "no request"));
    auto rule = !request ? Result<RunnerQuorum>(std::unexpected(request.error()))
                : line->contains("quorum") ? RunnerQuorum::from_json((*line)["quorum"])
                                           : Result<RunnerQuorum>(RunnerQuorum{});
    Status queued = rule ? queue(shared, id, *request, *rule) : Status(std::unexpected(rule.error()));
    if (!queued) {
      send(channel, error_line(id, "the task could not be queued: " + queued.error().message));
      continue;
    }
    fail_point("server.task_queued");
    fleet_.wake();
  }
  // The child is done (or gone): nobody waits for its tasks; their claims are acked unrun.
  {
    std::lock_guard lock(mu_);
    for (auto& [id, p] : pending_) {
      if (p.channel == shared) p.channel = nullptr;
    }
  }
  {
    std::lock_guard out(channel.out_mu);
    channel.out.reset();
  }
  channel.in.reset();
  channel.done = true;
}

Status RemoteRunners::queue(const std::shared_ptr<Channel>& channel, const std::string& id, const RemoteRunRequest& request,
                            const RunnerQuorum& rule) {
  const std::string payload = request.to_json().dump();
  std::lock_guard lock(mu_);
  if (rule.single()) {
    // Pending first: the loop may assign the task the moment it is in the store.
    if (!pending_.try_emplace(id, Pending{channel, request, nullptr}).second) {
      return fail(Errc::already_exists, "request " + id + " is already queued");
    }
    Status queued = fleet_.store().enqueue(store::Task{id, 0, fleet_.runner_task_kind(), payload, fleet_.now_ms()});
    if (!queued) pending_.erase(id);
    return queued;
  }
  // The identities of the runners connected here, in name order: the first n serve.
  std::set<std::string> owners;
  for (const auto& [agent, mailbox] : mailboxes_) {
    if (!fleet_.runner_task_kind(mailbox->owner).empty()) owners.insert(mailbox->owner);
  }
  if (owners.size() < rule.n) {
    return fail(Errc::failed_precondition, "a quorum of " + std::to_string(rule.k) + " of " + std::to_string(rule.n) +
                                               " needs runners of " + std::to_string(rule.n) + " identities; " +
                                               std::to_string(owners.size()) + " are connected");
  }
  auto quorum = std::make_shared<Quorum>(Quorum{rule, id, {}, std::nullopt});
  auto owner = owners.begin();
  for (uint32_t i = 1; i <= rule.n; ++i, ++owner) {
    const std::string member = id + ".q" + std::to_string(i);
    if (!pending_.try_emplace(member, Pending{channel, request, quorum}).second) {
      close_quorum_locked(quorum);
      return fail(Errc::already_exists, "request " + id + " is already queued");
    }
    if (Status st = fleet_.store().enqueue(store::Task{member, 0, fleet_.runner_task_kind(*owner), payload, fleet_.now_ms()});
        !st) {
      close_quorum_locked(quorum);
      return st;
    }
  }
  return {};
}

void RemoteRunners::close_quorum_locked(const std::shared_ptr<Quorum>& quorum) {
  for (auto& [task, p] : pending_) {
    if (p.quorum == quorum) p.channel = nullptr;
  }
}

RemoteRunners::Settled RemoteRunners::vote_locked(Pending pending, Quorum::Vote vote) {
  Settled out;
  const std::shared_ptr<Quorum>& q = pending.quorum;
  if (!q) {
    out.tell = pending.channel;
    out.line = {{"type", "result"}, {"request_id", vote.attestation.value("task_id", "")}, {"run_result", std::move(vote.run_result)},
                {"bodies", std::move(vote.bodies)}, {"attestations", Json::array({std::move(vote.attestation)})}};
    return out;
  }
  if (!pending.channel) {
    // Settled already (or nobody waits): a result other than the agreed one is a dissent.
    if (q->decided && vote.digest != *q->decided) {
      out.fail.emplace_back(vote.agent_id, "its result for task " + vote.attestation.value("task_id", "") + " (" + vote.digest.str() +
                                               ") disagrees with the quorum's " + q->decided->str());
    }
    return out;
  }
  q->votes.push_back(std::move(vote));
  std::map<Digest, uint32_t> tally;
  for (const auto& v : q->votes) ++tally[v.digest];
  for (const auto& [digest, count] : tally) {
    if (count < q->rule.k) continue;
    q->decided = digest;
    Json attestations = Json::array();
    const Quorum::Vote* agreed = nullptr;
    for (auto& v : q->votes) {
      if (v.digest == digest) {
        attestations.push_back(v.attestation);
        agreed = &v;
      } else {
        out.fail.emplace_back(v.agent_id, "its result for task " + v.attestation.value("task_id", "") + " (" + v.digest.str() +
                                              ") disagrees with the quorum's " + digest.str());
      }
    }
    out.tell = pending.channel;
    out.line = {{"type", "result"}, {"request_id", q->request_id}, {"run_result", agreed->run_result}, {"bodies", agreed->bodies},
                {"attestations", std::move(attestations)}};
    close_quorum_locked(q);
    return out;
  }
  if (q->votes.size() == q->rule.n) {
    std::string counts;
    for (const auto& v : q->votes) counts += (counts.empty() ? "" : ", ") + v.agent_id + " " + v.digest.str();
    out.tell = pending.channel;
    out.line = error_line(q->request_id, "the runners disagree: no result has " + std::to_string(q->rule.k) + " of " +
                                             std::to_string(q->rule.n) + " (" + counts + ")");
    close_quorum_locked(q);
  }
  return out;
}

void RemoteRunners::finish(Settled settled) {
  for (const auto& [agent, reason] : settled.fail) (void)fleet_.supervisor().fail_agent(agent, printable(reason));
  if (!settled.fail.empty()) fleet_.wake();
  if (settled.tell) send(*settled.tell, settled.line);
}

void RemoteRunners::expired(const std::vector<store::Task>& tasks) {
  std::vector<Settled> tell;
  {
    std::lock_guard lock(mu_);
    for (const store::Task& task : tasks) {
      auto p = pending_.find(task.id);
      if (p == pending_.end()) continue;
      if (p->second.channel) {
        Settled settled;
        settled.tell = p->second.channel;
        const std::string request_id = p->second.quorum ? p->second.quorum->request_id : task.id;
        settled.line = error_line(request_id, "no runner took it before it expired (queued " +
                                                  std::to_string((fleet_.now_ms() - task.enqueued_ms) / 1000) + " s ago)");
        if (p->second.quorum) close_quorum_locked(p->second.quorum);
        tell.push_back(std::move(settled));
      }
      pending_.erase(p);
    }
  }
  for (Settled& s : tell) finish(std::move(s));
}

bool RemoteRunners::starved() {
  std::lock_guard lock(mu_);
  if (!mailboxes_.empty()) return false;
  return std::any_of(pending_.begin(), pending_.end(), [](const auto& p) { return p.second.channel != nullptr; });
}

}  // namespace warden::service
