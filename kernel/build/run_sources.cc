#include "kernel/build/run_sources.h"

#include <string>

#include "ledger/ledger.h"

namespace warden::kernel {

Result<RunSources> RunSources::for_build(std::string_view kind) {
  RunSources s;
  if (kind == "logical") {
    s.clock = std::make_unique<LogicalClock>(1'700'000'000'000, 1000);
    s.ids = std::make_unique<SequentialIdSource>();
    s.random = std::make_unique<SeededRandomSource>(1);
    s.logical = true;
  } else if (kind == "system") {
    s.clock = std::make_unique<SystemClock>();
    s.ids = std::make_unique<RandomIdSource>();
    s.random = std::make_unique<SystemRandomSource>();
  } else {
    return fail(Errc::invalid_argument, "--clock must be system or logical, not " + std::string(kind));
  }
  return s;
}

RunSources RunSources::for_pipeline(bool logical) {
  RunSources s;
  s.logical = logical;
  if (logical) {
    s.clock = std::make_unique<LogicalClock>();
    s.ids = std::make_unique<SequentialIdSource>();
    s.random = std::make_unique<SeededRandomSource>(1);
  } else {
    s.clock = std::make_unique<SystemClock>();
    s.ids = std::make_unique<RandomIdSource>();
    s.random = std::make_unique<SystemRandomSource>();
  }
  return s;
}

Status RunSources::continue_after(const Ledger& ledger) {
  if (!logical) return {};
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  int64_t next_ts = 0;
  if (snap->size() > 0) {
    auto last = snap->record(snap->size() - 1);
    if (!last) return std::unexpected(last.error());
    next_ts = last->ts + 1;
  }
  // In place: the ledger (and whoever else borrowed them) holds these very objects.
  *static_cast<LogicalClock*>(clock.get()) = LogicalClock(next_ts);
  *static_cast<SequentialIdSource*>(ids.get()) = SequentialIdSource(snap->size() + 1);
  return {};
}

}  // namespace warden::kernel
