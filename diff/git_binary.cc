#include "diff/git_binary.h"

#include <zlib.h>

#include <array>

namespace warden {
namespace {

constexpr char kBase85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
// Deflate cannot expand more than about 1032:1; a larger claim is a lie.
constexpr uint64_t kMaxDeflateRatio = 1032;

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 85; ++i) t[static_cast<uint8_t>(kBase85[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr auto kTable = make_table();

Refusal binary_error(std::string detail) { return Refusal{RefusalCode::malformed_patch, "", "binary patch: " + std::move(detail)}; }

// Git's variable-length sizes: 7 bits a byte, least significant first.
bool read_varint(std::string_view data, size_t& at, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= data.size()) return false;
    auto byte = static_cast<uint8_t>(data[at++]);
    value |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

}  // namespace

Checked<void> decode_base85_line(std::string_view line, std::string& out) {
  if (line.empty()) return std::unexpected(binary_error("empty data line"));
  char c = line[0];
  size_t bytes = 0;
  if (c >= 'A' && c <= 'Z') bytes = static_cast<size_t>(c - 'A' + 1);
  else if (c >= 'a' && c <= 'z') bytes = static_cast<size_t>(c - 'a' + 27);
  else return std::unexpected(binary_error("bad length character"));
  std::string_view data = line.substr(1);
  if (data.size() != (bytes + 3) / 4 * 5) return std::unexpected(binary_error("line length does not match its byte count"));
  for (size_t i = 0; i < data.size(); i += 5) {
    uint64_t acc = 0;
    for (size_t k = 0; k < 5; ++k) {
      int8_t d = kTable[static_cast<uint8_t>(data[i + k])];
      if (d < 0) return std::unexpected(binary_error("invalid base85 character"));
      acc = acc * 85 + static_cast<uint64_t>(d);
    }
    if (acc > 0xffffffffu) return std::unexpected(binary_error("base85 group overflows 32 bits"));
    for (int shift = 24; shift >= 0 && bytes > 0; shift -= 8, --bytes) out += static_cast<char>((acc >> shift) & 0xff);
  }
  return {};
}

Checked<std::string> inflate_exact(std::string_view compressed, uint64_t expected_size, uint64_t max_size) {
  if (expected_size > max_size) {
    return std::unexpected(Refusal{RefusalCode::patch_too_large, "", "binary payload declares " + std::to_string(expected_size) +
                                                                   " bytes; the limit is " + std::to_string(max_size)});
  }
  if (expected_size > compressed.size() * kMaxDeflateRatio + 64) {
    return std::unexpected(binary_error("declared size " + std::to_string(expected_size) + " is impossible for " +
                                        std::to_string(compressed.size()) + " bytes of compressed data"));
  }
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return std::unexpected(binary_error("zlib init failed"));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  // Grows with what the data really inflates to, never past the declared size plus one
  // chunk: a stream that goes on is refused at the first chunk past it.
  constexpr size_t kChunk = 64 * 1024;
  std::string out;
  std::array<char, kChunk> chunk;
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - zs.avail_out);
    if (out.size() > expected_size) break;
  }
  inflateEnd(&zs);
  if (out.size() > expected_size) return std::unexpected(binary_error("inflates to more than the declared size"));
  if (rc != Z_STREAM_END) return std::unexpected(binary_error("corrupt or truncated zlib data"));
  if (out.size() != expected_size) return std::unexpected(binary_error("inflates to a size other than the declared one"));
  return out;
}

Checked<std::string> apply_git_delta(std::string_view base, std::string_view delta, uint64_t max_result) {
  size_t at = 0;
  uint64_t base_size = 0, result_size = 0;
  if (!read_varint(delta, at, base_size) || !read_varint(delta, at, result_size)) {
    return std::unexpected(binary_error("delta header truncated"));
  }
  if (base_size != base.size()) {
    return std::unexpected(Refusal{RefusalCode::hunk_mismatch, "", "binary delta expects a " + std::to_string(base_size) +
                                                            "-byte pre-image, the file has " + std::to_string(base.size())});
  }
  if (result_size > max_result) {
    return std::unexpected(Refusal{RefusalCode::patch_too_large, "", "binary delta declares a " + std::to_string(result_size) +
                                                                   "-byte result; the limit is " + std::to_string(max_result)});
  }
  std::string out;
  out.reserve(result_size);
  while (at < delta.size()) {
    auto op = static_cast<uint8_t>(delta[at++]);
    if (op & 0x80) {
      uint64_t offset = 0, size = 0;
      for (int i = 0; i < 4; ++i) {
        if (op & (1u << i)) {
          if (at >= delta.size()) return std::unexpected(binary_error("delta copy truncated"));
          offset |= uint64_t{static_cast<uint8_t>(delta[at++])} << (8 * i);
        }
      }
      for (int i = 0; i < 3; ++i) {
        if (op & (0x10u << i)) {
          if (at >= delta.size()) return std::unexpected(binary_error("delta copy truncated"));
          size |= uint64_t{static_cast<uint8_t>(delta[at++])} << (8 * i);
        }
      }
      if (size == 0) size = 0x10000;
      if (offset + size > base.size() || out.size() + size > result_size) {
        return std::unexpected(binary_error("delta copies outside the pre-image or past the result size"));
      }
      out.append(base.substr(offset, size));
    } else if (op != 0) {
      if (at + op > delta.size() || out.size() + op > result_size) {
        return std::unexpected(binary_error("delta insert truncated or past the result size"));
      }
      out.append(delta.substr(at, op));
      at += op;
    } else {
      return std::unexpected(binary_error("delta uses the reserved opcode 0"));
    }
  }
  if (out.size() != result_size) return std::unexpected(binary_error("delta result is shorter than declared"));
  return out;
}

}  // namespace warden
