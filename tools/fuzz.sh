#!/usr/bin/env bash
# Fuzzes the patch parser with libFuzzer for a bounded time (default 60 s), starting from
# the seed corpus in tests/fuzz/patch_corpus. Exits non-zero on any crash, sanitizer
# report or timeout, leaving the reproducer in the work directory it prints.
#   tools/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps
seconds=${1:-60}
build=${WARDEN_FUZZ_BUILD_DIR:-build-fuzz}

cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARDEN_FUZZ=ON -DWARDEN_BUILD_TESTS=OFF -DWARDEN_BUILD_BENCH=OFF -DWARDEN_BUILD_SERVICE=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target patch_fuzz

work=$(mktemp -d /tmp/warden-fuzz-XXXXXX)
cp tests/fuzz/patch_corpus/* "$work/"
echo "== fuzzing the patch parser for ${seconds}s (work dir $work)"
cd "$work"
"$OLDPWD/$build/tools/fuzz/patch_fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -dict="$OLDPWD/tools/fuzz/patch.dict" -print_final_stats=1 . 2>&1 | tail -n 12
echo "fuzz: no crash in ${seconds}s"
rm -rf "$work"
