// warden run: materialize a base revision, apply a diff, run checks in the sandbox and print
// the RunResult (from the result cache when the same tree, checks, profile and toolchain ran
// before). The same command holds the kernel runs' status, watch, cancel and recover subcommands
// (cmd_run_status.cc); its help says both, and the runner's options stand in their own group.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "common/file.h"
#include "runner/workspace/blob_sink.h"
#include "runner/check/local_runner.h"
#include "runner/environment/environment_recipe.h"
#include "tools/warden/cli.h"
#include "tools/warden/env_flags.h"
#include "tools/warden/kernel_cli.h"

namespace warden::cli {
namespace {

struct Options {
  std::string repo, base, diff, profile = "default", checks_file, cache_dir, blobs_dir, environment, env_store;
  std::vector<std::string> checks, reports;
  double timeout_s = 0;
  int64_t runs = 1;
  bool json = false, no_cache = false;
};

int report_refusal(const Refusal& r, bool json) {
  std::cerr << "warden: refused: " << r.message() << "\n";
  if (json) print_json({{"ok", false}, {"refusal", {{"code", std::string(refusal_code_name(r.code))}, {"path", r.path}, {"detail", r.detail}}}});
  return exit_code_for(r.code);
}

Result<std::vector<CheckSpec>> load_checks(const Options& o) {
  std::vector<CheckSpec> out;
  if (!o.checks_file.empty()) {
    auto text = read_file(o.checks_file, 16 << 20);
    if (!text) return std::unexpected(text.error());
    auto json = parse_json(*text, "checks file " + o.checks_file);
    if (!json) return std::unexpected(json.error());
    if (!json->is_array()) return fail(Errc::invalid_argument, o.checks_file + ": must be a JSON array of checks");
    for (size_t i = 0; i < json->size(); ++i) {
      auto spec = CheckSpec::from_json((*json)[i], "checks[" + std::to_string(i) + "]");
      if (!spec) return std::unexpected(spec.error().with_context(o.checks_file));
      out.push_back(std::move(*spec));
    }
  }
  auto commands = command_checks(o.checks, o.reports, "check-");
  if (!commands) return std::unexpected(commands.error());
  for (CheckSpec& spec : *commands) {
    spec.runs = o.runs;
    out.push_back(std::move(spec));
  }
  if (o.timeout_s > 0) {
    for (auto& c : out) c.timeout_ms = static_cast<int64_t>(std::ceil(o.timeout_s * 1000));
  }
  if (out.empty()) return fail(Errc::invalid_argument, "no checks: give --check 'CMD' or --checks FILE.json");
  return out;
}

void print_human(const RunOutcome& out) {
  const RunResult& r = out.result;
  std::cout << "tree      " << r.tree << "  " << r.tree_sha256.str() << "\n";
  if (r.base_tree) std::cout << "base      " << *r.base_tree << (r.diff_sha256 ? "  diff " + r.diff_sha256->str() : "") << "\n";
  std::cout << "profile   " << r.profile << "  " << r.profile_sha256.str() << "  preflight "
            << (r.preflight.ok ? "ok" : "FAILED") << "\n";
  std::cout << "result    " << (out.cache_hit ? "from the cache (nothing ran)" : "ran") << "  deterministic digest "
            << r.deterministic_digest().str() << "\n\n";
  for (const auto& c : r.checks) {
    std::cout << c.verdict << "  " << c.name;
    for (const auto& run : c.runs) {
      std::cout << "  [exit " << run.exit_code << (run.timed_out ? ", timed out" : "")
                << (run.output_limit_exceeded ? ", output limit" : "");
      for (const auto& limit : run.limits_hit) std::cout << ", " << limit << " limit reached";
      std::cout << ", " << run.duration_ms << " ms"
                << (run.error.empty() ? "" : ", error: " + run.error) << "]";
    }
    std::cout << "\n";
    if (!c.tests.empty()) {
      size_t passed = std::count_if(c.tests.begin(), c.tests.end(), [](const TestCase& t) { return t.status == "passed"; });
      std::cout << "    tests: " << passed << " of " << c.tests.size() << " passed\n";
    }
    if (!c.runs.empty() && !c.runs.back().report_detail.empty()) {
      std::cout << "    report " << c.runs.back().report << ": " << c.runs.back().report_detail << "\n";
    }
    if (c.judgement) std::cout << "    FAIL_TO_PASS/PASS_TO_PASS: " << (c.judgement->ok ? "ok" : "NOT met") << "\n";
    if (c.verdict != kPassed && !c.runs.empty()) {
      const CheckRun& run = c.runs.back();
      const std::string& text = run.err.bytes > 0 ? (run.err.tail.empty() ? run.err.head : run.err.tail)
                                                  : (run.out.tail.empty() ? run.out.head : run.out.tail);
      if (!text.empty()) std::cout << "    output (last part):\n" << text << (text.back() == '\n' ? "" : "\n");
    }
  }
  for (const auto& [name, v] : r.invariants) {
    std::cout << "invariant " << name << ": " << (v.proven ? "proven" : "NOT proven") << " by " << v.check << "\n";
  }
}

int run_run(const Options& o) {
  if (o.repo.empty() || o.base.empty()) {
    return report_error(Error{Errc::invalid_argument, "run needs --repo and --base (see warden run --help)"}, o.json, kUsage);
  }
  auto checks = load_checks(o);
  if (!checks) return report_error(checks.error(), o.json);
  std::optional<Diff> diff;
  if (!o.diff.empty()) {
    auto text = read_file(o.diff, uint64_t{256} << 20);
    if (!text) return report_error(text.error(), o.json);
    auto json = parse_json(*text, "diff file " + o.diff);
    if (!json) return report_error(json.error(), o.json);
    auto parsed = Diff::from_json(*json);
    if (!parsed) return report_refusal(parsed.error(), o.json);
    diff = std::move(*parsed);
  }
  auto profile = SandboxProfile::load(o.profile);
  if (!profile) return report_error(profile.error(), o.json);
  auto repo = GitRepo::open(o.repo);
  if (!repo) return report_refusal(repo.error(), o.json);
  auto commit = repo->resolve_commit(o.base);
  if (!commit) return report_refusal(commit.error(), o.json);
  auto base_tree = repo->tree_of(*commit);
  if (!base_tree) return report_refusal(base_tree.error(), o.json);

  RunnerOptions options;
  options.cache_dir = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
  options.use_cache = !o.no_cache;
  options.env_store = o.env_store;
  if (!o.environment.empty()) {
    auto env = resolve_environment(o.environment, std::filesystem::current_path(), o.env_store,
                                   [&](std::string_view line) { if (!o.json) std::cerr << "warden: environment: " << line << "\n"; });
    if (!env) return report_error(env.error(), o.json);
    options.environment = env->digest;
  }
  auto blobs = DirectoryBlobSink::open(o.blobs_dir.empty() ? options.cache_dir / "blobs" : std::filesystem::path(o.blobs_dir));
  if (!blobs) return report_error(blobs.error(), o.json);
  auto runner = LocalRunner::create(std::move(*profile), options);
  if (!runner) return report_error(runner.error(), o.json);

  RunRequest request;
  request.base_tree = *base_tree;
  request.diff = diff ? &*diff : nullptr;
  request.checks = std::move(*checks);
  auto out = runner->run(*repo, request);
  if (!out) return report_refusal(out.error(), o.json);
  for (const auto& [digest, bytes] : out->bodies) {
    if (auto put = blobs->put(bytes); !put) return report_error(put.error(), o.json);
  }
  if (o.json) {
    print_json(out->result.to_json());
  } else {
    print_human(*out);
  }
  if (out->result.all_passed()) return kOk;
  // A run the sandbox could not make says nothing about the tree: that is the environment's.
  bool broken = std::any_of(out->result.checks.begin(), out->result.checks.end(),
                            [](const CheckResult& c) { return c.verdict == kError; });
  return broken ? kIoError : kVerificationFailed;
}

}  // namespace

void add_run_commands(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  auto* run = app.add_subcommand(
      "run", "Two uses. (1) The sandboxed runner: warden run --repo R --base REV --check CMD [runner options] checks "
             "out a base revision (cached), applies a diff in an overlay, runs the checks in the sandbox and prints the "
             "RunResult. (2) Kernel runs: warden run status|watch|cancel|recover RUN_ID --ledger DIR follows, stops or "
             "closes a build or propose run (warden runs list DIR lists them); each subcommand has its own --help.");
  run->footer("Runner exit: 0 every check passed, 1 one did not (or the diff does not apply), 2 no --repo or --base, 3 "
              "the diff is malformed, 4 the repository or revision is missing, 5 the sandbox cannot prove itself or could "
              "not run a check.\nSubcommands: see warden run status --help, warden run watch --help, warden run cancel --help, warden run recover "
              "--help.");
  // Not ->required(): the subcommands take none of these, so run_run checks them itself.
  const std::string runner = "Runner options (warden run --repo R --base REV ...)";
  run->add_option("--repo", o->repo, "Git repository (the runner needs it)")->group(runner);
  run->add_option("--base", o->base, "Base revision: branch, tag, commit (the runner needs it)")->group(runner);
  run->add_option("--diff", o->diff, "Canonical Diff JSON to apply to the base (see warden diff parse)")->group(runner);
  run->add_option("--profile", o->profile, "Sandbox profile: a built-in name (default, strict) or a JSON file")
      ->capture_default_str()
      ->group(runner);
  run->add_option("--check", o->checks, "A shell command to run as a check (repeatable; run with /bin/sh -c; its test report is detected from the command, see --report)")
      ->allow_extra_args(false)
      ->group(runner);
  run->add_option("--report", o->reports, kReportHelp)->allow_extra_args(false)->group(runner);
  run->add_option("--checks", o->checks_file, "A JSON array of check specs (name, argv, runs, quorum, report_format, "
                                              "report_path, fail_to_pass, pass_to_pass, proves, env, timeout_ms; report_format: none, junit, "
                                              "tap, unittest, pytest, ctest or go-json)")
      ->group(runner);
  run->add_option("--timeout", o->timeout_s, "Per-run wall-clock timeout in seconds for every check")
      ->check(CLI::PositiveNumber)
      ->group(runner);
  run->add_option("--runs", o->runs, "Runs of each --check (disagreeing runs give flaky_oracle)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str()
      ->group(runner);
  run->add_option("--cache", o->cache_dir, "Cache directory: base checkouts and results (default /var/cache/warden "
                                           "as root, else ~/.cache/warden)")
      ->group(runner);
  run->add_option("--blobs", o->blobs_dir, "Where captured output bodies go (default <cache>/blobs)")->group(runner);
  run->add_option("--environment", o->environment, std::string(kEnvironmentFlagHelp))->group(runner);
  run->add_option("--env-store", o->env_store, std::string(kEnvStoreFlagHelp))->group(runner);
  run->add_flag("--no-cache", o->no_cache, "Always run; neither read nor write the result cache")->group(runner);
  run->add_flag("--json", o->json, "Print the RunResult as the result line (docs/commands.md: JSON Lines)")->group(runner);
  add_run_control_commands(*run, action);
  // CLI11 runs this after a subcommand's callback: the subcommand's action wins.
  run->callback([&action, o, run] {
    if (run->get_subcommands().empty()) action = [o] { return run_run(*o); };
  });
}

}  // namespace warden::cli
