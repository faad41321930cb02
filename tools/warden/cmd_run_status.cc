// `warden run status RUN_ID`, `warden run watch RUN_ID`, `warden run cancel RUN_ID` and
// `warden run recover [RUN_ID...]`:
// a build's state as its ledger records it, a way to stop it from another shell, and a way to
// record the end of runs whose process died. The ledger is the source: a run whose process
// died (kernel/record/run_registry.h tells) before recording an end is shown `interrupted`, with the
// last status it managed to record; recover records that end (kernel/record/run_recovery.h). Cancel
// sends the live process SIGTERM, which the build treats like Ctrl-C, and waits for the ledger
// to say the run ended. Status --follow (and watch, without the state) polls the ledger and
// prints each event as it lands.
// A pipeline run's id gets its status line and the `warden pipeline show` command.
#include <signal.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "common/clock.h"
#include "kernel/record/run_listing.h"
#include "kernel/record/run_recovery.h"
#include "kernel/record/run_registry.h"
#include "ledger/ledger.h"
#include "runner/workspace/git_repo.h"
#include "tools/warden/cli.h"
#include "kernel/record/run_report.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/run_view.h"

namespace warden::cli {

namespace {

constexpr const char* kServerHelp =
    "With --server ADDR [--token FILE] instead of --ledger: the same against `warden serve` (warden-grpc client "
    "run-status|run-cancel|run-watch --help lists the options).";

struct ControlArgs {
  std::string run_id, ledger, repo;
  std::vector<std::string> run_ids;
  double wait_s = 30;
  uint64_t from_seq = 0;
  bool json = false, follow = false;
};

// A pipeline run named to `run status`: its one line, and where its details are.
int pipeline_status(const ControlArgs& a, const Error& not_build) {
  auto entry = kernel::find_run(a.ledger, a.run_id);
  if (!entry || entry->kind != "pipeline") return report_error(not_build, a.json);
  print_pipeline_run(entry->to_json(), "warden pipeline show " + a.run_id + " --ledger " + a.ledger, a.json);
  return kOk;
}

// Whether a process drives the run, then the report: in that order, since a run records its
// end before its process lets go of it — so a report that is not terminal, read after the
// process was found gone, is the last thing it recorded.
struct Observed {
  bool live = false;
  Result<kernel::RunReport> report;
};
Observed observe(const ControlArgs& a) {
  const bool live = kernel::live_run_process(a.ledger, a.run_id).has_value();
  return Observed{live, kernel::read_run_report(a.ledger, a.run_id)};
}

int print_status(const ControlArgs& a, kernel::RunReport& report, bool live) {
  // A run that recorded its end is over, though its process may not have let go of it yet
  // (it records the end first): live means a process still drives an unfinished run, as in
  // `runs list`.
  live = live && !report.terminal();
  // No process drives it and it recorded no end: it was interrupted, whatever it last said.
  const bool interrupted = !live && !report.terminal();
  const std::string recorded = report.status;
  if (interrupted) report.status = "interrupted";
  Json j = report.to_json();
  j["live"] = live;
  if (interrupted) j["recorded_status"] = recorded;
  print_run_state(j, a.json, a.follow, "warden run recover " + a.run_id + " --ledger " + a.ledger);
  return kOk;
}

int run_status(const ControlArgs& a) {
  auto seen = observe(a);
  if (!seen.report) {
    if (seen.report.error().code == Errc::not_found) return pipeline_status(a, seen.report.error());
    return report_error(seen.report.error(), a.json);
  }
  if (!a.follow) return print_status(a, *seen.report, seen.live);
  // Follow: every event as it is recorded, until the run ends or its process is gone.
  uint64_t printed = 0;  // the seq after the last event printed
  for (;;) {
    for (const auto& [seq, ev] : seen.report->events) {
      if (seq < printed) continue;
      print_followed_event(ev, a.json);
      printed = seq + 1;
    }
    if (seen.report->terminal() || !seen.live) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    seen = observe(a);
    if (!seen.report) return report_error(seen.report.error(), a.json);
  }
  if (!a.json) std::cout << "\n";
  return print_status(a, *seen.report, seen.live);
}

// Every event from --from-seq on as it is recorded, until the terminal one; a run whose
// process is gone without recording an end stops the watch with an error.
int run_watch(const ControlArgs& a) {
  uint64_t next = a.from_seq;
  for (;;) {
    auto seen = observe(a);
    if (!seen.report) return report_error(seen.report.error(), a.json);
    for (const auto& [seq, ev] : seen.report->events) {
      if (seq < next) continue;
      print_followed_event(ev, a.json);
      next = seq + 1;
    }
    if (seen.report->terminal()) return kOk;
    if (!seen.live) {
      return report_error(Error{Errc::verification_failed, "run " + a.run_id +
                                                               " has no live process and no recorded end: `warden run recover " +
                                                               a.run_id + " --ledger " + a.ledger + "` records it"},
                          a.json);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int run_recover(const ControlArgs& a) {
  SystemClock clock;
  RandomIdSource ids;
  auto ledger = Ledger::open(a.ledger, Ledger::Mode::read_write, clock);
  if (!ledger) return report_error(ledger.error(), a.json);
  std::optional<GitRepo> repo;
  if (!a.repo.empty()) {
    auto opened = GitRepo::open(a.repo);
    if (!opened) return report_error(Error{Errc::not_found, "--repo: " + opened.error().message()}, a.json);
    repo.emplace(std::move(*opened));
  }
  auto recovered = kernel::recover_runs(*ledger, clock, ids, repo ? &*repo : nullptr, a.run_ids);
  if (!recovered) return report_error(recovered.error(), a.json);
  bool any_live = false;
  if (a.json) {
    Json list = Json::array();
    for (const auto& r : *recovered) list.push_back(r.to_json());
    print_json({{"runs", list}});
  }
  for (const auto& r : *recovered) {
    any_live = any_live || r.live;
    if (a.json) continue;
    if (r.live) std::cout << r.run_id << "  live: its process is running; nothing recorded\n";
    else if (r.recorded) std::cout << r.run_id << "  recorded interrupted (was " << r.last_status << ")" << (r.branch.empty() ? "" : "; " + r.branch) << "\n";
    else std::cout << r.run_id << "  had ended (" << r.last_status << "); nothing to record\n";
  }
  if (!a.json && recovered->empty()) std::cout << "no interrupted runs\n";
  return any_live ? kVerificationFailed : kOk;
}

int run_cancel(const ControlArgs& a) {
  auto pid = kernel::live_run_process(a.ledger, a.run_id);
  if (!pid) {
    return report_error(Error{Errc::not_found, "no live process drives run " + a.run_id + " (see warden run status)"},
                        a.json);
  }
  if (::kill(*pid, SIGTERM) != 0) {
    return report_error(Error{Errc::io_error, "signalling process " + std::to_string(*pid) + " failed"}, a.json);
  }
  // The build records its terminal status before it lets go of the run; poll for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.wait_s);
  for (;;) {
    auto report = kernel::read_run_report(a.ledger, a.run_id);
    if (!report) return report_error(report.error(), a.json);
    if (report->terminal()) {
      if (a.json) {
        print_json(report->to_json());
      } else {
        print_run_report(report->to_json());
      }
      return report->status == "cancelled" ? kOk : kVerificationFailed;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::cerr << "warden: run " << a.run_id << " is still " << report->status << " after "
                << a.wait_s << " s; the cancel request stands\n";
      return kTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

void add_run_control_commands(CLI::App& run, Action& action) {
  auto a = std::make_shared<ControlArgs>();
  auto* status = run.add_subcommand(
      "status", "Print a build or propose run's state as its ledger records it so far: status, the step it is on, steps "
                "accepted of the plan's total, attempts, the last commit (a pipeline run: its status, and where its "
                "details are)");
  status->add_option("RUN_ID", a->run_id, "The run's id (printed by warden build and warden propose; warden runs list "
                                          "lists them)")
      ->required();
  status->add_option("--ledger", a->ledger, "Ledger directory")->required();
  status->add_flag("--follow,-f", a->follow, "Print every event recorded so far and then each new one as it lands, until "
                                             "the run ends or its process is gone; then the state");
  status->add_flag("--json", a->json, "Print JSON (with --follow: one event per line first, the state last)");
  status->footer("Exit: 0 the run exists (whatever its state), 4 no such run or ledger.\n" + std::string(kServerHelp));
  status->callback([a, &action] { action = [a] { return run_status(*a); }; });

  auto* cancel = run.add_subcommand(
      "cancel", "Cancel a live build run: its process stops its sandboxes and records the run as cancelled");
  cancel->add_option("RUN_ID", a->run_id, "The run's id")->required();
  cancel->add_option("--ledger", a->ledger, "Ledger directory")->required();
  cancel->add_option("--wait", a->wait_s, "Seconds to wait for the run to end (0: ask, and do not wait)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cancel->add_flag("--json", a->json, "Print the run's final state as JSON");
  cancel->footer("Exit: 0 cancelled, 1 the run ended otherwise first, 4 no live process drives the run, 124 the run "
                 "had not ended within --wait.\n" + std::string(kServerHelp));

  auto* watch = run.add_subcommand(
      "watch", "Print a build or propose run's events as they are recorded (as run status --follow does), until its "
               "terminal one");
  watch->add_option("RUN_ID", a->run_id, "The run's id")->required();
  watch->add_option("--ledger", a->ledger, "Ledger directory")->required();
  watch->add_option("--from-seq", a->from_seq, "Start at this ledger seq (the last one seen + 1 resumes a watch)");
  watch->add_flag("--json", a->json, "Print each event as its recorded JSON, one per line");
  watch->footer("Exit: 0 the run ended, 1 it has no live process and no recorded end, 4 no such run or ledger.\n" +
                std::string(kServerHelp));
  watch->callback([a, &action] { action = [a] { return run_watch(*a); }; });
  cancel->callback([a, &action] { action = [a] { return run_cancel(*a); }; });

  auto* recover = run.add_subcommand(
      "recover",
      "Record the end of runs whose process died (killed, crashed, or unable to write the ledger): each gets status "
      "interrupted; with --repo, a branch left at a commit the ledger never confirmed is moved back");
  recover->add_option("RUN_ID", a->run_ids, "Runs to recover (default: every run whose process died without recording an end)");
  recover->add_option("--ledger", a->ledger, "Ledger directory")->required();
  recover->add_option("--repo", a->repo, "The runs' git repository: branches at unconfirmed commits are moved back");
  recover->add_flag("--json", a->json, "Print {\"runs\": [...]} as JSON");
  recover->footer("Exit: 0 done (also when there was nothing to recover), 1 a named run is still live, 4 no such run or "
                  "ledger.");
  recover->callback([a, &action] { action = [a] { return run_recover(*a); }; });
}

}  // namespace warden::cli
