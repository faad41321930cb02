#!/usr/bin/env bash
# tools/check-architecture passes on this tree and fails, naming the rule, on a copy of it
# with one violation planted: the judge including the ledger, git and the sandbox; a class
# defined in tools/; a sub-library reaching the wrong way (plan -> record, runner model ->
# sandbox); the service reaching the build loop.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
check=$src/tools/check-architecture
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
"$check" "$src" >/dev/null || { echo "FAIL: the tree itself does not pass"; failures=$((failures + 1)); }

for dir in common ledger store supervisor diff executor client runner kernel service tools; do
  mkdir -p "$tmp/tree" && cp -r "$src/$dir" "$tmp/tree/$dir"
done
"$check" "$tmp/tree" >/dev/null || { echo "FAIL: the copy does not pass before any violation"; failures=$((failures + 1)); }

# expect_violation NAME FILE LINE PATTERN: FILE (in the copy) gets LINE appended; the check
# must fail with PATTERN in its output; the file is restored afterwards.
expect_violation() {
  local name=$1 file=$tmp/tree/$2 line=$3 pattern=$4 out
  cp "$file" "$tmp/saved"
  printf '%s\n' "$line" >>"$file"
  if out=$("$check" "$tmp/tree" 2>&1); then
    echo "FAIL: $name: the check passed"
    failures=$((failures + 1))
  elif ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL: $name: the check failed without saying so: $out"
    failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
  cp "$tmp/saved" "$file"
}

expect_violation "judge includes the ledger" kernel/judge/decide.cc '#include "ledger/ledger.h"' \
  'kernel/judge/decide.cc:.*must stay pure'
expect_violation "judge includes git" kernel/judge/policy.cc '#include <git2.h>' 'kernel/judge/policy.cc:.*must stay pure'
expect_violation "judge includes the sandbox" kernel/judge/oracle.cc '#include "runner/sandbox/sandbox.h"' \
  'kernel/judge includes runner/sandbox'
expect_violation "judge includes the service" kernel/judge/verdict.h '#include "service/server.h"' \
  'kernel/judge includes service'
expect_violation "tools defines a class" tools/warden/cmd_build.cc 'class BuildScheduler {' \
  'tools/warden/cmd_build.cc:.*tools/ defines a class'
expect_violation "tools defines a derived class" tools/warden_grpc/client_runs.cc 'class Watcher final : public Base {' \
  'tools/ defines a class'
expect_violation "plan reaches record" kernel/plan/build_plan.cc '#include "kernel/record/records.h"' \
  'kernel/plan includes kernel/record'
expect_violation "runner model reaches the sandbox" runner/model/run_result.cc '#include "runner/sandbox/sandbox.h"' \
  'runner/model includes runner/sandbox'
expect_violation "service reaches the build loop" service/run_manager.cc '#include "kernel/build/build_loop.h"' \
  'service includes kernel/build'
expect_violation "record reaches audit" kernel/record/records.cc '#include "kernel/audit/replay.h"' \
  'kernel/record includes kernel/audit'

[ $failures -eq 0 ] && echo "check-architecture: every planted violation caught"
exit $((failures > 0))
