// The patch parser, hunk applier and binary decoding, in memory: exact behaviour on the
// shapes real patches have, and strict refusals for everything else.
#include "diff/patch.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>

#include "diff/diff_apply.h"
#include "diff/diff_builder.h"
#include "diff/git_binary.h"
#include "diff/hunk_apply.h"
#include "diff/path_safety.h"
#include "common/canonical_json.h"
#include "tests/support/git_base85.h"

namespace warden {
namespace {

using test::git_base85_line;

std::string deflate(std::string_view data) {
  uLongf size = compressBound(data.size());
  std::string out(size, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(data.data()), data.size());
  out.resize(size);
  return out;
}

std::string binary_block(const std::string& kind, std::string_view payload) {
  std::string z = deflate(payload), out = kind + " " + std::to_string(payload.size()) + "\n";
  for (size_t i = 0; i < z.size(); i += 52) out += git_base85_line(std::string_view(z).substr(i, 52)) + "\n";
  return out + "\n";
}

Diff build(std::string_view patch, MemoryFileTree& base) {
  auto diff = diff_from_patch(patch, base, "s1");
  EXPECT_TRUE(diff) << (diff ? "" : diff.error().message());
  return diff.value_or(Diff{});
}

std::string resolved_content(const Diff& diff, MemoryFileTree& base, const std::string& path) {
  auto files = resolve_diff(diff, base);
  EXPECT_TRUE(files) << (files ? "" : files.error().message());
  for (const auto& f : files.value_or(std::vector<ResolvedFile>{})) {
    if (f.path == path) return f.content.value_or("<removed>");
  }
  return "<absent>";
}

TEST(GitBinary, Base85DecodesGitsEncoding) {
  std::mt19937 rng(85);
  for (size_t n = 1; n <= 52; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    std::string out;
    ASSERT_TRUE(decode_base85_line(git_base85_line(bytes), out)) << n;
    EXPECT_EQ(out, bytes);
  }
  std::string out;
  EXPECT_FALSE(decode_base85_line("B0000", out));        // says 2 bytes, carries one group too few
  EXPECT_FALSE(decode_base85_line("A000\"0", out));      // '"' is not in the alphabet
  EXPECT_FALSE(decode_base85_line("A~~~~~", out));       // overflows 32 bits
}

TEST(GitBinary, DeltaCopiesAndInserts) {
  std::string base = "0123456789abcdef";
  // sizes 16 -> 9; copy 4 bytes from offset 2; insert "XYZ"; copy 2 bytes from offset 14.
  std::string delta = {16, 9, static_cast<char>(0x91), 2, 4, 3, 'X', 'Y', 'Z', static_cast<char>(0x91), 14, 2};
  auto out = apply_git_delta(base, delta);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(*out, "2345XYZef");
  EXPECT_EQ(apply_git_delta("short", delta).error().code, RefusalCode::hunk_mismatch);  // wrong base size
  std::string past = {16, 9, static_cast<char>(0x91), 15, 4};
  EXPECT_FALSE(apply_git_delta(base, past));  // copies past the end of the base
  std::string reserved = {16, 1, 0};
  EXPECT_FALSE(apply_git_delta(base, reserved));
  EXPECT_FALSE(inflate_exact(deflate("hello"), 4));  // declared size wrong
  EXPECT_FALSE(inflate_exact("garbage", 5));
  EXPECT_FALSE(inflate_exact("x", uint64_t{1} << 29));  // impossible ratio: refused before allocating
}

TEST(Patch, UnquotesGitsCPaths) {
  size_t used = 0;
  EXPECT_EQ(*unquote_c_path(R"("a\tb\303\251 \"q\"\\")", used), "a\tb\xc3\xa9 \"q\"\\");
  EXPECT_FALSE(unquote_c_path(R"("unterminated)", used));
  EXPECT_FALSE(unquote_c_path(R"("bad\q")", used));
  EXPECT_FALSE(unquote_c_path(R"("\777")", used));
}

TEST(Patch, ParsesSeveralFilesHunksAndEdgeLines) {
  MemoryFileTree base;
  base.put("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
  base.put("b.txt", "no newline");
  base.put("crlf.txt", "one\r\ntwo\r\n");
  std::string patch =
      "From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] change\n\n---\n a.txt | 2 +-\n\n"
      "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
      "@@ -1,2 +1,2 @@\n-1\n+one\n 2\n"
      "@@ -8,0 +9 @@\n+8.5\n"
      "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n"
      "@@ -1 +1 @@\n-no newline\n\\ No newline at end of file\n+now one\n"
      "diff --git a/crlf.txt b/crlf.txt\n--- a/crlf.txt\n+++ b/crlf.txt\n"
      "@@ -2 +2 @@\n-two\r\n+TWO\r\n"
      "-- \n2.39.5\n\n";
  Diff d = build(patch, base);
  ASSERT_EQ(d.files.size(), 3u);
  EXPECT_EQ(resolved_content(d, base, "a.txt"), "one\n2\n3\n4\n5\n6\n7\n8\n8.5\n9\n");
  EXPECT_EQ(resolved_content(d, base, "b.txt"), "now one\n");
  EXPECT_EQ(resolved_content(d, base, "crlf.txt"), "one\r\nTWO\r\n");
}

TEST(Patch, NewSideWithoutNewlineAndEmptyContextLines) {
  MemoryFileTree base;
  base.put("x", "a\n\nb\n");
  std::string patch = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n\\ No newline at end of file\n";
  Diff d = build(patch, base);
  EXPECT_EQ(resolved_content(d, base, "x"), "a\n\nc");
}

TEST(Patch, RenamesCopiesModesAndQuotedNames) {
  MemoryFileTree base;
  base.put("old name.txt", "same\n");
  base.put("src.c", "int x;\n");
  base.put("run.sh", "echo\n");
  std::string patch =
      "diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\nrename from old name.txt\nrename to new name.txt\n"
      "diff --git a/src.c \"b/c\\303\\251.c\"\nsimilarity index 80%\ncopy from src.c\ncopy to \"c\\303\\251.c\"\n"
      "--- a/src.c\n+++ \"b/c\\303\\251.c\"\n@@ -1 +1 @@\n-int x;\n+int y;\n"
      "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
  Diff d = build(patch, base);
  ASSERT_EQ(d.files.size(), 3u);
  EXPECT_EQ(d.files[0].op, FileOp::rename);
  EXPECT_EQ(*d.files[0].old_path, "old name.txt");
  EXPECT_EQ(d.files[1].op, FileOp::copy);
  EXPECT_EQ(d.files[1].path, "c\xc3\xa9.c");
  EXPECT_EQ(*d.files[2].new_mode, kModeExecutable);
  auto files = resolve_diff(d, base);
  ASSERT_TRUE(files) << files.error().message();
  // rename: remove + write; copy: write only; mode change: write.
  EXPECT_EQ(files->size(), 4u);
  EXPECT_EQ(resolved_content(d, base, "c\xc3\xa9.c"), "int y;\n");
  EXPECT_EQ(resolved_content(d, base, "old name.txt"), "<removed>");
}

TEST(Patch, BinaryLiteralAndDelta) {
  MemoryFileTree base;
  std::string old_bin = std::string("\x00\x01\x02\x03", 4) + std::string(100, 'z');
  base.put("img.bin", old_bin);
  std::string fresh = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(300, '\xff');
  std::string delta = {104, 6, static_cast<char>(0x90), 2, 4, 'w', 'x', 'y', 'z'};  // copy 2 from 0, insert 4
  std::string patch = "diff --git a/new.bin b/new.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\n" +
                      binary_block("literal", fresh) + binary_block("literal", "") +
                      "diff --git a/img.bin b/img.bin\nGIT binary patch\n" + binary_block("delta", delta) +
                      binary_block("literal", old_bin);
  // The index line names a blob the content is not: refused.
  EXPECT_EQ(diff_from_patch(patch, base, "s").error().code, RefusalCode::after_hash_mismatch);
  patch.replace(patch.find("1111111"), 7, git_blob_id(fresh).substr(0, 7));
  Diff d = build(patch, base);
  EXPECT_EQ(resolved_content(d, base, "new.bin"), fresh);
  EXPECT_EQ(resolved_content(d, base, "img.bin"), std::string("\x00\x01wxyz", 6));
  auto json = d.to_json();
  EXPECT_TRUE(json["files"][0].contains("after_content_base64"));
}

TEST(Patch, RefusesMalformedPatches) {
  MemoryFileTree base;
  base.put("x", "a\nb\nc\n");
  auto code = [&](std::string_view p) {
    auto d = diff_from_patch(p, base, "s");
    return d ? std::string("ok") : std::string(refusal_code_name(d.error().code));
  };
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n"), "hunk_count_mismatch");       // truncated
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n"), "hunk_count_mismatch");  // wrong counts
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B"), "malformed_patch");           // cut mid-line
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ -2,1 +2,1 @@\n-c\n+C\n"), "hunk_mismatch");              // wrong line
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ -1 +1 @@ x\n"), "hunk_count_mismatch");
  EXPECT_EQ(code("--- a/x\n+++ b/x\n@@ bogus @@\n"), "malformed_patch");
  EXPECT_EQ(code("just some text\n"), "malformed_patch");
  EXPECT_EQ(code(std::string("\x00\xff\x13garbage\x00", 11)), "malformed_patch");
  EXPECT_EQ(code("diff --git a/x b/x\nBinary files a/x and b/x differ\n"), "binary_without_data");
  EXPECT_EQ(code("diff --git a/y b/y\ndeleted file mode 100644\n--- a/y\n+++ /dev/null\n@@ -1 +0,0 @@\n-y\n"),
            "path_not_found");
  EXPECT_EQ(code("diff --git a/x b/x\nold mode 100755\nnew mode 100644\n"), "mode_mismatch");
  EXPECT_EQ(code("diff --git a/s b/s\nnew file mode 160000\n"), "unsupported_change");
  EXPECT_EQ(code(std::string(kMaxPatchBytes + 1, 'x')), "patch_too_large");
}

TEST(Patch, NonUtf8PathsAreMalformedAndEveryRefusalIsUtf8) {
  MemoryFileTree base;
  base.put("x", "a\n");
  auto quoted = diff_from_patch("diff --git \"a/\\377\" \"b/\\377\"\nnew file mode 100644\n--- /dev/null\n"
                                "+++ \"b/\\377\"\n@@ -0,0 +1 @@\n+y\n",
                                base, "s");
  ASSERT_FALSE(quoted);
  EXPECT_EQ(quoted.error().code, RefusalCode::malformed_patch);
  EXPECT_EQ(quoted.error().detail, "line 1: path \"\\xff\" is not valid UTF-8");
  // Mutating a good patch's bytes: whatever is refused, the refusal is recordable text.
  const std::string good = "diff --git a/x b/x\nindex 0000000..1111111 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
  std::mt19937 rng(12);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string p = good;
    for (int k = 0; k < 3; ++k) p[rng() % p.size()] = static_cast<char>(0x80 | (rng() & 0x7f));
    auto d = diff_from_patch(p, base, "s");
    if (d) continue;
    EXPECT_TRUE(is_valid_utf8(d.error().path) && is_valid_utf8(d.error().detail)) << d.error().message();
  }
  EXPECT_EQ(check_path_syntax("a/\xc3").error().code, RefusalCode::path_malformed);
  EXPECT_EQ(check_path_syntax("a/\xc3").error().path, "a/\\xc3");
  EXPECT_TRUE(check_path_syntax("caf\xc3\xa9/x"));
  EXPECT_FALSE(diff_from_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", base, "s\xff"));
}

TEST(GitBinary, InflationIsBoundedByTheDeclaredSizeAndTheLimit) {
  std::string z = deflate(std::string(10 << 20, 'a'));  // 10 MiB that deflate to ~10 KB
  auto over = inflate_exact(z, 4096);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().detail.find("more than the declared size"), std::string::npos);
  EXPECT_TRUE(inflate_exact(z, 10 << 20));
  auto limit = inflate_exact(z, 10 << 20, 1 << 20);
  ASSERT_FALSE(limit);
  EXPECT_EQ(limit.error().code, RefusalCode::patch_too_large);
  EXPECT_EQ(inflate_exact("x", kMaxBinaryBytes + 1).error().code, RefusalCode::patch_too_large);
  EXPECT_FALSE(inflate_exact(z.substr(0, z.size() / 2), 10 << 20));  // truncated stream
}

TEST(GitBinary, DeltaResultIsBoundedBeforeAllocating) {
  std::string base(0x10000, 'b');
  // Declares a 1 GiB result from a 64 KiB base; each 0x80 byte copies all 64 KiB.
  std::string delta = std::string("\x80\x80\x04", 3) + std::string("\x80\x80\x80\x80\x04", 5) + std::string(16384, '\x80');
  auto refused = apply_git_delta(base, delta);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, RefusalCode::patch_too_large);
  // Within the limit it is applied, and copying past the declared size is refused.
  std::string small = std::string("\x80\x80\x04", 3) + std::string("\x80\x80\x08", 3) + std::string(2, '\x80');
  auto two = apply_git_delta(base, small);
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_EQ(two->size(), 0x20000u);
  EXPECT_FALSE(apply_git_delta(base, small + "\x80"));
}

TEST(Patch, BinaryBlocksDeclaringMoreThanTheLimitInAllAreRefusedAtTheirHeader) {
  MemoryFileTree base;
  constexpr uint64_t kBlock = uint64_t{40} << 20;  // two are over the 64 MiB limit
  std::string z = deflate(std::string(kBlock, '\0'));
  std::string block = "literal " + std::to_string(kBlock) + "\n";
  for (size_t i = 0; i < z.size(); i += 52) block += git_base85_line(std::string_view(z).substr(i, 52)) + "\n";
  block += "\n";
  std::string one = "diff --git a/a.bin b/a.bin\nnew file mode 100644\nGIT binary patch\n" + block;
  std::string two = one + "diff --git a/b.bin b/b.bin\nnew file mode 100644\nGIT binary patch\n" + block;
  auto files = parse_patch(one);
  ASSERT_TRUE(files) << files.error().message();
  EXPECT_EQ((*files)[0].binary_payload.size(), kBlock);
  auto refused = parse_patch(two);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, RefusalCode::patch_too_large);
  uint64_t second_header = 4 + (z.size() + 51) / 52 + 1 + 3 + 1;
  EXPECT_EQ(refused.error().detail.substr(0, refused.error().detail.find(':')), "line " + std::to_string(second_header));
  // One block declaring a gibibyte is refused before its data is even decoded: here it has none.
  auto huge = parse_patch("diff --git a/c b/c\nnew file mode 100644\nGIT binary patch\nliteral 1073741824\nzzzz\n\n");
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().code, RefusalCode::patch_too_large);
}

