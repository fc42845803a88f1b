#!/usr/bin/env bash
# cli_work.sh - `jobq work`, the foreman, with real processes and real
# signals: every job run exactly once without faults, the concurrency
# limit, timeouts (SIGTERM, then SIGKILL), retries then dead, exit 75,
# SIGKILL of one of two foremen, SIGTERM draining, a second signal, a
# foreman stopped past its lease whose late results are not recorded,
# a database locked past the lease (the session is given up, its job
# killed, a new one opened with backoff), cancel, the guard killing a dead
# foreman's jobs, the job's environment and descriptors, the output limit
# (a runaway job stopped at once), --until-empty, wake-ups, an idle
# foreman's CPU, --connections 2 and 3, and the usage errors.  The
# persistent workers have their own script, cli_work_persistent.sh.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

t_usage_errors() {
  run work
  expect_rc 2
  expect_err_has "missing the command to run: expected jobq work [options] -- COMMAND"
  expect_err_style
  run work -c 0 -- true
  expect_rc 2
  expect_err_has "invalid --concurrency '0': expected an integer from 1 to 1024"
  run work --lease 5 -- true
  expect_rc 2
  expect_err_has "invalid --lease '5': expected a unit after the number"
  run work --lease 50ms -- true
  expect_rc 2
  expect_err_has "invalid --lease '50ms': expected a duration of at least 100ms"
  # A bare 0 is a duration (zero needs no unit), here one too short.
  run work --lease 0 -- true
  expect_rc 2
  expect_err_has "invalid --lease '0': expected a duration of at least 100ms"
  run work -q BAD -- true
  expect_rc 2
  expect_err_has "invalid --queue 'BAD'"
  run work --max-output lots -- true
  expect_rc 2
  expect_err_has "invalid --max-output 'lots': expected a size like 1MiB"
  run work --grace -1s -- true
  expect_rc 2
  expect_err_has "invalid --grace '-1s'"
  run work --prefetch x -- true
  expect_rc 2
  expect_err_has "invalid --prefetch 'x'"
  run work -- no-such-command-jobq-test
  expect_rc 2
  expect_err_has "command 'no-such-command-jobq-test' not found in PATH"
  expect_err_style
  run work -- "$D"
  expect_rc 2
  expect_err_has "cannot run command '$D': is a directory"
  run work --persistant -- true
  expect_rc 2
  expect_err_has "did you mean '--persistent'?"
  # Nothing was opened: no database file appeared.
  [[ -e $DB ]] && fail "a usage error created the database"
  # A database URL that cannot work: exit 2, and no password shown.
  T_DBURL='postgres://u:secret@127.0.0.1:99999/db' run work -- true
  expect_rc 2
  expect_err_has "cannot start: "
  expect_quiet_about secret
  # One that is right but does not answer (yet): the foreman keeps trying,
  # says so without the password, and stops on SIGTERM.
  JOBQ_DB='postgres://u:secret@127.0.0.1:1/db' "$JOBQ" work -- true 2>"$D/unreachable" &
  local pid=$!
  sleep 1.5
  kill -TERM "$pid"
  wait "$pid"
  local st=$?
  [[ $st == 0 ]] || fail "the foreman that could not connect stopped with $st on SIGTERM"
  grep -q "trying again" "$D/unreachable" || fail "no retry: $(head -c 300 "$D/unreachable")"
  grep -q secret "$D/unreachable" && fail "the password was shown"
  # Options end at the command: its own options are its own.
  run work --help
  expect_rc 0
  expect_out_has "--until-empty"
}

t_exactly_once_500_jobs() {
  seq 1 500 | awk '{ printf "{\"payload\":\"p%d\"}\n", $1 }' >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  expect_rc 0
  work_env LOG="$D/ran.log"
  run_work 60 -c 8 --until-empty -- sh -c 'p=$(cat); echo "$p" >>"$LOG"; printf "r:%s" "$p"'
  expect_rc 0
  local lines dups
  lines=$(wc -l <"$D/ran.log")
  dups=$(sort "$D/ran.log" | uniq -d | head -3 | tr '\n' ' ')
  [[ $lines == 500 ]] || fail "$lines runs for 500 jobs"
  [[ -z $dups ]] || fail "payloads run twice: $dups"
  [[ $(sort -u "$D/ran.log" | wc -l) == 500 ]] || fail "not every payload ran"
  expect_counts done=500 ready=0 running=0 dead=0
  run show 17 --json
  expect_out_has '"result":"r:p17"'
  expect_no_sessions
  grep -q "stopped after .*: 500 done, 0 failed" "$W_LOG" || fail "no summary of 500 done in the log: $(tail -2 "$W_LOG")"
}

