// RemoteRunners' side of the runners (remote_runners_internal.h): each enrolled runner's
// stream and mailbox, the tasks dispatched to it with a fresh nonce, the objects it may fetch,
// and its results and failure reports, checked before a build sees them.
#include "service/remote_runners.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/encoding.h"
#include "common/fail_point.h"
#include "common/file.h"
#include "runner/environment/environment_store.h"
#include "runner/model/run_result.h"
#include "runner/workspace/git_repo.h"
#include "service/remote_runners_internal.h"
#include "supervisor/supervisor.h"

namespace warden::service {
namespace {

// Every object id `roots` reach in the repository at `dir`, the roots included.
Result<std::set<std::string>> reachable_objects(const std::filesystem::path& dir, const std::vector<std::string>& roots) {
  auto repo = GitRepo::open(dir);
  if (!repo) return fail(Errc::io_error, "the run's repository: " + repo.error().message());
  std::set<std::string> seen;
  std::vector<ObjectId> trees;
  for (const std::string& root : roots) {
    auto id = ObjectId::parse(root);
    if (id && seen.insert(root).second) trees.push_back(*id);
  }
  while (!trees.empty()) {
    const ObjectId tree = trees.back();
    trees.pop_back();
    auto children = repo->tree_children(tree);
    if (!children) return fail(Errc::io_error, "tree " + tree.hex() + ": " + children.error().message());
    for (const TreeChild& c : *children) {
      if (seen.insert(c.id.hex()).second && c.is_tree) trees.push_back(c.id);
    }
  }
  return seen;
}

}  // namespace

using detail::error_line;
using detail::printable;

std::string RemoteRunners::nonce_hex() {
  std::string bytes(32, '\0');
  std::lock_guard lock(random_mu_);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t word = random_.next_u64();
    for (size_t j = 0; j < 8; ++j) bytes[i + j] = static_cast<char>(word >> (8 * j));
  }
  return to_hex(bytes);
}

void RemoteRunners::post_locked(Mailbox& mailbox, v1::ServerMessage message) {
  if (mailbox.closed) return;
  if (mailbox.outbox.size() >= kMaxOutbox) {
    // It asks and does not read: its stream ends (and its task goes to another runner).
    cut_off_locked(mailbox, "it asked for more than it read (" + std::to_string(kMaxOutbox) + " answers waiting)");
    return;
  }
  mailbox.outbox.push_back(std::move(message));
  cv_.notify_all();
}

void RemoteRunners::cut_off_locked(Mailbox& mailbox, const std::string& why) {
  if (mailbox.closed) return;
  mailbox.closed = true;
  mailbox.cut = why;
  if (mailbox.context) mailbox.context->TryCancel();
  cv_.notify_all();
}

void RemoteRunners::cut_off(Mailbox& mailbox, const std::string& why) {
  std::lock_guard lock(mu_);
  cut_off_locked(mailbox, why);
}

void RemoteRunners::drop_claim(const std::string& agent_id, const store::ClaimRef& claim, const std::string& why) {
  // Working since its assignment (AssignScope::starts_at_once): the ack consumes the task.
  (void)fleet_.supervisor().withdraw(agent_id, claim, why);
}