TEST(Patch, MoreLinesThanTheLimitAreRefusedUpFront) {
  MemoryFileTree base;
  std::string lines(2 * (kMaxPatchLines - 5), '\0');
  for (size_t i = 0; i < lines.size(); i += 2) lines[i] = '+', lines[i + 1] = '\n';
  std::string head = "--- /dev/null\n+++ b/h.txt\n@@ -0,0 +1," + std::to_string(kMaxPatchLines - 5) + " @@\n";
  auto at_limit = parse_patch(head + lines);
  ASSERT_TRUE(at_limit) << at_limit.error().message();
  EXPECT_EQ((*at_limit)[0].hunks[0].lines.size(), kMaxPatchLines - 5);
  auto over = parse_patch(head + lines + "+\n+\n+\n");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, RefusalCode::patch_too_large);
  EXPECT_EQ(over.error().detail, "patch has " + std::to_string(kMaxPatchLines + 1) + " lines; the limit is " +
                                     std::to_string(kMaxPatchLines));
}

TEST(HunkApply, IsExactWithNoOffsetOrFuzz) {
  Hunk h{3, 1, 3, 1, {"-c\n", "+C\n"}};
  EXPECT_EQ(*apply_hunks("a\nb\nc\nd\n", {h}, "f"), "a\nb\nC\nd\n");
  // The same change one line lower in the file: git would find it at an offset; Warden refuses.
  auto lower = apply_hunks("a\nb\nx\nc\nd\n", {h}, "f");
  ASSERT_FALSE(lower);
  EXPECT_EQ(lower.error().code, RefusalCode::hunk_mismatch);
  // The refusal shows both sides of the line that differs.
  EXPECT_EQ(lower.error().detail, "hunk 1 (@@ -3,1): line 3 does not match the hunk's removed line: the file has \"x\", the hunk expects \"c\"");
  Hunk insert_front{0, 0, 1, 1, {"+first\n"}};
  EXPECT_EQ(*apply_hunks("a\n", {insert_front}, "f"), "first\na\n");
  Hunk past_end{5, 1, 5, 1, {"-z\n", "+Z\n"}};
  EXPECT_FALSE(apply_hunks("a\n", {past_end}, "f"));
  Hunk no_newline_mid{1, 1, 1, 2, {"-a\n", "+x", "+y\n"}};
  EXPECT_FALSE(apply_hunks("a\nb\n", {no_newline_mid}, "f"));
}

