// How a kernel run looks on the command line, in one place for `warden` (which renders its own
// runs and ledgers) and `warden-grpc client` (which renders what a server sends): a build's
// progress lines, its header and summary, `warden run status`'s state and event lines. Each
// renderer works from what both sides have: a kernel::RunEvent (a server's events are rebuilt
// into one) and the JSON the --json commands print (BuildSummary::to_json(), RunReport's with
// "live"), so a remote command prints byte for byte what the local one does.
// Writes to std::cout; pure otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "kernel/record/run_lifecycle.h"

namespace warden::cli {

// A finished run's exit code: 0 completed, 124 timeout, 130 cancelled, 1 failed.
int run_exit_code(kernel::RunStatus status);

// A recorded timestamp as UTC, to the second (ISO 8601).
std::string utc(int64_t ms);

// `warden build`'s first lines, printed when the run starts.
struct BuildHeader {
  std::string blueprint, run_id, executor;
  std::optional<std::string> executor_sandbox;  // "profile NAME sha256:..., network off"
  std::string repository, ledger;               // where they are, as the reader knows them
};
void print_build_header(const BuildHeader& header);

// Which run a runner event's data is about, for people: "base run", "proposal", "oracle run
// (its test changes left out)" or "held-out run".
std::string run_label(const Json& data);

// What a build's progress lines remember between events: the checks each proposal's run did
// not pass, so an acceptance says which of them were not held against it. One per build.
struct BuildProgress {
  std::map<std::string, std::vector<std::string>> not_passed;  // by "step#attempt"
};

// One line per thing that happened in a build (steps started, verdicts, each run's checks
// labelled by which run it is, replans, watchdog and cancellation); nothing for the others.
void print_build_progress(const kernel::RunEvent& event, BuildProgress& progress);

// A build's event in its stream: with `json` the event line (kernel/record/event_stream.h), else the
// progress line(s).
void print_build_event(const kernel::RunEvent& event, bool json, BuildProgress& progress);

// The summary after a build: `summary` is BuildSummary::to_json() (the --json result line
// without "type"); `repository` and `ledger` say where they are.
void print_build_summary(const Json& summary, const std::string& repository, const std::string& ledger);

// `warden run status`'s block for people, from RunReport::to_json() (with "live" when known).
void print_run_report(const Json& report);

// One recorded event as a line for people: when, what, which step, and what it says.
void print_run_event(const kernel::RunEvent& event);

// An event as `warden run status --follow` and `warden run watch` print it: the recorded
// JSON (one line) with `json`, else print_run_event's line.
void print_followed_event(const kernel::RunEvent& event, bool json);

// `warden run status`'s state: `state` is RunReport::to_json() with "live" (and, for a run
// whose process died without recording an end, "status": "interrupted" and
// "recorded_status"). With `json` the result line — after --follow's event lines a plain
// line, so the stream stays the event lines' kind; else print_run_report and, for an
// interrupted run, a note naming `recover_command`.
void print_run_state(const Json& state, bool json, bool follow, const std::string& recover_command);

// `warden run status` of a pipeline run: its listing entry (kernel::RunEntry::to_json()) as
// one line and where its details are (`details`, e.g. the `warden pipeline show` command);
// with `json` the entry with "show_command" as the result line.
void print_pipeline_run(const Json& entry, const std::string& details, bool json);

}  // namespace warden::cli
