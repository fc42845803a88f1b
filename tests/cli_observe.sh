#!/usr/bin/env bash
# cli_observe.sh - what the foreman tells the machine it runs on: `jobq
# work --log-format json` (one JSON object a line, checked by Python's
# json module), journald priorities when stderr is the journal
# (JOURNAL_STREAM), and systemd's notify protocol (READY=1 once the
# session is open, STATUS=, WATCHDOG=1 from the event loop, STOPPING=1)
# read from a datagram socket that the test listens on as systemd would;
# `jobq web` says READY=1 too.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

# listen_notify: a datagram socket at $D/notify whose messages go to
# $D/notify.log, one per line ("|" between a message's lines), until the
# listener is killed; sets $N_PID.
listen_notify() {
  python3 - "$D/notify" "$D/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode().replace("\n", "|") + "\n")
EOF
  N_PID=$!
  W_PIDS+=("$N_PID")
  wait_until 10 "[[ -S '$D/notify' ]]" || fail "the notify socket did not appear"
}

t_log_format_json() {
  run put -q mail hello
  run put -q mail --max-attempts 1 fail
  run_work 30 --until-empty -v --log-format json -q mail -- sh -c \
    'read p; [ "$p" = fail ] && { printf "bad \"input\"\\n\\001" >&2; exit 3; }; echo ok'
  expect_rc 0
  python3 - "$W_LOG" <<'EOF' || fail "the log is not JSON lines: $(head -c 600 "$W_LOG")"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
objs = [json.loads(l) for l in lines]
for o in objs:
    assert {"time", "level", "event"} <= o.keys(), o
    assert o["level"] in ("err", "warning", "notice", "info"), o
jobs = [o for o in objs if o["event"] == "job"]
assert len(jobs) == 2, jobs
done = next(o for o in jobs if o["outcome"] == "done")
assert done["queue"] == "mail" and done["attempt"] == 1 and done["duration_ms"] >= 0, done
failed = next(o for o in jobs if o["outcome"] != "done")
assert 'bad "input"' in failed["error"] and failed["level"] == "notice", failed
assert any(o["event"] == "started" and o["level"] == "notice" for o in objs)
assert any(o["event"] == "stopped" for o in objs)
EOF
  run_work 5 --log-format xml -- true
  expect_rc 2
  expect_err_has "invalid --log-format 'xml': expected text or json"
}

t_journal_priorities() {
  run put -q mail hello
  local log=$D/journal.log
  : >"$log"
  local stream
  stream=$(stat -c '%d:%i' "$log")
  JOBQ_DB=sqlite:$DB JOURNAL_STREAM=$stream timeout 30 "$JOBQ" work --until-empty -v \
    --log-times -q mail -- cat </dev/null >/dev/null 2>"$log"
  grep -q '^<5>jobq work: started: session' "$log" || fail "no <5> start: $(head -c 300 "$log")"
  grep -q '^<6>jobq work: job 1 (mail, attempt 1 of 25): done in ' "$log" ||
    fail "no <6> job line: $(cat "$log")"
  grep -qv '^<[0-7]>' "$log" && fail "a line without priority: $(grep -v '^<' "$log" | head -2)"
  # The journal has its own times: --log-times adds none there.
  grep -q '^<[0-9]>20[0-9][0-9]-' "$log" && fail "a time in the journal's lines"
  # A JOURNAL_STREAM that is not stderr is only inherited: no prefixes.
  JOBQ_DB=sqlite:$DB JOURNAL_STREAM=1:1 timeout 30 "$JOBQ" work --until-empty -q mail -- cat \
    </dev/null >/dev/null 2>"$D/plain.log"
  grep -q '^<' "$D/plain.log" && fail "prefixes without the journal"
  return 0
}

t_systemd_notify() {
  listen_notify
  run put -q mail hello
  work_env NOTIFY_SOCKET="$D/notify" WATCHDOG_USEC=300000
  start_work fm -q mail -- cat
  wait_until 20 "grep -q 'READY=1' '$D/notify.log'" || fail "no READY=1: $(cat "$D/notify.log")"
  grep 'READY=1' "$D/notify.log" | grep -q 'STATUS=claiming: session [0-9a-f]\{32\} open' ||
    fail "READY=1 without the session's status: $(cat "$D/notify.log")"
  wait_until 20 "[[ \$(grep -c 'WATCHDOG=1' '$D/notify.log') -ge 4 ]]" ||
    fail "fewer than 4 WATCHDOG=1 in the time of 10: $(cat "$D/notify.log")"
  grep 'WATCHDOG=1' "$D/notify.log" | grep -q 'STATUS=claiming: 0 running, 0 claimed; 1 done' ||
    fail "no status with the counts: $(tail -3 "$D/notify.log")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 20 || fail "the foreman did not stop"
  grep -q 'STOPPING=1' "$D/notify.log" || fail "no STOPPING=1: $(tail -3 "$D/notify.log")"
  # READY=1 comes before the first WATCHDOG=1's claiming status, STOPPING=1 last of those.
  local ready stopping
  ready=$(grep -n 'READY=1' "$D/notify.log" | head -1 | cut -d: -f1)
  stopping=$(grep -n 'STOPPING=1' "$D/notify.log" | head -1 | cut -d: -f1)
  ((ready < stopping)) || fail "STOPPING=1 before READY=1"
  kill "$N_PID" 2>/dev/null
}

t_systemd_notify_without_watchdog() {
  listen_notify
  run put -q mail hello
  # No WatchdogSec: a status now and then, and no WATCHDOG=1.
  work_env NOTIFY_SOCKET="$D/notify"
  start_work fm -q mail -- cat
  wait_until 20 "grep -q 'READY=1' '$D/notify.log'" || fail "no READY=1"
  sleep 1
  grep -q 'WATCHDOG=1' "$D/notify.log" && fail "WATCHDOG=1 without WatchdogSec"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 20 || fail "the foreman did not stop"
  kill "$N_PID" 2>/dev/null
}

t_web_notify() {
  listen_notify
  run put -q mail hello
  NOTIFY_SOCKET=$D/notify JOBQ_DB=sqlite:$DB "$JOBQ" web --listen 127.0.0.1:0 </dev/null \
    >/dev/null 2>"$D/web.log" &
  local pid=$!
  W_PIDS+=("$pid")
  wait_until 20 "grep -q 'READY=1' '$D/notify.log'" || fail "jobq web sent no READY=1"
  grep -q 'STATUS=serving on port [0-9]' "$D/notify.log" || fail "no status: $(cat "$D/notify.log")"
  kill -TERM "$pid"
  wait_exit "$pid" 10 || fail "jobq web did not stop"
  grep -q 'STOPPING=1' "$D/notify.log" || fail "jobq web sent no STOPPING=1"
  kill "$N_PID" 2>/dev/null
}

run_cases
