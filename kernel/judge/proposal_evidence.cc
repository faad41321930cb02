#include "kernel/judge/proposal_evidence.h"

#include "common/encoding.h"
#include "diff/diff.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

Json image_json(const BaseFileImage& image) {
  Json out = {{"mode", mode_string(image.mode)}};
  if (!image.content) out["content"] = nullptr;
  else if (is_valid_utf8(*image.content)) out["content"] = *image.content;
  else out["content_base64"] = base64_encode(*image.content);
  return out;
}

Result<BaseFileImage> image_from_json(const Json& json, const std::string& where) {
  JsonReader reader(json, where);
  BaseFileImage image;
  std::string mode;
  reader.string("mode", mode);
  if (reader.ok()) {
    auto parsed = parse_mode(mode);
    if (!parsed) reader.fail("mode", "must be 100644, 100755 or 120000");
    else image.mode = *parsed;
  }
  bool text = reader.has("content"), binary = reader.has("content_base64");
  if (reader.ok() && text == binary) reader.fail("", "needs exactly one of content and content_base64");
  if (text) {
    reader.nullable_string("content", image.content);
  } else {
    std::string encoded;
    reader.string("content_base64", encoded);
    if (reader.ok()) {
      auto raw = base64_decode(encoded);
      if (!raw) reader.fail("content_base64", raw.error().message);
      else if (is_valid_utf8(*raw)) reader.fail("content_base64", "holds UTF-8 text, which goes in content");
      else image.content = std::move(*raw);
    }
  }
  if (auto st = reader.finish(); !st) return std::unexpected(st.error());
  return image;
}

Json refusal_json(const Refusal& r) {
  return {{"code", std::string(refusal_code_name(r.code))}, {"path", r.path}, {"detail", r.detail}};
}

Refusal refusal_from_json(const Json& json, const std::string& where, JsonReader& parent) {
  JsonReader r(json, where);
  Refusal out;
  std::string code;
  r.string("code", code);
  if (auto parsed = parse_refusal_code(code)) out.code = *parsed;
  else if (r.ok()) r.fail("code", "unknown refusal code \"" + code + "\"");
  r.string("path", out.path);
  r.string("detail", out.detail);
  parent.adopt(r.finish());
  return out;
}

}  // namespace

Json ProposalEvidence::to_json() const {
  Json base_json = Json::object();
  for (const auto& [path, image] : base) base_json[path] = image_json(image);
  Json out = {{"step_id", step_id},
              {"diff", diff},
              {"base", base_json},
              {"workspace_refusal", workspace_refusal ? refusal_json(*workspace_refusal) : Json(nullptr)}};
  if (patch_refusal) out["patch_refusal"] = refusal_json(*patch_refusal);
  if (executor_refusal) out["executor_refusal"] = refusal_json(*executor_refusal);
  return out;
}

Result<ProposalEvidence> ProposalEvidence::from_json(const Json& json) {
  JsonReader reader(json, "proposal");
  ProposalEvidence p;
  reader.string("step_id", p.step_id);
  // The diff is kept as received, whatever its type: decide() judges it, and a malformed
  // one is a refusal, not an unreadable record. The build loop records an executor's raw
  // text (a string) when it was neither a Diff nor a patch, and null when it failed.
  if (const Json* diff = reader.any("diff")) p.diff = *diff;
  if (const Json* base = reader.value("base", Json::value_t::object)) {
    for (const auto& [path, entry] : base->items()) {
      auto image = image_from_json(entry, reader.path("base") + "[\"" + path + "\"]");
      if (!image) return std::unexpected(image.error());
      p.base.emplace(path, std::move(*image));
    }
  }
  if (const Json* refusal = reader.nullable_object("workspace_refusal")) {
    p.workspace_refusal = refusal_from_json(*refusal, reader.path("workspace_refusal"), reader);
  }
  if (const Json* refusal = reader.value("patch_refusal", Json::value_t::object, false)) {
    p.patch_refusal = refusal_from_json(*refusal, reader.path("patch_refusal"), reader);
  }
  if (const Json* refusal = reader.value("executor_refusal", Json::value_t::object, false)) {
    p.executor_refusal = refusal_from_json(*refusal, reader.path("executor_refusal"), reader);
  }
  if (auto st = reader.finish(); !st) return std::unexpected(st.error());
  return p;
}

}  // namespace warden::kernel
