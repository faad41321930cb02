// Ed25519 (RFC 8032) signing and verification through OpenSSL. Keys are handled as raw
// 32-byte seeds and public keys, the form note-style key strings carry.
//
// An Ed25519PrivateKey owns its OpenSSL key (freed on destruction; move-only). Once built it
// is never mutated, and sign() uses a fresh OpenSSL context per call, so one key may be shared
// by threads for signing. An error from from_seed() means the seed is not 32 bytes
// (invalid_argument); any other error (internal) means OpenSSL failed, not that the input was
// bad. ed25519_verify() returns false for any bad key, signature or message: it never says why.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace warden {

using Ed25519PublicKey = std::array<uint8_t, 32>;
using Ed25519Signature = std::array<uint8_t, 64>;

class Ed25519PrivateKey {
 public:
  static Result<Ed25519PrivateKey> from_seed(std::string_view seed32);
  static Result<Ed25519PrivateKey> generate();  // OpenSSL's CSPRNG

  Ed25519PrivateKey(Ed25519PrivateKey&&) noexcept = default;
  Ed25519PrivateKey& operator=(Ed25519PrivateKey&&) noexcept = default;

  const Ed25519PublicKey& public_key() const { return public_key_; }
  std::string seed() const;  // 32 raw bytes; keep secret
  Result<Ed25519Signature> sign(std::string_view message) const;

 private:
  struct PkeyDeleter {
    void operator()(EVP_PKEY* key) const;
  };
  Ed25519PrivateKey() = default;
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key_;
  Ed25519PublicKey public_key_{};
};

bool ed25519_verify(const Ed25519PublicKey& key, std::string_view message, std::string_view signature);

}  // namespace warden