void RemoteRunners::dispatch(const std::vector<supervisor::Assignment>& assignments) {
  for (const supervisor::Assignment& a : assignments) {
    // This server's runner tasks (Fleet::runner_task_kind), a quorum member's included.
    const std::string ours = fleet_.runner_task_kind();
    if (a.claim.task.kind != ours && !a.claim.task.kind.starts_with(ours + ":")) continue;
    const store::ClaimRef ref = a.claim.ref();
    enum class Next { sent, leave, drop } next = Next::drop;
    std::shared_ptr<Channel> tell;  // the child to tell its task was given up
    std::string request_id = ref.task_id;
    std::string why;  // why the claim is withdrawn
    {
      std::lock_guard lock(mu_);
      auto p = pending_.find(ref.task_id);
      auto m = mailboxes_.find(a.agent_id);
      if (p == pending_.end()) {
        why = "nobody waits for it: the build that queued it is gone (this server restarted since)";
      } else if (!p->second.channel) {
        why = p->second.quorum && p->second.quorum->decided ? "its quorum settled without it"
                                                            : "nobody waits for it: its build ended or stopped waiting";
        pending_.erase(p);
      } else if (a.claim.attempt > kMaxAttempts + 1) {
        // Runners took it and went away (or were failed) this often: no more tries.
        why = "no runner returned a result in " + std::to_string(kMaxAttempts + 1) + " claims";
        tell = p->second.channel;
        if (p->second.quorum) {
          request_id = p->second.quorum->request_id;
          close_quorum_locked(p->second.quorum);
        }
        pending_.erase(p);
      } else if (m == mailboxes_.end()) {
        // Its runner's stream is not here (it just ended, or it is another server's): the
        // stream's end or the claim's lease returns the task to the queue.
        next = Next::leave;
      } else {
        next = Next::sent;
        Mailbox& mailbox = *m->second;
        Mailbox::Held held{ref, a.claim.attempt, nonce_hex(), p->second.request, p->second.channel->repo, {}, false, {}, {}};
        int64_t budget_ms = 120'000;  // fetching and starting
        for (const CheckSpec& c : held.request.checks) budget_ms += c.timeout_ms.value_or(600'000) * std::max<int64_t>(c.runs, 1);
        held.renew_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
        held.fetchable = {held.request.base_tree, held.request.tree};
        v1::ServerMessage message;
        v1::CheckTask* task = message.mutable_task();
        task->set_task_id(ref.task_id);
        task->set_claim_token(ref.token);
        task->set_nonce(*from_hex(held.nonce));
        task->set_request_json(a.claim.task.payload);
        task->set_attempt(a.claim.attempt);
        // The agent is working since its assignment (AssignScope::starts_at_once), before
        // the runner can answer.
        mailbox.held = std::move(held);
        post_locked(mailbox, std::move(message));
      }
    }
    if (next == Next::sent) fail_point("server.task_sent");
    if (next != Next::drop) continue;
    drop_claim(a.agent_id, ref, why);
    if (tell) {
      send(*tell, error_line(request_id, "no runner returned a result in " + std::to_string(kMaxAttempts + 1) +
                                             " claims of the task (each runner failed or went away)"));
    }
  }
}

void RemoteRunners::attach(Mailbox& mailbox) {
  std::lock_guard lock(mu_);
  mailboxes_[mailbox.agent_id] = &mailbox;
}

void RemoteRunners::detach(Mailbox& mailbox) {
  std::lock_guard lock(mu_);
  if (auto it = mailboxes_.find(mailbox.agent_id); it != mailboxes_.end() && it->second == &mailbox) mailboxes_.erase(it);
  mailbox.closed = true;
  mailbox.held.reset();
  cv_.notify_all();
}

std::string RemoteRunners::cut_reason(Mailbox& mailbox) {
  std::lock_guard lock(mu_);
  return mailbox.cut;
}

bool RemoteRunners::next(Mailbox& mailbox, v1::ServerMessage& out) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !mailbox.outbox.empty() || mailbox.closed || stopping_; });
  if (mailbox.outbox.empty()) return false;
  out = std::move(mailbox.outbox.front());
  mailbox.outbox.pop_front();
  return true;
}