t_concurrency_limit() {
  for i in $(seq 1 12); do run put "j$i"; done
  mkdir "$D/slots"
  work_env SLOTS="$D/slots" LOG="$D/counts"
  run_work 60 -c 3 --prefetch 2 --until-empty -- sh -c \
    'touch "$SLOTS/$$"; ls "$SLOTS" | wc -l >>"$LOG"; sleep 0.2; rm "$SLOTS/$$"'
  expect_rc 0
  local most
  most=$(sort -n "$D/counts" | tail -1)
  [[ $(wc -l <"$D/counts") == 12 ]] || fail "$(wc -l <"$D/counts") runs for 12 jobs"
  ((most <= 3)) || fail "$most jobs ran at once with -c 3"
  ((most >= 2)) || fail "never more than $most job at once with -c 3"
  expect_counts done=12
}

t_timeout_kills_the_group() {
  run put --timeout 300ms --max-attempts 1 polite
  run put --max-attempts 1 stubborn
  cat >"$D/job.sh" <<'EOF'
#!/bin/sh
p=$(cat)
# The stubborn job and its child ignore SIGTERM.
if [ "$p" = stubborn ]; then trap '' TERM; fi
sleep 30 &
echo $! >"$DIR/$p.child"
wait
EOF
  chmod +x "$D/job.sh"
  work_env DIR="$D"
  local t0=$SECONDS
  run_work 30 -c 2 --timeout 2s --kill-after 300ms --until-empty -- "$D/job.sh"
  expect_rc 0
  ((SECONDS - t0 < 10)) || fail "the hung jobs took $((SECONDS - t0))s to stop"
  expect_job 1 dead "timed out after 300ms (killed by SIGTERM)"
  expect_job 2 dead "timed out after 2s (killed by SIGKILL)"
  expect_gone "$(cat "$D/polite.child")" "the polite job's child"
  expect_gone "$(cat "$D/stubborn.child")" "the stubborn job's child"
}

t_failing_job_retries_then_dead() {
  run put --max-attempts 3 --backoff 100ms bad
  run put later
  cat >"$D/job.sh" <<'EOF'
#!/bin/sh
p=$(cat)
if [ "$p" = bad ]; then echo "bad thing on attempt $JOBQ_ATTEMPT" >&2; exit 3; fi
if [ "$JOBQ_ATTEMPT" = 1 ]; then echo "come back later" >&2; exit 75; fi
echo "fine on attempt $JOBQ_ATTEMPT"
EOF
  chmod +x "$D/job.sh"
  run put --backoff 100ms later2
  run_work 30 -c 2 --poll 50ms --until-empty -- "$D/job.sh"
  expect_rc 0
  expect_job 1 dead "exit status 3: bad thing on attempt 3"
  run show 1 --json
  expect_out_has '"attempts":3'
  local created finished
  created=$(json_ms created_at <"$T_OUT") finished=$(json_ms finished_at <"$T_OUT")
  # Backoff 100 ms doubling, jitter 0.5 to 1.5: at least 50 + 100 ms.
  ((finished - created >= 150)) || fail "3 attempts in $((finished - created)) ms: no backoff"
  run show 3 --json
  expect_out_has '"state":"done"'
  expect_out_has '"attempts":2'
  expect_out_has '"result":"fine on attempt 2\n"'
  expect_out_has 'retry requested (exit status 75): come back later'
  # A requested retry is not a failure.
  grep -q "3 failed, 2 retried later" "$W_LOG" || fail "summary: $(tail -1 "$W_LOG")"
}

