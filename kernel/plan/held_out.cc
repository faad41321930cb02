#include "kernel/plan/held_out.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <set>

#include "common/encoding.h"
#include "common/file.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

// A relative '/'-separated path with no empty, "." or ".." segment.
bool clean_relative(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.back() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view seg = path.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return path.find('\0') == std::string_view::npos;
}

// A segment no checkout writes (.git in any case, anywhere) or that is the kernel's (.warden).
bool kernel_segment(std::string_view path) {
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    std::string seg(path.substr(start, end - start));
    for (char& ch : seg) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (seg == ".git" || seg == ".warden") return true;
    start = end + 1;
  }
  return false;
}

Status check_at(std::string_view at) {
  if (!clean_relative(at)) return fail(Errc::invalid_argument, "held-out place \"" + std::string(at) + "\": must be a relative path with no \"..\"");
  if (kernel_segment(at)) return fail(Errc::invalid_argument, "held-out place \"" + std::string(at) + "\": names .git or .warden");
  return {};
}

Json file_listing(const HeldOutFile& f) { return {{"path", f.path}, {"mode", f.mode}, {"sha256", sha256(f.content).str()}}; }

}  // namespace

Json HeldOutBundle::listing() const {
  Json files = Json::array();
  for (const HeldOutFile& f : this->files) files.push_back(file_listing(f));
  return {{"format", kHeldOutFormat}, {"at", at}, {"files", std::move(files)}, {"salt", salt}};
}

Digest HeldOutBundle::digest() const {
  // Paths are UTF-8 (read_held_out_dir() and from_json() refuse others), so the listing
  // always canonicalizes; were it not to, no bundle may share the digest of another.
  auto text = canonicalize(listing());
  return text ? sha256(*text) : sha256("warden.held_out/v1 uncanonical " + to_hex(salt));
}

Json HeldOutBundle::to_json() const {
  Json j = listing();
  for (size_t i = 0; i < files.size(); ++i) j["files"][i]["content_base64"] = base64_encode(files[i].content);
  return j;
}

Result<HeldOutBundle> HeldOutBundle::from_json(const Json& json) {
  JsonReader r(json, "held-out bundle");
  HeldOutBundle b;
  std::string format;
  r.string("format", format);
  if (r.ok() && format != kHeldOutFormat) r.fail("format", "must be \"" + std::string(kHeldOutFormat) + "\"");
  r.string("at", b.at);
  r.string("salt", b.salt);
  if (r.ok() && (b.salt.size() != 64 || !from_hex(b.salt))) r.fail("salt", "must be 64 lowercase hex digits");
  if (const Json* files = r.value("files", Json::value_t::array)) {
    for (size_t i = 0; i < files->size() && r.ok(); ++i) {
      const std::string where = "held-out bundle.files[" + std::to_string(i) + "]";
      JsonReader f((*files)[i], where);
      HeldOutFile file;
      std::string encoded;
      Digest digest;
      int64_t mode = 0;
      f.string("path", file.path);
      f.integer("mode", mode, 0, 0777777);
      f.digest("sha256", digest);
      f.string("content_base64", encoded);
      if (f.ok() && (!clean_relative(file.path) || kernel_segment(file.path))) f.fail("path", "must be a relative path with no \"..\", .git or .warden");
      if (f.ok() && mode != 0100644 && mode != 0100755) f.fail("mode", "must be 33188 (0100644) or 33261 (0100755)");
      auto content = f.ok() ? base64_decode(encoded) : Result<std::string>(std::string());
      if (!content) f.fail("content_base64", content.error().message);
      if (f.ok() && sha256(*content) != digest) f.fail("sha256", "is not the digest of content_base64's bytes");
      r.adopt(f.finish());
      if (!r.ok()) break;
      file.mode = static_cast<uint32_t>(mode);
      file.content = std::move(*content);
      if (!b.files.empty() && b.files.back().path >= file.path) r.fail("files", "must be sorted by path, each once");
      b.files.push_back(std::move(file));
    }
  }
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  if (auto st = check_at(b.at); !st) return std::unexpected(st.error());
  return b;
}

