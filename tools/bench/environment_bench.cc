// environment_bench: what environments cost, in one run on one machine.
//
//   recipe build, cold    build_recipe of a recipe (--recipe; default
//                         examples/leaderboard/environment.json, else a python3-minimal +
//                         python3-sortedcontainers bookworm recipe written for the run) into a
//                         fresh store: mmdebstrap from deb.debian.org, its prepare steps, the
//                         store's import. Needs mmdebstrap and network; without them these rows
//                         and the check rows are skipped, with the reason.
//   recipe build, warm    build_recipe of the same recipe on the same store: found by the
//                         recipe's digest, nothing built
//   open_verified         what a runner does before it uses the environment (the stored root
//                         scanned again through the store's memo), the first time after the
//                         build and again; context, with the files it read
//   a check, environment vs host   Sandbox::run of the same command (python3 computing a sum,
//                         and /bin/true) in a sandbox of the default profile on the
//                         environment's root (use_system_root) and in one on the host's /usr,
//                         interleaved one of each per round (which goes first alternating),
//                         an empty workspace owned by the sandbox's uid
//   toolchain identity    toolchain_identity() of the default profile on the host's /usr with
//                         a fresh FileDigestMemo (every file of its toolchain_dirs read; the
//                         page cache may hold them, the memo does not), and again with that memo
//                         saved and loaded (stat() alone)
//
// Targets: a cold build within 300 s; a warm one within 50 ms; a check in the environment
// within 1.10x of the same check on the host's /usr (medians of --runs runs each); the warm
// toolchain identity reading no file and taking at most a quarter of the cold one. Exit 0
// when every measured figure is within its target (skipped rows fail nothing), 1 when one is
// not, 2 when a step fails.
//
//   cmake --build build --target environment_bench && build/environment_bench [--recipe PATH] [--runs N] [--json]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/file.h"
#include "runner/environment/environment_recipe.h"
#include "runner/environment/environment_store.h"
#include "runner/environment/toolchain.h"
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using warden::Json;

constexpr double kColdBuildLimitS = 300;
constexpr double kWarmBuildLimitMs = 50;
constexpr double kCheckRatioLimit = 1.10;
constexpr double kWarmToolchainShare = 0.25;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "environment_bench: " << what << "\n";
  std::exit(2);
}

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Lets a sandbox's teardown (its namespaces, in the kernel's workers) finish before the next
// timed run, so it does not land on whichever side comes next.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

const char* verdict(bool ok) { return ok ? "PASS" : "FAIL"; }

std::optional<fs::path> on_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

// a. The recipe built into a fresh store, then found there.
struct BuildFigures {
  bool measured = false;
  std::string why;  // not measured: the reason
  std::string recipe_path;
  double cold_s = 0, warm_ms = 0;
  bool warm_reused = false;
  warden::Environment env;
  // open_verified: the first time after the build and once more, with the files each read.
  double verify_first_ms = 0, verify_again_ms = 0;
  uint64_t verify_first_files = 0, verify_again_files = 0;
  bool cold_ok() const { return cold_s <= kColdBuildLimitS; }
  bool warm_ok() const { return warm_reused && warm_ms <= kWarmBuildLimitMs; }
};

BuildFigures measure_build(const fs::path& recipe_file, const fs::path& work, const warden::SandboxHost& host) {
  BuildFigures b;
  b.recipe_path = recipe_file.string();
  if (!on_path("mmdebstrap")) {
    b.why = "mmdebstrap is not installed (apt-get install mmdebstrap)";
    return b;
  }
  auto recipe = warden::EnvironmentRecipe::load(recipe_file);
  if (!recipe) die(recipe.error().message);
  auto store = warden::EnvironmentStore::open(work / "store", host.drop ? std::optional<uid_t>(host.uid) : std::nullopt);
  if (!store) die(store.error().message);
  warden::RecipeBuildOptions options;
  options.host = host;
  options.progress = [](std::string_view line) { std::cerr << "environment_bench: " << line << "\n"; };
  auto start = Clock::now();
  auto cold = warden::build_recipe(*store, *recipe, options);
  b.cold_s = ms_since(start) / 1000;
  if (!cold) {
    b.why = "the cold build failed: " + cold.error().message;
    return b;
  }
  if (cold->reused) die("the cold build found the recipe in a fresh store");
  start = Clock::now();
  auto warm = warden::build_recipe(*store, *recipe, options);
  b.warm_ms = ms_since(start);
  if (!warm) die("the warm build failed: " + warm.error().message);
  b.warm_reused = warm->reused;
  b.env = cold->environment;
  // As a runner opens it: a store handle of its own, its memo loaded from the store.
  for (int i = 0; i < 2; ++i) {
    auto opened = warden::EnvironmentStore::open(work / "store", host.drop ? std::optional<uid_t>(host.uid) : std::nullopt);
    if (!opened) die(opened.error().message);
    start = Clock::now();
    auto verified = opened->open_verified(b.env.digest);
    double ms = ms_since(start);
    if (!verified) die("open_verified: " + verified.error().message);
    (i == 0 ? b.verify_first_ms : b.verify_again_ms) = ms;
    (i == 0 ? b.verify_first_files : b.verify_again_files) = opened->memo().files_read();
  }
  b.measured = true;
  return b;
}