t_sigkill_one_of_two_loses_nothing() {
  seq 1 40 | awk '{ printf "{\"payload\":\"p%d\"}\n", $1 }' >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  local job='p=$(cat); echo "$WHO $$" >>"$DIR/started"; sleep 0.1; echo "$p" >>"$DIR/ran"'
  work_env DIR="$D" WHO=a
  start_work a -c 4 --lease 1s -- sh -c "$job"
  local a=$W_PID
  work_env DIR="$D" WHO=b
  start_work b -c 4 --lease 1s --poll 100ms --until-empty -- sh -c "$job"
  local b=$W_PID
  wait_until 10 "[[ \$(grep -c '^a ' '$D/started' 2>/dev/null) -ge 6 ]]" ||
    fail "foreman a did not start 6 jobs"
  kill -9 "$a"
  wait "$a" 2>/dev/null
  wait_exit "$b" 30 || fail "foreman b did not finish after a was killed"
  expect_counts done=40 ready=0 running=0 scheduled=0
  [[ $(sort -u "$D/ran" | wc -l) == 40 ]] || fail "$(sort -u "$D/ran" | wc -l) of 40 payloads ran"
  # The killed foreman's jobs died with it (its guard).
  local pid
  for pid in $(awk '$1 == "a" { print $2 }' "$D/started"); do
    expect_gone "$pid" "a job of the killed foreman"
  done
  expect_no_sessions
}

# A foreman killed with one job running and four prefetched: the running
# one spent its attempt (its outcome is unknown), the prefetched ones come
# back with theirs given back; all five are marked as possibly run, since a
# start may not have been written yet.
t_sigkill_gives_the_prefetch_back() {
  for i in 1 2 3 4 5; do run put "j$i"; done
  work_env DIR="$D"
  start_work a -c 1 --prefetch 4 --lease 1s -- sh -c 'p=$(cat); echo "$p" >>"$DIR/started"; exec sleep 30'
  wait_until 10 "[[ -s '$D/started' ]]" || fail "no job started"
  expect_counts running=5
  kill -9 "$W_PID"
  wait "$W_PID" 2>/dev/null
  # Another foreman (of another queue) heartbeats, and so reaps.
  start_work b -q other --lease 1s -- true
  wait_until 10 "$JOBQ stats --db 'sqlite:$DB' --json | grep -q '\"ready\":5'" ||
    fail "the killed foreman's jobs did not come back: $($JOBQ stats --db "sqlite:$DB")"
  kill -TERM "$W_PID"
  run ls --json --state ready
  [[ $(grep -o '"attempts":1' "$T_OUT" | wc -l) == 1 ]] || fail "not one spent attempt: $(cat "$T_OUT")"
  [[ $(grep -o '"attempts":0' "$T_OUT" | wc -l) == 4 ]] || fail "not four held back: $(cat "$T_OUT")"
  [[ $(grep -o '"prev_lost":true' "$T_OUT" | wc -l) == 5 ]] || fail "not five marked lost: $(cat "$T_OUT")"
}

t_sigterm_drains() {
  for i in 1 2 3 4 5 6; do run put "j$i"; done
  work_env DIR="$D"
  start_work a -c 2 --prefetch 2 -- sh -c 'p=$(cat); echo "$p" >>"$DIR/started"; sleep 0.5; echo "$p" >>"$DIR/ran"'
  wait_until 10 "[[ \$(wc -l <'$D/started' 2>/dev/null) -ge 2 ]]" || fail "no jobs started"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop within 10s"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC after SIGTERM"
  grep -q "stopping (SIGTERM): 2 running jobs may finish within 30s, 2 claimed jobs released" "$W_LOG" ||
    fail "log: $(grep stopping "$W_LOG")"
  [[ $(wc -l <"$D/ran") == 2 ]] || fail "$(wc -l <"$D/ran") jobs finished, expected the 2 running"
  expect_counts done=2 ready=4 running=0
  run ls --json --state ready
  grep -q '"attempts":[1-9]' "$T_OUT" && fail "a released job spent an attempt: $(cat "$T_OUT")"
  expect_no_sessions
}

t_sigterm_grace_then_release() {
  run put slow
  work_env DIR="$D"
  start_work a --grace 300ms --kill-after 300ms -- sh -c 'echo $$ >"$DIR/pid"; exec sleep 30'
  wait_until 10 "[[ -s '$D/pid' ]]" || fail "the job did not start"
  local t0=$SECONDS
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  ((SECONDS - t0 <= 3)) || fail "stopping took $((SECONDS - t0))s with --grace 300ms"
  expect_gone "$(cat "$D/pid")" "the job"
  grep -q "the grace of 300ms is over: stopping 1 running jobs" "$W_LOG" || fail "log: $(cat "$W_LOG")"
  run show 1 --json
  expect_out_has '"state":"ready"'
  expect_out_has '"attempts":0'
  expect_no_sessions
}