TEST(Diff, JsonRoundTripAndStrictValidation) {
  MemoryFileTree base;
  base.put("x", "a\nb\n");
  Diff d = build("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+A\n", base);
  Json j = d.to_json();
  auto back = Diff::from_json(j);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->digest(), d.digest());
  auto tampered = j;
  tampered["files"][0]["hunks"][0]["lines"][1] = "+B\n";
  EXPECT_EQ(Diff::from_json(tampered).error().code, RefusalCode::hash_mismatch);  // diff_sha256 no longer matches
  tampered.erase("diff_sha256");
  EXPECT_TRUE(Diff::from_json(tampered));  // without the claim it parses, and apply will refuse it
  EXPECT_EQ(resolve_diff(*Diff::from_json(tampered), base).error().code, RefusalCode::after_hash_mismatch);
  auto wrong_before = j;
  wrong_before.erase("diff_sha256");
  wrong_before["files"][0]["before_sha256"] = sha256("other").str();
  EXPECT_EQ(resolve_diff(*Diff::from_json(wrong_before), base).error().code, RefusalCode::hash_mismatch);
  for (auto mutate : std::vector<std::function<void(Json&)>>{
           [](Json& x) { x["files"][0]["op"] = "move"; },
           [](Json& x) { x["files"][0].erase("before_sha256"); },
           [](Json& x) { x["files"][0]["hunks"][0]["old_lines"] = 2; },
           [](Json& x) { x["files"][0]["hunks"][0]["lines"][0] = "*a\n"; },
           [](Json& x) { x["files"][0]["extra"] = 1; },
           [](Json& x) { x["files"][0]["old_mode"] = "100600"; },
           [](Json& x) { x["files"][0]["after_content"] = "both"; },
       }) {
    Json bad = j;
    bad.erase("diff_sha256");
    mutate(bad);
    EXPECT_FALSE(Diff::from_json(bad)) << bad.dump();
  }
}

TEST(Diff, FullContentAndHunksGiveTheSamePostImage) {
  MemoryFileTree base;
  base.put("x", "a\nb\n");
  Diff hunks = build("--- a/x\n+++ b/x\n@@ -2 +2 @@\n-b\n+B\n", base);
  Diff full = hunks;
  full.files[0].hunks.clear();
  full.files[0].after_content = "a\nB\n";
  EXPECT_EQ(hunks.files[0].after_sha256, full.files[0].after_sha256);
  EXPECT_EQ(resolved_content(hunks, base, "x"), resolved_content(full, base, "x"));
  EXPECT_NE(hunks.digest(), full.digest());  // different proposals, same result
}

}  // namespace
}  // namespace warden
