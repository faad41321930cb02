// `warden runs list LEDGER`: every run a ledger holds — builds, proposals and pipelines alike
// — one line each: its id, kind, status, when it started (its first record's timestamp) and
// steps done of total. The listing is the kernel's (kernel/record/run_listing.h); this file prints it.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "kernel/record/run_listing.h"
#include "tools/warden/cli.h"
#include "tools/warden/run_view.h"

namespace warden::cli {

namespace {

struct RunsArgs {
  std::string ledger;
  bool json = false;
};

std::string steps(const kernel::RunEntry& e) {
  return std::to_string(e.steps_done) + "/" + (e.steps_total ? std::to_string(*e.steps_total) : std::string("-"));
}

int run_list(const RunsArgs& a) {
  auto runs = kernel::list_runs(a.ledger);
  if (!runs) return report_error(runs.error(), a.json);
  if (a.json) {
    // JSON Lines: one line of type "run" per run, then the result line.
    for (const auto& e : *runs) print_item("run", e.to_json());
    print_json({{"runs", runs->size()}});
    return kOk;
  }
  if (runs->empty()) {
    std::cout << "no runs in " << a.ledger << "\n";
    return kOk;
  }
  // Columns as wide as their widest value ("interrupted (running)"), two spaces apart.
  auto status_of = [](const kernel::RunEntry& e) { return e.phase.empty() ? e.status : e.status + " (" + e.phase + ")"; };
  size_t id_width = 6, status_width = 6;
  for (const auto& e : *runs) {
    id_width = std::max(id_width, e.run_id.size());
    status_width = std::max(status_width, status_of(e).size());
  }
  auto row = [&](std::string_view id, std::string_view kind, std::string_view status, std::string_view started,
                 std::string_view steps) {
    std::cout << std::left << std::setw(static_cast<int>(id_width) + 2) << id << std::setw(10) << kind
              << std::setw(static_cast<int>(status_width) + 2) << status << std::setw(22) << started << steps;
  };
  row("RUN", "KIND", "STATUS", "STARTED (UTC)", "STEPS");
  std::cout << "\n";
  for (const auto& e : *runs) {
    row(e.run_id, e.kind, status_of(e), utc(e.started_ms), steps(e));
    if (!e.detail.empty()) std::cout << "  " << e.detail;
    std::cout << "\n";
  }
  return kOk;
}

}  // namespace

void add_runs_commands(CLI::App& app, Action& action) {
  auto a = std::make_shared<RunsArgs>();
  auto* runs = app.add_subcommand("runs", "The runs a ledger holds");
  runs->require_subcommand(1);
  auto* list = runs->add_subcommand(
      "list", "List every run in a ledger — build, propose and pipeline runs — with its kind, status (completed, "
              "refused, failed, timeout, cancelled, interrupted, live; a pipeline's waiting or unfinished), when it started and "
              "its steps done of total");
  list->add_option("LEDGER", a->ledger, "Ledger directory")->required();
  list->add_flag("--json", a->json, "JSON Lines: one line of type \"run\" per run (run_id, kind, status, started_ms, steps_done, "
                                    "steps_total (null for a pipeline), phase and detail when there are any");
  list->footer("A run's details: warden run status RUN_ID --ledger LEDGER (build and propose runs), warden pipeline "
               "show RUN_ID --ledger LEDGER (pipeline runs).\nExit: 0 listed (also when there are none), 4 no ledger, "
               "1 a run's records do not read back.");
  list->callback([a, &action] { action = [a] { return run_list(*a); }; });
}

}  // namespace warden::cli
