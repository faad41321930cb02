// One CLI a person learns once. The commands are read from `warden --help` and
// each command's own --help (never a hand list), so a new command or subcommand is held to
// the same rules without editing this file:
//   - every command answers --help: exit 0, a usage on stdout, nothing on stderr;
//   - every command that takes --json, given a missing file and then an unknown flag, prints
//     one line on stderr and JSON Lines on stdout ending in the error line, whose exit_code
//     is the process's and one the help documents;
//   - a typical success of the commands cheap enough to run here prints JSON Lines: every
//     line parses alone, events first in the one event schema, exactly one result line last,
//     and every key at every depth is snake_case (docs/commands.md, "JSON Lines").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/git_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ------------------------------------------------------------------ reading --help

// The lines of a help section ("Subcommands:", "Options:", ...) up to the next blank line.
std::vector<std::string> help_section(const std::string& help, std::string_view title) {
  std::vector<std::string> out;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line == title;
      continue;
    }
    if (line.empty()) break;
    out.push_back(line);
  }
  return out;
}

// An entry of a section: two spaces, then its name (a continuation line is indented more).
std::vector<std::string> entry_lines(const std::vector<std::string>& section) {
  std::vector<std::string> out;
  for (const auto& line : section) {
    if (line.size() > 2 && line.starts_with("  ") && line[2] != ' ') out.push_back(line.substr(2));
  }
  return out;
}

std::string first_word(const std::string& text) { return text.substr(0, text.find(' ')); }

struct Command {
  std::vector<std::string> words;  // after `warden`
  std::string help;                // its own --help

  std::string name() const {
    std::string out = "warden";
    for (const auto& w : words) out += " " + w;
    return out;
  }
  bool takes_json() const {
    for (const auto& entry : entry_lines(help_section(help, "Options:"))) {
      if (first_word(entry) == "--json") return true;
    }
    return false;
  }
  // Required positionals and options with a value to give each: "FILE" or "--repo".
  std::vector<std::string> required_positionals() const { return required(help_section(help, "Positionals:")); }
  std::vector<std::string> required_options() const {
    std::vector<std::string> out;
    for (std::string name : required(help_section(help, "Options:"))) {
      // "-o,--output": the long name.
      if (auto comma = name.rfind(','); comma != std::string::npos) name = name.substr(comma + 1);
      out.push_back(name);
    }
    return out;
  }

 private:
  static std::vector<std::string> required(const std::vector<std::string>& section) {
    std::vector<std::string> out;
    for (const auto& entry : entry_lines(section)) {
      const std::string head = entry.substr(0, entry.find("  "));  // name and type, before the description
      if (head.find("REQUIRED") != std::string::npos) out.push_back(first_word(entry));
    }
    return out;
  }
};

ProcessResult help_of(const std::vector<std::string>& words) {
  std::vector<std::string> args = words;
  args.push_back("--help");
  return warden(args);
}

// Every command and subcommand, depth first, as the help texts name them.
const std::vector<Command>& all_commands() {
  static const std::vector<Command> commands = [] {
    std::vector<Command> out;
    std::vector<std::vector<std::string>> pending;
    ProcessResult top = help_of({});
    for (const auto& entry : entry_lines(help_section(top.out, "Subcommands:"))) pending.push_back({first_word(entry)});
    while (!pending.empty()) {
      std::vector<std::string> words = pending.front();
      pending.erase(pending.begin());
      ProcessResult help = help_of(words);
      std::vector<std::vector<std::string>> children;
      for (const auto& entry : entry_lines(help_section(help.out, "Subcommands:"))) {
        children.push_back(words);
        children.back().push_back(first_word(entry));
      }
      out.push_back({words, help.out});
      pending.insert(pending.begin(), children.begin(), children.end());
    }
    return out;
  }();
  return commands;
}

// The exit codes the help texts document: the global list, and the numbers a command's own
// help gives on a line that speaks of exiting.
std::set<int> documented_exit_codes(const Command& c) {
  std::set<int> codes;
  static const std::regex global_code(R"(^  (\d+) )");
  for (const auto& line : help_section(help_of({}).out, "Exit codes:")) {
    std::smatch m;
    if (std::regex_search(line, m, global_code)) codes.insert(std::stoi(m[1]));
  }
  static const std::regex number(R"(\b(\d{1,3})\b)");
  std::istringstream in(c.help);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("xit") == std::string::npos) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it) codes.insert(std::stoi((*it)[1]));
  }
  return codes;
}

