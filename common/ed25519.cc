#include "common/ed25519.h"

#include <nettle/eddsa.h>

#include <cstring>
#include <stdexcept>

#include "common/random_source.h"

namespace warden {

static_assert(ED25519_KEY_SIZE == 32 && ED25519_SIGNATURE_SIZE == 64);

Result<Ed25519PrivateKey> Ed25519PrivateKey::from_seed(std::string_view seed32) {
  if (seed32.size() != 32) return fail(Errc::invalid_argument, "Ed25519 private seed must be 32 bytes");
  Ed25519PrivateKey key;
  std::memcpy(key.seed_.data(), seed32.data(), 32);
  ed25519_sha512_public_key(key.public_key_.data(), key.seed_.data());
  key.live_ = true;
  return key;
}

Result<Ed25519PrivateKey> Ed25519PrivateKey::generate() {
  std::array<uint8_t, 32> seed{};
  try {
    fill_system_random(seed);
  } catch (const std::runtime_error& e) {
    return fail(Errc::internal, std::string("generating an Ed25519 key: ") + e.what());
  }
  auto key = from_seed(std::string_view(reinterpret_cast<const char*>(seed.data()), seed.size()));
  ::explicit_bzero(seed.data(), seed.size());
  return key;
}

Ed25519PrivateKey::Ed25519PrivateKey(Ed25519PrivateKey&& other) noexcept
    : seed_(other.seed_), public_key_(other.public_key_), live_(other.live_) {
  ::explicit_bzero(other.seed_.data(), other.seed_.size());
  other.live_ = false;
}

Ed25519PrivateKey& Ed25519PrivateKey::operator=(Ed25519PrivateKey&& other) noexcept {
  if (this != &other) {
    seed_ = other.seed_;
    public_key_ = other.public_key_;
    live_ = other.live_;
    ::explicit_bzero(other.seed_.data(), other.seed_.size());
    other.live_ = false;
  }
  return *this;
}

Ed25519PrivateKey::~Ed25519PrivateKey() { ::explicit_bzero(seed_.data(), seed_.size()); }

std::string Ed25519PrivateKey::seed() const { return std::string(reinterpret_cast<const char*>(seed_.data()), seed_.size()); }

Result<Ed25519Signature> Ed25519PrivateKey::sign(std::string_view message) const {
  // A moved-from key's seed is wiped: signing with it would give a signature that verifies
  // under no key, silently.
  if (!live_) return fail(Errc::internal, "Ed25519 signing with a key that was moved from");
  Ed25519Signature sig{};
  ed25519_sha512_sign(public_key_.data(), seed_.data(), message.size(), reinterpret_cast<const uint8_t*>(message.data()),
                      sig.data());
  return sig;
}

bool ed25519_verify(const Ed25519PublicKey& key, std::string_view message, std::string_view signature) {
  if (signature.size() != 64) return false;
  // Nettle refuses a key that is not a point of the curve and a signature whose S is not
  // below the group order (RFC 8032, 5.1.7).
  return ed25519_sha512_verify(key.data(), message.size(), reinterpret_cast<const uint8_t*>(message.data()),
                               reinterpret_cast<const uint8_t*>(signature.data())) == 1;
}

}  // namespace warden
