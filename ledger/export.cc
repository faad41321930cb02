#include "ledger/export.h"

#include <algorithm>
#include <charconv>
#include <fstream>

#include "common/canonical_json.h"
#include "common/file.h"
#include "ledger/ledger_impl.h"
#include "ledger/verify.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

Result<std::vector<std::string>> sorted_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return names;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return fail(Errc::io_error, dir.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Result<ExportReader> ExportReader::open(const fs::path& dir) {
  auto text = read_file(dir / "ledger.json", 1 << 20);
  if (!text) return std::unexpected(text.error());
  std::string_view body = *text;
  if (body.ends_with('\n')) body.remove_suffix(1);  // written as a text file
  auto parsed = parse_canonical_json(body, "ledger.json");
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  auto bad = [](const std::string& why) { return fail(Errc::invalid_argument, "ledger.json: " + why); };
  if (!j.is_object() || j.value("format", "") != kExportFormat) {
    return bad("format must be \"" + std::string(kExportFormat) + "\"");
  }
  ExportReader reader;
  reader.dir_ = dir;
  try {
    reader.manifest_.origin = j.at("origin").get<std::string>();
    reader.manifest_.verifier_key = j.at("verifier_key").get<std::string>();
    reader.manifest_.size = j.at("size").get<uint64_t>();
    reader.manifest_.max_payload_bytes = j.at("max_payload_bytes").get<uint64_t>();
    auto root = Digest::parse(j.at("root").get<std::string>());
    if (!root) return bad("root: " + root.error().message);
    reader.manifest_.root = *root;
  } catch (const Json::exception& e) {
    return bad(std::string("missing or mistyped field (") + e.what() + ")");
  }
  return reader;
}

Result<std::vector<StoredCheckpoint>> ExportReader::checkpoints() const {
  auto names = sorted_names(dir_ / "checkpoints");
  if (!names) return std::unexpected(names.error());
  std::vector<StoredCheckpoint> out;
  for (const auto& name : *names) {
    uint64_t size = 0;
    auto stem = std::string_view(name);
    if (!stem.ends_with(".note")) return fail(Errc::invalid_argument, "checkpoints/" + name + ": not a .note file");
    stem.remove_suffix(5);
    auto [ptr, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), size);
    if (ec != std::errc() || ptr != stem.data() + stem.size()) {
      return fail(Errc::invalid_argument, "checkpoints/" + name + ": name must be <tree size>.note");
    }
    auto note = read_file(dir_ / "checkpoints" / name, 1 << 20);
    if (!note) return std::unexpected(note.error());
    out.push_back(StoredCheckpoint{size, std::move(*note)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size < b.size; });
  return out;
}

Status ExportReader::for_each_record(const std::function<bool(uint64_t, std::string_view)>& visit) const {
  std::ifstream in(dir_ / "records.jsonl", std::ios::binary);
  if (!in) return fail(Errc::not_found, (dir_ / "records.jsonl").string() + ": cannot open");
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (in.eof()) return fail(Errc::invalid_argument, "records.jsonl line " + std::to_string(line_no) + " has no final newline");
    if (!visit(line_no, line)) return {};
  }
  if (in.bad()) return fail(Errc::io_error, "reading records.jsonl failed");
  return {};
}

Status ExportReader::for_each_blob(const std::function<bool(const std::string&, std::string_view)>& visit) const {
  auto names = sorted_names(dir_ / "blobs");
  if (!names) return std::unexpected(names.error());
  for (const auto& name : *names) {
    auto bytes = read_file(dir_ / "blobs" / name, uint64_t{1} << 31);
    if (!bytes) return std::unexpected(bytes.error());
    if (!visit(name, *bytes)) return {};
  }
  return {};
}

