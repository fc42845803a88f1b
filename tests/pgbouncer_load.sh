#!/usr/bin/env bash
# pgbouncer_load.sh - many foremen on one PostgreSQL, directly and through
# one PgBouncer in transaction mode (`make pgbouncer-load`, as root; not
# part of `make check`).  Each foreman runs on a host of its own, a
# network namespace joined to a bridge of the test's own (tests/ha/bed.sh),
# and reaches the server, or the pooler with pooler=transaction, over it;
# the pooler and the server run on this machine (tests/pgbouncer.sh,
# tests/pgserver.sh).  In each mode, JOBS jobs on KEYS ordering keys are
# put, the foremen drain them, and the test checks that every job ran
# exactly once (or, for the jobs of a session lost on an overloaded
# machine, once more at most), each key's jobs in order, that every foreman started
# (and through the pooler, that it polls), and the server's connections:
# at most two a foreman and one vacuum's directly, at most the pool
# through the pooler.  Last, `jobq bench --workload foreman` measures one
# foreman at -c 64 on the same server, and a foreman of the fleet must
# not have been larger.  Everything it started is stopped at the end,
# whatever happened.
#
#   tests/pgbouncer_load.sh [BUILD]
#
#   JOBQ_LOAD_FOREMEN  foremen, one per host (default 100)
#   JOBQ_LOAD_JOBS     jobs (default 5000)
#   JOBQ_LOAD_KEYS     ordering keys (default 50)
#   JOBQ_LOAD_POOL     the pooler's default_pool_size (default 4)
#   JOBQ_LOAD_MODES    "direct", "pgbouncer" or both (default both)
#   JOBQ_LOAD_NAME     the bed's name, the start of its interfaces' and
#                      namespaces' names (default jqpb and a number)
#
# The last line is "RESULT: N passed, N failed".
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(dirname "$here")/$build ;; esac
JOBQ=$build/jobq
foremen=${JOBQ_LOAD_FOREMEN:-100}
jobs=${JOBQ_LOAD_JOBS:-5000}
keys=${JOBQ_LOAD_KEYS:-50}
pool=${JOBQ_LOAD_POOL:-4}
modes=${JOBQ_LOAD_MODES:-direct pgbouncer}
. "$here/ha/bed.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/jobq-load.XXXXXX")
chmod 755 "$T"
pgdir=$T/pg
bouncerdir=$T/bouncer
pids=()
failed=0
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  ha_bed_down
  "$here/pgbouncer.sh" stop "$bouncerdir" 2>/dev/null
  "$here/pgserver.sh" stop "$pgdir" 2>/dev/null
  [[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

why=$(ha_bed_check)
if [[ -n $why ]]; then
  echo "skip: $why"
  echo "RESULT: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
[[ -x $JOBQ ]] || { echo "FAIL: $JOBQ is not built"; echo "RESULT: 0 passed, 1 failed"; exit 1; }

ha_bed_up "${JOBQ_LOAD_NAME:-jqpb$(($$ % 1000))}" "$foremen" || { echo "FAIL: the network bed could not be made"; echo "RESULT: 0 passed, 1 failed"; exit 1; }
# Directly, every foreman's two connections, a vacuum's and the looks'.
pg=$(JOBQ_PG_LISTEN=$HA_CIDR JOBQ_PG_MAX_CONNECTIONS=$((foremen * 2 + 20)) \
  "$here/pgserver.sh" start "$pgdir") || { echo "FAIL: PostgreSQL did not start"; echo "RESULT: 0 passed, 1 failed"; exit 1; }
bouncer=$(JOBQ_PGBOUNCER_LISTEN=$HA_ADDR JOBQ_PGBOUNCER_POOL=$pool \
  JOBQ_PGBOUNCER_CLIENTS=$((foremen * 2 + 50)) "$here/pgbouncer.sh" start "$bouncerdir" "$pg")
status=$?
if ((status == 77)); then
  echo "skip: PgBouncer is not installed"
  echo "RESULT: 0 passed, 0 failed, 1 skipped"
  exit 0
elif ((status != 0)); then
  echo "FAIL: PgBouncer did not start"
  echo "RESULT: 0 passed, 1 failed"
  exit 1
fi

# The server's connections but the look's own.
server_connections() {
  "$here/pgserver.sh" psql "$pgdir" -qAt -c "SELECT count(*) FROM pg_stat_activity WHERE
    backend_type = 'client backend' AND datname = 'jobq' AND pid <> pg_backend_pid()"
}

for ((i = 0; i < jobs; i++)); do
  printf '{"queue":"load","key":"k%d","payload":"k%d %d"}\n' $((i % keys)) $((i % keys)) "$i"
done >"$T/jobs.ndjson"

passed=0
fleet_rss=0 # the most KiB resident a foreman of the fleet had, on average
# load MODE URL QUERY MOST: the foremen on URL with the options QUERY, in
# a schema of the mode's own; the server may have at most MOST
# connections meanwhile.
load() {
  local mode=$1 url="$2?${3:+$3&}schema=load_$1" limit=$4 d=$T/$1 h i n ran most=0 end start
  local failures_before=$failures
  mkdir -p "$d"
  chmod 777 "$d"
  echo "# $mode: $foremen foremen, $jobs jobs on $keys keys, at most $limit server connections"
  "$JOBQ" --db "$url" init >/dev/null || fail "$mode: jobq init failed"
  "$JOBQ" --db "$url" put --ndjson "$T/jobs.ndjson" >/dev/null || fail "$mode: putting the jobs failed"
  : >"$d/ran.log"
  chmod 666 "$d/ran.log"
  start=$SECONDS
  for ((h = 0; h < foremen; h++)); do
    ip netns exec "${HA_NS[$h]}" "$JOBQ" --db "$url" work -q load -c 4 --poll 500ms \
      --name "load$h" -- sh -c 'read -r line; echo "$line" >>"$0"' "$d/ran.log" \
      </dev/null >/dev/null 2>"$d/fm$h.log" &
    pids+=($!)
  done
  end=$((SECONDS + 600))
  while ((SECONDS < end)); do
    n=$(server_connections)
    ((n > most)) && most=$n
    ran=$(sort -u "$d/ran.log" | wc -l)
    ((ran >= jobs)) && break
    sleep 0.5
  done
  local took=$((SECONDS - start))
  local started polling rss lost done sessions bad
  started=$(grep -l "started:" "$d"/fm*.log | wc -l)
  polling=$(grep -l "pooler=transaction): poll instead): polling" "$d"/fm*.log | wc -l)
  rss=$(ps -o rss= -p "$(IFS=,; echo "${pids[*]}")" 2>/dev/null |
    awk '{ s += $1; n++ } END { if (n) printf "%d", s / n }')
  ((${rss:-0} > fleet_rss)) && fleet_rss=$rss
  for i in "${pids[@]}"; do kill -TERM "$i" 2>/dev/null; done
  for i in "${pids[@]}"; do wait "$i"; done
  pids=()
  lost=$(cat "$d"/fm*.log | grep -o ', [0-9]* lost;' | tr -dc '0-9\n' |
    awk '{ s += $1 } END { print s + 0 }')
  done=$("$JOBQ" --db "$url" stats --json | grep -o '"done":[0-9]*' | cut -d: -f2 |
    awk '{ s += $1 } END { print s + 0 }')
  sessions=$("$JOBQ" --db "$url" sessions --json | grep -o '"id":' | wc -l)
  echo "# $mode: $(wc -l <"$d/ran.log") runs in ${took}s, $started foremen started," \
    "$polling said they poll, at most $most server connections, ${rss:-?} KiB resident" \
    "per foreman, $lost lost"
  ((started == foremen)) || fail "$mode: $started of $foremen foremen started: $(grep -L "started:" "$d"/fm*.log | head -3 | xargs -r tail -n 3)"
  if [[ $mode == pgbouncer ]]; then
    ((polling == foremen)) || fail "$mode: $polling of $foremen foremen said that they poll"
  fi
  # Every job ran, and once, but for the jobs of sessions lost (a
  # foreman that could not heartbeat for a lease on an overloaded
  # machine): those run again elsewhere, at most once more each.
  local runs distinct
  runs=$(wc -l <"$d/ran.log")
  distinct=$(sort -u "$d/ran.log" | wc -l)
  [[ $distinct == "$jobs" ]] || fail "$mode: $distinct of $jobs jobs ran"
  if ((lost == 0)); then
    ((runs == jobs)) || fail "$mode: $runs runs for $jobs jobs, and no session lost"
  else
    echo "# $mode: $lost jobs of lost sessions ($(cat "$d"/fm*.log | grep -c "session lost: ") sessions lost), $((runs - jobs)) runs again"
    ((runs - jobs <= lost)) || fail "$mode: $runs runs for $jobs jobs: more again than the $lost jobs of lost sessions"
  fi
  [[ $done == "$jobs" ]] || fail "$mode: jobq stats counts $done done of $jobs"
  bad=$(awk '{ if (($1 in last) && $2 < last[$1]) print; last[$1] = $2 }' "$d/ran.log")
  [[ -z $bad ]] || fail "$mode: out of order: $(head -3 <<<"$bad")"
  ((most >= 1 && most <= limit)) || fail "$mode: the server had $most connections: expected at most $limit"
  ((sessions == 0)) || fail "$mode: $sessions sessions left after the foremen stopped"
  if ((failures == failures_before)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

for mode in $modes; do
  case $mode in
    direct) load direct "$pg" "" $((foremen * 2 + 1)) ;;
    pgbouncer) load pgbouncer "$bouncer" pooler=transaction "$pool" ;;
    *) fail "unknown mode '$mode': expected direct or pgbouncer"; failed=$((failed + 1)) ;;
  esac
done
# Memory: each foreman of the fleet against one alone at -c 64, as
# `jobq bench --workload foreman` measures it on the same server.
bench_rss() {
  local out kib
  "$JOBQ" --db "$pg?schema=load_bench" init >/dev/null || fail "bench: jobq init failed"
  out=$("$build/jobq-bench" --db "$pg?schema=load_bench" -w foreman --seconds 1 --json 2>"$T/bench.err")
  kib=$(python3 -c 'import json, sys
for w in json.load(sys.stdin)["workloads"]:
    for r in w["results"]:
        if r["variant"] == "fork -c 64" and r["metric"] == "peak RSS":
            print(int(r["value"] * 1024))' <<<"$out" 2>/dev/null)
  echo "# jobq bench --workload foreman: one foreman at -c 64 peaks at ${kib:-?} KiB resident"
  if [[ -z $kib ]]; then
    fail "jobq bench --workload foreman failed: $(tail -n 3 "$T/bench.err")"
  elif ((fleet_rss > kib)); then
    fail "a foreman of the fleet had $fleet_rss KiB resident: expected at most the $kib KiB of one alone at -c 64"
  fi
}
if ((fleet_rss > 0)); then
  failures_before=$failures
  bench_rss
  if ((failures == failures_before)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
echo "RESULT: $passed passed, $failed failed"
((failed == 0))
