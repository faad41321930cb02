#include "executor/replay.h"

#include <utility>

#include "executor/step.h"

namespace warden::executor {
namespace {

std::string describe(const Transition& t) {
  std::string out = t.from + " -> " + t.to + " (" + std::string(transition_reason_name(t.reason)) + ", iteration " +
                    std::to_string(t.iteration) + ", at " + std::to_string(t.timestamp);
  if (!t.checkpoint.empty()) out += ", checkpoint " + t.checkpoint;
  if (!t.detail.empty()) out += ", " + t.detail;
  return out + ")";
}

class Replayer {
 public:
  Replayer(const PipelineConfig& config, const StoredRun& stored) : config_(config), stored_(stored) {}

  Result<RunState> run() {
    auto start = parse_run_start(stored_);
    if (!start) return std::unexpected(start.error());
    run_ = new_run_state(config_, start->run_id, std::move(start->envelope));
    const auto& records = stored_.records;
    for (next_ = 1; next_ < records.size();) {
      const StoredRecord& record = records[next_++];
      Status st = record.kind == record_kind::step ? step(record) : control(record);
      if (!st) return std::unexpected(st.error());
    }
    return std::move(run_);
  }

 private:
  Error diverges(const StoredRecord& record, const std::string& what) const {
    return Error{Errc::corrupt, "run " + run_.run_id + ", record " + std::to_string(record.seq) + " (" + record.kind +
                                    "): " + what + " (an edited ledger, or a config that is not the run's own)"};
  }

  // The record after a step that replay says must come; null when the run's records stop.
  const StoredRecord* expect(std::string_view kind) {
    if (next_ >= stored_.records.size()) return nullptr;
    const StoredRecord& r = stored_.records[next_];
    if (r.kind != kind) return nullptr;
    ++next_;
    return &r;
  }

  Status step(const StoredRecord& record) {
    uint64_t step = 0;
    int64_t at = 0;
    auto outcomes = parse_step_outcomes(config_, stored_, record, step, at);
    if (!outcomes) return std::unexpected(outcomes.error());
    if (run_.ended()) return std::unexpected(diverges(record, "a step after the run ended"));
    if (step != run_.step + 1) {
      return std::unexpected(diverges(record, "step " + std::to_string(step) + " follows step " + std::to_string(run_.step)));
    }
    StepApplied applied = apply_step(config_, run_, *outcomes, at);
    for (size_t i = applied.first_transition; i < run_.transitions.size(); ++i) {
      const Transition& expected = run_.transitions[i];
      const StoredRecord* r = expect(record_kind::transition);
      if (!r) return std::unexpected(diverges(record, "replay gives the transition " + describe(expected) + ", which is not recorded"));
      auto recorded = parse_transition(*r);
      if (!recorded) return std::unexpected(recorded.error());
      if (*recorded != expected) {
        return std::unexpected(diverges(*r, "recorded transition " + describe(*recorded) + ", replay gives " + describe(expected)));
      }
    }
    if (const Checkpoint* cp = applied.checkpoint) {
      const StoredRecord* r = expect(record_kind::checkpoint);
      if (!r) return std::unexpected(diverges(record, "replay takes checkpoint " + cp->id + ", which is not recorded"));
      auto recorded = parse_checkpoint(*r);
      if (!recorded) return std::unexpected(recorded.error());
      auto digest = envelope_digest(cp->envelope);
      if (!digest) return std::unexpected(digest.error());
      if (recorded->id != cp->id || recorded->stage != cp->stage || recorded->step != cp->step ||
          recorded->iteration != cp->iteration || recorded->created_at != cp->created_at ||
          recorded->envelope_digest != *digest) {
        return std::unexpected(diverges(*r, "recorded checkpoint " + recorded->id + " differs from replay's " + cp->id +
                                                " (stage, iteration, time or envelope digest)"));
      }
    }
    if (applied.ended) {
      const StoredRecord* r = expect(record_kind::end);
      if (!r) return std::unexpected(diverges(record, "replay ends the run here, but no pipeline_end is recorded"));
      auto end = parse_control(*r);
      if (!end) return std::unexpected(end.error());
      const Envelope& e = run_.envelope;
      if (end->reason != e.terminal_reason || end->detail != e.termination_reason.value_or("") ||
          end->at != e.completed_at.value_or(0)) {
        return std::unexpected(diverges(*r, "recorded end " + std::string(terminal_reason_name(end->reason)) +
                                                " differs from replay's " +
                                                std::string(terminal_reason_name(*e.terminal_reason))));
      }
    }
    return {};
  }

  Status control(const StoredRecord& record) {
    if (record.kind != record_kind::end && record.kind != record_kind::resume && record.kind != record_kind::rollback) {
      return std::unexpected(diverges(record, "a " + record.kind + " record out of place"));
    }
    auto c = parse_control(record);
    if (!c) return std::unexpected(c.error());
    if (c->step != run_.step) {
      return std::unexpected(diverges(record, "recorded after step " + std::to_string(c->step) + ", replay is at step " +
                                                  std::to_string(run_.step)));
    }
    if (record.kind == record_kind::end) {
      if (run_.ended()) return std::unexpected(diverges(record, "the run had already ended"));
      apply_end(run_, c->reason, c->detail, c->at);
      return {};
    }
    Status st = record.kind == record_kind::resume ? apply_resume(run_, c->response, c->at)
                                                   : apply_rollback(run_, c->checkpoint);
    if (!st) return std::unexpected(diverges(record, st.error().message));
    return {};
  }

  const PipelineConfig& config_;
  const StoredRun& stored_;
  RunState run_;
  size_t next_ = 0;
};

}  // namespace

Result<RunState> replay_run(const PipelineConfig& config, const StoredRun& stored) {
  return Replayer(config, stored).run();
}

Result<RecordedRun> read_recorded_run(RunReader& reader, std::string_view run_id) {
  auto stored = reader.load(run_id);
  if (!stored) return std::unexpected(stored.error());
  auto start = parse_run_start(*stored);
  if (!start) return std::unexpected(start.error());
  auto config = PipelineConfig::parse(start->config);
  if (!config) {
    return fail(Errc::corrupt, "the config recorded with run " + std::string(run_id) + ": " + config.error().message);
  }
  auto state = replay_run(*config, *stored);
  if (!state) return std::unexpected(state.error());
  return RecordedRun{std::move(*start), std::move(*config), std::move(*state), stored->records.size()};
}

}  // namespace warden::executor
