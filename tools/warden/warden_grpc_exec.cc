#include "tools/warden/warden_grpc_exec.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "common/error.h"
#include "common/exit_codes.h"
#include "tools/warden/json_lines.h"

namespace warden::cli {

std::optional<std::vector<std::string>> server_client_arguments(int argc, char** argv) {
  std::vector<std::string_view> words(argv + 1, argv + argc);
  words.erase(std::find(words.begin(), words.end(), "--"), words.end());
  const bool server = std::any_of(words.begin(), words.end(), [](std::string_view w) {
    return w == "--server" || w.starts_with("--server=");
  });
  if (!server || words.empty()) return std::nullopt;
  std::string command;
  size_t skip = 0;
  if (words[0] == "build") {
    command = "build", skip = 1;
  } else if (words[0] == "run" && words.size() > 1 && (words[1] == "status" || words[1] == "cancel" || words[1] == "watch")) {
    command = "run-" + std::string(words[1]), skip = 2;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> args{"client", command};
  args.insert(args.end(), argv + 1 + skip, argv + argc);
  return args;
}

int exec_warden_grpc(const std::vector<std::string>& args, bool json) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto program = (ec ? std::filesystem::path("warden") : self).parent_path() / "warden-grpc";
  std::vector<std::string> argv{program.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  ::execv(raw[0], raw.data());
  const int err = errno;
  const Error error{err == ENOENT ? Errc::not_found : Errc::io_error,
                    "cannot run " + program.string() + ": " + std::strerror(err) +
                        " (it is built with the service: cmake -DWARDEN_BUILD_SERVICE=ON, target warden-grpc)"};
  return report_error(error, json, err == ENOENT ? kNotFound : kIoError);
}

}  // namespace warden::cli
