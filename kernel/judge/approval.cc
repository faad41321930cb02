#include "kernel/judge/approval.h"

#include <algorithm>

#include "common/encoding.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

void sort_unique(std::vector<std::string>& items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
}

}  // namespace

Json Approval::body() const {
  return {{"format", kApprovalFormat}, {"approver", approver}, {"diff_sha256", diff_sha256.str()}, {"tests", tests}};
}

Json Approval::to_json() const {
  Json j = body();
  j["signature"] = signature;
  return j;
}

Result<Approval> Approval::from_json(const Json& json) {
  Approval a;
  JsonReader r(json, "approval");
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kApprovalFormat) r.fail("format", "must be \"" + std::string(kApprovalFormat) + "\"");
  r.string("approver", a.approver);
  r.digest("diff_sha256", a.diff_sha256);
  r.strings("tests", a.tests);
  if (r.ok() && a.tests.empty()) r.fail("tests", "must name at least one test");
  r.string("signature", a.signature);
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  sort_unique(a.tests);
  return a;
}

Result<Approval> Approval::sign(const NoteSigner& signer, const Digest& diff_sha256, std::vector<std::string> tests) {
  if (tests.empty()) return fail(Errc::invalid_argument, "an approval must name at least one test (--test PATH::TEST)");
  Approval a;
  a.approver = signer.name();
  a.diff_sha256 = diff_sha256;
  a.tests = std::move(tests);
  sort_unique(a.tests);
  auto bytes = canonicalize(a.body());
  if (!bytes) return std::unexpected(bytes.error());
  auto sig = signer.sign(*bytes);
  if (!sig) return std::unexpected(sig.error());
  a.signature = base64_encode(*sig);
  return a;
}

AdmittedTests admitted_tests(const std::vector<Json>& approvals, const Digest& diff_sha256,
                             const std::vector<std::string>& approvers) {
  AdmittedTests out;
  for (const Json& json : approvals) {
    auto a = Approval::from_json(json);
    if (!a) {
      out.ignored.push_back("an approval that does not parse (" + a.error().message + ")");
      continue;
    }
    const std::string who = "the approval by " + a->approver;
    if (a->diff_sha256 != diff_sha256) {
      out.ignored.push_back(who + ": it is for diff " + a->diff_sha256.str() + ", not this one");
      continue;
    }
    auto sig = base64_decode(a->signature);
    auto bytes = canonicalize(a->body());
    bool verified = false;
    bool named = false;
    for (const std::string& vkey : approvers) {
      auto verifier = NoteVerifier::parse(vkey);
      if (!verifier || verifier->name() != a->approver) continue;
      named = true;
      verified = verified || (sig && bytes && ed25519_verify(verifier->public_key(), *bytes, *sig));
    }
    if (!named) {
      out.ignored.push_back(who + ": the policy names no approver " + a->approver);
    } else if (!verified) {
      out.ignored.push_back(who + ": not signed by the key the policy names for " + a->approver);
    } else {
      out.tests.insert(a->tests.begin(), a->tests.end());
    }
  }
  return out;
}

}  // namespace warden::kernel
