// decide()'s rules on the proposal's diff (decide_rules.h): its shape and size, the paths it
// touches, the oracle, the pre-images it applies to, what it introduces (dangerous operations)
// and the checkout attributes it sets.
#include <algorithm>
#include <set>

#include "common/case_fold.h"
#include "common/strings.h"
#include "kernel/judge/checkout_attributes.h"
#include "kernel/judge/dangerous_ops.h"
#include "kernel/judge/decide_rules.h"
#include "kernel/judge/glob.h"
#include "kernel/judge/oracle.h"
#include "kernel/plan/held_out.h"
#include "diff/diff_apply.h"
#include "diff/path_safety.h"

namespace warden::kernel::detail {
namespace {

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// What a change removes and writes, as a diff shows it: a hunk's '-' and '+' lines; for a
// whole-content file, the bytes between what its pre-image (none for an add or a copy) and
// post-image have in common at the start and at the end; a removed file's whole pre-image.
// A git binary patch carries its bytes compressed and a Diff only the new content, so neither
// alone says how big the change is.
struct ChangeSize {
  uint64_t removed = 0, written = 0;
};

ChangeSize change_size(const Diff& diff, const std::map<std::string, BaseFileImage>& base) {
  ChangeSize size;
  auto pre_image = [&](const std::string& path) -> std::string_view {
    auto it = base.find(path);
    return it != base.end() && it->second.content ? std::string_view(*it->second.content) : std::string_view();
  };
  for (const FileChange& f : diff.files) {
    if (f.op == FileOp::remove) {
      size.removed += pre_image(f.path).size();
    } else if (f.after_content) {
      std::string_view before = f.op == FileOp::add || f.op == FileOp::copy ? std::string_view() : pre_image(f.source_path());
      std::string_view after = *f.after_content;
      size_t common = 0;
      while (common < before.size() && common < after.size() && before[common] == after[common]) ++common;
      before.remove_prefix(common);
      after.remove_prefix(common);
      while (!before.empty() && !after.empty() && before.back() == after.back()) {
        before.remove_suffix(1);
        after.remove_suffix(1);
      }
      size.removed += before.size();
      size.written += after.size();
    }
    for (const Hunk& h : f.hunks) {
      for (const std::string& line : h.lines) {
        if (line.empty() || line[0] == ' ') continue;
        (line[0] == '-' ? size.removed : size.written) += line.size() - 1;
      }
    }
  }
  return size;
}

}  // namespace

// The size limits hold for every kind of patch: the larger of the Diff's canonical JSON and
// what the change removes plus what it writes.
void check_shape(const DecisionInput& in, const BuildStep& step, const Diff& diff, Reasons& reasons) {
  if (diff.step_id != step.id) {
    reasons.add(reason::content_mismatch, "the diff is for step " + diff.step_id + ", proposed for step " + step.id);
  }
  auto bytes = canonicalize(in.proposal.diff);
  if (!bytes) {
    reasons.add(reason::malformed_diff, bytes.error().message);
  } else {
    const ChangeSize change = change_size(diff, in.proposal.base);
    const uint64_t size = std::max<uint64_t>(bytes->size(), change.removed + change.written);
    if (size > in.policy.max_diff_bytes) {
      reasons.add(reason::diff_too_large, std::to_string(size) + " bytes (the Diff's JSON is " + std::to_string(bytes->size()) +
                                              " bytes; the change removes " + std::to_string(change.removed) + " and writes " +
                                              std::to_string(change.written) + "), the policy allows " +
                                              std::to_string(in.policy.max_diff_bytes));
    }
  }
  if (diff.files.size() > in.policy.max_files) {
    reasons.add(reason::diff_too_large, std::to_string(diff.files.size()) + " files, the policy allows " +
                                            std::to_string(in.policy.max_files));
  }
}

namespace {

// .git and .warden belong to the kernel at any depth, whatever their case.
bool in_kernel_dir(std::string_view path) {
  for (std::string_view part : split_path(path)) {
    std::string folded = fold_case(part);
    if (folded == ".git" || folded == ".warden") return true;
  }
  return false;
}

// The tests that judge a proposal must not be rewritten by it. A step may add a protected
// file it targets (a new test suite) and an add_dependency step may change the manifest it
// targets; nothing else changes, renames or deletes a protected file that exists — whatever
// the step's targets say, since a plan from an executor or `warden propose` names its targets
// from the very proposal being judged.
bool may_touch_protected(const DecisionInput& in, const BuildStep& step, const FileChange& f, const std::string& path) {
  if (!contains(step.targets, path)) return false;
  if (step.action == StepAction::add_dependency) return true;
  auto base = in.proposal.base.find(path);
  const bool exists = base != in.proposal.base.end() && base->second.content.has_value();
  return f.op == FileOp::add && f.path == path && !exists;
}

}  // namespace

void check_paths(const DecisionInput& in, const BuildStep& step, const Diff& diff, Reasons& reasons) {
  const Policy& policy = in.policy;
  for (const FileChange& f : diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (!p) continue;
      const std::string& path = *p;
      if (!in.plan.allowed_paths.empty() && !any_glob_match(in.plan.allowed_paths, path)) {
        reasons.add(reason::path_not_allowed, path + " is outside the plan's allowed paths");
      }
      if (!any_glob_match(policy.allow_paths, path)) {
        reasons.add(reason::path_not_allowed, path + " is not in policy " + policy.name + "'s allowed paths");
      }
      if (any_glob_match(policy.deny_paths, path, Case::folded)) {
        reasons.add(reason::path_not_allowed, path + " is denied by policy " + policy.name);
      }
      if (in_kernel_dir(path)) {
        reasons.add(reason::protected_path, path + " is inside .git or .warden");
      } else if (in.plan.held_out && under_held_out(in.plan.held_out->at, path)) {
        reasons.add(reason::protected_path, path + " is where the held-out checks' files are laid (" + in.plan.held_out->at + ")");
      } else if (any_glob_match(policy.protected_paths, path, Case::folded) && !may_touch_protected(in, step, f, path)) {
        reasons.add(reason::protected_path, path + " is protected: only a step that targets it may add it, and an existing one "
                                                   "changes only through its own add_dependency step");
      }
      if (any_glob_match(policy.approval_paths, path, Case::folded)) {
        reasons.add(reason::approval_required, path + " needs a human's approval");
      }
    }
  }
}

