// warden serve: runs `warden-grpc serve` (the gRPC service lives in its own binary, beside
// this one, so that every other command starts without loading gRPC and protobuf).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "tools/warden/cli.h"

namespace warden::cli {

void add_serve_commands(CLI::App& app, Action& action) {
  auto* serve = app.add_subcommand(
      "serve", "Serve the kernel over gRPC (proto/warden.proto, package warden.v1) on a unix socket in the state "
               "directory (mode 0600) until SIGTERM; health (grpc.health.v1) and server reflection included. "
               "Options: --state DIR (required), --ledger DIR, --socket PATH, --sandbox-profile NAME.");
  serve->allow_extras();
  serve->prefix_command();
  serve->set_help_flag();  // --help goes to warden-grpc, which knows the options
  serve->callback([&action, serve] {
    action = [args = serve->remaining()] {
      std::error_code ec;
      auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
      auto server = (ec ? std::filesystem::path("warden") : self).parent_path() / "warden-grpc";
      std::vector<std::string> argv{server.string(), "serve"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      int err = errno;
      std::cerr << "warden: error: cannot run " << server.string() << ": " << std::strerror(err)
                << " (it is built with the service: cmake -DWARDEN_BUILD_SERVICE=ON, target warden-grpc)\n";
      return static_cast<int>(err == ENOENT ? kNotFound : kIoError);
    };
  });
}

}  // namespace warden::cli