// ------------------------------------------------------------------ checking JSON Lines

// A key that reads as a field name (letters, digits, '_' and '-' only, some lowercase) must
// be snake_case. Keys that are data are spelled as the data is: a plan's file contents keyed
// by path (a path has a '/' or a '.'), a profile's environment keyed by variable (HOME, TZ).
bool is_snake_case(const std::string& key) {
  static const std::regex field(R"(^[A-Za-z0-9_-]*[a-z][A-Za-z0-9_-]*$)");
  static const std::regex snake(R"(^[a-z0-9]+(_[a-z0-9]+)*$)");
  return !std::regex_match(key, field) || std::regex_match(key, snake);
}

// Every key of `value` at every depth that is not snake_case, as JSON pointers.
void non_snake_keys(const json& value, const std::string& at, std::vector<std::string>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      if (!is_snake_case(key)) out.push_back(at + "/" + key);
      non_snake_keys(child, at + "/" + key, out);
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) non_snake_keys(value[i], at + "/" + std::to_string(i), out);
  }
}

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// The lines of a --json stream, each checked alone; the last one is returned.
json expect_json_lines(const ProcessResult& r, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<json> lines;
  try {
    lines = stdout_json_lines(r);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return json();
  }
  EXPECT_FALSE(lines.empty()) << describe(r);
  if (lines.empty()) return json();
  EXPECT_TRUE(r.out.ends_with("\n")) << "the last line is not ended:\n" << describe(r);
  static const std::set<std::string> event_keys = {"type", "event_id", "run_id", "timestamp", "step_index", "tool_name", "data"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& line = lines[i];
    EXPECT_TRUE(line.is_object() && line.contains("type") && line["type"].is_string()) << "line " << i + 1 << ": " << line.dump();
    std::vector<std::string> bad;
    non_snake_keys(line, "", bad);
    EXPECT_TRUE(bad.empty()) << "line " << i + 1 << " has keys that are not snake_case: " << json(bad).dump() << "\n" << line.dump();
    if (i + 1 == lines.size()) break;
    EXPECT_NE(line.value("type", ""), "result") << "a result before the end";
    EXPECT_NE(line.value("type", ""), "error") << "an error before the end";
    // A listing's items (docs/commands.md: Listings) are lines of their own type.
    const std::string type = line.value("type", "");
    if (type == "record" || type == "run" || type == "environment") continue;
    // Every other line before the last is an event, with exactly the event schema's keys.
    std::set<std::string> keys;
    for (const auto& [key, v] : line.items()) keys.insert(key);
    EXPECT_EQ(keys, event_keys) << "line " << i + 1 << " is not an event: " << line.dump();
  }
  return lines.back();
}

json expect_result(const ProcessResult& r, const std::string& what, int exit_code = 0) {
  EXPECT_TRUE(r.exited_with(exit_code)) << what << "\n" << describe(r);
  json last = expect_json_lines(r, what);
  EXPECT_EQ(last.value("type", ""), "result") << what << "\n" << describe(r);
  return last;
}

// ------------------------------------------------------------------ --help

TEST(CliConformance, TheHelpListsEveryCommandGroup) {
  std::set<std::string> top;
  for (const auto& c : all_commands()) {
    if (c.words.size() == 1) top.insert(c.words[0]);
  }
  for (const char* expected : {"build", "propose", "ledger", "pipeline", "diff", "run", "replay", "plan"}) {
    EXPECT_TRUE(top.contains(expected)) << expected << " is missing from warden --help";
  }
  EXPECT_GT(all_commands().size(), 40u) << "subcommands were not found in the groups' --help";
}

