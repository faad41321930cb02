// What held-out checks cost a build: the calculator example built as it is and with held-out
// checks (examples/calculator/held_out, covering evaluate(), judged from the parser's step on),
// each into a fresh repository and ledger. Reported: the median wall time of each, the sandbox
// runs of each (run_result, base_run, oracle_run and held_out_run records), the held-out runs
// per proposal they judged, and what one held-out run adds next to the average sandbox run of
// the plain build.
//
//   held_out_bench [--runs N] [--quick]
// Exit 0 when every build added at most one held-out run per proposal (the bound: one
// extra suite run per proposal), 1 when one added more, 2 when something could not run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/bench/bench_process.h"

namespace fs = std::filesystem;
using nlohmann::json;
using warden::bench::timed;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

size_t records(const fs::path& ledger, const std::string& kind) {
  std::string out;
  timed({WARDEN_BINARY, "ledger", "show", ledger.string(), "--kind", kind, "--json"}, ledger.parent_path(), 0, &out);
  size_t n = 0;
  for (size_t at = 0; (at = out.find("\"type\":\"record\"", at)) != std::string::npos; ++at) ++n;
  return n;
}

struct Built {
  double ms = 0;
  size_t proposals = 0, sandbox_runs = 0, held_out_runs = 0, judged = 0;
};

Built build(const fs::path& blueprint, const fs::path& out) {
  Built b;
  std::string summary;
  b.ms = timed({WARDEN_BINARY, "build", blueprint.string(), "--out", out.string(), "--json"}, out.parent_path(), 0, &summary);
  // Events come first, one JSON line each; the summary is the last line.
  while (!summary.empty() && summary.back() == '\n') summary.pop_back();
  const json s = json::parse(summary.substr(summary.rfind('\n') + 1));
  b.proposals = s.at("verdicts").size();
  const fs::path ledger = out / "ledger";
  for (const char* kind : {"run_result", "base_run", "oracle_run", "held_out_run"}) b.sandbox_runs += records(ledger, kind);
  b.held_out_runs = records(ledger, "held_out_run");
  // The proposals of the steps the held-out checks judge (the plan names them; all when none).
  std::string plans;
  timed({WARDEN_BINARY, "ledger", "show", ledger.string(), "--kind", "plan_proposal", "--json"}, out.parent_path(), 0, &plans);
  std::vector<std::string> steps;
  const json plan = json::parse(plans.substr(0, plans.find('\n'))).at("payload").at("plan");
  if (plan.contains("held_out")) steps = plan.at("held_out").value("steps", std::vector<std::string>{});
  for (const json& v : s.at("verdicts")) {
    if (steps.empty() ? b.held_out_runs > 0 : std::find(steps.begin(), steps.end(), v.value("step_id", "")) != steps.end()) ++b.judged;
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The calculator built with and without held-out checks: what the held-out runs cost"};
  int runs = 3;
  bool quick = false;
  app.add_option("--runs", runs, "Builds of each kind")->capture_default_str();
  app.add_flag("--quick", quick, "One build of each (CI)");
  CLI11_PARSE(app, argc, argv);
  if (quick) runs = 1;

  const fs::path work = fs::temp_directory_path() / ("warden-held-out-bench-" + std::to_string(::getpid()));
  fs::remove_all(work);
  const fs::path example = work / "calculator";
  fs::create_directories(work);
  fs::copy(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", example, fs::copy_options::recursive);
  // The plain blueprint with the held-out section of blueprint-held-out.json: the same steps,
  // drafts and proposals, so the difference is the held-out runs alone.
  std::ifstream plain_in(example / "blueprint.json"), held_in(example / "blueprint-held-out.json");
  json with = json::parse(plain_in);
  with["held_out"] = json::parse(held_in).at("held_out");
  std::ofstream(example / "blueprint-cost.json") << with.dump(2);

  std::vector<double> plain_ms, held_ms;
  Built plain, held;
  bool ok = true;
  for (int i = 0; i < runs; ++i) {
    plain = build(example / "blueprint.json", work / ("plain-" + std::to_string(i)));
    held = build(example / "blueprint-cost.json", work / ("held-" + std::to_string(i)));
    plain_ms.push_back(plain.ms);
    held_ms.push_back(held.ms);
    ok = ok && held.held_out_runs <= held.judged && held.proposals == plain.proposals;
  }
  fs::remove_all(work);

  const double per_run = plain.sandbox_runs ? median(plain_ms) / static_cast<double>(plain.sandbox_runs) : 0;
  const double added = median(held_ms) - median(plain_ms);
  std::printf("the calculator built with and without held-out checks, %d build(s) each\n", runs);
  std::printf("  without held-out checks   median %7.0f ms  %zu proposals, %zu sandbox runs (%.0f ms a run on average)\n",
              median(plain_ms), plain.proposals, plain.sandbox_runs, per_run);
  std::printf("  with held-out checks      median %7.0f ms  %zu proposals, %zu sandbox runs, %zu of them held-out\n",
              median(held_ms), held.proposals, held.sandbox_runs, held.held_out_runs);
  std::printf("  added                            %7.0f ms  %.0f ms a held-out run (%.2fx an average run)\n", added,
              held.held_out_runs ? added / static_cast<double>(held.held_out_runs) : 0,
              held.held_out_runs && per_run > 0 ? added / static_cast<double>(held.held_out_runs) / per_run : 0);
  std::printf("  held-out runs per judged proposal %zu/%zu (bound: at most one each) %s\n", held.held_out_runs, held.judged,
              ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
