#include "diff/diff.h"

#include <charconv>

#include "common/encoding.h"

namespace warden {
namespace {

Refusal bad(const std::string& where, const std::string& why) { return Refusal{RefusalCode::malformed_diff, "", where + ": " + why}; }

const Json* field(const Json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

Checked<std::optional<std::string>> opt_string(const Json& obj, const char* name, const std::string& where) {
  const Json* f = field(obj, name);
  if (!f) return std::optional<std::string>();
  if (!f->is_string()) return std::unexpected(bad(where + "." + name, "must be a string"));
  return std::optional<std::string>(f->get<std::string>());
}

Checked<std::optional<Digest>> opt_digest(const Json& obj, const char* name, const std::string& where) {
  auto text = opt_string(obj, name, where);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<Digest>();
  auto d = Digest::parse(**text);
  if (!d) return std::unexpected(bad(where + "." + name, d.error().message));
  return std::optional<Digest>(*d);
}

Checked<std::optional<uint32_t>> opt_mode(const Json& obj, const char* name, const std::string& where) {
  auto text = opt_string(obj, name, where);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<uint32_t>();
  auto mode = parse_mode(**text);
  if (!mode) return std::unexpected(bad(where + "." + name, "must be \"100644\", \"100755\" or \"120000\""));
  return std::optional<uint32_t>(*mode);
}

Checked<uint64_t> count_field(const Json& obj, const char* name, const std::string& where) {
  const Json* f = field(obj, name);
  if (!f || !f->is_number_integer() || f->get<int64_t>() < 0) {
    return std::unexpected(bad(where + "." + name, "must be a non-negative integer"));
  }
  return f->get<uint64_t>();
}

Checked<Hunk> hunk_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) return std::unexpected(bad(where, "must be an object"));
  Hunk h;
  for (auto [name, slot] : {std::pair{"old_start", &h.old_start}, std::pair{"old_lines", &h.old_lines},
                            std::pair{"new_start", &h.new_start}, std::pair{"new_lines", &h.new_lines}}) {
    auto v = count_field(j, name, where);
    if (!v) return std::unexpected(v.error());
    *slot = *v;
  }
  const Json* lines = field(j, "lines");
  if (!lines || !lines->is_array() || lines->empty()) return std::unexpected(bad(where + ".lines", "must be a non-empty array"));
  uint64_t old_count = 0, new_count = 0;
  for (size_t i = 0; i < lines->size(); ++i) {
    const Json& line = (*lines)[i];
    std::string at = where + ".lines[" + std::to_string(i) + "]";
    if (!line.is_string() || line.get_ref<const std::string&>().empty()) {
      return std::unexpected(bad(at, "must be a string starting with ' ', '-' or '+'"));
    }
    const std::string& text = line.get_ref<const std::string&>();
    char op = text[0];
    if (op != ' ' && op != '-' && op != '+') return std::unexpected(bad(at, "must start with ' ', '-' or '+'"));
    auto nl = text.find('\n');
    if (nl != std::string::npos && nl != text.size() - 1) return std::unexpected(bad(at, "holds more than one line"));
    if (op != '+') ++old_count;
    if (op != '-') ++new_count;
    h.lines.push_back(text);
  }
  if (old_count != h.old_lines || new_count != h.new_lines) {
    return std::unexpected(Refusal{RefusalCode::hunk_count_mismatch, "",
                                   where + ": header says -" + std::to_string(h.old_lines) + " +" +
                                       std::to_string(h.new_lines) + ", lines give -" + std::to_string(old_count) +
                                       " +" + std::to_string(new_count)});
  }
  return h;
}

// Which fields each operation must and must not carry.
Checked<void> check_shape(const FileChange& f, const std::string& where) {
  bool is_add = f.op == FileOp::add, is_delete = f.op == FileOp::remove;
  bool moves = f.op == FileOp::rename || f.op == FileOp::copy;
  if (f.path.empty()) return std::unexpected(bad(where + ".path", "must be non-empty"));
  if (moves != f.old_path.has_value()) {
    return std::unexpected(bad(where + ".old_path", moves ? "is required for rename and copy" : "is only for rename and copy"));
  }
  if (is_add == f.before_sha256.has_value()) {
    return std::unexpected(bad(where + ".before_sha256", is_add ? "must be absent for add" : "is required"));
  }
  if (is_delete == f.after_sha256.has_value()) {
    return std::unexpected(bad(where + ".after_sha256", is_delete ? "must be absent for delete" : "is required"));
  }
  if (is_add == f.old_mode.has_value()) {
    return std::unexpected(bad(where + ".old_mode", is_add ? "must be absent for add" : "is required"));
  }
  if (is_delete == f.new_mode.has_value()) {
    return std::unexpected(bad(where + ".new_mode", is_delete ? "must be absent for delete" : "is required"));
  }
  if (f.after_content && !f.hunks.empty()) {
    return std::unexpected(bad(where, "carries both after_content and hunks; choose one"));
  }
  if (is_delete && (f.after_content || !f.hunks.empty())) return std::unexpected(bad(where, "a delete carries no content"));
  if (is_add && !f.after_content && f.hunks.empty()) return std::unexpected(bad(where, "an add needs after_content or hunks"));
  uint64_t end_of_previous = 0;
  for (size_t i = 0; i < f.hunks.size(); ++i) {
    const Hunk& h = f.hunks[i];
    uint64_t first = h.old_lines == 0 ? h.old_start + 1 : h.old_start;
    if ((h.old_lines > 0 && h.old_start == 0) || first <= end_of_previous) {
      return std::unexpected(bad(where + ".hunks[" + std::to_string(i) + "]", "hunks must be in order and not overlap"));
    }
    end_of_previous = h.old_lines == 0 ? h.old_start : h.old_start + h.old_lines - 1;
  }
  return {};
}

}  // namespace

