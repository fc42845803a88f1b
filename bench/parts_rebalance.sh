#!/usr/bin/env bash
# parts_rebalance.sh - how long a queue in parts goes without owners when
# a foreman dies, and how long a joining foreman waits for its share.
# On the database of $1 (a URL; default a temporary SQLite file), with a
# lease of $2 (default 2s): a queue of 16 parts with 4000 keyed jobs of
# 0.2 s each, two `jobq work -c 2` foremen; after 2 s one is killed with
# SIGKILL, and the time from the kill until the other holds every part
# is printed, with the jobs that waited meanwhile (the ready jobs of the
# dead foreman's parts, the jobs of their keys behind them, and the
# ones it was running); then
# a third foreman starts, and the time until the two live ones hold 8
# parts each.  It uses the queue bench.parts.PID and deletes its jobs.
#
#   bench/parts_rebalance.sh [URL] [LEASE]
set -u
J=${JOBQ:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/jobq}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jobq-rebalance.XXXXXX")
export JOBQ_DB=${1:-sqlite:$TMP/q.db}
LEASE=${2:-2s}
Q=bench.parts.$$
PIDS=()
cleanup() {
  [[ ${#PIDS[@]} -gt 0 ]] && kill -TERM "${PIDS[@]}" 2>/dev/null
  wait 2>/dev/null
  "$J" purge -q "$Q" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
trap exit INT TERM
now() { date +%s.%N; }
# wait_for TEST...: runs TEST every 20 ms until it holds, for at most 60 s.
wait_for() {
  local end=$((SECONDS + 60))
  until "$@"; do
    ((SECONDS < end)) || { echo "gave up after 60 s waiting for: $*"; exit 1; }
    sleep 0.02
  done
}
all_one() { [[ $(shares) == "[16]" && $(unowned) -eq 0 ]]; }
halves() { [[ $(shares) == "[8, 8]" ]]; }
since() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
unowned() {
  "$J" --json stats | python3 -c 'import json,sys
print([q["parts_unowned"] for q in json.load(sys.stdin)["queues"] if q["name"] == sys.argv[1]][0])' "$Q"
}
shares() {
  "$J" --json sessions | python3 -c 'import json,sys
s = [x for x in json.load(sys.stdin)["sessions"] if not x["expired"]]
print(sorted(len(x["parts"].get(sys.argv[1], [])) for x in s))' "$Q"
}
# waited PID: the parts of foreman PID's session, their ready jobs, the
# jobs waiting behind those, and the jobs it runs.
waited() {
  "$J" --json sessions >"$TMP/sessions.json" && "$J" --json parts "$Q" >"$TMP/parts.json" &&
    "$J" --json ls -q "$Q" -s waiting -n 100000 >"$TMP/waiting.json" &&
    python3 - "$1" "$Q" "$TMP/sessions.json" "$TMP/parts.json" "$TMP/waiting.json" <<'EOF'
import json, sys
pid, queue = int(sys.argv[1]), sys.argv[2]
s = [x for x in json.load(open(sys.argv[3]))["sessions"] if x["pid"] == pid][0]
mine = s["parts"].get(queue, [])
ready = sum(p["ready"] for p in json.load(open(sys.argv[4]))["owners"] if p["part"] in mine)
behind = sum(1 for j in json.load(open(sys.argv[5]))["jobs"] if j.get("part") in mine)
print("its %d parts held %d ready jobs (the heads of their keys) and %d behind them, "
      "and it ran %d" % (len(mine), ready, behind, s["in_flight"]))
EOF
}
foreman() {
  "$J" work -q "$Q" -c 2 --lease "$LEASE" -- sleep 0.2 >/dev/null 2>&1 &
  PIDS+=($!)
}
"$J" init >/dev/null || exit 1
"$J" parts "$Q" 16 >/dev/null || exit 1
for i in $(seq 1 4000); do echo "{\"queue\":\"$Q\",\"key\":\"k$((i % 64))\",\"payload\":\"x\"}"; done \
  >"$TMP/jobs"
"$J" put --ndjson "$TMP/jobs" >/dev/null || exit 1
foreman
foreman
sleep 2
echo "two foremen: shares $(shares), $(unowned) parts without an owner"
t0=$(now)
kill -KILL "${PIDS[0]}"
jobs=$(waited "${PIDS[0]}")
wait_for all_one
echo "every part with the live foreman $(since "$t0") s after the kill (lease $LEASE): shares $(shares)"
echo "waiting meanwhile: $jobs"
t0=$(now)
foreman
wait_for halves
echo "a joining foreman holds its share $(since "$t0") s after it started: shares $(shares)"
