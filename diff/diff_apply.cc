#include "diff/diff_apply.h"

#include <map>
#include <set>

#include "common/case_fold.h"
#include "common/strings.h"
#include "diff/hunk_apply.h"
#include "diff/path_safety.h"

namespace warden {
namespace {

// What the diff does to the tree's namespace, for the rules that look past one file.
struct PathPlan {
  std::set<std::string> removed;                  // deleted, or renamed away
  std::map<std::string, uint32_t> written;        // path -> new mode
};

Checked<void> check_components(const std::string& path, BaseTree& base, const PathPlan& plan) {
  auto parts = split_path(path);
  std::string prefix;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    prefix += (i ? "/" : "") + std::string(parts[i]);
    if (auto w = plan.written.find(prefix); w != plan.written.end()) {
      return refuse(w->second == kModeSymlink ? RefusalCode::path_through_symlink : RefusalCode::path_conflict, path,
                    "\"" + prefix + "\" is written as a " + (w->second == kModeSymlink ? "symlink" : "file") +
                        " by the same diff");
    }
    if (plan.removed.contains(prefix)) continue;
    auto kind = base.kind(prefix);
    if (!kind) return std::unexpected(kind.error());
    if (*kind == EntryKind::symlink) return refuse(RefusalCode::path_through_symlink, path, "\"" + prefix + "\" is a symlink");
    if (*kind == EntryKind::file) return refuse(RefusalCode::path_conflict, path, "\"" + prefix + "\" is a file");
  }
  return {};
}

// Two names in one directory that differ only by case break checkouts on case-insensitive
// file systems; git would store both, Warden refuses.
class CaseChecker {
 public:
  explicit CaseChecker(BaseTree& base) : base_(base) {}

  Checked<void> check(const std::string& path, const PathPlan& plan) {
    auto parts = split_path(path);
    std::string dir;
    for (size_t i = 0; i < parts.size(); ++i) {
      auto listing = folded(dir, plan);
      if (!listing) return std::unexpected(listing.error());
      std::string name(parts[i]);
      auto it = (*listing)->find(fold_case(name));
      if (it != (*listing)->end() && it->second != name) {
        return refuse(RefusalCode::path_case_collision, path,
                      "\"" + name + "\" differs only by case from \"" + it->second + "\"" +
                          (dir.empty() ? "" : " in " + dir));
      }
      dir += (i ? "/" : "") + name;
    }
    return {};
  }

 private:
  // The directory's names after the diff, keyed by folded name. Cached: big directories
  // are listed once however many files the diff adds to them.
  Checked<std::map<std::string, std::string>*> folded(const std::string& dir, const PathPlan& plan) {
    auto cached = cache_.find(dir);
    if (cached != cache_.end()) return &cached->second;
    auto names = base_.names(dir);
    if (!names) return std::unexpected(names.error());
    std::map<std::string, std::string> out;
    for (auto& n : *names) {
      if (!plan.removed.contains(dir.empty() ? n : dir + "/" + n)) out.emplace(fold_case(n), n);
    }
    // Names the diff brings: files directly here, and the first directory of deeper ones.
    std::string prefix = dir.empty() ? "" : dir + "/";
    for (const auto& [written, mode] : plan.written) {
      if (!written.starts_with(prefix)) continue;
      std::string_view rest = std::string_view(written).substr(prefix.size());
      std::string name(rest.substr(0, rest.find('/')));
      out.emplace(fold_case(name), name);
    }
    return &cache_.emplace(dir, std::move(out)).first->second;
  }

  BaseTree& base_;
  std::map<std::string, std::map<std::string, std::string>> cache_;
};

}  // namespace

Checked<std::string> post_image(const FileChange& file, std::string_view pre_image) {
  if (file.after_content) return *file.after_content;
  if (!file.hunks.empty()) return apply_hunks(pre_image, file.hunks, file.path);
  return std::string(pre_image);
}

