#include "runner/report_channel.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "common/encoding.h"
#include "runner/test_report.h"

namespace warden {

Result<ReportNonce> random_nonce() {
  ReportNonce nonce{};
  size_t done = 0;
  while (done < nonce.size()) {
    ssize_t n = ::getrandom(nonce.data() + done, nonce.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error("getrandom", errno));
    done += static_cast<size_t>(n);
  }
  return nonce;
}

std::string report_mac(const ReportNonce& nonce, std::string_view body) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!::HMAC(EVP_sha256(), nonce.data(), static_cast<int>(nonce.size()), reinterpret_cast<const unsigned char*>(body.data()),
              body.size(), out, &length)) {
    throw std::runtime_error("OpenSSL HMAC-SHA256 failed");  // as sha256.h: the process cannot go on
  }
  return to_hex(std::span<const uint8_t>(out, length));
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
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
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
