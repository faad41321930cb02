// Ed25519 (RFC 8032) signing and verification through Nettle. Keys are handled as raw
// 32-byte seeds and public keys, the form note-style key strings carry.
//
// An Ed25519PrivateKey holds its seed (wiped on destruction and when moved from; move-only).
// Once built it is never mutated and sign() keeps no state, so one key may be shared by
// threads for signing. An error from from_seed() means the seed is not 32 bytes
// (invalid_argument); from generate(), that the kernel gave no randomness; from sign(), that
// the key was moved from (internal). Ed25519 is
// deterministic: a seed and a message give the same signature every time, whatever library
// computes it. ed25519_verify() returns false for any bad key, signature or message: it
// never says why.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden {

using Ed25519PublicKey = std::array<uint8_t, 32>;
using Ed25519Signature = std::array<uint8_t, 64>;

class Ed25519PrivateKey {
 public:
  static Result<Ed25519PrivateKey> from_seed(std::string_view seed32);
  static Result<Ed25519PrivateKey> generate();  // a seed from the kernel's CSPRNG

  Ed25519PrivateKey(Ed25519PrivateKey&& other) noexcept;
  Ed25519PrivateKey& operator=(Ed25519PrivateKey&& other) noexcept;
  Ed25519PrivateKey(const Ed25519PrivateKey&) = delete;
  Ed25519PrivateKey& operator=(const Ed25519PrivateKey&) = delete;
  ~Ed25519PrivateKey();

  const Ed25519PublicKey& public_key() const { return public_key_; }
  std::string seed() const;  // 32 raw bytes; keep secret
  Result<Ed25519Signature> sign(std::string_view message) const;

 private:
  Ed25519PrivateKey() = default;
  std::array<uint8_t, 32> seed_{};
  Ed25519PublicKey public_key_{};
  bool live_ = false;  // false once moved from: seed_ is wiped, and sign() refuses
};

bool ed25519_verify(const Ed25519PublicKey& key, std::string_view message, std::string_view signature);

// True for a public key of small order (any of the curve's eight torsion points, either sign,
// and their non-canonical spellings): a key that proves nothing, since signatures that no
// secret made verify under it, one of them for every message. ed25519_verify() refuses them;
// callers that take a key from outside (enrolment, verifier keys) say so with a clear error.
bool ed25519_small_order(const Ed25519PublicKey& key);

}  // namespace warden
