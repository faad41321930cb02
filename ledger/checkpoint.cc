#include "ledger/checkpoint.h"

#include <charconv>

#include "common/encoding.h"

namespace warden {

std::string Checkpoint::body() const {
  std::string out = origin + "\n" + std::to_string(size) + "\n" + base64_encode(root.view()) + "\n";
  for (const auto& line : extensions) out += line + "\n";
  return out;
}

Result<Checkpoint> Checkpoint::parse_body(std::string_view text) {
  auto bad = [](const std::string& why) { return fail(Errc::invalid_argument, "malformed checkpoint: " + why); };
  if (text.empty() || text.back() != '\n') return bad("text must end in a newline");
  std::vector<std::string_view> lines;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
  }
  if (lines.size() < 3) return bad("needs origin, tree size and root hash lines");
  for (auto line : lines) {
    if (line.empty()) return bad("lines must be non-empty");
  }
  Checkpoint cp;
  cp.origin = std::string(lines[0]);
  auto size_text = lines[1];
  if (size_text.size() > 1 && size_text[0] == '0') return bad("tree size has a leading zero");
  auto [ptr, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), cp.size);
  if (ec != std::errc() || ptr != size_text.data() + size_text.size()) return bad("tree size is not a decimal number");
  auto root = base64_decode(lines[2]);
  if (!root) return bad("root hash is not base64");
  auto digest = Digest::from_bytes(*root);
  if (!digest) return bad("root hash must be 32 bytes");
  cp.root = *digest;
  for (size_t i = 3; i < lines.size(); ++i) cp.extensions.emplace_back(lines[i]);
  return cp;
}

}  // namespace warden
