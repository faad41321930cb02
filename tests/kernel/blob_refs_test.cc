// The kernel's table of which records name blobs (kernel/record/blob_refs.h) must cover every
// record kind the kernel and the executor write and every digest their records carry: a new
// kind, or a new digest field, that is not listed fails here rather than going unchecked.
// Held to the real golden ledgers (every digest-valued field of every record) and to the
// source (every record_kind constant, every Digest field of a record struct).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/canonical_json.h"
#include "kernel/record/blob_refs.h"
#include "ledger/record.h"
#include "tests/support/files.h"

namespace warden::kernel {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = WARDEN_SOURCE_DIR;

const RecordKindDigests* entry_for(std::string_view kind) {
  for (const auto& e : record_kind_digests()) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

bool listed(const RecordKindDigests& e, const std::string& path) {
  for (const auto& f : e.blobs) {
    if (f.path == path) return true;
  }
  for (std::string_view other : e.other_digests) {
    if (other == path) return true;
    if (other.ends_with(".*") && path.starts_with(other.substr(0, other.size() - 1))) return true;
  }
  return false;
}

// A struct field is listed when a path of its kind ends in its name: the JSON may nest it
// ("input.step_sha256" holds StepEvidenceRecord::step_sha256).
bool listed_by_name(const RecordKindDigests& e, const std::string& name) {
  auto ends_in = [&](std::string_view path) { return path == name || path.ends_with("." + name); };
  for (const auto& f : e.blobs) {
    if (ends_in(f.path)) return true;
  }
  for (std::string_view other : e.other_digests) {
    if (ends_in(other)) return true;
  }
  return false;
}

// Every string that is a sha256 digest, by its path with array indices as "[]".
void digest_paths(const Json& node, const std::string& path, std::set<std::string>& out) {
  static const std::regex digest("^sha256:[0-9a-f]{64}$");
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) digest_paths(value, path.empty() ? key : path + "." + key, out);
  } else if (node.is_array()) {
    for (const auto& value : node) digest_paths(value, path + "[]", out);
  } else if (node.is_string() && std::regex_match(node.get<std::string>(), digest)) {
    out.insert(path);
  }
}

TEST(BlobRefs, EveryDigestInTheGoldenLedgersIsClassified) {
  size_t records = 0;
  for (const char* golden : {"calculator", "ringbuf"}) {
    auto text = test::read_file(kSource / "tests" / "golden" / golden / "records.jsonl");
    for (const auto& line : test::complete_lines(text)) {
      auto record = Record::from_canonical(line);
      ASSERT_TRUE(record) << record.error().message;
      ++records;
      const RecordKindDigests* e = entry_for(record->kind);
      ASSERT_NE(e, nullptr) << golden << " record " << record->seq << ": kind \"" << record->kind
                            << "\" is not in kernel/record/blob_refs.cc's table";
      std::set<std::string> paths;
      digest_paths(parse_json(record->payload).value(), "", paths);
      for (const auto& path : paths) {
        EXPECT_TRUE(listed(*e, path)) << golden << " record " << record->seq << " (" << record->kind
                                      << "): digest field " << path
                                      << " is neither a blob field nor another digest in kernel/record/blob_refs.cc";
      }
    }
  }
  EXPECT_GT(records, 100u);
}

std::string source(const fs::path& relative) { return test::read_file(kSource / relative); }

// Every `inline constexpr std::string_view x = "kind";` inside a `namespace record_kind {`.
std::set<std::string> source_kinds(const std::string& text) {
  std::set<std::string> out;
  static const std::regex block(R"(namespace record_kind \{([^}]*)\})");
  static const std::regex constant(R"re(std::string_view \w+ = "([a-z0-9_.-]+)")re");
  for (std::sregex_iterator b(text.begin(), text.end(), block), end; b != end; ++b) {
    std::string body = (*b)[1];
    for (std::sregex_iterator c(body.begin(), body.end(), constant); c != end; ++c) out.insert((*c)[1]);
  }
  return out;
}

TEST(BlobRefs, TheTableListsExactlyTheKindsTheSourceDefines) {
  std::set<std::string> kinds = source_kinds(source("kernel/record/records.h"));
  auto executor = source_kinds(source("executor/run_records.h"));
  ASSERT_GT(kinds.size(), 10u);
  ASSERT_GT(executor.size(), 5u);
  kinds.insert(executor.begin(), executor.end());
  std::set<std::string> table;
  for (const auto& e : record_kind_digests()) {
    EXPECT_TRUE(table.insert(std::string(e.kind)).second) << e.kind << " is listed twice";
  }
  EXPECT_EQ(kinds, table) << "a record kind was added or removed: list it (and the blobs it names) in kernel/record/blob_refs.cc";
}

