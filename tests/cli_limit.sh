#!/usr/bin/env bash
# cli_limit.sh - a queue's limits through the jobq command: set, shown
# (text and --json), changed one at a time, removed with 'none' and
# --clear; a key that limits and does not order under --running-per-key;
# --rate-per-key shown, and a real foreman that starts each key's jobs no
# more often than it lets while other keys go on; bad input refused with exit 2, a message naming it, and no
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
q --rate-per-key 0/1s|invalid --rate-per-key '0/1s': expected N/PERIOD, N from 1 to 1000000000 and PERIOD from 1ms to 1d
q --rate-per-key x/1s|invalid --rate-per-key 'x/1s': expected N/PERIOD
q --rate-per-key 5/0s|invalid --rate-per-key '5/0s': expected N/PERIOD
q --rate-per-key 5|invalid --rate-per-key '5': expected N/PERIOD
q --clear --rate-per-key 1/1s|invalid --clear with another limit
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

# --rate-per-key: set beside the others, shown in text and JSON, removed
# alone; a bad value leaves the limits as they were.
t_rate_per_key_show() {
  run put -q mail --key a x
  run limit mail --rate 100/1s --rate-per-key 5/1m
  expect_rc 0
  expect_out_has "mail: rate 0/100 per 1s, rate 5 per 1m per key (0 keys used it)"
  run limit mail --json
  [[ $(field rate_per_key.count) == 5 ]] || fail "rate per key: $(cat "$T_OUT")"
  [[ $(field rate_per_key.period_ms) == 60000 ]] || fail "period: $(cat "$T_OUT")"
  [[ $(field keys_full_now) == 0 ]] || fail "keys full: $(cat "$T_OUT")"
  run limit mail --rate-per-key 0/1s
  expect_rc 2
  run limit mail --json
  [[ $(field rate_per_key.count) == 5 ]] || fail "a bad value changed it: $(cat "$T_OUT")"
  run limit mail --rate-per-key none
  expect_out_has "mail: rate 0/100 per 1s"
  grep -q "per key" "$T_OUT" && fail "rate per key left: $(cat "$T_OUT")"
  run limit mail --json
  [[ $(field rate_per_key) == null ]] || fail "rate per key left: $(cat "$T_OUT")"
}

# A foreman with four slots on a queue limited to two starts of a key a
# minute: key a's and b's first two jobs run, in order, their others wait
# ready; `jobq limit` and `jobq stats` show the queue held back.
t_rate_per_key_foreman() {
  run limit kr --rate-per-key 2/1m
  local i
  for i in 1 2 3 4; do run put -q kr --key a "a$i"; run put -q kr --key b "b$i"; done
  run put -q kr nokey
  JOBQ_DB=sqlite:$DB "$JOBQ" work -q kr -c 4 --lease 5s -- cat \
    >"$D/w.out" 2>"$D/w.err" &
  local pid=$! done_n=0
  for i in $(seq 1 40); do
    sleep 0.25
    run ls -q kr --state done --json
    done_n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$T_OUT")
    ((done_n >= 5)) && break
  done
  sleep 1
  run ls -q kr --state done --json
  local got
  got=$(python3 -c 'import json,sys
jobs = json.load(open(sys.argv[1]))["jobs"]
print(" ".join(sorted("%s:%s" % (j["key"], j["id"]) for j in jobs)))' "$T_OUT")
  [[ $got == "None:9 a:1 a:3 b:2 b:4" ]] || fail "done: $got, expected each key's first two and the job without a key"
  run limit kr --json
  [[ $(field keys_full_now) == 2 ]] || fail "keys full: $(cat "$T_OUT")"
  [[ $(field held) == true ]] || fail "not held: $(cat "$T_OUT")"
  run stats --json
  grep -q '"held_by_limit":true' "$T_OUT" || fail "stats: $(cat "$T_OUT")"
  kill -TERM $pid
  wait $pid
}

run_cases
