// Every unsafe path gets its own refusal code, before anything is written.
#include "diff/path_safety.h"

#include <gtest/gtest.h>

#include "diff/diff_apply.h"

namespace warden {
namespace {

std::string syntax_code(std::string_view path) {
  auto st = check_path_syntax(path);
  return st ? std::string("ok") : std::string(refusal_code_name(st.error().code));
}

TEST(PathSafety, SyntaxRules) {
  EXPECT_EQ(syntax_code("src/a.py"), "ok");
  EXPECT_EQ(syntax_code("dir with space/\xc3\xa9\t.txt"), "ok");
  EXPECT_EQ(syntax_code("/etc/passwd"), "path_absolute");
  EXPECT_EQ(syntax_code("../x"), "path_traversal");
  EXPECT_EQ(syntax_code("a/../../x"), "path_traversal");
  EXPECT_EQ(syntax_code(".git/config"), "path_in_git_dir");
  EXPECT_EQ(syntax_code("sub/.GiT/hooks/pre-commit"), "path_in_git_dir");
  EXPECT_EQ(syntax_code(std::string("a\0b", 3)), "path_nul_byte");
  EXPECT_EQ(syntax_code(""), "path_malformed");
  EXPECT_EQ(syntax_code("a//b"), "path_malformed");
  EXPECT_EQ(syntax_code("a/./b"), "path_malformed");
  EXPECT_EQ(syntax_code("a/"), "path_malformed");
  EXPECT_EQ(syntax_code(".gitignore"), "ok");
}

TEST(PathSafety, SymlinkTargets) {
  EXPECT_TRUE(check_symlink_target("a/b/link", "../c"));
  EXPECT_TRUE(check_symlink_target("a/b/link", "../../top"));
  EXPECT_EQ(check_symlink_target("a/b/link", "../../../etc").error().code, RefusalCode::symlink_escapes_tree);
  EXPECT_EQ(check_symlink_target("link", "/etc/passwd").error().code, RefusalCode::symlink_escapes_tree);
  EXPECT_EQ(check_symlink_target("link", "x/../..").error().code, RefusalCode::symlink_escapes_tree);
  EXPECT_EQ(check_symlink_target("link", ".git/config").error().code, RefusalCode::path_in_git_dir);
}

FileChange add(std::string path, std::string content, uint32_t mode = kModeFile) {
  FileChange f;
  f.op = FileOp::add;
  f.path = std::move(path);
  f.new_mode = mode;
  f.after_sha256 = sha256(content);
  f.after_content = std::move(content);
  return f;
}

std::string resolve_code(MemoryFileTree& base, std::vector<FileChange> files) {
  Diff d{"s", std::move(files)};
  auto r = resolve_diff(d, base);
  return r ? std::string("ok") : std::string(refusal_code_name(r.error().code));
}

TEST(PathSafety, RulesThatNeedTheTree) {
  MemoryFileTree base;
  base.put("readme.md", "hi\n");
  base.put("link", "target-dir", kModeSymlink);
  base.put("src/main.c", "int main;\n");
  base.put("file", "x\n");
  EXPECT_EQ(resolve_code(base, {add("docs/new.md", "x\n")}), "ok");
  EXPECT_EQ(resolve_code(base, {add("link/inside.txt", "x\n")}), "path_through_symlink");
  EXPECT_EQ(resolve_code(base, {add("README.md", "x\n")}), "path_case_collision");
  EXPECT_EQ(resolve_code(base, {add("Src/other.c", "x\n")}), "path_case_collision");
  EXPECT_EQ(resolve_code(base, {add("new/a", "x\n"), add("NEW/b", "y\n")}), "path_case_collision");
  EXPECT_EQ(resolve_code(base, {add("file/below", "x\n")}), "path_conflict");
  EXPECT_EQ(resolve_code(base, {add("readme.md", "x\n")}), "path_exists");
  EXPECT_EQ(resolve_code(base, {add("up", "../../x", kModeSymlink)}), "symlink_escapes_tree");
  EXPECT_EQ(resolve_code(base, {add("ok-link", "src/main.c", kModeSymlink)}), "ok");
  EXPECT_EQ(resolve_code(base, {add("l2", "src", kModeSymlink), add("l2/x", "y\n")}), "path_through_symlink");
  EXPECT_EQ(resolve_code(base, {add("dup", "x\n"), add("dup", "y\n")}), "duplicate_path");
  EXPECT_EQ(resolve_code(base, {add(".git/hooks/post-checkout", "x\n")}), "path_in_git_dir");
  // A case-only rename is not a collision: the old name goes away.
  FileChange rename;
  rename.op = FileOp::rename;
  rename.path = "README.md";
  rename.old_path = "readme.md";
  rename.old_mode = rename.new_mode = kModeFile;
  rename.before_sha256 = rename.after_sha256 = sha256("hi\n");
  EXPECT_EQ(resolve_code(base, {rename}), "ok");
}

}  // namespace
}  // namespace warden
