// The authenticated report channel of a check that declares it (CheckSpec::
// authenticated_report). A test runner such as policies/checks/run_tests.py imports the code
// under test into its own process, so that code owns the process's stdout: a report read from
// stdout is whatever the tested code chose to print, and a tested module that prints a passing
// TAP stream and exits at import time would pass. Each run of such a check therefore gets two
// descriptors of its own, named to it by environment variables (the numbers, never the nonce):
//   WARDEN_NONCE_FD   a pipe holding a fresh 32-byte nonce, then EOF. The test runner reads
//                     it and closes it before it imports any tested code; a pipe, once read,
//                     is empty, so nothing imported later can read the nonce from it.
//   WARDEN_REPORT_FD  a memfd the runner reads after the run, whatever the check's stdout says.
// The report ends with the line "# warden-report-hmac-sha256: <64 hex>\n", HMAC-SHA256 keyed
// by the nonce over every byte before that line (the body). verify_report() accepts only that
// shape; the body is what is parsed and recorded, so recorded bytes never depend on the nonce.
// What this does and does not stop is in docs/threat-model.md.
//
// ReportChannel owns its descriptors (closed when it is destroyed); not thread-safe. Errors
// from open() are errno errors (the run cannot happen); a report that fails verification is
// a ChannelReport value, not an Error: it is the check's evidence.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/file.h"

namespace warden {

using ReportNonce = std::array<uint8_t, 32>;
// Where nonces come from. The default reads getrandom(2); tests inject a fixed nonce so a
// report with a right MAC can be written by a plain shell check. A nonce never reaches a
// RunResult, the cache key or the ledger, so no source changes any recorded byte.
using NonceSource = std::function<Result<ReportNonce>()>;
Result<ReportNonce> random_nonce();

inline constexpr std::string_view kReportMacPrefix = "# warden-report-hmac-sha256: ";
inline constexpr const char* kNonceFdVariable = "WARDEN_NONCE_FD";
inline constexpr const char* kReportFdVariable = "WARDEN_REPORT_FD";

// HMAC-SHA256 of `body` keyed by `nonce`, 64 lowercase hex.
std::string report_mac(const ReportNonce& nonce, std::string_view body);

struct ChannelReport {
  enum class Status { authenticated, missing, unauthenticated, too_large };
  Status status = Status::missing;
  std::string body;    // authenticated: the report without its MAC line
  std::string detail;  // otherwise: why, for report_detail
};

// The body of `report` when its last line is a MAC line over the rest that verifies under
// `nonce` (compared in constant time); otherwise why not.
ChannelReport verify_report(std::string_view report, const ReportNonce& nonce);

class ReportChannel {
 public:
  // The nonce is written into a fresh pipe (whose write end is closed at once) and a memfd is
  // made for the report.
  static Result<ReportChannel> open(const ReportNonce& nonce);

  int nonce_fd() const { return nonce_read_.get(); }
  int report_fd() const { return report_.get(); }
  // After the run: the report the check wrote, verified (at most kMaxReportBytes read).
  ChannelReport read() const;

 private:
  ReportChannel() = default;
  ReportNonce nonce_{};
  UniqueFd nonce_read_, report_;
};

}  // namespace warden
