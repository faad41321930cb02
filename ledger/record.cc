#include "ledger/record.h"

#include <charconv>
#include <cstring>

#include "ledger/merkle.h"

namespace warden {
namespace {

constexpr uint8_t kStoredVersion = 1;
constexpr size_t kStoredHeader = 1 + 8 + 32 + 1;

void append_decimal(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

Status validate_kind(std::string_view kind) {
  if (kind.empty() || kind.size() > 64) return fail(Errc::invalid_argument, "record kind must be 1-64 characters");
  for (char c : kind) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) {
      return fail(Errc::invalid_argument,
                  "record kind \"" + std::string(kind) + "\" may only use a-z, 0-9, '_', '.' and '-'");
    }
  }
  return {};
}

void RecordView::append_canonical_bytes(std::string& out) const {
  static constexpr char kHex[] = "0123456789abcdef";
  out += R"({"kind":")";
  out += kind;  // validated: needs no escaping
  out += R"(","payload":)";
  out += payload;
  out += R"(,"prev":"sha256:)";
  size_t at = out.size();
  out.resize(at + 64);
  for (size_t i = 0; i < 32; ++i) {
    out[at + 2 * i] = kHex[prev.bytes()[i] >> 4];
    out[at + 2 * i + 1] = kHex[prev.bytes()[i] & 0xf];
  }
  out += R"(","seq":)";
  append_decimal(out, static_cast<int64_t>(seq));
  out += R"(,"ts":)";
  append_decimal(out, ts);
  out += '}';
}

std::string Record::canonical_bytes() const {
  std::string out;
  out.reserve(payload.size() + 160);
  view().append_canonical_bytes(out);
  return out;
}

Digest Record::hash() const { return leaf_hash(canonical_bytes()); }

Json Record::to_json() const { return Json::parse(canonical_bytes()); }

void RecordView::encode_stored(std::string& out) const {
  out.clear();
  out.reserve(kStoredHeader + kind.size() + payload.size());
  out += static_cast<char>(kStoredVersion);
  auto uts = static_cast<uint64_t>(ts);
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((uts >> shift) & 0xff);
  out.append(prev.view());
  out += static_cast<char>(kind.size());
  out += kind;
  out += payload;
}

Result<RecordView> RecordView::decode_stored(uint64_t seq, std::string_view stored) {
  auto corrupt = [&](const std::string& why) {
    return fail(Errc::corrupt, "record " + std::to_string(seq) + ": stored value " + why);
  };
  if (stored.size() < kStoredHeader) return corrupt("is truncated");
  if (static_cast<uint8_t>(stored[0]) != kStoredVersion) return corrupt("has unknown format version");
  RecordView r;
  r.seq = seq;
  uint64_t uts = 0;
  for (int i = 1; i <= 8; ++i) uts = (uts << 8) | static_cast<uint8_t>(stored[i]);
  r.ts = static_cast<int64_t>(uts);
  std::memcpy(r.prev.mutable_bytes().data(), stored.data() + 9, 32);
  size_t kind_len = static_cast<uint8_t>(stored[41]);
  if (stored.size() < kStoredHeader + kind_len) return corrupt("is truncated");
  r.kind = stored.substr(kStoredHeader, kind_len);
  r.payload = stored.substr(kStoredHeader + kind_len);
  if (auto st = validate_kind(r.kind); !st) return corrupt("has an invalid kind");
  return r;
}

Result<Record> Record::decode_stored(uint64_t seq, std::string_view stored) {
  auto v = RecordView::decode_stored(seq, stored);
  if (!v) return std::unexpected(v.error());
  return Record{v->seq, std::string(v->kind), v->prev, v->ts, std::string(v->payload)};
}

Result<Record> Record::from_canonical(std::string_view line) {
  auto parsed = parse_canonical_json(line, "record");
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  auto bad = [](const std::string& why) { return fail(Errc::invalid_argument, "record " + why); };
  if (!j.is_object() || j.size() != 5) return bad("must be an object with exactly kind, payload, prev, seq, ts");
  for (const char* key : {"kind", "payload", "prev", "seq", "ts"}) {
    if (!j.contains(key)) return bad(std::string("is missing \"") + key + "\"");
  }
  if (!j["kind"].is_string()) return bad("field kind must be a string");
  if (!j["payload"].is_object()) return bad("field payload must be an object");
  if (!j["prev"].is_string()) return bad("field prev must be a digest string");
  if (!j["seq"].is_number_integer() || j["seq"].get<int64_t>() < 0) return bad("field seq must be a non-negative integer");
  if (!j["ts"].is_number_integer()) return bad("field ts must be an integer");
  Record r;
  r.kind = j["kind"].get<std::string>();
  if (auto st = validate_kind(r.kind); !st) return std::unexpected(st.error());
  auto prev = Digest::parse(j["prev"].get<std::string>());
  if (!prev) return bad("field prev: " + prev.error().message);
  r.prev = *prev;
  r.seq = j["seq"].get<uint64_t>();
  r.ts = j["ts"].get<int64_t>();
  auto payload = canonicalize(j["payload"]);
  if (!payload) return std::unexpected(payload.error());
  r.payload = std::move(*payload);
  return r;
}

}  // namespace warden
