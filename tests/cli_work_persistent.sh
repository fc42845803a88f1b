#!/usr/bin/env bash
# cli_work_persistent.sh - `jobq work --persistent`: each example worker
# of examples/workers/ (bash, Python 3, Node) through the line protocol
# with binary payloads, failures, requested retries, a crash in the middle
# of a job; workers that break the protocol (garbage, a reply for another
# job, bad base64, no "ready" first) are killed and their jobs failed with
# the reason; a worker past its timeout is replaced; a command that dies
# before it is ready is restarted with backoff, not in a spin, and costs no
# job an attempt; SIGTERM lets busy workers finish and stops idle ones at
# once; the example workers drop a partial job line.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

WORKERS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../examples/workers" && pwd)

# check_example_worker COMMAND...: the jobs every example worker must get
# right, the way examples/workers/*'s comments say.
check_example_worker() {
  {
    echo '{"payload_base64":"YQBi/w=="}'                  # a, NUL, b, 0xff
    echo '{"payload":"fail now","max_attempts":1}'
    echo '{"payload":"retry","backoff":"100ms"}'
    echo '{"payload":"sleep:50"}'
    echo '{"payload":"crash","max_attempts":1}'
    for i in $(seq 1 20); do printf '{"payload":"p%d","key":"k%d"}\n' "$i" $((i % 3)); done
  } >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  expect_rc 0
  run_work 60 --persistent -c 2 --poll 50ms --until-empty -- "$@"
  expect_rc 0
  run show 1 --json
  expect_out_has '"result_base64":"YQBi/w=="'
  expect_job 2 dead "failed on purpose: fail now"
  expect_job 3 done "not yet"
  run show 3 --json
  expect_out_has '"attempts":2'
  expect_out_has '"result":"retried"'
  run show 4 --json
  expect_out_has '"result":"slept 50 ms"'
  expect_job 5 dead "the worker ended with exit status 3 while running the job: "
  expect_job 5 dead "crashing on job 5 on purpose"
  local i
  for i in 6 15 25; do
    run show "$i" --json
    expect_out_has "\"result\":\"p$((i - 5))\""
  done
  expect_counts done=23 dead=2 ready=0 running=0 scheduled=0
  expect_no_sessions
}

t_bash_worker() {
  check_example_worker "$WORKERS/worker.sh"
}

t_python_worker() {
  if ! command -v python3 >/dev/null; then
    skip "python3 is not installed (scripts/deps.txt lists it)"
    return
  fi
  check_example_worker python3 "$WORKERS/worker.py"
}

t_node_worker() {
  if ! command -v node >/dev/null; then
    skip "node is not installed (scripts/deps.txt lists nodejs)"
    return
  fi
  check_example_worker node "$WORKERS/worker.js"
}

# A worker whose input ends on part of a job line (its foreman died while
# writing it) drops that line: here the cut is at a length that is still
# valid base64, so a worker that took the line for a job would run it on
# a payload cut short.
t_example_workers_drop_a_partial_line() {
  local claim=0123456789abcdef0123456789abcdef cmd name
  # "payload" in base64 is cGF5bG9hZA==; cut to cGF5bG9h it reads "payloa".
  printf 'job 1 q 1 1 0 %s - cGF5bG9hZA==\njob 2 q 1 1 0 %s - cGF5bG9h' "$claim" "$claim" \
    >"$D/input"
  for cmd in "bash $WORKERS/worker.sh" "python3 $WORKERS/worker.py" "node $WORKERS/worker.js"; do
    name=${cmd%% *}
    command -v "$name" >/dev/null || continue
    timeout 30 $cmd <"$D/input" >"$D/out.$name" 2>"$D/err.$name"
    local st=$?
    [[ $st == 0 ]] || fail "$name worker: exit status $st: $(cat "$D/err.$name")"
    [[ $(cat "$D/out.$name") == $'ready\ndone 1 cGF5bG9hZA==' ]] ||
      fail "$name worker: answered $(tr '\n' '|' <"$D/out.$name"), expected ready and done 1 only"
  done
}

t_protocol_breakers_are_killed() {
  {
    echo '{"payload":"garbage","max_attempts":1}'
    echo '{"payload":"wrongid","max_attempts":1}'
    echo '{"payload":"badb64","max_attempts":1}'
    echo '{"payload":"fine"}'
  } >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  cat >"$D/worker.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$DIR/pids"
sleep 60 &                 # a child that must go with the worker
echo ready
while read -r verb id q a m l c k p rest; do
  case $(printf %s "$p" | base64 -d) in
    garbage) echo "hello world" ;;
    wrongid) echo "done 999999 -" ;;
    badb64) echo "done $id !!!" ;;
    *) echo "done $id $p" ;;
  esac