TEST(CliConformance, EveryCommandAnswersHelp) {
  for (const auto& c : all_commands()) {
    SCOPED_TRACE(c.name());
    ProcessResult r = help_of(c.words);
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    EXPECT_NE(r.out.find("Usage: " + c.name()), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
}

// ------------------------------------------------------------------ typical errors

// A command line with every required positional and option given `missing`, a path that
// does not exist.
std::vector<std::string> with_missing_inputs(const Command& c, const std::string& missing) {
  std::vector<std::string> args = c.words;
  for (size_t i = 0; i < c.required_positionals().size(); ++i) args.push_back(missing);
  for (const auto& option : c.required_options()) {
    args.push_back(option);
    args.push_back(missing);
  }
  args.push_back("--json");
  return args;
}

void expect_one_error(const Command& c, const ProcessResult& r, const std::string& what) {
  SCOPED_TRACE(c.name() + " " + what);
  json last = expect_json_lines(r, what);
  EXPECT_NE(r.exit_code, 70) << "an internal error is a bug:\n" << describe(r);
  // No JSON (already a failure), or the command took the input (sandbox exec runs any command).
  if (!last.is_object() || last.value("type", "") == "result") return;
  ASSERT_EQ(last.value("type", ""), "error") << describe(r);
  EXPECT_EQ(stdout_json_lines(r).size(), 1u) << "an error with no run has no events:\n" << describe(r);
  EXPECT_EQ(last["error"]["exit_code"], r.exit_code) << describe(r);
  EXPECT_TRUE(last["error"]["code"].is_string() && last["error"]["message"].is_string()) << last.dump();
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(documented_exit_codes(c).contains(r.exit_code)) << "exit " << r.exit_code << " is not documented:\n" << c.help;
  EXPECT_EQ(line_count(r.err), 1u) << "the human message is one line on stderr:\n" << describe(r);
  EXPECT_TRUE(r.err.starts_with("warden: ")) << r.err;
}

TEST(CliConformance, AMissingFileUnderJsonIsOneErrorLine) {
  TempDir tmp;
  const std::string missing = (tmp / "missing" / "file.json").string();
  size_t checked = 0;
  for (const auto& c : all_commands()) {
    if (!c.takes_json()) continue;
    ++checked;
    expect_one_error(c, warden(with_missing_inputs(c, missing)), "with missing inputs");
  }
  EXPECT_GT(checked, 30u);
}

TEST(CliConformance, AnUnknownFlagUnderJsonIsAUsageErrorLine) {
  TempDir tmp;
  const std::string missing = (tmp / "missing").string();
  for (const auto& c : all_commands()) {
    if (!c.takes_json()) continue;
    std::vector<std::string> args = with_missing_inputs(c, missing);
    args.push_back("--no-such-flag");
    ProcessResult r = warden(args);
    EXPECT_TRUE(r.exited_with(2)) << c.name() << "\n" << describe(r);
    expect_one_error(c, r, "with an unknown flag");
    if (r.exited_with(2)) {
      EXPECT_EQ(stdout_json(r)["error"]["code"], "usage");
    }
  }
}

// A mistyped command or flag is a usage error that names the word meant: even with --help,
// which would otherwise print the general help and succeed.
TEST(CliConformance, AMistypedCommandOrFlagNamesTheOneMeant) {
  ProcessResult command = warden({"porpose", "x.patch"});
  EXPECT_TRUE(command.exited_with(2)) << describe(command);
  EXPECT_NE(command.err.find("unknown command \"porpose\" (did you mean propose?)"), std::string::npos) << command.err;
  ProcessResult help = warden({"nosuch", "--help"});
  EXPECT_TRUE(help.exited_with(2)) << describe(help);
  EXPECT_NE(help.err.find("unknown command \"nosuch\""), std::string::npos) << help.err;
  ProcessResult flag = warden({"propose", "x.patch", "--repo", ".", "--base", "main", "--chek", "true"});
  EXPECT_TRUE(flag.exited_with(2)) << describe(flag);
  EXPECT_NE(flag.err.find("(did you mean --check?)"), std::string::npos) << flag.err;
  ProcessResult far = warden({"ledger", "verify", "x", "--zzzzzzzz"});
  EXPECT_TRUE(far.exited_with(2)) << describe(far);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << "nothing is close to --zzzzzzzz: " << far.err;
}

// ------------------------------------------------------------------ typical successes

constexpr const char* kLeaves =
    "0000000000000000000000000000000000000000000000000000000000000001\n"
    "0000000000000000000000000000000000000000000000000000000000000002\n"
    "0000000000000000000000000000000000000000000000000000000000000003\n";

std::string example(const std::string& relative) { return std::string(WARDEN_SOURCE_DIR) + "/examples/" + relative; }

TEST(CliConformance, KeysNotesAndMerkleProofs) {
  TempDir tmp;
  json keys = expect_result(warden({"key", "generate", "example.com/log", "--json"}), "key generate");
  write_file(tmp / "signer.key", keys.value("signer_key", "") + "\n");
  write_file(tmp / "verifier.key", keys.value("verifier_key", "") + "\n");
  write_file(tmp / "text", "hello\n");
  ProcessResult signed_note = warden({"note", "sign", "--key", (tmp / "signer.key").string(), (tmp / "text").string()});
  ASSERT_TRUE(signed_note.exited_with(0)) << describe(signed_note);
  write_file(tmp / "note", signed_note.out);
  expect_result(warden({"note", "verify", "--key", (tmp / "verifier.key").string(), (tmp / "note").string(), "--json"}),
                "note verify");

  write_file(tmp / "leaves", kLeaves);
  const std::string leaves = (tmp / "leaves").string();
  json root = expect_result(warden({"merkle", "root", "--leaves", leaves, "--json"}), "merkle root");
  json inclusion = expect_result(warden({"merkle", "inclusion", "--leaves", leaves, "1", "--json"}), "merkle inclusion");
  json consistency = expect_result(warden({"merkle", "consistency", "--leaves", leaves, "1", "3", "--json"}), "merkle consistency");
  auto proof = [](const json& j) {
    std::string out;
    for (const auto& h : j.value("proof", json::array())) out += (out.empty() ? "" : ",") + h.get<std::string>();
    return out;
  };
  expect_result(warden({"merkle", "verify-inclusion", "--leaf-hash", inclusion.value("leaf_hash", ""), "--index", "1",
                        "--size", "3", "--root", root.value("root", ""), "--proof", proof(inclusion), "--json"}),
                "merkle verify-inclusion");
  expect_result(warden({"merkle", "verify-consistency", "--size1", "1", "--size2", "3", "--root1",
                        consistency.value("root1", ""), "--root2", consistency.value("root2", ""), "--proof",
                        proof(consistency), "--json"}),
                "merkle verify-consistency");
}

TEST(CliConformance, LedgerCommands) {
  TempDir tmp;
  const std::string dir = (tmp / "ledger").string();
  expect_result(warden({"ledger", "init", dir, "--json"}), "ledger init");
  write_file(tmp / "payload.json", R"({"run_id": "r1", "note": "hello"})");
  for (int i = 0; i < 3; ++i) {
    expect_result(warden({"ledger", "append", dir, "--kind", "note", "--payload", (tmp / "payload.json").string(), "--json"}),
                  "ledger append");
  }
  expect_result(warden({"ledger", "show", dir, "--json"}), "ledger show");
  expect_result(warden({"ledger", "show", dir, "1", "--json"}), "ledger show SEQ");
  json listed = expect_result(warden({"ledger", "show", dir, "0..", "--json"}), "ledger show A..");
  EXPECT_EQ(listed.value("records", 0u) + 1, stdout_json_lines(warden({"ledger", "show", dir, "0..", "--json"})).size());
  expect_result(warden({"runs", "list", dir, "--json"}), "runs list");
  expect_result(warden({"ledger", "prove", dir, "1", "--json"}), "ledger prove");
  expect_result(warden({"ledger", "consistency", dir, "1", "3", "--json"}), "ledger consistency");
  expect_result(warden({"ledger", "checkpoint", dir, "--json"}), "ledger checkpoint");
  expect_result(warden({"ledger", "verify", dir, "--json"}), "ledger verify");
  expect_result(warden({"ledger", "blob", "put", dir, (tmp / "payload.json").string(), "--json"}), "ledger blob put");
  const std::string exported = (tmp / "export").string();
  expect_result(warden({"ledger", "export", dir, exported, "--json"}), "ledger export");
  expect_result(warden({"ledger", "import", exported, (tmp / "imported").string(), "--json"}), "ledger import");
  expect_result(warden({"replay", dir, "--json"}), "replay");
}

TEST(CliConformance, PlansAndPipelines) {
  TempDir tmp;
  const std::string blueprint = example("calculator/blueprint.json");
  expect_result(warden({"plan", "generate", blueprint, "--json"}), "plan generate");
  ProcessResult plan = warden({"plan", "generate", blueprint, "-o", (tmp / "plan.json").string()});
  ASSERT_TRUE(plan.exited_with(0)) << describe(plan);
  expect_result(warden({"plan", "verify", (tmp / "plan.json").string(), "--json"}), "plan verify");

  const std::string config = example("pipelines/fan_out.json");
  expect_result(warden({"pipeline", "validate", config, "--json"}), "pipeline validate");
  const std::string ledger = (tmp / "ledger").string();
  ASSERT_TRUE(warden({"ledger", "init", ledger}).exited_with(0));
  ProcessResult run = warden({"pipeline", "run", config, "--input", "x", "--ledger", ledger, "--json"});
  json result = expect_result(run, "pipeline run");
  EXPECT_GT(stdout_json_lines(run).size(), 2u) << "the run's events come before its result";
  expect_result(warden({"pipeline", "show", result.value("run_id", ""), "--ledger", ledger, "--json"}), "pipeline show");
}

// A repository whose test is a shell script, for diff, run and propose.
class RepoCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("greet.txt", "hello\n");
    repo.write("test.sh", "grep -q hello greet.txt\n");
    base = repo.commit_all("base");
  }
  std::string patch(const std::string& name, const std::string& greeting) {
    return repo.patch_file(base, name, {{"greet.txt", greeting}}).string();
  }
  std::vector<std::string> on_repo(std::vector<std::string> args) {
    args.insert(args.end(), {"--repo", repo.repo().string(), "--base", base});
    return args;
  }
  GitRepoFixture repo;
  std::string base;
};