void RemoteRunners::fetch_environment(Mailbox& mailbox, const v1::FetchEnvironment& request) {
  v1::ServerMessage reply;
  v1::EnvironmentBatch* batch = reply.mutable_environment();
  batch->set_task_id(request.task_id());
  auto refuse = [&](const std::string& why) {
    batch->clear_files();
    batch->set_error(why);
    std::lock_guard lock(mu_);
    post_locked(mailbox, std::move(reply));
  };
  std::optional<Digest> environment;
  std::shared_ptr<const std::set<std::string>> files;
  {
    std::lock_guard lock(mu_);
    if (!mailbox.held || mailbox.held->claim.task_id != request.task_id()) {
      batch->set_error("task " + request.task_id() + " is not this runner's");
    } else if (!mailbox.held->request.environment) {
      batch->set_error("task " + request.task_id() + " runs in no environment");
    } else if (static_cast<size_t>(request.files_size()) > kMaxFetchIds) {
      batch->set_error("ask for at most " + std::to_string(kMaxFetchIds) + " files at a time");
    }
    if (!batch->error().empty()) {
      post_locked(mailbox, std::move(reply));
      return;
    }
    environment = mailbox.held->request.environment;
    files = mailbox.held->environment_files;
  }
  auto store = EnvironmentStore::open(EnvironmentStore::default_dir());
  if (!store) return refuse("the server's environment store: " + store.error().message);
  std::optional<TreeManifest> manifest;
  if (request.files().empty() || !files) {
    auto read = store->manifest(*environment);
    if (!read) return refuse("the server does not hold environment " + environment->str());
    manifest = std::move(*read);
  }
  if (!files) {
    auto names = std::make_shared<std::set<std::string>>();
    for (const TreeEntry& e : manifest->entries) {
      if (e.type == TreeEntry::Type::file) names->insert(e.sha256.hex() + (e.executable() ? "x" : ""));
    }
    files = std::move(names);
    std::lock_guard lock(mu_);
    if (mailbox.held && mailbox.held->claim.task_id == request.task_id()) mailbox.held->environment_files = files;
  }
  if (request.files().empty()) {
    auto held = store->find(*environment);
    if (!held || !*held) return refuse("the server does not hold environment " + environment->str());
    batch->set_record_json((*held)->to_json().dump());
    batch->set_manifest(manifest->text());
  } else {
    // Every name is judged before any file is read: an ask with one name outside the
    // environment gets nothing at all.
    for (const std::string& name : request.files()) {
      if (!files->contains(name)) return refuse("file " + name + " is not part of environment " + environment->str());
    }
    size_t bytes = 0;
    for (const std::string& name : request.files()) {
      if (batch->files_size() > 0 && bytes >= kBatchBytes) break;
      auto digest = Digest::from_hex(std::string_view(name).substr(0, 64));
      auto path = digest ? store->object(*digest, name.size() == 65) : Result<std::filesystem::path>(std::unexpected(digest.error()));
      auto data = path ? read_file(*path, uint64_t{1} << 32) : Result<std::string>(std::unexpected(path.error()));
      if (!data) return refuse("reading " + name + ": " + data.error().message);
      bytes += data->size();
      v1::EnvironmentFile* f = batch->add_files();
      f->set_name(name);
      f->set_data(std::move(*data));
    }
  }
  std::lock_guard lock(mu_);
  post_locked(mailbox, std::move(reply));
}

