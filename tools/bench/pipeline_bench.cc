// pipeline_bench: how fast the pipeline state machine moves, each figure beside its target.
//
//   1. Transitions/s in memory: runs of a 20-stage pipeline of trivial built-in stages (each
//      answers a small object; each has a routing rule that is evaluated and one that
//      matches), run start included, no journal, no event subscribers.
//   2. Transitions/s persisted: the same runs with every step recorded in a ledger through
//      kernel::LedgerWriter, group-committed (one write transaction and fsync per 1000 steps,
//      across runs): per transition a pipeline_step and a transition record, and per run a
//      pipeline_run and a pipeline_end record.
//   3. Envelope::clone() of an envelope holding 20 outputs of ~1 KB of canonical JSON each
//      (and the 20 processing records that produced them): mean over many clones.
// Context, without targets: a cyclic pipeline (a checkpoint, i.e. a clone, every cycle),
// every step durable on its own (one fsync per step, as `warden pipeline run --ledger`
// does), the envelope's canonical JSON encoding, and resuming a run (load its records from
// the ledger and replay them).
//
// Usage:
//   cmake --build build --target pipeline_bench
//   build/pipeline_bench [--json]     full run, a few seconds
//   build/pipeline_bench --quick      CI smoke run
// Exit status: 0; 1 when a full run misses a target; 2 when a step cannot run at all.
#include <stdlib.h>  // mkdtemp

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "executor/agent_registry.h"
#include "executor/replay.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/record/run_reader.h"
#include "executor/state_machine.h"
#include "ledger/ledger.h"
#include "ledger/note.h"

