#include "service/warden_cli.h"

#include "common/exit_codes.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace warden::service {

namespace fs = std::filesystem;

fs::path warden_binary() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::path(".") : self.parent_path()) / "warden";
}

Result<CliRun> run_warden_to_end(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  SubprocessSpec spec;
  spec.argv = {warden_binary().string()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"PATH=/usr/bin:/bin", "LC_ALL=C"};
  spec.timeout = timeout;
  spec.max_stdout = size_t{64} << 20;
  auto done = run_subprocess(spec);
  if (!done) return std::unexpected(done.error());
  CliRun run;
  run.exit_code = done->ending == SubprocessResult::Ending::exited ? done->exit_code : -1;
  run.out = std::move(done->out);
  run.err = std::move(done->err);
  return run;
}

Error cli_error(const CliRun& run, const std::string& command) {
  // "warden: error: MESSAGE" is the CLI's one error line.
  std::string message = std::string(trim(run.err));
  if (auto at = message.rfind("warden: error: "); at != std::string::npos) message = message.substr(at + 15);
  if (message.empty()) message = "warden " + command + " ended abnormally";
  return Error{errc_for_exit(run.exit_code), message};
}

Result<std::string> run_warden(const std::vector<std::string>& args) {
  auto run = run_warden_to_end(args, std::chrono::minutes(2));
  if (!run) return std::unexpected(run.error());
  if (run->exit_code == kOk) return std::move(run->out);
  return std::unexpected(cli_error(*run, args.empty() ? std::string() : args[0]));
}

Result<Json> result_line(const CliRun& run, const std::string& command) {
  std::string_view text = run.out;
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const size_t nl = text.rfind('\n');
  auto line = parse_json(text.substr(nl == std::string_view::npos ? 0 : nl + 1));
  if (!line || !line->is_object() || line->value("type", std::string()) != "result") return std::unexpected(cli_error(run, command));
  return *line;
}

}  // namespace warden::service
