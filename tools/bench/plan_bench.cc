// plan_bench: what a merge queue (kernel/build/merge_queue.h) buys a plan of independent steps, in
// one run on one machine. The same eight-step plan (eight files, no step depending on
// another, one sandboxed check per step) is built by the real `warden build`, whole process,
// three ways: sequentially (the plan without merge_queue_depth: the build loop as it always
// was), and as a merge queue of depth 8 at --jobs 2 and --jobs 4. Sections:
//
//   sleep   the check sleeps --sleep seconds (1): waiting, as on a slow test suite or a
//           remote service. Target: --jobs 4 at most 0.35x the sequential time.
//   cpu     the check spins one core for about --cpu seconds (1): CPU-bound, as compilers
//           and test suites are. Target: --jobs 2 at most 0.65x the sequential time.
//   waste   the sleep plan with one step in four refused once (s2 and s6 propose a draft
//           that fails the check first), at --jobs 4: the speculations thrown away, per
//           commit, and the sandbox runs per commit (every run result and speculation).
//
// Every build records the same ledger whatever --jobs is; this bench also checks that the
// --jobs 2 and --jobs 4 ledgers of each section are byte-identical (logical clock, one key).
//
// Usage:
//   cmake --build build --target plan_bench warden && build/plan_bench [--runs N] [--json]
//   build/plan_bench --quick     CI smoke run: short checks, one run, targets not judged
// Exit status: 0; 1 when a full run misses a target or two ledgers differ; 2 when a build
// cannot run at all.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

// Runs argv; its wall time in ms. Exits 2 when it cannot start or fails.
double timed(const std::vector<std::string>& argv, std::string* out = nullptr) {
  warden::SubprocessSpec spec;
  spec.argv = argv;
  spec.env = environment();
  spec.timeout = std::chrono::minutes(10);
  const auto start = Clock::now();
  auto r = warden::run_subprocess(spec);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!r || r->exit_code != 0) {
    std::cerr << "plan_bench: " << argv[0] << " " << argv[1] << " failed: "
              << (r ? "exit " + std::to_string(r->exit_code) + "\n" + r->out.substr(0, 4000) + r->err : r.error().message)
              << "\n";
    std::exit(2);
  }
  if (out) *out = r->out;
  return ms;
}

// The eight-step blueprint: one file per step, a policy whose one check runs `check` and
// then fails when a file under src/ says BAD; `refused` steps propose a BAD draft first.
fs::path make_blueprint(const fs::path& dir, const std::string& check, bool queue, const std::vector<int>& refused) {
  Json changes = Json::array();
  for (int i = 1; i <= 8; ++i) {
    Json c = {{"path", "src/f" + std::to_string(i) + ".txt"}, {"content", "file " + std::to_string(i) + "\n"}};
    if (std::find(refused.begin(), refused.end(), i) != refused.end()) c["drafts"] = {"BAD\n"};
    changes.push_back(c);
  }
  Json constraints = {{"allowed_paths", {"src/**"}}, {"max_retries", 3}, {"max_replans", 0}, {"step_timeout_ms", 600000}};
  if (queue) constraints["merge_queue_depth"] = 8;
  Json blueprint = {{"format", "warden.blueprint/v1"}, {"name", "bench"},  {"language", "other"},
                    {"repository", {{"seed", "seed"}, {"base", "HEAD"}}}, {"goals", {"eight independent files"}},
                    {"policy", "policy.json"},           {"changes", changes}, {"constraints", constraints}};
  Json policy = {{"format", "warden.policy/v1"},
                 {"name", "bench"},
                 {"language", "other"},
                 {"description", "one check per step"},
                 {"sandbox_profile", "default"},
                 {"checks", {{{"name", "tests"}, {"argv", {"sh", "-c", check + "; ! grep -rqs BAD src"}}}}},
                 {"required_checks", {"tests"}},
                 {"allow_paths", {"**"}},
                 {"protected_paths", {".warden/**"}},
                 {"invariants", Json::object()}};
  write(dir / "seed" / "README.md", "bench\n");
  write(dir / "blueprint.json", blueprint.dump(2));
  write(dir / "policy.json", policy.dump(2));
  return dir / "blueprint.json";
}

struct Build {
  double ms = 0;
  std::string records;  // the exported ledger's records.jsonl
  Json summary;
};

Build build(const std::string& warden, const fs::path& blueprint, const fs::path& out, int jobs, const fs::path& key) {
  fs::remove_all(out);
  Build b;
  std::string stdout_text;
  b.ms = timed({warden, "build", blueprint.string(), "--out", out.string(), "--clock", "logical", "--key", key.string(),
                "--policy", (blueprint.parent_path() / "policy.json").string(), "--jobs", std::to_string(jobs), "--json"},
               &stdout_text);
  auto last = stdout_text.find_last_of('\n', stdout_text.size() - 2);
  b.summary = Json::parse(stdout_text.substr(last == std::string::npos ? 0 : last + 1), nullptr, false);
  timed({warden, "ledger", "export", (out / "ledger").string(), (out / "export").string()});
  b.records = read(out / "export" / "records.jsonl");
  return b;
}

