#include "tools/warden/run_report.h"

#include "common/clock.h"
#include "kernel/build_records.h"
#include "kernel/commit_record.h"
#include "kernel/run_lifecycle.h"
#include "ledger/ledger.h"

namespace warden::cli {

bool RunReport::terminal() const {
  auto s = kernel::parse_run_status(status);
  return s && kernel::is_terminal(*s);
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
    const Json& p = *payload;
    const std::string_view kind = record->kind;
    if (kind == kernel::record_kind::run_status) {
      report.status = p.value("status", "");
      report.error_type = p.value("error_type", "");
      report.error = p.value("error", "");
    } else if (kind == kernel::record_kind::run_event) {
      const Json data = p.value("data", Json::object());
      if (p.value("event_type", "") == "step_started") report.steps_total = data.value("steps_total", report.steps_total);
    } else if (kind == kernel::record_kind::decision) {
      ++report.attempts;
      report.last_verdict = p.value("verdict", Json());
      if (!report.last_verdict.value("accepted", false)) ++report.refused;
    } else if (kind == kCommitRecordKind) {
      ++report.steps_completed;
      report.last_commit = p.value("commit", "");
      report.branch = p.value("branch", "");
    }
  }
  if (report.records == 0) return fail(Errc::not_found, "no run " + run_id + " in the ledger " + ledger_dir.string());
  return report;
}

}  // namespace warden::cli
