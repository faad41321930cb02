#include "tools/warden/verify_flags.h"

#include "common/file.h"
#include "kernel/record/blob_refs.h"
#include "tools/warden/cli.h"

namespace warden::cli {

void add_verify_flags(CLI::App* cmd, VerifyFlags& flags, const std::string& key_help) {
  cmd->add_option("--key", flags.keys, key_help)->allow_extra_args(false);
  cmd->add_option("--checkpoint", flags.checkpoints,
                  "A signed checkpoint note you kept (a file, or the note text; repeatable): its signature must hold "
                  "with the keys, and the ledger must extend it (at least its size, the same root at that size)")
      ->allow_extra_args(false);
  auto* require = cmd->add_flag("--require-signed-tail", flags.require_signed_tail,
                                "Fail when records follow the last signed checkpoint (the default with --key)");
  auto* allow = cmd->add_flag("--allow-unsigned-tail", flags.allow_unsigned_tail,
                              "Accept records after the last signed checkpoint, reported as unsigned (the default "
                              "without --key)");
  require->excludes(allow);
}

Result<VerifyOptions> verify_options(const VerifyFlags& flags) {
  VerifyOptions options;
  auto keys = load_verifiers(flags.keys);
  if (!keys) return std::unexpected(keys.error());
  options.keys = std::move(*keys);
  for (const auto& arg : flags.checkpoints) {
    // A note always spans lines; a file name never does.
    if (arg.find('\n') != std::string::npos) {
      options.kept_checkpoints.push_back(arg);
      continue;
    }
    auto text = read_file(arg, 1 << 20);
    if (!text) return std::unexpected(text.error().with_context("--checkpoint"));
    options.kept_checkpoints.push_back(std::move(*text));
  }
  if (flags.require_signed_tail) options.require_signed_tail = true;
  if (flags.allow_unsigned_tail) options.require_signed_tail = false;
  options.blob_references = &kernel::blob_references();
  return options;
}

Json unsigned_tail_json(uint64_t signed_size, uint64_t unsigned_records) {
  if (unsigned_records == 0) return nullptr;
  return {{"records", unsigned_records}, {"first_seq", signed_size}, {"last_seq", signed_size + unsigned_records - 1}};
}

}  // namespace warden::cli
