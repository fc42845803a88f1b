#!/usr/bin/env bash
# pgbouncer_load.sh - many foremen through one PgBouncer in transaction
# mode on one PostgreSQL (`make pgbouncer-load`, as root; not part of
# `make check`).  Each foreman runs on a host of its own, a network
# namespace joined to a bridge of the test's own (tests/ha/bed.sh), and
# reaches the pooler over it with pooler=transaction; the pooler and the
# server run on this machine (tests/pgbouncer.sh, tests/pgserver.sh).
# JOBS jobs on KEYS ordering keys are put, the foremen drain them, and the
# test checks that every job ran exactly once, each key's jobs in order,
# that every foreman started and polled, and that the server never had
# more connections of the pooler than its pool.  Everything it started
# is stopped at the end, whatever happened.
#
#   tests/pgbouncer_load.sh [BUILD]
#
#   JOBQ_LOAD_FOREMEN  foremen, one per host (default 100)
#   JOBQ_LOAD_JOBS     jobs (default 5000)
#   JOBQ_LOAD_KEYS     ordering keys (default 50)
#   JOBQ_LOAD_POOL     the pooler's default_pool_size (default 4)
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

fail() {
  echo "FAIL: $*"
  failed=1
}

why=$(ha_bed_check)
if [[ -n $why ]]; then
  echo "skip: $why"
  echo "RESULT: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
[[ -x $JOBQ ]] || { echo "FAIL: $JOBQ is not built"; echo "RESULT: 0 passed, 1 failed"; exit 1; }

ha_bed_up "${JOBQ_LOAD_NAME:-jqpb$(($$ % 1000))}" "$foremen" || { echo "FAIL: the network bed could not be made"; echo "RESULT: 0 passed, 1 failed"; exit 1; }
pg=$("$here/pgserver.sh" start "$pgdir") || { echo "FAIL: PostgreSQL did not start"; echo "RESULT: 0 passed, 1 failed"; exit 1; }
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
url="$bouncer?pooler=transaction"
echo "# $foremen foremen through PgBouncer (pool of $pool) at $HA_ADDR, $jobs jobs on $keys keys"

# The server's connections but the look's own: the pooler's.
server_connections() {
  "$here/pgserver.sh" psql "$pgdir" -qAt -c "SELECT count(*) FROM pg_stat_activity WHERE
    backend_type = 'client backend' AND datname = 'jobq' AND pid <> pg_backend_pid()"
}

"$JOBQ" --db "$url" init >/dev/null || fail "jobq init through the pooler failed"
for ((i = 0; i < jobs; i++)); do
  printf '{"queue":"load","key":"k%d","payload":"k%d %d"}\n' $((i % keys)) $((i % keys)) "$i"
done >"$T/jobs.ndjson"
"$JOBQ" --db "$url" put --ndjson "$T/jobs.ndjson" >/dev/null || fail "putting the jobs failed"
chmod 666 "$T/jobs.ndjson"
: >"$T/ran.log"
chmod 666 "$T/ran.log"

start=$SECONDS
for ((h = 0; h < foremen; h++)); do
  ip netns exec "${HA_NS[$h]}" "$JOBQ" --db "$url" work -q load -c 4 --poll 500ms \
    --name "load$h" -- sh -c 'read -r line; echo "$line" >>"$0"' "$T/ran.log" \
    </dev/null >/dev/null 2>"$T/fm$h.log" &
  pids+=($!)
done

most=0
end=$((SECONDS + 600))
while ((SECONDS < end)); do
  n=$(server_connections)
  ((n > most)) && most=$n
  ran=$(wc -l <"$T/ran.log")
  ((ran >= jobs)) && break
  sleep 0.5
done
took=$((SECONDS - start))
started=$(grep -l "started:" "$T"/fm*.log | wc -l)
polling=$(grep -l "pooler=transaction): poll instead): polling" "$T"/fm*.log | wc -l)
rss=$(ps -o rss= -p "$(IFS=,; echo "${pids[*]}")" 2>/dev/null | awk '{ s += $1; n++ } END { if (n) printf "%d", s / n }')
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${pids[@]}"; do wait "$p"; done
pids=()
lost=$(cat "$T"/fm*.log | grep -o ', [0-9]* lost;' | tr -dc '0-9\n' | awk '{ s += $1 } END { print s + 0 }')
done=$("$JOBQ" --db "$url" stats --json | grep -o '"done":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
sessions=$("$JOBQ" --db "$url" sessions --json | grep -o '"id":' | wc -l)

echo "# $(wc -l <"$T/ran.log") runs in ${took}s, $started foremen started, $polling said they poll," \
  "at most $most server connections, ${rss:-?} KiB resident per foreman, $lost lost"
((started == foremen)) || fail "$started of $foremen foremen started: $(grep -L "started:" "$T"/fm*.log | head -3 | xargs -r tail -n 3)"
((polling == foremen)) || fail "$polling of $foremen foremen said that they poll"
[[ $(wc -l <"$T/ran.log") == "$jobs" ]] || fail "$(wc -l <"$T/ran.log") runs for $jobs jobs"
[[ $(sort -u "$T/ran.log" | wc -l) == "$jobs" ]] || fail "some jobs ran twice"
[[ $done == "$jobs" ]] || fail "jobq stats counts $done done of $jobs"
bad=$(awk '{ if (($1 in last) && $2 < last[$1]) print; last[$1] = $2 }' "$T/ran.log")
[[ -z $bad ]] || fail "out of order: $(head -3 <<<"$bad")"
((most >= 1 && most <= pool)) || fail "the server had $most connections of the pooler: expected at most $pool"
((sessions == 0)) || fail "$sessions sessions left after the foremen stopped"
if ((failed)); then
  echo "RESULT: 0 passed, 1 failed"
  exit 1
fi
echo "RESULT: 1 passed, 0 failed"
