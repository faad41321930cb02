// Runs recorded in a real ledger through the kernel's LedgerWriter: replay rebuilds exactly
// the live run, the same inputs give byte-identical records, a paused or crashed run resumes
// from the ledger, and a ledger that disagrees with its replay is refused. Then the writer's
// own promises: names, batches and the failure rule.
#include "kernel/record/ledger_writer.h"

#include <gtest/gtest.h>

#include "executor/replay.h"
#include "kernel/record/run_reader.h"
#include "ledger/note.h"
#include "ledger/verify.h"
#include "tests/executor/harness.h"
#include "tests/support/test_dir.h"

namespace warden::executor {
namespace {

using kernel::LedgerWriter;
using kernel::load_run;

using testing::always;
using testing::moves;
using testing::reason_of;
using testing::sequence;

constexpr const char* kLoop = R"({"name": "loop", "stages": [
  {"name": "plan", "kind": "constant", "params": {"output": {"plan": "p"}, "llm_calls": 1}, "default_next": "code"},
  {"name": "code", "kind": "constant", "params": {"output": {"patch": "d"}, "llm_calls": 2}, "default_next": "critic"},
  {"name": "critic", "kind": "constant", "params": {"output": {}},
   "routing": [{"when": {"field": "verdict", "op": "equals", "value": "reintent"}, "next": "plan"}]}],
  "edge_limits": [{"from": "critic", "to": "plan", "max_count": 2}], "max_iterations": 5, "max_llm_calls": 50})";

constexpr const char* kApproval = R"({"name": "approval", "stages": [
  {"name": "draft", "kind": "constant", "params": {"output": {"text": "notes"}}, "default_next": ["approve", "lint"]},
  {"name": "approve", "kind": "approval", "params": {"question": "Publish?"},
   "routing": [{"when": {"field": "approved", "op": "equals", "value": true}, "next": "publish"}]},
  {"name": "lint", "kind": "constant", "params": {"output": {"ok": true}}},
  {"name": "publish", "kind": "constant", "params": {"output": {"published": true}}}]})";

// A ledger in a temp dir, with its own logical clock.
struct LedgerFixture {
  LedgerFixture() {
    auto signer = NoteSigner::generate("test.local/pipeline");
    EXPECT_TRUE(signer);
    auto st = Ledger::create(dir / "ledger", {"test.local/pipeline", signer->verifier().encoded()});
    EXPECT_TRUE(st) << st.error().message;
    auto opened = Ledger::open(dir / "ledger", Ledger::Mode::read_write, clock);
    EXPECT_TRUE(opened) << opened.error().message;
    ledger.emplace(std::move(*opened));
  }
  warden::testing::TempDir dir;
  LogicalClock clock{1000, 1};
  SequentialIdSource ids;
  std::optional<Ledger> ledger;
};

// An executor over `config` recording into the fixture's ledger.
struct Recorder {
  Recorder(LedgerFixture& f, const PipelineConfig& config, const testing::StageFns& fns, size_t flush_every = 1)
      : journal(*f.ledger, {.flush_every_steps = flush_every}), exec(config, testing::make_agents(config, fns), f.clock, f.ids) {
    exec.set_journal(&journal);
  }
  LedgerWriter journal;
  PipelineExecutor exec;
};

RunState replayed(const Ledger& ledger, const PipelineConfig& config, const std::string& run_id) {
  auto stored = load_run(ledger, run_id);
  if (!stored) throw std::runtime_error(stored.error().message);
  auto state = replay_run(config, *stored);
  if (!state) throw std::runtime_error(state.error().message);
  return std::move(*state);
}

void expect_same_run(const RunState& a, const RunState& b) {
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.envelope, b.envelope);
  EXPECT_EQ(a.transitions, b.transitions);
  EXPECT_EQ(a.edge_counts, b.edge_counts);
  EXPECT_EQ(a.step, b.step);
  ASSERT_EQ(a.checkpoints.size(), b.checkpoints.size());
  for (size_t i = 0; i < a.checkpoints.size(); ++i) {
    EXPECT_EQ(a.checkpoints[i].id, b.checkpoints[i].id);
    EXPECT_EQ(a.checkpoints[i].envelope, b.checkpoints[i].envelope);
  }
}

