#include "runner/model/run_result.h"

#include <algorithm>
#include <set>

#include "common/json_reader.h"

namespace warden {
namespace {

bool valid_verdict(const std::string& v) {
  return v == kPassed || v == kFailed || v == kTimeout || v == kFlakyOracle || v == kError;
}
bool valid_outcome(const std::string& v) { return v == kPassed || v == kFailed || v == kTimeout || v == kError; }
bool valid_test_status(const std::string& v) { return v == "passed" || v == "failed" || v == "skipped" || v == "error"; }

Json output_json(const OutputEvidence& o) {
  return {{"sha256", o.sha256.str()}, {"bytes", o.bytes}, {"truncated", o.truncated}, {"cap", o.cap},
          {"head", o.head},           {"tail", o.tail},   {"blob", o.blob.str()}};
}

Json tests_json(const std::vector<TestCase>& tests) {
  Json out = Json::array();
  for (const auto& t : tests) out.push_back({{"id", t.id}, {"status", t.status}});
  return out;
}

Json run_json(const CheckRun& r, bool timing) {
  Json j = {{"exit_code", r.exit_code},
            {"signal", r.signal},
            {"timed_out", r.timed_out},
            {"output_limit_exceeded", r.output_limit_exceeded},
            {"stdout", output_json(r.out)},
            {"stderr", output_json(r.err)},
            {"report", r.report},
            {"report_detail", r.report_detail},
            {"tests", tests_json(r.tests)},
            {"outcome", r.outcome},
            {"error", r.error}};
  if (timing) j["duration_ms"] = r.duration_ms;
  if (r.report_blob) j["report_blob"] = r.report_blob->str();
  if (!r.limits_hit.empty()) j["limits_hit"] = r.limits_hit;
  if (!r.artifacts.empty()) {
    Json list = Json::array();
    for (const auto& a : r.artifacts) {
      Json aj = {{"path", a.path}, {"type", a.type}, {"present", a.present}};
      if (a.present) {
        aj["bytes"] = a.bytes;
        aj["sha256"] = a.sha256 ? a.sha256->str() : std::string();
      }
      list.push_back(std::move(aj));
    }
    j["artifacts"] = std::move(list);
  }
  return j;
}

Json judgement_json(const TestJudgement& t) {
  auto items = [](const std::vector<TestJudgement::Item>& list) {
    Json out = Json::array();
    for (const auto& i : list) out.push_back({{"id", i.id}, {"status", i.status}});
    return out;
  };
  return {{"fail_to_pass", items(t.fail_to_pass)}, {"pass_to_pass", items(t.pass_to_pass)}, {"ok", t.ok}};
}

Json result_json(const RunResult& r, bool timing) {
  Json checks = Json::array();
  for (const auto& c : r.checks) {
    Json runs = Json::array();
    for (const auto& run : c.runs) runs.push_back(run_json(run, timing));
    Json cj = {{"name", c.name},       {"argv", c.argv},        {"spec_sha256", c.spec_sha256.str()},
               {"verdict", c.verdict}, {"runs", runs},          {"tests", tests_json(c.tests)}};
    cj["judgement"] = c.judgement ? judgement_json(*c.judgement) : Json(nullptr);
    checks.push_back(std::move(cj));
  }
  Json invariants = Json::object();
  for (const auto& [name, v] : r.invariants) invariants[name] = {{"proven", v.proven}, {"check", v.check}};
  Json j = {{"format", kRunResultFormat},
            {"tree", r.tree},
            {"tree_sha256", r.tree_sha256.str()},
            {"base_tree", r.base_tree ? Json(*r.base_tree) : Json(nullptr)},
            {"diff_sha256", r.diff_sha256 ? Json(r.diff_sha256->str()) : Json(nullptr)},
            {"profile", r.profile},
            {"profile_sha256", r.profile_sha256.str()},
            {"preflight", r.preflight.to_json()},
            {"toolchain", r.toolchain},
            {"toolchain_sha256", r.toolchain_sha256.str()},
            {"checks", checks},
            {"invariants", invariants}};
  if (r.environment) j["environment"] = r.environment->str();
  if (timing) j["duration_ms"] = r.duration_ms;
  return j;
}

void read_output(JsonReader& parent, const std::string& key, OutputEvidence& o) {
  const Json* v = parent.value(key, Json::value_t::object);
  if (!v) return;
  JsonReader r(*v, parent.path(key));
  r.digest("sha256", o.sha256);
  r.unsigned_integer("bytes", o.bytes, 0, kMaxCanonicalInteger);
  r.boolean("truncated", o.truncated);
  r.unsigned_integer("cap", o.cap, 0, kMaxCanonicalInteger);
  r.string("head", o.head);
  r.string("tail", o.tail);
  r.digest("blob", o.blob);
  parent.adopt(r.finish());
}

void read_tests(JsonReader& parent, const std::string& key, std::vector<TestCase>& out) {
  const Json* list = parent.value(key, Json::value_t::array);
  if (!list) return;
  for (size_t i = 0; i < list->size() && parent.ok(); ++i) {
    JsonReader t((*list)[i], parent.path(key) + "[" + std::to_string(i) + "]");
    TestCase tc;
    t.string("id", tc.id);
    t.string("status", tc.status);
    if (t.ok() && !valid_test_status(tc.status)) t.fail("status", "must be passed, failed, skipped or error");
    parent.adopt(t.finish());
    out.push_back(std::move(tc));
  }
}

template <typename Item>
void each(JsonReader& parent, const std::string& key, Item&& item) {
  const Json* list = parent.value(key, Json::value_t::array);
  if (!list) return;
  for (size_t i = 0; i < list->size() && parent.ok(); ++i) {
    JsonReader r((*list)[i], parent.path(key) + "[" + std::to_string(i) + "]");
    item(r);
    parent.adopt(r.finish());
  }
}

}  // namespace

Json RunResult::to_json() const { return result_json(*this, true); }
Json RunResult::deterministic_json() const { return result_json(*this, false); }
Digest RunResult::digest() const { return sha256(canonicalize(to_json()).value()); }
Digest RunResult::deterministic_digest() const { return sha256(canonicalize(deterministic_json()).value()); }

bool RunResult::all_passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const CheckResult& c) { return c.verdict == kPassed; });
}

