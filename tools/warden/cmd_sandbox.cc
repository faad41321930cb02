// warden sandbox exec|preflight|profile: one command in the bubblewrap sandbox, the
// sandbox's self-test, and the normalized profile with its digest.
#include <unistd.h>

#include <cmath>
#include <iostream>

#include "runner/sandbox/sandbox.h"
#include "tools/warden/cli.h"
#include "tools/warden/env_flags.h"
#include "tools/warden/kernel_cli.h"

namespace warden::cli {
namespace {

// `sandbox exec` exits with the command's own status, so Warden's conditions use the codes
// timeout(1) made familiar.
constexpr int kExecKilled = 124;  // the wall-clock timeout or the output limit ended the run
constexpr int kExecFailed = 125;  // Warden could not run the sandbox (profile, preflight, I/O)

struct Options {
  std::string profile = "default";
  std::string workspace;
  double timeout_s = 0;
  std::vector<std::string> argv;
  bool json = false;
  std::string cache;
  bool probe = false;  // exec: ignore a remembered verdict and probe again
  std::string environment;  // exec: run in this environment instead of on the host's /usr
  std::string env_store;
};

Json stream_json(const StreamEvidence& s) {
  return {{"sha256", s.sha256.str()}, {"bytes", s.bytes},   {"truncated", s.truncated},
          {"head", s.head},           {"tail", s.tail},     {"blob", s.kept_sha256.str()}};
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own stdout went away: keep capturing, stop forwarding
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

PreflightCache preflight_cache(const Options& o) {
  return PreflightCache(std::filesystem::path(o.cache.empty() ? default_cache_dir() : o.cache) / "preflight");
}

// The one-shot sandbox remembers a passing preflight, and what its profile compiles to, under
// the cache directory, so an agent's per-tool-call `sandbox exec` neither probes nor derives
// them every time (preflight_cache.h).
Result<Sandbox> open_sandbox(const Options& o, bool remember) {
  // The host's layout too: bwrap starts from the one remembered last time, and the fresh
  // detection that confirms it runs while bwrap sets up.
  if (remember) return Sandbox::open(o.profile, preflight_cache(o));
  auto profile = SandboxProfile::load(o.profile);
  if (!profile) return std::unexpected(profile.error());
  return Sandbox::create(std::move(*profile));
}

int run_exec(const Options& o) {
  auto sandbox = open_sandbox(o, !o.probe);
  if (!sandbox) {
    return report_error(sandbox.error(), o.json, kExecFailed);
  }
  const SandboxHost& host = sandbox->host();
  SandboxRequest req;
  req.argv = o.argv;
  std::optional<EnvironmentForRun> environment;
  if (!o.environment.empty()) {
    auto env = open_environment_for_run(o.env_store, o.environment, host);
    if (!env) return report_error(env.error(), o.json, kExecFailed);
    if (Status s = sandbox->use_system_root(env->environment.root); !s) return report_error(s.error(), o.json, kExecFailed);
    req.env = env->environment.env;
    environment = std::move(*env);
  }
  req.reap_here = true;  // this process starts one sandbox and exits: no reaper child needed
  std::optional<ScratchDir> scratch;
  if (o.workspace.empty()) {
    // No workspace given: an empty one, owned by the sandbox's user and removed afterwards.
    auto dir = ScratchDir::create(host.scratch_root, "warden-exec-", 0711);
    // The scratch root may be a remembered one that has gone since (the run confirms the
    // rest of the layout while bwrap starts): the host's as it is now, then.
    if (!dir) dir = ScratchDir::create(SandboxHost::detect().scratch_root, "warden-exec-", 0711);
    Status st = dir ? make_owned_dir(*dir / "workspace", host.uid, host.gid) : Status(std::unexpected(dir.error()));
    if (!st) {
      return report_error(st.error(), o.json, kExecFailed);
    }
    req.workspace_dir = *dir / "workspace";
    scratch.emplace(std::move(*dir));
  } else {
    std::error_code ec;
    req.workspace_dir = std::filesystem::absolute(o.workspace, ec);
    if (ec || !std::filesystem::is_directory(req.workspace_dir)) {
      return report_error(Error{Errc::not_found, "--workspace " + o.workspace + ": not a directory"}, o.json, kExecFailed);
    }
  }
  if (o.timeout_s > 0) req.timeout_ms = static_cast<int64_t>(std::ceil(o.timeout_s * 1000));
  if (!o.json) req.live = [](int fd, std::string_view bytes) { write_all(fd, bytes); };
  auto run = sandbox->run(req);
  if (!run) {
    return report_error(run.error(), o.json, kExecFailed);
  }
  int code = run->timed_out || run->output_limit_exceeded ? kExecKilled : run->exit_code;
  if (o.json) {
    Json out = {{"exit_code", run->exit_code},
                {"signal", run->signal},
                {"timed_out", run->timed_out},
                {"output_limit_exceeded", run->output_limit_exceeded},
                {"duration_ms", run->duration_ms},
                {"stdout", stream_json(run->out)},
                {"stderr", stream_json(run->err)},
                {"profile", sandbox->profile().name},
                {"profile_sha256", sandbox->profile_digest().str()},
                {"preflight", sandbox->preflight().to_json()},
                {"preflight_cached", sandbox->preflight_from_cache()},
                {"compiled_cached", sandbox->compiled_from_cache()}};
    if (environment) out["environment"] = environment->environment.digest.str();
    print_json(out);
  } else if (run->timed_out) {
    std::cerr << "warden: sandbox: timed out after " << run->duration_ms << " ms; the process tree was killed\n";
  } else if (run->output_limit_exceeded) {
    std::cerr << "warden: sandbox: output exceeded " << sandbox->profile().output.max_bytes
              << " bytes; the process tree was killed\n";
  }
  return code;
}

int run_preflight(const Options& o) {
  // Always a fresh probe; a pass is remembered for `sandbox exec`.
  auto sandbox = open_sandbox(o, false);
  if (!sandbox) return report_error(sandbox.error(), o.json);
  const PreflightReport& report = sandbox->preflight();
  PreflightCache cache = preflight_cache(o);
  const Digest key = preflight_key(sandbox->profile(), sandbox->profile_digest(), sandbox->seccomp_program(), sandbox->host());
  if (report.ok) cache.put(key, report);
  else cache.forget(key);
  if (o.json) {
    Json out = report.to_json();
    out["profile"] = sandbox->profile().name;
    out["profile_sha256"] = sandbox->profile_digest().str();
    print_json(out);
  } else {
    std::cout << "profile " << sandbox->profile().name << " " << sandbox->profile_digest().str() << "\n";
    for (const auto& c : report.checks) {
      std::cout << (c.ok ? "ok    " : "FAIL  ") << c.name << (c.ok ? "" : ": " + c.detail) << "\n";
    }
    for (const auto& e : report.enforced) {
      std::cout << "limit " << e.limit << (e.where.empty() ? "" : " " + e.where) << " " << e.value << " by " << e.by << "\n";
    }
    if (!sandbox->host().cgroups.unavailable().empty()) {
      std::cout << "cgroups: " << sandbox->host().cgroups.unavailable() << " (RLIMITs bound what no cgroup does)\n";
    }
    std::cout << (report.ok ? "sandbox ready\n" : "sandbox NOT usable: Warden refuses to run checks with this profile\n");
  }
  return report.ok ? kOk : kVerificationFailed;
}

int run_profile(const Options& o) {
  auto profile = SandboxProfile::load(o.profile);
  if (!profile) return report_error(profile.error(), o.json);
  print_json({{"sha256", profile->digest().str()}, {"profile", profile->to_json()}});
  return kOk;
}

}  // namespace

void add_sandbox_commands(CLI::App& app, Action& action) {
  auto* sandbox = app.add_subcommand("sandbox", "The bubblewrap sandbox checks run in: run a command, test the sandbox");
  sandbox->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto profile = [&](CLI::App* cmd) {
    cmd->add_option("--profile", o->profile, "Sandbox profile: a built-in name (default, strict) or a JSON file")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print JSON");
  };
  auto cache = [&](CLI::App* cmd) {
    cmd->add_option("--cache", o->cache,
                    "Cache directory; a passing preflight is remembered in its preflight/ for 24 hours (default "
                    "/var/cache/warden as root, else ~/.cache/warden)");
  };
  auto bind = [&action, o](CLI::App* cmd, int (*run)(const Options&)) {
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };

  auto* exec = sandbox->add_subcommand(
      "exec",
      "Run one command in the sandbox; print its output and exit with its status (124: killed at the timeout or "
      "the output limit; 125: the sandbox could not run). --json prints the evidence instead of the output.");
  profile(exec);
  cache(exec);
  exec->add_flag("--probe", o->probe, "Run the preflight probe even when a passing verdict is remembered");
  exec->add_option("--workspace", o->workspace,
                   "Directory bound read-write at the profile's workspace path (default: a fresh empty one). "
                   "The sandbox runs as nobody when Warden is root: make it writable for that user.");
  exec->add_option("--timeout", o->timeout_s, "Wall-clock timeout in seconds (at most the profile's)")
      ->check(CLI::PositiveNumber);
  exec->add_option("--environment", o->environment,
                   "Run on this environment (warden env list: sha256:<hex> or 8+ hex of it) instead of the host's /usr, "
                   "with its variables set; it is checked against its digest first");
  exec->add_option("--env-store", o->env_store,
                   "The environment store --environment is found in (default as warden env's)");
  exec->add_option("command", o->argv, "The command and its arguments (after --)")->required();
  bind(exec, run_exec);

  auto* preflight = sandbox->add_subcommand(
      "preflight", "Prove the sandbox works: namespaces, no network, seccomp, limits, filesystem, workspace. "
                   "Exit 0 only if every part holds.");
  profile(preflight);
  cache(preflight);
  bind(preflight, run_preflight);

  auto* show = sandbox->add_subcommand("profile", "Print a profile in normalized form with its digest");
  profile(show);
  bind(show, run_profile);
}

}  // namespace warden::cli
