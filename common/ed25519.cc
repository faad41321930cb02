#include "common/ed25519.h"

#include <openssl/evp.h>

namespace warden {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

}  // namespace

void Ed25519PrivateKey::PkeyDeleter::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

Result<Ed25519PrivateKey> Ed25519PrivateKey::from_seed(std::string_view seed32) {
  if (seed32.size() != 32) return fail(Errc::invalid_argument, "Ed25519 private seed must be 32 bytes");
  Ed25519PrivateKey key;
  key.key_.reset(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                              reinterpret_cast<const unsigned char*>(seed32.data()), 32));
  if (!key.key_) return fail(Errc::internal, "OpenSSL refused the Ed25519 seed");
  size_t len = key.public_key_.size();
  if (EVP_PKEY_get_raw_public_key(key.key_.get(), key.public_key_.data(), &len) != 1 || len != 32) {
    return fail(Errc::internal, "OpenSSL could not derive the Ed25519 public key");
  }
  return key;
}

Result<Ed25519PrivateKey> Ed25519PrivateKey::generate() {
  EVP_PKEY* raw = nullptr;
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                  EVP_PKEY_CTX_free);
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return fail(Errc::internal, "OpenSSL could not generate an Ed25519 key");
  }
  std::unique_ptr<EVP_PKEY, PkeyDeleter> generated(raw);
  std::string seed(32, '\0');
  size_t len = seed.size();
  if (EVP_PKEY_get_raw_private_key(generated.get(), reinterpret_cast<unsigned char*>(seed.data()), &len) != 1) {
    return fail(Errc::internal, "OpenSSL could not export the Ed25519 seed");
  }
  return from_seed(seed);
}

std::string Ed25519PrivateKey::seed() const {
  std::string seed(32, '\0');
  size_t len = seed.size();
  EVP_PKEY_get_raw_private_key(key_.get(), reinterpret_cast<unsigned char*>(seed.data()), &len);
  return seed;
}

Result<Ed25519Signature> Ed25519PrivateKey::sign(std::string_view message) const {
  MdCtx ctx(EVP_MD_CTX_new());
  Ed25519Signature sig{};
  size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig.data(), &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1 ||
      len != sig.size()) {
    return fail(Errc::internal, "OpenSSL Ed25519 signing failed");
  }
  return sig;
}

bool ed25519_verify(const Ed25519PublicKey& key, std::string_view message, std::string_view signature) {
  if (signature.size() != 64) return false;
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> pkey(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size()), EVP_PKEY_free);
  if (!pkey) return false;
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

}  // namespace warden
