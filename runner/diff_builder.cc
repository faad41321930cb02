#include "runner/diff_builder.h"

#include "common/canonical_json.h"
#include "runner/git_binary.h"
#include "runner/hunk_apply.h"

namespace warden {
namespace {

// An index line's id may be abbreviated; all zeros stands for "no file".
bool index_agrees(const std::string& claimed, const std::string& actual) {
  return claimed.empty() || actual.starts_with(claimed);
}

bool hunks_are_text(const std::vector<Hunk>& hunks) {
  for (const auto& h : hunks) {
    for (const auto& line : h.lines) {
      if (!is_valid_utf8(line)) return false;
    }
  }
  return true;
}

Checked<FileChange> build_file(const PatchFile& p, BaseTree& base) {
  FileChange f;
  f.op = p.is_new ? FileOp::add : p.is_delete ? FileOp::remove : p.is_rename ? FileOp::rename
                                                            : p.is_copy   ? FileOp::copy
                                                                          : FileOp::modify;
  f.path = p.is_delete ? p.old_path : p.new_path;
  if (f.op == FileOp::rename || f.op == FileOp::copy) f.old_path = p.old_path;

  std::string pre;
  if (f.op != FileOp::add) {
    auto entry = base.read(p.old_path);
    if (!entry) return std::unexpected(entry.error());
    if (!*entry) return refuse("path_not_found", p.old_path, "the patch changes a file the base tree does not have");
    if (!index_agrees(p.old_index, (*entry)->blob_id)) {
      return refuse("hash_mismatch", p.old_path, "the patch's index line names blob " + p.old_index + ", the base has " +
                                                     (*entry)->blob_id);
    }
    if (p.old_mode && *p.old_mode != (*entry)->mode) {
      return refuse("mode_mismatch", p.old_path, "the patch says mode " + mode_string(*p.old_mode) + ", the base has " +
                                                     mode_string((*entry)->mode));
    }
    f.old_mode = (*entry)->mode;
    pre = std::move((*entry)->content);
    f.before_sha256 = sha256(pre);
  }
  if (f.op == FileOp::remove) {
    if (!p.hunks.empty()) {
      auto rest = apply_hunks(pre, p.hunks, f.path);
      if (!rest) return std::unexpected(rest.error());
      if (!rest->empty()) return refuse("hunk_mismatch", f.path, "a deletion must remove the whole file");
    }
    return f;
  }
  f.new_mode = p.new_mode ? *p.new_mode : f.old_mode ? *f.old_mode : kModeFile;

  std::string post;
  switch (p.binary) {
    case PatchFile::Binary::without_data:
      return refuse("binary_without_data", f.path, "\"Binary files differ\" carries no content; make the patch with --binary");
    case PatchFile::Binary::literal:
      post = p.binary_payload;
      f.after_content = post;
      break;
    case PatchFile::Binary::delta: {
      auto applied = apply_git_delta(pre, p.binary_payload);
      if (!applied) return refuse(applied.error().code, f.path, applied.error().detail);
      post = std::move(*applied);
      f.after_content = post;
      break;
    }
    case PatchFile::Binary::none: {
      auto applied = apply_hunks(pre, p.hunks, f.path);
      if (!applied) return std::unexpected(applied.error());
      post = std::move(*applied);
      // Hunks travel as JSON strings: only UTF-8 text can; the rest goes as content.
      if (f.op == FileOp::add || !hunks_are_text(p.hunks)) f.after_content = post;
      else f.hunks = p.hunks;
    }
  }
  if (!index_agrees(p.new_index, git_blob_id(post))) {
    return refuse("after_hash_mismatch", f.path, "the patch's index line names blob " + p.new_index +
                                                     ", applying it gives " + git_blob_id(post));
  }
  f.after_sha256 = sha256(post);
  return f;
}

}  // namespace

Checked<Diff> build_diff(const std::vector<PatchFile>& files, BaseTree& base, std::string step_id) {
  Diff diff;
  diff.step_id = std::move(step_id);
  for (const PatchFile& p : files) {
    auto f = build_file(p, base);
    if (!f) {
      Refusal r = f.error();
      if (r.path.empty()) r.path = p.is_delete ? p.old_path : p.new_path;
      return std::unexpected(r);
    }
    diff.files.push_back(std::move(*f));
  }
  return diff;
}

Checked<Diff> diff_from_patch(std::string_view patch_text, BaseTree& base, std::string step_id) {
  auto files = parse_patch(patch_text);
  if (!files) return std::unexpected(files.error());
  return build_diff(*files, base, std::move(step_id));
}

}  // namespace warden
