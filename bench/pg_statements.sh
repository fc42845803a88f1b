#!/usr/bin/env bash
# pg_statements.sh - where a PostgreSQL server's time goes while one
# foreman drains a queue: a throwaway server (tests/pgserver.sh) with
# pg_stat_statements loaded, N no-op jobs put in one transaction, then drained by
# `jobq work --persistent -c C --until-empty` with jobq bench's own worker.
# It prints the drain's rate, the server's commits per 100 jobs and, for
# each statement of the drain, its calls and its server time per job.
# Server time is what the statements spent executing (commit flushes and
# round trips are not in it), so it moves far less from run to run than
# the rate does: compare builds with it.
#
# usage: bench/pg_statements.sh [-n JOBS] [-c CONCURRENCY] [-- WORK OPTIONS...]
#   JOBQ_BUILD selects the build (default build).
set -euo pipefail

jobs=30000 conc=4
while getopts n:c: opt; do
  case $opt in
    n) jobs=$OPTARG ;;
    c) conc=$OPTARG ;;
    *) echo "usage: bench/pg_statements.sh [-n JOBS] [-c CONCURRENCY] [-- WORK OPTIONS...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "pg_statements.sh: invalid -n '$jobs': expected a count of jobs" >&2; exit 2; }
[[ $conc =~ ^[1-9][0-9]*$ ]] || { echo "pg_statements.sh: invalid -c '$conc': expected a number of workers" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
[[ -x $build/jobq ]] || { echo "pg_statements.sh: $build/jobq is missing: run make first" >&2; exit 1; }
dir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-pgstat.XXXXXX")
trap '[[ -d $dir ]] && "$root/tests/pgserver.sh" stop "$dir"' EXIT

url=$("$root/tests/pgserver.sh" start "$dir")
sql() { psql "$url" -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
sql "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
"$root/tests/pgserver.sh" restart "$dir" >/dev/null
sql "CREATE EXTENSION pg_stat_statements"
"$build/jobq" --db "$url" init >/dev/null

queue=drain
awk -v n="$jobs" -v q="$queue" 'BEGIN { for (i = 0; i < n; i++) printf "{\"queue\":\"%s\",\"payload\":\"x\"}\n", q }' |
  "$build/jobq" --db "$url" put --ndjson - >/dev/null

sql "SELECT pg_stat_statements_reset()" >/dev/null
commits() { sql "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
c0=$(commits)
t0=$(date +%s.%N)
"$build/jobq" --db "$url" work --persistent -c "$conc" --until-empty -q "$queue" "$@" \
  -- "$build/jobq" bench --internal-worker 2>/dev/null
t1=$(date +%s.%N)
c1=$(commits)
left=$(sql "SELECT count(*) FROM jobq_jobs")
[[ $left = 0 ]] || { echo "pg_statements.sh: $left jobs were left in the queue" >&2; exit 1; }

awk -v n="$jobs" -v t0="$t0" -v t1="$t1" -v c=$((c1 - c0)) 'BEGIN {
  printf "drained %d jobs in %.2f s: %.0f jobs/s, %.1f commits per 100 jobs\n",
    n, t1 - t0, n / (t1 - t0), 100 * c / n }'
psql "$url" -qX -v ON_ERROR_STOP=1 -c "
  SELECT calls,
         round((total_exec_time * 1000 / $jobs)::numeric, 2) AS us_per_job,
         left(regexp_replace(query, '\s+', ' ', 'g'), 72) AS statement
  FROM pg_stat_statements
  WHERE query NOT LIKE '%pg_stat_%' AND query NOT LIKE '%xact_commit%'
  ORDER BY total_exec_time DESC LIMIT 12"
sql "SELECT 'server time in all: ' || round((sum(total_exec_time) * 1000 / $jobs)::numeric, 1) || ' us per job' FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_%' AND query NOT LIKE '%xact_commit%'"