std::vector<Digest> RunResult::named_blobs() const {
  std::set<Digest> out;
  for (const CheckResult& c : checks) {
    for (const CheckRun& run : c.runs) {
      // A run that never started captured nothing: its evidence carries the zero digest.
      if (!run.out.blob.is_zero()) out.insert(run.out.blob);
      if (!run.err.blob.is_zero()) out.insert(run.err.blob);
      if (run.report_blob) out.insert(*run.report_blob);
      for (const ArtifactEvidence& a : run.artifacts) {
        if (a.present && a.sha256) out.insert(*a.sha256);
      }
    }
  }
  return {out.begin(), out.end()};
}

Result<RunResult> RunResult::from_json(const Json& json) {
  RunResult out;
  JsonReader r(json, "run_result");
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kRunResultFormat) r.fail("format", "unknown format \"" + format + "\"");
  r.string("tree", out.tree);
  if (r.ok() && (out.tree.size() != 40 || out.tree.find_first_not_of("0123456789abcdef") != std::string::npos)) {
    r.fail("tree", "must be a 40-hex git tree id");
  }
  r.digest("tree_sha256", out.tree_sha256);
  r.nullable_string("base_tree", out.base_tree);
  r.nullable_digest("diff_sha256", out.diff_sha256);
  r.string("profile", out.profile);
  r.digest("profile_sha256", out.profile_sha256);
  if (const Json* pf = r.value("preflight", Json::value_t::object)) {
    auto p = PreflightReport::from_json(*pf);
    if (!p) r.adopt(std::unexpected(p.error()));
    else out.preflight = std::move(*p);
  }
  if (const Json* tc = r.value("toolchain", Json::value_t::object)) out.toolchain = *tc;
  r.digest("toolchain_sha256", out.toolchain_sha256);
  if (r.value("environment", Json::value_t::string, false)) {
    Digest d;
    r.digest("environment", d);
    out.environment = d;
  }
  each(r, "checks", [&](JsonReader& c) {
    CheckResult cr;
    c.string("name", cr.name);
    c.strings("argv", cr.argv);
    c.digest("spec_sha256", cr.spec_sha256);
    c.string("verdict", cr.verdict);
    if (c.ok() && !valid_verdict(cr.verdict)) c.fail("verdict", "unknown verdict \"" + cr.verdict + "\"");
    each(c, "runs", [&](JsonReader& rr) {
      CheckRun run;
      rr.integer("exit_code", run.exit_code, -1, 255);
      rr.integer("signal", run.signal, 0, 64);
      rr.boolean("timed_out", run.timed_out);
      rr.boolean("output_limit_exceeded", run.output_limit_exceeded);
      rr.integer("duration_ms", run.duration_ms, 0, kMaxCanonicalInteger, false);
      read_output(rr, "stdout", run.out);
      read_output(rr, "stderr", run.err);
      rr.string("report", run.report);
      rr.string("report_detail", run.report_detail);
      if (rr.has("report_blob")) rr.optional_digest("report_blob", run.report_blob);
      read_tests(rr, "tests", run.tests);
      rr.string("outcome", run.outcome);
      if (rr.ok() && !valid_outcome(run.outcome)) rr.fail("outcome", "unknown outcome \"" + run.outcome + "\"");
      rr.string("error", run.error);
      rr.strings("limits_hit", run.limits_hit, false);
      if (rr.has("artifacts")) each(rr, "artifacts", [&](JsonReader& ar) {
        ArtifactEvidence a;
        ar.string("path", a.path);
        ar.string("type", a.type);
        ar.boolean("present", a.present);
        if (a.present) {
          ar.unsigned_integer("bytes", a.bytes, 0, kMaxCanonicalInteger);
          ar.optional_digest("sha256", a.sha256);
        }
        run.artifacts.push_back(std::move(a));
      });
      cr.runs.push_back(std::move(run));
    });
    read_tests(c, "tests", cr.tests);
    const Json* judgement = c.nullable_object("judgement");
    if (judgement) {
      JsonReader jr(*judgement, c.path("judgement"));
      TestJudgement tj;
      for (auto [key, list] : {std::pair{"fail_to_pass", &tj.fail_to_pass}, std::pair{"pass_to_pass", &tj.pass_to_pass}}) {
        each(jr, key, [&](JsonReader& item) {
          TestJudgement::Item it;
          item.string("id", it.id);
          item.string("status", it.status);
          list->push_back(std::move(it));
        });
      }
      jr.boolean("ok", tj.ok);
      c.adopt(jr.finish());
      cr.judgement = std::move(tj);
    }
    out.checks.push_back(std::move(cr));
  });
  if (const Json* inv = r.value("invariants", Json::value_t::object)) {
    for (const auto& [name, v] : inv->items()) {
      JsonReader ir(v, r.path("invariants") + "." + name);
      InvariantVerdict iv;
      ir.boolean("proven", iv.proven);
      ir.string("check", iv.check);
      r.adopt(ir.finish());
      out.invariants[name] = iv;
    }
  }
  r.integer("duration_ms", out.duration_ms, 0, kMaxCanonicalInteger, false);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return out;
}

}  // namespace warden
