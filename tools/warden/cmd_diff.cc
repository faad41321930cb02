// warden diff parse|apply|commit|check: canonical Diffs from patches, applied exactly.
#include <iostream>

#include "common/clock.h"
#include "common/file.h"
#include "diff/patch.h"
#include "runner/workspace/workspace.h"
#include "tools/warden/cli.h"

namespace warden::cli {
namespace {

int report_refusal(const Refusal& r, bool json) {
  // A refusal may quote a branch name or path given on the command line, in any bytes.
  std::string path = escape_invalid_utf8(r.path), detail = escape_invalid_utf8(r.detail);
  std::cerr << "warden: refused: " << Refusal{r.code, path, detail}.message() << "\n";
  if (json) {
    print_json({{"ok", false}, {"refusal", {{"code", std::string(refusal_code_name(r.code))}, {"path", path}, {"detail", detail}}}});
  }
  return exit_code_for(r.code);
}

struct Options {
  std::string input, repo, base, step = "patch", branch, message, run_id, record, author_name = "Warden",
                                   author_email = "warden@localhost";
  std::optional<int64_t> timestamp;
  bool json = false;
};

// DIFF is a canonical Diff JSON file (up to 256 MiB: it carries every file's bytes) or a
// patch (up to kMaxPatchBytes), told apart by the first non-blank byte: '{' or '[' is JSON
// (judged as JSON, so a malformed one gets JSON's reason), anything else a patch; `diff parse`
// reads any patch.
constexpr uint64_t kMaxDiffJsonBytes = uint64_t{256} << 20;

bool is_diff_json(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

int run_parse(const Options& o) {
  auto text = read_file(o.input, kMaxPatchBytes);
  if (!text && text.error().code == Errc::limit_exceeded) {
    return report_refusal(Refusal{RefusalCode::patch_too_large, o.input,
                                  "larger than the limit of " + std::to_string(kMaxPatchBytes) + " bytes"},
                          o.json);
  }
  if (!text) return report_error(text.error(), o.json);
  auto ws = Workspace::open(o.repo);
  if (!ws) return report_refusal(ws.error(), o.json);
  auto diff = ws->diff_from_patch(*text, o.base, o.step);
  if (!diff) return report_refusal(diff.error(), o.json);
  Json out = diff->to_json();
  if (o.json) {
    print_json({{"diff", std::move(out)}});
  } else {
    std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return kOk;
}

// Loads the workspace and the diff (parsed against the base when DIFF is a patch), or
// reports why not.
template <typename Run>
int with_diff(const Options& o, Run&& run) {
  auto text = read_file(o.input, kMaxDiffJsonBytes);
  if (!text) return report_error(text.error(), o.json);
  auto ws = Workspace::open(o.repo);
  if (!ws) return report_refusal(ws.error(), o.json);
  if (!is_diff_json(*text)) {
    if (text->size() > kMaxPatchBytes) {
      return report_refusal(Refusal{RefusalCode::patch_too_large, o.input,
                                    "larger than the limit of " + std::to_string(kMaxPatchBytes) + " bytes"},
                            o.json);
    }
    auto diff = ws->diff_from_patch(*text, o.base, o.step);
    if (!diff) return report_refusal(diff.error(), o.json);
    return run(*diff, *ws);
  }
  auto json = parse_json(*text, "diff file " + o.input);
  if (!json) return report_error(json.error(), o.json);
  auto diff = Diff::from_json(*json);
  if (!diff) return report_error(Error{Errc::invalid_argument, o.input + ": " + diff.error().message()}, o.json);
  return run(*diff, *ws);
}

int run_check(const Options& o) {
  return with_diff(o, [&](const Diff& diff, Workspace& ws) {
    auto st = ws.check(diff, o.base);
    if (!st) return report_refusal(st.error(), o.json);
    if (o.json) print_json({{"ok", true}, {"files", diff.files.size()}, {"diff_sha256", diff.digest().str()}});
    else std::cout << "OK: " << diff.files.size() << " files apply exactly\n";
    return static_cast<int>(kOk);
  });
}

int run_apply(const Options& o) {
  return with_diff(o, [&](const Diff& diff, Workspace& ws) {
    auto applied = ws.apply(diff, o.base);
    if (!applied) return report_refusal(applied.error(), o.json);
    if (o.json) {
      print_json({{"tree", applied->tree.hex()}, {"base_commit", applied->base_commit.hex()}, {"files", applied->files}});
    } else {
      std::cout << applied->tree.hex() << "\n";
    }
    return static_cast<int>(kOk);
  });
}

int run_commit(const Options& o) {
  return with_diff(o, [&](const Diff& diff, Workspace& ws) {
    CommitOptions options;
    RandomIdSource ids;
    options.branch = o.branch.empty() ? "warden/" + (o.run_id.empty() ? ids.next_id("run") : o.run_id) : o.branch;
    options.message = o.message;
    options.author = Identity{o.author_name, o.author_email};
    if (!o.record.empty()) {
      auto record = Digest::parse(o.record);
      if (!record) return report_error(record.error().with_context("--record"), o.json);
      options.record = *record;
    }
    // Everything that can refuse before objects are written is checked first.
    if (auto st = ws.check_branch(options.branch, o.base); !st) return report_refusal(st.error(), o.json);
    auto applied = ws.apply(diff, o.base);
    if (!applied) return report_refusal(applied.error(), o.json);
    SystemClock system_clock;
    LogicalClock pinned_clock(o.timestamp.value_or(0) * 1000);
    Clock& clock = o.timestamp ? static_cast<Clock&>(pinned_clock) : system_clock;
    auto tip = ws.repo().branch_tip(options.branch);
    if (!tip) return report_refusal(tip.error(), o.json);
    auto commit = ws.write_commit(diff, *applied, options, clock);
    if (!commit) return report_refusal(commit.error(), o.json);
    if (auto moved = ws.repo().move_branch(options.branch, *tip, *commit); !moved) return report_refusal(moved.error(), o.json);
    if (o.json) {
      print_json({{"commit", commit->hex()}, {"tree", applied->tree.hex()}, {"branch", options.branch}});
    } else {
      std::cout << commit->hex() << "\n";
      std::cerr << "branch " << options.branch << "\n";
    }
    return static_cast<int>(kOk);
  });
}

}  // namespace

void add_diff_commands(CLI::App& app, Action& action) {
  auto* diff = app.add_subcommand("diff", "Hash-anchored diffs: parse patches, check, apply and commit them exactly");
  diff->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto repo_base = [&](CLI::App* cmd) {
    cmd->add_option("--repo", o->repo, "Git repository")->required();
    cmd->add_option("--base", o->base, "Base revision the diff applies to (branch, tag, commit)")->required();
    cmd->add_flag("--json", o->json, "Print JSON");
  };
  auto bind = [&action, o](CLI::App* cmd, int (*run)(const Options&)) {
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };

  auto* parse = diff->add_subcommand(
      "parse", "Turn a git diff / format-patch / unified diff into a canonical Diff with every hash filled in "
               "and print it: a Diff file for apply, check, commit and propose (--json: the result line {\"diff\": ...})");
  parse->add_option("PATCH", o->input, "Patch file ('-' for standard input)")->required();
  parse->add_option("--step", o->step, "Plan step id the diff belongs to")->capture_default_str();
  repo_base(parse);
  bind(parse, run_parse);

  constexpr const char* kDiffHelp = "Canonical Diff JSON file, or a patch (git diff, format-patch, unified) parsed against the base; a file whose first non-blank byte is { or [ is read as JSON";
  auto* apply = diff->add_subcommand(
      "apply", "Verify DIFF against the base and write the resulting tree; print its id (no branch moves)");
  apply->add_option("DIFF", o->input, kDiffHelp)->required();
  apply->add_option("--step", o->step, "Plan step id, when DIFF is a patch")->capture_default_str();
  repo_base(apply);
  bind(apply, run_apply);

  auto* check = diff->add_subcommand("check", "Exit 0 if DIFF applies exactly to the base; otherwise print why");
  check->add_option("DIFF", o->input, kDiffHelp)->required();
  check->add_option("--step", o->step, "Plan step id, when DIFF is a patch")->capture_default_str();
  repo_base(check);
  bind(check, run_check);

  auto* commit = diff->add_subcommand(
      "commit", "Apply DIFF and commit it with Warden-Step/Warden-Proposal trailers; the branch moves only "
                "if it is new or still at the base. Prints the commit id.");
  commit->add_option("DIFF", o->input, kDiffHelp)->required();
  commit->add_option("--step", o->step, "Plan step id, when DIFF is a patch")->capture_default_str();
  repo_base(commit);
  commit->add_option("--branch", o->branch, "Branch to commit to (default warden/<run id>)");
  commit->add_option("--run-id", o->run_id, "Run id for the default branch name (default: random)");
  commit->add_option("--message", o->message, "Summary line (default \"warden: step <id>\")");
  commit->add_option("--record", o->record, "sha256:<hex> of the ledger record that accepted the diff (a trailer)");
  commit->add_option("--author-name", o->author_name, "Author and committer name")->capture_default_str();
  commit->add_option("--author-email", o->author_email, "Author and committer email")->capture_default_str();
  commit->add_option("--timestamp", o->timestamp, "Commit time, Unix seconds (default: now); fixes the commit id");
  bind(commit, run_commit);
}

}  // namespace warden::cli
