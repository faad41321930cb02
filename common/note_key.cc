#include "common/note_key.h"

#include <algorithm>
#include <cstdio>

#include "common/encoding.h"
#include "common/sha256.h"

namespace warden {
namespace {

constexpr uint8_t kAlgEd25519 = 0x01;

uint32_t compute_key_hash(std::string_view name, const Ed25519PublicKey& pub) {
  Sha256 h;
  h.update(name).update(std::string_view("\n\x01", 2)).update(std::span<const uint8_t>(pub));
  const auto d = h.finish().bytes();
  return (uint32_t{d[0]} << 24) | (uint32_t{d[1]} << 16) | (uint32_t{d[2]} << 8) | d[3];
}

}  // namespace

std::string key_hash_hex(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

namespace {

Result<uint32_t> parse_key_hash_hex(std::string_view s) {
  if (s.size() != 8) return fail(Errc::invalid_argument, "key hash must be 8 hex digits");
  uint32_t v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return fail(Errc::invalid_argument, "key hash must be 8 hex digits");
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  return v;
}

// Splits "a+b+c" at the first '+'.
std::pair<std::string_view, std::string_view> chop(std::string_view s) {
  auto i = s.find('+');
  if (i == std::string_view::npos) return {s, {}};
  return {s.substr(0, i), s.substr(i + 1)};
}

bool has_unicode_space(std::string_view name) {
  // The Unicode White_Space characters, by their UTF-8 spellings.
  static constexpr std::string_view kSpaces[] = {
      "\x09", "\x0a", "\x0b", "\x0c", "\x0d", " ", "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80",
      "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85",
      "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8",
      "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
  for (auto sp : kSpaces) {
    if (name.find(sp) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

Status check_note_text(std::string_view msg) {
  size_t i = 0;
  while (i < msg.size()) {
    auto c = static_cast<uint8_t>(msg[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\n') {
        return fail(Errc::invalid_argument, "malformed note: control character at byte " + std::to_string(i));
      }
      ++i;
      continue;
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len != 0 && i + len <= msg.size();
    for (size_t k = 1; ok && k < len; ++k) {
      auto b = static_cast<uint8_t>(msg[i + k]);
      ok = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3f);
    }
    uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (!ok || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return fail(Errc::invalid_argument, "malformed note: invalid UTF-8 at byte " + std::to_string(i));
    }
    i += len;
  }
  return {};
}

namespace {

// The "<name>+<keyhash>+<base64(0x01 || 32 bytes)>" tail both key kinds share.
struct KeyFields {
  std::string_view name;
  uint32_t key_hash = 0;
  std::string key32;  // public key or private seed
};

Result<KeyFields> parse_key_fields(std::string_view text, std::string_view kind) {
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument, "malformed " + std::string(kind) + " key: " + why);
  };
  auto [name, rest] = chop(text);
  auto [hash16, key64] = chop(rest);
  if (!is_valid_key_name(name)) return bad("invalid key name");
  auto hash = parse_key_hash_hex(hash16);
  if (!hash) return bad(hash.error().message);
  auto key = base64_decode(key64);
  if (!key) return bad("key is not base64: " + key.error().message);
  if (key->empty() || static_cast<uint8_t>((*key)[0]) != kAlgEd25519) {
    return bad("unknown signature algorithm (want Ed25519, 0x01)");
  }
  if (key->size() != 33) return bad("an Ed25519 key must be 32 bytes");
  return KeyFields{name, *hash, key->substr(1)};
}
}  // namespace

bool is_valid_key_name(std::string_view name) {
  return !name.empty() && name.find('+') == std::string_view::npos && !has_unicode_space(name) &&
         check_note_text(name).has_value();
}

Result<NoteVerifier> NoteVerifier::parse(std::string_view vkey) {
  auto fields = parse_key_fields(vkey, "verifier");
  if (!fields) return std::unexpected(fields.error());
  NoteVerifier v;
  v.name_ = std::string(fields->name);
  std::copy(fields->key32.begin(), fields->key32.end(), reinterpret_cast<char*>(v.public_key_.data()));
  if (ed25519_small_order(v.public_key_)) {
    // Every checkpoint would "verify" under it with a signature anyone can write.
    return fail(Errc::invalid_argument, "verifier key " + v.name_ + ": a key of small order, which verifies forged signatures");
  }
  v.key_hash_ = compute_key_hash(v.name_, v.public_key_);
  if (v.key_hash_ != fields->key_hash) {
    return fail(Errc::invalid_argument, "malformed verifier key: key hash does not match the name and key");
  }
  return v;
}

std::string NoteVerifier::encoded() const {
  std::string raw(1, static_cast<char>(kAlgEd25519));
  raw.append(reinterpret_cast<const char*>(public_key_.data()), public_key_.size());
  return name_ + "+" + key_hash_hex(key_hash_) + "+" + base64_encode(raw);
}

bool NoteVerifier::verify(std::string_view text, std::string_view signature) const {
  return ed25519_verify(public_key_, text, signature);
}

NoteSigner::NoteSigner(std::string name, Ed25519PrivateKey key)
    : name_(std::move(name)), key_hash_(compute_key_hash(name_, key.public_key())), key_(std::move(key)) {}

Result<NoteSigner> NoteSigner::parse(std::string_view skey) {
  constexpr std::string_view kPrefix = "PRIVATE+KEY+";
  if (!skey.starts_with(kPrefix)) return fail(Errc::invalid_argument, "malformed signer key: must start with PRIVATE+KEY+");
  auto fields = parse_key_fields(skey.substr(kPrefix.size()), "signer");
  if (!fields) return std::unexpected(fields.error());
  auto priv = Ed25519PrivateKey::from_seed(fields->key32);
  if (!priv) return std::unexpected(priv.error());
  NoteSigner s(std::string(fields->name), std::move(*priv));
  if (s.key_hash_ != fields->key_hash) {
    return fail(Errc::invalid_argument, "malformed signer key: key hash does not match the name and key");
  }
  return s;
}

Result<NoteSigner> NoteSigner::generate(std::string_view name) {
  if (!is_valid_key_name(name)) {
    return fail(Errc::invalid_argument, "key name \"" + std::string(name) +
                                            "\" must be non-empty, without spaces or '+' (e.g. example.com/log)");
  }
  auto priv = Ed25519PrivateKey::generate();
  if (!priv) return std::unexpected(priv.error());
  return NoteSigner(std::string(name), std::move(*priv));
}

std::string NoteSigner::encoded() const {
  std::string raw(1, static_cast<char>(kAlgEd25519));
  raw += key_.seed();
  return "PRIVATE+KEY+" + name_ + "+" + key_hash_hex(key_hash_) + "+" + base64_encode(raw);
}

NoteVerifier NoteSigner::verifier() const {
  NoteVerifier v;
  v.name_ = name_;
  v.key_hash_ = key_hash_;
  v.public_key_ = key_.public_key();
  return v;
}

Result<std::string> NoteSigner::sign(std::string_view text) const {
  auto sig = key_.sign(text);
  if (!sig) return std::unexpected(sig.error());
  return std::string(reinterpret_cast<const char*>(sig->data()), sig->size());
}

}  // namespace warden
