// warden receipt COMMIT / warden receipt verify RECEIPT: acceptance receipts, made from the
// ledger's commit record and checked offline with nothing but the kernel's verifier key.
#include <filesystem>
#include <iostream>
#include <utility>

#include "common/clock.h"
#include "common/file.h"
#include "kernel/audit/receipt.h"
#include "runner/workspace/git_repo.h"
#include "tools/warden/cli.h"
#include "tools/warden/signer_keys.h"

namespace warden::cli {
namespace {

constexpr uint64_t kMaxReceiptBytes = uint64_t{1} << 20;

struct MakeOptions {
  std::string commit, repo, ledger, key, out;
};

struct VerifyOptions {
  std::string file, key;
  bool json = false;
};

struct GitCommit {
  std::string commit, tree;
};

Result<GitCommit> resolve_in_repo(const std::string& repo_dir, const std::string& rev) {
  auto as_error = [](const Refusal& r) {
    bool missing = r.code == RefusalCode::repository_not_found || r.code == RefusalCode::revision_not_found;
    return std::unexpected(Error{missing ? Errc::not_found : Errc::io_error, r.message()});
  };
  auto repo = GitRepo::open(repo_dir);
  if (!repo) return as_error(repo.error());
  auto commit = repo->resolve_commit(rev);
  if (!commit) return as_error(commit.error());
  auto tree = repo->tree_of(*commit);
  if (!tree) return as_error(tree.error());
  return GitCommit{commit->hex(), tree->hex()};
}

int run_make(const MakeOptions& o) {
  std::optional<GitCommit> in_repo;
  if (!o.repo.empty()) {
    auto resolved = resolve_in_repo(o.repo, o.commit);
    if (!resolved) return report_error(resolved.error(), false);
    in_repo = std::move(*resolved);
  }
  const std::string commit = in_repo ? in_repo->commit : o.commit;
  if (!kernel::is_git_object_id(commit)) {
    return report_error(Error{Errc::invalid_argument, "COMMIT \"" + commit +
                                                          "\" is not a 40-hex commit id (pass --repo to resolve a revision)"},
                        false);
  }
  SystemClock clock;
  auto ledger = Ledger::open(o.ledger, Ledger::Mode::read_write, clock);
  if (!ledger) return report_error(ledger.error(), false);
  auto signer = signer_of_ledger(o.ledger, o.key, "--key");
  if (!signer) return report_error(signer.error(), false);
  auto snap = ledger->snapshot();
  if (!snap) return report_error(snap.error(), false);
  auto located = kernel::find_commit_record(*snap, commit);
  if (!located) return report_error(located.error(), false);
  // The ledger speaks for the repository only if they agree on what the commit holds.
  if (in_repo && in_repo->tree != located->commit.tree) {
    return report_error(Error{Errc::verification_failed, "commit " + commit + " has tree " + in_repo->tree + " in " +
                                                             o.repo + " but ledger record " +
                                                             std::to_string(located->record.seq) + " says " +
                                                             located->commit.tree},
                        false);
  }
  auto bundle = kernel::make_receipt(*ledger, *located, *signer);
  if (!bundle) return report_error(bundle.error(), false);
  std::string text = bundle->dump(2) + "\n";
  if (o.out.empty()) {
    std::cout << text;
    return kOk;
  }
  if (auto st = write_file_atomic(o.out, text); !st) return report_error(st.error(), false);
  std::cout << "receipt for commit " << commit << " (ledger seq " << located->record.seq << ") written to " << o.out
            << "\n";
  return kOk;
}

int run_verify(const VerifyOptions& o) {
  auto key = load_verifier(o.key);
  if (!key) return report_error(key.error(), o.json);
  auto text = read_file(o.file, kMaxReceiptBytes);
  if (!text) return report_error(text.error(), o.json);
  // A file that is not JSON at all is malformed input (exit 3); JSON that is no valid receipt
  // fails verification (exit 1).
  auto bundle = parse_json(*text, "receipt " + o.file);
  if (!bundle) return report_error(Error{Errc::invalid_argument, bundle.error().message}, o.json);
  auto verified = kernel::verify_receipt(*bundle, *key);
  if (!verified) {
    if (o.json) return report_error(verified.error(), true);
    std::cout << "FAILED: " << verified.error().message << "\n";
    return kVerificationFailed;
  }
  const kernel::CommitRecord& c = verified->commit;
  if (o.json) {
    Json out = {{"ok", true},
                {"commit", c.commit},
                {"tree", c.tree},
                {"branch", c.branch},
                {"run_id", c.run_id},
                {"step_id", c.step_id},
                {"attempt", c.attempt},
                {"seq", verified->seq},
                {"tree_size", verified->tree_size},
                {"root", verified->root.hex()},
                {"origin", verified->origin}};
    if (c.held_out_sha256) {
      out["held_out"] = {{"sha256", c.held_out_sha256->str()}, {"revealed", verified->held_out_reveal_seq.has_value()}};
      if (verified->held_out_reveal_seq) out["held_out"]["reveal_seq"] = *verified->held_out_reveal_seq;
    }
    print_json(out);
  } else {
    std::cout << "OK: commit " << c.commit << " (tree " << c.tree << ") on " << c.branch << "\naccepted in run "
              << c.run_id << ", step " << c.step_id << ", attempt " << c.attempt << "\nledger " << verified->origin
              << ": record " << verified->seq << " in a tree of " << verified->tree_size << " records, root "
              << verified->root.hex() << "\n";
    if (c.held_out_sha256) {
      std::cout << "held-out checks " << c.held_out_sha256->str()
                << (verified->held_out_reveal_seq ? ": revealed at record " + std::to_string(*verified->held_out_reveal_seq)
                                                  : std::string(": not revealed when this receipt was made"))
                << "\n";
    }
  }
  return kOk;
}

}  // namespace

void add_receipt_commands(CLI::App& app, Action& action) {
  auto make = std::make_shared<MakeOptions>();
  auto* receipt = app.add_subcommand(
      "receipt",
      "Print the acceptance receipt of COMMIT: an in-toto Statement v1 (subject: the commit and its tree; "
      "predicate: run, plan step, attempt, plan/proposal/run-result/policy digests, ledger record) in a DSSE "
      "envelope signed with the ledger's key, bundled with the commit record, its inclusion proof and a signed "
      "checkpoint. Uses the newest stored checkpoint that covers the record, or signs and stores a new one. "
      "`warden receipt verify` checks a receipt offline.");
  receipt->require_subcommand(0, 1);
  receipt->add_option("COMMIT", make->commit, "Accepted commit: a 40-hex id, or any revision with --repo");
  receipt->add_option("--repo", make->repo,
                      "Repository to resolve COMMIT in; its tree must match the ledger's commit record");
  receipt->add_option("--ledger", make->ledger, "Ledger directory holding the commit record");
  receipt->add_option("--key", make->key, "Signer key file: the ledger's checkpoint key (default: the ledger's LEDGER/signer.key)");
  receipt->add_option("-o,--output", make->out, "Write the receipt to FILE instead of standard output");

  auto verify = std::make_shared<VerifyOptions>();
  auto* verify_cmd = receipt->add_subcommand(
      "verify",
      "Check a receipt offline with only the verifier key: the DSSE signature, the statement against the bundled "
      "ledger record, the record's hash, its inclusion proof and the checkpoint's signature. Exit 0 when all of it "
      "holds, 1 naming the first part that does not.");
  verify_cmd->add_option("RECEIPT", verify->file, "Receipt file ('-' for standard input)")->required();
  verify_cmd->add_option("--key", verify->key,
                         "The kernel's verifier key, or a file holding it (the ledger's LEDGER/signer.pub, copied where "
                         "you trust it)")
      ->required();
  verify_cmd->add_flag("--json", verify->json, "Print the result as JSON");
  verify_cmd->callback([&action, verify] { action = [verify] { return run_verify(*verify); }; });

  receipt->callback([&action, receipt, verify_cmd, make] {
    if (receipt->got_subcommand(verify_cmd)) return;
    action = [make]() -> int {
      if (make->commit.empty() || make->ledger.empty()) {
        std::cerr << "warden: error: receipt needs COMMIT and --ledger DIR (see warden receipt --help)\n";
        return kUsage;
      }
      return run_make(*make);
    };
  });
}

}  // namespace warden::cli
