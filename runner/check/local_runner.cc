#include "runner/check/local_runner.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "common/file.h"
#include "runner/check/check_verdict.h"
#include "diff/diff_apply.h"
#include "runner/check/passed_tests_input.h"
#include "runner/sandbox/private_dir.h"
#include "runner/check/test_report.h"
#include "runner/environment/environment_store.h"
#include "runner/environment/toolchain.h"
#include "runner/check/unittest_reporter.h"

namespace warden {
namespace {

std::unexpected<Refusal> runner_error(RefusalCode code, const Error& e) {
  return std::unexpected(Refusal{code, "", e.message});
}

enum class ReportRead { ok, missing, too_large, not_regular };

// Reads a report the check wrote, from the run's upper layer only (a report already in the
// tree is not this run's evidence). The path is resolved beneath the layer with no symlinks
// at all: sandboxed code controls that directory, and the host must never follow its links.
ReportRead read_report(const std::filesystem::path& upper, const std::string& relative, std::string& out) {
  UniqueFd root(::open(upper.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return ReportRead::missing;
  open_how how{};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root.get(), relative.c_str(), &how, sizeof how)));
  if (!fd) return ReportRead::missing;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return ReportRead::not_regular;
  if (static_cast<uint64_t>(st.st_size) > kMaxReportBytes) return ReportRead::too_large;
  out.assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return ReportRead::ok;
}

// What one run of a check receives besides its workspace: the descriptors of its
// authenticated report channel and of its passed-tests file, when its spec declares them.
// They are given to the sandbox as inherited descriptors, named by environment variables.
struct RunInputs {
  std::optional<ReportChannel> channel;
  UniqueFd tests_from;
  UniqueFd unittest_reporter;
};

Result<RunInputs> open_run_inputs(const CheckSpec& spec, const std::vector<const CheckResult*>& from,
                                  const NonceSource& nonces, SandboxRequest& req) {
  RunInputs in;
  auto pass = [&req](const char* variable, int fd) {
    req.env[variable] = std::to_string(kFirstPassedFd + static_cast<int>(req.pass_fds.size()));
    req.pass_fds.push_back(fd);
  };
  if (spec.authenticated_report) {
    auto nonce = nonces();
    if (!nonce) return std::unexpected(nonce.error().with_context("report nonce"));
    auto channel = ReportChannel::open(*nonce);
    if (!channel) return std::unexpected(channel.error());
    in.channel.emplace(std::move(*channel));
    pass(kNonceFdVariable, in.channel->nonce_fd());
    pass(kReportFdVariable, in.channel->report_fd());
  }
  if (spec.unittest_reporter) {
    auto file = unittest_reporter_file();
    if (!file) return std::unexpected(file.error());
    in.unittest_reporter = std::move(*file);
    req.files.push_back(FileCopy{in.unittest_reporter.get(), std::string(kUnittestReporterDir) + "/sitecustomize.py", 0444});
    const auto own = req.env.find("PYTHONPATH");
    req.env["PYTHONPATH"] = std::string(kUnittestReporterDir) + (own == req.env.end() || own->second.empty() ? "" : ":" + own->second);
  }
  if (!spec.tests_from.empty()) {
    auto file = passed_tests_file(from);
    if (!file) return std::unexpected(file.error());
    in.tests_from = std::move(*file);
    pass(kTestsFromFdVariable, in.tests_from.get());
  }
  return in;
}

// The report of a check with an authenticated channel: only a report whose MAC verifies is
// parsed; the body, without its MAC line, is what is parsed (and so what any record holds).
bool channel_report(const ReportChannel& channel, CheckRun& run, std::string& body) {
  ChannelReport got = channel.read();
  switch (got.status) {
    case ChannelReport::Status::authenticated: body = std::move(got.body); return true;
    case ChannelReport::Status::missing: run.report = "missing"; break;
    case ChannelReport::Status::unauthenticated: run.report = "unauthenticated"; break;
    case ChannelReport::Status::too_large: run.report = "too_large"; break;
  }
  run.report_detail = "report channel: " + got.detail;
  return false;
}

// The run's environment: the spec's, and for a pytest report the option that makes pytest
// write its JUnit XML where read_test_report() looks, appended to any PYTEST_ADDOPTS the
// spec or profile sets, so the command runs as the user wrote it.
std::map<std::string, std::string> run_env(const CheckSpec& spec, const SandboxProfile& profile,
                                           const std::optional<Environment>& environment) {
  // The environment's variables under the check's own: a check may still set its own PATH.
  std::map<std::string, std::string> env = environment ? environment->env : std::map<std::string, std::string>{};
  for (const auto& [k, v] : spec.env) env[k] = v;
  if (spec.report_format == "pytest") {
    std::string opts = env.contains("PYTEST_ADDOPTS")            ? env["PYTEST_ADDOPTS"]
                       : profile.env.contains("PYTEST_ADDOPTS") ? profile.env.at("PYTEST_ADDOPTS")
                                                                 : "";
    env["PYTEST_ADDOPTS"] = (opts.empty() ? "" : opts + " ") + "--junitxml=" + profile.workspace + "/" + kPytestReportFile;
  }
  return env;
}

// Reads the check's test report — from its authenticated channel when it has one, else from
// where its format says (CheckSpec::report_source()) — and parses it into run.report,
// run.report_detail and run.tests. `body`: the bytes of a report file or channel, evidence
// to keep (a report on stdout or stderr is already kept as that stream).
void read_test_report(const CheckSpec& spec, const SandboxRun& result, const std::filesystem::path& upper,
                      const ReportChannel* channel, CheckRun& run, std::optional<std::string>& body) {
  std::string text;
  ReportSource source = spec.report_source();
  if (source == ReportSource::none) return;
  if (channel) {
    if (!channel_report(*channel, run, text)) return;
    body = text;
  } else if (source == ReportSource::file) {
    std::string path = spec.report_file();
    std::string who = spec.report_format == "pytest" ? "pytest (given --junitxml through PYTEST_ADDOPTS)" : "the check";
    switch (read_report(upper, path, text)) {
      case ReportRead::ok: break;
      case ReportRead::missing:
        run.report = "missing";
        run.report_detail = path + " was not written by " + who;
        return;
      case ReportRead::not_regular:
        run.report = "missing";
        run.report_detail = path + " is not a regular file";
        return;
      case ReportRead::too_large:
        run.report = "too_large";
        run.report_detail = path + " is larger than 16 MiB";
        return;
    }
    body = text;
  } else {
    bool out = source == ReportSource::stdout_stream;
    const StreamEvidence& stream = out ? result.out : result.err;
    text = stream.kept;
    if (stream.truncated) run.report_detail = std::string(out ? "stdout" : "stderr") + " was truncated; parsed the kept part";
  }
  auto tests = parse_report(spec.report_format, text);
  if (!tests) {
    run.report = "malformed";
    run.report_detail = tests.error().message;
    return;
  }
  run.report = "parsed";
  run.tests = std::move(*tests);
  if (no_test_ran(run.tests)) {
    std::string none = run.tests.empty() ? "no test ran: the " + spec.report_format + " report names no test"
                                         : "no test ran: all " + std::to_string(run.tests.size()) + " tests were skipped";
    run.report_detail = run.report_detail.empty() ? none : none + " (" + run.report_detail + ")";
  }
}

}  // namespace

