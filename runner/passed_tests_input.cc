#include "runner/passed_tests_input.h"

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
  UniqueFd fd(::memfd_create("warden-tests-from", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return std::unexpected(errno_error("memfd_create", errno));
  size_t done = 0;
  while (done < text->size()) {
    ssize_t n = ::write(fd.get(), text->data() + done, text->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error("writing the passed tests file", errno));
    done += static_cast<size_t>(n);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return std::unexpected(errno_error("sealing the passed tests file", errno));
  }
  return fd;
}

}  // namespace warden
