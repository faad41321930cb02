#include "kernel/record/run_reader.h"

#include <memory>
#include <utility>

#include "ledger/record.h"

namespace warden::kernel {
namespace {

using executor::StoredRecord;
using executor::StoredRun;
namespace record_kind = executor::record_kind;

}  // namespace

Result<StoredRun> LedgerRunReader::load(std::string_view run_id) {
  auto opened = ledger_.snapshot();
  if (!opened) return std::unexpected(opened.error());
  auto snap = std::make_shared<LedgerSnapshot>(std::move(*opened));
  auto seqs = snap->run_records(run_id);
  if (!seqs) return std::unexpected(seqs.error());
  StoredRun out;
  out.run_id = std::string(run_id);
  // The index also holds kernel records naming the id as "run_id": only pipeline records
  // whose "run" is the id belong to the pipeline run.
  size_t start = 0;  // the latest pipeline_run record, where the run begins
  bool found_start = false;
  bool kernel_run = false;  // kernel records name the id: a build's or a proposal's run
  for (uint64_t seq : *seqs) {
    auto record = snap->record_view(seq);
    if (!record) return std::unexpected(record.error());
    if (!executor::record_kind::is_pipeline(record->kind)) {
      kernel_run = true;
      continue;
    }
    auto payload = parse_json(record->payload, "record " + std::to_string(seq));
    if (!payload) return std::unexpected(Error{Errc::corrupt, payload.error().message});
    auto run = payload->find("run");
    if (run == payload->end() || !run->is_string() || run->get_ref<const std::string&>() != run_id) continue;
    if (record->kind == record_kind::run) {
      start = out.records.size();
      found_start = true;
    }
    out.records.push_back(StoredRecord{seq, std::string(record->kind), record->ts, std::move(*payload)});
  }
  if (out.records.empty() && kernel_run) {
    return fail(Errc::not_found, "run " + std::string(run_id) + " is a build run, not a pipeline run: warden run status " +
                                     std::string(run_id) + " --ledger " + ledger_.dir().string());
  }
  if (out.records.empty()) {
    return fail(Errc::not_found, "no pipeline run " + std::string(run_id) + " in the ledger at " + ledger_.dir().string());
  }
  if (!found_start) {
    return fail(Errc::corrupt, "pipeline run " + std::string(run_id) + " has records but no pipeline_run record");
  }
  out.records.erase(out.records.begin(), out.records.begin() + static_cast<std::ptrdiff_t>(start));
  out.blob = [snap](std::string_view text) -> Result<std::string> {
    auto digest = Digest::parse(text);
    if (!digest) return fail(Errc::corrupt, "blob reference \"" + std::string(text) + "\": " + digest.error().message);
    return snap->blob(*digest);
  };
  return out;
}

Result<executor::StoredRun> load_run(const Ledger& ledger, std::string_view run_id) {
  return LedgerRunReader(ledger).load(run_id);
}

}  // namespace warden::kernel
