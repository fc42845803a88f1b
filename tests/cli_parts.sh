#!/usr/bin/env bash
# cli_parts.sh - a queue in parts through the jobq command: the count set
# and shown (text and --json) with each part's owner; bad input refused
# with exit 2, a message naming it, and nothing written; `jobq sessions`
# and `jobq stats` showing the parts; and two real foremen draining a
# queue in parts with ordering keys, one killed with SIGKILL mid-run:
# nothing lost, each key's jobs run in order, the dead one's parts taken
# by the other; and a foreman whose part is empty, beside one whose
# part gets jobs, that does not claim for each of them.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

# field KEY: KEY of the --json document in $T_OUT.
field() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d = d[k] if d is not None else None
print(json.dumps(d))' "$T_OUT" "$1"
}

t_set_and_show() {
  run init
  run parts pq
  expect_rc 0
  expect_out_has "pq: 1 part"
  run put -q pq --key a x
  run parts pq 4
  expect_rc 0
  expect_out_has "pq: 4 parts"
  run --json parts pq
  expect_rc 0
  [[ $(field parts) == 4 ]] || fail "parts: $(field parts), expected 4"
  python3 - "$T_OUT" <<'PY' || fail "owners: $(cat "$T_OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
assert [o["part"] for o in d["owners"]] == [0, 1, 2, 3]
assert all(o["session"] is None for o in d["owners"])
assert sum(o["ready"] for o in d["owners"]) == 1
PY
  run --json show 1
  [[ $(field part) =~ ^[0-3]$ ]] || fail "show --json part: $(field part)"
  run show 1
  expect_out_has "part"
  run --json ls
  grep -q '"part":[0-3]' "$T_OUT" || fail "ls --json has no part: $(cat "$T_OUT")"
  run stats
  expect_out_has "4 (4 unowned)"
  run parts pq 1
  expect_rc 0
  run --json show 1
  [[ $(field part) == null ]] || fail "one part: show --json part $(field part), expected null"
}

t_bad_input() {
  local bad
  for bad in 0 1025 -3 abc 2x ''; do
    run parts pq "$bad"
    expect_rc 2
    expect_err_has "invalid count of parts '$bad': expected an integer from 1 to 1024"
    expect_err_style
  done
  expect_no_jobs
  [[ -e $DB ]] && fail "a bad count made the database"
  run parts
  expect_rc 2
  expect_err_has "missing queue"
  run parts 'No Such' 2
  expect_rc 2
  expect_err_has "invalid queue name 'No Such'"
  run parts pq 2 3
  expect_rc 2
  run init
  run parts pq 0
  expect_rc 2
  run parts pq
  expect_out_has "pq: 1 part"
}

# Runs a foreman on queue pq with 2 slots, each job logging its key and id.
foreman() {
  JOBQ_DB=sqlite:$DB "$JOBQ" work -q pq -c 2 --lease 1s -- \
    sh -c 'echo "$JOBQ_KEY $JOBQ_JOB_ID" >>"$0"; sleep 0.1' "$D/log" \
    >"$D/$1.out" 2>"$D/$1.err" &
}

t_two_foremen_one_killed() {
  run parts pq 8
  local k i
  for i in $(seq 1 10); do
    for k in $(seq 1 16); do echo "{\"queue\":\"pq\",\"key\":\"k$k\",\"payload\":\"$i\"}"; done
  done >"$D/jobs"
  run put --ndjson "$D/jobs"
  expect_rc 0
  foreman a
  local a=$!
  foreman b
  local b=$!
  # Both hold parts within a few heartbeats.
  local ok=0
  for i in $(seq 1 40); do
    sleep 0.25
    run --json sessions
    if python3 - "$T_OUT" <<'PY'; then ok=1; break; fi
import json, sys
s = json.load(open(sys.argv[1]))["sessions"]
held = [len(x["parts"].get("pq", [])) for x in s if not x["expired"]]
sys.exit(0 if len(held) == 2 and sorted(held) == [4, 4] else 1)
PY
  done
  ((ok)) || fail "the two foremen did not hold 4 parts each: $(cat "$T_OUT")"
  run sessions
  expect_out_has "pq:"
  run --json stats
  (($(json_sum done) < 120)) || fail "the queue drained before the kill: $(json_sum done) done"
  kill -KILL $a
  wait $a 2>/dev/null
  # The other takes the dead one's parts and drains the queue.
  local done=0
  for i in $(seq 1 120); do
    sleep 0.5
    run --json stats
    done=$(json_sum done)
    ((done == 160)) && break
  done
  run --json parts pq
  local owners
  owners=$(python3 -c 'import json,sys; print(len({o["session"] for o in json.load(open(sys.argv[1]))["owners"]}))' "$T_OUT")
  kill -TERM $b
  wait $b
  ((done == 160)) || fail "$done of 160 jobs done"
  [[ $owners == 1 ]] || fail "the parts have $owners owners after the kill, expected 1"
  # Each key's jobs ran in id order (a job lost with the killed foreman
  # runs again, right after itself).
  python3 - "$D/log" <<'PY' || fail "a key's jobs ran out of order"
import sys
last = {}
for line in open(sys.argv[1]):
    k, i = line.split()
    i = int(i)
    if i < last.get(k, 0):
        print("key", k, "ran", i, "after", last[k]); sys.exit(1)
    last[k] = i
assert len(last) == 16, last
PY
}

t_idle_owner_claims_nothing() {
  run init
  idle_owner "sqlite:$DB"
}

run_cases