namespace {

// True when every file under `dir` in the base is removed by the diff and nothing is
// written below it: the directory disappears, and its name is free for a file.
Checked<bool> emptied_by_diff(const std::string& dir, BaseTree& base, const PathPlan& plan) {
  for (const auto& [written, mode] : plan.written) {
    if (written.starts_with(dir + "/")) return false;
  }
  auto names = base.names(dir);
  if (!names) return std::unexpected(names.error());
  for (const auto& name : *names) {
    std::string child = dir + "/" + name;
    auto kind = base.kind(child);
    if (!kind) return std::unexpected(kind.error());
    if (*kind == EntryKind::directory) {
      auto emptied = emptied_by_diff(child, base, plan);
      if (!emptied || !*emptied) return emptied;
    } else if (!plan.removed.contains(child)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Checked<std::vector<ResolvedFile>> resolve_diff(const Diff& diff, BaseTree& base) {
  // Each path may be removed once and written once: removing and writing one path is a
  // type change (file to symlink, say) or half of a rename swap; anything more is ambiguous.
  PathPlan plan;
  for (const FileChange& f : diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (!p) continue;
      if (auto st = check_path_syntax(*p); !st) return std::unexpected(st.error());
    }
    auto removes = [&](const std::string& path) -> Checked<void> {
      if (!plan.removed.insert(path).second) return refuse(RefusalCode::duplicate_path, path, "the diff removes this path twice");
      return {};
    };
    if (f.op == FileOp::remove) {
      if (auto st = removes(f.path); !st) return std::unexpected(st.error());
      continue;
    }
    if (f.op == FileOp::rename) {
      if (auto st = removes(*f.old_path); !st) return std::unexpected(st.error());
    }
    if (f.op == FileOp::modify && plan.removed.contains(f.path)) {
      return refuse(RefusalCode::duplicate_path, f.path, "the diff both modifies and removes this path");
    }
    if (!plan.written.emplace(f.path, *f.new_mode).second) {
      return refuse(RefusalCode::duplicate_path, f.path, "the diff writes this path twice");
    }
  }
  for (const FileChange& f : diff.files) {
    if (f.op == FileOp::modify && plan.removed.contains(f.path)) {
      return refuse(RefusalCode::duplicate_path, f.path, "the diff both modifies and removes this path");
    }
  }

  std::vector<ResolvedFile> removals, writes;
  CaseChecker cases(base);
  for (const FileChange& f : diff.files) {
    std::string pre;
    if (f.op != FileOp::add) {
      const std::string& source = f.source_path();
      auto entry = base.read(source);
      if (!entry) return std::unexpected(entry.error());
      if (!*entry) return refuse(RefusalCode::path_not_found, source, "not in the base tree");
      if (sha256((*entry)->content) != *f.before_sha256) {
        return refuse(RefusalCode::hash_mismatch, source, "pre-image is " + sha256((*entry)->content).str() + ", the diff expects " +
                                                   f.before_sha256->str());
      }
      if (*f.old_mode != (*entry)->mode) {
        return refuse(RefusalCode::mode_mismatch, source, "base mode is " + mode_string((*entry)->mode) + ", the diff expects " +
                                                   mode_string(*f.old_mode));
      }
      pre = std::move((*entry)->content);
    }
    if (f.op == FileOp::remove) {
      removals.push_back(ResolvedFile{f.path, std::nullopt, 0});
      continue;
    }
    if (f.op != FileOp::modify && !plan.removed.contains(f.path)) {
      // The target must be free: absent, or a directory this diff empties.
      auto kind = base.kind(f.path);
      if (!kind) return std::unexpected(kind.error());
      bool free = *kind == EntryKind::none;
      if (*kind == EntryKind::directory) {
        auto emptied = emptied_by_diff(f.path, base, plan);
        if (!emptied) return std::unexpected(emptied.error());
        free = *emptied;
      }
      if (!free) return refuse(RefusalCode::path_exists, f.path, "already exists in the base tree");
    }
    if (auto st = check_components(f.path, base, plan); !st) return std::unexpected(st.error());
    auto post = post_image(f, pre);
    if (!post) return std::unexpected(post.error());
    if (sha256(*post) != *f.after_sha256) {
      return refuse(RefusalCode::after_hash_mismatch, f.path, "post-image is " + sha256(*post).str() + ", the diff promises " +
                                                       f.after_sha256->str());
    }
    if (*f.new_mode == kModeSymlink) {
      if (auto st = check_symlink_target(f.path, *post); !st) return std::unexpected(st.error());
    }
    if (f.op != FileOp::modify) {
      if (auto st = cases.check(f.path, plan); !st) return std::unexpected(st.error());
    }
    if (f.op == FileOp::rename) removals.push_back(ResolvedFile{*f.old_path, std::nullopt, 0});
    writes.push_back(ResolvedFile{f.path, std::move(*post), *f.new_mode});
  }
  // Removals first: a path removed and written by the same diff ends up written.
  removals.insert(removals.end(), std::make_move_iterator(writes.begin()), std::make_move_iterator(writes.end()));
  return removals;
}

}  // namespace warden