t_second_signal_stops_at_once() {
  run put stubborn
  work_env DIR="$D"
  start_work a --grace 1m -- sh -c 'trap "" TERM INT; echo $$ >"$DIR/pid"; sleep 30'
  wait_until 10 "[[ -s '$D/pid' ]]" || fail "the job did not start"
  local t0=$SECONDS
  kill -INT "$W_PID"
  sleep 0.3
  kill -INT "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop after two signals"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  ((SECONDS - t0 <= 3)) || fail "took $((SECONDS - t0))s"
  grep -q "stopping now (SIGINT): killing 1 running jobs" "$W_LOG" || fail "log: $(cat "$W_LOG")"
  expect_gone "$(cat "$D/pid")" "the job"
  expect_counts ready=1 running=0
}

t_sigstop_past_lease_is_fenced() {
  run put --max-attempts 5 one
  local job='cat >/dev/null; echo "$WHO" >>"$DIR/started"; sleep 1.2; echo "$WHO" >>"$DIR/finished"; printf "by %s" "$WHO"'
  work_env DIR="$D" WHO=a
  start_work a --lease 1s -- sh -c "$job"
  local a=$W_PID
  wait_until 10 "grep -q a '$D/started' 2>/dev/null" || fail "a did not start the job"
  kill -STOP "$a"
  work_env DIR="$D" WHO=b
  start_work b --lease 1s --poll 100ms --until-empty -- sh -c "$job"
  local b=$W_PID
  # a's job finishes while a is stopped; b takes the job over after a's
  # lease and finishes it too.
  wait_exit "$b" 30 || fail "foreman b did not finish the job"
  grep -q a "$D/finished" || fail "a's job did not finish while a was stopped"
  kill -CONT "$a"
  wait_until 5 "grep -q 'session lost' '$D/a.log'" || fail "a did not notice it lost its session: $(cat "$D/a.log")"
  kill -TERM "$a"
  wait_exit "$a" 10 || fail "a did not stop"
  run show 1 --json
  expect_out_has '"state":"done"'
  expect_out_has '"result":"by b"'
  expect_out_has '"attempts":2'
  expect_counts done=1 ready=0 running=0
  grep -q "1 done" "$D/b.log" || fail "b: $(tail -1 "$D/b.log")"
  grep -q ": 0 done" "$D/a.log" || fail "a recorded something: $(tail -1 "$D/a.log")"
}

# A database that no one can write to for longer than the lease (another
# process holds SQLite's write lock for 3 s): no one can have reaped the
# session either.  The foreman suspends it: its running job is stopped
# (it may have gone to another worker), but the session is kept, and when
# the lock goes its heartbeat succeeds again, the stopped job's outcome
# (a retry) is recorded under it, and the job runs again.
t_database_locked_past_the_lease() {
  if ! command -v sqlite3 >/dev/null; then
    skip "the sqlite3 shell is not installed (scripts/deps.txt lists it)"
    return
  fi
  run put --backoff 100ms long
  work_env DIR="$D"
  start_work a --db "sqlite:$DB?busy_timeout=100ms" --lease 1s --grace 200ms -- \
    sh -c 'echo $$ >>"$DIR/pids"; exec sleep 30'
  wait_until 10 "[[ -s '$D/pids' ]]" || fail "the job did not start"
  local first
  first=$(head -1 "$D/pids")
  # Another process holds the write lock for 3 s: no heartbeat can pass.
  (echo "BEGIN IMMEDIATE;"; sleep 3; echo "COMMIT;") | sqlite3 "$DB" &
  local locker=$!
  wait_until 5 "grep -q 'no heartbeat succeeded for 1s (the lease): the session may be gone; stopped 1 running jobs' '$W_LOG'" ||
    fail "the session was not suspended: $(cat "$W_LOG")"
  expect_gone "$first" "the job of the suspended session"
  grep -q "heartbeat failed: .*busy" "$W_LOG" || fail "no failed heartbeat: $(cat "$W_LOG")"
  wait "$locker"
  wait_until 10 "grep -q 'heartbeats succeed again: the session held' '$W_LOG'" ||
    fail "the session did not resume after the lock: $(cat "$W_LOG")"
  grep -q "session lost" "$W_LOG" && fail "the session was given up: $(cat "$W_LOG")"
  # The stopped job's retry was recorded, and it runs again.
  wait_until 10 "[[ \$(wc -l <'$D/pids') -ge 2 ]]" || fail "the job did not run again"
  run show 1 --json
  expect_out_has '"attempts":2'
  expect_out_has 'no heartbeat succeeded for the lease'
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "exit status $W_RC"
  expect_counts ready=1 running=0
}

