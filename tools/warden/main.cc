// `warden`: the verification kernel's command-line tool.
#include <iostream>

#include "tools/warden/cli.h"

namespace {

constexpr const char* kFooter = R"(Exit codes:
  0   success
  1   verification failed: a ledger, proof, signature or note does not hold
  2   usage error: bad flags or arguments
  3   invalid input: malformed JSON, hash, key or file, or a size limit exceeded
  4   not found: no such ledger, record, file or key
  5   I/O or storage error: permissions, disk, locks
  6   already exists: Warden never overwrites a ledger or an export
  70  internal error: a bug, please report it

Hashes on the command line are 64 lowercase hex characters; proofs are comma-separated
hashes in RFC 9162 order. Every command takes --help.)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"warden: a deterministic verification kernel with a tamper-evident ledger", "warden"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.set_version_flag("--version", "warden 0.1.0");
  warden::cli::Action action;
  warden::cli::add_build_commands(app, action);
  warden::cli::add_diff_commands(app, action);
  warden::cli::add_key_commands(app, action);
  warden::cli::add_ledger_commands(app, action);
  warden::cli::add_merkle_commands(app, action);
  warden::cli::add_note_commands(app, action);
  warden::cli::add_pipeline_commands(app, action);
  warden::cli::add_plan_commands(app, action);
  warden::cli::add_propose_commands(app, action);
  warden::cli::add_receipt_commands(app, action);
  warden::cli::add_replay_commands(app, action);
  warden::cli::add_run_commands(app, action);
  warden::cli::add_sandbox_commands(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return warden::kUsage;
  }
  if (!action) {
    std::cerr << "warden: error: choose a subcommand (see warden --help)\n";
    return warden::kUsage;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    std::cerr << "warden: internal error: " << e.what() << "\n";
    return warden::kInternal;
  }
}
