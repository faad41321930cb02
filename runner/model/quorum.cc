#include "runner/model/quorum.h"

#include <algorithm>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/json_reader.h"

namespace warden {
namespace {

bool is_hex(std::string_view s, size_t size) {
  return s.size() == size && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

Result<RunnerQuorum> RunnerQuorum::make(uint32_t k, uint32_t n) {
  if (k < 1 || n < k || n > 9 || 2 * k <= n) {
    return fail(Errc::invalid_argument, "runner quorum " + std::to_string(k) + "/" + std::to_string(n) +
                                            ": needs 1 <= k <= n <= 9 and k more than half of n");
  }
  return RunnerQuorum{k, n};
}

Result<RunnerQuorum> RunnerQuorum::from_json(const Json& json) {
  JsonReader r(json, "runner_quorum");
  uint64_t k = 0, n = 0;
  r.unsigned_integer("k", k, 1, 9);
  r.unsigned_integer("n", n, 1, 9);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return make(static_cast<uint32_t>(k), static_cast<uint32_t>(n));
}

Result<RunnerQuorum> RunnerQuorum::parse(std::string_view text) {
  const size_t slash = text.find('/');
  auto number = [](std::string_view digits) -> std::optional<uint32_t> {
    if (digits.size() != 1 || digits[0] < '0' || digits[0] > '9') return std::nullopt;
    return static_cast<uint32_t>(digits[0] - '0');
  };
  auto k = slash == std::string_view::npos ? std::nullopt : number(text.substr(0, slash));
  auto n = slash == std::string_view::npos ? std::nullopt : number(text.substr(slash + 1));
  if (!k || !n) return fail(Errc::invalid_argument, "runner quorum \"" + std::string(text) + "\": expected K/N, such as 2/3");
  return make(*k, *n);
}

Json ResultAttestation::to_json() const {
  return {{"agent_id", agent_id}, {"owner", owner}, {"key", key}, {"task_id", task_id}, {"nonce", nonce}, {"signature", signature}};
}

Result<ResultAttestation> ResultAttestation::from_json(const Json& json) {
  JsonReader r(json, "runner attestation");
  ResultAttestation a;
  r.string("agent_id", a.agent_id);
  r.string("owner", a.owner);
  r.string("key", a.key);
  r.string("task_id", a.task_id);
  r.string("nonce", a.nonce);
  r.string("signature", a.signature);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  if (a.agent_id.empty() || a.task_id.empty()) return fail(Errc::invalid_argument, "runner attestation: an empty agent_id or task_id");
  if (!is_hex(a.key, 64) || !is_hex(a.nonce, 64) || !is_hex(a.signature, 128)) {
    return fail(Errc::invalid_argument, "runner attestation: key, nonce and signature must be 64, 64 and 128 lowercase hex");
  }
  return a;
}

std::string enrol_message(std::string_view agent_id, std::string_view identity, std::string_view nonce) {
  std::string m = "warden-runner-enrol-v1\n";
  m.append(agent_id).append("\n").append(identity).append("\n").append(nonce);
  return m;
}

std::string attestation_message(std::string_view agent_id, std::string_view task_id, std::string_view nonce,
                                 const Digest& result_digest) {
  std::string m = "warden-runner-result-v1\n";
  m.append(agent_id).append("\n").append(task_id).append("\n").append(nonce).append("\n").append(result_digest.str());
  return m;
}

Status verify_attestation(const ResultAttestation& a, const Digest& result_digest) {
  auto key_bytes = from_hex(a.key);
  auto signature = from_hex(a.signature);
  if (!key_bytes || key_bytes->size() != 32 || !signature) {
    return fail(Errc::verification_failed, "runner " + a.agent_id + ": a malformed key or signature");
  }
  Ed25519PublicKey key{};
  std::copy(key_bytes->begin(), key_bytes->end(), key.begin());
  if (!ed25519_verify(key, attestation_message(a.agent_id, a.task_id, a.nonce, result_digest), *signature)) {
    return fail(Errc::verification_failed, "runner " + a.agent_id + ": the signature is not its key's over this result of task " +
                                               a.task_id);
  }
  return {};
}

}  // namespace warden
