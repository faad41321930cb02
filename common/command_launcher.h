// How executors start the programs they talk to (command proposers, pipeline command
// agents): a CommandLauncher runs one program to its end — argv, the program's declared
// environment, the step's context as stdin bytes, a deadline, a stop token and a cap on what
// it may write — and says how it confined it. The executor library depends on this seam and
// never on the sandbox; the one production implementation (runner/sandbox/sandboxed_launcher.h)
// runs each program in a sandbox profile of its own, and the command line wires it in.
//
// A LaunchRequest names the program as its executor's configuration does: relative paths
// in argv and `files` are relative to `dir` (the blueprint's or the pipeline config's
// folder). `files` are what the program must be able to read (its script, a key file its
// command names): a confining launcher makes exactly those visible, read-only, where the
// command line expects them; nothing else of `dir` or the host is the program's business.
//
// Ownership and threads: a launcher is shared by the executors built over it (shared_ptr)
// and launch() may be called from several threads at once (parallel pipeline stages).
// Errors: an Error from launch() means the program was never judged — it could not be
// started, or the launcher refuses to start anything (its sandbox's preflight failed:
// verification_failed). Everything the program did, including being killed, is in the
// SubprocessResult (common/subprocess.h), whose `err` holds the end of its stderr.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/subprocess.h"

namespace warden {

// How the programs a launcher starts are confined: recorded with what they produced (the
// kernel's proposal records, a pipeline run's launch record), so an auditor knows what the
// executor could reach. {"profile", "profile_sha256", "network"}.
struct LaunchConfinement {
  std::string profile;     // the sandbox profile's name
  Digest profile_sha256;   // its digest (the network setting included)
  bool network = false;    // whether the program had the host's network

  Json to_json() const;
  // Strict; errors name `where` and the field.
  static Result<LaunchConfinement> from_json(const Json& json, std::string_view where);
  bool operator==(const LaunchConfinement&) const = default;
};

struct LaunchRequest {
  // argv[0]: an absolute path, a path relative to `dir`, or a bare name looked up in the
  // launcher's PATH.
  std::vector<std::string> argv;
  // The program's declared environment, on top of the launcher's fixed one (never the
  // caller's own environment).
  std::map<std::string, std::string> env;
  std::filesystem::path dir;        // what relative paths in argv and `files` are relative to
  // Files the program reads, as its command line names them; a name that is not an existing
  // regular file (a flag, a mode word) is ignored.
  std::vector<std::string> files;
  std::string stdin_data;
  std::chrono::milliseconds timeout{30'000};
  std::stop_token stop;             // a stop request ends the program as a timeout would
  // The most the program may write (stdout, and stderr likewise); more kills it
  // (SubprocessResult::Ending::stdout_overflow).
  size_t max_output = size_t{1} << 20;
};

class CommandLauncher {
 public:
  virtual ~CommandLauncher() = default;
  virtual Result<SubprocessResult> launch(const LaunchRequest& request) = 0;
  virtual LaunchConfinement confinement() const = 0;
};

}  // namespace warden
