#include "kernel/record/run_report.h"

#include <map>

#include "common/clock.h"
#include "executor/run_records.h"
#include "kernel/record/records.h"

namespace warden::kernel {

namespace {

// The steps of a recorded plan, as recorded (replay judges whether the plan parses).
int64_t plan_steps(const Json& plan) {
  auto steps = plan.find("steps");
  return steps != plan.end() && steps->is_array() ? static_cast<int64_t>(steps->size()) : 0;
}

}  // namespace

bool RunReport::terminal() const {
  auto s = parse_run_status(status);
  return s && is_terminal(*s);
}

Json RunReport::to_json() const {
  Json j = {{"run_id", run_id},
            {"kind", kind},
            {"started_ms", started_ms},
            {"status", status},
            {"steps_total", steps_total},
            {"steps_completed", steps_completed},
            {"current_step", current_step},
            {"attempts", attempts},
            {"refused", refused},
            {"branch", branch},
            {"last_commit", last_commit},
            {"last_verdict", last_verdict},
            {"records", records}};
  if (!error_type.empty()) {
    j["error_type"] = error_type;
    j["error"] = error;
  }
  if (!queue.is_null()) j["queue"] = queue;
  return j;
}

Result<RunReport> report_run(const Ledger& ledger, const std::string& run_id) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  RunReport report;
  report.run_id = run_id;
  report.kind = "propose";  // until a blueprint record says it was built from one
  // The per-run index gives the records naming the run (as "run_id" or "run"): no scan.
  auto seqs = snap->run_records(run_id);
  if (!seqs) return std::unexpected(seqs.error());
  std::map<uint64_t, int64_t> plan_sizes;  // plan_proposal seq -> its steps
  bool pipeline = false;
  for (uint64_t seq : *seqs) {
    auto record = snap->record_view(seq);
    if (!record) return std::unexpected(record.error());
    const std::string_view kind = record->kind;
    auto payload = parse_json(record->payload);
    if (!payload || !payload->is_object()) continue;
    if (payload->value("run_id", std::string()) != run_id) {
      pipeline = pipeline || (executor::record_kind::is_pipeline(kind) && payload->value("run", std::string()) == run_id);
      continue;
    }
    if (report.records++ == 0) report.started_ms = record->ts;
    auto unreadable = [&](const Error& e) {
      return fail(Errc::corrupt, "ledger " + ledger.dir().string() + " record " + std::to_string(seq) + ": " + e.message);
    };
    if (kind == record_kind::run_status) {
      auto r = RunStatusRecord::from_json(*payload);
      if (!r) return unreadable(r.error());
      report.status = run_status_name(r->status);
      report.error_type = r->error_type ? std::string(error_type_name(*r->error_type)) : std::string();
      report.error = r->error;
    } else if (kind == record_kind::blueprint) {
      report.kind = "build";
    } else if (kind == record_kind::plan_proposal) {
      auto p = PlanProposalRecord::from_json(*payload);
      if (!p) return unreadable(p.error());
      plan_sizes[seq] = plan_steps(p->plan);
    } else if (kind == record_kind::plan_commit) {
      auto c = PlanCommitRecord::from_json(*payload);
      if (!c) return unreadable(c.error());
      if (auto it = plan_sizes.find(c->proposal_seq); it != plan_sizes.end()) report.steps_total = it->second;
    } else if (kind == record_kind::run_event) {
      auto ev = RunEvent::from_json(*payload);
      if (!ev) return unreadable(ev.error());
      if (ev->type == RunEventType::step_started) {
        report.steps_total = ev->data.value("steps_total", report.steps_total);
        report.current_step = ev->data.value("step_id", std::string());
      }
      if (ev->type == RunEventType::queue_updated && ev->data.contains("in_flight")) report.queue = ev->data;
      report.events.emplace_back(seq, std::move(*ev));
    } else if (kind == record_kind::decision) {
      auto d = DecisionRecord::from_json(*payload);
      if (!d) return unreadable(d.error());
      ++report.attempts;
      report.last_verdict = d->verdict.to_json();
      if (!d->verdict.accepted) ++report.refused;
    } else if (kind == record_kind::commit) {
      auto c = CommitRecord::from_json(*payload);
      if (!c) return unreadable(c.error());
      ++report.steps_completed;
      report.last_commit = c->commit;
      report.branch = c->branch;
    }
  }
  if (report.records == 0) {
    if (pipeline) {
      return fail(Errc::not_found, "run " + run_id + " is a pipeline run, not a build: warden pipeline show " + run_id +
                                       " --ledger " + ledger.dir().string());
    }
    return fail(Errc::not_found, "no run " + run_id + " in the ledger " + ledger.dir().string() +
                                     " (warden runs list " + ledger.dir().string() + " lists its runs)");
  }
  return report;
}

Result<RunReport> read_run_report(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  std::error_code ec;
  if (!std::filesystem::exists(ledger_dir / "data.mdb", ec)) {
    return fail(Errc::not_found, "no ledger at " + ledger_dir.string());
  }
  SystemClock clock;  // a read-only ledger never stamps anything
  auto ledger = Ledger::open(ledger_dir, Ledger::Mode::read_only, clock);
  if (!ledger) return std::unexpected(ledger.error());
  return report_run(*ledger, run_id);
}

}  // namespace warden::kernel
