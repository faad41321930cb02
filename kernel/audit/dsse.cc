#include "kernel/audit/dsse.h"

#include <cstdio>

#include "common/encoding.h"
#include "common/json_reader.h"

namespace warden::kernel {

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

std::string dsse_keyid(const NoteVerifier& key) {
  char hash[9];
  std::snprintf(hash, sizeof hash, "%08x", key.key_hash());
  return key.name() + "+" + hash;
}

Json DsseEnvelope::to_json() const {
  Json sigs = Json::array();
  for (const auto& s : signatures) sigs.push_back({{"keyid", s.keyid}, {"sig", base64_encode(s.sig)}});
  return {{"payloadType", payload_type}, {"payload", base64_encode(payload)}, {"signatures", sigs}};
}

Result<DsseEnvelope> DsseEnvelope::from_json(const Json& json) {
  DsseEnvelope e;
  JsonReader r(json, "envelope");
  r.string("payloadType", e.payload_type);
  std::string payload;
  r.string("payload", payload);
  if (r.ok()) {
    auto decoded = base64_decode(payload);
    if (decoded) e.payload = std::move(*decoded);
    else r.fail("payload", "must be base64");
  }
  const Json* sigs = r.value("signatures", Json::value_t::array);
  if (sigs && sigs->empty()) r.fail("signatures", "must hold at least one signature");
  for (size_t i = 0; sigs && r.ok() && i < sigs->size(); ++i) {
    JsonReader s((*sigs)[i], r.path("signatures[" + std::to_string(i) + "]"));
    DsseSignature sig;
    std::string b64;
    s.string("keyid", sig.keyid, false);
    s.string("sig", b64);
    if (s.ok()) {
      auto raw = base64_decode(b64);
      if (raw) sig.sig = std::move(*raw);
      else s.fail("sig", "must be base64");
    }
    r.adopt(s.finish());
    e.signatures.push_back(std::move(sig));
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return e;
}

Result<DsseEnvelope> dsse_sign(std::string_view payload_type, std::string payload, const NoteSigner& signer) {
  auto sig = signer.sign(dsse_pae(payload_type, payload));
  if (!sig) return std::unexpected(sig.error());
  DsseEnvelope e{std::string(payload_type), std::move(payload), {}};
  e.signatures.push_back({dsse_keyid(signer.verifier()), std::move(*sig)});
  return e;
}

Status dsse_verify(const DsseEnvelope& envelope, const NoteVerifier& key) {
  std::string pae = dsse_pae(envelope.payload_type, envelope.payload);
  for (const auto& s : envelope.signatures) {
    if (ed25519_verify(key.public_key(), pae, s.sig)) return {};
  }
  return fail(Errc::verification_failed, "DSSE signature: no signature verifies under key " + dsse_keyid(key));
}

}  // namespace warden::kernel
