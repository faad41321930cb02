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

std::vector<nlohmann::json> stdout_json_lines(const ProcessResult& result) {
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  while (start < result.out.size()) {
    size_t end = result.out.find('\n', start);
    if (end == std::string::npos) end = result.out.size();
    try {
      lines.push_back(nlohmann::json::parse(result.out.substr(start, end - start)));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("warden output line " + std::to_string(lines.size() + 1) + " is not JSON (" + e.what() +
                               "):\n" + describe(result));
    }
    start = end + 1;
  }
  return lines;
}

nlohmann::json stdout_json(const ProcessResult& result) {
  auto lines = stdout_json_lines(result);
  if (lines.empty()) throw std::runtime_error("warden printed no JSON:\n" + describe(result));
  return lines.back();
}

std::string describe(const ProcessResult& result) {
  return result.status() + "\nstdout: " + result.out + "\nstderr: " + result.err;
}

}  // namespace warden::test
