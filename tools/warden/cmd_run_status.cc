// `warden run status RUN_ID` and `warden run cancel RUN_ID`: a build's state as its ledger
// records it, and a way to stop it from another shell. The ledger is the only source: a run
// whose process died shows the last status it managed to record, and "live" says whether a
// warden process still drives it (kernel/run_registry.h). Cancel sends that process SIGTERM,
// which the build treats like Ctrl-C, and waits for the ledger to say the run ended.
#include <signal.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "kernel/run_registry.h"
#include "tools/warden/cli.h"
#include "tools/warden/kernel_cli.h"
#include "kernel/run_report.h"

namespace warden::cli {

namespace {

struct ControlArgs {
  std::string run_id, ledger;
  double wait_s = 30;
  bool json = false;
};

void print_report(const kernel::RunReport& r, bool live) {
  std::cout << "run        " << r.run_id << "  " << r.status << (live ? "  (live)" : "") << "\n";
  if (!r.error_type.empty()) std::cout << "error      " << r.error_type << ": " << r.error << "\n";
  std::cout << "steps      " << r.steps_completed << "/" << r.steps_total << " accepted\n";
  std::cout << "attempts   " << r.attempts << ", " << r.refused << " refused\n";
  if (!r.last_commit.empty()) std::cout << "commit     " << r.last_commit << "  " << r.branch << "\n";
}

int run_status(const ControlArgs& a) {
  auto report = kernel::read_run_report(a.ledger, a.run_id);
  if (!report) return report_error(report.error(), a.json);
  const bool live = kernel::live_run_process(a.ledger, a.run_id).has_value();
  if (a.json) {
    Json j = report->to_json();
    j["live"] = live;
    print_json(j);
  } else {
    print_report(*report, live);
  }
  return kOk;
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
        print_report(*report, false);
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
  auto* status = run.add_subcommand("status", "Print a build run's state as its ledger records it");
  status->add_option("RUN_ID", a->run_id, "The run's id (printed by warden build and warden propose)")->required();
  status->add_option("--ledger", a->ledger, "Ledger directory")->required();
  status->add_flag("--json", a->json, "Print JSON");
  status->footer("Exit: 0 the run exists (whatever its state), 4 no such run or ledger.");
  status->callback([a, &action] { action = [a] { return run_status(*a); }; });

  auto* cancel = run.add_subcommand(
      "cancel", "Cancel a live build run: its process stops its sandboxes and records the run as cancelled");
  cancel->add_option("RUN_ID", a->run_id, "The run's id")->required();
  cancel->add_option("--ledger", a->ledger, "Ledger directory")->required();
  cancel->add_option("--wait", a->wait_s, "Seconds to wait for the run to end")->check(CLI::PositiveNumber)->capture_default_str();
  cancel->add_flag("--json", a->json, "Print the run's final state as JSON");
  cancel->footer("Exit: 0 cancelled, 1 the run ended otherwise first, 4 no live process drives the run, 124 the run "
                 "had not ended within --wait.");
  cancel->callback([a, &action] { action = [a] { return run_cancel(*a); }; });
}

}  // namespace warden::cli
