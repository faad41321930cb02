// Note-style Ed25519 keys, as C2SP signed-note and golang.org/x/mod/sumdb/note define them:
// the keys that sign Warden's checkpoints (ledger/note.h), approvals and attestations.
//
//   signer key:   PRIVATE+KEY+<name>+<keyhash hex8>+base64(0x01 || seed32)
//   verifier key: <name>+<keyhash hex8>+base64(0x01 || pubkey32)
//   key hash:     first 4 bytes, big-endian, of SHA-256(name || "\n" || 0x01 || pubkey32)
//
// NoteVerifier is a plain value. NoteSigner owns its private key (move-only) and is
// immutable after parse()/generate(), so it may be shared by threads for signing. Nothing
// here touches disk: keeping a generated signer key secret and durable is the caller's job.
// Errors: invalid_argument means a malformed key or key name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// Valid UTF-8 with no control character but newline: what a note's text and a key's name
// must be. invalid_argument naming the first bad byte.
Status check_note_text(std::string_view text);

// A key hash as keys and notes spell it: 8 lowercase hex digits.
std::string key_hash_hex(uint32_t key_hash);

}  // namespace warden