std::vector<std::string> PreparedWorkspace::lowers() const {
  std::vector<std::string> out;
  if (layer) out.push_back((layer->path() / "tree").string());
  out.push_back(base_dir.string());
  return out;
}

Digest LocalRunner::keep(std::string bytes) {
  Digest d = sha256(bytes);
  if (bodies_) bodies_->emplace(d, std::move(bytes));
  return d;
}

Result<LocalRunner> LocalRunner::create(SandboxProfile profile, RunnerOptions options, SandboxHost host) {
  LocalRunner r;
  auto sandbox = Sandbox::create(std::move(profile), host);
  if (!sandbox) return std::unexpected(sandbox.error());
  r.sandbox_.emplace(std::move(*sandbox));
  r.options_ = std::move(options);
  if (Status st = ensure_owned_dir(r.options_.cache_dir); !st) return std::unexpected(st.error());
  auto cache = ResultCache::open(r.options_.cache_dir / "store");
  if (!cache) return std::unexpected(cache.error());
  r.stores_ = std::make_shared<Stores>();
  r.stores_->cache.emplace(std::move(*cache));
  r.stores_->bases.emplace(r.options_.cache_dir / "checkouts", host);
  if (r.options_.environment) {
    auto store = EnvironmentStore::open(r.options_.env_store.empty() ? EnvironmentStore::default_dir() : r.options_.env_store,
                                        host.drop ? std::optional<uid_t>(host.uid) : std::nullopt);
    if (!store) return std::unexpected(store.error());
    auto held = store->use(*r.options_.environment);  // the tree verified is the one held
    if (!held) return std::unexpected(held.error());
    auto env = store->open_verified(*r.options_.environment);
    if (!env) return std::unexpected(env.error());
    if (Status st = r.sandbox_->use_system_root(env->root); !st) return std::unexpected(st.error());
    r.environment_ = std::move(*env);
    r.stores_->environments.emplace(std::move(*store));
  }
  // A memo whose directory cannot be made Warden's is not written: the identity is the same,
  // the next runner reads the files again.
  std::filesystem::path memo_file = r.options_.file_digests.empty() ? default_file_digest_memo() : r.options_.file_digests;
  FileDigestMemo memo = ensure_owned_dir(memo_file.parent_path()) ? FileDigestMemo::load(memo_file) : FileDigestMemo();
  r.toolchain_ = toolchain_identity(r.sandbox_->profile(), host, memo,
                                    {r.options_.kernel_release_in_toolchain, r.environment_ ? &*r.environment_ : nullptr});
  r.toolchain_sha256_ = sha256(canonicalize(r.toolchain_).value());
  // A memo that cannot be written costs the next runner a re-read, not a wrong identity.
  (void)memo.save();
  return r;
}

