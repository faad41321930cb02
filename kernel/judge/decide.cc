// decide(): every rule a proposal must pass, each adding its reasons; nothing stops at the
// first failure except an unknown step, which leaves nothing to check against.
//
// Choices worth knowing:
// - A diff whose own step_id differs from the proposal's is a content_mismatch (the diff
//   is not the content of the step it is proposed for).
// - The runner's diff refusals map onto reason codes by what they say about the proposal:
//   hash_mismatch, after_hash_mismatch, hunk_mismatch, hunk_count_mismatch and
//   mode_mismatch all mean the diff is not anchored to the base it names -> hash_mismatch;
//   path_* and symlink_escapes_tree -> path_not_allowed; anything else (duplicate_path,
//   malformed_diff, ...) -> malformed_diff. The runner's code is kept in the detail.
// - A patch that did not become a Diff against the base (proposal.patch_refusal) is refused
//   with that Refusal through the same mapping, so the detail is `warden diff parse`'s
//   message ("hunk_mismatch (a.c): hunk 1 ..."), never the text's failure to be a Diff JSON.
// - diff_sha256 is optional: Diff::from_json refuses one that is present and wrong
//   (hash_mismatch), and the kernel records the digest it computes itself either way.
// - An executor that gave nothing (proposal.executor_refusal) is refused executor_timeout or
//   executor_failed, never malformed_diff for the null where a Diff would be.
// - A run result must name this proposal's diff (RunResult.diff_sha256), else hash_mismatch:
//   a passing run of some other tree proves nothing about this one.
// - An empty plan.allowed_paths leaves the policy's allow list alone in charge.
// - Deny, protected and approval globs (and the oracle's) match Unicode case folded (glob.h):
//   a case-insensitive checkout opens .ENV as .env; allowed paths and plan targets stay exact.
// - The oracle (oracle.h) is judged on the pre- and post-images: whole test files and hooks by
//   name, shared build files by their test sections; a proposal that does not apply has no
//   post-images, so only the whole files are judged then.
#include "kernel/judge/decide.h"

#include <algorithm>
#include <set>

#include "common/case_fold.h"
#include "common/strings.h"
#include "kernel/judge/approval.h"
#include "kernel/plan/held_out.h"
#include "kernel/judge/checkout_attributes.h"
#include "kernel/judge/content_rules.h"
#include "kernel/judge/dangerous_ops.h"
#include "kernel/judge/glob.h"
#include "kernel/judge/oracle_run.h"
#include "kernel/judge/oracle.h"
#include "diff/diff_apply.h"
#include "diff/path_safety.h"

namespace warden::kernel {
namespace {

// Reasons gathered while deciding: one per code, sorted by code, the details of one code
// joined in the order they were found.
class Reasons {
 public:
  void add(std::string_view code, std::string detail) {
    auto& details = details_[std::string(code)];
    if (std::find(details.begin(), details.end(), detail) == details.end()) details.push_back(std::move(detail));
  }
  bool empty() const { return details_.empty(); }

  Verdict verdict() const {
    Verdict v;
    for (const auto& [code, details] : details_) {
      std::string joined;
      for (const auto& d : details) joined += (joined.empty() ? "" : "; ") + d;
      v.reasons.push_back(Reason{code, std::move(joined)});
    }
    v.accepted = v.reasons.empty();
    return v;
  }

