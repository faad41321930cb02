// A pipeline run's events read back from its records (service/pipeline_events.h) are the
// events the live executor emitted, byte for byte in the stream's schema (event ids
// included): runs in-process with a journal that keeps the records, then every record
// mapped back and compared with what the executor's subscribers saw.
#include "service/pipeline_events.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "kernel/record/event_stream.h"
#include "tests/executor/harness.h"

namespace warden::service {
namespace {

using executor::ExecutionEvent;
using executor::StageContext;
using executor::StageResult;
using executor::StoredRecord;
using executor::testing::always;
using executor::testing::Harness;
using executor::testing::output;
using executor::testing::sequence;

// The journal a ledger would be: records numbered from 1, blobs by digest.
class MemoryJournal final : public executor::RunJournal {
 public:
  Status append(std::string_view kind, const Json& payload, int64_t at) override {
    records.push_back(StoredRecord{records.size() + 1, std::string(kind), at, payload});
    return {};
  }
  Result<std::string> put_blob(std::string_view bytes, std::string_view digest) override {
    std::string name = digest.empty() ? sha256(bytes).str() : std::string(digest);
    blobs[name] = std::string(bytes);
    return name;
  }
  Status commit(bool) override { return {}; }

  BlobReader reader() const {
    return [this](std::string_view digest) -> Result<std::string> {
      auto it = blobs.find(std::string(digest));
      if (it == blobs.end()) return fail(Errc::not_found, "no blob " + std::string(digest));
      return it->second;
    };
  }

  std::vector<StoredRecord> records;
  std::map<std::string, std::string> blobs;
};

// A harness whose executor writes to a MemoryJournal.
struct JournaledHarness {
  explicit JournaledHarness(std::string_view config, const executor::testing::StageFns& fns = {}) : h(config, fns) {
    h.exec.set_journal(&journal);
  }
  MemoryJournal journal;
  Harness h;
};

std::vector<Json> shown(const std::vector<ExecutionEvent>& events) {
  std::vector<Json> out;
  for (const ExecutionEvent& e : events) out.push_back(kernel::stream_event_json(e));
  return out;
}

// Every record mapped back, in order, as the stream shows them.
std::vector<Json> read_back(const MemoryJournal& journal) {
  std::vector<ExecutionEvent> events;
  for (const StoredRecord& record : journal.records) {
    auto mapped = pipeline_record_events(record, journal.reader());
    EXPECT_TRUE(mapped) << record.kind << ": " << mapped.error().message;
    if (mapped) events.insert(events.end(), mapped->begin(), mapped->end());
  }
  return shown(events);
}

void expect_same_stream(const JournaledHarness& run) {
  const std::vector<Json> live = shown(run.h.events);
  const std::vector<Json> recorded = read_back(run.journal);
  ASSERT_FALSE(live.empty());
  ASSERT_EQ(recorded.size(), live.size());
  for (size_t i = 0; i < live.size(); ++i) EXPECT_EQ(recorded[i], live[i]) << "event " << i;
}

TEST(PipelineEvents, ACycleWithItsCheckpointReadsBackAsEmitted) {
  JournaledHarness run(R"({"name": "reintent", "max_iterations": 10, "stages": [
    {"name": "intent", "kind": "constant", "params": {"output": {"intent": "x"}}, "default_next": "critic"},
    {"name": "critic", "kind": "constant", "params": {"output": {}},
     "routing": [{"when": {"field": "verdict", "op": "equals", "value": "reintent"}, "next": "intent"}]}],
    "edge_limits": [{"from": "critic", "to": "intent", "max_count": 3}]})",
                       {{"critic", sequence({{{"verdict", "reintent"}}, {{"verdict", "approved"}}}, 2)}});
  run.h.run();
  expect_same_stream(run);
  EXPECT_EQ(run.h.event_types().back(), "pipeline_completed");
}