Result<LocalRunner> LocalRunner::sibling() {
  LocalRunner r;
  auto sandbox = Sandbox::create(sandbox_->profile(), sandbox_->host());
  if (!sandbox) return std::unexpected(sandbox.error());
  r.sandbox_.emplace(std::move(*sandbox));
  if (environment_) {
    if (Status st = r.sandbox_->use_system_root(environment_->root); !st) return std::unexpected(st.error());
    r.environment_ = environment_;
  }
  r.sandbox_->adopt_preflight(sandbox_->preflight());
  r.options_ = options_;
  r.stores_ = stores_;
  r.toolchain_ = toolchain_;
  r.toolchain_sha256_ = toolchain_sha256_;
  return r;
}

Checked<ObjectId> LocalRunner::tree_under_test(GitRepo& repo, const RunRequest& request) {
  if (request.tree) return *request.tree;
  if (!request.diff) return request.base_tree;
  auto base = repo.tree(request.base_tree);
  if (!base) return std::unexpected(base.error());
  // Every pre-image, hunk and post-image hash is checked again here: the runner trusts no
  // one's word that a diff applies.
  auto files = resolve_diff(*request.diff, *base);
  if (!files) return std::unexpected(files.error());
  return repo.write_tree(request.base_tree, *files);
}

Checked<Digest> LocalRunner::tree_hash(GitRepo& repo, const ObjectId& tree) {
  std::lock_guard lock(stores_->mu);
  ResultCache::Memo memo = stores_->cache->memo();
  auto hash = tree_sha256(repo, tree, memo);
  if (!hash) return hash;
  if (Status st = memo.store(); !st) return runner_error(RefusalCode::runner_error, st.error());
  return hash;
}

Digest LocalRunner::cache_key(const ObjectId& tree, const Digest& tree_sha256, const std::vector<CheckSpec>& checks) const {
  Json specs = Json::array();
  for (const auto& c : checks) specs.push_back(c.to_json());
  Json key = {{"tree", tree.hex()},
              {"tree_sha256", tree_sha256.str()},
              {"checks", specs},
              {"profile_sha256", sandbox_->profile_digest().str()},
              {"toolchain_sha256", toolchain_sha256_.str()}};
  return sha256(canonicalize(key).value());
}

