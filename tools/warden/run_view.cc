#include "tools/warden/run_view.h"

#include <ctime>
#include <iostream>

#include "common/exit_codes.h"
#include "kernel/record/event_stream.h"
#include "tools/warden/json_lines.h"

namespace warden::cli {

int run_exit_code(kernel::RunStatus status) {
  switch (status) {
    case kernel::RunStatus::completed: return kOk;
    case kernel::RunStatus::timeout: return kTimedOut;
    case kernel::RunStatus::cancelled: return kCancelled;
    default: return kVerificationFailed;
  }
}

std::string utc(int64_t ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  if (!::gmtime_r(&seconds, &tm)) return std::to_string(ms) + " ms";
  char text[32];
  return std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm) ? std::string(text) : std::to_string(ms) + " ms";
}

void print_build_header(const BuildHeader& h) {
  std::cout << "warden build: " << h.blueprint << "  run " << h.run_id << "  executor " << h.executor;
  if (h.executor_sandbox) std::cout << "\n  executor sandbox: " << *h.executor_sandbox;
  std::cout << "\n  repository " << h.repository << "\n  ledger     " << h.ledger << std::endl;
}

std::string run_label(const Json& d) {
  if (d.contains("base_tree")) return "base run";
  if (d.value("oracle_run", false)) return "oracle run (its test changes left out)";
  if (d.value("held_out_run", false)) return "held-out run";
  return "proposal";
}

void print_build_progress(const kernel::RunEvent& ev, BuildProgress& progress) {
  using kernel::RunEventType;
  const Json& d = ev.data;
  switch (ev.type) {
    case RunEventType::step_started:
      std::cout << "[" << d.value("steps_completed", 0) + 1 << "/" << d.value("steps_total", 0) << "] " << d.value("step_id", "") << " " << d.value("action", "");
      for (const auto& t : d.value("targets", Json::array())) std::cout << " " << t.get<std::string>();
      std::cout << std::endl;
      break;
    case RunEventType::tool_output:
      if (d.contains("base_checkout_attributes")) {
        for (const auto& a : d["base_checkout_attributes"]) {
          std::cout << "      note: the base's " << a.value("path", "") << ":" << a.value("line", 0) << " `" << a.value("text", "")
                    << "` sets " << a.value("attribute", "") << ": a checkout of what is accepted may differ from the bytes tested"
                    << std::endl;
        }
      } else if (ev.tool && *ev.tool == "kernel") {
        // Named by step: a parallel plan's decisions follow its rounds, not one step's lines.
        std::cout << "      " << d.value("step_id", "") << " attempt " << d.value("attempt", 0) << ": ";
        if (d.value("accepted", false)) {
          std::cout << "accepted";
          // Accepted with a check that did not pass: a reporting check that ran no tests while
          // the project has none yet, or a check the plan does not require.
          const auto& not_passed = progress.not_passed[d.value("step_id", "") + "#" + std::to_string(d.value("attempt", 0))];
          if (!not_passed.empty()) {
            std::cout << " (not held against it:";
            for (const std::string& c : not_passed) std::cout << " " << c;
            std::cout << " — no tests yet in a project being built, or not required)";
          }
        } else {
          std::cout << "refused:";
          for (const auto& r : d.value("reasons", Json::array())) std::cout << " " << r.get<std::string>();
        }
        std::cout << std::endl;
      } else if (d.contains("base_checkout_discarded")) {
        const Json& b = d["base_checkout_discarded"];
        std::cout << "      warning: the cached base checkout of tree " << b.value("tree", "") << " was discarded and rebuilt: "
                  << b.value("reason", "") << std::endl;
      } else if (d.contains("checks")) {
        const std::string label = run_label(d);
        std::cout << "      " << d.value("step_id", "");
        if (label != "base run") std::cout << " attempt " << d.value("attempt", 0);
        std::cout << ", " << label << ":";
        std::vector<std::string> not_passed;
        for (const auto& [name, verdict] : d["checks"].items()) {
          std::cout << " " << name << "=" << verdict.get<std::string>();
          if (verdict != "passed") not_passed.push_back(name + "=" + verdict.get<std::string>());
        }
        std::cout << std::endl;
        if (label == "proposal") progress.not_passed[d.value("step_id", "") + "#" + std::to_string(d.value("attempt", 0))] = not_passed;
      } else if (d.value("held_out_run", false)) {
        std::cout << "      " << d.value("step_id", "") << " attempt " << d.value("attempt", 0) << ", held-out run: "
                  << (d.value("passed", false) ? "passed" : "did not pass") << std::endl;
      }
      break;
    case RunEventType::replan_triggered:
      std::cout << "      retries exhausted for " << d.value("failed_step", "") << ": asking the executor for a new plan"
                << std::endl;
      break;
    case RunEventType::queue_updated:
      // A merge-queue plan: what each round speculates on, and what it threw away.
      if (d.contains("in_flight")) {
        std::cout << "queue round " << d.value("round", int64_t{0}) << ":";
        for (const auto& f : d["in_flight"]) {
          std::cout << " " << f.value("step_id", "") << "#" << f.value("attempt", int64_t{0}) << " on "
                    << f.value("base_tree", "").substr(0, 12);
        }
        for (const auto& w : d.value("waiting", Json::array())) std::cout << " " << w.get<std::string>() << "(waits)";
        std::cout << std::endl;
      }
      for (const auto& x : d.value("discarded", Json::array())) {
        std::cout << "      thrown away: " << x.value("step_id", "") << "#" << x.value("attempt", int64_t{0}) << " "
                  << x.value("run", "") << " run: " << x.value("reason", "") << std::endl;
      }
      break;
    case RunEventType::timeout_error:
      std::cout << "      watchdog: " << d.value("error", "") << std::endl;
      break;
    case RunEventType::run_cancelled:
      std::cout << "cancelled: " << d.value("error", "") << std::endl;
      break;
    default:
      break;
  }
}