# The same lock with the default busy timeout: the foreman's heartbeat
# and its claim are not refused but held up past the lease, and succeed
# once the lock goes.  The session held (no one could reap it), so the
# foreman resumes it: the outcomes it kept are recorded, nothing is lost
# or run twice, and it goes on claiming.
t_database_held_up_past_the_lease() {
  if ! command -v sqlite3 >/dev/null; then
    skip "the sqlite3 shell is not installed (scripts/deps.txt lists it)"
    return
  fi
  local i
  for i in $(seq 1 300); do echo "{\"queue\":\"h\",\"payload\":\"$i\"}"; done >"$D/jobs"
  run put --ndjson "$D/jobs"
  expect_rc 0
  start_work a --lease 1s -q h -c 4 -- sh -c 'sleep 0.02'
  wait_until 10 'run stats --json; (($(json_sum done) >= 20))' || fail "no jobs done: $(cat "$W_LOG")"
  (echo ".timeout 5000"; echo "BEGIN EXCLUSIVE;"; sleep 3; echo "COMMIT;") | sqlite3 "$DB"
  wait_until 30 'run stats --json; (($(json_sum done) == 300))' ||
    fail "the foreman did not go on after the lock: $(cat "$T_OUT"); $(cat "$W_LOG")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  grep -q "no heartbeat succeeded for 1s" "$W_LOG" || fail "the session was not suspended: $(cat "$W_LOG")"
  grep -q "heartbeats succeed again: the session held" "$W_LOG" ||
    fail "the session did not resume after the lock: $(cat "$W_LOG")"
  grep -q "session lost" "$W_LOG" && fail "the session was given up: $(cat "$W_LOG")"
  grep -q ", 0 lost;" "$W_LOG" || fail "outcomes were lost: $(tail -1 "$W_LOG")"
}

t_cancel_a_running_job() {
  run put long
  work_env DIR="$D"
  start_work a --lease 600ms -- sh -c 'echo $$ >"$DIR/pid"; exec sleep 30'
  wait_until 10 "[[ -s '$D/pid' ]]" || fail "the job did not start"
  # Its session shows the job in flight once a heartbeat has passed.
  wait_until 5 "JOBQ_DB=sqlite:$DB $JOBQ sessions --json | grep -q '\"in_flight\":1'" ||
    fail "the session does not show the job in flight"
  run cancel 1
  expect_rc 0
  wait_until 5 "! alive $(cat "$D/pid")" || fail "the cancelled job still runs"
  wait_until 5 "JOBQ_DB=sqlite:$DB $JOBQ show 1 --json 2>/dev/null | grep -q '\"state\":\"cancelled\"'" ||
    fail "the job is not cancelled: $(JOBQ_DB=sqlite:$DB $JOBQ show 1 --json)"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
}

t_dead_foreman_takes_its_jobs_along() {
  run put one
  work_env DIR="$D"
  start_work a -- sh -c 'echo $$ >"$DIR/pid"; sleep 30 & echo $! >"$DIR/child"; wait'
  wait_until 10 "[[ -s '$D/child' ]]" || fail "the job did not start"
  kill -9 "$W_PID"
  wait "$W_PID" 2>/dev/null
  wait_until 3 "! alive $(cat "$D/pid") && ! alive $(cat "$D/child")" ||
    fail "the job (pid $(cat "$D/pid")) or its child outlived the foreman killed by SIGKILL"
}

