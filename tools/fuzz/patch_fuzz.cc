// libFuzzer target for the patch parser and everything a parsed patch reaches without
// git: building the canonical Diff against a small base tree, its JSON round trip, and
// resolving it (hunks, hashes, path rules). Any crash, sanitizer report or hang is a bug;
// refusals are the expected outcome for almost every input.
#include <cstdint>
#include <string_view>

#include "diff/diff_apply.h"
#include "diff/diff_builder.h"

namespace {

warden::MemoryFileTree make_base() {
  warden::MemoryFileTree base;
  base.put("a.txt", "line1\nline2\nline3\n");
  base.put("src/main.c", "int main(void) {\n  return 0;\n}\n");
  base.put("bin/data.bin", std::string("\x00\x01\x02\xff", 4));
  base.put("link", "src", 0120000);
  base.put("no-newline", "end");
  return base;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static warden::MemoryFileTree base = make_base();  // read-only after construction
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto diff = warden::diff_from_patch(text, base, "fuzz");
  if (!diff) return 0;
  auto json = diff->to_json();
  auto back = warden::Diff::from_json(json);
  if (!back || back->digest() != diff->digest()) __builtin_trap();  // the round trip must be lossless
  auto resolved = warden::resolve_diff(*back, base);
  (void)resolved;
  return 0;
}
