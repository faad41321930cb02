// `warden`: the verification kernel's command-line tool.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "tools/warden/cli.h"
#include "tools/warden/suggest.h"
#include "tools/warden/warden_grpc_exec.h"

namespace {

constexpr const char* kFooter = R"(Exit codes:
  0   success
  1   verification failed: a ledger, proof, signature or note does not hold, or a precondition
      (a branch already past the run's base)
  2   usage error: bad flags or arguments
  3   invalid input: malformed JSON, hash, key or file, or a size limit exceeded
  4   not found: no such ledger, record, file or key
  5   I/O or storage error: permissions, disk, locks
  6   already exists: Warden never overwrites a ledger or an export
  70  internal error: a bug, please report it

Hashes on the command line are 64 lowercase hex characters; proofs are comma-separated
hashes in RFC 9162 order. Every command takes --help.)";

// Each top-level command and the function that adds it (with its subcommands) to the app.
struct CommandGroup {
  std::string_view name;
  void (*add)(CLI::App&, warden::cli::Action&);
};
constexpr CommandGroup kGroups[] = {
    {"approve", warden::cli::add_approve_commands},   {"build", warden::cli::add_build_commands},
    {"diff", warden::cli::add_diff_commands},         {"env", warden::cli::add_env_commands},
    {"held-out", warden::cli::add_held_out_commands}, {"key", warden::cli::add_key_commands},
    {"ledger", warden::cli::add_ledger_commands},     {"merkle", warden::cli::add_merkle_commands},
    {"note", warden::cli::add_note_commands},         {"checkpoint", warden::cli::add_note_commands},
    {"pipeline", warden::cli::add_pipeline_commands}, {"plan", warden::cli::add_plan_commands},
    {"propose", warden::cli::add_propose_commands},   {"receipt", warden::cli::add_receipt_commands},
    {"replay", warden::cli::add_replay_commands},     {"run", warden::cli::add_run_commands},
    {"sandbox", warden::cli::add_sandbox_commands},   {"runs", warden::cli::add_runs_commands},
    {"serve", warden::cli::add_serve_commands},       {"agents", warden::cli::add_fleet_commands},
    {"runner", warden::cli::add_fleet_commands},
};

// Ends the process once a command has finished. What a normal exit would still do is the
// libraries' tidying of memory the kernel takes back anyway (OpenSSL's tables, iostreams,
// the loader's finalizers): a fraction of a millisecond that every short command, and above
// all the one-shot `sandbox exec`, would pay. Everything a command owns was closed by RAII
// when its action returned; the streams are flushed here. Sanitizer builds exit normally, so
// LeakSanitizer still checks at exit.
[[noreturn]] void finish(int code) {
#if defined(__SANITIZE_ADDRESS__)
  std::exit(code);
#else
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
#endif
}

// The long options of the deepest subcommand the parse reached: where a mistyped flag was
// looked for.
std::vector<std::string> long_options_reached(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().back();
  std::vector<std::string> out;
  for (const CLI::Option* o : at->get_options()) {
    for (const std::string& name : o->get_lnames()) out.push_back("--" + name);
  }
  return out;
}

// " (did you mean --check?)" for the first word the parse could not place that is close to one
// of the reached subcommand's options; "" when none is.
std::string flag_suggestion(const CLI::App& app, const std::vector<std::string>& extras) {
  const std::vector<std::string> options = long_options_reached(app);
  for (const std::string& extra : extras) {
    if (!extra.starts_with("--")) continue;
    if (auto close = warden::cli::closest_word(extra.substr(0, extra.find('=')), options)) return " (did you mean " + *close + "?)";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // An ignored SIGCHLD is inherited across exec (a caller's accident, or a harness's choice):
  // the kernel would then reap Warden's children itself, and no exit status of a check, a git
  // process or a sandbox could be collected. Warden needs every one of them.
  struct sigaction default_chld {};
  default_chld.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &default_chld, nullptr);
  CLI::App app{"warden: a deterministic verification kernel with a tamper-evident ledger", "warden"};
  app.footer(kFooter);
  app.require_subcommand(1);
  // A usage error is one line on stderr, like every other error.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "warden: error: " + std::string(e.what()) + " (see --help)\n";
  });
  app.set_version_flag("--version", "warden 0.1.0");
  warden::cli::Action action;
  // Whether the command line asks for a --json stream, read before parsing so that even a
  // usage error ends the stream with its error line. Words after `--` are a sandboxed
  // command's, not Warden's.
  char** words_end = std::find_if(argv + 1, argv + argc, [](const char* arg) { return std::string_view(arg) == "--"; });
  const bool json = std::any_of(argv + 1, words_end, [](const char* arg) { return std::string_view(arg) == "--json"; });
  // build and run status|cancel|watch with --server are clients of `warden serve`.
  if (auto client = warden::cli::server_client_arguments(argc, argv)) return warden::cli::exec_warden_grpc(*client, json);
  // Only the named command's options are built: the whole tree (hundreds of options) costs
  // more than a short command's work. `warden --help`, an unknown command or none gets every
  // command, for the listing and the error.
  std::string_view first = argc > 1 ? argv[1] : "";
  const CommandGroup* named = nullptr;
  for (const auto& group : kGroups) {
    if (group.name == first) named = &group;
  }
  if (!named && !first.empty() && !first.starts_with("-")) {
    // Before --help can turn an unknown command into the general help and exit 0.
    std::vector<std::string> names;
    for (const auto& group : kGroups) names.emplace_back(group.name);
    auto close = warden::cli::closest_word(first, names);
    const std::string message = "unknown command \"" + std::string(first) + "\"" + (close ? " (did you mean " + *close + "?)" : "");
    std::cerr << "warden: error: " << message << " (see warden --help)\n";
    if (json) warden::cli::print_error_line("usage", message, warden::kUsage);
    return warden::kUsage;
  }
  if (named) {
    named->add(app, action);
  } else if (first != "--version") {
    for (auto it = std::begin(kGroups); it != std::end(kGroups); ++it) {
      // note and checkpoint share one function: add each function's commands once.
      auto same = [&](const CommandGroup& g) { return g.add == it->add; };
      if (std::find_if(std::begin(kGroups), it, same) == it) it->add(app, action);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string message = e.what() + flag_suggestion(app, app.remaining(true));
    std::cerr << "warden: error: " << message << " (see --help)\n";
    if (json) warden::cli::print_error_line("usage", message, warden::kUsage);
    return warden::kUsage;
  } catch (const CLI::ParseError& e) {
    // The failure message above goes to stderr; a --json stream still ends in its error line.
    app.exit(e);
    if (json) warden::cli::print_error_line("usage", e.what(), warden::kUsage);
    return warden::kUsage;
  }
  if (!action) {
    std::cerr << "warden: error: choose a subcommand (see warden --help)\n";
    if (json) warden::cli::print_error_line("usage", "choose a subcommand (see warden --help)", warden::kUsage);
    return warden::kUsage;
  }
  int code;
  try {
    code = action();
  } catch (const std::exception& e) {
    code = warden::cli::report_error(warden::Error{warden::Errc::internal, std::string("internal error: ") + e.what()},
                                     json, warden::kInternal);
  }
  finish(code);
}
