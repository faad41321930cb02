// What a check that declares tests_from (check_spec.h) reads: the ids of the tests that passed
// in the named earlier checks of the same run, so an invariant such as
// all_functions_have_tests is judged on the tests that actually ran, not on any file named
// like a test. The file is canonical JSON,
//   {"checks": {"tests": ["tests/test_ops.py::TestOps::test_mul", ...]}}
// (each check's agreed passed ids, sorted), in a memfd sealed against writes and given to the
// check as a descriptor named by WARDEN_TESTS_FROM_FD: read-only, and outside the workspace
// the check could otherwise edit. Its bytes follow from earlier results of the same request,
// which the cache key already covers.
#pragma once

#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/file.h"
#include "runner/model/run_result.h"

namespace warden {

inline constexpr const char* kTestsFromFdVariable = "WARDEN_TESTS_FROM_FD";

Json passed_tests_json(const std::vector<const CheckResult*>& from);
// The sealed read-only memfd holding passed_tests_json(from); errno errors only.
Result<UniqueFd> passed_tests_file(const std::vector<const CheckResult*>& from);

}  // namespace warden
