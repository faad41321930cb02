// Signed notes and note-style Ed25519 keys, as C2SP signed-note and
// golang.org/x/mod/sumdb/note define them, so that Warden's checkpoints open in any note
// verifier and Warden verifies notes signed elsewhere.
//
//   signer key:   PRIVATE+KEY+<name>+<keyhash hex8>+base64(0x01 || seed32)
//   verifier key: <name>+<keyhash hex8>+base64(0x01 || pubkey32)
//   key hash:     first 4 bytes, big-endian, of SHA-256(name || "\n" || 0x01 || pubkey32)
//
// NoteVerifier is a plain value. NoteSigner owns its private key (move-only) and is
// immutable after parse()/generate(), so it may be shared by threads for signing. Nothing
// here touches disk: keeping a generated signer key secret and durable is the caller's job.
// Errors: invalid_argument (or limit_exceeded) means a malformed key or note — the input is
// wrong; verification_failed from open_note() means the note is well-formed but a known key's
// signature is bad or no known key signed it: do not trust its text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ed25519.h"
#include "common/error.h"

namespace warden {

class NoteVerifier {
 public:
  static Result<NoteVerifier> parse(std::string_view vkey);
  const std::string& name() const { return name_; }
  uint32_t key_hash() const { return key_hash_; }
  const Ed25519PublicKey& public_key() const { return public_key_; }
  std::string encoded() const;
  bool verify(std::string_view text, std::string_view signature) const;

 private:
  friend class NoteSigner;
  std::string name_;
  uint32_t key_hash_ = 0;
  Ed25519PublicKey public_key_{};
};

class NoteSigner {
 public:
  static Result<NoteSigner> parse(std::string_view skey);
  static Result<NoteSigner> generate(std::string_view name);

  const std::string& name() const { return name_; }
  uint32_t key_hash() const { return key_hash_; }
  std::string encoded() const;  // the PRIVATE+KEY+... string
  NoteVerifier verifier() const;
  Result<std::string> sign(std::string_view text) const;  // raw 64-byte signature

 private:
  NoteSigner(std::string name, Ed25519PrivateKey key);
  std::string name_;
  uint32_t key_hash_ = 0;
  Ed25519PrivateKey key_;
};

bool is_valid_key_name(std::string_view name);

struct NoteSignature {
  std::string name;
  uint32_t key_hash = 0;
  std::string base64;  // base64(keyhash || signature), as it appears in the note
  std::string line() const;  // "— name base64\n"
};

struct Note {
  std::string text;                       // includes its final newline
  std::vector<NoteSignature> signatures;  // in note order
};

// Splits a signed note into text and signature lines (no verification). Enforces the
// format: UTF-8, no control characters but newline, a blank line before the signatures,
// every signature line well-formed, at most 100 signatures.
Result<Note> parse_note(std::string_view message);

// Signs `text` (which must end in a newline) and appends the signature after any
// `existing` signatures from other keys, as note.Sign does: byte-identical output.
Result<std::string> sign_note(std::string_view text, const NoteSigner& signer,
                              const std::vector<NoteSignature>& existing = {});

struct OpenedNote {
  std::string text;
  std::vector<NoteSignature> verified;
  std::vector<NoteSignature> unverified;  // from keys not in the list
};

// Verifies per the spec: signatures from unknown keys are ignored, a known key's bad
// signature rejects the note, and at least one known key must have signed.
Result<OpenedNote> open_note(std::string_view message, const std::vector<NoteVerifier>& known);

}  // namespace warden
