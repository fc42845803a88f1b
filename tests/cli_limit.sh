#!/usr/bin/env bash
# cli_limit.sh - a queue's limits through the jobq command: set, shown
# (text and --json), changed one at a time, removed with 'none' and
# --clear; a key that limits and does not order under --running-per-key; bad input refused with exit 2, a message naming it, and no
# database written; and two real foremen of four slots each on one
# queue limited to two running jobs, which `jobq stats` shows held back.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# field KEY: KEY of the --json document in $T_OUT.
field() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d = d[k] if d is not None else None
print(json.dumps(d))' "$T_OUT" "$1"
}

t_set_show_clear() {
  run put -q mail x
  run limit mail
  expect_rc 0
  expect_out_has "mail: no limits"
  run limit mail --running 2
  expect_rc 0
  expect_out_has "mail: running 0/2"
  run limit mail --rate 100/1s
  expect_out_has "mail: running 0/2, rate 0/100 per 1s"
  run limit mail --rate 10/m --json
  expect_rc 0
  [[ $(field running) == 2 ]] || fail "running: $(field running)"
  [[ $(field rate.count) == 10 ]] || fail "rate count: $(field rate.count)"
  [[ $(field rate.period_ms) == 60000 ]] || fail "rate period: $(field rate.period_ms)"
  [[ $(field held) == false ]] || fail "held: $(field held)"
  run limit mail --running-per-key 3
  expect_out_has "mail: running 0/2, 3 per key, rate 0/10 per 1m"
  run limit mail --running none --running-per-key none
  expect_out_has "mail: rate 0/10 per 1m"
  run stats --json
  python3 -c 'import json,sys
q = json.load(open(sys.argv[1]))["queues"][0]
sys.exit(0 if q["limited"] and not q["held_by_limit"] else 1)' "$T_OUT" || fail "stats: $(cat "$T_OUT")"
  run limit mail --clear
  expect_rc 0
  expect_out_has "mail: no limits"
  run stats --json
  grep -q '"limited":false' "$T_OUT" || fail "stats after --clear: $(cat "$T_OUT")"
}

t_bad_input() {
  local args
  while IFS='|' read -r args want; do
    # shellcheck disable=SC2086
    run limit $args
    expect_rc 2
    expect_err_has "$want"
    expect_err_style
    [[ -e $DB ]] && fail "'jobq limit $args' made the database"
  done <<'CASES'
q --running 0|invalid --running '0': expected an integer from 1
q --running -3|invalid --running '-3'
q --running 2x|invalid --running '2x'
q --rate 5|invalid --rate '5': expected N/PERIOD, N from 1 to 1000000000 and PERIOD from 1ms to 1d, like 100/1s
q --rate /1s|invalid --rate '/1s': expected N/PERIOD
q --rate 5/|invalid --rate '5/': expected N/PERIOD
q --rate x/1s|invalid --rate 'x/1s': expected N/PERIOD
q --rate 5/2x|invalid --rate '5/2x': expected N/PERIOD
q --rate 5/2d|invalid --rate '5/2d': expected N/PERIOD
q --rate 5/0s|invalid --rate '5/0s': expected N/PERIOD
q --rate 0/1s|invalid --rate '0/1s': expected N/PERIOD
q --clear --running 1|invalid --clear with another limit
q --running-per-key 0|invalid --running-per-key '0'
q --running-per-key x|invalid --running-per-key 'x'
Bad.Q --running 1|invalid queue name 'Bad.Q'
q extra|unexpected argument 'extra'
|missing queue
CASES
}

t_held_by_two_foremen() {
  local i
  for i in 1 2 3 4 5 6 7 8; do run put -q slow x; done
  run limit slow --running 2
  expect_rc 0
  local pids=() f
  for f in 1 2; do
    JOBQ_DB=sqlite:$DB "$JOBQ" work -q slow -c 4 --lease 5s -- sleep 2 \
      >"$D/w$f.out" 2>"$D/w$f.err" &
    pids+=($!)
  done
  local max=0 seen_held=0 n
  for i in $(seq 1 40); do
    sleep 0.25
    run limit slow --json
    n=$(field running_now)
    ((n > max)) && max=$n
    [[ $(field held) == true ]] && seen_held=1
  done
  run stats
  kill -TERM "${pids[@]}"
  wait "${pids[@]}"
  ((max == 2)) || fail "at most $max jobs ran at once, expected 2"
  ((seen_held)) || fail "the limit was never shown holding the queue back"
}

# Under --running-per-key 1, a key's jobs are ready (not waiting) and two
# slots of one foreman run one of each key at a time.
t_per_key_foreman() {
  run limit pk --running-per-key 1
  local i
  for i in 1 2 3; do run put -q pk --key a x; run put -q pk --key b y; done
  run stats --json
  grep -q '"waiting":0' "$T_OUT" || fail "jobs wait for their key: $(cat "$T_OUT")"
  JOBQ_DB=sqlite:$DB "$JOBQ" work -q pk -c 4 --lease 5s -- sleep 1 \
    >"$D/w.out" 2>"$D/w.err" &
  local pid=$! max=0 n
  for i in $(seq 1 16); do
    sleep 0.25
    run limit pk --json
    n=$(field running_now)
    ((n > max)) && max=$n
  done
  kill -TERM $pid
  wait $pid
  ((max == 2)) || fail "at most $max jobs ran at once, expected 2 (one per key)"
}

run_cases
