// What every `warden` subcommand shares: documented exit codes, error and JSON output,
// and loading keys and hashes from the command line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/exit_codes.h"
#include "common/sha256.h"
#include "ledger/note.h"
#include "runner/model/check_spec.h"
#include "tools/warden/json_lines.h"

namespace warden::cli {

// The action a parsed subcommand runs; returns the exit code.
using Action = std::function<int()>;

// A verifier key given as the key string itself or as a file holding it.
Result<NoteVerifier> load_verifier(const std::string& arg);
Result<std::vector<NoteVerifier>> load_verifiers(const std::vector<std::string>& args);
// 64 lowercase hex characters (the CLI's spelling of Merkle hashes).
Result<Digest> parse_hex_digest(std::string_view text, std::string_view what);
Result<std::vector<Digest>> parse_proof(std::string_view text);
std::string join_proof(const std::vector<Digest>& proof);

// The --check commands as checks named `prefix`1, `prefix`2, ..., each with its report format
// from --report (none given: detected from the command; one: for every check; else one per
// check, in order). Prints on stderr why a detected test runner gives no report.
Result<std::vector<CheckSpec>> command_checks(const std::vector<std::string>& commands,
                                              const std::vector<std::string>& reports, std::string_view prefix);
// --report's help, shared by propose and run.
extern const char* const kReportHelp;

void add_build_commands(CLI::App& app, Action& action);
void add_diff_commands(CLI::App& app, Action& action);
void add_env_commands(CLI::App& app, Action& action);
void add_held_out_commands(CLI::App& app, Action& action);
void add_approve_commands(CLI::App& app, Action& action);
void add_key_commands(CLI::App& app, Action& action);
void add_ledger_commands(CLI::App& app, Action& action);
void add_merkle_commands(CLI::App& app, Action& action);
void add_note_commands(CLI::App& app, Action& action);
void add_pipeline_commands(CLI::App& app, Action& action);
void add_plan_commands(CLI::App& app, Action& action);
void add_receipt_commands(CLI::App& app, Action& action);
void add_replay_commands(CLI::App& app, Action& action);
void add_propose_commands(CLI::App& app, Action& action);
void add_run_commands(CLI::App& app, Action& action);
void add_runs_commands(CLI::App& app, Action& action);
// status, watch, cancel and recover, under `run` (cmd_run.cc calls it).
void add_run_control_commands(CLI::App& run, Action& action);
void add_sandbox_commands(CLI::App& app, Action& action);
void add_serve_commands(CLI::App& app, Action& action);
void add_fleet_commands(CLI::App& app, Action& action);  // agents, runner

}  // namespace warden::cli
