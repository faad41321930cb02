#include "kernel/build/pipeline_run.h"

#include "common/file.h"
#include "executor/envelope.h"

namespace warden::kernel {

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
}  // namespace

Result<LoadedPipeline> load_pipeline_config(const std::string& path) {
  auto text = read_file(path, kMaxConfigBytes);
  if (!text) return std::unexpected(text.error());
  auto config = executor::PipelineConfig::parse_text(*text, "pipeline config " + path);
  if (!config) return std::unexpected(config.error());
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  return LoadedPipeline{std::move(*config), dir};
}

Json PipelineLaunch::to_json() const {
  Json launch{{"base_dir", base_dir.string()}, {"clock", logical_clock ? "logical" : "system"}};
  if (confinement) launch["executor_sandbox"] = confinement->to_json();
  return launch;
}

Result<PipelineLaunch> PipelineLaunch::from_json(const Json& launch) {
  auto text = [&](const char* key) {
    auto it = launch.find(key);
    return it != launch.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  PipelineLaunch l;
  l.base_dir = text("base_dir");
  l.logical_clock = text("clock") == "logical";
  if (auto it = launch.find("executor_sandbox"); it != launch.end()) {
    auto parsed = LaunchConfinement::from_json(*it, "launch.executor_sandbox");
    if (!parsed) return std::unexpected(parsed.error());
    l.confinement = std::move(*parsed);
  }
  return l;
}

Status check_resumable(const executor::RunState& run, bool has_response) {
  const executor::Envelope& e = run.envelope;
  if (run.ended()) {
    return fail(Errc::invalid_argument,
                "run " + run.run_id + " already ended: " + std::string(executor::terminal_reason_name(*e.terminal_reason)));
  }
  if (run.waiting() && !has_response) {
    std::string question = e.interrupt->question ? ": " + *e.interrupt->question : "";
    return fail(Errc::invalid_argument, "run " + run.run_id + " waits for a response to its " + e.interrupt->kind +
                                            " interrupt" + question + " (pass --response TEXT)");
  }
  if (!run.waiting() && has_response) {
    return fail(Errc::invalid_argument, "run " + run.run_id + " is not waiting for a response");
  }
  return {};
}

Status check_same_confinement(const PipelineLaunch& recorded, const std::optional<LaunchConfinement>& now) {
  if (recorded.confinement == now) return {};
  auto text = [](const std::optional<LaunchConfinement>& c) { return c ? c->to_json().dump() : std::string("none"); };
  return fail(Errc::invalid_argument, "the run's command stages were confined as " + text(recorded.confinement) +
                                          ", now they would be " + text(now) +
                                          ": resume with the same --executor-profile and --executor-network");
}

}  // namespace warden::kernel
