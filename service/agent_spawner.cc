#include "service/agent_spawner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/json_reader.h"
#include "common/subprocess.h"
#include "store/record_checks.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxLogBytesPerStart = size_t{16} << 20;
constexpr size_t kMaxAgents = 256;

// A number field (integer or not) into a double.
void number(JsonReader& r, std::string_view key, double& out) {
  if (!r.has(key)) return;
  const Json* v = r.any(key);
  if (v && v->is_number()) out = v->get<double>();
  else if (v) r.fail(key, "must be a number");
}

void read_restart(JsonReader& r, supervisor::RestartPolicyConfig& c) {
  JsonReader b = r.child("backoff", false);
  b.integer("base_ms", c.backoff.base_ms, 1, int64_t{1} << 40, false);
  number(b, "factor", c.backoff.factor);
  b.integer("max_ms", c.backoff.max_ms, 1, int64_t{1} << 40, false);
  number(b, "jitter", c.backoff.jitter);
  JsonReader i = r.child("intensity", false);
  int64_t max_restarts = c.intensity.max_restarts;
  i.integer("max_restarts", max_restarts, 0, 1'000'000, false);
  c.intensity.max_restarts = static_cast<int>(max_restarts);
  i.integer("window_ms", c.intensity.window_ms, 1, int64_t{1} << 40, false);
  JsonReader k = r.child("breaker", false);
  int64_t threshold = c.breaker.failure_threshold;
  k.integer("failure_threshold", threshold, 1, 1'000'000, false);
  c.breaker.failure_threshold = static_cast<int>(threshold);
  k.integer("cool_off_ms", c.breaker.cool_off_ms, 0, int64_t{1} << 40, false);
}

std::string describe_end(const SubprocessResult& r) {
  switch (r.ending) {
    case SubprocessResult::Ending::exited: return "exited with status " + std::to_string(r.exit_code);
    case SubprocessResult::Ending::signaled: return "was killed by signal " + std::to_string(r.signal);
    case SubprocessResult::Ending::timed_out: return "was stopped";
    case SubprocessResult::Ending::stdout_overflow: return "flooded its output";
  }
  return "ended";
}

}  // namespace

Result<AgentsFile> load_agents_file(const fs::path& path) {
  auto text = read_file(path, size_t{1} << 20);
  if (!text) return std::unexpected(text.error().with_context("--agents"));
  auto json = parse_json(*text, path.string());
  if (!json) return std::unexpected(json.error());
  JsonReader r(*json, path.string());
  AgentsFile out;
  if (const Json* list = r.value("agents", Json::value_t::array)) {
    if (list->size() > kMaxAgents) r.fail("agents", "more than " + std::to_string(kMaxAgents));
    for (size_t n = 0; n < list->size() && r.ok(); ++n) {
      JsonReader a = r.element("agents", *list, n);
      SpawnedAgentSpec spec;
      a.string("id", spec.id);
      a.string("role", spec.role, false);
      a.strings("command", spec.command);
      a.string_map("labels", spec.labels, false);
      a.string_map("env", spec.env, false);
      if (!a.ok()) break;
      if (auto ok = store::check_id(spec.id, "id"); !ok) a.fail("id", ok.error().message);
      else if (auto ok2 = store::check_id(spec.role, "role"); !ok2) a.fail("role", ok2.error().message);
      else if (spec.command.empty() || spec.command.front().empty()) a.fail("command", "must name a program");
      else if (spec.labels.size() > store::kMaxLabels) a.fail("labels", "more than " + std::to_string(store::kMaxLabels));
      for (const auto& [k, v] : spec.labels) {
        if (std::any_of(v.begin(), v.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
          a.fail("labels", "\"" + k + "\" holds control characters");
        }
      }
      for (const auto& [k, v] : spec.env) {
        if (k.empty() || k.find('=') != std::string::npos) a.fail("env", "\"" + k + "\" is not a variable name");
      }
      for (const SpawnedAgentSpec& earlier : out.agents) {
        if (earlier.id == spec.id) a.fail("id", "\"" + spec.id + "\" is given twice");
      }
      out.agents.push_back(std::move(spec));
    }
  }
  if (r.has("restart")) {
    supervisor::RestartPolicyConfig config;
    JsonReader restart = r.child("restart");
    read_restart(restart, config);
    if (restart.ok()) {
      if (auto ok = supervisor::validate(config); !ok) restart.fail("", ok.error().message);
    }
    out.restart = config;
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

Status AgentSpawner::start(const std::vector<SpawnedAgentSpec>& agents) {
  for (const SpawnedAgentSpec& spec : agents) {
    const fs::path dir = state_dir_ / "agents" / spec.id;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return fail(Errc::io_error, "making " + dir.string() + ": " + ec.message());
    ::chmod((state_dir_ / "agents").c_str(), 0700);
    ::chmod(dir.c_str(), 0700);
  }
  threads_.emplace_back([this](std::stop_token stop) { heartbeats(stop); });
  for (const SpawnedAgentSpec& spec : agents) {
    threads_.emplace_back([this, spec](std::stop_token stop) { supervise(spec, stop); });
  }
  return {};
}

void AgentSpawner::stop() {
  for (auto& t : threads_) t.request_stop();
  {
    std::lock_guard lock(mu_);
    wake_.notify_all();
  }
  threads_.clear();  // jthread joins
}

int AgentSpawner::starts(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = starts_.find(id);
  return it == starts_.end() ? 0 : it->second;
}

void AgentSpawner::say(const std::string& line) {
  std::lock_guard lock(mu_);
  log_ << "warden serve: " << line << "\n" << std::flush;
}

bool AgentSpawner::stopped_within(std::stop_token stop, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, stop, wait, [] { return false; });
  return stop.stop_requested();
}

void AgentSpawner::heartbeats(std::stop_token stop) {
  // Twice an interval: the supervisor writes at most four a interval anyway.
  const auto every = std::chrono::milliseconds(std::max<int64_t>(supervisor_.config().heartbeat_interval_ms / 2, 10));
  while (!stopped_within(stop, every)) {
    std::vector<std::string> alive;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, running] : running_) {
        if (running) alive.push_back(id);
      }
    }
    for (const std::string& id : alive) (void)supervisor_.heartbeat(id);
  }
}

