#include "executor/channel_proposer.h"

#include <algorithm>
#include <cstdio>

#include "common/random_source.h"

namespace warden::executor {
namespace {

// The answer's fields, checked; `field` is "proposal" or "plan".
Checked<std::string> answer_text(const Json& answer, std::string_view field, std::optional<std::string>& identity) {
  auto failed = [](std::string why) { return refuse(RefusalCode::executor_failed, "", "the executor's answer " + why); };
  if (auto it = answer.find("executor_identity"); it != answer.end()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) return failed("has an executor_identity that is not a non-empty string");
    if (it->get_ref<const std::string&>().size() > ChannelProposer::kMaxIdentityBytes) {
      return failed("has an executor_identity longer than " + std::to_string(ChannelProposer::kMaxIdentityBytes) + " bytes");
    }
    identity = it->get<std::string>();
  }
  const auto text = answer.find(field);
  const auto error = answer.find("error");
  if ((text == answer.end()) == (error == answer.end())) {
    return failed("must carry exactly one of \"" + std::string(field) + "\" and \"error\"");
  }
  if (error != answer.end()) {
    if (!error->is_string()) return failed("has an error that is not a string");
    RefusalCode code = RefusalCode::executor_failed;
    if (auto c = answer.find("code"); c != answer.end()) {
      const auto parsed = c->is_string() ? parse_refusal_code(c->get_ref<const std::string&>()) : std::nullopt;
      if (parsed != RefusalCode::executor_failed && parsed != RefusalCode::executor_timeout) {
        return failed("has a code that is neither executor_failed nor executor_timeout");
      }
      code = *parsed;
    }
    const std::string who = identity ? "executor " + *identity : "the remote executor";
    return refuse(code, "", who + ": " + error->get<std::string>());
  }
  if (!text->is_string()) return failed("has a " + std::string(field) + " that is not a string");
  if (text->get_ref<const std::string&>().empty()) return refuse(RefusalCode::executor_failed, "", "executor proposed nothing");
  return text->get<std::string>();
}

// 64 random bits in hex: no answer written before its request was sent can carry its id.
std::string random_nonce() {
  const uint64_t bits = SystemRandomSource().next_u64();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return hex;
}

// A channel failure as the executor's refusal: a timeout or a stop is executor_timeout.
Refusal refusal_of(LineFailure failure) {
  const RefusalCode code = failure.kind == LineFailure::Kind::closed ? RefusalCode::executor_failed : RefusalCode::executor_timeout;
  return Refusal{code, "", std::move(failure.detail)};
}

}  // namespace

ChannelProposer::ChannelProposer(std::string label, UniqueFd socket, size_t max_line_bytes)
    : label_(std::move(label)), socket_(std::move(socket), max_line_bytes, "executor"), nonce_(random_nonce()) {}

ChannelProposer::~ChannelProposer() {
  // Best effort and never blocking: the server also takes EOF as the end.
  socket_.send_now("{\"type\":\"end\"}\n");
}

Checked<std::string> ChannelProposer::propose(const ProposalRequest& request) {
  return ask("propose", "proposal", Json{{"step", request.step}, {"context", request.context}}, request.timeout,
             request.stop);
}

void ChannelProposer::learn(const Json& refusal) {
  if (socket_.broken()) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  (void)socket_.send(Json{{"type", "learn"}, {"refusal", refusal}}.dump() + "\n", deadline, {});
}

Result<std::string> ChannelProposer::replan(const Json& request, std::chrono::milliseconds timeout) {
  auto plan = ask("replan", "plan", request, timeout, {});
  if (!plan) {
    const Errc code = plan.error().code == RefusalCode::executor_timeout ? Errc::limit_exceeded : Errc::invalid_argument;
    return std::unexpected(Error{code, plan.error().detail});
  }
  return std::move(*plan);
}

Checked<std::string> ChannelProposer::ask(std::string_view type, std::string_view field, const Json& request,
                                          std::chrono::milliseconds timeout, std::stop_token stop) {
  answered_by_.reset();
  if (socket_.broken()) return refuse(RefusalCode::executor_failed, "", *socket_.broken());
  if (stop.stop_requested()) return refuse(RefusalCode::executor_timeout, "", "stopped before asking the executor");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string id = nonce_ + "-" + std::to_string(next_request_++);
  const Json line = {{"type", type}, {"request_id", id}, {"request", request}, {"timeout_ms", timeout.count()}};
  auto failed = [&](Refusal refusal) {
    if (refusal.code == RefusalCode::executor_timeout && !stop.stop_requested()) {
      refusal.detail = "executor timed out after " + std::to_string(timeout.count()) + " ms";
    }
    return std::unexpected(std::move(refusal));
  };
  if (auto sent = socket_.send(line.dump() + "\n", deadline, stop); !sent) return failed(refusal_of(sent.error()));
  for (;;) {
    auto text = socket_.read(deadline, stop);
    if (!text) return failed(refusal_of(text.error()));
    auto answer = parse_json(*text, "the executor's answer");
    if (!answer) return refuse(RefusalCode::executor_failed, "", answer.error().message);
    if (!answer->is_object()) return refuse(RefusalCode::executor_failed, "", "the executor's answer is not a JSON object");
    const auto kind = answer->find("type");
    if (kind == answer->end() || *kind != "answer") {
      return refuse(RefusalCode::executor_failed, "", "the executor channel sent a line whose type is not \"answer\"");
    }
    const auto answer_id = answer->find("request_id");
    if (answer_id == answer->end() || !answer_id->is_string()) {
      return refuse(RefusalCode::executor_failed, "", "the executor's answer has no request_id string");
    }
    if (*answer_id != id) continue;  // a late answer to an earlier request
    return answer_text(*answer, field, answered_by_);
  }
}

}  // namespace warden::executor

