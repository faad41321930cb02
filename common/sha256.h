// SHA-256 through OpenSSL's SHA-256 functions, and the Digest value type that carries its
// output. `sha256:<64 lowercase hex>` is the one spelling of a digest in JSON and on the CLI.
//
// Digest is a plain value. A Sha256 owns one hashing state: not thread-safe, use one per
// thread. OpenSSL failing to hash throws std::runtime_error rather than returning an Error:
// the process cannot be trusted to go on. Digest's parse functions return invalid_argument
// for malformed input.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"

struct SHA256state_st;

namespace warden {

class Digest {
 public:
  static constexpr size_t kSize = 32;

  Digest() : bytes_{} {}
  explicit Digest(const std::array<uint8_t, kSize>& bytes) : bytes_(bytes) {}
  // Exactly 32 raw bytes, or an error.
  static Result<Digest> from_bytes(std::string_view raw);
  // 64 lowercase hex characters.
  static Result<Digest> from_hex(std::string_view hex);
  // `sha256:<hex>`.
  static Result<Digest> parse(std::string_view text);

  const std::array<uint8_t, kSize>& bytes() const { return bytes_; }
  std::array<uint8_t, kSize>& mutable_bytes() { return bytes_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(bytes_.data()), kSize}; }
  std::string hex() const;
  std::string str() const;  // sha256:<hex>
  bool is_zero() const;

  auto operator<=>(const Digest&) const = default;

 private:
  std::array<uint8_t, kSize> bytes_;
};

// Incremental hashing. Reusable: finish() resets the state for the next message, so a hot
// loop can hash millions of small messages without reallocating.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  Sha256& update(std::span<const uint8_t> bytes);
  Digest finish();

 private:
  struct StateDeleter {
    void operator()(SHA256state_st* state) const;
  };
  std::unique_ptr<SHA256state_st, StateDeleter> state_;
};

Digest sha256(std::string_view bytes);

}  // namespace warden