void AgentSpawner::supervise(const SpawnedAgentSpec& spec, std::stop_token stop) {
  const fs::path dir = state_dir_ / "agents" / spec.id;
  const fs::path log_path = dir / "log";
  while (!stop.stop_requested()) {
    // Registered afresh at each start: idle and heartbeating; its restart policy stays.
    auto registered = supervisor_.register_agent(
        {.id = spec.id, .role = spec.role, .labels = spec.labels, .owner = "warden:spawned", .key = "", .self_restarting = false});
    if (!registered) {
      say("agent " + spec.id + " could not be registered: " + registered.error().message + "; trying again in 1 s");
      if (stopped_within(stop, std::chrono::seconds(1))) return;
      continue;
    }
    UniqueFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    size_t logged = 0;
    SubprocessSpec run;
    run.argv = spec.command;
    const char* path = std::getenv("PATH");
    run.env = {"PATH=" + std::string(path ? path : "/usr/local/bin:/usr/bin:/bin"), "HOME=" + dir.string(),
               "WARDEN_AGENT_ID=" + spec.id, "WARDEN_SOCKET=" + socket_.string()};
    for (const auto& [k, v] : spec.env) run.env.push_back(k + "=" + v);
    run.cwd = dir;
    run.timeout = std::chrono::hours(24 * 365 * 10);  // as long as the server runs
    run.stop = stop;
    run.output = [&](std::string_view bytes) {
      if (!log_fd || logged >= kMaxLogBytesPerStart) return;
      const size_t n = std::min(bytes.size(), kMaxLogBytesPerStart - logged);
      if (::write(log_fd.get(), bytes.data(), n) > 0) logged += n;
    };
    {
      std::lock_guard lock(mu_);
      ++starts_[spec.id];
      running_[spec.id] = true;
    }
    auto result = run_subprocess(run);
    {
      std::lock_guard lock(mu_);
      running_[spec.id] = false;
    }
    if (stop.stop_requested()) return;
    const std::string why = result ? "its program " + describe_end(*result) : "its program could not start: " + result.error().message;
    auto decision = supervisor_.fail_agent(spec.id, why);
    if (!decision) {
      say("agent " + spec.id + ": " + why + "; the supervisor failed: " + decision.error().message + "; trying again in 1 s");
      if (stopped_within(stop, std::chrono::seconds(1))) return;
      continue;
    }
    if (decision->action == supervisor::RestartAction::give_up) {
      say("agent " + spec.id + ": " + why + "; given up: " + decision->reason);
      return;
    }
    const int64_t wait_ms = std::max<int64_t>(0, decision->not_before_ms - clock_.now_ms());
    say("agent " + spec.id + ": " + why + "; restart " + std::to_string(decision->attempt + 1) + " in " +
        std::to_string(wait_ms) + " ms (circuit " + std::string(supervisor::to_string(decision->breaker)) + ")");
    if (stopped_within(stop, std::chrono::milliseconds(wait_ms))) return;
  }
}

}  // namespace warden::service
