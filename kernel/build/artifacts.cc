#include "kernel/build/artifacts.h"

#include "diff/diff_apply.h"

namespace warden::kernel {

std::string mime_type_for(std::string_view path, std::string_view type) {
  auto ends = [&](std::string_view s) { return path.ends_with(s); };
  if (ends(".py")) return "text/x-python";
  if (ends(".c") || ends(".h")) return "text/x-c";
  if (ends(".cc") || ends(".cpp") || ends(".hpp") || ends(".cxx")) return "text/x-c++";
  if (ends(".md")) return "text/markdown";
  if (ends(".json")) return "application/json";
  if (ends(".txt") || ends(".toml") || ends(".cfg") || ends(".ini")) return "text/plain";
  if (ends("Makefile") || ends(".mk")) return "text/x-makefile";
  if (ends(".sh")) return "text/x-shellscript";
  if (type == "binary") return "application/x-executable";
  return "application/octet-stream";
}

std::vector<Artifact> record_artifacts(RunRecorder& rec, const BuildStep& step, int64_t step_index, const Attempt& attempt) {
  std::vector<Artifact> out;
  if (!attempt.proposed.diff || !attempt.tested) return out;
  // The written files: the accepted diff resolved against the pre-images decide() judged.
  MemoryFileTree base;
  for (const auto& [path, image] : attempt.proposed.evidence.base) {
    if (image.content) base.put(path, *image.content, image.mode);
  }
  auto resolved = resolve_diff(*attempt.proposed.diff, base);
  if (!resolved) return out;
  const std::string type = step.produces.empty() ? "file" : step.produces.front();
  for (const auto& f : *resolved) {
    if (!f.content) continue;
    auto digest = rec.ledger().put_blob(*f.content);
    if (!digest) continue;
    Artifact a;
    a.artifact_id = rec.next_id("art");
    a.type = type;
    a.mime_type = mime_type_for(f.path);
    a.path = f.path;
    a.size_bytes = f.content->size();
    a.digest = Digest::parse(*digest).value();
    a.created_at = rec.now();
    rec.emit(RunEventType::artifact_created, step_index, std::nullopt, a.to_json());
    out.push_back(std::move(a));
  }
  // What the checks declared and left behind: the runner kept their bytes as it ran.
  for (const auto& check : attempt.tested->run.checks) {
    if (check.runs.empty()) continue;
    for (const auto& declared : check.runs.front().artifacts) {
      if (!declared.present || !declared.sha256) continue;
      Artifact a;
      a.artifact_id = rec.next_id("art");
      a.type = declared.type;
      a.mime_type = mime_type_for(declared.path, declared.type);
      a.path = declared.path;
      a.size_bytes = declared.bytes;
      a.digest = *declared.sha256;
      a.check = check.name;
      a.created_at = rec.now();
      rec.emit(RunEventType::artifact_created, step_index, "runner", a.to_json());
      out.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace warden::kernel
