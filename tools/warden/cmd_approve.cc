// `warden approve --diff DIGEST --test PATH::TEST ... --key FILE`: a person's signed leave for
// one proposal to change named base tests (kernel/judge/approval.h).
#include <iostream>

#include "common/file.h"
#include "kernel/judge/approval.h"
#include "tools/warden/cli.h"

namespace warden::cli {

void add_approve_commands(CLI::App& app, Action& action) {
  struct Options {
    std::string diff, key, out;
    std::vector<std::string> tests;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "approve",
      "Sign an approval that admits changes to named base tests for exactly one proposal. A refusal test_modified "
      "(or protected_path, for a test file the kernel judges whole) names the proposal's diff digest and each test or "
      "file; the policy (or `warden propose --approver`) names the verifier "
      "keys of approvers; pass the approval to `warden propose --approval FILE`.");
  cmd->add_option("--diff", opts->diff, "The proposal's diff digest, sha256:<64 hex>, as the refusal names it")->required();
  cmd->add_option("--test", opts->tests, "A base test (or what it uses) the proposal may change, PATH::TEST as the refusal names it, or PATH for a "
                  "test file judged whole (repeatable)")
      ->required();
  cmd->add_option("--key", opts->key, "The approver's signer key file (warden key generate NAME --signer-out FILE)")->required();
  cmd->add_option("--out", opts->out, "Write the approval here (mode 0644); default: standard output");
  cmd->add_flag("--json", opts->json, "Errors as JSON");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto digest = Digest::parse(opts->diff);
      if (!digest) return report_error(Error{Errc::invalid_argument, "--diff: " + digest.error().message}, opts->json, kInvalidInput);
      auto skey = read_file(opts->key, 4096);
      if (!skey) return report_error(skey.error().with_context("--key " + opts->key), opts->json);
      while (!skey->empty() && (skey->back() == '\n' || skey->back() == '\r')) skey->pop_back();
      auto signer = NoteSigner::parse(*skey);
      if (!signer) return report_error(signer.error().with_context("--key " + opts->key), opts->json);
      auto approval = kernel::Approval::sign(*signer, *digest, opts->tests);
      if (!approval) return report_error(approval.error(), opts->json, kInvalidInput);
      auto text = canonicalize(approval->to_json());
      if (!text) return report_error(text.error(), opts->json);
      if (opts->out.empty()) {
        std::cout << *text << "\n";
        return kOk;
      }
      if (auto st = write_file_atomic(opts->out, *text + "\n", 0644); !st) return report_error(st.error(), opts->json);
      return kOk;
    };
  });
}

}  // namespace warden::cli
