#include "ledger/note.h"

#include <set>

#include "common/encoding.h"

namespace warden {
namespace {

constexpr std::string_view kSigPrefix = "\xE2\x80\x94 ";  // em dash U+2014, space
constexpr size_t kMaxSignatures = 100;

}  // namespace

std::string NoteSignature::line() const { return std::string(kSigPrefix) + name + " " + base64 + "\n"; }

Result<Note> parse_note(std::string_view message) {
  if (auto st = check_note_text(message); !st) return std::unexpected(st.error());
  auto split = message.rfind("\n\n");
  if (split == std::string_view::npos) {
    return fail(Errc::invalid_argument, "malformed note: no blank line before the signatures");
  }
  Note note;
  note.text = std::string(message.substr(0, split + 1));
  std::string_view sigs = message.substr(split + 2);
  if (sigs.empty() || sigs.back() != '\n') {
    return fail(Errc::invalid_argument, "malformed note: signature block must be non-empty and end in a newline");
  }
  while (!sigs.empty()) {
    auto nl = sigs.find('\n');
    std::string_view line = sigs.substr(0, nl);
    sigs.remove_prefix(nl + 1);
    if (!line.starts_with(kSigPrefix)) {
      return fail(Errc::invalid_argument, "malformed note: signature line does not start with an em dash and a space");
    }
    line.remove_prefix(kSigPrefix.size());
    auto space = line.find(' ');
    std::string_view name = line.substr(0, space);
    std::string_view b64 = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    auto raw = base64_decode(b64);
    if (!is_valid_key_name(name) || b64.empty() || !raw || raw->size() < 5) {
      return fail(Errc::invalid_argument, "malformed note: bad signature line for \"" + std::string(name) + "\"");
    }
    if (note.signatures.size() == kMaxSignatures) {
      return fail(Errc::limit_exceeded, "malformed note: more than 100 signatures");
    }
    const auto* b = reinterpret_cast<const uint8_t*>(raw->data());
    uint32_t hash = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    note.signatures.push_back(NoteSignature{std::string(name), hash, std::string(b64)});
  }
  return note;
}

Result<std::string> sign_note(std::string_view text, const NoteSigner& signer,
                              const std::vector<NoteSignature>& existing) {
  if (text.empty() || text.back() != '\n') return fail(Errc::invalid_argument, "malformed note: text must end in a newline");
  if (auto st = check_note_text(text); !st) return std::unexpected(st.error());
  auto sig = signer.sign(text);
  if (!sig) return std::unexpected(sig.error());
  std::string raw(4, '\0');
  uint32_t h = signer.key_hash();
  raw[0] = static_cast<char>(h >> 24), raw[1] = static_cast<char>(h >> 16);
  raw[2] = static_cast<char>(h >> 8), raw[3] = static_cast<char>(h);
  raw += *sig;
  std::string out(text);
  out += '\n';
  for (const auto& s : existing) {
    if (s.name == signer.name() && s.key_hash == signer.key_hash()) continue;  // replaced by ours
    out += s.line();
  }
  out += NoteSignature{signer.name(), h, base64_encode(raw)}.line();
  return out;
}

Result<OpenedNote> open_note(std::string_view message, const std::vector<NoteVerifier>& known) {
  auto note = parse_note(message);
  if (!note) return std::unexpected(note.error());
  OpenedNote opened;
  opened.text = note->text;
  std::set<std::pair<std::string, uint32_t>> seen;
  std::set<std::string> seen_unverified;
  for (const auto& sig : note->signatures) {
    const NoteVerifier* match = nullptr;
    int matches = 0;
    for (const auto& v : known) {
      if (v.name() == sig.name && v.key_hash() == sig.key_hash) {
        match = &v;
        ++matches;
      }
    }
    if (matches > 1) {
      return fail(Errc::invalid_argument, "ambiguous key " + sig.name + "+" + key_hash_hex(sig.key_hash));
    }
    if (!match) {
      if (seen_unverified.insert(sig.line()).second) opened.unverified.push_back(sig);
      continue;
    }
    if (!seen.insert({sig.name, sig.key_hash}).second) continue;
    auto raw = base64_decode(sig.base64);
    if (!raw || !match->verify(opened.text, std::string_view(*raw).substr(4))) {
      return fail(Errc::verification_failed, "invalid signature for key " + sig.name + "+" + key_hash_hex(sig.key_hash));
    }
    opened.verified.push_back(sig);
  }
  if (opened.verified.empty()) {
    return fail(Errc::verification_failed, "note has no verifiable signatures (no signature by a known key)");
  }
  return opened;
}

}  // namespace warden
