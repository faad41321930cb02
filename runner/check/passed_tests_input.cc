#include "runner/check/passed_tests_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace warden {

Json passed_tests_json(const std::vector<const CheckResult*>& from) {
  Json checks = Json::object();
  for (const CheckResult* check : from) {
    Json ids = Json::array();
    for (const TestCase& t : check->tests) {
      if (t.status == kPassed) ids.push_back(t.id);  // CheckResult::tests is sorted by id
    }
    checks[check->name] = std::move(ids);
  }
  return {{"checks", std::move(checks)}};
}

Result<UniqueFd> passed_tests_file(const std::vector<const CheckResult*>& from) {
  auto text = canonicalize(passed_tests_json(from));
  if (!text) return std::unexpected(text.error());
  return sealed_memfd("warden-tests-from", *text);
}

}  // namespace warden
