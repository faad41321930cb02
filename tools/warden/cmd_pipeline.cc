// warden pipeline ...: validate a pipeline config, run it, resume a paused or interrupted run
// from the ledger, and show a recorded run (replayed and checked against its records).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/file.h"
#include "executor/agent_registry.h"
#include "executor/replay.h"
#include "executor/state_machine.h"
#include "kernel/build/build_setup.h"
#include "kernel/build/pipeline_run.h"
#include "kernel/build/run_sources.h"
#include "kernel/record/event_stream.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/record/run_reader.h"
#include "ledger/ledger.h"
#include "tools/warden/cli.h"
#include "tools/warden/kernel_cli.h"
#include "tools/warden/signer_keys.h"

namespace warden::cli {
namespace {

namespace fs = std::filesystem;
using namespace warden::executor;

// A CLI run exits when it pauses or ends: every step is durable before the next one runs.
constexpr kernel::JournalOptions kCliJournal{.flush_every_steps = 1, .flush_at_pauses = true};

struct Options {
  std::string config, input, ledger, run_id, response, signer_key;
  bool json = false, deterministic = false;
  ExecutorSandboxOptions executor_sandbox;
};

struct BoundAgents {
  AgentSet agents;
  std::optional<LaunchConfinement> confinement;  // how command stages run; none without any
};

// The agents of `config`; command stages run through a sandboxed launcher as `o` says,
// preflighted when `preflight` (they are about to run).
Result<BoundAgents> bind_agents(const PipelineConfig& config, const fs::path& base_dir, const Options& o, bool preflight) {
  AgentEnvironment env{base_dir, nullptr};
  BoundAgents bound;
  if (std::any_of(config.stages.begin(), config.stages.end(), [](const StageSpec& s) { return s.kind == "command"; })) {
    auto launcher = make_executor_launcher(o.executor_sandbox, preflight);
    if (!launcher) return std::unexpected(launcher.error());
    bound.confinement = (*launcher)->confinement();
    env.launcher = std::move(*launcher);
  }
  auto agents = standard_agents().bind(config, env);
  if (!agents) return std::unexpected(agents.error());
  bound.agents = std::move(*agents);
  return bound;
}

// ---------------------------------------------------------------- loading

// ---------------------------------------------------------------- output

std::string status_of(const RunState& run) {
  if (run.waiting()) return "waiting";
  if (!run.ended()) return "running";
  return run.envelope.terminal_reason == TerminalReason::completed ? "completed" : "ended";
}

void show_event(const ExecutionEvent& e, bool json) {
  if (json) {
    print_event(kernel::stream_event_json(e));
    return;
  }
  switch (e.type) {
    case EventType::stage_started: std::cout << "  " << e.stage << ": started\n"; break;
    case EventType::stage_completed: std::cout << "  " << e.stage << ": completed\n"; break;
    case EventType::stage_failed:
      std::cout << "  " << e.stage << ": FAILED: " << e.payload.value("error", "") << "\n";
      break;
    case EventType::transition:
      std::cout << "  " << e.payload.value("from", "") << " -> " << e.payload.value("to", "") << " ("
                << e.payload.value("reason", "") << ", iteration " << e.payload.value("iteration", 0) << ")";
      if (e.payload.contains("detail")) std::cout << ": " << e.payload.value("detail", "");
      std::cout << "\n";
      break;
    case EventType::checkpoint_created:
      std::cout << "  checkpoint " << e.payload.value("id", "") << " before the cycle back to " << e.stage << "\n";
      break;
    case EventType::interrupt_raised:
      std::cout << "  " << e.stage << ": interrupt (" << e.payload.value("kind", "") << ")\n";
      break;
    case EventType::pipeline_completed:
      std::cout << "  pipeline ended: " << e.payload.value("terminal_reason", "") << "\n";
      break;
  }
  std::cout.flush();
}

// The closing summary of run/resume; the exit code says whether the pipeline completed.
int report_run(const RunState& run, const Options& o, bool persisted) {
  const Envelope& e = run.envelope;
  std::string status = status_of(run);
  if (o.json) {
    Json out{{"run_id", run.run_id},
             {"status", status},
             {"steps", run.step},
             {"transitions", run.transitions.size()},
             {"llm_call_count", e.llm_call_count},
             {"agent_hop_count", e.agent_hop_count},
             {"iteration", e.iteration}};
    if (e.terminal_reason) out["terminal_reason"] = terminal_reason_name(*e.terminal_reason);
    if (e.termination_reason) out["termination_reason"] = *e.termination_reason;
    if (run.waiting()) out["interrupt"] = interrupt_to_json(*e.interrupt);
    print_json(out);
  } else if (run.waiting()) {
    std::cout << "run " << run.run_id << " waits for a response to its " << e.interrupt->kind << " interrupt from "
              << e.interrupt->stage;
    if (e.interrupt->question) std::cout << ": " << *e.interrupt->question;
    std::cout << "\n";
    if (persisted) {
      std::cout << "resume with: warden pipeline resume " << run.run_id << " --ledger " << o.ledger
                << " --response TEXT\n";
    } else {
      std::cout << "(run without --ledger: it cannot be resumed)\n";
    }
  } else {
    std::cout << "run " << run.run_id << " " << status;
    if (status != "completed") std::cout << ": " << terminal_reason_name(*e.terminal_reason);
    if (e.termination_reason) std::cout << " (" << *e.termination_reason << ")";
    std::cout << "\n" << run.step << " steps, " << e.agent_hop_count << " agent hops, " << e.llm_call_count
              << " LLM calls, iteration " << e.iteration << "\n";
  }
  return status == "ended" ? kVerificationFailed : kOk;
}

Json run_json(const RunState& run, size_t records) {
  Json transitions = Json::array();
  for (const auto& t : run.transitions) transitions.push_back(transition_to_json(t));
  Json checkpoints = Json::array();
  for (const auto& cp : run.checkpoints) {
    checkpoints.push_back(
        {{"id", cp.id}, {"stage", cp.stage}, {"step", cp.step}, {"iteration", cp.iteration}, {"created_at", cp.created_at}});
  }
  return Json{{"run_id", run.run_id},
              {"status", status_of(run)},
              {"steps", run.step},
              {"records", records},
              {"envelope", envelope_to_json(run.envelope)},
              {"transitions", std::move(transitions)},
              {"checkpoints", std::move(checkpoints)}};
}

// ---------------------------------------------------------------- commands

int run_validate(const Options& o) {
  auto loaded = kernel::load_pipeline_config(o.config);
  if (!loaded) return report_error(loaded.error(), o.json);
  auto agents = bind_agents(loaded->config, loaded->base_dir, o, false);
  if (!agents) return report_error(agents.error().with_context("pipeline config " + o.config), o.json);
  const PipelineConfig& c = loaded->config;
  // Cycles are allowed; listing them (and what bounds them) is what a reviewer wants to see.
  Json cycles = Json::array();
  for (const auto& s : c.stages) {
    std::vector<StageId> successors = s.default_next;
    if (s.error_next != kEnd) successors.push_back(s.error_next);
    for (const auto& r : s.routing) successors.insert(successors.end(), r.next.begin(), r.next.end());
    std::sort(successors.begin(), successors.end());
    successors.erase(std::unique(successors.begin(), successors.end()), successors.end());
    for (StageId to : successors) {
      if (!PipelineConfig::is_cycle_edge(s.id, to)) continue;
      Json edge{{"from", s.name}, {"to", c.stages[to].name}};
      if (int li = c.edge_limit_index(s.id, to); li >= 0) edge["max_count"] = c.edge_limits[li].max_count;
      cycles.push_back(std::move(edge));
    }
  }
  if (o.json) {
    Json stages = Json::array();
    for (const auto& s : c.stages) stages.push_back({{"name", s.name}, {"kind", s.kind}});
    print_json({{"ok", true}, {"name", c.name}, {"stages", stages}, {"cycle_edges", cycles},
                {"max_iterations", c.max_iterations}, {"max_llm_calls", c.max_llm_calls},
                {"max_agent_hops", c.max_agent_hops}});
    return kOk;
  }
  std::cout << "OK: pipeline " << c.name << ", " << c.stages.size() << " stages, start " << c.stage_name(c.start)
            << "\nbounds: max_iterations " << c.max_iterations << ", max_llm_calls " << c.max_llm_calls
            << ", max_agent_hops " << c.max_agent_hops << ", default_timeout_seconds " << c.default_timeout_seconds
            << "\n";
  for (const auto& edge : cycles) {
    std::cout << "cycle edge " << edge["from"].get<std::string>() << " -> " << edge["to"].get<std::string>() << ": "
              << (edge.contains("max_count") ? "max_count " + std::to_string(edge["max_count"].get<int64_t>())
                                             : std::string("bounded by max_iterations"))
              << "\n";
  }
  return kOk;
}

// The ledger a run is recorded in and the key that signs it. A missing ledger is created
// with its keys (ledger/ledger_keys.h: a new key unless --signer-key names one). An existing
// ledger is signed with --signer-key, else its own DIR/signer.key; a ledger with neither still
// records the run, and its records stay an unsigned tail that `warden ledger checkpoint
// --signer-key FILE` signs later.
struct RunLedger {
  Ledger ledger;
  std::optional<NoteSigner> signer;
};

Result<RunLedger> open_run_ledger(const Options& o, Clock& clock) {
  const fs::path dir = o.ledger;
  auto signer = signer_for_ledger(dir, o.signer_key, "warden.local/" + fs::absolute(dir).filename().string(),
                                  "--signer-key");
  if (signer) {
    auto ledger = kernel::open_kernel_ledger(dir, *signer, clock);
    if (!ledger) return std::unexpected(ledger.error());
    return RunLedger{std::move(*ledger), std::move(*signer)};
  }
  if (signer.error().code != Errc::not_found || !o.signer_key.empty()) return std::unexpected(signer.error());
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
  if (!ledger) return std::unexpected(ledger.error());
  std::cerr << "warden: note: the run's records stay unsigned: " << signer.error().message
            << "; or sign them later: warden ledger checkpoint " << dir.string() << " --signer-key FILE\n";
  return RunLedger{std::move(*ledger), std::nullopt};
}

// A run that ended or paused is covered by a signed checkpoint, so a verifier with the
// ledger's key sees no unsigned tail.
Status sign_checkpoint(RunLedger& run_ledger) {
  if (!run_ledger.signer) return {};
  auto cp = run_ledger.ledger.checkpoint(*run_ledger.signer);
  if (!cp) return std::unexpected(cp.error());
  return {};
}

int run_run(const Options& o) {
  auto loaded = kernel::load_pipeline_config(o.config);
  if (!loaded) return report_error(loaded.error(), o.json);
  auto agents = bind_agents(loaded->config, loaded->base_dir, o, true);
  if (!agents) return report_error(agents.error().with_context("pipeline config " + o.config), o.json);
  kernel::RunSources time = kernel::RunSources::for_pipeline(o.deterministic);
  std::optional<RunLedger> ledger;
  std::optional<kernel::LedgerWriter> journal;
  if (!o.ledger.empty()) {
    auto opened = open_run_ledger(o, *time.clock);
    if (!opened) return report_error(opened.error(), o.json);
    ledger.emplace(std::move(*opened));
    if (auto st = time.continue_after(ledger->ledger); !st) return report_error(st.error(), o.json);
    journal.emplace(ledger->ledger, kCliJournal);
  }
  PipelineExecutor exec(loaded->config, std::move(agents->agents), *time.clock, *time.ids);
  if (journal) exec.set_journal(&*journal);
  exec.subscribe([json = o.json](const ExecutionEvent& e) { show_event(e, json); });
  // How its command stages are confined: a resume must confine them the same way.
  const Json launch = kernel::PipelineLaunch{loaded->base_dir, time.logical, agents->confinement}.to_json();
  RunInput input;
  input.raw_input = o.input;
  auto run = exec.start(input, launch);
  if (!run) return report_error(run.error(), o.json);
  if (!o.json) std::cout << "run " << run->run_id << " (pipeline " << loaded->config.name << ")\n";
  if (auto st = exec.run(*run); !st) return report_error(st.error(), o.json);
  if (ledger) {
    if (Status st = sign_checkpoint(*ledger); !st) return report_error(st.error(), o.json);
  }
  return report_run(*run, o, ledger.has_value());
}

// A recorded run, its config and its state rebuilt by replay, read through the ledger's
// per-run index.
Result<RecordedRun> load_recorded(const Ledger& ledger, const std::string& run_id) {
  kernel::LedgerRunReader reader(ledger);
  return read_recorded_run(reader, run_id);
}

int run_resume(const Options& o, bool has_response) {
  Result<RecordedRun> recorded = fail(Errc::internal, "not loaded");
  {
    // Read first, closed again before the read-write open below: LMDB allows one open
    // environment per directory per process.
    SystemClock clock;
    auto reader = Ledger::open(o.ledger, Ledger::Mode::read_only, clock);
    if (!reader) return report_error(reader.error(), o.json);
    recorded = load_recorded(*reader, o.run_id);
  }
  if (!recorded) return report_error(recorded.error(), o.json);
  RunState& run = recorded->state;
  if (Status st = kernel::check_resumable(run, has_response); !st) return report_error(st.error(), o.json);
  // What `run` recorded: the config's directory, the kind of clock, the confinement.
  auto launch = kernel::PipelineLaunch::from_json(recorded->start.launch);
  if (!launch) return report_error(launch.error(), o.json);
  auto agents = bind_agents(recorded->config, launch->base_dir, o, true);
  if (!agents) return report_error(agents.error(), o.json);
  if (Status st = kernel::check_same_confinement(*launch, agents->confinement); !st) return report_error(st.error(), o.json);

  // The run continues in the ledger it was recorded in, with the kind of clock it began with.
  kernel::RunSources time = kernel::RunSources::for_pipeline(launch->logical_clock);
  auto ledger = open_run_ledger(o, *time.clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  if (auto st = time.continue_after(ledger->ledger); !st) return report_error(st.error(), o.json);
  kernel::LedgerWriter journal(ledger->ledger, kCliJournal);
  PipelineExecutor exec(recorded->config, std::move(agents->agents), *time.clock, *time.ids);
  exec.set_journal(&journal);
  exec.subscribe([json = o.json](const ExecutionEvent& ev) { show_event(ev, json); });
  if (has_response) {
    if (auto st = exec.resume(run, o.response); !st) return report_error(st.error(), o.json);
  }
  if (!o.json) std::cout << "run " << run.run_id << " resumed at step " << run.step << "\n";
  if (auto st = exec.run(run); !st) return report_error(st.error(), o.json);
  if (Status st = sign_checkpoint(*ledger); !st) return report_error(st.error(), o.json);
  return report_run(run, o, true);
}

int run_show(const Options& o) {
  SystemClock clock;
  auto ledger = Ledger::open(o.ledger, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto recorded = load_recorded(*ledger, o.run_id);
  if (!recorded) return report_error(recorded.error(), o.json);
  const RunState& run = recorded->state;
  if (o.json) {
    print_json(run_json(run, recorded->records));
    return kOk;
  }
  const Envelope& e = run.envelope;
  std::cout << "run " << run.run_id << " (pipeline " << recorded->config.name << "): " << status_of(run);
  if (e.terminal_reason && *e.terminal_reason != TerminalReason::completed) {
    std::cout << ", " << terminal_reason_name(*e.terminal_reason);
  }
  if (e.termination_reason) std::cout << " (" << *e.termination_reason << ")";
  std::cout << "\ninput " << Json(e.raw_input).dump() << "\n"
            << run.step << " steps, " << recorded->records << " ledger records, " << e.agent_hop_count
            << " agent hops, " << e.llm_call_count << " LLM calls, iteration " << e.iteration << "\n";
  if (run.waiting()) {
    std::cout << "waiting: " << e.interrupt->kind << " interrupt from " << e.interrupt->stage
              << (e.interrupt->question ? ": " + *e.interrupt->question : "") << "\n";
  }
  std::cout << "transitions:\n";
  for (const auto& t : run.transitions) {
    std::cout << "  step " << t.step << "  " << t.from << " -> " << t.to << "  " << transition_reason_name(t.reason)
              << "  iteration " << t.iteration;
    if (!t.checkpoint.empty()) std::cout << "  checkpoint " << t.checkpoint;
    if (!t.detail.empty()) std::cout << "  (" << t.detail << ")";
    std::cout << "\n";
  }
  std::cout << "outputs:\n";
  for (const auto& [stage, output] : e.outputs) std::cout << "  " << stage << " " << output.dump() << "\n";
  return kOk;
}

}  // namespace

void add_pipeline_commands(CLI::App& app, Action& action) {
  auto* pipeline = app.add_subcommand("pipeline", "Pipeline state machines: stages, routing, cycles, interrupts");
  pipeline->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto json_flag = [&](CLI::App* cmd, const char* help) { cmd->add_flag("--json", o->json, help); };
  auto executor_flags = [&](CLI::App* cmd) {
    cmd->add_option("--executor-profile", o->executor_sandbox.profile,
                    "Sandbox profile command stages run in: a built-in name or a JSON file (default executor: an empty "
                    "private workspace, the files their argv names read-only, no network; recorded in the run's start)")
        ->capture_default_str();
    cmd->add_flag("--executor-network", o->executor_sandbox.network,
                  "Give command stages the host's network (an LLM agent's API endpoint); recorded in the run's start");
  };
  auto bind = [&action, o](CLI::App* cmd, std::function<int(const Options&)> run) {
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };

  auto* validate = pipeline->add_subcommand(
      "validate", "Check a pipeline config: fields, stage names, kinds and params. Cycles are allowed; "
                  "they are listed with what bounds them.");
  validate->add_option("CONFIG", o->config, "Pipeline config (JSON)")->required();
  json_flag(validate, "Print JSON");
  bind(validate, run_validate);

  auto* run = pipeline->add_subcommand(
      "run", "Run a pipeline on an input. With --ledger every step is recorded (and the run can be resumed). "
             "Exit 0 when it completes or waits for a response, 1 when it ends otherwise (a bound, a failure).");
  run->add_option("CONFIG", o->config, "Pipeline config (JSON)")->required();
  run->add_option("--input", o->input, "The run's raw input")->required();
  run->add_option("--ledger", o->ledger,
                  "Ledger directory to record the run in (created when missing, with its parents and its keys)");
  run->add_option("--signer-key", o->signer_key,
                  "Signs a checkpoint when the run ends or pauses (default: the ledger's LEDGER/signer.key, if it has "
                  "one; a new ledger keeps a copy of a given key there)");
  run->add_flag("--deterministic", o->deterministic,
                "Logical clock and sequential ids (golden runs: the same inputs give the same ledger records)");
  json_flag(run, "Print events as JSON lines, then a result line");
  executor_flags(run);
  bind(run, run_run);

  auto* resume = pipeline->add_subcommand(
      "resume", "Continue a recorded run: after an interrupt (with --response), or after the process died");
  resume->add_option("RUN_ID", o->run_id, "Run id")->required();
  resume->add_option("--ledger", o->ledger, "Ledger directory holding the run")->required();
  resume->add_option("--signer-key", o->signer_key,
                     "Signs a checkpoint when the run ends or pauses (default: the ledger's LEDGER/signer.key, if it "
                     "has one)");
  auto* response = resume->add_option("--response", o->response, "Answer to the pending interrupt");
  json_flag(resume, "Print events as JSON lines, then a result line");
  executor_flags(resume);
  resume->callback([&action, o, response] {
    action = [o, has = response->count() > 0] { return run_resume(*o, has); };
  });

  auto* show = pipeline->add_subcommand(
      "show", "Show a recorded run: its envelope, transitions and checkpoints, rebuilt from the ledger and "
              "checked against every recorded transition");
  show->add_option("RUN_ID", o->run_id, "Run id")->required();
  show->add_option("--ledger", o->ledger, "Ledger directory holding the run")->required();
  json_flag(show, "Print JSON");
  bind(show, run_show);
}

}  // namespace warden::cli