t_job_environment_and_descriptors() {
  run put --key acct-7 hello
  work_env FDS="$D/fds" PGPASSWORD=hunter2secret "DATABASE_URL=postgres://u:hunter2secret@h/db" \
    MY_SETTING=kept JOBQ_OTHER=x
  # An inherited descriptor that is not close-on-exec must not reach jobs.
  exec 7>"$D/leak"
  run_work 30 --until-empty -- sh -c \
    'echo "PGRP=$(cut -d" " -f5 /proc/$$/stat) PID=$$"; env; printf "STDIN=%s" "$(cat)"; exec ls -l /proc/self/fd >"$FDS"'
  exec 7>&-
  expect_rc 0
  # ls's own descriptor on /proc/self/fd aside, only 0, 1 and 2.
  local fds
  fds=$(awk '{ for (i = 2; i < NF; i++) if ($i == "->" && $(i + 1) !~ /^\/proc\//) print $(i - 1) }' "$D/fds" |
        sort -n | tr '\n' ' ')
  [[ $fds == "0 1 2 " ]] || fail "the job has descriptors $fds, expected 0 1 2: $(cat "$D/fds")"
  run show 1 --json
  local out=$T_OUT
  for want in '"result":"' 'JOBQ_JOB_ID=1\n' 'JOBQ_QUEUE=default\n' 'JOBQ_ATTEMPT=1\n' \
              'JOBQ_MAX_ATTEMPTS=25\n' 'JOBQ_KEY=acct-7\n' 'MY_SETTING=kept\n' 'STDIN=hello'; do
    grep -qF -- "$want" "$out" || fail "the job's output lacks $want"
  done
  grep -qE 'JOBQ_CLAIM=[0-9a-f]{32}\\n' "$out" || fail "no claim token in the environment"
  for bad in JOBQ_DB hunter2secret DATABASE_URL JOBQ_OTHER JOBQ_PREV_LOST "$DB"; do
    grep -qF -- "$bad" "$out" && fail "the job's environment shows $bad"
  done
  local pgrp pid
  pgrp=$(grep -o 'PGRP=[0-9]*' "$out" | cut -d= -f2)
  pid=$(grep -o 'PID=[0-9]*' "$out" | cut -d= -f2)
  [[ -n $pid && $pgrp == "$pid" ]] || fail "the job is not its own process group ($pgrp, $pid)"
}

t_output_limit() {
  run put --max-attempts 1 big
  run put small
  run_work 30 --max-output 1KiB --until-empty -- sh -c 'if [ "$(cat)" = big ]; then head -c 5000 /dev/zero; else echo ok; fi'
  expect_rc 0
  expect_job 1 dead "output over the limit of 1024 bytes (--max-output)"
  expect_job 2 done ""
}

# A job that never stops writing is stopped as soon as it passes the
# limit, not when it is done (it would never be): yes, and one that
# ignores SIGPIPE and SIGTERM, which gets SIGKILL after --kill-after.
t_runaway_output_is_stopped() {
  run put -q y --max-attempts 1 x
  run_work 60 -q y --max-output 64KiB --until-empty -- yes
  expect_rc 0
  # Killed by SIGTERM, or its next write failed (stdout is a socket: yes
  # exits 1 on "connection reset by peer") and it exited first.
  expect_job 1 dead "output over the limit of 65536 bytes (--max-output), "
  run put -q z --max-attempts 1 x
  work_env DIR="$D"
  run_work 60 -q z --max-output 1KiB --kill-after 300ms --until-empty -- sh -c \
    'echo $$ >"$DIR/pid"; trap "" PIPE TERM; while :; do echo xxxxxxxxxxxxxxxx 2>/dev/null; done'
  expect_rc 0
  expect_job 2 dead "output over the limit of 1024 bytes (--max-output), killed by SIGKILL"
  expect_gone "$(cat "$D/pid")" "the job that ignored SIGTERM"
}

t_until_empty_waits_for_scheduled_jobs() {
  # The clock starts before the put: the job is due 700 ms after its
  # commit, which a loaded machine may finish well before `jobq put` ends.
  local t0
  t0=$(date +%s%3N)
  run put --delay 700ms later
  run_work 30 --poll 100ms --until-empty -- cat
  expect_rc 0
  (($(date +%s%3N) - t0 >= 700)) || fail "stopped before the delayed job was due"
  expect_counts done=1 scheduled=0
}

t_wakes_up_on_new_work_and_idles_quietly() {
  run init
  work_env DIR="$D"
  start_work a --poll 1h -- sh -c 'date +%s%3N >>"$DIR/started"'
  wait_until 10 "grep -q started '$D/a.log'" || fail "the foreman did not start"
  sleep 0.3
  local t0
  t0=$(date +%s%3N)
  run put now
  wait_until 5 "[[ -s '$D/started' ]]" || fail "the job did not start"
  local lat=$(($(head -1 "$D/started") - t0))
  # Without the watch the foreman would wait for its 1h poll.
  ((lat < 1000)) || fail "the job started $lat ms after it was put"
  # Idle: under 10% of a CPU over 2 seconds (clock ticks, usually 100/s).
  local before after hz
  hz=$(getconf CLK_TCK)
  before=$(cpu_ticks "$W_PID")
  sleep 2
  after=$(cpu_ticks "$W_PID")
  ((after - before <= hz / 5)) || fail "the idle foreman used $((after - before)) ticks in 2s"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
}

