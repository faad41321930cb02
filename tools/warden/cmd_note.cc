// warden note sign|verify and warden checkpoint verify: signed notes from any signer.
#include <cstdio>
#include <iostream>

#include "common/file.h"
#include "ledger/checkpoint.h"
#include "ledger/ledger_keys.h"
#include "tools/warden/cli.h"

namespace warden::cli {
namespace {

constexpr uint64_t kMaxNoteBytes = 1 << 20;

std::string key_id(const NoteSignature& s) {
  char hash[9];
  std::snprintf(hash, sizeof hash, "%08x", s.key_hash);
  return s.name + "+" + hash;
}

Json signatures_json(const std::vector<NoteSignature>& sigs) {
  Json out = Json::array();
  for (const auto& s : sigs) out.push_back(key_id(s));
  return out;
}

struct VerifyOptions {
  std::vector<std::string> keys;
  std::string file;
  bool json = false;
};

void add_verify_options(CLI::App* cmd, VerifyOptions& o) {
  cmd->add_option("--key", o.keys, "Trusted verifier key, or a file holding one (repeatable)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("FILE", o.file, "The signed note ('-' for standard input)")->required();
  cmd->add_flag("--json", o.json, "Print the result as JSON");
}

Result<OpenedNote> open_file(const VerifyOptions& o) {
  auto verifiers = load_verifiers(o.keys);
  if (!verifiers) return std::unexpected(verifiers.error());
  auto text = read_file(o.file, kMaxNoteBytes);
  if (!text) return std::unexpected(text.error());
  return open_note(*text, *verifiers);
}

}  // namespace

void add_note_commands(CLI::App& app, Action& action) {
  auto* note = app.add_subcommand("note", "Sign and verify C2SP signed notes (byte-compatible with sumdb/note)");
  note->require_subcommand(1);

  struct SignOptions {
    std::string key, file;
  };
  auto sign = std::make_shared<SignOptions>();
  auto* sign_cmd = note->add_subcommand(
      "sign",
      "Sign FILE's text and print the signed note. If FILE is already a signed note, its other signatures are "
      "kept and this key's signature is replaced.");
  sign_cmd->add_option("--key", sign->key,
                       "File holding the signer key (PRIVATE+KEY+..., mode 0600). Only a file: a key given on the "
                       "command line would be readable by every user of the machine (/proc/PID/cmdline) and kept in "
                       "shell history, so it is refused. (Verifier keys are public: --key of `note verify` takes "
                       "the key itself or a file.)")
      ->required();
  sign_cmd->add_option("FILE", sign->file, "Note text ending in a newline ('-' for standard input)")->required();
  sign_cmd->callback([sign, &action] {
    action = [sign]() -> int {
      if (sign->key.starts_with("PRIVATE+KEY+")) {
        // Named without echoing it: the error would copy the secret into logs too.
        report_error(Error{Errc::invalid_argument,
                           "--key takes a file holding the signer key, not the key itself: a command line is visible "
                           "to every user (/proc/PID/cmdline) and kept in shell history. Write the key to a file "
                           "(mode 0600) and pass its path"},
                     false);
        return kUsage;
      }
      auto loaded = read_given_signer_key(sign->key);
      if (!loaded) return report_error(loaded.error(), false);
      for (const auto& w : loaded->warnings) std::cerr << "warden: warning: " << w << "\n";
      const NoteSigner* signer = &loaded->signer;
      auto text = read_file(sign->file, kMaxNoteBytes);
      if (!text) return report_error(text.error(), false);
      std::string body = *text;
      std::vector<NoteSignature> existing;
      if (auto parsed = parse_note(*text)) {
        body = parsed->text;
        existing = parsed->signatures;
      }
      auto signed_note = sign_note(body, *signer, existing);
      if (!signed_note) return report_error(signed_note.error(), false);
      std::cout << *signed_note;
      return kOk;
    };
  });

  auto verify = std::make_shared<VerifyOptions>();
  auto* verify_cmd = note->add_subcommand(
      "verify", "Verify a signed note against trusted keys: exit 0 only if a trusted key signed it and no "
                "trusted key's signature is bad. Signatures by other keys are ignored, as the spec requires.");
  add_verify_options(verify_cmd, *verify);
  verify_cmd->callback([verify, &action] {
    action = [verify]() -> int {
      auto opened = open_file(*verify);
      if (!opened) return report_error(opened.error(), verify->json);
      if (verify->json) {
        print_json({{"ok", true},
                    {"text", opened->text},
                    {"verified_by", signatures_json(opened->verified)},
                    {"unverified", signatures_json(opened->unverified)}});
      } else {
        for (const auto& s : opened->verified) std::cout << "verified: " << key_id(s) << "\n";
        for (const auto& s : opened->unverified) std::cout << "ignored (unknown key): " << key_id(s) << "\n";
      }
      return kOk;
    };
  });

  auto* checkpoint = app.add_subcommand("checkpoint", "Verify tlog-checkpoints from Warden or any other log");
  checkpoint->require_subcommand(1);
  auto cp = std::make_shared<VerifyOptions>();
  auto* cp_verify = checkpoint->add_subcommand(
      "verify", "Verify a C2SP tlog-checkpoint's signature and format; print its origin, tree size and root hash");
  add_verify_options(cp_verify, *cp);
  cp_verify->callback([cp, &action] {
    action = [cp]() -> int {
      auto opened = open_file(*cp);
      if (!opened) return report_error(opened.error(), cp->json);
      auto body = Checkpoint::parse_body(opened->text);
      if (!body) return report_error(body.error(), cp->json);
      if (cp->json) {
        print_json({{"ok", true},
                    {"origin", body->origin},
                    {"size", body->size},
                    {"root", body->root.hex()},
                    {"extensions", body->extensions},
                    {"verified_by", signatures_json(opened->verified)}});
      } else {
        std::cout << "origin " << body->origin << "\nsize " << body->size << "\nroot " << body->root.hex() << "\n";
        for (const auto& s : opened->verified) std::cout << "verified " << key_id(s) << "\n";
      }
      return kOk;
    };
  });
}

}  // namespace warden::cli