Result<ExportSummary> export_ledger(const Ledger& ledger, const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) return fail(Errc::already_exists, out.string() + " already exists; exports never overwrite");
  fs::path tmp = out;
  tmp += ".partial";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp / "checkpoints", ec);
  if (!ec) fs::create_directories(tmp / "blobs", ec);
  if (ec) return fail(Errc::io_error, tmp.string() + ": " + ec.message());
  auto cleanup_on_error = [&](Error e) -> Result<ExportSummary> {
    fs::remove_all(tmp, ec);
    return std::unexpected(std::move(e));
  };

  auto snap = ledger.snapshot();
  if (!snap) return cleanup_on_error(snap.error());
  ExportSummary summary;
  summary.records = snap->size();
  {
    std::ofstream records(tmp / "records.jsonl", std::ios::binary);
    std::string line;
    for (uint64_t seq = 0; seq < snap->size(); ++seq) {
      auto r = snap->record(seq);
      if (!r) return cleanup_on_error(r.error());
      line.clear();
      r->view().append_canonical_bytes(line);
      line += '\n';
      records.write(line.data(), static_cast<std::streamsize>(line.size()));
    }
    records.flush();
    if (!records) return cleanup_on_error(Error{Errc::io_error, "writing records.jsonl failed"});
  }
  auto root = snap->root();
  if (!root) return cleanup_on_error(root.error());
  summary.root = *root;

  auto checkpoints = snap->checkpoints();
  if (!checkpoints) return cleanup_on_error(checkpoints.error());
  for (const auto& cp : *checkpoints) {
    if (auto st = write_file_atomic(tmp / "checkpoints" / (std::to_string(cp.size) + ".note"), cp.note); !st) {
      return cleanup_on_error(st.error());
    }
  }
  summary.checkpoints = checkpoints->size();

  auto blobs = lmdb::for_each(detail::LedgerAccess::txn(*snap), detail::LedgerAccess::dbis(*snap).blobs, [&](std::string_view key, std::string_view bytes) -> Status {
    auto digest = Digest::from_bytes(key);
    if (!digest) return fail(Errc::corrupt, "blob store holds a malformed key");
    if (auto st = write_file_atomic(tmp / "blobs" / digest->hex(), bytes); !st) return st;
    ++summary.blobs;
    return {};
  });
  if (!blobs) return cleanup_on_error(blobs.error());

  Json manifest = {{"format", kExportFormat},
                   {"origin", ledger.origin()},
                   {"verifier_key", ledger.verifier_key()},
                   {"size", summary.records},
                   {"root", summary.root.str()},
                   {"max_payload_bytes", ledger.max_payload_bytes()}};
  auto text = canonicalize(manifest);
  if (!text) return cleanup_on_error(text.error());
  if (auto st = write_file_atomic(tmp / "ledger.json", *text + "\n"); !st) return cleanup_on_error(st.error());
  fs::rename(tmp, out, ec);
  if (ec) return cleanup_on_error(Error{Errc::io_error, "renaming export into place: " + ec.message()});
  return summary;
}

Result<ExportSummary> import_ledger(const fs::path& export_dir, const fs::path& dir,
                                    std::initializer_list<NoteVerifier> keys) {
  VerifyOptions options;
  options.keys = keys;
  return import_ledger(export_dir, dir, options);
}

Result<ExportSummary> import_ledger(const fs::path& export_dir, const fs::path& dir, const VerifyOptions& options) {
  auto report = verify_export_dir(export_dir, options);
  if (!report) return std::unexpected(report.error());
  if (!report->ok()) {
    const auto& p = *report->problem;
    return fail(Errc::verification_failed, "export does not verify: " + p.object + ": " + p.message);
  }
  auto reader = ExportReader::open(export_dir);
  if (!reader) return std::unexpected(reader.error());
  const auto& m = reader->manifest();

  std::error_code ec;
  bool created_dir = !fs::exists(dir, ec);
  auto remove_created = [&](Error e) -> Result<ExportSummary> {
    if (created_dir) fs::remove_all(dir, ec);
    else {
      fs::remove(dir / "data.mdb", ec);
      fs::remove(dir / "lock.mdb", ec);
    }
    return std::unexpected(std::move(e));
  };
  if (auto st = Ledger::create(dir, LedgerCreateOptions{m.origin, m.verifier_key, m.max_payload_bytes}); !st) {
    if (st.error().code == Errc::already_exists) return std::unexpected(st.error());
    return remove_created(st.error());
  }
  LogicalClock unused_clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, unused_clock);
  if (!ledger) return remove_created(ledger.error());
  auto checkpoints = reader->checkpoints();
  if (!checkpoints) return remove_created(checkpoints.error());

  ExportSummary summary;
  auto st = ledger->write([&](WriteTxn& w) -> Status {
    Status inner;
    auto streamed = reader->for_each_record([&](uint64_t, std::string_view line) {
      auto record = Record::from_canonical(line);
      if (!record) {
        inner = std::unexpected(record.error());
        return false;
      }
      auto appended = w.append(record->kind, record->payload, record->ts);
      if (!appended) {
        inner = std::unexpected(appended.error());
        return false;
      }
      return true;
    });
    if (!streamed) return streamed;
    if (!inner) return inner;
    for (const auto& cp : *checkpoints) {
      if (auto put = w.put_checkpoint(cp.size, cp.note); !put) return put;
    }
    auto blobs = reader->for_each_blob([&](const std::string&, std::string_view bytes) {
      auto put = w.put_blob(bytes);
      if (!put) inner = std::unexpected(put.error());
      else ++summary.blobs;
      return put.has_value();
    });
    if (!blobs) return blobs;
    if (!inner) return inner;
    summary.records = w.size();
    summary.root = w.root();
    if (summary.root != m.root) {
      return fail(Errc::corrupt, "imported root " + summary.root.str() + " differs from the export's " + m.root.str());
    }
    return {};
  });
  if (!st) return remove_created(st.error());
  summary.checkpoints = checkpoints->size();
  return summary;
}

}  // namespace warden