std::string_view file_op_name(FileOp op) {
  switch (op) {
    case FileOp::add: return "add";
    case FileOp::modify: return "modify";
    case FileOp::remove: return "delete";
    case FileOp::rename: return "rename";
    case FileOp::copy: return "copy";
  }
  return "?";
}

std::string mode_string(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", mode);
  return buf;
}

std::optional<uint32_t> parse_mode(std::string_view text) {
  if (text == "100644") return kModeFile;
  if (text == "100755") return kModeExecutable;
  if (text == "120000") return kModeSymlink;
  return std::nullopt;
}

namespace {

Json files_json(const Diff& d) {
  Json files = Json::array();
  for (const auto& f : d.files) {
    Json j = {{"op", file_op_name(f.op)}, {"path", f.path}};
    if (f.old_path) j["old_path"] = *f.old_path;
    if (f.old_mode) j["old_mode"] = mode_string(*f.old_mode);
    if (f.new_mode) j["new_mode"] = mode_string(*f.new_mode);
    if (f.before_sha256) j["before_sha256"] = f.before_sha256->str();
    if (f.after_sha256) j["after_sha256"] = f.after_sha256->str();
    if (f.after_content) {
      if (is_valid_utf8(*f.after_content)) j["after_content"] = *f.after_content;
      else j["after_content_base64"] = base64_encode(*f.after_content);
    }
    if (!f.hunks.empty()) {
      Json hunks = Json::array();
      for (const auto& h : f.hunks) {
        hunks.push_back({{"old_start", h.old_start},
                         {"old_lines", h.old_lines},
                         {"new_start", h.new_start},
                         {"new_lines", h.new_lines},
                         {"lines", h.lines}});
      }
      j["hunks"] = std::move(hunks);
    }
    files.push_back(std::move(j));
  }
  return files;
}

}  // namespace

Digest Diff::digest() const {
  Json body = {{"step_id", step_id}, {"files", files_json(*this)}};
  auto canonical = canonicalize(body);
  // Every string here is valid UTF-8 (from_json and the patch builder guarantee it; raw
  // bytes go through base64), so canonicalization cannot fail.
  return sha256(canonical.value_or(""));
}

Json Diff::to_json() const {
  return {{"step_id", step_id}, {"files", files_json(*this)}, {"diff_sha256", digest().str()}};
}

