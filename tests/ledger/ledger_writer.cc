// ledger_writer DIR [--count N] [--seed S]
//
// Appends to an existing ledger, alternating single appends and batches of 1-50 records,
// forever or until N records are written. After each call returns, it prints one line per
// acknowledged record, "SEQ HASHHEX", and flushes: a line on stdout is a promise that the
// record is durable. The crash and concurrency tests kill it or run two at once and hold
// the ledger to every promise it printed.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "ledger/ledger.h"

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "ledger_writer: %s\n", message.c_str());
  std::exit(1);
}

uint64_t parse_u64(std::string_view text, const char* what) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) die(std::string("bad ") + what + ": " + std::string(text));
  return v;
}

struct Args {
  std::string dir;
  std::optional<uint64_t> count;  // forever when absent
  uint64_t seed = std::random_device{}();
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--count" && i + 1 < argc) a.count = parse_u64(argv[++i], "--count");
    else if (arg == "--seed" && i + 1 < argc) a.seed = parse_u64(argv[++i], "--seed");
    else if (a.dir.empty() && !arg.starts_with("--")) a.dir = arg;
    else die("usage: ledger_writer DIR [--count N] [--seed S]");
  }
  if (a.dir.empty()) die("usage: ledger_writer DIR [--count N] [--seed S]");
  return a;
}

// Acknowledges records only after the call that wrote them has returned successfully.
void acknowledge(const std::vector<warden::Appended>& appended) {
  std::string lines;
  for (const auto& a : appended) lines += std::to_string(a.seq) + " " + a.hash.hex() + "\n";
  std::fwrite(lines.data(), 1, lines.size(), stdout);
  if (std::fflush(stdout) != 0) die("writing acknowledgements failed");
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  warden::SystemClock clock;
  auto ledger = warden::Ledger::open(args.dir, warden::Ledger::Mode::read_write, clock);
  if (!ledger) die(ledger.error().message);

  std::mt19937_64 rng(args.seed);
  std::uniform_int_distribution<size_t> batch_size(1, 50);
  const auto pid = static_cast<int64_t>(::getpid());
  uint64_t written = 0;
  auto entry = [&] {
    return warden::AppendEntry{"run_event", {{"writer", pid}, {"n", written}, {"note", "written by ledger_writer"}}};
  };

  for (uint64_t call = 0; !args.count || written < *args.count; ++call) {
    if (call % 2 == 0) {
      auto a = ledger->append("run_event", entry().payload);
      if (!a) die("append: " + a.error().message);
      ++written;
      acknowledge({*a});
    } else {
      size_t n = batch_size(rng);
      if (args.count) n = std::min<uint64_t>(n, *args.count - written);
      std::vector<warden::AppendEntry> batch;
      for (size_t i = 0; i < n; ++i, ++written) batch.push_back(entry());
      auto a = ledger->append_batch(batch);
      if (!a) die("append_batch: " + a.error().message);
      acknowledge(*a);
    }
  }
  return 0;
}
