// OpenSSL's SHA256_* functions, not EVP: an EVP digest loads OpenSSL's configuration file and
// provider tables on first use (0.8 ms per process, more than a whole `warden diff check`),
// while SHA256_* run the same SHA-NI/AVX code with no set-up. And they are all of libcrypto a
// `warden` binary links (35 kB): anything of EVP would bring the providers' tables, whose
// ~17,000 pointers the loader relocates at every start (0.35 ms), which is why signatures and
// MACs come from Nettle. OpenSSL 3 marks SHA256_* deprecated; this file asks for the 1.1.1
// API, where they are not. (Nettle's SHA-256 was 8% slower on ledger-sized messages.)
#define OPENSSL_API_COMPAT 10101
#include "common/sha256.h"

#include <openssl/sha.h>

#include <stdexcept>

#include "common/encoding.h"

namespace warden {
namespace {

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

void Sha256::StateDeleter::operator()(SHA256state_st* state) const { delete state; }

Sha256::Sha256() : state_(new SHA256_CTX) {
  if (SHA256_Init(state_.get()) != 1) crypto_failure("init");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(std::string_view bytes) {
  if (SHA256_Update(state_.get(), bytes.data(), bytes.size()) != 1) crypto_failure("update");
  return *this;
}

Sha256& Sha256::update(std::span<const uint8_t> bytes) {
  if (SHA256_Update(state_.get(), bytes.data(), bytes.size()) != 1) crypto_failure("update");
  return *this;
}

Digest Sha256::finish() {
  Digest out;
  if (SHA256_Final(out.mutable_bytes().data(), state_.get()) != 1) crypto_failure("final");
  if (SHA256_Init(state_.get()) != 1) crypto_failure("reinit");
  return out;
}

Digest sha256(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

}  // namespace warden
