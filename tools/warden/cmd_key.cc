// warden key generate NAME: note-style Ed25519 keys.
#include <iostream>

#include "common/file.h"
#include "tools/warden/cli.h"

namespace warden::cli {

void add_key_commands(CLI::App& app, Action& action) {
  auto* key = app.add_subcommand("key", "Manage note-style Ed25519 signing keys");
  key->require_subcommand(1);

  struct Options {
    std::string name, signer_out, verifier_out;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* gen = key->add_subcommand(
      "generate",
      "Generate a signer key (PRIVATE+KEY+NAME+<keyhash>+<base64>, keep it secret) and its verifier key "
      "(NAME+<keyhash>+<base64>, publish it), as golang.org/x/mod/sumdb/note defines them. Without --*-out "
      "flags both are printed, signer key first.");
  gen->add_option("NAME", opts->name, "Key name; for a log, its origin (e.g. example.com/log)")->required();
  gen->add_option("--signer-out", opts->signer_out, "Write the signer key to this file (mode 0600)");
  gen->add_option("--verifier-out", opts->verifier_out, "Write the verifier key to this file");
  gen->add_flag("--json", opts->json, "Print {\"signer_key\", \"verifier_key\"} as JSON");
  gen->callback([opts, &action] {
    action = [opts]() -> int {
      auto signer = NoteSigner::generate(opts->name);
      if (!signer) return report_error(signer.error(), opts->json);
      std::string skey = signer->encoded();
      std::string vkey = signer->verifier().encoded();
      if (!opts->signer_out.empty()) {
        if (auto st = write_file_atomic(opts->signer_out, skey + "\n", 0600); !st) return report_error(st.error(), opts->json);
      }
      if (!opts->verifier_out.empty()) {
        if (auto st = write_file_atomic(opts->verifier_out, vkey + "\n", 0644); !st) return report_error(st.error(), opts->json);
      }
      if (opts->json) {
        Json out = {{"name", signer->name()}, {"verifier_key", vkey}};
        if (opts->signer_out.empty()) out["signer_key"] = skey;
        print_json(out);
        return kOk;
      }
      if (opts->signer_out.empty()) std::cout << skey << "\n";
      if (opts->verifier_out.empty()) std::cout << vkey << "\n";
      return kOk;
    };
  });
}

}  // namespace warden::cli