namespace {

// The first line of `content` that marks a test as skipped or expected to fail, as "LINE: text";
// "" when none does. Only a pass counts in a held-out run (held_out_failures()), so such a test
// would refuse every proposal, the honest one too, and the executor could never learn why.
std::string skip_mark(std::string_view content) {
  static constexpr std::string_view kMarks[] = {
      "@unittest.skip", "@skip(", "@skipIf(", "@skipUnless(", "@unittest.expectedFailure", "@expectedFailure",
      ".skipTest(",     "SkipTest(", "@pytest.mark.skip", "@pytest.mark.xfail", "pytest.skip(", "pytest.xfail(",
      "it.skip(",       "test.skip(", "describe.skip(", "it.todo(", "test.todo(", "xit(", "xdescribe("};
  size_t line = 1, start = 0;
  while (start <= content.size()) {
    const size_t end = std::min(content.find('\n', start), content.size());
    const std::string_view text = content.substr(start, end - start);
    for (std::string_view mark : kMarks) {
      if (text.find(mark) != std::string_view::npos) return std::to_string(line) + ": " + std::string(text.substr(0, 120));
    }
    start = end + 1;
    ++line;
  }
  return "";
}

}  // namespace

Result<HeldOutBundle> read_held_out_dir(const std::filesystem::path& dir, std::string at, RandomSource& random) {
  while (at.ends_with("/")) at.pop_back();
  if (auto st = check_at(at); !st) return std::unexpected(st.error());
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return fail(Errc::invalid_argument, "held-out bundle " + dir.string() + ": not a directory");
  HeldOutBundle b;
  b.at = std::move(at);
  uint64_t total = 0;
  auto it = std::filesystem::recursive_directory_iterator(dir, ec);
  if (ec) return fail(Errc::io_error, "held-out bundle " + dir.string() + ": " + ec.message());
  for (; it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return fail(Errc::io_error, "held-out bundle " + dir.string() + ": " + ec.message());
    const std::filesystem::path& p = it->path();
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return fail(Errc::io_error, "held-out bundle: cannot stat " + p.string());
    if (S_ISDIR(st.st_mode)) continue;
    const std::string rel = std::filesystem::relative(p, dir).generic_string();
    if (!S_ISREG(st.st_mode)) {
      return fail(Errc::invalid_argument, "held-out bundle: " + rel + " is not a regular file (symlinks and special files are refused)");
    }
    if (!clean_relative(rel) || kernel_segment(rel) || !is_valid_utf8(rel)) {
      return fail(Errc::invalid_argument, "held-out bundle: " + rel + ": not a plain relative path outside .git and .warden");
    }
    if (b.files.size() == kMaxHeldOutFiles) {
      return fail(Errc::invalid_argument, "held-out bundle: more than " + std::to_string(kMaxHeldOutFiles) + " files");
    }
    auto content = read_file(p);
    if (!content) return std::unexpected(content.error());
    total += content->size();
    if (total > kMaxHeldOutBytes) return fail(Errc::invalid_argument, "held-out bundle: more than 64 MiB");
    if (std::string mark = skip_mark(*content); !mark.empty()) {
      return fail(Errc::invalid_argument, "held-out bundle: " + rel + " line " + mark +
                                              ": marks a test as skipped or expected to fail, but only a pass counts in a held-out "
                                              "run, so it would refuse every proposal; leave such tests out of the bundle");
    }
    b.files.push_back({rel, (st.st_mode & 0111) ? 0100755u : 0100644u, std::move(*content)});
  }
  if (b.files.empty()) return fail(Errc::invalid_argument, "held-out bundle " + dir.string() + ": no files");
  std::sort(b.files.begin(), b.files.end(), [](const HeldOutFile& x, const HeldOutFile& y) { return x.path < y.path; });
  std::array<uint8_t, 32> salt{};
  for (size_t i = 0; i < salt.size(); i += 8) {
    const uint64_t v = random.next_u64();
    for (size_t k = 0; k < 8; ++k) salt[i + k] = static_cast<uint8_t>(v >> (8 * k));
  }
  b.salt = to_hex(salt);
  return b;
}

std::string held_out_path(const HeldOutBundle& bundle, const HeldOutFile& file) { return bundle.at + "/" + file.path; }

