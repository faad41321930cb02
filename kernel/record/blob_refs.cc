#include "kernel/record/blob_refs.h"

#include <string>

#include "common/canonical_json.h"
#include "executor/run_records.h"
#include "kernel/record/records.h"

namespace warden::kernel {
namespace {

namespace exec = executor::record_kind;

// A run result's own blobs (RunResult::named_blobs): output bodies, report files, artifacts.
std::vector<BlobField> run_result_blobs() {
  return {{"run_result.checks[].runs[].stdout.blob"},
          {"run_result.checks[].runs[].stderr.blob"},
          {"run_result.checks[].runs[].report_blob"},
          {"run_result.checks[].runs[].artifacts[].sha256"}};
}

std::vector<std::string_view> run_result_digests() {
  return {"run_result_sha256",
          "run_result.tree_sha256",
          "run_result.diff_sha256",
          "run_result.profile_sha256",
          "run_result.toolchain_sha256",
          "run_result.toolchain.*",
          "run_result.checks[].spec_sha256",
          // Of the whole stream; the blob holds at most its first `cap` bytes.
          "run_result.checks[].runs[].stdout.sha256",
          "run_result.checks[].runs[].stderr.sha256"};
}

std::vector<RecordKindDigests> make_table() {
  return {
      {record_kind::run_status, {}, {}},
      // Only artifact_created events name a blob; the other events' data are free-form.
      {record_kind::run_event, {{"data.digest", "event_type", "artifact_created"}}, {"data.*"}},
      {record_kind::blueprint, {}, {"blueprint_sha256", "blueprint.*"}},
      {record_kind::policy, {}, {"policy_sha256", "policy.programs.*"}},
      {record_kind::plan_proposal, {}, {"plan_sha256", "plan.*"}},
      {record_kind::plan_commit, {}, {"plan_sha256", "blueprint_sha256"}},
      {record_kind::proposal, {{"evidence_blob"}}, {"diff_sha256"}},
      {record_kind::run_result, run_result_blobs(), run_result_digests()},
      {record_kind::base_run, run_result_blobs(), run_result_digests()},
      {record_kind::oracle_run, run_result_blobs(), run_result_digests()},
      {record_kind::decision, {}, {"plan_sha256", "policy_sha256"}},
      // A plan that was not even a plan keeps its text as a blob; a proposal refusal's
      // evidence are record hashes.
      {record_kind::refusal, {{"plan_blob"}}, {"plan_sha256", "report.evidence[]", "report.seed_sha256"}},
      {record_kind::commit_intent, {}, {"plan_sha256", "policy_sha256", "proposal_sha256", "run_result_sha256", "held_out_sha256"}},
      {record_kind::commit, {}, {"plan_sha256", "policy_sha256", "proposal_sha256", "run_result_sha256", "held_out_sha256"}},
      {record_kind::step_evidence, {{"artifacts[].digest"}}, {"input.step_sha256"}},
      {record_kind::speculation, {}, {"diff_sha256"}},
      {record_kind::held_out_run, {}, {"held_out_sha256", "result_commitment"}},
      {record_kind::held_out_reveal, {{"files[].blob"}, {"runs[].blob"}, {"runs[].bodies[]"}}, {"held_out_sha256", "runs[].run_result_sha256"}},
      // The executor's: large values live in the blob store under `<key>_blob`.
      {exec::run, {{"config"}, {"envelope_blob"}}, {"envelope.*", "launch.*"}},
      {exec::step, {{"stages[].result_blob"}}, {"stages[].result.*"}},
      {exec::transition, {}, {"detail.*"}},
      {exec::checkpoint, {{"envelope"}}, {}},
      {exec::resume, {}, {}},
      {exec::rollback, {}, {}},
      {exec::end, {}, {"detail.*"}},
  };
}

// Every value at `path` under `node`, with the concrete path to it ("checks[2].runs[0]...").
void collect(const Json& node, std::string_view path, const std::string& where,
             std::vector<std::pair<std::string, const Json*>>& out) {
  if (path.empty()) {
    out.emplace_back(where, &node);
    return;
  }
  size_t dot = path.find('.');
  std::string_view segment = path.substr(0, dot);
  std::string_view rest = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  const bool each = segment.ends_with("[]");
  if (each) segment.remove_suffix(2);
  if (!node.is_object()) return;
  auto it = node.find(segment);
  if (it == node.end()) return;
  std::string here = where.empty() ? std::string(segment) : where + "." + std::string(segment);
  if (!each) return collect(*it, rest, here, out);
  if (!it->is_array()) return;
  for (size_t i = 0; i < it->size(); ++i) collect((*it)[i], rest, here + "[" + std::to_string(i) + "]", out);
}

class KernelBlobReferences final : public BlobReferences {
 public:
  KernelBlobReferences() : table_(make_table()) {}

  const std::vector<RecordKindDigests>& table() const { return table_; }

  Result<std::vector<BlobReference>> of(const RecordView& record) const override {
    std::vector<BlobReference> out;
    const RecordKindDigests* entry = find(record.kind);
    // Every blob field holds "sha256:...": a payload without one names no blob, and most
    // records (run events) are passed over without being parsed.
    if (!entry || entry->blobs.empty() || record.payload.find("sha256:") == std::string_view::npos) return out;
    auto payload = parse_json(record.payload, "payload");
    if (!payload) return std::unexpected(payload.error());
    std::vector<std::pair<std::string, const Json*>> values;
    for (const BlobField& field : entry->blobs) {
      if (!field.when_field.empty()) {
        auto when = payload->is_object() ? payload->find(field.when_field) : payload->end();
        if (when == payload->end() || !when->is_string() || when->get<std::string>() != field.when_value) continue;
      }
      values.clear();
      collect(*payload, field.path, "", values);
      for (const auto& [where, value] : values) {
        if (value->is_null() || (value->is_string() && value->get_ref<const std::string&>().empty())) continue;
        auto digest = value->is_string() ? Digest::parse(value->get_ref<const std::string&>())
                                         : Result<Digest>(fail(Errc::corrupt, "not a string"));
        if (!digest) return fail(Errc::corrupt, where + " should name a blob by its sha256 digest: " + digest.error().message);
        // A check run that never started captured nothing: its evidence carries the zero digest.
        if (digest->is_zero()) continue;
        out.push_back(BlobReference{where, *digest});
      }
    }
    return out;
  }

 private:
  const RecordKindDigests* find(std::string_view kind) const {
    for (const auto& entry : table_) {
      if (entry.kind == kind) return &entry;
    }
    return nullptr;
  }

  std::vector<RecordKindDigests> table_;
};

const KernelBlobReferences& kernel_blob_references() {
  static const KernelBlobReferences references;
  return references;
}

}  // namespace

const std::vector<RecordKindDigests>& record_kind_digests() { return kernel_blob_references().table(); }

const BlobReferences& blob_references() { return kernel_blob_references(); }

}  // namespace warden::kernel
