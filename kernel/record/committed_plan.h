// A plan someone committed to a ledger earlier (`warden plan commit`, or a build's), found by
// its digest, so a run can start from it (`warden build --plan`, Kernel.StartRun's
// plan_sha256) without its blueprint.
//
// Found means: a plan_commit record names the digest and the plan_proposal record it points
// at (proposal_seq) holds a plan that parses and re-hashes to that digest. The ledger is not
// trusted to have kept what it was told: a plan whose bytes do not hash to the commit's digest
// is an error (corrupt), never a plan to build. Reads one snapshot; borrows the ledger.
#pragma once

#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/build_plan.h"
#include "ledger/ledger.h"

namespace warden::kernel {

// not_found when no plan_commit record names `plan_sha256` (a plan proposed and refused is not
// committed); corrupt when the commit's proposal does not hold that plan.
Result<BuildPlan> find_committed_plan(const Ledger& ledger, const Digest& plan_sha256);

}  // namespace warden::kernel