done
EOF
  chmod +x "$D/worker.sh"
  work_env DIR="$D"
  run_work 60 --persistent -c 1 --poll 50ms --until-empty -- "$D/worker.sh"
  expect_rc 0
  expect_job 1 dead "worker protocol error: expected 'done ID [RESULT]', 'fail ID [ERROR]' or 'retry ID [DELAY_MS [REASON]]', got 'hello world'"
  expect_job 2 dead "worker protocol error: a reply for job 999999 while it had job 2"
  expect_job 3 dead "worker protocol error: expected 'done ID [RESULT]', 'fail ID [ERROR]' or 'retry ID [DELAY_MS [REASON]]': the last field is standard base64 with padding, or '-', got 'done 3 !!!'"
  run show 4 --json
  expect_out_has '"result":"fine"'
  grep -q "worker 1 (pid [0-9]*) broke the protocol: .*: killing it and starting another" "$W_LOG" ||
    fail "no log line about the broken protocol: $(cat "$W_LOG")"
  [[ $(wc -l <"$D/pids") -ge 4 ]] || fail "$(wc -l <"$D/pids") workers started, expected a new one after each breach"
  local pid
  for pid in $(cat "$D/pids"); do expect_gone "$pid" "a worker"; done
}

t_worker_must_say_ready_first() {
  run put --max-attempts 1 one
  work_env DIR="$D"
  start_work a --persistent -c 1 -- sh -c 'echo $$ >>"$DIR/pids"; echo "hello"; exec sleep 60'
  wait_until 5 "grep -q \"expected 'ready' first, got 'hello'\" '$D/a.log'" ||
    fail "no protocol error for a worker that did not say ready: $(cat "$D/a.log")"
  expect_gone "$(head -1 "$D/pids")" "the worker"
  expect_counts ready=1 running=0
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
}

t_worker_past_its_timeout_is_replaced() {
  run put --max-attempts 1 sleep:5000
  run put after
  local t0=$SECONDS
  run_work 30 --persistent -c 1 --timeout 300ms --kill-after 200ms --poll 50ms --until-empty \
    -- "$WORKERS/worker.sh"
  expect_rc 0
  ((SECONDS - t0 < 5)) || fail "took $((SECONDS - t0))s"
  expect_job 1 dead "timed out after 300ms (killed by SIGTERM)"
  run show 2 --json
  expect_out_has '"result":"after"'
  grep -q "worker 1 (pid [0-9]*) ran job 1 past its timeout of 300ms: replacing it" "$W_LOG" ||
    fail "log: $(cat "$W_LOG")"
}

t_dying_command_backs_off() {
  run put waiting
  start_work a --persistent -c 1 -- sh -c 'echo "no luck" >&2; exit 1'
  sleep 2
  local ended
  ended=$(grep -c "worker 1 (pid [0-9]*) ended with exit status 1 before it was ready: no luck" "$W_LOG")
  ((ended >= 2)) || fail "the worker was not restarted: $(cat "$W_LOG")"
  # 100 ms, doubling: about 5 in 2 seconds, not hundreds.
  ((ended <= 8)) || fail "the worker was restarted $ended times in 2s"
  expect_counts ready=1 running=0
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  run show 1 --json
  expect_out_has '"attempts":0'
}

t_sigterm_lets_busy_workers_finish() {
  run put sleep:600
  run put sleep:600
  run put sleep:600
  start_work a --persistent -c 2 --prefetch 1 -- "$WORKERS/worker.sh"
  wait_until 10 "JOBQ_DB=sqlite:$DB $JOBQ stats --json | grep -q '\"running\":3'" ||
    fail "the foreman did not claim"
  sleep 0.2
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  expect_counts done=2 ready=1 running=0
  expect_no_sessions
}

# Workers that do not exit at the end of their input hold no stop for the
# whole grace once they have no job: a second after it, SIGTERM, then
# SIGKILL for one that ignores SIGTERM.  A busy one still finishes its job.
t_idle_workers_stop_at_once() {
  run put sleep:1500
  cat >"$D/worker.sh" <<'EOF'
#!/usr/bin/env bash
# Answers jobs like the example, but does not exit when stdin ends; the
# second worker also ignores SIGTERM.
echo $$ >>"$DIR/pids"
[[ $JOBQ_WORKER == 2 ]] && trap '' TERM
echo ready
while IFS=' ' read -r verb id q a m l c k p rest; do
  ms=$(printf %s "$p" | base64 -d); ms=${ms#sleep:}
  sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  echo "done $id -"
done
while :; do sleep 0.1; done
EOF
  chmod +x "$D/worker.sh"
  work_env DIR="$D"
  start_work a --persistent -c 3 --grace 1m --kill-after 500ms -- "$D/worker.sh"
  wait_until 10 "JOBQ_DB=sqlite:$DB $JOBQ stats --json | grep -q '\"running\":1'" ||
    fail "the job did not start"
  local t0=$SECONDS
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 20 || fail "the foreman did not stop within 20s with idle workers (--grace 1m)"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  ((SECONDS - t0 <= 10)) || fail "stopping took $((SECONDS - t0))s"
  grep -q "1 running jobs may finish within 1m" "$W_LOG" || fail "log: $(cat "$W_LOG")"
  # The busy worker finished its job before it was stopped.
  expect_counts done=1 ready=0 running=0
  local pid
  for pid in $(cat "$D/pids"); do expect_gone "$pid" "a worker"; done
  expect_no_sessions
}

run_cases
