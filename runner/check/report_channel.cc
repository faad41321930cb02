#include "runner/check/report_channel.h"

#include <fcntl.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "common/encoding.h"
#include "common/random_source.h"
#include "runner/check/test_report.h"

namespace warden {

Result<ReportNonce> random_nonce() {
  ReportNonce nonce{};
  try {
    fill_system_random(nonce);
  } catch (const std::runtime_error& e) {
    return fail(Errc::internal, e.what());
  }
  return nonce;
}

std::string report_mac(const ReportNonce& nonce, std::string_view body) {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, nonce.size(), nonce.data());
  hmac_sha256_update(&ctx, body.size(), reinterpret_cast<const uint8_t*>(body.data()));
  uint8_t out[SHA256_DIGEST_SIZE];
  hmac_sha256_digest(&ctx, sizeof out, out);
  return to_hex(std::span<const uint8_t>(out, sizeof out));
}

ChannelReport verify_report(std::string_view report, const ReportNonce& nonce) {
  ChannelReport r;
  if (report.empty()) {
    r.detail = "the check wrote nothing to its report channel";
    return r;
  }
  r.status = ChannelReport::Status::unauthenticated;
  if (report.back() != '\n') {
    r.detail = "the report does not end with its MAC line (truncated, or not written by the test runner)";
    return r;
  }
  size_t start = report.rfind('\n', report.size() - 2);
  start = start == std::string_view::npos ? 0 : start + 1;
  std::string_view last = report.substr(start, report.size() - 1 - start);
  if (!last.starts_with(kReportMacPrefix)) {
    r.detail = "the report does not end with its MAC line (truncated, or not written by the test runner)";
    return r;
  }
  std::string_view body = report.substr(0, start);
  std::string want = report_mac(nonce, body);
  std::string_view got = last.substr(kReportMacPrefix.size());
  if (got.size() != want.size() || !memeql_sec(got.data(), want.data(), want.size())) {
    r.detail = "the report's MAC does not verify under this run's nonce: not written by the test runner, or altered";
    return r;
  }
  r.status = ChannelReport::Status::authenticated;
  r.body = std::string(body);
  return r;
}

Result<ReportChannel> ReportChannel::open(const ReportNonce& nonce) {
  ReportChannel c;
  c.nonce_ = nonce;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2", errno));
  c.nonce_read_ = UniqueFd(fds[0]);
  UniqueFd write_end(fds[1]);
  // 32 bytes fit in any pipe's buffer, so the write completes before the check starts.
  if (::write(write_end.get(), nonce.data(), nonce.size()) != static_cast<ssize_t>(nonce.size())) {
    return std::unexpected(errno_error("writing the report nonce", errno));
  }
  c.report_ = UniqueFd(::memfd_create("warden-report", MFD_CLOEXEC));
  if (!c.report_) return std::unexpected(errno_error("memfd_create", errno));
  return c;
}

ChannelReport ReportChannel::read() const {
  struct stat st;
  if (::fstat(report_.get(), &st) != 0) return {ChannelReport::Status::missing, "", errno_error("fstat report", errno).message};
  if (static_cast<uint64_t>(st.st_size) > kMaxReportBytes) {
    return {ChannelReport::Status::too_large, "", "the report channel holds more than 16 MiB"};
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pread(report_.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return verify_report(text, nonce_);
}

}  // namespace warden
