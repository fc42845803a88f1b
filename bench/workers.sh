#!/usr/bin/env bash
# workers.sh - end-to-end throughput with real processes: N jobs put with
# one `jobq put --ndjson`, then W example workers (examples/worker.c)
# claiming and acknowledging in batches of B until the queue is empty.
# Prints the time of each step and checks that every job ended done.
#
# usage: bench/workers.sh [-n JOBS] [-w WORKERS] [-b BATCH]
#        (defaults 50000, 4, 10; JOBQ_BUILD selects the build, default build)
# It works in a new temporary directory and removes it afterwards.
set -euo pipefail

jobs=50000 workers=4 batch=10
while getopts n:w:b: opt; do
  case $opt in
    n) jobs=$OPTARG ;;
    w) workers=$OPTARG ;;
    b) batch=$OPTARG ;;
    *) echo "usage: bench/workers.sh [-n JOBS] [-w WORKERS] [-b BATCH]" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
dir=$(mktemp -d "${TMPDIR:-/tmp}/jobq-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export JOBQ_DB=sqlite:$dir/queue.db
now_ms() { date +%s%3N; }

seq 1 "$jobs" | awk '{ printf "{\"payload\":\"job %d\"}\n", $1 }' >"$dir/jobs.ndjson"
t0=$(now_ms)
"$build/jobq" put --ndjson "$dir/jobs.ndjson" >/dev/null
t1=$(now_ms)
for i in $(seq 1 "$workers"); do
  "$build/examples/worker" --batch "$batch" --idle 0s --name "bench-$i" >"$dir/worker-$i.out" &
done
wait
t2=$(now_ms)

done_n=$("$build/jobq" --json stats | grep -o '"done":[0-9]*' | awk -F: '{ n += $2 } END { print n + 0 }')
per_worker=$(cat "$dir"/worker-*.out | awk '{ printf "%s%s", sep, $3; sep = " " }')
echo "put $jobs jobs (one transaction): $((t1 - t0)) ms"
echo "workers: $workers, batch $batch: $((t2 - t1)) ms, $((jobs * 1000 / (t2 - t1 > 0 ? t2 - t1 : 1))) jobs/s (jobs per worker: $per_worker)"
if [[ $done_n -ne $jobs ]]; then
  echo "workers.sh: $done_n jobs done, expected $jobs" >&2
  exit 1
fi