void RemoteRunners::fetch(Mailbox& mailbox, const v1::FetchObjects& request) {
  v1::ServerMessage reply;
  v1::ObjectBatch* batch = reply.mutable_objects();
  batch->set_task_id(request.task_id());
  std::filesystem::path repo_dir;
  std::vector<std::string> ids(request.ids().begin(), request.ids().end());
  // Twice at most: an id outside the trees fetched so far makes the whole of the task's trees
  // fetchable (walked outside mu_), then the ids are judged again.
  for (int pass = 0;; ++pass) {
    std::vector<std::string> roots;
    {
      std::lock_guard lock(mu_);
      std::string refused;
      bool unknown = false;
      if (!mailbox.held || mailbox.held->claim.task_id != request.task_id()) {
        refused = "task " + request.task_id() + " is not this runner's";
      } else if (ids.empty() || ids.size() > kMaxFetchIds) {
        refused = "ask for 1 to " + std::to_string(kMaxFetchIds) + " objects at a time";
      } else {
        for (const std::string& id : ids) {
          if (mailbox.held->fetchable.contains(id)) continue;
          if (!mailbox.held->reached_all && pass == 0) {
            unknown = true;
            break;
          }
          refused = "object " + id + " is not reachable from the task's trees";
          break;
        }
      }
      if (!refused.empty()) {
        batch->set_error(refused);
        post_locked(mailbox, std::move(reply));
        return;
      }
      repo_dir = mailbox.held->repo;
      if (!unknown) break;
      roots = {mailbox.held->request.base_tree, mailbox.held->request.tree};
    }
    auto reached = reachable_objects(repo_dir, roots);
    std::lock_guard lock(mu_);
    if (mailbox.held && mailbox.held->claim.task_id == request.task_id()) {
      if (reached) mailbox.held->fetchable.insert(reached->begin(), reached->end());
      mailbox.held->reached_all = true;
    }
  }
  std::vector<std::string> opened;
  auto repo = GitRepo::open(repo_dir);
  size_t bytes = 0;
  for (const std::string& hex : ids) {
    if (!repo) break;
    auto id = ObjectId::parse(hex);
    auto object = id ? repo->read_object(*id) : Checked<RawObject>(std::unexpected(id.error()));
    if (!object) {
      batch->set_error("object " + hex + ": " + object.error().message());
      break;
    }
    if (batch->objects_size() > 0 && bytes + object->data.size() > kBatchBytes) break;
    bytes += object->data.size();
    if (object->type == "tree") {
      auto children = repo->tree_children(*id);
      if (!children) {
        batch->set_error("tree " + hex + ": " + children.error().message());
        break;
      }
      for (const TreeChild& c : *children) opened.push_back(c.id.hex());
    }
    v1::GitObject* o = batch->add_objects();
    o->set_id(hex);
    o->set_type(object->type);
    o->set_data(std::move(object->data));
  }
  if (!repo) batch->set_error("the run's repository: " + repo.error().message());
  if (!batch->error().empty()) batch->clear_objects();
  std::lock_guard lock(mu_);
  if (mailbox.held && mailbox.held->claim.task_id == request.task_id()) {
    mailbox.held->fetchable.insert(opened.begin(), opened.end());
  }
  post_locked(mailbox, std::move(reply));
}

void RemoteRunners::complete(Mailbox& mailbox, const v1::TaskResult& message) {
  std::optional<Mailbox::Held> held;
  {
    std::lock_guard lock(mu_);
    if (mailbox.held && mailbox.held->claim.task_id == message.task_id() && mailbox.held->claim.token == message.claim_token()) {
      held = mailbox.held;
    }
  }
  // A result for a claim this runner no longer holds (it lapsed, the runner was failed) is
  // late: another runner has the task, and this one's answer counts for nothing.
  if (!held) return;
  const std::string& agent = mailbox.agent_id;
  auto judged = [&]() -> Result<std::pair<RunResult, RunBodies>> {
    auto json = parse_json(message.run_result_json(), "run_result_json");
    if (!json) return std::unexpected(json.error());
    auto result = RunResult::from_json(*json);
    if (!result) return std::unexpected(result.error());
    RunBodies bodies;
    for (const auto& [name, bytes] : message.bodies()) {
      auto digest = Digest::parse(name);
      if (!digest) return fail(Errc::verification_failed, "bodies: \"" + name + "\" is not a digest");
      bodies.emplace(*digest, bytes);
    }
    ResultAttestation a{agent, mailbox.owner, mailbox.key, held->claim.task_id, held->nonce, to_hex(message.signature())};
    if (Status st = verify_attestation(a, result->deterministic_digest()); !st) return std::unexpected(st.error());
    auto repo = GitRepo::open(held->repo);
    if (!repo) return fail(Errc::io_error, "the run's repository: " + repo.error().message());
    std::lock_guard memo(memo_mu_);
    if (Status st = check_remote_result(*repo, held->request, *result, bodies, memo_); !st) return std::unexpected(st.error());
    return std::pair{std::move(*result), std::move(bodies)};
  }();
  auto& sup = fleet_.supervisor();
  if (!judged) {
    // Refused and named: the fleet event carries the reason into the ledger, and the task
    // goes to another runner.
    {
      std::lock_guard lock(mu_);
      mailbox.held.reset();
    }
    (void)sup.fail_agent(agent, printable("its result for task " + held->claim.task_id + " was refused: " + judged.error().message));
    fleet_.wake();
    return;
  }
  Status delivered = sup.delivered(agent, held->claim);
  // Acked in the store, not yet passed to the build.
  if (delivered) fail_point("server.result_acked");
  Settled settled;
  {
    std::lock_guard lock(mu_);
    if (mailbox.held && mailbox.held->claim == held->claim) mailbox.held.reset();
    auto p = pending_.find(held->claim.task_id);
    // Only a delivered claim counts: one that lapsed first is another runner's now.
    if (delivered && p != pending_.end()) {
      Pending pending = std::move(p->second);
      pending_.erase(p);
      Json bodies = Json::object();
      for (const auto& [digest, bytes] : judged->second) bodies[digest.str()] = base64_encode(bytes);
      ResultAttestation a{agent, mailbox.owner, mailbox.key, held->claim.task_id, held->nonce, to_hex(message.signature())};
      Quorum::Vote vote{agent, judged->first.deterministic_digest(), judged->first.to_json(), std::move(bodies), a.to_json()};
      settled = vote_locked(std::move(pending), std::move(vote));
    }
  }
  fleet_.wake();
  finish(std::move(settled));
}