// b. One command run in the environment and on the host's /usr.
struct CheckFigures {
  std::string name;
  double host_ms = 0, env_ms = 0;
  double ratio() const { return env_ms / host_ms; }
  bool ok() const { return ratio() <= kCheckRatioLimit; }
};

struct ChecksResult {
  bool measured = false;
  std::string why;
  std::vector<CheckFigures> checks;
  bool ok() const {
    return std::all_of(checks.begin(), checks.end(), [](const CheckFigures& c) { return c.ok(); });
  }
};

ChecksResult measure_checks(const warden::Environment& env, const warden::SandboxProfile& profile,
                            const warden::SandboxHost& host, const fs::path& work, int runs) {
  ChecksResult result;
  auto on_host = warden::Sandbox::create(profile, host);
  auto in_env = warden::Sandbox::create(profile, host);
  if (!on_host || !in_env) die("cannot create the sandboxes");
  if (auto st = in_env->use_system_root(env.root); !st) die("use_system_root: " + st.error().message);
  if (!on_host->preflight().ok) die("preflight on the host's /usr failed: " + on_host->preflight().failures());
  if (!in_env->preflight().ok) {
    result.why = "the preflight in the environment failed: " + in_env->preflight().failures();
    return result;
  }
  fs::path ws = work / "check-ws";
  if (auto st = warden::make_owned_dir(ws, host.uid, host.gid); !st) die(st.error().message);

  struct Command {
    std::string name;
    std::vector<std::string> argv;
    std::string expect;  // its stdout, the same on both sides
  };
  const std::vector<Command> commands = {
      {"python3 -c 'print(sum(range(100000)))'", {"/usr/bin/python3", "-c", "import json,sys; print(sum(range(100000)))"}, "4999950000\n"},
      {"/bin/true", {"/bin/true"}, ""},
  };
  for (const auto& c : commands) {
    warden::SandboxRequest req;
    req.argv = c.argv;
    req.workspace_dir = ws;
    auto timed = [&](warden::Sandbox& s, const std::map<std::string, std::string>& vars) {
      req.env = vars;
      auto start = Clock::now();
      auto r = s.run(req);
      double ms = ms_since(start);
      if (!r) die(c.name + ": " + r.error().message);
      if (r->exit_code != 0 || r->out.kept != c.expect) {
        die(c.name + " gave exit " + std::to_string(r->exit_code) + ", stdout \"" + r->out.head + "\", stderr \"" + r->err.head +
            "\"" + (&s == &*in_env ? " in the environment" : " on the host"));
      }
      return ms;
    };
    for (int i = 0; i < 3; ++i) {
      timed(*on_host, {});
      timed(*in_env, env.env);
    }
    std::vector<double> host_t, env_t;
    // Which side goes first alternates, so neither always follows the other's teardown.
    for (int i = 0; i < runs; ++i) {
      for (int side = 0; side < 2; ++side) {
        settle();
        if ((side == 0) == (i % 2 == 0)) {
          host_t.push_back(timed(*on_host, {}));
        } else {
          env_t.push_back(timed(*in_env, env.env));
        }
      }
    }
    result.checks.push_back({c.name, median(host_t), median(env_t)});
  }
  result.measured = true;
  return result;
}

// c. The host default's toolchain identity with a fresh memo and with that memo reloaded.
struct ToolchainFigures {
  size_t dirs = 0;
  double cold_ms = 0, warm_ms = 0, load_ms = 0;
  uint64_t cold_files = 0, cold_bytes = 0, warm_files = 0, warm_bytes = 0;
  size_t memo_entries = 0;
  bool same_identity = false;
  bool ok() const { return same_identity && warm_files == 0 && warm_ms <= kWarmToolchainShare * cold_ms; }
};