// The oracle comes from the base (oracle.h): a proposal may not rewrite the tests that judge
// it. Only a create_test step of the committed plan opens the files it targets (and, since
// a create step only creates, only to add them); any other step's targets — and every step
// `warden propose` makes — name what the proposal touches, so they open nothing.
void check_oracle(const DecisionInput& in, const BuildStep& step, const Diff& diff, const PostImages* post,
                  const AdmittedTests& admitted, Reasons& reasons) {
  std::string_view approvable;  // the code the recipe for an approval goes under; empty: nothing an approval admits
  std::vector<std::string> units;
  for (const FileChange& f : diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (!p || in_kernel_dir(*p)) continue;
      if (step.action == StepAction::create_test && contains(step.targets, *p)) continue;
      OracleTouch touch{.path = *p};
      if (auto base = in.proposal.base.find(*p); base != in.proposal.base.end() && base->second.content) {
        touch.before = &*base->second.content;
      }
      if (post) {
        touch.after_known = true;
        auto after = post->find(*p);
        if (after == post->end()) {
          touch.after = touch.before;  // named but not written: unchanged
        } else if (after->second) {
          touch.after = &*after->second;
        }
      }
      for (OracleViolation& v : oracle_violations(in.policy.oracle, touch, admitted.tests)) {
        if (!v.units.empty() && approvable != reason::test_modified) approvable = v.code;
        units.insert(units.end(), v.units.begin(), v.units.end());
        reasons.add(v.code, std::move(v.detail));
      }
      // New tests come as files of their own: renamed or copied in, they would escape the
      // oracle run, which drops only what a proposal adds.
      if (p == &f.path && (f.op == FileOp::rename || f.op == FileOp::copy) && !touch.before &&
          adds_to_oracle(in.policy.oracle, f.path)) {
        reasons.add(reason::protected_path, f.path + " would be a new test or hook " + (f.op == FileOp::rename ? "renamed" : "copied") +
                                                " from " + f.source_path() + ": add new tests as new files");
      }
    }
  }
  if (approvable.empty()) return;
  // How a person admits an intended change of what a test asserts, and why the approvals given
  // admitted nothing more.
  std::string how = "a person the policy names as an approver may admit these changes for this proposal: warden approve --diff " +
                    diff.digest().str();
  for (const std::string& u : units) {
    std::string quoted;  // for a POSIX shell: ' closes, \' is a quote, ' opens again
    for (char c : u) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    how += " --test '" + quoted + "'";
  }
  how += " --key KEY --out FILE, then propose again with --approval FILE";
  for (const std::string& why : admitted.ignored) how += "; " + why + " admits nothing";
  reasons.add(approvable, std::move(how));
}