void RemoteRunners::failed(Mailbox& mailbox, const v1::TaskFailed& report) {
  std::optional<Mailbox::Held> held;
  {
    std::lock_guard lock(mu_);
    if (mailbox.held && mailbox.held->claim.task_id == report.task_id() && mailbox.held->claim.token == report.claim_token()) {
      held = mailbox.held;
      mailbox.held.reset();
    }
  }
  if (!held) return;
  const std::string reason = printable(report.reason());
  auto& sup = fleet_.supervisor();
  if (held->attempt < kMaxAttempts) {
    auto decision = sup.fail_agent(mailbox.agent_id, "it could not run task " + held->claim.task_id + ": " + reason);
    Settled settled;
    if (decision && decision->action == supervisor::RestartAction::give_up) {
      // The runner is given up and no other runner here could take the task: the build is
      // told now rather than waiting out its step for a try that cannot come. The task,
      // back in the queue, is withdrawn when a runner next takes it.
      std::lock_guard lock(mu_);
      const bool alone = std::none_of(mailboxes_.begin(), mailboxes_.end(),
                                      [&](const auto& m) { return m.first != mailbox.agent_id && !m.second->closed; });
      if (auto p = pending_.find(held->claim.task_id); alone && p != pending_.end() && p->second.channel) {
        settled.tell = p->second.channel;
        const std::string request_id = p->second.quorum ? p->second.quorum->request_id : held->claim.task_id;
        if (p->second.quorum) close_quorum_locked(p->second.quorum);
        else p->second.channel = nullptr;
        settled.line = error_line(request_id, "runner " + mailbox.agent_id + " could not run it and was given up (" +
                                                  decision->reason + "), and no other runner is connected; its report: " + reason);
      }
    }
    fleet_.wake();
    finish(std::move(settled));
    return;
  }
  // The last try: the build is told, rather than the task going round for ever.
  Status delivered = sup.delivered(mailbox.agent_id, held->claim);
  Settled settled;
  {
    std::lock_guard lock(mu_);
    if (auto p = pending_.find(held->claim.task_id); delivered && p != pending_.end()) {
      settled.tell = p->second.channel;
      const std::string request_id = p->second.quorum ? p->second.quorum->request_id : held->claim.task_id;
      if (p->second.quorum) close_quorum_locked(p->second.quorum);
      pending_.erase(p);
      settled.line = error_line(request_id, "runners could not run it in " + std::to_string(held->attempt) + " tries; the last, runner " +
                                                mailbox.agent_id + ": " + reason);
    }
  }
  fleet_.wake();
  finish(std::move(settled));
}

void RemoteRunners::renew(Mailbox& mailbox) {
  std::optional<store::ClaimRef> claim;
  {
    std::lock_guard lock(mu_);
    if (mailbox.held && std::chrono::steady_clock::now() < mailbox.held->renew_until) claim = mailbox.held->claim;
  }
  if (claim) (void)fleet_.supervisor().renew(mailbox.agent_id, *claim);
}

}  // namespace warden::service