Checked<Diff> Diff::from_json(const Json& json) {
  if (!json.is_object()) return std::unexpected(bad("diff", "must be a JSON object"));
  for (const auto& [key, value] : json.items()) {
    if (key != "step_id" && key != "files" && key != "diff_sha256") return std::unexpected(bad("diff", "unknown field \"" + key + "\""));
  }
  Diff d;
  const Json* step = field(json, "step_id");
  if (!step || !step->is_string()) return std::unexpected(bad("step_id", "must be a string"));
  d.step_id = step->get<std::string>();
  const Json* files = field(json, "files");
  if (!files || !files->is_array()) return std::unexpected(bad("files", "must be an array"));
  static const std::vector<std::string> kKnown = {"op",           "path",         "old_path",      "old_mode",
                                                  "new_mode",     "before_sha256", "after_sha256", "after_content",
                                                  "after_content_base64", "hunks"};
  for (size_t i = 0; i < files->size(); ++i) {
    const Json& j = (*files)[i];
    std::string where = "files[" + std::to_string(i) + "]";
    if (!j.is_object()) return std::unexpected(bad(where, "must be an object"));
    for (const auto& [key, value] : j.items()) {
      if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
        return std::unexpected(bad(where, "unknown field \"" + key + "\""));
      }
    }
    FileChange f;
    auto op = opt_string(j, "op", where);
    if (!op) return std::unexpected(op.error());
    if (!*op) return std::unexpected(bad(where + ".op", "is required"));
    if (**op == "add") f.op = FileOp::add;
    else if (**op == "modify") f.op = FileOp::modify;
    else if (**op == "delete") f.op = FileOp::remove;
    else if (**op == "rename") f.op = FileOp::rename;
    else if (**op == "copy") f.op = FileOp::copy;
    else return std::unexpected(bad(where + ".op", "must be add, modify, delete, rename or copy"));
    auto path = opt_string(j, "path", where);
    auto old_path = opt_string(j, "old_path", where);
    auto old_mode = opt_mode(j, "old_mode", where);
    auto new_mode = opt_mode(j, "new_mode", where);
    auto before = opt_digest(j, "before_sha256", where);
    auto after = opt_digest(j, "after_sha256", where);
    auto text = opt_string(j, "after_content", where);
    auto b64 = opt_string(j, "after_content_base64", where);
    for (auto* r : {&path, &old_path, &text, &b64}) {
      if (!*r) return std::unexpected(r->error());
    }
    if (!old_mode) return std::unexpected(old_mode.error());
    if (!new_mode) return std::unexpected(new_mode.error());
    if (!before) return std::unexpected(before.error());
    if (!after) return std::unexpected(after.error());
    if (!*path) return std::unexpected(bad(where + ".path", "is required"));
    f.path = **path;
    f.old_path = *old_path;
    f.old_mode = *old_mode;
    f.new_mode = *new_mode;
    f.before_sha256 = *before;
    f.after_sha256 = *after;
    if (*text && *b64) return std::unexpected(bad(where, "carries both after_content and after_content_base64"));
    if (*text) f.after_content = **text;
    if (*b64) {
      auto raw = base64_decode(**b64);
      if (!raw) return std::unexpected(bad(where + ".after_content_base64", raw.error().message));
      f.after_content = std::move(*raw);
    }
    if (const Json* hunks = field(j, "hunks")) {
      if (!hunks->is_array()) return std::unexpected(bad(where + ".hunks", "must be an array"));
      for (size_t h = 0; h < hunks->size(); ++h) {
        auto hunk = hunk_from_json((*hunks)[h], where + ".hunks[" + std::to_string(h) + "]");
        if (!hunk) return std::unexpected(hunk.error());
        f.hunks.push_back(std::move(*hunk));
      }
    }
    if (auto shape = check_shape(f, where); !shape) return std::unexpected(shape.error());
    d.files.push_back(std::move(f));
  }
  if (const Json* claimed = field(json, "diff_sha256")) {
    auto parsed = claimed->is_string() ? Digest::parse(claimed->get<std::string>()) : fail(Errc::invalid_argument, "");
    if (!parsed) return std::unexpected(bad("diff_sha256", "must be sha256:<64 hex>"));
    if (*parsed != d.digest()) {
      return std::unexpected(Refusal{RefusalCode::hash_mismatch, "", "diff_sha256 " + parsed->str() +
                                                              " does not match the diff's content (" + d.digest().str() + ")"});
    }
  }
  return d;
}

}  // namespace warden