ToolchainFigures measure_toolchain(const warden::SandboxProfile& profile, const warden::SandboxHost& host, const fs::path& work) {
  ToolchainFigures t;
  t.dirs = warden::expand_toolchain_dirs(profile.toolchain_dirs).size();
  const fs::path memo_file = work / "toolchain-memo";
  warden::FileDigestMemo cold(memo_file);
  auto start = Clock::now();
  Json cold_id = warden::toolchain_identity(profile, host, cold);
  t.cold_ms = ms_since(start);
  t.cold_files = cold.files_read();
  t.cold_bytes = cold.bytes_read();
  t.memo_entries = cold.size();
  if (auto st = cold.save(); !st) die("saving the memo: " + st.error().message);
  start = Clock::now();
  warden::FileDigestMemo warm = warden::FileDigestMemo::load(memo_file);
  t.load_ms = ms_since(start);
  start = Clock::now();
  Json warm_id = warden::toolchain_identity(profile, host, warm);
  t.warm_ms = ms_since(start);
  t.warm_files = warm.files_read();
  t.warm_bytes = warm.bytes_read();
  t.same_identity = cold_id == warm_id;
  return t;
}

// The recipe asked for, or when the default one is absent, the built-in one written into `dir`.
fs::path recipe_to_use(const std::string& asked, const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(asked, ec)) return asked;
  fs::path file = dir / "environment.json";
  Json recipe = {{"format", warden::kRecipeFormat},
                 {"debian",
                  {{"suite", "bookworm"}, {"variant", "essential"}, {"packages", {"python3-minimal", "python3-sortedcontainers"}}}}};
  fs::create_directories(dir, ec);
  if (auto st = warden::write_file_atomic(file, recipe.dump(2) + "\n", 0644); !st) die(st.error().message);
  std::cerr << "environment_bench: " << asked << " does not exist; using " << file.string() << "\n";
  return file;
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

void print_table(const BuildFigures& b, const ChecksResult& c, const ToolchainFigures& t, int runs) {
  std::printf("recipe %s\n", b.recipe_path.c_str());
  if (!b.measured) {
    std::printf("  build not measured: %s\n", b.why.c_str());
  } else {
    std::printf("%-46s %10.1f s    (limit <= %.0f s)   %s\n", "build, cold (mmdebstrap, import)", b.cold_s, kColdBuildLimitS,
                verdict(b.cold_ok()));
    std::printf("%-46s %10.3f ms   (limit <= %.0f ms, reused)   %s\n", "build, warm (found by the recipe's digest)", b.warm_ms,
                kWarmBuildLimitMs, verdict(b.warm_ok()));
    std::printf("  environment %s: %llu files, %s\n", b.env.digest.str().c_str(), static_cast<unsigned long long>(b.env.files),
                mib(b.env.bytes).c_str());
    std::printf("%-46s %10.3f ms   (context: %llu files read)\n", "open_verified, first after the build", b.verify_first_ms,
                static_cast<unsigned long long>(b.verify_first_files));
    std::printf("%-46s %10.3f ms   (context: %llu files read)\n", "open_verified, again", b.verify_again_ms,
                static_cast<unsigned long long>(b.verify_again_files));
  }
  std::printf("\na check in the environment vs on the host's /usr (median of %d runs each, interleaved)\n", runs);
  if (!c.measured) {
    std::printf("  not measured: %s\n", c.why.c_str());
  } else {
    for (const auto& k : c.checks) {
      std::printf("  %s\n", k.name.c_str());
      std::printf("%-46s %10.3f ms\n", "    on the host's /usr", k.host_ms);
      std::printf("%-46s %10.3f ms   %.2fx the host (limit <= %.2fx)   %s\n", "    in the environment", k.env_ms, k.ratio(),
                  kCheckRatioLimit, verdict(k.ok()));
    }
  }
  std::printf("\nthe host default's toolchain identity (%zu toolchain_dirs on this host)\n", t.dirs);
  std::printf("%-46s %10.3f ms   (%llu files, %s read)\n", "cold: a fresh memo", t.cold_ms,
              static_cast<unsigned long long>(t.cold_files), mib(t.cold_bytes).c_str());
  std::printf("%-46s %10.3f ms   (%zu entries)\n", "memo load", t.load_ms, t.memo_entries);
  std::printf("%-46s %10.3f ms   (%llu files read; limit 0 files, <= %.0f%% of cold, same identity: %s)   %s\n",
              "warm: the memo saved and loaded", t.warm_ms, static_cast<unsigned long long>(t.warm_files), kWarmToolchainShare * 100,
              t.same_identity ? "yes" : "no", verdict(t.ok()));
}