// Re-applies the diff to the recorded pre-images; the post-images when it applies.
std::optional<PostImages> apply_to_base(const ProposalEvidence& proposal, const Diff& diff, Reasons& reasons) {
  bool complete = true;
  for (const FileChange& f : diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (p && !proposal.base.contains(*p)) {
        reasons.add(reason::malformed_diff, "the proposal records no base image of " + *p);
        complete = false;
      }
    }
  }
  if (!complete) return std::nullopt;
  MemoryFileTree tree;
  for (const auto& [path, image] : proposal.base) {
    if (image.content) tree.put(path, *image.content, image.mode);
  }
  auto resolved = resolve_diff(diff, tree);
  if (!resolved) {
    add_refusal(resolved.error(), reasons);
    return std::nullopt;
  }
  PostImages out;
  for (ResolvedFile& file : *resolved) out[file.path] = std::move(file.content);  // writes come after removals
  return out;
}

// What the diff introduces, file by file: its post-image's occurrences against its
// pre-image's (dangerous_ops.h). A removal introduces nothing; a rename's pre-image is its
// source's; an add or a copy has none (a copy's source keeps its calls). Without post-images
// (the diff does not apply) each added line is judged alone.
void check_dangerous(const DecisionInput& in, const Diff& diff, const PostImages* post_images, Reasons& reasons) {
  constexpr size_t kMaxListed = 20;
  const DangerRules rules(in.policy.dangerous_operation_rules, in.policy.dangerous_operation_waivers);
  std::vector<DangerFinding> findings;
  for (const FileChange& f : diff.files) {
    if (f.op == FileOp::remove) continue;
    const std::optional<std::string>* post = nullptr;
    if (post_images) {
      if (auto it = post_images->find(f.path); it != post_images->end()) post = &it->second;
    }
    std::vector<DangerFinding> found;
    if (!post) {
      found = scan_added_lines(f, rules);
    } else if (*post) {
      std::string_view pre;
      auto base = in.proposal.base.find(f.source_path());
      if (f.op != FileOp::add && f.op != FileOp::copy && base != in.proposal.base.end() && base->second.content) {
        pre = *base->second.content;
      }
      found = introduced_operations(f.path, pre, **post, added_lines(f), rules);
    }
    // A test may use its own framework as it likes (the oracle run judges what new tests do).
    if (adds_to_oracle(in.policy.oracle, f.path)) {
      std::erase_if(found, [](const DangerFinding& d) {
        const std::string_view category = danger_rule_category(d.rule);
        return category == "test_tampering" || category == "test_detection";
      });
    }
    findings.insert(findings.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  for (size_t i = 0; i < findings.size() && i < kMaxListed; ++i) {
    reasons.add(reason::dangerous_operation_detected, describe(findings[i]));
  }
  if (findings.size() > kMaxListed) {
    reasons.add(reason::dangerous_operation_detected, "and " + std::to_string(findings.size() - kMaxListed) + " more");
  }
}

// Tested bytes must be the committed bytes (checkout_attributes.h): every line of a
// .gitattributes post-image that sets a transforming attribute and is not a line of its
// pre-image (a rename's is its source's; an add or a copy has none). Without post-images (the
// diff does not apply) the lines it adds are judged alone.
void check_checkout_attributes(const DecisionInput& in, const Diff& diff, const PostImages* post_images, Reasons& reasons) {
  for (const FileChange& f : diff.files) {
    if (f.op == FileOp::remove || !is_attributes_file(f.path)) continue;
    std::string added;
    const std::string* post = &added;
    if (post_images) {
      auto it = post_images->find(f.path);
      if (it == post_images->end() || !it->second) continue;
      post = &*it->second;
    } else if (f.after_content) {
      added = *f.after_content;
    } else {
      for (const Hunk& h : f.hunks) {
        for (const std::string& line : h.lines) {
          if (!line.empty() && line[0] == '+') added += line.substr(1) + "\n";
        }
      }
    }
    std::set<std::string> before;
    auto base = in.proposal.base.find(f.source_path());
    if (f.op != FileOp::add && f.op != FileOp::copy && base != in.proposal.base.end() && base->second.content) {
      for (const AttributeFinding& a : transforming_attributes(*base->second.content)) before.insert(a.text);
    }
    for (const AttributeFinding& a : transforming_attributes(*post)) {
      if (before.contains(a.text)) continue;
      std::string where = post_images ? f.path + ":" + std::to_string(a.line) : f.path + " (an added line)";
      reasons.add(reason::checkout_transform, where + " `" + a.text + "` sets " + a.attribute +
                                                  ", which makes a checkout's bytes differ from the tested ones");
    }
  }
}

}  // namespace warden::kernel::detail