RunState run_loop(LedgerFixture& f, const PipelineConfig& config, size_t flush_every = 1) {
  Recorder r(f, config, {{"critic", always({{"verdict", "reintent"}})}}, flush_every);
  RunInput input;
  input.raw_input = "build it";
  auto run = r.exec.start(input, Json{{"base_dir", "/x"}});
  EXPECT_TRUE(run);
  EXPECT_TRUE(r.exec.run(*run));
  return std::move(*run);
}

TEST(RunStore, ReplayRebuildsTheLiveRun) {
  LedgerFixture f;
  auto config = testing::parse_config(kLoop);
  RunState live = run_loop(f, config);
  ASSERT_EQ(reason_of(live), TerminalReason::edge_limit_exceeded);
  RunState back = replayed(*f.ledger, config, live.run_id);
  expect_same_run(live, back);

  auto stored = load_run(*f.ledger, live.run_id);
  ASSERT_TRUE(stored);
  auto start = parse_run_start(*stored);
  ASSERT_TRUE(start);
  EXPECT_EQ(start->config, config.source);
  EXPECT_EQ(stored->records.front().payload["config"], config.digest);
  EXPECT_EQ(start->launch["base_dir"], "/x");
  // One start, 9 steps, 9 transitions, 2 checkpoints, one end; each step durable on its own.
  size_t kinds[5] = {};
  for (const auto& r : stored->records) {
    kinds[0] += r.kind == "pipeline_step";
    kinds[1] += r.kind == "transition";
    kinds[2] += r.kind == "checkpoint";
    kinds[3] += r.kind == "pipeline_end";
    kinds[4] += r.kind == "pipeline_run";
  }
  EXPECT_EQ(std::vector<size_t>(kinds, kinds + 5), (std::vector<size_t>{9, 9, 2, 1, 1}));
  auto verified = verify_ledger(*f.ledger, {});
  ASSERT_TRUE(verified);
  EXPECT_TRUE(verified->ok());
  // The checkpoint's envelope is in the blob store under the digest the record names.
  for (const auto& r : stored->records) {
    if (r.kind != "checkpoint") continue;
    auto bytes = stored->blob(r.payload["envelope"].get<std::string>());
    ASSERT_TRUE(bytes);
    auto env = envelope_from_json(Json::parse(*bytes));
    ASSERT_TRUE(env);
    EXPECT_EQ(env->current_stage, "plan");
  }
}

TEST(RunStore, SameInputsGiveByteIdenticalLedgers) {
  auto config = testing::parse_config(kLoop);
  auto record_bytes = [&] {
    LedgerFixture f;
    run_loop(f, config);
    std::vector<std::string> out;
    auto snap = f.ledger->snapshot();
    for (uint64_t seq = 0; seq < snap->size(); ++seq) out.push_back(snap->record(seq)->canonical_bytes());
    out.push_back(snap->root()->hex());
    return out;
  };
  auto first = record_bytes();
  EXPECT_EQ(first.size(), 23u);  // 22 records (start, 9 steps, 9 transitions, 2 checkpoints, end) and the root
  EXPECT_EQ(first, record_bytes());
}

TEST(RunStore, BatchedJournalWritesTheSameRecords) {
  auto config = testing::parse_config(kLoop);
  LedgerFixture one, batched;
  run_loop(one, config, 1);
  run_loop(batched, config, 1000);  // everything in one transaction at the end
  EXPECT_EQ(one.ledger->snapshot()->root()->hex(), batched.ledger->snapshot()->root()->hex());
}

