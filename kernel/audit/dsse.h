// DSSE v1 envelopes (github.com/secure-systems-lab/dsse): a payload, its type, and Ed25519
// signatures over the pre-authentication encoding PAE(type, payload), so a signature can
// never be replayed under another payload type. Warden signs with its note-style key; the
// signature's keyid is the note key id "<name>+<key hash, 8 hex>" (as `warden note verify`
// prints it). keyid is an unauthenticated hint, as the spec says: a signature counts only
// if it verifies under the trusted key.
//
//   {"payloadType": TYPE, "payload": base64(BODY), "signatures": [{"keyid": ID, "sig": base64(SIG)}]}
//
// Values and pure functions: no I/O, thread-safe (a NoteSigner may be shared for signing).
// from_json() refuses a malformed envelope; dsse_verify() returns verification_failed when
// no signature verifies under the trusted key — do not use the payload then. An error from
// dsse_sign() is OpenSSL failing, not bad input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "ledger/note.h"

namespace warden::kernel {

inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";

// "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in ASCII decimal.
std::string dsse_pae(std::string_view payload_type, std::string_view payload);

// "<name>+<8 hex key hash>".
std::string dsse_keyid(const NoteVerifier& key);

struct DsseSignature {
  std::string keyid;
  std::string sig;  // raw signature bytes
};

struct DsseEnvelope {
  std::string payload_type;
  std::string payload;  // raw bytes
  std::vector<DsseSignature> signatures;

  Json to_json() const;
  // Strict: the three fields only, payload and sig valid base64, at least one signature.
  static Result<DsseEnvelope> from_json(const Json& json);
};

Result<DsseEnvelope> dsse_sign(std::string_view payload_type, std::string payload, const NoteSigner& signer);

// Succeeds when some signature verifies under `key`; otherwise verification_failed.
Status dsse_verify(const DsseEnvelope& envelope, const NoteVerifier& key);

}  // namespace warden::kernel
