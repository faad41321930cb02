// Where a run's time, ids and random draws come from: the system's, or for golden runs a
// logical clock, sequential ids and a seeded draw, so a run's ledger bytes depend only on its
// inputs. Every command that starts or continues a run takes its sources from here.
//
// A build's logical clock starts at 2023-11-14T22:13:20Z and advances one second a reading
// (git dates look like dates, and every reading is distinct); its ids count from 1. A
// pipeline's logical clock counts ticks from 0 and its ids from 1, and a pipeline run in a
// ledger that already holds records continues after them (continue_after), so the runs of
// one ledger never share an id or a timestamp.
//
// RunSources owns its sources; callers borrow them by reference for the run's life. Not
// thread-safe (a logical run is single-threaded by design: common/clock.h).
#pragma once

#include <memory>
#include <string_view>

#include "common/clock.h"
#include "common/error.h"
#include "common/random_source.h"

namespace warden {
class Ledger;
}

namespace warden::kernel {

struct RunSources {
  std::unique_ptr<Clock> clock;
  std::unique_ptr<IdSource> ids;
  std::unique_ptr<RandomSource> random;
  bool logical = false;

  // A build's or `warden propose`'s: `kind` is "system" or "logical" (--clock);
  // invalid_argument for anything else.
  static Result<RunSources> for_build(std::string_view kind);
  // A pipeline run's.
  static RunSources for_pipeline(bool logical);

  // A logical pipeline run continues after what `ledger` holds: its clock after the last
  // record's timestamp, its ids after the record count, in place (whoever borrowed them,
  // the ledger too, sees the new readings). A system run is left as it is.
  Status continue_after(const Ledger& ledger);
};

}  // namespace warden::kernel