TEST(RunStore, InterruptedRunResumesFromTheLedger) {
  LedgerFixture f;
  auto config = testing::parse_config(kApproval);
  std::string run_id;
  {
    Recorder r(f, config, {});
    auto run = r.exec.start(RunInput{});
    ASSERT_TRUE(run);
    ASSERT_TRUE(r.exec.run(*run));
    ASSERT_TRUE(run->waiting());
    EXPECT_EQ(run->envelope.outputs.at("lint")["ok"], true);  // the parallel branch went on
    run_id = run->run_id;
  }  // the process that started the run is gone
  RunState back = replayed(*f.ledger, config, run_id);
  ASSERT_TRUE(back.waiting());
  EXPECT_EQ(back.envelope.interrupt->question, "Publish?");

  Recorder r(f, config, {});
  ASSERT_TRUE(r.exec.resume(back, "approved"));
  ASSERT_TRUE(r.exec.run(back));
  EXPECT_EQ(reason_of(back), TerminalReason::completed);
  EXPECT_EQ(back.envelope.outputs.at("publish")["published"], true);
  expect_same_run(back, replayed(*f.ledger, config, run_id));
}

// Commits fail from the Nth on, the way a process dies mid-run: whatever was not flushed is
// lost with it.
class DyingJournal final : public RunJournal {
 public:
  DyingJournal(Ledger& ledger, int commits_left) : inner_(ledger, {.flush_every_steps = 1}), left_(commits_left) {}
  Status append(std::string_view kind, const Json& payload, int64_t at) override { return inner_.append(kind, payload, at); }
  Result<std::string> put_blob(std::string_view bytes, std::string_view digest) override {
    return inner_.put_blob(bytes, digest);
  }
  Status commit(bool now) override {
    if (left_-- <= 0) return fail(Errc::io_error, "the process died");
    return inner_.commit(now);
  }

 private:
  LedgerWriter inner_;
  int left_;
};

TEST(RunStore, CrashedRunResumesFromItsLastCommittedStep) {
  auto config = testing::parse_config(kLoop);
  LedgerFixture reference;
  RunState expected = run_loop(reference, config);

  LedgerFixture f;
  testing::StageFns fns{{"critic", always({{"verdict", "reintent"}})}};
  std::string run_id;
  {
    DyingJournal journal(*f.ledger, 5);  // the start and four steps reach the ledger
    PipelineExecutor exec(config, testing::make_agents(config, fns), f.clock, f.ids);
    exec.set_journal(&journal);
    auto run = exec.start(RunInput{});
    ASSERT_TRUE(run);
    auto st = exec.run(*run);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().message, "the process died");
    run_id = run->run_id;
  }
  RunState back = replayed(*f.ledger, config, run_id);
  EXPECT_EQ(back.step, 4u);
  EXPECT_FALSE(back.ended());
  PipelineExecutor exec(config, testing::make_agents(config, fns), f.clock, f.ids);
  LedgerWriter journal(*f.ledger, {.flush_every_steps = 1});
  exec.set_journal(&journal);
  ASSERT_TRUE(exec.run(back));
  EXPECT_EQ(moves(back), moves(expected));
  EXPECT_EQ(reason_of(back), TerminalReason::edge_limit_exceeded);
  EXPECT_EQ(back.envelope.llm_call_count, expected.envelope.llm_call_count);
  RunState again = replayed(*f.ledger, config, run_id);
  expect_same_run(back, again);
}

TEST(RunStore, RollbackAndCancelAreRecordedAndReplayed) {
  LedgerFixture f;
  auto config = testing::parse_config(kLoop);
  Recorder r(f, config, {{"critic", sequence({{{"verdict", "reintent"}}})}});
  auto run = r.exec.start(RunInput{});
  ASSERT_TRUE(run);
  ASSERT_TRUE(r.exec.run(*run));
  ASSERT_TRUE(r.exec.rollback(*run, run->checkpoints.front().id));
  std::stop_source stop;
  stop.request_stop();
  ASSERT_TRUE(r.exec.run(*run, stop.get_token()));
  EXPECT_EQ(reason_of(*run), TerminalReason::cancelled);
  expect_same_run(*run, replayed(*f.ledger, config, run->run_id));
}