void print_build_event(const kernel::RunEvent& event, bool json, BuildProgress& progress) {
  if (json) {
    print_event(kernel::stream_event_json(event));
  } else {
    print_build_progress(event, progress);
  }
}

void print_build_summary(const Json& s, const std::string& repository, const std::string& ledger) {
  std::cout << "\nrun        " << s.value("run_id", "") << "  " << s.value("status", "");
  if (s.contains("error_type")) std::cout << "  " << s.value("error_type", "") << ": " << s.value("error", "");
  std::cout << "\nsteps      " << s.value("steps_completed", int64_t{0}) << "/" << s.value("steps_total", int64_t{0}) << " accepted";
  const Json verdicts = s.value("verdicts", Json::array());
  int64_t refused = 0;
  for (const auto& v : verdicts) refused += v.value("accepted", false) ? 0 : 1;
  std::cout << ", " << verdicts.size() << " proposals, " << refused << " refused";
  if (const int64_t replans = s.value("replans", int64_t{0})) std::cout << ", " << replans << " replans";
  if (s.contains("jobs")) {
    std::cout << "\njobs       " << s.value("jobs", int64_t{0});
    if (s.contains("jobs_note")) std::cout << " (" << s.value("jobs_note", "") << ")";
  }
  std::cout << "\nverdicts  ";
  for (const auto& v : verdicts) {
    std::cout << " " << v.value("step_id", "") << "#" << v.value("attempt", int64_t{0}) << "="
              << (v.value("accepted", false) ? "accepted" : "refused");
  }
  std::cout << "\nrepository " << repository << "  " << s.value("branch", "");
  std::cout << "\ncommit     " << s.value("commit", "") << "\ntree       " << s.value("tree", "");
  std::cout << "\nplan       " << s.value("plan_sha256", "") << "\npolicy     " << s.value("policy_sha256", "");
  if (s.contains("held_out")) {
    const Json& h = s["held_out"];
    std::cout << "\nheld-out   " << h.value("sha256", "")
              << (h.value("revealed", false) ? "  revealed at record " + std::to_string(h.value("reveal_seq", uint64_t{0}))
                                             : std::string("  sealed, not revealed"));
  }
  std::cout << "\nledger     " << ledger << "  " << s.value("ledger_size", uint64_t{0}) << " records  root " << s.value("root", "");
  std::cout << "\ncheckpoint\n" << s.value("checkpoint", "");
}

