#!/usr/bin/env bash
# run.sh - runs every libFuzzer target of a fuzz build for a while each:
#   tests/fuzz/run.sh BUILD SECONDS
# Each target starts from its seed corpus in tests/fuzz/corpus/NAME (kept
# in the repository, never written to) and writes what it finds to a
# temporary folder.  A crash leaves its input (crash-*) in the current
# folder and makes the run fail.  The last line is "fuzz: N targets, ok"
# or says which failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: run.sh BUILD SECONDS}
secs=${2:?usage: run.sh BUILD SECONDS}
failed=()
n=0
for bin in "$build"/fuzz/fuzz_*; do
  [[ -x $bin ]] || continue
  name=$(basename "$bin")
  name=${name#fuzz_}
  n=$((n + 1))
  work=$(mktemp -d "${TMPDIR:-/tmp}/jobq-fuzz.XXXXXX")
  if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "$work" "$here/corpus/$name" >"$work.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work.log")
    echo "ok   fuzz $name: ${runs:-?} runs in ${secs}s"
  else
    echo "FAIL fuzz $name:"
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$work.log" | head -n 20 | sed 's/^/    /'
    failed+=("$name")
  fi
  rm -rf "$work" "$work.log"
done
if ((n == 0)); then
  echo "fuzz: no targets in $build/fuzz: build them first (make fuzz-build)"
  exit 1
fi
if ((${#failed[@]} > 0)); then
  echo "fuzz: $n targets, failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: $n targets, ok"