TEST_F(RepoCommands, DiffsRunsAndProposals) {
  const std::string good = patch("good.patch", "hello, world\n");
  json parsed = expect_result(warden(on_repo({"diff", "parse", good, "--json"})), "diff parse");
  write_file(repo.scratch("diff.json"), parsed["diff"].dump());
  const std::string diff = repo.scratch("diff.json").string();
  expect_result(warden(on_repo({"diff", "check", diff, "--json"})), "diff check");
  expect_result(warden(on_repo({"diff", "apply", diff, "--json"})), "diff apply");
  expect_result(warden(on_repo({"diff", "commit", diff, "--branch", "b1", "--timestamp", kCommitTimestamp, "--json"})),
                "diff commit");
  expect_result(warden(on_repo({"run", "--diff", diff, "--check", "sh test.sh", "--json"})), "run");

  const std::string ledger = repo.scratch("ledger").string();
  ProcessResult accepted = warden(on_repo({"propose", good, "--check", "sh test.sh", "--ledger", ledger, "--json"}));
  json decision = expect_result(accepted, "propose (accepted)");
  EXPECT_EQ(decision["decision"], "accepted") << decision.dump();
  EXPECT_EQ(stdout_json_lines(accepted).front()["type"], "run_started") << accepted.out;
  expect_result(warden({"run", "status", decision.value("run_id", ""), "--ledger", ledger, "--json"}), "run status");
  expect_result(warden({"run", "recover", "--ledger", ledger, "--json"}), "run recover");

  const std::string bad = patch("bad.patch", "goodbye\n");
  json refused = expect_result(
      warden(on_repo({"propose", bad, "--check", "sh test.sh", "--ledger", ledger, "--branch", "other", "--json"})),
      "propose (refused)", 1);
  EXPECT_EQ(refused["decision"], "refused") << refused.dump();
  EXPECT_EQ(refused["base_commit"], base);
  EXPECT_FALSE(refused.contains("branch") || refused.contains("error_type")) << refused.dump();
  EXPECT_TRUE(repo.try_git({"rev-parse", "--verify", "refs/heads/other"}).exit_code != 0) << "no branch was created";
}

TEST(CliConformance, ABuildStreamsEventsThenOneResult) {
  TempDir tmp;
  ProcessResult r = warden({"build", example("calculator/blueprint.json"), "--out", (tmp / "out").string(), "--clock",
                            "logical", "--json"});
  json result = expect_result(r, "build");
  auto lines = stdout_json_lines(r);
  ASSERT_GT(lines.size(), 5u);
  EXPECT_EQ(lines.front()["type"], "run_started");
  EXPECT_EQ(result["status"], "completed");
  std::set<std::string> types;
  for (const auto& line : lines) types.insert(line.value("type", ""));
  EXPECT_TRUE(types.contains("step_started") && types.contains("artifact_created")) << json(types).dump();
  for (const auto& line : lines) {
    if (line.value("type", "") != "artifact_created") continue;
    EXPECT_TRUE(line["data"].contains("artifact_id") && line["data"].contains("mime_type")) << line.dump();
  }
  const std::string ledger = (tmp / "out" / "ledger").string();
  expect_result(warden({"run", "status", result.value("run_id", ""), "--ledger", ledger, "--json"}), "run status of a build");
}

}  // namespace
}  // namespace warden::test