namespace {

namespace fs = std::filesystem;
using namespace warden;
using namespace warden::executor;

constexpr int kStages = 20;
constexpr size_t kFlushEverySteps = 1000;

struct Options {
  bool quick = false;
  bool json = false;
};

struct Plan {
  int memory_runs, persisted_runs, durable_runs, cyclic_runs, clones, encodes;
};

Plan make_plan(const Options& o) {
  if (o.quick) return {2'000, 500, 10, 500, 2'000, 500};
  return {100'000, 10'000, 200, 20'000, 100'000, 20'000};
}

[[noreturn]] void die(const std::string& what, const std::string& why) { throw std::runtime_error(what + ": " + why); }

template <typename T>
T must(Result<T> r, const std::string& what) {
  if (!r) die(what, r.error().message);
  return std::move(*r);
}
void must(const Status& s, const std::string& what) {
  if (!s) die(what, s.error().message);
}

template <typename Body>
double seconds(Body&& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void progress(const std::string& step) { std::cerr << "pipeline_bench: " << step << "...\n"; }

// ---------------------------------------------------------------- pipelines

// s0 -> s1 -> ... -> s19 -> end. Each stage has two rules: one that does not hold and one
// that does (first match wins, so both are evaluated), the way real routing looks.
Json chain_config() {
  Json stages = Json::array();
  for (int i = 0; i < kStages; ++i) {
    std::string next = i + 1 < kStages ? "s" + std::to_string(i + 1) : "end";
    stages.push_back({{"name", "s" + std::to_string(i)},
                      {"kind", "trivial"},
                      {"routing",
                       {{{"when", {{"field", "verdict"}, {"op", "equals"}, {"value", "retry"}}}, {"next", "s0"}},
                        {{"when", {{"field", "ok"}, {"op", "equals"}, {"value", true}}}, {"next", next}}}},
                      {"default_next", "end"}});
  }
  return Json{{"name", "chain"}, {"stages", stages}, {"max_agent_hops", 1000}, {"max_llm_calls", 1000}};
}

// a -> b -> c -> d -> a ...: every cycle takes a checkpoint (a deep clone of the envelope).
Json cyclic_config() {
  Json stages = Json::array();
  const char* names[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    stages.push_back({{"name", names[i]}, {"kind", "trivial"}, {"default_next", names[(i + 1) % 4]}});
  }
  return Json{{"name", "cycle"}, {"stages", stages}, {"max_iterations", 5}, {"max_agent_hops", 1000},
              {"max_llm_calls", 1000}};
}

AgentSet trivial_agents(const PipelineConfig& config) {
  AgentRegistry registry;
  registry.add("trivial", [](const PipelineConfig&, const StageSpec&, const AgentEnvironment&)
                              -> Result<std::unique_ptr<StageAgent>> {
    return std::make_unique<FunctionAgent>([](const StageContext&) {
      StageResult r;
      r.output = Json{{"ok", true}};
      return r;
    });
  });
  return must(registry.bind(config, {}), "binding the trivial stages");
}

// Runs `runs` runs to their end; returns transitions per second.
double transitions_per_second(const PipelineConfig& config, int runs, RunJournal* journal, uint64_t& transitions,
                              std::string* last_run_id = nullptr) {
  LogicalClock clock;
  SequentialIdSource ids;
  PipelineExecutor exec(config, trivial_agents(config), clock, ids);
  exec.set_journal(journal);
  RunInput input;
  input.raw_input = "benchmark input";
  transitions = 0;
  double s = seconds([&] {
    for (int i = 0; i < runs; ++i) {
      RunState run = must(exec.start(input), "starting a run");
      must(exec.run(run), "running");
      transitions += run.transitions.size();
      if (last_run_id && i + 1 == runs) *last_run_id = run.run_id;
    }
  });
  return static_cast<double>(transitions) / s;
}

// ---------------------------------------------------------------- clone workload

// ~1 KB of canonical JSON: a summary, a list, numbers and a nested object.
Json kilobyte_output(int i) {
  Json items = Json::array();
  for (int k = 0; k < 8; ++k) items.push_back("item " + std::to_string(k) + " of output " + std::to_string(i));
  Json out{{"summary", std::string(700, static_cast<char>('a' + i % 26))},
           {"items", items},
           {"score", i},
           {"verdict", "approved"},
           {"details", {{"files", 3}, {"lines_added", 120}, {"lines_removed", 7}, {"path", "src/module_" + std::to_string(i) + ".cc"}}}};
  return out;
}

Envelope big_envelope(size_t& output_bytes) {
  Envelope e;
  e.envelope_id = "env-000001";
  e.request_id = "req-000001";
  e.raw_input = "implement the cache layer";
  output_bytes = 0;
  for (int i = 0; i < 20; ++i) {
    std::string stage = "stage_" + std::to_string(i);
    e.outputs[stage] = kilobyte_output(i);
    output_bytes += must(canonicalize(e.outputs[stage]), "encoding an output").size();
    e.stage_order.push_back(stage);
    e.completed_stage_set[stage] = true;
    e.processing_history.push_back(ProcessingRecord{stage, i, 1000 + i, 1001 + i, 1, "success", std::nullopt, 1});
  }
  e.active_stages["stage_19"] = true;
  e.metadata = Json{{"capability", "code"}};
  return e;
}

// ---------------------------------------------------------------- measuring

struct Measurements {
  double memory_tps = 0, persisted_tps = 0, durable_tps = 0, cyclic_tps = 0;
  double clone_us = 0, encode_us = 0, resume_ms = 0;
  double output_bytes_avg = 0;
  uint64_t memory_transitions = 0, persisted_transitions = 0, ledger_records = 0;
};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "pipeline-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) die("mkdtemp", "cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Measurements measure(const Plan& plan) {
  Measurements m;
  PipelineConfig chain = must(PipelineConfig::parse(chain_config()), "chain config");
  PipelineConfig cyclic = must(PipelineConfig::parse(cyclic_config()), "cyclic config");

  progress("in-memory runs");
  m.memory_tps = transitions_per_second(chain, plan.memory_runs, nullptr, m.memory_transitions);
  uint64_t cyclic_transitions = 0;
  m.cyclic_tps = transitions_per_second(cyclic, plan.cyclic_runs, nullptr, cyclic_transitions);

  progress("persisted runs");
  TempDir tmp;
  auto signer = must(NoteSigner::generate("bench.local/pipeline"), "generating a key");
  must(Ledger::create(tmp.path() / "ledger", {"bench.local/pipeline", signer.verifier().encoded()}), "creating a ledger");
  LogicalClock ledger_clock;
  Ledger ledger = must(Ledger::open(tmp.path() / "ledger", Ledger::Mode::read_write, ledger_clock), "opening the ledger");
  {
    // Group commit across runs: one transaction per kFlushEverySteps steps, whichever runs
    // they belong to, and the remainder at the end (timed).
    kernel::LedgerWriter journal(ledger, {.flush_every_steps = kFlushEverySteps, .flush_at_pauses = false});
    std::string last_run;
    double tps = transitions_per_second(chain, plan.persisted_runs, &journal, m.persisted_transitions, &last_run);
    double flush_s = seconds([&] { must(journal.flush(), "flushing the journal"); });
    m.persisted_tps = static_cast<double>(m.persisted_transitions) / (static_cast<double>(m.persisted_transitions) / tps + flush_s);
    m.ledger_records = must(ledger.snapshot(), "snapshot").size();
    progress("resuming a run from the ledger");
    std::optional<RunState> replayed;
    double s = seconds([&] {
      StoredRun stored = must(kernel::load_run(ledger, last_run), "loading the last run");
      replayed = must(replay_run(chain, stored), "replaying the last run");
    });
    if (replayed->transitions.size() != static_cast<size_t>(kStages)) die("replay", "wrong number of transitions");
    m.resume_ms = s * 1e3;
  }
  {
    kernel::LedgerWriter journal(ledger, {.flush_every_steps = 1});  // the CLI's journal: every step committed before the next
    uint64_t transitions = 0;
    m.durable_tps = transitions_per_second(chain, plan.durable_runs, &journal, transitions);
  }

  progress("cloning envelopes");
  size_t output_bytes = 0;
  const Envelope envelope = big_envelope(output_bytes);
  m.output_bytes_avg = static_cast<double>(output_bytes) / 20.0;
  uint64_t sink = 0;
  double s = seconds([&] {
    for (int i = 0; i < plan.clones; ++i) {
      Envelope copy = envelope.clone();
      sink += copy.outputs.size() + copy.processing_history.size();
    }
  });
  if (sink != static_cast<uint64_t>(plan.clones) * 40) die("clone", "copies are incomplete");
  m.clone_us = s * 1e6 / plan.clones;
  size_t bytes = 0;
  s = seconds([&] {
    for (int i = 0; i < plan.encodes; ++i) bytes += must(canonicalize(envelope_to_json(envelope)), "encoding").size();
  });
  m.encode_us = s * 1e6 / plan.encodes;
  return m;
}

// ---------------------------------------------------------------- judging and printing

struct Figure {
  std::string id, label;
  double value;
  std::string unit;
  std::optional<double> at_least, at_most;
  bool passed() const { return (!at_least || value >= *at_least) && (!at_most || value <= *at_most); }
  bool judged() const { return at_least || at_most; }
};

std::vector<Figure> judge(const Measurements& m) {
  return {
      {"memory_transitions", "transitions, in memory", m.memory_tps, "/s", 1'000'000.0, std::nullopt},
      {"persisted_transitions", "transitions, persisted (batched)", m.persisted_tps, "/s", 50'000.0, std::nullopt},
      {"clone", "Envelope::clone(), 20 x 1 KB outputs", m.clone_us, "us", std::nullopt, 20.0},
      {"cyclic_transitions", "  transitions, cyclic (clone per cycle)", m.cyclic_tps, "/s", std::nullopt, std::nullopt},
      {"durable_transitions", "  transitions, fsync every step (CLI)", m.durable_tps, "/s", std::nullopt, std::nullopt},
      {"envelope_encode", "  envelope -> canonical JSON", m.encode_us, "us", std::nullopt, std::nullopt},
      {"resume", "  resume: load + replay a 20-step run", m.resume_ms, "ms", std::nullopt, std::nullopt},
  };
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 1000 ? "%.0f" : "%.2f", v);
  std::string s = buf;
  size_t dot = std::min(s.find('.'), s.size());
  for (size_t i = dot; i > 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

void print_table(const Plan& plan, const Measurements& m, const std::vector<Figure>& figures, bool quick) {
  std::printf("Warden pipeline benchmark%s: %d-stage chain of trivial built-in stages; %d runs in memory, %d persisted "
              "(%llu records, one commit per %zu steps); outputs of %.0f bytes\n\n",
              quick ? " (quick)" : "", kStages, plan.memory_runs, plan.persisted_runs,
              static_cast<unsigned long long>(m.ledger_records), kFlushEverySteps, m.output_bytes_avg);
  std::printf("%-42s %14s %-4s %-16s %s\n", "figure", "value", "unit", "target", "result");
  for (const auto& f : figures) {
    std::string target = f.at_least ? ">= " + number(*f.at_least) : f.at_most ? "< " + number(*f.at_most) : "";
    std::printf("%-42s %14s %-4s %-16s %s\n", f.label.c_str(), number(f.value).c_str(), f.unit.c_str(), target.c_str(),
                f.judged() ? (f.passed() ? "PASS" : "FAIL") : "");
  }
}

void print_json(const Plan& plan, const Measurements& m, const std::vector<Figure>& figures, bool quick) {
  nlohmann::ordered_json out;
  out["mode"] = quick ? "quick" : "full";
  out["stages"] = kStages;
  out["memory_runs"] = plan.memory_runs;
  out["persisted_runs"] = plan.persisted_runs;
  out["flush_every_steps"] = kFlushEverySteps;
  out["ledger_records"] = m.ledger_records;
  out["output_bytes"] = m.output_bytes_avg;
  out["figures"] = nlohmann::ordered_json::object();
  out["failed"] = nlohmann::ordered_json::array();
  for (const auto& f : figures) {
    auto& entry = out["figures"][f.id];
    entry["value"] = f.value;
    entry["unit"] = f.unit;
    if (!f.judged()) continue;
    entry["target"] = f.at_least ? nlohmann::ordered_json{{">=", *f.at_least}} : nlohmann::ordered_json{{"<", *f.at_most}};
    entry["pass"] = f.passed();
    if (!f.passed()) out["failed"].push_back(f.id);
  }
  out["pass"] = out["failed"].empty();
  std::cout << out.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipeline_bench: pipeline state machine transitions, persistence and envelope clones", "pipeline_bench"};
  Options options;
  app.add_flag("--quick", options.quick, "Small counts: the CI smoke run (targets are reported, not enforced)");
  app.add_flag("--json", options.json, "Print one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);
  try {
    const Plan plan = make_plan(options);
    const Measurements m = measure(plan);
    const auto figures = judge(m);
    if (options.json) print_json(plan, m, figures, options.quick);
    else print_table(plan, m, figures, options.quick);
    bool all_passed = std::all_of(figures.begin(), figures.end(), [](const Figure& f) { return f.passed(); });
    return options.quick || all_passed ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "pipeline_bench: " << e.what() << "\n";
    return 2;
  }
}