# Jobs put one at a time to an idle foreman: it claims when one of them
# arrives, not on its own commits (its claims, outcomes and heartbeats
# write to the same database, and on SQLite they wake its watch too), so
# most claims find a job.
t_woken_claims_find_work() {
  run init
  start_work a --poll 1h -- true
  wait_until 10 "grep -q started '$D/a.log'" || fail "the foreman did not start"
  local i
  for i in $(seq 1 40); do
    run put "j$i"
    expect_rc 0
  done
  wait_until 30 'run stats --json; [[ $(json_sum done) == 40 ]]' ||
    fail "not every job ran: $(cat "$T_OUT")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  local line claims empty
  line=$(grep -o '[0-9]* claims, [0-9]* empty' "$D/a.log")
  claims=${line%% claims*}
  empty=${line##*, }
  empty=${empty%% *}
  [[ -n $claims && -n $empty ]] || fail "no count of claims in the log: $(tail -2 "$D/a.log")"
  # Each job's own claim and outcome used to wake a claim that found
  # nothing: two empty claims a job.  The poll that follows activity
  # (25 ms, doubling) may still find nothing now and then.
  ((empty * 2 <= claims)) || fail "$empty of $claims claims were empty for 40 jobs"
}

# A foreman of one queue on SQLite, whose file every commit wakes: jobs
# put to another queue wake it, and a read, not a claim, tells it that
# none of them is its own.
t_commits_of_other_queues_claim_nothing() {
  run init
  start_work a -q mine --poll 1h -- true
  wait_until 10 "grep -q started '$D/a.log'" || fail "the foreman did not start"
  local i
  for i in $(seq 1 40); do
    run put -q other "o$i"
    expect_rc 0
    sleep 0.02
  done
  run put -q mine m1
  expect_rc 0
  wait_until 30 'run stats --json; [[ $(json_sum done) == 1 ]]' ||
    fail "the job of its queue did not run: $(cat "$T_OUT")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  local claims empty
  claims=$(claims_made "$D/a.log")
  empty=$(claims_empty "$D/a.log")
  [[ -n $claims && -n $empty ]] || fail "no count of claims in the log: $(tail -2 "$D/a.log")"
  # The polls that follow its start (25 ms, doubling) find nothing; the
  # 40 wake-ups of the other queue must not each make a claim.
  ((empty <= 12)) || fail "$empty of $claims claims were empty for 40 jobs of another queue"
}

# An idle foreman sleeps until its queue's next job is due, not at its
# poll's pace (the file's wake-ups tell it of new jobs): a delayed job put
# meanwhile runs when due, long before the idle sleep (30 polls) ends.
t_idle_foreman_sleeps_until_due() {
  run init
  start_work a -q later --poll 300ms -- cat
  wait_until 10 "grep -q started '$D/a.log'" || fail "the foreman did not start"
  sleep 9
  run put -q later --delay 2s soon
  expect_rc 0
  wait_until 7 'run stats --json; [[ $(json_sum done) == 1 ]]' ||
    fail "the delayed job was not done within 7s: $(cat "$T_OUT")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  local claims
  claims=$(claims_made "$D/a.log")
  # At its poll's pace it would make 30 or more claims in these seconds.
  [[ -n $claims ]] && ((claims < 20)) || fail "${claims:-no} claims: $(tail -1 "$D/a.log")"
}

# --connections: a foreman of 2 and of 3 connections runs every job once;
# a count that is not 1 to 8 is refused.
t_connections_exactly_once() {
  drain_once "sqlite:$DB" 3000 2
  drain_once "sqlite:$DB" 3000 3
  expect_no_sessions
  local bad
  for bad in 0 9 x 2x; do
    run work --connections "$bad" -- true
    expect_rc 2
    expect_err_has "invalid --connections '$bad'"
    expect_err_style
  done
}

run_cases
