#!/usr/bin/env bash
# work.sh - how fast `jobq work` runs jobs, on SQLite: jobs per second for
# one process per job and for persistent workers, with jobs that do
# nothing, at -c 1, 8 and 64; the foreman's peak memory (VmHWM from
# /proc) in each run; and the time from enqueue to start on an idle
# foreman, in both modes.  Every run starts from a fresh queue file in a
# temporary directory and checks that every job ended done.
#
# usage: bench/work.sh [-f FORK_JOBS] [-p PERSISTENT_JOBS] [-l LATENCY_JOBS]
#        (defaults 3000, 30000, 200; JOBQ_BUILD selects the build)
# The no-op job is /bin/true; the persistent worker is build/bench/work_job
# (C), which answers each job at once, so the numbers are the foreman's
# and the store's, not a language runtime's.
set -euo pipefail

fork_jobs=3000 persistent_jobs=30000 latency_jobs=200
while getopts f:p:l: opt; do
  case $opt in
    f) fork_jobs=$OPTARG ;;
    p) persistent_jobs=$OPTARG ;;
    l) latency_jobs=$OPTARG ;;
    *) echo "usage: bench/work.sh [-f FORK_JOBS] [-p PERSISTENT_JOBS] [-l LATENCY_JOBS]" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
jobq=$build/jobq
job=$build/bench/work_job
for bin in "$jobq" "$job" "$build/bench/work_latency"; do
  [[ -x $bin ]] || { echo "work.sh: $bin is missing: run make first" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/jobq-bench-work.XXXXXX")
trap 'rm -rf "$dir"' EXIT
now_ms() { date +%s%3N; }

fresh() {
  rm -f "$dir"/queue.db*
  export JOBQ_DB=sqlite:$dir/queue.db
}

# peak_rss PID: the largest VmHWM (kB) seen while PID runs.
peak_rss() {
  local pid=$1 peak=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    [[ -n $v && $v -gt $peak ]] && peak=$v
    sleep 0.05
  done
  echo "$peak"
}

# throughput MODE CONCURRENCY JOBS
throughput() {
  local mode=$1 c=$2 n=$3 args=() t0 t1 pid rss done_n
  fresh
  seq 1 "$n" | awk '{ print "{\"payload\":\"x\"}" }' >"$dir/jobs.ndjson"
  "$jobq" put --ndjson "$dir/jobs.ndjson" >/dev/null
  if [[ $mode == persistent ]]; then
    args=(--persistent -c "$c" --until-empty -- "$job" persistent)
  else
    args=(-c "$c" --until-empty -- true)
  fi
  t0=$(now_ms)
  "$jobq" work "${args[@]}" 2>"$dir/work.log" &
  pid=$!
  rss=$(peak_rss "$pid")
  wait "$pid"
  t1=$(now_ms)
  done_n=$("$jobq" --json stats | grep -o '"done":[0-9]*' | cut -d: -f2)
  if [[ $done_n != "$n" ]]; then
    echo "work.sh: $done_n of $n jobs done ($mode, -c $c)" >&2
    cat "$dir/work.log" >&2
    exit 1
  fi
  printf '%-13s -c %-3s %6d jobs in %6d ms: %6d jobs/s   foreman peak RSS %5.1f MiB\n' \
    "$mode" "$c" "$n" $((t1 - t0)) $((n * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1))) \
    "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
}

# latency MODE
latency() {
  local mode=$1 args pid
  fresh
  "$jobq" init >/dev/null
  if [[ $mode == persistent ]]; then
    args=(--persistent -c 1 -- "$job" persistent-stamp)
  else
    args=(-c 1 -- "$job" stamp)
  fi
  "$jobq" work "${args[@]}" 2>"$dir/work.log" &
  pid=$!
  until grep -q started "$dir/work.log"; do sleep 0.05; done
  sleep 0.5
  printf '%-13s idle foreman, ' "$mode"
  "$build/bench/work_latency" "$JOBQ_DB" "$latency_jobs" 20
  kill -TERM "$pid"
  wait "$pid"
}

echo "== this machine's ceiling for one process per job"
"$job" spawn 500
echo "== throughput: no-op jobs, SQLite (synchronous=FULL), one foreman"
for c in 1 8 64; do throughput fork-per-job "$c" "$fork_jobs"; done
for c in 1 8 64; do throughput persistent "$c" "$persistent_jobs"; done
echo "== enqueue to start (one put every 20 ms; includes the put's commit)"
latency fork-per-job
latency persistent
