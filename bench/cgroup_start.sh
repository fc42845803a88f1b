#!/usr/bin/env bash
# cgroup_start.sh - what a job's cgroup costs its start, build against build.
#
#   bench/cgroup_start.sh [-n JOBS] [-c N] [-r ROUNDS] [--no-cgroups]
#                         [--latency] BUILD...
#
# For each round, and in each round for each BUILD (a build directory
# holding jobq and jobq-exec) in turn, so that the builds alternate: a
# fresh SQLite queue in a temporary directory gets JOBS no-op jobs
# (default 2000, in one transaction), then `BUILD/jobq work -c N
# --until-empty -- /bin/true` (N default 1) drains them, started in a
# cgroup of its own below this shell's, so that every job gets a cgroup
# of its own as `jobq work` gives it.  With --no-cgroups each round also
# drains with the first BUILD and `--no-cgroups`, for what a cgroup adds.
# One line per drain: the jobs per second of the drain's wall time, the
# wall time per job, and the CPU time per job of the foreman and its jobs
# together (the usage_usec of that cgroup's cpu.stat), then the median of
# each.  With --latency each drain is followed by `jobq bench --workload
# latency --jobs 2500` in a cgroup of its own, whose fork-per-job foreman
# starts 100 jobs one at a time, 20 ms apart (each a start alone): the
# p50 and p99 of put to start.  Needs root, or a writable cgroup v2 hierarchy; the cgroups are
# named spn-PID-N and removed at the end.
set -eu

jobs=2000 conc=1 rounds=3 nocg=0 lat=0
builds=()
while (($#)); do
  case $1 in
    -n) jobs=$2; shift 2 ;;
    -c) conc=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --no-cgroups) nocg=1; shift ;;
    --latency) lat=1; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//;/^set -eu/d'; exit 0 ;;
    -*) echo "cgroup_start.sh: unknown option '$1'" >&2; exit 2 ;;
    *) builds+=("$(cd "$1" && pwd)"); shift ;;
  esac
done
((${#builds[@]})) || { echo "cgroup_start.sh: expected at least one build directory" >&2; exit 2; }
for b in "${builds[@]}"; do
  [[ -x $b/jobq && -x $b/jobq-exec ]] ||
    { echo "cgroup_start.sh: invalid build '$b': expected jobq and jobq-exec in it" >&2; exit 2; }
done

own=$(sed -n 's/^0:://p' /proc/self/cgroup)
mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[[ -n $mount ]] || { echo "cgroup_start.sh: no cgroup v2 hierarchy here" >&2; exit 1; }
parent=$mount${own%/}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spn-bench.XXXXXX")
cgs=()
cleanup() {
  for c in "${cgs[@]}"; do
    [[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

for ((i = 0; i < jobs; i++)); do echo '{"payload":"x"}'; done >"$tmp/jobs.ndjson"

# drain K LABEL BUILD [OPTION]: one drain, its line on stdout, its
# figures added to $tmp/fig.K (and LABEL in $tmp/label.K).
n=0
drain() {
  local k=$1 label=$2 build=$3 db=$tmp/q$n.db cg=$parent/spn-$$-$n
  shift 3
  echo "$label" >"$tmp/label.$k"
  n=$((n + 1))
  JOBQ_DB=sqlite:$db "$build/jobq" put --ndjson "$tmp/jobs.ndjson" >/dev/null
  mkdir "$cg"
  cgs+=("$cg")
  local t0 t1 cpu
  t0=$(date +%s%N)
  JOBQ_DB=sqlite:$db sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
    "$build/jobq" work -c "$conc" --until-empty --poll 100ms --state "$tmp/state.json" "$@" \
    -- /bin/true </dev/null >/dev/null 2>"$tmp/work.log" ||
    { echo "cgroup_start.sh: the drain failed: $(cat "$tmp/work.log")" >&2; exit 1; }
  t1=$(date +%s%N)
  cpu=$(sed -n 's/^usage_usec //p' "$cg/cpu.stat")
  grep -q "$jobs done" "$tmp/work.log" ||
    { echo "cgroup_start.sh: not every job was done: $(cat "$tmp/work.log")" >&2; exit 1; }
  awk -v l="$label" -v n="$jobs" -v ns=$((t1 - t0)) -v cpu="$cpu" 'BEGIN {
    s = ns / 1e9
    printf "%-40s %8.0f jobs/s %8.0f us/job wall %8.0f us/job cpu\n", l, n / s, s * 1e6 / n, cpu / n
    printf "%f %f %f\n", n / s, s * 1e6 / n, cpu / n >>"'"$tmp/fig.$k"'"
  }'
  rm -f "$db" "$db-wal" "$db-shm"
  find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  ((lat)) && latency "$label" "$build" "$@"
  return 0
}

# latency LABEL BUILD [OPTION]: put to start of jobs that start alone.
latency() {
  local label=$1 build=$2 cg=$parent/spn-$$-$n
  # jobq bench has no --no-cgroups for its foremen.
  (($# > 2)) && return 0
  n=$((n + 1))
  mkdir "$cg"
  cgs+=("$cg")
  sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
    "$build/jobq" bench --workload latency --jobs 5000 </dev/null >"$tmp/lat.out" 2>"$tmp/lat.err" ||
    { echo "cgroup_start.sh: the latency run failed: $(cat "$tmp/lat.err")" >&2; exit 1; }
  awk -v l="$label" '$1 == "latency" && $2 == "fork" && ($3 == "p50" || $3 == "p99") { v[$3] = $4 }
    END { printf "%-40s fork start alone: p50 %.2f ms, p99 %.2f ms\n", l, v["p50"], v["p99"] }' "$tmp/lat.out"
  find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
}

echo "# $jobs jobs of /bin/true, jobq work -c $conc, a cgroup per job, $rounds rounds; $(uname -r)"
for ((r = 1; r <= rounds; r++)); do
  for k in "${!builds[@]}"; do drain "$k" "${builds[k]}" "${builds[k]}"; done
  if ((nocg)); then drain nocg "${builds[0]} --no-cgroups" "${builds[0]}" --no-cgroups; fi
done
echo "# medians"
for f in "$tmp"/fig.*; do
  label=$(cat "$tmp/label.${f##*.}")
  for col in 1 2 3; do sort -g -k$col,$col "$f" | awk -v c=$col '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; done |
    paste -sd' ' | awk -v l="$label" '{ printf "%-40s %8.0f jobs/s %8.0f us/job wall %8.0f us/job cpu\n", l, $1, $2, $3 }'
done
