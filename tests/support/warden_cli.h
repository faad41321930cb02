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
// Parses stdout as JSON Lines (README: JSON Lines) and returns the last line — the result
// or the error; throws (naming the command's output) when any line is not JSON on its own.
nlohmann::json stdout_json(const ProcessResult& result);
// Every line of stdout, each parsed alone; throws as stdout_json does.
std::vector<nlohmann::json> stdout_json_lines(const ProcessResult& result);
// "exit 3\nstdout: ...\nstderr: ...", for assertion messages.
std::string describe(const ProcessResult& result);

}  // namespace warden::test