TEST(RunStore, LargeResultsLiveInTheBlobStore) {
  LedgerFixture f;
  auto config = testing::parse_config(R"({"name": "big", "stages": [{"name": "a", "kind": "constant", "params": {"output": {}}}]})");
  std::string big(40'000, 'x');
  Recorder r(f, config, {{"a", always({{"text", big}})}});
  auto run = r.exec.start(RunInput{});
  ASSERT_TRUE(run);
  ASSERT_TRUE(r.exec.run(*run));
  auto stored = load_run(*f.ledger, run->run_id);
  ASSERT_TRUE(stored);
  const Json& step = stored->records[1].payload;
  ASSERT_EQ(stored->records[1].kind, "pipeline_step");
  EXPECT_FALSE(step["stages"][0].contains("result"));
  EXPECT_TRUE(step["stages"][0]["result_blob"].get<std::string>().starts_with("sha256:"));
  RunState back = replayed(*f.ledger, config, run->run_id);
  EXPECT_EQ(back.envelope.outputs.at("a")["text"], big);
}

TEST(RunStore, RunsShareALedger) {
  LedgerFixture f;
  auto approval = testing::parse_config(kApproval);
  auto loop = testing::parse_config(kLoop);
  Recorder a(f, approval, {});
  auto waiting = a.exec.start(RunInput{});
  ASSERT_TRUE(waiting);
  ASSERT_TRUE(a.exec.run(*waiting));
  RunState other = run_loop(f, loop);  // a whole run in between
  ASSERT_TRUE(a.exec.resume(*waiting, "yes"));
  ASSERT_TRUE(a.exec.run(*waiting));
  expect_same_run(*waiting, replayed(*f.ledger, approval, waiting->run_id));
  expect_same_run(other, replayed(*f.ledger, loop, other.run_id));

  auto missing = load_run(*f.ledger, "run-nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

TEST(RunStore, ReplayRefusesRecordsThatDisagree) {
  LedgerFixture f;
  auto config = testing::parse_config(kLoop);
  RunState live = run_loop(f, config);
  auto stored = load_run(*f.ledger, live.run_id);
  ASSERT_TRUE(stored);
  auto replay_error = [&](const StoredRun& s, const PipelineConfig& c) {
    auto state = replay_run(c, s);
    EXPECT_FALSE(state);
    return state ? std::string() : state.error().message;
  };
  auto find = [](StoredRun& s, std::string_view kind, int nth) -> StoredRecord& {
    for (auto& r : s.records) {
      if (r.kind == kind && nth-- == 0) return r;
    }
    throw std::runtime_error("no such record");
  };
  {  // A transition edited to say the critic approved.
    StoredRun s = *stored;
    find(s, "transition", 2).payload["to"] = "end";
    std::string e = replay_error(s, config);
    EXPECT_NE(e.find("recorded transition critic -> end"), std::string::npos) << e;
    EXPECT_NE(e.find("replay gives critic -> plan (reintent"), std::string::npos) << e;
  }
  {  // A stage result edited: the critic "approved", so replay ends where the record goes on.
    StoredRun s = *stored;
    find(s, "pipeline_step", 2).payload["stages"][0]["result"]["output"]["verdict"] = "approved";
    EXPECT_NE(replay_error(s, config).find("replay gives critic -> end (complete"), std::string::npos);
  }
  {  // A step removed.
    StoredRun s = *stored;
    auto& recs = s.records;
    recs.erase(std::find_if(recs.begin(), recs.end(), [](const auto& r) { return r.kind == "pipeline_step"; }));
    EXPECT_NE(replay_error(s, config).find("out of place"), std::string::npos);
  }
  {  // A different config (another edge limit) does not reproduce the run.
    auto other = testing::parse_config(std::string(kLoop).replace(std::string(kLoop).find("\"max_count\": 2"), 14, "\"max_count\": 3"));
    EXPECT_NE(replay_error(*stored, other).find("a config that is not the run's own"), std::string::npos);
  }
  {  // A checkpoint whose envelope digest was changed.
    StoredRun s = *stored;
    find(s, "checkpoint", 0).payload["envelope"] = "sha256:" + std::string(64, '0');
    EXPECT_NE(replay_error(s, config).find("recorded checkpoint cp-3 differs"), std::string::npos);
  }
}

// A record too large for the ledger is refused whole: nothing of the step is written.
TEST(RunStore, OversizedRecordsFailCleanly) {
  warden::testing::TempDir dir;
  auto signer = NoteSigner::generate("test.local/small");
  ASSERT_TRUE(Ledger::create(dir / "ledger", {"test.local/small", signer->verifier().encoded(), 2048}));
  LogicalClock clock;
  SequentialIdSource ids;
  auto ledger = Ledger::open(dir / "ledger", Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger);
  auto config = testing::parse_config(R"({"name": "x", "stages": [{"name": "a", "kind": "constant", "params": {"output": {}}}]})");
  PipelineExecutor exec(config, testing::make_agents(config, {{"a", always({{"text", std::string(3000, 'y')}})}}), clock, ids);
  LedgerWriter journal(*ledger, {.flush_every_steps = 1});
  exec.set_journal(&journal);
  auto run = exec.start(RunInput{});
  ASSERT_TRUE(run);
  auto st = exec.run(*run);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::limit_exceeded);
  EXPECT_NE(st.error().message.find("pipeline_step record is"), std::string::npos);
  EXPECT_EQ(ledger->snapshot()->size(), 1u);  // the run start only
}

}  // namespace
}  // namespace warden::executor

