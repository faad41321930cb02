// `warden replay`: an auditor's offline check of a ledger or an export — integrity first,
// then every plan verdict, decision and commit recomputed from the recorded inputs.
#include <iostream>

#include "kernel/audit/replay.h"
#include "tools/warden/cli.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/verify_flags.h"

namespace warden::cli {

namespace {

struct ReplayArgs {
  std::string path, repo, repos, cache, env_store;
  bool rebuild_environments = false;
  VerifyFlags verify;
  bool rerun = false, json = false;
};

int run(const ReplayArgs& a) {
  if (a.rerun && a.repo.empty() && a.repos.empty()) {
    return report_error(Error{Errc::invalid_argument, "--rerun needs --repo or --repos (the recorded trees are checked out "
                                                      "from the repository)"},
                        a.json, kUsage);
  }
  kernel::ReplayOptions options;
  auto verify = verify_options(a.verify);
  if (!verify) return report_error(verify.error(), a.json);
  options.verify = std::move(*verify);
  if (!a.repo.empty()) options.repo = a.repo;
  if (!a.repos.empty()) options.repos = a.repos;
  options.rerun = a.rerun;
  options.cache_dir = a.cache.empty() ? default_cache_dir() : a.cache;
  options.env_store = a.env_store;
  options.rebuild_environments = a.rebuild_environments;
  auto report = kernel::replay(a.path, options);
  if (!report) return report_error(report.error(), a.json);
  // Warnings are about the audit, not its result: stderr, as `warden ledger verify` prints them.
  for (const auto& w : report->warnings) std::cerr << "warden: warning: " << w << "\n";
  if (a.json) {
    // "ok": nothing replayed otherwise than recorded; "verified": that, and no decision rests
    // on held-out results not revealed yet (the exit status).
    Json j = {{"ok", report->ok()},
              {"verified", report->ok() && report->pending_reveal == 0},
              {"records", report->records},
              {"runs", report->runs},
              {"plans", report->plans},
              {"decisions", report->decisions},
              {"commits", report->commits},
              {"reruns", report->reruns},
              {"branches", report->branches},
              {"pending_reveal", report->pending_reveal},
              {"revealed", report->revealed},
              {"root", report->root_hex},
              {"key_source", report->key_source},
              {"signed_size", report->signed_size},
              {"unsigned_records", report->unsigned_records},
              {"unsigned_tail", unsigned_tail_json(report->signed_size, report->unsigned_records)},
              {"warnings", report->warnings}};
    if (report->problem) {
      j["problem"] = {{"seq", report->problem->seq}, {"kind", report->problem->kind}, {"message", report->problem->message}};
    }
    print_json(j);
  } else if (report->ok() && report->pending_reveal > 0) {
    std::cout << "NOT VERIFIED: " << report->pending_reveal << " decisions rest on held-out checks whose bundle is not "
              << "revealed yet (`warden held-out reveal`); the other " << report->records << " records replay\n";
  } else if (report->ok()) {
    std::cout << "OK: " << report->records << " records replayed: " << report->plans << " plan verdicts, "
              << report->decisions << " decisions recomputed, " << report->commits << " commits checked";
    if (a.rerun) std::cout << ", " << report->reruns << " runs re-executed";
    if (!a.repo.empty()) std::cout << ", " << report->branches << " branches at the ledger's last commit";
    std::cout << "\nroot " << report->root_hex << "  (key from " << report->key_source << ")\n";
    if (report->unsigned_records > 0) {
      std::cout << "unsigned tail: " << report->unsigned_records << " records (seq " << report->signed_size << ".."
                << report->signed_size + report->unsigned_records - 1 << ") after the last signed checkpoint\n";
    }
  } else {
    const kernel::ReplayProblem& p = *report->problem;
    // An integrity problem is named "record N" already: say it once.
    const std::string at = "record " + std::to_string(p.seq);
    std::cout << "FAILED at " << at << (p.kind == at ? "" : " (" + p.kind + ")") << ": " << p.message << "\n";
  }
  // Decisions pending a reveal are not verified: the counts they rest on are the kernel's word.
  return report->ok() && report->pending_reveal == 0 ? kOk : kVerificationFailed;
}

}  // namespace

void add_replay_commands(CLI::App& app, Action& action) {
  auto a = std::make_shared<ReplayArgs>();
  auto* cmd = app.add_subcommand(
      "replay",
      "Audit a ledger or an export offline: verify its chain, Merkle tree, checkpoints and blobs, then recompute every "
      "plan verdict and every decision from the recorded inputs and check every commit record against them");
  cmd->add_option("ledger", a->path, "Ledger directory or export directory")->required();
  add_verify_flags(cmd, a->verify, "Verifier key (string or file) the checkpoints must be signed with (repeatable; "
                                   "default: the ledger's own, which proves less)");
  auto* repo = cmd->add_option("--repo", a->repo, "The git repository: commits are checked to exist with the recorded trees, and every branch the ledger moved to be at the last commit it accepted");
  auto* repos = cmd->add_option("--repos", a->repos,
                                "A directory of repositories, one per repository a server's runs used (warden serve's "
                                "STATE/repos): each run is checked against the one holding its trees and commits");
  repos->excludes(repo);
  // A usage error (exit 2): the runner checks out the recorded trees from the repository.
  cmd->add_flag("--rerun", a->rerun, "Also re-execute every recorded run in the sandbox and compare the deterministic "
                                     "part of the results (needs --repo or --repos)");
  cmd->add_option("--cache", a->cache, "Runner cache for --rerun (default as warden build)");
  cmd->add_flag("--rebuild-environments", a->rebuild_environments,
                "With --rerun: build a recorded environment the store lacks from the ledger's recipe (its prepare steps, "
                "the ledger author's commands, run in a sandbox with network)");
  cmd->add_option("--env-store", a->env_store,
                  "Where --rerun finds the environments runs recorded (built again from the recorded recipe when "
                  "missing); default as warden build");
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  cmd->footer("Exit: 0 everything replays, 1 a difference (named by record), 2 usage (--rerun without --repo), "
              "3/4/5 unreadable input. Warnings (a key the ledger vouches for itself, an unsigned tail) go to stderr.");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

}  // namespace warden::cli
