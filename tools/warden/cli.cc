#include "tools/warden/cli.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "common/file.h"
#include "runner/check/report_detection.h"

namespace warden::cli {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t start = s.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? std::string() : s.substr(start);
}

}  // namespace

Result<NoteVerifier> load_verifier(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    auto text = read_file(arg, 64 * 1024);
    if (!text) return std::unexpected(text.error());
    auto v = NoteVerifier::parse(trim(*text));
    if (!v) return std::unexpected(v.error().with_context(arg));
    return v;
  }
  auto v = NoteVerifier::parse(arg);
  if (!v) {
    return fail(Errc::invalid_argument,
                "--key \"" + arg + "\" is neither a readable file nor a verifier key (" + v.error().message + ")");
  }
  return v;
}

Result<std::vector<NoteVerifier>> load_verifiers(const std::vector<std::string>& args) {
  std::vector<NoteVerifier> out;
  for (const auto& a : args) {
    auto v = load_verifier(a);
    if (!v) return std::unexpected(v.error());
    // The same key given twice is one key; two different keys with one name and hash stay
    // ambiguous, as the note spec requires.
    bool repeated = std::any_of(out.begin(), out.end(), [&](const auto& k) { return k.encoded() == v->encoded(); });
    if (!repeated) out.push_back(std::move(*v));
  }
  return out;
}

Result<Digest> parse_hex_digest(std::string_view text, std::string_view what) {
  auto d = Digest::from_hex(text);
  if (!d) return std::unexpected(d.error().with_context(what));
  return d;
}

Result<std::vector<Digest>> parse_proof(std::string_view text) {
  std::vector<Digest> out;
  if (text.empty()) return out;
  size_t i = 0;
  while (true) {
    size_t comma = text.find(',', i);
    auto part = text.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i);
    auto d = parse_hex_digest(part, "proof element " + std::to_string(out.size() + 1));
    if (!d) return std::unexpected(d.error());
    out.push_back(*d);
    if (comma == std::string_view::npos) break;
    i = comma + 1;
  }
  return out;
}

std::string join_proof(const std::vector<Digest>& proof) {
  std::string out;
  for (size_t i = 0; i < proof.size(); ++i) {
    if (i) out += ',';
    out += proof[i].hex();
  }
  return out;
}

const char* const kReportHelp =
    "Which test report a --check leaves (repeatable: one for every check, or one per check in order; "
    "default auto): auto, none, junit:PATH, tap[:PATH], unittest[:PATH], pytest, ctest[:PATH], go-json[:PATH]. "
    "auto reads the command: `python3 -m unittest ... -v` is unittest (its stderr; without -v unittest names no "
    "test, so the check is judged by its exit status alone and Warden says so), `pytest`/`python3 -m pytest` is "
    "pytest (Warden adds --junitxml to PYTEST_ADDOPTS and reads that file), `ctest` is ctest (stdout), "
    "`go test -json` is go-json (stdout), anything else (make test, a script) is none. A check whose report "
    "names no test that ran fails. Give --report for a script that wraps a runner (e.g. --report pytest for "
    "./test.sh calling pytest) or for TAP (make test printing TAP: --report tap).";

Result<std::vector<CheckSpec>> command_checks(const std::vector<std::string>& commands,
                                              const std::vector<std::string>& reports, std::string_view prefix) {
  if (reports.size() > 1 && reports.size() != commands.size()) {
    return fail(Errc::invalid_argument, "--report: give one for every --check, or one per --check (" +
                                            std::to_string(commands.size()) + "), not " + std::to_string(reports.size()));
  }
  std::vector<CheckSpec> out;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!is_valid_utf8(commands[i])) return fail(Errc::invalid_argument, "--check: not valid UTF-8");
    std::string name = std::string(prefix) + std::to_string(i + 1);
    // Each branch a view: mixing "auto" with a std::string would make the whole expression a
    // temporary string, and the view would dangle.
    std::string_view report = reports.empty() ? std::string_view("auto")
                              : reports.size() == 1 ? std::string_view(reports[0])
                                                    : std::string_view(reports[i]);
    auto check = command_check(name, commands[i], report);
    if (!check) return std::unexpected(check.error());
    if (!check->note.empty()) std::cerr << "warden: " << name << ": " << check->note << "\n";
    out.push_back(std::move(check->spec));
  }
  return out;
}

}  // namespace warden::cli
