#include "tests/support/warden_cli.h"

#include <stdexcept>

#ifndef WARDEN_BINARY
#error "WARDEN_BINARY must name the warden executable"
#endif

namespace warden::test {

const char* warden_binary() { return WARDEN_BINARY; }

ProcessResult warden(const std::vector<std::string>& args, const SpawnOptions& options) {
  std::vector<std::string> argv{WARDEN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

nlohmann::json stdout_json(const ProcessResult& result) {
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("warden output is not JSON (") + e.what() + "):\n" + describe(result));
  }
}

std::string describe(const ProcessResult& result) {
  return result.status() + "\nstdout: " + result.out + "\nstderr: " + result.err;
}

}  // namespace warden::test
