// The server's way to run the `warden` CLI for the things it does by the CLI's own code in a
// process of its own: plans generated, verified and committed, pipelines run and resumed, a
// fresh ledger, the recorded end of interrupted runs, a new checkpoint, a receipt (which may
// store a checkpoint). With the builds, which the RunManager runs as `warden build` children
// (service/run_manager.h), these are every ledger write the server causes but one: the
// server process opens its ledger read-write when it can (service/shared_ledger.h) and
// itself appends the fleet's fleet_event records and signs checkpoints over them
// (service/fleet_recorder.h). LMDB serializes its writes with those of every child.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::service {

// The `warden` binary beside this one.
std::filesystem::path warden_binary();

// How a `warden` command ended.
struct CliRun {
  int exit_code = -1;  // -1: it did not exit (killed, timed out)
  std::string out, err;
};

// Runs `warden ARGS...` (output capped) to its end, at most `timeout`. Errors only when it
// could not be started.
Result<CliRun> run_warden_to_end(const std::vector<std::string>& args, std::chrono::milliseconds timeout);

// The Error a failed command's exit code names (common/exit_codes.h), with the command's own
// message from its standard error.
Error cli_error(const CliRun& run, const std::string& command);

// The result line of a --json command (its last line, of type "result"), or the command's
// own error (cli_error).
Result<Json> result_line(const CliRun& run, const std::string& command);

// run_warden_to_end (at most 2 minutes) for commands whose output matters only on success:
// their standard output, or cli_error().
Result<std::string> run_warden(const std::vector<std::string>& args);

}  // namespace warden::service