// A record struct's Digest fields named *_blob or *_sha256 (kernel/record/records.h): each must be
// listed for the struct's kind, as a blob or as another digest.
TEST(BlobRefs, EveryDigestFieldOfARecordStructIsListed) {
  const std::string text = source("kernel/record/records.h");
  static const std::regex record_struct(R"(struct (\w+) \{\n  static constexpr std::string_view kind = record_kind::(\w+);([\s\S]*?)\n\};)");
  static const std::regex field(R"(\n  (?:std::optional<Digest>|Digest) (\w+);)");
  static const std::regex kind_value(R"re(inline constexpr std::string_view (\w+) = "([a-z0-9_.-]+)";)re");
  std::map<std::string, std::string> kind_of;
  for (std::sregex_iterator k(text.begin(), text.end(), kind_value), end; k != end; ++k) kind_of[(*k)[1]] = (*k)[2];
  size_t structs = 0, fields = 0;
  for (std::sregex_iterator s(text.begin(), text.end(), record_struct), end; s != end; ++s) {
    ++structs;
    std::string kind = kind_of.at((*s)[2]);
    const RecordKindDigests* e = entry_for(kind);
    ASSERT_NE(e, nullptr) << kind;
    std::string body = (*s)[3];
    for (std::sregex_iterator f(body.begin(), body.end(), field); f != end; ++f) {
      std::string name = (*f)[1];
      if (!name.ends_with("_blob") && !name.ends_with("_sha256")) continue;
      ++fields;
      EXPECT_TRUE(listed_by_name(*e, name)) << (*s)[1] << "::" << name << " (kind " << kind
                                    << ") is a digest field missing from kernel/record/blob_refs.cc's table";
    }
  }
  EXPECT_GT(structs, 10u);
  EXPECT_GT(fields, 10u);
}

Result<std::vector<BlobReference>> refs_of(std::string_view kind, const Json& payload) {
  std::string canonical = canonicalize(payload).value();
  RecordView view{7, kind, Digest(), 0, canonical};
  return blob_references().of(view);
}

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kZero = "sha256:" + std::string(64, '0');

TEST(BlobRefs, NestedFieldsAreNamedWithTheirIndices) {
  Json out_a = {{"blob", kA}};
  Json never_ran = {{"blob", kZero}};
  Json payload = {{"run_result",
                   {{"checks",
                     {{{"runs", {{{"stdout", never_ran}, {"stderr", never_ran}}}}},
                      {{"runs",
                        {{{"stdout", out_a},
                          {"stderr", never_ran},
                          {"report_blob", kB},
                          {"artifacts", {{{"present", false}}, {{"present", true}, {"sha256", kA}}}}}}}}}}}}};
  auto refs = refs_of("run_result", payload);
  ASSERT_TRUE(refs) << refs.error().message;
  std::vector<std::string> fields;
  for (const auto& r : *refs) fields.push_back(r.field + "=" + r.digest.str().substr(7, 1));
  EXPECT_EQ(fields, (std::vector<std::string>{"run_result.checks[1].runs[0].stdout.blob=a",
                                              "run_result.checks[1].runs[0].report_blob=b",
                                              "run_result.checks[1].runs[0].artifacts[1].sha256=a"}));
}

TEST(BlobRefs, OnlyArtifactEventsNameABlob) {
  auto artifact = refs_of("run_event", {{"event_type", "artifact_created"}, {"data", {{"digest", kA}}}});
  ASSERT_TRUE(artifact);
  ASSERT_EQ(artifact->size(), 1u);
  EXPECT_EQ((*artifact)[0].field, "data.digest");
  auto other = refs_of("run_event", {{"event_type", "tool_output"}, {"data", {{"digest", kA}}}});
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->empty());
}

TEST(BlobRefs, AMalformedBlobFieldIsAnErrorAndAnAbsentOneIsNone) {
  auto bad = refs_of("proposal", {{"evidence_blob", "sha256:not-hex"}, {"diff_sha256", kA}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("evidence_blob"), std::string::npos) << bad.error().message;
  auto absent = refs_of("proposal", {{"diff_sha256", kA}});
  ASSERT_TRUE(absent);
  EXPECT_TRUE(absent->empty());
  auto unknown = refs_of("note", {{"evidence_blob", kA}});
  ASSERT_TRUE(unknown);
  EXPECT_TRUE(unknown->empty());
}

}  // namespace
}  // namespace warden::kernel
