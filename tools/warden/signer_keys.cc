#include "tools/warden/signer_keys.h"

#include <iostream>
#include <optional>

#include "ledger/ledger_keys.h"

namespace warden::cli {
namespace {

std::optional<std::filesystem::path> given(const std::string& key_file) {
  if (key_file.empty()) return std::nullopt;
  return std::filesystem::path(key_file);
}

Result<NoteSigner> reported(Result<SignerKey> key, std::string_view flag) {
  if (!key) {
    Error e = key.error();
    if (e.code == Errc::not_found) e.message += " (pass " + std::string(flag) + " FILE)";
    return std::unexpected(std::move(e));
  }
  for (const auto& w : key->warnings) std::cerr << "warden: warning: " << w << "\n";
  return std::move(key->signer);
}

}  // namespace

Result<NoteSigner> signer_for_ledger(const std::filesystem::path& dir, const std::string& key_file,
                                     const std::string& name, std::string_view flag) {
  return reported(ledger_signer_key(dir, given(key_file), name), flag);
}

Result<NoteSigner> signer_of_ledger(const std::filesystem::path& dir, const std::string& key_file, std::string_view flag) {
  return reported(find_ledger_signer_key(dir, given(key_file)), flag);
}

}  // namespace warden::cli