int64_t count_kind(const std::string& records, const std::string& kind) {
  int64_t n = 0;
  std::istringstream lines(records);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"kind\":\"" + kind + "\"") != std::string::npos) ++n;
  }
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"plan_bench: a plan of eight independent steps, sequential and as a merge queue at --jobs 2 and 4"};
  int runs = 3;
  double sleep_s = 1.0, cpu_s = 1.0;
  bool quick = false, json = false;
  std::string warden = WARDEN_BINARY;
  app.add_option("--runs", runs, "Builds per figure; the median is reported")->check(CLI::Range(1, 50));
  app.add_option("--sleep", sleep_s, "Seconds each step's check sleeps (sleep section)");
  app.add_option("--cpu", cpu_s, "Seconds of CPU each step's check spins (cpu section)");
  app.add_option("--warden", warden, "The warden binary")->capture_default_str();
  app.add_flag("--quick", quick, "CI smoke run: short checks, one run, targets not judged");
  app.add_flag("--json", json, "One JSON object on stdout");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    runs = 1;
    sleep_s = 0.1;
    cpu_s = 0.05;
  }

  char tmpl[] = "/tmp/plan-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("plan_bench: mkdtemp");
    return 2;
  }
  const fs::path tmp = tmpl;
  const fs::path key = tmp / "signer.key";
  // The first build creates the key (and keeps a copy beside its ledger); every later build signs with it.
  {
    fs::path bp = make_blueprint(tmp / "keygen", "true", true, {});
    timed({warden, "build", bp.string(), "--out", (tmp / "keygen-out").string(), "--clock", "logical", "--jobs", "1",
           "--policy", (tmp / "keygen" / "policy.json").string()});
    fs::copy_file(tmp / "keygen-out" / "ledger" / "signer.key", key);
  }

  // A loop the shell runs for about `seconds` of one core, calibrated here once.
  const std::string spin = [&] {
    const std::string probe = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
    const double ms = timed({"sh", "-c", probe});
    const long iterations = std::max(1000L, static_cast<long>(200000.0 * cpu_s * 1000.0 / std::max(ms, 1.0)));
    return "i=0; while [ $i -lt " + std::to_string(iterations) + " ]; do i=$((i+1)); done";
  }();

  struct Section {
    std::string name, check;
    std::vector<int> refused;
    int judged_jobs = 0;
    double target = 0;
  };
  char sleep_text[32];
  std::snprintf(sleep_text, sizeof sleep_text, "sleep %.3f", sleep_s);
  const std::vector<Section> sections = {{"sleep", sleep_text, {}, 4, 0.35},
                                         {"cpu", spin, {}, 2, 0.65},
                                         {"waste", sleep_text, {2, 6}, 0, 0}};
  Json report = Json::object();
  bool pass = true;
  for (const Section& s : sections) {
    const fs::path seq_bp = make_blueprint(tmp / (s.name + "-seq"), s.check, false, s.refused);
    const fs::path queue_bp = make_blueprint(tmp / (s.name + "-queue"), s.check, true, s.refused);
    std::vector<double> seq, j2, j4;
    Build last2, last4;
    for (int r = 0; r < runs; ++r) {
      seq.push_back(build(warden, seq_bp, tmp / "out-seq", 1, key).ms);
      last2 = build(warden, queue_bp, tmp / "out-j2", 2, key);
      j2.push_back(last2.ms);
      last4 = build(warden, queue_bp, tmp / "out-j4", 4, key);
      j4.push_back(last4.ms);
    }
    const double m_seq = median(seq), m2 = median(j2), m4 = median(j4);
    const bool same = last2.records == last4.records;
    const int64_t commits = count_kind(last4.records, "commit");
    const int64_t thrown = count_kind(last4.records, "speculation");
    const int64_t ran = count_kind(last4.records, "run_result") + count_kind(last4.records, "base_run") +
                        count_kind(last4.records, "oracle_run") + thrown;
    Json sec = {{"sequential_ms", m_seq},
                {"jobs2_ms", m2},
                {"jobs4_ms", m4},
                {"jobs2_ratio", m2 / m_seq},
                {"jobs4_ratio", m4 / m_seq},
                {"ledgers_identical", same},
                {"commits", commits},
                {"speculations_thrown_away", thrown},
                {"thrown_away_per_commit", commits ? static_cast<double>(thrown) / commits : 0.0},
                {"sandbox_runs_per_commit", commits ? static_cast<double>(ran) / commits : 0.0}};
    std::string verdict = "context";
    if (s.judged_jobs) {
      const double ratio = s.judged_jobs == 4 ? m4 / m_seq : m2 / m_seq;
      const bool ok = ratio <= s.target;
      sec["target"] = "--jobs " + std::to_string(s.judged_jobs) + " <= " + std::to_string(s.target).substr(0, 4) + "x sequential";
      sec["pass"] = ok;
      verdict = ok ? "PASS" : "FAIL";
      if (!quick) pass = pass && ok;
    }
    if (!same) pass = false;
    report[s.name] = sec;
    if (!json) {
      std::printf("%-6s sequential %8.0f ms | --jobs 2 %8.0f ms (%.2fx) | --jobs 4 %8.0f ms (%.2fx) | ledgers %s | %s\n",
                  s.name.c_str(), m_seq, m2, m2 / m_seq, m4, m4 / m_seq, same ? "identical" : "DIFFER", verdict.c_str());
      if (s.name == "waste") {
        std::printf("       %lld commits, %lld speculations thrown away (%.2f per commit), %.2f sandbox runs per commit\n",
                    static_cast<long long>(commits), static_cast<long long>(thrown),
                    commits ? static_cast<double>(thrown) / commits : 0.0, commits ? static_cast<double>(ran) / commits : 0.0);
      }
    }
  }
  report["runs"] = runs;
  report["cores"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  report["pass"] = pass;
  if (json) std::cout << report.dump() << "\n";
  fs::remove_all(tmp);
  return pass ? 0 : 1;
}
