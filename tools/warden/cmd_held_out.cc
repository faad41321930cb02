// `warden held-out reveal DIGEST --ledger DIR`: publishes a held-out bundle and every run
// sealed with it (kernel/record/held_out_reveal.h), once no proposal is left for it to judge.
#include <iostream>

#include "common/clock.h"
#include "kernel/record/held_out_reveal.h"
#include "tools/warden/cli.h"

namespace warden::cli {

void add_held_out_commands(CLI::App& app, Action& action) {
  auto* group = app.add_subcommand("held-out", "Held-out checks: tests a proposal's author never sees (docs/held-out.md)");
  group->require_subcommand(1);
  struct Options {
    std::string digest, ledger;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* reveal = group->add_subcommand(
      "reveal",
      "Publish a held-out bundle in the ledger: its files and salt (replay holds them to the digest the plans committed "
      "to) and the result of every run that used it (replay re-derives those decisions from them). Until then replay "
      "reports those decisions as pending reveal. Reveal a bundle once no proposal is left for it to judge: after, "
      "anyone can read it");
  reveal->add_option("digest", opts->digest, "The bundle's digest, sha256:<64 hex>, as `warden propose` printed it")->required();
  reveal->add_option("--ledger", opts->ledger, "The ledger the bundle is sealed beside (its held-out/ directory)")->required();
  reveal->add_flag("--json", opts->json, "The reveal record as JSON");
  reveal->callback([opts, &action] {
    action = [opts]() -> int {
      auto digest = Digest::parse(opts->digest);
      if (!digest) return report_error(Error{Errc::invalid_argument, "digest: " + digest.error().message}, opts->json, kInvalidInput);
      SystemClock clock;
      auto ledger = Ledger::open(opts->ledger, Ledger::Mode::read_write, clock);
      if (!ledger) return report_error(ledger.error().with_context("--ledger " + opts->ledger), opts->json);
      auto revealed = kernel::reveal_held_out(*ledger, kernel::HeldOutVault(opts->ledger), *digest);
      if (!revealed) return report_error(revealed.error(), opts->json);
      if (opts->json) {
        print_json({{"seq", revealed->record.seq}, {"record_hash", revealed->record.hash.str()}, {"record", revealed->revealed.to_json()}});
      } else {
        std::cout << "revealed " << digest->str() << ": " << revealed->revealed.files.size() << " files, "
                  << revealed->revealed.runs.size() << " sealed runs, at record " << revealed->record.seq << "\n";
      }
      return kOk;
    };
  });
}

}  // namespace warden::cli
