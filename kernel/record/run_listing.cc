#include "kernel/record/run_listing.h"

#include <set>

#include "common/clock.h"
#include "executor/replay.h"
#include "kernel/record/records.h"
#include "kernel/record/run_reader.h"
#include "kernel/record/run_registry.h"
#include "kernel/record/run_report.h"
#include "ledger/ledger.h"

namespace warden::kernel {

namespace {

Result<Ledger> open_ledger(const std::filesystem::path& ledger_dir, Clock& clock) {
  std::error_code ec;
  if (!std::filesystem::exists(ledger_dir / "data.mdb", ec)) return fail(Errc::not_found, "no ledger at " + ledger_dir.string());
  return Ledger::open(ledger_dir, Ledger::Mode::read_only, clock);
}

Result<RunEntry> kernel_entry(const Ledger& ledger, const std::string& run_id) {
  auto report = report_run(ledger, run_id);
  if (!report) return std::unexpected(report.error());
  RunEntry e;
  e.run_id = run_id;
  e.kind = report->kind;
  e.started_ms = report->started_ms;
  e.steps_done = report->steps_completed;
  e.steps_total = report->steps_total;
  e.detail = report->error;
  if (report->terminal()) {
    e.status = report->status;
  } else if (live_run_process(ledger.dir(), run_id)) {
    e.status = "live";
    e.phase = report->status;
  } else {
    e.status = "interrupted";
    e.phase = report->status;
    e.detail = "its process is gone before it recorded an end (warden run recover " + run_id + " --ledger " +
               ledger.dir().string() + " records it)";
  }
  return e;
}

Result<RunEntry> pipeline_entry(const Ledger& ledger, const std::string& run_id) {
  LedgerRunReader reader(ledger);
  auto recorded = executor::read_recorded_run(reader, run_id);
  if (!recorded) return std::unexpected(recorded.error().with_context("pipeline run " + run_id));
  const executor::RunState& run = recorded->state;
  const executor::Envelope& envelope = run.envelope;
  RunEntry e;
  e.run_id = run_id;
  e.kind = "pipeline";
  e.started_ms = recorded->start.at;
  e.steps_done = static_cast<int64_t>(run.step);
  if (run.ended()) {
    using executor::TerminalReason;
    const TerminalReason reason = envelope.terminal_reason.value_or(TerminalReason::stage_failed);
    e.status = reason == TerminalReason::completed ? "completed" : reason == TerminalReason::cancelled ? "cancelled" : "failed";
    if (reason != TerminalReason::completed) e.detail = std::string(executor::terminal_reason_name(reason));
    if (envelope.termination_reason) e.detail += (e.detail.empty() ? "" : ": ") + *envelope.termination_reason;
  } else if (run.waiting()) {
    e.status = "waiting";
    e.detail = envelope.interrupt->kind + " interrupt from " + envelope.interrupt->stage;
  } else {
    e.status = "unfinished";
  }
  return e;
}

// A pipeline_run record that starts a build step's pipeline, not a run of its own.
bool part_of_a_kernel_run(const Json& payload) {
  auto launch = payload.find("launch");
  return launch != payload.end() && launch->is_object() && launch->contains("kernel_run");
}

}  // namespace

Json RunEntry::to_json() const {
  Json j = {{"run_id", run_id},   {"kind", kind},           {"status", status},
            {"started_ms", started_ms}, {"steps_done", steps_done}, {"steps_total", steps_total ? Json(*steps_total) : Json()}};
  if (!phase.empty()) j["phase"] = phase;
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

Result<std::vector<RunEntry>> list_runs(const std::filesystem::path& ledger_dir) {
  SystemClock clock;  // a read-only ledger never stamps anything
  auto ledger = open_ledger(ledger_dir, clock);
  if (!ledger) return std::unexpected(ledger.error());
  return list_runs(*ledger);
}

Result<std::vector<RunEntry>> list_runs(const Ledger& ledger) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  // The runs, in order of their first record: a kernel run's first record is its queued
  // run_status, a pipeline run's its pipeline_run record.
  struct Found {
    std::string run_id;
    bool pipeline = false;
  };
  std::vector<Found> found;
  std::set<std::string> seen;
  Status walked = snap->for_each_record(0, snap->size(), [&](const RecordView& r) -> Result<bool> {
    const bool status = r.kind == record_kind::run_status;
    if (!status && r.kind != executor::record_kind::run) return true;
    auto payload = parse_json(r.payload);
    if (!payload || !payload->is_object()) return true;  // verify's to report, not the listing's
    if (!status && part_of_a_kernel_run(*payload)) return true;
    std::string id = payload->value(status ? "run_id" : "run", std::string());
    if (!id.empty() && seen.insert(id).second) found.push_back({std::move(id), !status});
    return true;
  });
  if (!walked) return std::unexpected(walked.error());
  std::vector<RunEntry> out;
  for (const Found& f : found) {
    auto entry = f.pipeline ? pipeline_entry(ledger, f.run_id) : kernel_entry(ledger, f.run_id);
    if (!entry) return std::unexpected(entry.error());
    out.push_back(std::move(*entry));
  }
  return out;
}

Result<RunEntry> find_run(const std::filesystem::path& ledger_dir, const std::string& run_id) {
  SystemClock clock;
  auto ledger = open_ledger(ledger_dir, clock);
  if (!ledger) return std::unexpected(ledger.error());
  return find_run(*ledger, run_id);
}

Result<RunEntry> find_run(const Ledger& ledger, const std::string& run_id) {
  auto entry = kernel_entry(ledger, run_id);
  if (entry || entry.error().code != Errc::not_found) return entry;
  auto pipeline = pipeline_entry(ledger, run_id);
  if (pipeline || pipeline.error().code != Errc::not_found) return pipeline;
  return fail(Errc::not_found, "no run " + run_id + " in the ledger " + ledger.dir().string());
}

}  // namespace warden::kernel
