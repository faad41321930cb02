// The artifacts of an accepted step: every file the change wrote (typed by the step's
// `produces`, else "file") and every file a check declared and left behind (a built binary,
// a report), each with its MIME type, size and digest, its bytes in the ledger's blob store.
// Each is announced as an artifact_created event as it is recorded, and all of them are
// listed in the step's evidence record.
#pragma once

#include <string_view>
#include <vector>

#include "kernel/build/attempt.h"
#include "kernel/plan/build_plan.h"
#include "kernel/record/records.h"
#include "kernel/record/run_recorder.h"

namespace warden::kernel {

// By file name; checks may declare a type ("binary") that names it when the name does not.
std::string mime_type_for(std::string_view path, std::string_view type = {});

// The committed attempt's artifacts, recorded in order (bytes, then event).
std::vector<Artifact> record_artifacts(RunRecorder& rec, const BuildStep& step, int64_t step_index, const Attempt& attempt);

}  // namespace warden::kernel
