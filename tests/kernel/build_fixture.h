// What the kernel's end-to-end tests read back after a real `warden build` or `warden
// propose`: the ledger's records (through `warden ledger export`, so the reader is the same
// one an auditor uses), its verification with the kernel's verifier key, and the commits a
// branch holds (through the git CLI, never libgit2). Header-only: every tests/kernel/*_test.cc
// is its own executable.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "tests/support/files.h"
#include "tests/support/warden_cli.h"
#include "tests/support/git_fixture.h"

namespace warden::test {

using nlohmann::json;

// Every record of the ledger at `ledger`, in order, as exported ({seq, kind, prev, ts,
// payload}), plus "hash": the record hash that git trailers and evidence lists name.
inline std::vector<json> ledger_records(const std::filesystem::path& ledger) {
  static std::atomic<int> counter{0};
  std::filesystem::path out = ledger.parent_path() / ("export-" + std::to_string(++counter));
  auto exported = warden({"ledger", "export", ledger.string(), out.string()});
  EXPECT_TRUE(exported.exited_with(0)) << describe(exported);
  std::vector<json> records;
  if (!exported.exited_with(0)) return records;
  for (const auto& line : complete_lines(read_file(out / "records.jsonl"))) {
    json record = json::parse(line);
    record["hash"] = sha256(std::string(1, '\0') + line).str();  // RFC 6962 leaf hash of the canonical line
    records.push_back(std::move(record));
  }
  std::filesystem::remove_all(out);
  return records;
}

// The payloads of the records of `kind`, in order.
inline std::vector<json> payloads(const std::vector<json>& records, std::string_view kind) {
  std::vector<json> out;
  for (const auto& r : records) {
    if (r.at("kind") == kind) out.push_back(r.at("payload"));
  }
  return out;
}

// The reason codes of a decision payload's verdict.
inline std::vector<std::string> reason_codes(const json& decision) {
  std::vector<std::string> codes;
  for (const auto& r : decision.at("verdict").at("reasons")) codes.push_back(r.at("code"));
  return codes;
}

inline bool has_code(const std::vector<std::string>& codes, std::string_view code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

// `warden ledger verify` with the kernel's verifier key (a file: the ledger's LEDGER/signer.pub).
inline void expect_ledger_verifies(const std::filesystem::path& ledger, const std::filesystem::path& verifier_key) {
  auto verified = warden({"ledger", "verify", ledger.string(), "--key", verifier_key.string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
}

inline std::string git_in(const std::filesystem::path& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {find_program("git"), "-C", repo.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv);
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return r.out;
}

// Whether `ref` names a commit in `repo`.
inline bool has_ref(const std::filesystem::path& repo, const std::string& ref) {
  return run({find_program("git"), "-C", repo.string(), "rev-parse", "--verify", "--quiet", ref + "^{commit}"})
      .exited_with(0);
}

// The commits on `branch` that `base` does not have, newest first.
inline std::vector<std::string> commits_since(const std::filesystem::path& repo, const std::string& base,
                                              const std::string& branch) {
  std::vector<std::string> out;
  for (const auto& line : complete_lines(git_in(repo, {"rev-list", base + ".." + branch}))) out.push_back(line);
  return out;
}

// Every commit on the branch beyond `base` was accepted: its Warden-Record trailer names an
// accepted decision record of the ledger for its Warden-Step. (The decision is flushed
// before the branch moves; the "commit" record comes after, so a process killed in between
// leaves a commit whose acceptance the decision still proves.)
inline void expect_branch_holds_only_accepted(const std::filesystem::path& repo, const std::string& base,
                                              const std::string& branch, const std::vector<json>& records) {
  for (const auto& id : commits_since(repo, base, branch)) {
    std::string message = git_in(repo, {"log", "-1", "--format=%B", id});
    auto field = [&](std::string_view name) {
      auto at = message.find(std::string(name) + ": ");
      if (at == std::string::npos) return std::string();
      at += name.size() + 2;
      return message.substr(at, message.find('\n', at) - at);
    };
    const std::string step = field("Warden-Step"), record = field("Warden-Record");
    auto it = std::find_if(records.begin(), records.end(), [&](const json& r) { return r.at("hash") == record; });
    ASSERT_NE(it, records.end()) << "commit " << id << " names no ledger record: " << message;
    EXPECT_EQ(it->at("kind"), "decision") << id;
    EXPECT_EQ(it->at("payload").at("step_id"), step) << id;
    EXPECT_EQ(it->at("payload").at("verdict").at("accepted"), true) << id;
  }
}

// fixtures/hang's hung check, as it shows in /proc: the processes still running it.
inline int hung_checks_running() {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    // A process may exit between opening its cmdline and reading it: libstdc++'s filebuf
    // then throws (ESRCH) whatever the stream's exception mask. Such a process is not running.
    std::string cmdline;
    try {
      std::ifstream in(entry.path() / "cmdline", std::ios::binary);
      cmdline.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    if (cmdline == std::string("sleep\0987\0", 10)) ++count;
  }
  return count;
}

// Polls `done` every 50 ms until it holds or `timeout` passes; returns whether it held.
template <typename Pred>
bool wait_until(Pred done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

inline std::filesystem::path fixture(std::string_view name) {
  return std::filesystem::path(WARDEN_SOURCE_DIR) / "tests" / "kernel" / "fixtures" / name;
}

}  // namespace warden::test