namespace warden::kernel {
namespace {

using executor::LedgerFixture;

Result<Appended> named(LedgerWriter& w, int i) { return w.record_now("test", Json{{"i", i}}, 1000 + i); }

// A name exists only once the record is written: record_now() writes what is buffered before
// it, in order, and says where the record landed.
TEST(LedgerWriter, NamesRecordsWhereTheyLand) {
  LedgerFixture f;
  ASSERT_TRUE(f.ledger->append("test", Json{{"before", true}}));
  LedgerWriter w(*f.ledger);
  ASSERT_TRUE(w.append("test", Json{{"unnamed", 1}}, 999));
  EXPECT_EQ(f.ledger->snapshot()->size(), 1u);  // buffered only
  auto a = named(w, 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seq, 2u);
  auto snap = f.ledger->snapshot();
  ASSERT_EQ(snap->size(), 3u);
  EXPECT_EQ(snap->record(1)->payload, R"({"unnamed":1})");
  EXPECT_EQ(*snap->record_hash(2), a->hash);
}

// Another process appending between two of a run's records cannot make a name wrong: the
// second record lands after the other writer's and says so.
TEST(LedgerWriter, NamesFollowAnotherWritersRecords) {
  LedgerFixture f;
  LedgerWriter w(*f.ledger);
  auto a = named(w, 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seq, 0u);
  ASSERT_TRUE(w.append("test", Json{{"event", 1}}, 1));
  ASSERT_TRUE(f.ledger->append("other", Json{{"writer", "someone else"}}));  // takes seq 1
  auto b = named(w, 2);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->seq, 3u);
  auto snap = f.ledger->snapshot();
  ASSERT_EQ(snap->size(), 4u);
  EXPECT_EQ(snap->record(1)->kind, "other");
  EXPECT_EQ(snap->record(2)->payload, R"({"event":1})");
  EXPECT_EQ(*snap->record_hash(3), b->hash);
}

// The failure rule: a batch that cannot be written is not written at all, is reported failed
// and dropped; what follows is written normally.
TEST(LedgerWriter, FailedFlushDropsTheBatch) {
  LedgerFixture f;
  LedgerWriter w(*f.ledger);
  ASSERT_TRUE(w.put_blob("blob of the failed batch"));
  ASSERT_TRUE(w.append("test", Json{{"i", 1}}, 1));
  ASSERT_TRUE(w.append("bad kind!", Json{{"i", 2}}, 2));  // the ledger refuses the kind
  auto st = w.flush();
  ASSERT_FALSE(st);
  EXPECT_EQ(w.pending_records(), 0u);
  auto snap = f.ledger->snapshot();
  EXPECT_EQ(snap->size(), 0u);
  auto digest = sha256("blob of the failed batch");
  EXPECT_FALSE(snap->blob(digest));  // nothing of the failed batch was written

  ASSERT_TRUE(w.put_blob("blob of the failed batch"));  // forgotten with the batch: buffered again
  auto b = named(w, 3);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->seq, 0u);
  snap = f.ledger->snapshot();
  ASSERT_EQ(snap->size(), 1u);
  EXPECT_TRUE(snap->blob(digest));
}

