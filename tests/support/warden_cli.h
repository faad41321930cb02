// Runs the real `warden` binary (its path is compiled in as WARDEN_BINARY) and reads its
// JSON output.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace warden::test {

const char* warden_binary();
ProcessResult warden(const std::vector<std::string>& args, const SpawnOptions& options = {});
// Parses stdout as JSON; throws (naming the command's output) when it is not JSON.
nlohmann::json stdout_json(const ProcessResult& result);
// "exit 3\nstdout: ...\nstderr: ...", for assertion messages.
std::string describe(const ProcessResult& result);

}  // namespace warden::test
