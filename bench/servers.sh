#!/usr/bin/env bash
# servers.sh - the server stores side by side on this machine: starts a
# throwaway PostgreSQL (tests/pgserver.sh) and MariaDB (tests/mysqlserver.sh),
# both with their durable defaults, and runs on each
#
#   bench_sqlite --db URL      put single and batched, claim+complete with
#                              batches of 1, 10 and 100
#   bench_claimers --db URL    1, 8 and 64 concurrent claimers, over 1000 and
#                              over 1000000 ready jobs
#
# then stops both servers.  Each bench works in a fresh schema (PostgreSQL)
# or database (MariaDB) made with jobq init.
#
# usage: bench/servers.sh [-j JOBS] [-s SINGLE] [-t SECONDS] [-r "1000 1000000"]
#                         [-c "1 8 64"] [-e "postgres mysql"]
#   defaults: bench_sqlite --jobs 20000 --single 2000; 10 s per claimers run.
#   JOBQ_BUILD selects the build (default build).
set -euo pipefail

jobs=20000 single=2000 seconds=10 readies="1000 1000000" claimers="1 8 64"
engines="postgres mysql"
while getopts j:s:t:r:c:e: opt; do
  case $opt in
    j) jobs=$OPTARG ;;
    s) single=$OPTARG ;;
    t) seconds=$OPTARG ;;
    r) readies=$OPTARG ;;
    c) claimers=$OPTARG ;;
    e) engines=$OPTARG ;;
    *) echo "usage: bench/servers.sh [-j JOBS] [-s SINGLE] [-t SECONDS] [-r READIES] [-c CLAIMERS] [-e ENGINES]" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
pgdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bench-pg.XXXXXX")
mydir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bench-my.XXXXXX")
cleanup() {
  [[ -d $pgdir ]] && "$root/tests/pgserver.sh" stop "$pgdir"
  [[ -d $mydir ]] && "$root/tests/mysqlserver.sh" stop "$mydir"
  return 0
}
trap cleanup EXIT

# fresh ENGINE: prints the URL of a new, initialised queue database.
fresh() {
  local url name=bench_$RANDOM$RANDOM
  case $1 in
    postgres) url="$PG?schema=$name" ;;
    mysql)
      "$root/tests/mysqlserver.sh" sql "$mydir" -e "CREATE DATABASE $name"
      url="${MY%/*}/$name"
      ;;
  esac
  "$build/jobq" --db "$url" init >/dev/null
  echo "$url"
}

for e in $engines; do
  case $e in
    postgres) PG=$("$root/tests/pgserver.sh" start "$pgdir") ;;
    mysql) MY=$("$root/tests/mysqlserver.sh" start "$mydir") ;;
    *) echo "servers.sh: unknown engine '$e': expected postgres or mysql" >&2; exit 2 ;;
  esac
done

for e in $engines; do
  echo "== $e: bench_sqlite --jobs $jobs --single $single"
  "$build/bench/bench_sqlite" --db "$(fresh "$e")" --jobs "$jobs" --single "$single"
done
for r in $readies; do
  for e in $engines; do
    url=$(fresh "$e")
    for c in $claimers; do
      echo "== $e: bench_claimers --claimers $c --ready $r --seconds $seconds"
      "$build/bench/bench_claimers" --db "$url" --claimers "$c" --ready "$r" --seconds "$seconds"
    done
  done
done