// Records no one has named take the next free places, whoever wrote in between.
TEST(LedgerWriter, UnnamedRecordsLandAfterAnotherWriter) {
  LedgerFixture f;
  LedgerWriter w(*f.ledger, {.flush_every_steps = 1});
  ASSERT_TRUE(w.append("test", Json{{"i", 1}}, 1));
  ASSERT_TRUE(f.ledger->append("other", Json{{"writer", "someone else"}}));
  ASSERT_TRUE(w.append("test", Json{{"i", 2}}, 2));
  ASSERT_TRUE(w.commit(false));
  auto snap = f.ledger->snapshot();
  ASSERT_EQ(snap->size(), 3u);
  EXPECT_EQ(snap->record(0)->kind, "other");
  EXPECT_EQ(snap->record(1)->payload, R"({"i":1})");
  auto next = named(w, 3);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->seq, 3u);
}

TEST(LedgerWriter, OversizedRecordsAreRefusedWhenAdded) {
  warden::testing::TempDir dir;
  auto signer = NoteSigner::generate("test.local/small");
  ASSERT_TRUE(Ledger::create(dir / "ledger", {"test.local/small", signer->verifier().encoded(), 64}));
  LogicalClock clock;
  auto ledger = Ledger::open(dir / "ledger", Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger);
  LedgerWriter w(*ledger);
  ASSERT_TRUE(named(w, 1));
  auto big = w.record_now("test", Json{{"text", std::string(100, 'y')}}, 5);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, Errc::limit_exceeded);
  auto after = named(w, 2);  // the refused record took no place
  ASSERT_TRUE(after);
  EXPECT_EQ(after->seq, 1u);
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(ledger->snapshot()->size(), 2u);
}

TEST(LedgerWriter, FlushesEveryNStepsAndAtPausesAsConfigured) {
  LedgerFixture f;
  auto size = [&] { return f.ledger->snapshot()->size(); };
  {
    LedgerWriter w(*f.ledger, {.flush_every_steps = 2, .flush_at_pauses = false});
    ASSERT_TRUE(w.append("test", Json{{"i", 1}}, 1));
    ASSERT_TRUE(w.commit(false));
    EXPECT_EQ(size(), 0u);
    ASSERT_TRUE(w.commit(true));  // a pause, but pauses do not flush: the second step does
    EXPECT_EQ(size(), 1u);
    ASSERT_TRUE(w.append("test", Json{{"i", 2}}, 2));
    ASSERT_TRUE(w.commit(true));
    EXPECT_EQ(size(), 1u);
    EXPECT_EQ(w.pending_records(), 1u);
  }  // dropped with the writer, as a crash would drop it
  EXPECT_EQ(size(), 1u);
  LedgerWriter kernel_style(*f.ledger);  // the build loop's: steps never flush, pauses do
  ASSERT_TRUE(kernel_style.append("test", Json{{"i", 3}}, 3));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(kernel_style.commit(false));
  EXPECT_EQ(size(), 1u);
  ASSERT_TRUE(kernel_style.commit(true));
  EXPECT_EQ(size(), 2u);
}

}  // namespace
}  // namespace warden::kernel