bool under_held_out(std::string_view at, std::string_view path) {
  return path == at || (path.size() > at.size() && path.starts_with(at) && path[at.size()] == '/');
}

Json HeldOutSpec::to_json() const {
  Json list = Json::array();
  for (const CheckSpec& c : checks) list.push_back(c.to_json());
  Json j = {{"sha256", sha256.str()}, {"at", at}, {"checks", std::move(list)}};
  if (reveal == HeldOutReveal::at_run_end) j["reveal"] = "run_end";
  if (!steps.empty()) j["steps"] = steps;
  return j;
}

bool HeldOutSpec::judges(std::string_view step_id) const {
  return steps.empty() || std::find(steps.begin(), steps.end(), step_id) != steps.end();
}

Result<HeldOutSpec> HeldOutSpec::from_json(const Json& json, std::string_view where) {
  JsonReader r(json, std::string(where));
  HeldOutSpec s;
  r.digest("sha256", s.sha256);
  r.string("at", s.at);
  if (const Json* checks = r.value("checks", Json::value_t::array)) {
    std::set<std::string> names;
    for (size_t i = 0; i < checks->size() && r.ok(); ++i) {
      auto c = CheckSpec::from_json((*checks)[i], std::string(where) + ".checks[" + std::to_string(i) + "]");
      if (!c) {
        r.adopt(std::unexpected(c.error()));
        break;
      }
      if (!names.insert(c->name).second) r.fail("checks", "two checks are named " + c->name);
      s.checks.push_back(std::move(*c));
    }
    if (r.ok() && s.checks.empty()) r.fail("checks", "must hold at least one check");
  }
  std::string reveal = "owner";
  r.string("reveal", reveal, false);
  if (r.ok() && reveal != "owner" && reveal != "run_end") r.fail("reveal", "must be \"run_end\" or \"owner\" (the default)");
  s.reveal = reveal == "run_end" ? HeldOutReveal::at_run_end : HeldOutReveal::by_owner;
  r.strings("steps", s.steps, false);
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  if (auto st = check_at(s.at); !st) return std::unexpected(Error{Errc::invalid_argument, std::string(where) + ".at: " + st.error().message});
  return s;
}

Digest sealed_result_commitment(std::string_view salt, const Digest& run_result_sha256) {
  const Json j = {{"format", "warden.held_out_run/v1"}, {"salt", std::string(salt)}, {"run_result_sha256", run_result_sha256.str()}};
  return sha256(canonicalize(j).value());
}

// A test id names a file of the bundle by its path (without extension) as a path or a dotted
// module, or by its stem when that is long enough not to match by accident.
bool reports_the_bundle(const CheckResult& check, const HeldOutBundle& bundle) {
  std::vector<std::string> names;
  for (const HeldOutFile& f : bundle.files) {
    std::string path = f.path;
    const size_t slash = path.rfind('/'), dot = path.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)) path.resize(dot);
    std::string dotted = path;
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    const std::string stem = path.substr(path.rfind('/') + 1);
    names.push_back(path);
    names.push_back(dotted);
    if (stem.size() >= 4) names.push_back(stem);
  }
  return std::any_of(check.tests.begin(), check.tests.end(), [&](const TestCase& t) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return !n.empty() && t.id.find(n) != std::string::npos; });
  });
}

int64_t held_out_failures(const RunResult& run, const HeldOutBundle& bundle) {
  int64_t failed = 0;
  for (const CheckResult& c : run.checks) {
    int64_t failing_tests = 0;
    for (const TestCase& t : c.tests) {
      // A held-out test the proposal's code skips (unittest.SkipTest for inputs it does not
      // handle) proves nothing: only a pass counts.
      if (t.status != "passed") ++failing_tests;
    }
    // A check that reports tests but reported none of the bundle's ran nothing of it: code that
    // keeps the held-out tests from being found or from reporting fails them all, and so does
    // a check that never reaches the place they are laid.
    const bool reports = std::any_of(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.report != "none"; });
    if (failing_tests > 0) failed += failing_tests;
    else if (c.verdict != kPassed || (reports && !reports_the_bundle(c, bundle))) failed += 1;
  }
  return failed;
}

}  // namespace warden::kernel