Checked<PreparedWorkspace> LocalRunner::prepare(GitRepo& repo, const ObjectId& base_tree, const ObjectId& tree,
                                                const std::vector<OverlayFile>& overlay) {
  PreparedWorkspace ws;
  ws.base_tree = base_tree;
  ws.tree = tree;
  auto base = [&] {
    std::lock_guard lock(stores_->mu);
    return stores_->bases->get(repo, base_tree);
  }();
  if (!base) return std::unexpected(base.error());
  ws.base_dir = base->path;
  if (base->discarded) ws.discarded = DiscardedCheckout{base_tree.hex(), *base->discarded};
  auto hash = tree_hash(repo, tree);
  if (!hash) return std::unexpected(hash.error());
  ws.tree_sha256 = *hash;
  if (!(tree == base_tree) || !overlay.empty()) {
    const SandboxHost& host = sandbox_->host();
    auto layer = ScratchDir::create(host.scratch_root, "warden-layer-", 0700);
    if (!layer) return runner_error(RefusalCode::workspace_error, layer.error());
    if (Status st = make_owned_dir(*layer / "tree", host.uid, host.gid, 0755); !st) {
      return runner_error(RefusalCode::workspace_error, st.error());
    }
    auto stats = write_diff_layer(repo, base_tree, tree, *layer / "tree", host);
    if (!stats) return std::unexpected(stats.error());
    ws.layer_stats = *stats;
    auto laid = write_overlay_files(overlay, *layer / "tree", host);
    if (!laid) return std::unexpected(laid.error());
    ws.layer_stats.written += laid->written;
    ws.layer.emplace(std::move(*layer));
  }
  return ws;
}

CheckRun LocalRunner::run_once(const PreparedWorkspace& ws, const CheckSpec& spec, const std::vector<const CheckResult*>& from) {
  CheckRun run;
  const SandboxHost& host = sandbox_->host();
  auto dir = sandbox_->run_scratch();
  if (!dir) {
    run.error = dir.error().message;
    run.outcome = kError;
    return run;
  }
  // The mount point is the sandbox's (bwrap binds it); the upper and work directories sit in
  // private/, which only Warden reaches, so no other process can write the run's files.
  const std::filesystem::path upper = *dir / "private" / "upper", work = *dir / "private" / "work";
  Status made = make_owned_dir(*dir / "private", ::geteuid(), ::getegid(), 0700);
  for (const auto& sub : {upper, work, *dir / "merged"}) {
    if (made) made = make_owned_dir(sub, host.uid, host.gid);
  }
  if (!made) {
    run.error = made.error().message;
    run.outcome = kError;
    return run;
  }
  SandboxRequest req;
  req.argv = spec.argv;
  req.overlay = OverlaySpec{ws.lowers(), upper.string(), work.string(), (*dir / "merged").string()};
  req.timeout_ms = spec.timeout_ms;
  req.env = run_env(spec, sandbox_->profile(), environment_);
  req.stop = stop_;
  auto inputs = open_run_inputs(spec, from, options_.nonce_source, req);
  if (!inputs) {
    run.error = inputs.error().message;
    run.outcome = kError;
    return run;
  }
  if (stop_.stop_requested()) {
    run.error = "cancelled";
    run.outcome = kError;
    return run;
  }
  auto result = sandbox_->run(req);
  if (!result) {
    run.error = result.error().message;
    run.outcome = kError;
    return run;
  }
  run.exit_code = result->exit_code;
  run.signal = result->signal;
  run.timed_out = result->timed_out;
  if (result->cancelled) run.error = "cancelled";
  run.output_limit_exceeded = result->output_limit_exceeded;
  run.limits_hit = result->limits_hit;
  run.duration_ms = result->duration_ms;
  const uint64_t cap = sandbox_->profile().output.keep_bytes;
  run.out = OutputEvidence{result->out.sha256, result->out.bytes, result->out.truncated, cap, result->out.head, result->out.tail,
                           keep(result->out.kept)};
  run.err = OutputEvidence{result->err.sha256, result->err.bytes, result->err.truncated, cap, result->err.head, result->err.tail,
                           keep(result->err.kept)};

  std::optional<std::string> report_body;
  read_test_report(spec, *result, upper, inputs->channel ? &*inputs->channel : nullptr, run, report_body);
  if (report_body) run.report_blob = keep(std::move(*report_body));
  // Declared artifacts come from this run's upper layer, like reports, and their bytes go
  // with the outcome to the caller's blob store.
  for (const auto& declared : spec.artifacts) {
    ArtifactEvidence a{declared.path, declared.type, false, 0, std::nullopt};
    std::string bytes;
    if (read_report(upper, declared.path, bytes) == ReportRead::ok) {
      a.present = true;
      a.bytes = bytes.size();
      a.sha256 = keep(std::move(bytes));
    }
    run.artifacts.push_back(std::move(a));
  }
  run.outcome = judge_run(run, spec);
  return run;
}