 private:
  std::map<std::string, std::vector<std::string>> details_;
};

std::string_view reason_for_refusal(std::string_view code) {
  if (code == "hash_mismatch" || code == "after_hash_mismatch" || code == "hunk_mismatch" ||
      code == "hunk_count_mismatch" || code == "mode_mismatch") {
    return reason::hash_mismatch;
  }
  if (code.starts_with("path_") || code == "symlink_escapes_tree") return reason::path_not_allowed;
  return reason::malformed_diff;
}

void add_refusal(const Refusal& refusal, Reasons& reasons) {
  reasons.add(reason_for_refusal(refusal_code_name(refusal.code)), refusal.message());
}

// An executor that gave nothing: its own code when it is one of the executor's, else (a
// record no kernel writes) executor_failed.
void add_executor_refusal(const Refusal& refusal, Reasons& reasons) {
  reasons.add(refusal.code == RefusalCode::executor_timeout ? reason::executor_timeout : reason::executor_failed,
              refusal.detail.empty() ? refusal.message() : refusal.detail);
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

void check_progress(const DecisionInput& in, const BuildStep& step, Reasons& reasons) {
  if (in.completed_steps.contains(step.id)) {
    reasons.add(reason::step_already_completed, "step " + step.id + " is already completed");
  }
  for (const std::string& dep : step.dependencies) {
    if (!in.completed_steps.contains(dep)) {
      reasons.add(std::string(reason::dependency_not_satisfied) + ":" + dep,
                  "step " + step.id + " depends on " + dep + ", which is not completed");
    }
  }
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

// Checkpoints this step completes: every step they wait for is done once it is, and they
// were not complete before.
std::vector<const VerificationCheckpoint*> completed_checkpoints(const DecisionInput& in, const BuildStep& step) {
  std::vector<const VerificationCheckpoint*> out;
  for (const VerificationCheckpoint& cp : in.plan.verification_checkpoints) {
    bool before = std::all_of(cp.after.begin(), cp.after.end(), [&](const auto& id) { return in.completed_steps.contains(id); });
    bool after = std::all_of(cp.after.begin(), cp.after.end(),
                             [&](const auto& id) { return id == step.id || in.completed_steps.contains(id); });
    if (after && !before) out.push_back(&cp);
  }
  return out;
}

// Whether a check reported tests at all (a report format), and ran none of them.
bool reports_tests(const CheckResult& c) {
  return std::any_of(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.report != "none"; });
}

const CheckResult* find_check(const RunResult& run, std::string_view name) {
  auto it = std::find_if(run.checks.begin(), run.checks.end(), [&](const CheckResult& c) { return c.name == name; });
  return it == run.checks.end() ? nullptr : &*it;
}

// Steps that build a project up from nothing may come before its first test: while the base
// ran no tests either, a test run of nothing holds such a step to nothing. Every other step
// (a change, a new test, `warden propose`) must run tests.
bool may_run_no_tests(const BuildStep& step, const CheckResult* base) {
  const bool builds_up = step.action == StepAction::create_module || step.action == StepAction::create_function ||
                         step.action == StepAction::add_dependency;
  return builds_up && base && base->tests.empty();
}

// Whether test id `id` is one of the base tests an approval admits ("path::Class.test"): the
// id, read as a dotted name (pytest's "tests/test_a.py::Class::test" as tests.test_a.Class.test,
// a parameter suffix "[...]" dropped), is exactly the file's module and the unit.
bool approved_id(std::string_view id, const std::set<std::string>& approved) {
  if (id.ends_with("]") && id.find('[') != std::string_view::npos) id = id.substr(0, id.find('['));
  auto dotted = [](std::string_view path) {
    if (path.ends_with(".py")) path.remove_suffix(3);
    std::string out(path);
    std::replace(out.begin(), out.end(), '/', '.');
    return out;
  };
  std::string norm;
  if (const size_t sep = id.find("::"); sep != std::string_view::npos) {
    norm = dotted(id.substr(0, sep));
    std::string rest(id.substr(sep));
    for (size_t at = 0; (at = rest.find("::", at)) != std::string::npos;) rest.replace(at, 2, ".");
    norm += rest;
  } else {
    norm = std::string(id);
  }
  for (const std::string& a : approved) {
    const size_t sep = a.find("::");
    if (sep == std::string::npos) continue;
    if (norm == dotted(std::string_view(a).substr(0, sep)) + "." + a.substr(sep + 2)) return true;
  }
  return false;
}

// Every test that passed in `base` and is missing or not passing in `now`, as reasons. A test
// an approval admits may be missing (the approved change removed it); in the oracle run
// (`may_fail`), which runs its base version on the new code, it may also fail.
void add_lost_tests(const BuildStep& step, const CheckResult& base, const CheckResult& now, std::string_view where,
                    const std::set<std::string>& approved, Reasons& reasons, bool may_fail = false) {
  constexpr size_t kMaxListed = 20;
  std::map<std::string_view, std::string_view> status;
  for (const TestCase& t : now.tests) status.emplace(t.id, t.status);
  std::vector<std::string> lost;
  for (const TestCase& t : base.tests) {
    if (t.status != "passed" || any_glob_match(step.removes_tests, t.id)) continue;
    auto it = status.find(t.id);
    if (it == status.end()) {
      if (!approved_id(t.id, approved)) lost.push_back(t.id + " (missing)");
    } else if (it->second != "passed" && may_fail && approved_id(t.id, approved)) {
      continue;
    }
    else if (it->second != "passed") lost.push_back(t.id + " (" + std::string(it->second) + ")");
  }
  for (size_t i = 0; i < lost.size() && i < kMaxListed; ++i) {
    reasons.add(reason::pass_to_pass_failed, now.name + ": " + lost[i] + " passed on the base" + std::string(where));
  }
  if (lost.size() > kMaxListed) {
    reasons.add(reason::pass_to_pass_failed, now.name + ": and " + std::to_string(lost.size() - kMaxListed) + " more" + std::string(where));
  }
}

// The tests the proposal adds (ids the base's run does not have) must pass: they are the
// change's FAIL_TO_PASS. A skipped new test proves nothing and refuses nothing.
void add_failing_new_tests(const CheckResult& base, const CheckResult& now, Reasons& reasons) {
  constexpr size_t kMaxListed = 20;
  std::set<std::string_view> known;
  for (const TestCase& t : base.tests) known.insert(t.id);
  std::vector<std::string> failing;
  for (const TestCase& t : now.tests) {
    if (known.contains(t.id) || t.status == "passed" || t.status == "skipped") continue;
    failing.push_back(t.id + " (" + t.status + ")");
  }
  for (size_t i = 0; i < failing.size() && i < kMaxListed; ++i) {
    reasons.add(reason::new_test_failed, now.name + ": " + failing[i] + ", a test the proposal adds");
  }
  if (failing.size() > kMaxListed) {
    reasons.add(reason::new_test_failed, now.name + ": and " + std::to_string(failing.size() - kMaxListed) + " more");
  }
}

// A proposal that adds tests or changes a test file is judged by the base's test files alone as
// well: the oracle run (oracle_run.h) must be of exactly the proposal's diff without its test
// files' changes, and keep every test the base passed.
void check_oracle_run(const DecisionInput& in, const BuildStep& step, const Diff* diff, const std::set<std::string>& approved,
                      Reasons& reasons) {
  if (!diff || !in.run) return;
  std::optional<Diff> without = oracle_diff(*diff, in.proposal, in.policy.oracle, approved);
  if (!without) return;
  // What the base's test files must still pass: the base's passing tests, and every check
  // judged by its exit status that passed with the proposal's files (oracle_checks()).
  const bool tests = in.base_run && base_passed_a_test(*in.base_run);
  std::vector<const CheckResult*> by_status;
  for (const std::vector<CheckSpec>* specs : {&in.plan.checks, &in.policy.checks}) {
    for (const CheckSpec& spec : *specs) {
      const CheckResult* c = judged_by_exit_status(spec) ? find_check(*in.run, spec.name) : nullptr;
      if (c && !reports_tests(*c) && c->verdict == kPassed &&
          std::find(by_status.begin(), by_status.end(), c) == by_status.end()) {
        by_status.push_back(c);
      }
    }
  }
  // Ledgers recorded before the oracle run repeated the checks judged by exit status hold no
  // such run, or one without them: their decisions replay as they were made.
  if (!tests && (by_status.empty() || !in.oracle_run)) return;
  if (!in.oracle_run || in.oracle_run->diff_sha256 != without->digest()) {
    reasons.add(reason::pass_to_pass_failed, "no run of the base's tests, with the base's test files, on the proposal's code");
    return;
  }
  for (const CheckResult* c : by_status) {
    const CheckResult* now = find_check(*in.oracle_run, c->name);
    if (now && now->verdict != kPassed) {
      reasons.add(reason::pass_to_pass_failed,
                  c->name + " passes with the proposal's test files but " + now->verdict + " with the base's (its exit status is all it reports)");
    }
  }
  if (!tests) return;
  for (const CheckResult& base : in.base_run->checks) {
    if (!reports_tests(base)) continue;
    const CheckResult* now = find_check(*in.oracle_run, base.name);
    if (!now) {
      reasons.add(reason::pass_to_pass_failed, base.name + ": not run with the base's test files");
      continue;
    }
    add_lost_tests(step, base, *now, " (run with the base's test files)", approved, reasons, true);
  }
}

// The held-out checks (held_out.h) must pass on every proposal that reached the runner. What
// is said is that they did not: a name, an output, an input or a count (which the tested program
// can inflate at will) would let the executor fit its next proposal to the tests it is not to see.
void check_held_out(const DecisionInput& in, const BuildStep& step, Reasons& reasons) {
  if (!in.plan.held_out || !in.run || !in.plan.held_out->judges(step.id)) return;
  if (!in.held_out_passed) {
    reasons.add(reason::held_out_failed, "the held-out checks did not run on the proposal");
  } else if (!*in.held_out_passed) {
    reasons.add(reason::held_out_failed, "the held-out tests do not all pass (which, how many and their output stay sealed until the bundle " +
                                             in.plan.held_out->sha256.str() + " is revealed)");
  }
}

// Tests judged: a reporting check that ran no tests fails as no_tests_ran; every test that
// passed on the base must be there and pass. Returns the checks excused from their verdict
// (no tests, exit 0, on a step building up a project that has none yet).
std::set<std::string> check_tests(const DecisionInput& in, const BuildStep& step, const Diff* diff,
                                  const std::set<std::string>& approved, Reasons& reasons) {
  std::set<std::string> judged;
  const RunResult& run = *in.run;
  for (const CheckResult& c : run.checks) {
    if (!reports_tests(c)) continue;
    const CheckResult* base = in.base_run ? find_check(*in.base_run, c.name) : nullptr;
    if (c.tests.empty()) {
      const bool clean = std::all_of(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.exit_code == 0; });
      if (clean && may_run_no_tests(step, base)) {
        judged.insert(c.name);
      } else {
        reasons.add(reason::no_tests_ran, c.name + " ran no tests");
        // Which of the base's tests went missing (a deleted test file takes its tests along).
        if (base) add_lost_tests(step, *base, c, "", approved, reasons);
      }
      continue;
    }
    if (!in.base_run) {
      reasons.add(reason::pass_to_pass_failed, c.name + ": no run of the base to compare its tests with");
      continue;
    }
    if (!base) {
      reasons.add(reason::pass_to_pass_failed, c.name + ": the base run has no such check");
      continue;
    }
    add_lost_tests(step, *base, c, "", approved, reasons);
    add_failing_new_tests(*base, c, reasons);
  }
  check_oracle_run(in, step, diff, approved, reasons);
  return judged;
}

void check_run(const DecisionInput& in, const BuildStep& step, const Diff* diff, const std::set<std::string>& approved,
               Reasons& reasons) {
  if (!in.run) {
    if (reasons.empty()) reasons.add(reason::required_checks_failed, "not run: the proposal never reached the runner");
    return;
  }
  const RunResult& run = *in.run;
  if (!run.preflight.ok) reasons.add(reason::sandbox_unavailable, "the sandbox preflight failed: " + run.preflight.failures());
  if (diff && run.diff_sha256 != diff->digest()) {
    reasons.add(reason::hash_mismatch, "the run result tested " + (run.diff_sha256 ? run.diff_sha256->str() : "no diff") +
                                           ", not this proposal's diff " + diff->digest().str());
  }

  const std::set<std::string> judged = check_tests(in, step, diff, approved, reasons);
  std::set<std::string> checks(in.policy.required_checks.begin(), in.policy.required_checks.end());
  for (const CheckSpec& spec : in.plan.checks) checks.insert(spec.name);
  std::set<std::string> invariants(in.plan.invariants.begin(), in.plan.invariants.end());
  invariants.insert(step.invariants.begin(), step.invariants.end());
  for (const VerificationCheckpoint* cp : completed_checkpoints(in, step)) {
    checks.insert(cp->checks.begin(), cp->checks.end());
    invariants.insert(cp->invariants.begin(), cp->invariants.end());
  }

  for (const std::string& name : checks) {
    auto result = std::find_if(run.checks.begin(), run.checks.end(), [&](const CheckResult& c) { return c.name == name; });
    if (result == run.checks.end()) {
      reasons.add(reason::required_checks_failed, name + ": not run");
    } else if (judged.contains(name) && result->verdict == kFailed) {
      // Failed only for running no tests, which check_tests() excused.
    } else if (result->verdict != kPassed) {
      reasons.add(reason::required_checks_failed, name + ": " + result->verdict);
    }
  }
  for (const std::string& name : invariants) {
    auto verdict = run.invariants.find(name);
    if (verdict == run.invariants.end()) {
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name, "no check of the run proves " + name);
    } else if (verdict->second.check != "invariant:" + name) {
      // Only the policy's own program proves an invariant; a plan's check claiming to is not it.
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name,
                  "check " + verdict->second.check + " is not the policy's program for " + name);
    } else if (!verdict->second.proven) {
      reasons.add(std::string(reason::invariant_not_proven) + ":" + name, "check " + verdict->second.check + " did not prove it");
    }
  }
}

}  // namespace

