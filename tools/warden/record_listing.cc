#include "tools/warden/record_listing.h"

#include <algorithm>
#include <charconv>

#include "tools/warden/cli.h"

namespace warden::cli {
namespace {

Result<uint64_t> parse_number(std::string_view text, std::string_view within) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    const std::string where = text == within ? "" : "record range \"" + std::string(within) + "\": ";
    return fail(Errc::invalid_argument,
                where + "\"" + std::string(text) + "\" is not a record number (give SEQ, A..B, A.. or ..B)");
  }
  return value;
}

Json json_payload(std::string_view canonical) {
  return Json::parse(canonical.begin(), canonical.end(), nullptr, false);
}

Status print_one(LedgerSnapshot& snap, const RecordView& r, RecordFormat format, std::ostream& out) {
  switch (format) {
    case RecordFormat::line:
      out << r.seq << " " << r.kind << " " << r.payload << "\n";
      return {};
    case RecordFormat::pretty:
      out << "seq " << r.seq << "  " << r.kind << "  ts " << r.ts << "\n" << indented_payload(r.payload, "  ");
      return {};
    case RecordFormat::json_lines: {
      auto hash = snap.record_hash(r.seq);
      if (!hash) return std::unexpected(hash.error());
      // A listed item is a line of its own type; the command's result line follows them.
      Json fields = {{"seq", r.seq},         {"kind", std::string(r.kind)}, {"ts", r.ts},
                     {"hash", hash->hex()}, {"prev", r.prev.hex()},        {"payload", json_payload(r.payload)}};
      out << json_line("record", fields);
      return {};
    }
  }
  return {};
}

}  // namespace

Status parse_seq_range(std::string_view text, RecordQuery& query) {
  size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    return fail(Errc::invalid_argument, "record range \"" + std::string(text) + "\": give A..B, A.. or ..B");
  }
  std::string_view a = text.substr(0, dots), b = text.substr(dots + 2);
  if (a.empty() && b.empty()) return {};
  if (!a.empty()) {
    auto first = parse_number(a, text);
    if (!first) return std::unexpected(first.error());
    query.first = *first;
  }
  if (!b.empty()) {
    auto last = parse_number(b, text);
    if (!last) return std::unexpected(last.error());
    if (*last < query.first) {
      return fail(Errc::invalid_argument, "record range \"" + std::string(text) + "\" ends before it starts");
    }
    query.last = *last;
  }
  return {};
}

Result<uint64_t> parse_seq(std::string_view text) { return parse_number(text, text); }

std::string indented_payload(std::string_view canonical_payload, std::string_view indent) {
  Json payload = json_payload(canonical_payload);
  std::string text = payload.is_discarded() ? std::string(canonical_payload)
                                            : payload.dump(2, ' ', false, Json::error_handler_t::replace);
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = std::string_view(text).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    out.append(indent).append(line).append("\n");
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

Result<uint64_t> print_records(LedgerSnapshot& snap, const RecordQuery& query, RecordFormat format, std::ostream& out) {
  const uint64_t end = query.last ? std::min(*query.last + 1, snap.size()) : snap.size();
  uint64_t printed = 0;
  auto visit = [&](const RecordView& r) -> Result<bool> {
    if (!query.kinds.empty() && std::find(query.kinds.begin(), query.kinds.end(), r.kind) == query.kinds.end()) return true;
    if (Status st = print_one(snap, r, format, out); !st) return std::unexpected(st.error());
    ++printed;
    return true;
  };
  if (query.run.empty()) {
    if (query.first >= end) return printed;
    if (Status st = snap.for_each_record(query.first, end, visit); !st) return std::unexpected(st.error());
    return printed;
  }
  auto seqs = snap.run_records(query.run);
  if (!seqs) return std::unexpected(seqs.error());
  for (uint64_t seq : *seqs) {
    if (seq < query.first || seq >= end) continue;
    auto view = snap.record_view(seq);
    if (!view) return std::unexpected(view.error());
    auto go_on = visit(*view);
    if (!go_on) return std::unexpected(go_on.error());
  }
  return printed;
}

}  // namespace warden::cli
