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

bool ed25519_small_order(const Ed25519PublicKey& key) {
  // The y coordinates of the curve's eight points of small order (the identity, one of order
  // 2, two of order 4 at y = 0, four of order 8), and p and p + 1, the non-canonical spellings of
  // y = 0 and y = 1 (Nettle refuses those already). x's sign bit (the top bit) is ignored: either
  // sign is the same y.
  static constexpr std::array<std::array<uint8_t, 32>, 7> kSmallOrderY = {{
      {0x00},
      {0x01},
      {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
       0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
      {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
       0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
      {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
  }};
  std::array<uint8_t, 32> y = key;
  y[31] &= 0x7f;
  for (const auto& bad : kSmallOrderY) {
    if (y == bad) return true;
  }
  return false;
}

bool ed25519_verify(const Ed25519PublicKey& key, std::string_view message, std::string_view signature) {
  if (signature.size() != 64) return false;
  // RFC 8032's verification equation holds for a key of small order with signatures nobody's
  // secret made: under the identity, R = identity and S = 0 verify for every message. Nettle
  // checks the equation only, so such keys are refused here. No key Warden or an honest
  // signer generates is one (a generated key is a multiple of the base point).
  if (ed25519_small_order(key)) return false;
  // Nettle refuses a key that is not a point of the curve and a signature whose S is not
  // below the group order (RFC 8032, 5.1.7).
  return ed25519_sha512_verify(key.data(), message.size(), reinterpret_cast<const uint8_t*>(message.data()),
                               reinterpret_cast<const uint8_t*>(signature.data())) == 1;
}

}  // namespace warden
