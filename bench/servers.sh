#!/usr/bin/env bash
# servers.sh - `jobq bench` on each store of this machine, one after the
# other, as docs/benchmarks.md reports it: a temporary SQLite file, then a
# throwaway PostgreSQL (tests/pgserver.sh) and MariaDB
# (tests/mysqlserver.sh), both with their durable defaults, each in a fresh
# schema or database made with `jobq init`.  The servers are stopped at the
# end.  Each store's table goes to stdout; with -o DIR, each store's SVG
# chart and CSV too (DIR/bench-STORE.svg, .csv).
#
# usage: bench/servers.sh [-o DIR] [-e "sqlite postgres mysql"] [-- BENCH OPTIONS...]
#   e.g. bench/servers.sh -e postgres -- --workload soak --seconds 1800
#   JOBQ_BUILD selects the build (default build); JOBQ_MYSQLD_OPTIONS adds
#   MariaDB server options (tests/mysqlserver.sh), e.g.
#   JOBQ_MYSQLD_OPTIONS=--thread-handling=pool-of-threads bench/servers.sh -e mysql
set -euo pipefail

out="" stores="sqlite postgres mysql"
while getopts o:e: opt; do
  case $opt in
    o) out=$OPTARG ;;
    e) stores=$OPTARG ;;
    *) echo "usage: bench/servers.sh [-o DIR] [-e STORES] [-- BENCH OPTIONS...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
[[ -x $build/jobq ]] || { echo "servers.sh: $build/jobq is missing: run make first" >&2; exit 1; }
pgdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bench-pg.XXXXXX")
mydir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bench-my.XXXXXX")
cleanup() {
  [[ -d $pgdir ]] && "$root/tests/pgserver.sh" stop "$pgdir"
  [[ -d $mydir ]] && "$root/tests/mysqlserver.sh" stop "$mydir"
  return 0
}
trap cleanup EXIT

status=0
for s in $stores; do
  args=("$@")
  if [[ -n $out ]]; then
    mkdir -p "$out"
    args+=(--plot "$out/bench-$s.svg" --csv "$out/bench-$s.csv")
  fi
  echo "== $s"
  case $s in
    sqlite) "$build/jobq" bench "${args[@]}" || status=1 ;;
    postgres)
      url="$("$root/tests/pgserver.sh" start "$pgdir")?schema=bench_$RANDOM"
      "$build/jobq" --db "$url" init >/dev/null
      "$build/jobq" --db "$url" bench "${args[@]}" || status=1
      ;;
    mysql)
      url=$("$root/tests/mysqlserver.sh" start "$mydir")
      "$root/tests/mysqlserver.sh" sql "$mydir" -e "CREATE DATABASE bench"
      url="${url%/*}/bench"
      "$build/jobq" --db "$url" init >/dev/null
      "$build/jobq" --db "$url" bench "${args[@]}" || status=1
      ;;
    *) echo "servers.sh: unknown store '$s': expected sqlite, postgres or mysql" >&2; exit 2 ;;
  esac
done
exit $status
