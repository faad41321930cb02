#include "common/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

#include "common/encoding.h"

namespace warden {
namespace {

// Fetched once: EVP_sha256() per call would repeat the provider lookup on every message.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

[[noreturn]] void crypto_failure(const char* what) {
  // OpenSSL refusing to hash valid memory means the process cannot be trusted to go on.
  throw std::runtime_error(std::string("OpenSSL SHA-256 failure in ") + what);
}

}  // namespace

Result<Digest> Digest::from_bytes(std::string_view raw) {
  if (raw.size() != kSize) {
    return fail(Errc::invalid_argument, "digest must be 32 bytes, got " + std::to_string(raw.size()));
  }
  Digest d;
  std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(d.bytes_.data()));
  return d;
}

Result<Digest> Digest::from_hex(std::string_view hex) {
  if (hex.size() != 2 * kSize) {
    return fail(Errc::invalid_argument,
                "digest must be 64 lowercase hex characters, got " + std::to_string(hex.size()));
  }
  auto raw = warden::from_hex(hex);
  if (!raw) return std::unexpected(raw.error());
  return from_bytes(*raw);
}

Result<Digest> Digest::parse(std::string_view text) {
  constexpr std::string_view kPrefix = "sha256:";
  if (!text.starts_with(kPrefix)) {
    return fail(Errc::invalid_argument, "digest must be spelled sha256:<64 lowercase hex>");
  }
  return from_hex(text.substr(kPrefix.size()));
}

std::string Digest::hex() const { return to_hex(bytes_); }
std::string Digest::str() const { return "sha256:" + hex(); }

bool Digest::is_zero() const {
  for (uint8_t b : bytes_) {
    if (b != 0) return false;
  }
  return true;
}

void Sha256::CtxDeleter::operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex2(ctx_.get(), sha256_md(), nullptr) != 1) crypto_failure("init");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) crypto_failure("update");
  return *this;
}

Sha256& Sha256::update(std::span<const uint8_t> bytes) {
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) crypto_failure("update");
  return *this;
}

Digest Sha256::finish() {
  Digest out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), out.mutable_bytes().data(), &len) != 1 || len != Digest::kSize) {
    crypto_failure("final");
  }
  if (EVP_DigestInit_ex2(ctx_.get(), nullptr, nullptr) != 1) crypto_failure("reinit");
  return out;
}

Digest sha256(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

}  // namespace warden