Verdict decide(const DecisionInput& in) {
  Reasons reasons;
  const BuildStep* step = in.plan.find(in.proposal.step_id);
  if (!step) {
    reasons.add(reason::step_not_in_plan, "step " + in.proposal.step_id + " is not in plan " + in.plan.name);
    return reasons.verdict();
  }
  check_progress(in, *step, reasons);
  if (in.proposal.workspace_refusal) add_refusal(*in.proposal.workspace_refusal, reasons);

  // A patch that did not become a Diff is refused for what the patch said, and an executor
  // that gave nothing for why it gave nothing — not for the text (or the null) left in place
  // of a Diff.
  if (in.proposal.patch_refusal) add_refusal(*in.proposal.patch_refusal, reasons);
  if (in.proposal.executor_refusal) add_executor_refusal(*in.proposal.executor_refusal, reasons);
  auto diff = Diff::from_json(in.proposal.diff);
  // Approvals (approval.h) count only signed by a key the policy names, for exactly this diff.
  AdmittedTests admitted;
  if (diff && !step->approvals.empty()) admitted = admitted_tests(step->approvals, diff->digest(), in.policy.approvers);
  if (!diff) {
    if (!in.proposal.patch_refusal && !in.proposal.executor_refusal) add_refusal(diff.error(), reasons);
  } else {
    check_shape(in, *step, *diff, reasons);
    check_paths(in, *step, *diff, reasons);
    std::optional<PostImages> post_images = apply_to_base(in.proposal, *diff, reasons);
    const PostImages* post = post_images ? &*post_images : nullptr;
    check_oracle(in, *step, *diff, post, admitted, reasons);
    for (std::string& problem : content_mismatches(ContentCheck{*step, *diff, in.proposal.base, post, in.policy.exact_content})) {
      reasons.add(reason::content_mismatch, std::move(problem));
    }
    check_checkout_attributes(in, *diff, post, reasons);
    if (in.policy.dangerous_operations) check_dangerous(in, *diff, post, reasons);
  }
  check_run(in, *step, diff ? &*diff : nullptr, admitted.tests, reasons);
  check_held_out(in, *step, reasons);
  return reasons.verdict();
}

}  // namespace warden::kernel
