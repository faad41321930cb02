#include "kernel/run_report.h"

#include "common/clock.h"
#include "kernel/records.h"
#include "kernel/run_lifecycle.h"
#include "ledger/ledger.h"

namespace warden::kernel {

bool RunReport::terminal() const {
  auto s = parse_run_status(status);
  return s && is_terminal(*s);
}

Json RunReport::to_json() const {
  Json j = {{"run_id", run_id},
            {"status", status},
            {"steps_total", steps_total},
            {"steps_completed", steps_completed},
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
  return j;
}

Result<RunReport> read_run_report(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  std::error_code ec;
  if (!std::filesystem::exists(ledger_dir / "data.mdb", ec)) {
    return fail(Errc::not_found, "no ledger at " + ledger_dir.string());
  }
  SystemClock clock;  // a read-only ledger never stamps anything
  auto ledger = Ledger::open(ledger_dir, Ledger::Mode::read_only, clock);
  if (!ledger) return std::unexpected(ledger.error());
  auto snap = ledger->snapshot();
  if (!snap) return std::unexpected(snap.error());

  RunReport report;
  report.run_id = run_id;
  // The per-run index gives the records naming the run (as "run_id" or "run"): no scan.
  auto seqs = snap->run_records(run_id);
  if (!seqs) return std::unexpected(seqs.error());
  for (uint64_t seq : *seqs) {
    auto record = snap->record_view(seq);
    if (!record) return std::unexpected(record.error());
    auto payload = parse_json(record->payload);
    if (!payload || !payload->is_object() || payload->value("run_id", std::string()) != run_id) continue;
    ++report.records;
    const std::string_view kind = record->kind;
    auto unreadable = [&](const Error& e) {
      return fail(Errc::corrupt, "ledger " + ledger_dir.string() + " record " + std::to_string(seq) + ": " + e.message);
    };
    if (kind == record_kind::run_status) {
      auto r = RunStatusRecord::from_json(*payload);
      if (!r) return unreadable(r.error());
      report.status = run_status_name(r->status);
      report.error_type = r->error_type ? std::string(error_type_name(*r->error_type)) : std::string();
      report.error = r->error;
    } else if (kind == record_kind::run_event) {
      auto ev = RunEvent::from_json(*payload);
      if (!ev) return unreadable(ev.error());
      if (ev->type == RunEventType::step_started) report.steps_total = ev->data.value("steps_total", report.steps_total);
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
  if (report.records == 0) return fail(Errc::not_found, "no run " + run_id + " in the ledger " + ledger_dir.string());
  return report;
}

}  // namespace warden::kernel
