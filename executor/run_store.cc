#include "executor/run_store.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "common/lmdb.h"
#include "ledger/record.h"

namespace warden::executor {
namespace {

bool is_pipeline_kind(std::string_view kind) {
  for (auto k : {record_kind::run, record_kind::step, record_kind::transition, record_kind::checkpoint,
                 record_kind::resume, record_kind::rollback, record_kind::end}) {
    if (kind == k) return true;
  }
  return false;
}

}  // namespace

Result<StoredRun> load_run(const Ledger& ledger, std::string_view run_id) {
  auto opened = ledger.snapshot();
  if (!opened) return std::unexpected(opened.error());
  auto snap = std::make_shared<LedgerSnapshot>(std::move(*opened));
  StoredRun out;
  out.run_id = std::string(run_id);
  std::string id_field;
  if (auto st = append_json_string(run_id, id_field); !st) return fail(Errc::invalid_argument, "run id is not UTF-8");
  id_field = "\"run\":" + id_field;

  auto cursor = lmdb::Cursor::open(snap->txn(), snap->dbis().records);
  if (!cursor) return std::unexpected(cursor.error());
  MDB_val k{}, v{};
  bool found_start = false;
  for (MDB_cursor_op op = MDB_LAST; !found_start; op = MDB_PREV) {
    auto more = cursor->get(k, v, op);
    if (!more) return std::unexpected(more.error());
    if (!*more) break;
    auto seq = lmdb::decode_u64(lmdb::view(k));
    if (!seq) return std::unexpected(seq.error());
    auto record = RecordView::decode_stored(*seq, lmdb::view(v));
    if (!record) return std::unexpected(record.error());
    // Canonical payloads spell the run field one way, so most other records are skipped
    // without parsing.
    if (!is_pipeline_kind(record->kind) || record->payload.find(id_field) == std::string_view::npos) continue;
    auto payload = parse_json(record->payload, "record " + std::to_string(*seq));
    if (!payload) return std::unexpected(Error{Errc::corrupt, payload.error().message});
    auto run = payload->find("run");
    if (run == payload->end() || !run->is_string() || run->get_ref<const std::string&>() != run_id) continue;
    found_start = record->kind == record_kind::run;
    out.records.push_back(StoredRecord{*seq, std::string(record->kind), record->ts, std::move(*payload)});
  }
  if (out.records.empty()) {
    return fail(Errc::not_found, "no pipeline run " + std::string(run_id) + " in the ledger at " + ledger.dir().string());
  }
  if (!found_start) {
    return fail(Errc::corrupt, "pipeline run " + std::string(run_id) + " has records but no pipeline_run record");
  }
  std::reverse(out.records.begin(), out.records.end());
  out.blob = [snap](std::string_view text) -> Result<std::string> {
    auto digest = Digest::parse(text);
    if (!digest) return fail(Errc::corrupt, "blob reference \"" + std::string(text) + "\": " + digest.error().message);
    return snap->blob(*digest);
  };
  return out;
}

}  // namespace warden::executor