CheckResult LocalRunner::run_check(const PreparedWorkspace& ws, const CheckSpec& spec, const std::vector<const CheckResult*>& from) {
  CheckResult c;
  c.name = spec.name;
  c.argv = spec.argv;
  c.spec_sha256 = spec.digest();
  for (int64_t i = 0; i < spec.runs; ++i) c.runs.push_back(run_once(ws, spec, from));
  judge_check(c, spec);
  return c;
}

Checked<RunOutcome> LocalRunner::run(GitRepo& repo, const RunRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> names;
  for (const auto& c : request.checks) {
    if (!names.insert(c.name).second) return std::unexpected(Refusal{RefusalCode::invalid_check, c.name, "two checks share this name"});
    if (!canonicalize(c.to_json())) return std::unexpected(Refusal{RefusalCode::invalid_check, c.name, "not valid UTF-8"});
    for (const auto& from : c.tests_from) {
      if (!names.contains(from) || from == c.name) {
        return std::unexpected(Refusal{RefusalCode::invalid_check, c.name, "tests_from names \"" + from + "\", which is not an earlier check"});
      }
    }
  }
  if (request.checks.empty()) return std::unexpected(Refusal{RefusalCode::invalid_check, "", "no checks to run"});
  // The environment is held for the run, not for the runner's life: a long-lived runner does
  // not keep every environment it ever ran on from gc.
  std::optional<StoreHold> environment_held;
  if (environment_) {
    auto held = stores_->environments->use(environment_->digest);
    if (!held) return runner_error(RefusalCode::runner_error, held.error());
    environment_held.emplace(std::move(*held));
  }
  auto tree = tree_under_test(repo, request);
  if (!tree) return std::unexpected(tree.error());
  auto hash = tree_hash(repo, *tree);
  if (!hash) return std::unexpected(hash.error());

  RunOutcome outcome;
  outcome.cache_key = cache_key(*tree, *hash, request.checks);
  auto with_request = [&](RunResult r) {
    // Which base and diff led here describes this request; the evidence is the tree's.
    if (request.diff || !(*tree == request.base_tree)) r.base_tree = request.base_tree.hex();
    else r.base_tree.reset();
    if (request.diff) r.diff_sha256 = request.diff->digest();
    else r.diff_sha256.reset();
    return r;
  };
  const bool use_cache = !request.sealed() && (options_.use_cache || request.reuse);
  if (use_cache) {
    auto hit = cached(outcome.cache_key);
    if (hit && *hit) {
      outcome.result = with_request(std::move((*hit)->result));
      outcome.bodies = std::move((*hit)->bodies);
      outcome.cache_hit = true;
      return outcome;
    }
  }

  // Fail closed: nothing runs on a sandbox that cannot prove itself.
  const PreflightReport& preflight = sandbox_->preflight();
  if (!preflight.ok) {
    return std::unexpected(Refusal{RefusalCode::sandbox_unavailable, "", "preflight failed: " + preflight.failures()});
  }
  auto ws = prepare(repo, request.base_tree, *tree, request.overlay);
  if (!ws) return std::unexpected(ws.error());
  if (ws->discarded) outcome.discarded_checkouts.push_back(*ws->discarded);

  RunResult& r = outcome.result;
  r.tree = tree->hex();
  r.tree_sha256 = *hash;
  r.profile = sandbox_->profile().name;
  r.profile_sha256 = sandbox_->profile_digest();
  r.preflight = preflight;
  r.toolchain = toolchain_;
  r.toolchain_sha256 = toolchain_sha256_;
  if (environment_) r.environment = environment_->digest;
  stop_ = request.stop;
  bodies_ = &outcome.bodies;
  r.checks.reserve(request.checks.size());  // `from` points into it
  for (const auto& spec : request.checks) {
    std::vector<const CheckResult*> from;
    for (const auto& name : spec.tests_from) {
      from.push_back(&*std::find_if(r.checks.begin(), r.checks.end(), [&](const CheckResult& c) { return c.name == name; }));
    }
    r.checks.push_back(run_check(*ws, spec, from));
  }
  stop_ = {};
  bodies_ = nullptr;
  r.invariants = prove_invariants(request.checks, r.checks);
  r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (use_cache && ResultCache::cacheable(r)) {
    // Losing a cache entry costs a rerun, never a wrong answer: a failed store is not fatal.
    std::lock_guard lock(stores_->mu);
    (void)stores_->cache->put(outcome.cache_key, r, outcome.bodies);
  }
  r = with_request(std::move(r));
  return outcome;
}

}  // namespace warden