Json to_json(const BuildFigures& b, const ChecksResult& c, const ToolchainFigures& t, int runs) {
  Json build = {{"measured", b.measured}, {"recipe", b.recipe_path}};
  if (!b.measured) {
    build["why"] = b.why;
  } else {
    build.update({{"cold_s", b.cold_s},
                  {"cold_limit_s", kColdBuildLimitS},
                  {"warm_ms", b.warm_ms},
                  {"warm_limit_ms", kWarmBuildLimitMs},
                  {"warm_reused", b.warm_reused},
                  {"environment", b.env.digest.str()},
                  {"files", b.env.files},
                  {"bytes", b.env.bytes},
                  {"open_verified_first_ms", b.verify_first_ms},
                  {"open_verified_first_files_read", b.verify_first_files},
                  {"open_verified_again_ms", b.verify_again_ms},
                  {"open_verified_again_files_read", b.verify_again_files},
                  {"ok", b.cold_ok() && b.warm_ok()}});
  }
  Json checks = {{"measured", c.measured}, {"runs", runs}, {"ratio_limit", kCheckRatioLimit}};
  if (!c.measured) {
    checks["why"] = c.why;
  } else {
    Json list = Json::array();
    for (const auto& k : c.checks) {
      list.push_back({{"command", k.name}, {"host_ms", k.host_ms}, {"environment_ms", k.env_ms}, {"ratio", k.ratio()}, {"ok", k.ok()}});
    }
    checks["commands"] = list;
    checks["ok"] = c.ok();
  }
  Json toolchain = {{"dirs", t.dirs},
                    {"cold_ms", t.cold_ms},
                    {"cold_files_read", t.cold_files},
                    {"cold_bytes_read", t.cold_bytes},
                    {"memo_entries", t.memo_entries},
                    {"memo_load_ms", t.load_ms},
                    {"warm_ms", t.warm_ms},
                    {"warm_files_read", t.warm_files},
                    {"warm_bytes_read", t.warm_bytes},
                    {"warm_share_limit", kWarmToolchainShare},
                    {"same_identity", t.same_identity},
                    {"ok", t.ok()}};
  return {{"build", build}, {"checks", checks}, {"toolchain", toolchain}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string recipe = (fs::path(WARDEN_SOURCE_DIR) / "examples/leaderboard/environment.json").string();
  int runs = 20;
  bool json = false;
  CLI::App app{"What environments cost: a recipe built cold and found warm, a check in one against the host's /usr, "
               "and the host's toolchain identity with a cold and a warm memo"};
  auto* recipe_opt = app.add_option("--recipe", recipe, "The recipe to build (warden.environment-recipe/v1)")->capture_default_str();
  app.add_option("--runs", runs, "Runs per check figure (median reported)")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_flag("--json", json, "Print one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);

  std::error_code ec;
  if (recipe_opt->count() > 0 && !fs::exists(recipe, ec)) die("no recipe at " + recipe);
  // 0755: the sandbox's uid (65534 when Warden is root) reaches the store's environments below it.
  auto work_dir = warden::ScratchDir::create(fs::temp_directory_path(), "environment-bench-", 0755);
  if (!work_dir) die(work_dir.error().message);
  const fs::path work = work_dir->path();
  const warden::SandboxHost host = warden::SandboxHost::detect();
  auto profile = warden::SandboxProfile::load("default");
  if (!profile) die(profile.error().message);

  const fs::path recipe_file = recipe_to_use(recipe, work / "recipe");
  const BuildFigures build = measure_build(recipe_file, work, host);
  ChecksResult checks;
  if (build.measured) {
    checks = measure_checks(build.env, *profile, host, work, runs);
  } else {
    checks.why = "no environment was built";
  }
  const ToolchainFigures toolchain = measure_toolchain(*profile, host, work);

  if (json) {
    std::cout << to_json(build, checks, toolchain, runs).dump(2) << "\n";
  } else {
    print_table(build, checks, toolchain, runs);
  }
  const bool ok = (!build.measured || (build.cold_ok() && build.warm_ok())) && (!checks.measured || checks.ok()) && toolchain.ok();
  return ok ? 0 : 1;
}