void print_run_report(const Json& r) {
  const std::string status = r.value("status", "");
  auto parsed = kernel::parse_run_status(status);
  const bool terminal = parsed && kernel::is_terminal(*parsed);
  std::cout << "run        " << r.value("run_id", "") << "  " << status << (r.value("live", false) ? "  (live)" : "") << "\n";
  std::cout << "kind       " << r.value("kind", "") << ", started " << utc(r.value("started_ms", int64_t{0})) << "\n";
  const std::string error_type = r.value("error_type", "");
  if (!error_type.empty()) std::cout << "error      " << error_type << ": " << r.value("error", "") << "\n";
  std::cout << "steps      " << r.value("steps_completed", int64_t{0}) << "/" << r.value("steps_total", int64_t{0}) << " accepted";
  const std::string current = r.value("current_step", "");
  const Json queue = r.value("queue", Json());
  if (!current.empty() && !terminal && queue.is_null()) std::cout << "; on " << current;
  std::cout << "\n";
  if (!queue.is_null() && !terminal) {
    // A merge-queue plan: the steps in flight, each on the tree of the steps ahead of it.
    std::cout << "queue      round " << queue.value("round", int64_t{0}) << ":";
    for (const auto& f : queue.value("in_flight", Json::array())) {
      std::cout << " " << f.value("step_id", "") << "#" << f.value("attempt", int64_t{0});
    }
    std::cout << " in flight";
    const Json waiting = queue.value("waiting", Json::array());
    if (!waiting.empty()) {
      std::cout << "; waiting:";
      for (const auto& w : waiting) std::cout << " " << w.get<std::string>();
    }
    std::cout << "\n";
  }
  std::cout << "attempts   " << r.value("attempts", int64_t{0}) << ", " << r.value("refused", int64_t{0}) << " refused\n";
  const std::string commit = r.value("last_commit", "");
  if (!commit.empty()) std::cout << "commit     " << commit << "  " << r.value("branch", "") << "\n";
}

void print_run_event(const kernel::RunEvent& ev) {
  const Json& d = ev.data;
  std::cout << utc(ev.timestamp_ms) << "  " << kernel::run_event_type_name(ev.type) << (ev.tool ? " (" + *ev.tool + ")" : "");
  if (ev.step_index) std::cout << "  step " << *ev.step_index + 1;
  if (d.contains("step_id") && d["step_id"].is_string()) std::cout << " " << d["step_id"].get<std::string>();
  if (d.contains("attempt")) std::cout << "  attempt " << d["attempt"].dump();
  if (d.contains("accepted")) {
    std::cout << (d["accepted"] == true ? "  accepted" : "  refused");
    if (d.contains("reasons")) {
      for (const auto& r : d["reasons"]) std::cout << " " << (r.is_string() ? r.get<std::string>() : r.dump());
    }
  }
  if (d.contains("checks") && d["checks"].is_object()) {
    for (const auto& [name, verdict] : d["checks"].items()) std::cout << " " << name << "=" << (verdict.is_string() ? verdict.get<std::string>() : verdict.dump());
  }
  if (d.contains("error") && d["error"].is_string()) std::cout << "  " << d["error"].get<std::string>();
  std::cout << std::endl;
}

void print_followed_event(const kernel::RunEvent& event, bool json) {
  if (json) {
    std::cout << event.to_json().dump() << std::endl;
  } else {
    print_run_event(event);
  }
}

void print_run_state(const Json& state, bool json, bool follow, const std::string& recover_command) {
  if (json) {
    if (follow) {
      std::cout << state.dump() << std::endl;
    } else {
      print_json(state);
    }
    return;
  }
  print_run_report(state);
  if (state.contains("recorded_status")) {
    std::cout << "note       its process is gone; the ledger's last status is " << state.value("recorded_status", "") << " ("
              << recover_command << " records the end)\n";
  }
}

void print_pipeline_run(const Json& entry, const std::string& details, bool json) {
  if (json) {
    Json j = entry;
    j["show_command"] = details;
    print_json(j);
    return;
  }
  const std::string detail = entry.value("detail", std::string());
  std::cout << "run        " << entry.value("run_id", std::string()) << "  " << entry.value("status", std::string())
            << (detail.empty() ? "" : ": " + detail) << "\n"
            << "kind       pipeline, started " << utc(entry.value("started_ms", int64_t{0})) << "\n"
            << "steps      " << entry.value("steps_done", int64_t{0}) << " executed\n"
            << "details    " << details << "\n";
}

}  // namespace warden::cli