TEST(PipelineEvents, FailuresParallelBatchesAndBoundsReadBackAsEmitted) {
  {
    JournaledHarness run(R"({"name": "err", "stages": [
      {"name": "build", "kind": "constant", "params": {"output": {}}, "error_next": "fix", "default_next": "end"},
      {"name": "fix", "kind": "constant", "params": {"output": {"fixed": true}}, "default_next": "build"}]})",
                         {{"build", [calls = std::make_shared<int>(0)](const StageContext&) {
                             return ++*calls == 1 ? StageResult::failure("compile error", 2) : output({{"ok", true}});
                           }}});
    run.h.run();
    expect_same_stream(run);
  }
  {
    JournaledHarness run(R"({"name": "fan", "stages": [
      {"name": "split", "kind": "constant", "params": {"output": {"n": 3}}, "default_next": ["a", "b", "c"]},
      {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
      {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
      {"name": "c", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
      {"name": "join", "kind": "join", "requires": ["a", "b", "c"]}]})");
    run.h.run();
    expect_same_stream(run);
  }
  {  // Ended before a step, not by one: pipeline_completed from a record of its own.
    JournaledHarness run(R"({"name": "llm", "max_llm_calls": 7, "max_iterations": 100, "stages": [
      {"name": "a", "kind": "constant", "params": {"output": {}, "llm_calls": 3}, "default_next": "a"}]})");
    run.h.run();
    expect_same_stream(run);
  }
}

TEST(PipelineEvents, AnInterruptAndItsResumeReadBackAsEmitted) {
  JournaledHarness run(R"({"name": "approval", "stages": [
    {"name": "draft", "kind": "constant", "params": {"output": {"text": "notes"}}, "default_next": "approve"},
    {"name": "approve", "kind": "approval", "params": {"question": "Publish?"},
     "routing": [{"when": {"field": "approved", "op": "equals", "value": true}, "next": "publish"}]},
    {"name": "publish", "kind": "constant", "params": {"output": {"published": true}}}]})");
  executor::RunState state = run.h.run();
  ASSERT_TRUE(state.waiting());
  expect_same_stream(run);
  EXPECT_EQ(run.h.event_types().back(), "interrupt_raised:approve");
  ASSERT_TRUE(run.h.exec.resume(state, "yes"));
  ASSERT_TRUE(run.h.exec.run(state));
  expect_same_stream(run);
}

TEST(PipelineEvents, AStageResultKeptInTheBlobStoreIsReadFromIt) {
  JournaledHarness run(R"({"name": "big", "stages": [
    {"name": "a", "kind": "constant", "params": {"output": {}}}]})",
                       {{"a", always({{"text", std::string(40'000, 'x')}})}});
  run.h.run();
  ASSERT_FALSE(run.journal.blobs.empty());
  expect_same_stream(run);

  // Without its blob the record does not read.
  MemoryJournal missing;
  missing.records = run.journal.records;
  for (const StoredRecord& record : missing.records) {
    if (record.kind != executor::record_kind::step) continue;
    auto mapped = pipeline_record_events(record, missing.reader());
    ASSERT_FALSE(mapped);
    EXPECT_NE(mapped.error().message.find("result_blob"), std::string::npos) << mapped.error().message;
  }
}

TEST(PipelineEvents, OnTheWireAnEventKeepsItsStreamIdAndItsRecordsSeq) {
  JournaledHarness run(R"({"name": "one", "stages": [{"name": "a", "kind": "constant", "params": {"output": {"v": 1}}}]})");
  run.h.run();
  const StoredRecord* step = nullptr;
  for (const StoredRecord& record : run.journal.records) {
    if (record.kind == executor::record_kind::step) step = &record;
  }
  ASSERT_NE(step, nullptr);
  auto events = pipeline_record_events(*step, run.journal.reader());
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 2u);  // stage_started, stage_completed
  for (const ExecutionEvent& event : *events) {
    auto e = wire_event(event, step->seq);
    ASSERT_TRUE(e) << e.error().message;
    const Json expected = kernel::stream_event_json(event);
    EXPECT_EQ(e->event_id(), expected["event_id"]);
    EXPECT_EQ(e->type(), expected["type"]);
    EXPECT_EQ(e->tool_name(), "a");
    EXPECT_EQ(e->step_index(), 0);
    EXPECT_EQ(e->ledger_seq(), step->seq);
    EXPECT_EQ(Json::parse(e->data_json()), event.payload);
  }
}

TEST(PipelineEvents, RecordsTheExecutorEmitsNothingForShowNothing) {
  for (std::string_view kind : {executor::record_kind::run, executor::record_kind::resume, executor::record_kind::rollback}) {
    StoredRecord record{7, std::string(kind), 0, Json{{"run", "run-1"}}};
    auto mapped = pipeline_record_events(record, {});
    ASSERT_TRUE(mapped);
    EXPECT_TRUE(mapped->empty()) << kind;
  }
  StoredRecord broken{8, std::string(executor::record_kind::transition), 0, Json{{"run", "run-1"}, {"step", "one"}}};
  auto mapped = pipeline_record_events(broken, {});
  ASSERT_FALSE(mapped);
  EXPECT_EQ(mapped.error().code, Errc::corrupt);
}

}  // namespace
}  // namespace warden::service
