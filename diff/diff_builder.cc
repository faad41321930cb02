#include "diff/diff_builder.h"

#include <map>
#include <set>

#include "common/canonical_json.h"
#include "diff/git_binary.h"
#include "diff/hunk_apply.h"
#include "diff/path_safety.h"

namespace warden {
namespace {

// An index line's id may be abbreviated.
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

struct Built {
  FileChange change;
  std::string post;  // the post-image (empty for a delete)
};

// One patch section against its pre-image (`pre` is empty for a new file). A delta's result
// is taken from `delta_budget`, what the patch's delta results may still come to.
Checked<Built> build_change(const PatchFile& p, const std::optional<BaseFile>& pre, uint64_t& delta_budget) {
  Built b;
  FileChange& f = b.change;
  f.op = p.is_new ? FileOp::add : p.is_delete ? FileOp::remove : p.is_rename ? FileOp::rename
                                                            : p.is_copy   ? FileOp::copy
                                                                          : FileOp::modify;
  f.path = p.is_delete ? p.old_path : p.new_path;
  if (f.op == FileOp::rename || f.op == FileOp::copy) f.old_path = p.old_path;
  std::string pre_content;
  if (f.op != FileOp::add) {
    if (!pre) return refuse(RefusalCode::path_not_found, p.old_path, "the patch changes a file the base tree does not have");
    if (!index_agrees(p.old_index, pre->blob_id)) {
      return refuse(RefusalCode::hash_mismatch, p.old_path, "the patch's index line names blob " + p.old_index + ", the base has " +
                                                     pre->blob_id);
    }
    if (p.old_mode && *p.old_mode != pre->mode) {
      return refuse(RefusalCode::mode_mismatch, p.old_path, "the patch says mode " + mode_string(*p.old_mode) + ", the base has " +
                                                     mode_string(pre->mode));
    }
    f.old_mode = pre->mode;
    pre_content = pre->content;
    f.before_sha256 = sha256(pre_content);
  }
  if (f.op == FileOp::remove) {
    if (!p.hunks.empty()) {
      auto rest = apply_hunks(pre_content, p.hunks, f.path);
      if (!rest) return std::unexpected(rest.error());
      if (!rest->empty()) return refuse(RefusalCode::hunk_mismatch, f.path, "a deletion must remove the whole file");
    }
    return b;
  }
  f.new_mode = p.new_mode ? *p.new_mode : f.old_mode ? *f.old_mode : kModeFile;
  switch (p.binary) {
    case PatchFile::Binary::without_data:
      return refuse(RefusalCode::binary_without_data, f.path, "\"Binary files differ\" carries no content; make the patch with --binary");
    case PatchFile::Binary::literal:
      b.post = p.binary_payload;
      f.after_content = b.post;
      break;
    case PatchFile::Binary::delta: {
      auto applied = apply_git_delta(pre_content, p.binary_payload, delta_budget);
      if (!applied) return refuse(applied.error().code, f.path, applied.error().detail);
      delta_budget -= applied->size();
      b.post = std::move(*applied);
      f.after_content = b.post;
      break;
    }
    case PatchFile::Binary::none: {
      auto applied = apply_hunks(pre_content, p.hunks, f.path);
      if (!applied) return std::unexpected(applied.error());
      b.post = std::move(*applied);
      // Hunks travel as JSON strings: only UTF-8 text can; the rest goes as content.
      if (f.op == FileOp::add || !hunks_are_text(p.hunks)) f.after_content = b.post;
      else f.hunks = p.hunks;
    }
  }
  if (!index_agrees(p.new_index, git_blob_id(b.post))) {
    return refuse(RefusalCode::after_hash_mismatch, f.path, "the patch's index line names blob " + p.new_index +
                                                     ", applying it gives " + git_blob_id(b.post));
  }
  f.after_sha256 = sha256(b.post);
  return b;
}

// A later section of the same patch changes a path an earlier one wrote (mails in a
// series, as git format-patch makes them): the earlier change now ends where this one
// does, carrying the final content in full.
void fold_into(Built& earlier, Built&& later) {
  FileChange& e = earlier.change;
  const FileChange& l = later.change;
  e.hunks.clear();
  if (l.op == FileOp::remove) {
    if (e.op == FileOp::rename || e.op == FileOp::modify) {
      // modify-then-delete is a delete; rename-then-delete deletes the rename's source.
      if (e.op == FileOp::rename) e.path = *e.old_path;
      e.op = FileOp::remove;
      e.old_path.reset();
    }
    e.new_mode.reset();
    e.after_sha256.reset();
    e.after_content.reset();
    earlier.post.clear();
    return;
  }
  e.new_mode = l.new_mode;
  e.after_sha256 = l.after_sha256;
  e.after_content = later.post;
  earlier.post = std::move(later.post);
}

Checked<Diff> build_diff_unchecked(const std::vector<PatchFile>& files, BaseTree& base, std::string step_id) {
  if (!is_valid_utf8(step_id)) return refuse(RefusalCode::malformed_diff, "", "the step id is not valid UTF-8");
  // Delta results are bounded in all, like the payloads they are made from: one small delta
  // can copy a large pre-image many times over.
  uint64_t delta_budget = kMaxBinaryBytes;
  // Sections apply in order: one that modifies or deletes a path an earlier section wrote
  // reads that result, as git apply does for a series; renames and copies always read the
  // original tree.
  std::vector<std::optional<Built>> built;
  std::map<std::string, size_t> writer;  // path -> the section whose result it holds
  std::set<std::string> deleted;
  for (const PatchFile& p : files) {
    for (const std::string* path : {&p.old_path, &p.new_path}) {
      if (path->empty()) continue;
      if (auto st = check_path_syntax(*path); !st) return std::unexpected(st.error());
    }
    auto with_path = [&](Refusal r) {
      if (r.path.empty()) r.path = p.is_delete ? p.old_path : p.new_path;
      return std::unexpected(std::move(r));
    };
    bool follows = !p.is_new && !p.is_rename && !p.is_copy && writer.contains(p.old_path);
    if (follows) {
      size_t at = writer.at(p.old_path);
      Built& earlier = *built[at];
      BaseFile pre{earlier.post, *earlier.change.new_mode, git_blob_id(earlier.post)};
      auto later = build_change(p, pre, delta_budget);
      if (!later) return with_path(later.error());
      bool removes = later->change.op == FileOp::remove;
      if (removes && earlier.change.op == FileOp::add) {
        built[at].reset();  // added, then deleted: nothing
      } else if (removes && earlier.change.op == FileOp::copy) {
        built[at].reset();  // a copy deleted again leaves its source untouched
      } else {
        fold_into(earlier, std::move(*later));
      }
      if (removes) {
        writer.erase(p.old_path);
        deleted.insert(p.old_path);
      }
      continue;
    }
    std::optional<BaseFile> pre;
    if (!p.is_new) {
      if (deleted.contains(p.old_path) && !p.is_rename && !p.is_copy) {
        return with_path(Refusal{RefusalCode::path_not_found, p.old_path, "an earlier section of the patch deleted it"});
      }
      auto entry = base.read(p.old_path);
      if (!entry) return with_path(entry.error());
      pre = std::move(*entry);
    }
    auto b = build_change(p, pre, delta_budget);
    if (!b) return with_path(b.error());
    if (b->change.op == FileOp::remove) {
      deleted.insert(b->change.path);
    } else {
      writer[b->change.path] = built.size();
    }
    built.push_back(std::move(*b));
  }
  Diff diff;
  diff.step_id = std::move(step_id);
  for (auto& b : built) {
    if (b) diff.files.push_back(std::move(b->change));
  }
  return diff;
}

}  // namespace

Checked<Diff> build_diff(const std::vector<PatchFile>& files, BaseTree& base, std::string step_id) {
  auto diff = build_diff_unchecked(files, base, std::move(step_id));
  // Refusals quote index lines and paths from the patch, which may hold any bytes.
  if (!diff) return std::unexpected(printable(std::move(diff.error())));
  return diff;
}

Checked<Diff> diff_from_patch(std::string_view patch_text, BaseTree& base, std::string step_id) {
  auto files = parse_patch(patch_text);
  if (!files) return std::unexpected(files.error());
  return build_diff(*files, base, std::move(step_id));
}

}  // namespace warden
