#!/usr/bin/env bash
# cli_failover.sh - what jobq does when its database goes away, comes back
# older, or stops taking writes for a while, on every store (SQLite, and
# the PostgreSQL and MariaDB servers that tests/run.sh started): an
# operator's `jobq reap` with no worker left; a database restored from an
# older copy under a live foreman and under a fresh one (the state file),
# refused until `jobq epoch bump`; `jobq doctor` naming the lost jobs; a
# job whose outcome the database lost going back to its queue; and
# outcomes kept through a read-only window.  Each case works in a
# database (or schema) of its own.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG=${JOBQ_TEST_PG_URL:-}
MY=${JOBQ_TEST_MYSQL_URL:-}
# Every jobq of these cases keeps its state file in the case's folder.
export XDG_STATE_HOME

# psql_do SQL...: runs SQL as the PostgreSQL server's superuser.
psql_do() {
  local pw port
  pw=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$PG")
  PGOPTIONS="-c client_min_messages=warning" PGPASSWORD=$pw psql -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$port" -U jobq -d jobq -At "$@"
}

# my_do ARGS...: the mariadb client as the MariaDB server's jobq user.
my_do() {
  local pw port
  pw=$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$MY")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$MY")
  MYSQL_PWD=$pw mariadb --no-defaults -h 127.0.0.1 -P "$port" -u jobq -N -B "$@"
}

# use_store STORE: the case's queue database on STORE (sqlite, postgres or
# mysql) in $U and T_DBURL, initialised; 1 (after a skip) when that
# store's server is not there.
use_store() {
  STORE=$1
  S=c$$_$RANDOM$RANDOM
  XDG_STATE_HOME=$D/state
  case $STORE in
    sqlite) U=sqlite:$DB ;;
    postgres)
      [[ -n $PG ]] || { skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"; return 1; }
      U="$PG?schema=$S" ;;
    mysql)
      [[ -n $MY ]] || { skip "JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)"; return 1; }
      my_do -e "CREATE DATABASE $S"
      U="${MY%/*}/$S" ;;
  esac
  T_DBURL=$U
  run init
  expect_rc 0
}

# drop_store: removes the case's database (SQLite: its folder goes anyway).
drop_store() {
  case $STORE in
    postgres) psql_do -c "DROP SCHEMA IF EXISTS $S CASCADE" ;;
    mysql) my_do -e "DROP DATABASE IF EXISTS $S" ;;
  esac
}

# ---------------------------------------------------------------- reap

# dead_foreman LEASE: a foreman with that lease, killed with SIGKILL
# while it runs job 1 (a long one), and its lease left to run out with no
# worker alive: the issue's reproduction.
dead_foreman() {
  run put -q r sleep:60000
  expect_rc 0
  work_env JOBQ_DB="$U"
  start_work w -q r --lease "$1" -- "$HERE/../examples/job.sh"
  local pid=$W_PID
  wait_until 20 'run ls --json --state running; grep -q "\"id\":1" "$T_OUT"' ||
    fail "the foreman did not claim the job"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  sleep "$(( ${1%s} + 1 ))"
}

# The operator's reap with no worker left alive.  The stall guard used to
# renew the dead session's heartbeat on every reap, so that it was never
# reaped and the job stayed running for good.
reap_with_no_worker_alive() {
  use_store "$1" || return
  dead_foreman 2s
  run reap
  expect_rc 0
  expect_out_has "reaped 1 session"
  expect_err_has "waiting 2s for live workers to heartbeat"
  run sessions --json
  expect_out_has '"sessions":[]'
  run show 1 --json
  expect_out_has '"state":"ready"'
  # A second reap has nothing left, and does not wait.
  run reap --no-wait
  expect_rc 0
  expect_out_has "reaped 0 sessions"
  drop_store
}
t_reap_with_no_worker_alive_sqlite() { reap_with_no_worker_alive sqlite; }
t_reap_with_no_worker_alive_postgres() { reap_with_no_worker_alive postgres; }
t_reap_with_no_worker_alive_mysql() { reap_with_no_worker_alive mysql; }

# --no-wait says when to run it again, and reaps nothing yet.
t_reap_no_wait() {
  use_store sqlite || return
  dead_foreman 1s
  run reap --no-wait
  expect_rc 0
  expect_out_has "reaped 0 sessions"
  expect_err_has "run 'jobq reap' again in 1s"
  sleep 1.2
  run reap --no-wait
  expect_rc 0
  expect_out_has "reaped 1 session"
}

# ---------------------------------------------------------------- restores

# backup_store NAME / restore_store NAME [live]: a copy of the case's
# database as an operator would take it (SQLite's backup API, pg_dump,
# mariadb-dump), and put back in its place (an SQLite file in use through
# the backup API, one that no process uses by copying the file over it
# and removing its -wal and -shm).
backup_store() {
  case $STORE in
    sqlite) sqlite3 "$DB" ".backup '$D/$1'" ;;
    postgres) pg_dump --dbname="${PG%%\?*}" --schema="$S" --no-owner -f "$D/$1" ;;
    mysql) mariadb-dump --no-defaults -h 127.0.0.1 -P "$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$MY")" \
      -u jobq -p"$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$MY")" --single-transaction \
      "$S" >"$D/$1" ;;
  esac
}
restore_store() {
  case $STORE in
    sqlite)
      if [[ ${2:-} == live ]]; then
        sqlite3 "$DB" ".restore '$D/$1'"
      else
        rm -f "$DB-wal" "$DB-shm" && cp "$D/$1" "$DB"
      fi ;;
    postgres) psql_do -c "DROP SCHEMA $S CASCADE" && psql_do -f "$D/$1" >/dev/null ;;
    mysql) my_do "$S" <"$D/$1" ;;
  esac
}

# restored STORE MODE: three jobs of queue a are done, the copy is taken,
# three jobs of queue b are done, and the copy is put back (no job was
# put after the copy: the job sequence is where it was, and only the
# completions show the loss).  MODE live: under a foreman that completed
# b's jobs, which finds its last completion missing at its next
# heartbeat.  MODE fresh: then a foreman started afterwards, which finds
# them missing through the state file the first one left.  Either stops
# claiming, saying what is missing and what to do; jobq doctor lists the
# lost jobs; after jobq epoch bump the foreman goes on, and b's jobs run
# again.
restored() {
  use_store "$1" || return
  local mode=$2 i
  command -v sqlite3 >/dev/null || [[ $STORE != sqlite ]] ||
    { skip "the sqlite3 shell is not installed (scripts/deps.txt lists it)"; return; }
  for i in 1 2 3; do run put -q a "a$i"; run put -q b "b$i"; done
  W_ENV=(JOBQ_DB="$U")
  run_work 30 -q a --until-empty -- cat
  expect_rc 0
  backup_store copy || { fail "the copy failed"; return; }
  local log
  if [[ $mode == live ]]; then
    work_env JOBQ_DB="$U"
    start_work w --lease 1s -- cat
    log=$W_LOG
    wait_until 20 'run stats --json; [[ $(json_sum done) == 6 ]]' || fail "b's jobs did not run"
    restore_store copy live || { fail "the restore failed"; return; }
  else
    W_ENV=(JOBQ_DB="$U")
    run_work 30 -q b --until-empty -- cat
    expect_rc 0
    restore_store copy || { fail "the restore failed"; return; }
    work_env JOBQ_DB="$U"
    start_work w --lease 1s -- cat
    log=$W_LOG
  fi
  wait_until 20 "grep -q 'the database lost acknowledged writes: job [246]\\( (queue .b.)\\)\\?, completed by' '$log'" ||
    fail "the foreman did not find the loss: $(cat "$log")"
  grep -q "jobq epoch bump" "$log" || fail "no advice: $(cat "$log")"
  # b's jobs are unfinished again, and nothing runs them.
  sleep 1
  run stats --json
  [[ $(json_sum done) == 3 ]] || fail "the restored database was used: $(cat "$T_OUT")"
  run doctor
  expect_rc 1
  expect_out_has "lost writes"
  expect_out_has "jobs 2, 4, 6"
  run epoch bump
  expect_rc 0
  wait_until 30 'run stats --json; [[ $(json_sum done) == 6 ]]' ||
    fail "the foreman did not go on after the bump: $(cat "$log")"
  run doctor
  expect_rc 0
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 20 || fail "the foreman did not stop"
  drop_store
}
t_restored_under_a_live_foreman_sqlite() { restored sqlite live; }
t_restored_under_a_live_foreman_postgres() { restored postgres live; }
t_restored_under_a_live_foreman_mysql() { restored mysql live; }
t_restored_under_a_fresh_foreman_sqlite() { restored sqlite fresh; }
t_restored_under_a_fresh_foreman_postgres() { restored postgres fresh; }
t_restored_under_a_fresh_foreman_mysql() { restored mysql fresh; }

# ---------------------------------------------------------------- read-only windows

# The job of the window cases: counts its run (one line per run), then
# takes half a second.
WINDOW_JOB='echo "$JOBQ_JOB_ID" >>"$DIR/runs"; sleep 0.5'

# read_only_window ON OFF: 8 jobs under a live foreman (2 at once, no
# prefetch, a lease of 2 s) with the database read-only for 5 s (ON, then
# OFF, run in a shell) while two of them run.  The foreman cannot
# heartbeat for longer than its lease and suspends its session; the jobs
# that finished meanwhile keep their outcomes, which are recorded once
# the database takes writes again, under the same session.  Each job runs
# exactly once.  (The foreman used to give the session up and drop those
# outcomes: their jobs ran again.)
read_only_window() {
  local on=$1 off=$2
  local i
  for i in $(seq 1 8); do run put -q w "job $i"; done
  work_env JOBQ_DB="$W_URL" DIR="$D"
  start_work w -q w -c 2 --prefetch 0 --lease 2s -- sh -c "$WINDOW_JOB"
  local pid=$W_PID log=$W_LOG
  wait_until 20 "[[ -s '$D/runs' ]]" || fail "no job started: $(cat "$log")"
  eval "$on"
  sleep 5
  eval "$off"
  wait_until 60 'run stats --json; [[ $(json_sum done) == 8 ]]' ||
    fail "the jobs did not all finish: $(cat "$T_OUT"): $(cat "$log")"
  kill -TERM "$pid"
  wait_exit "$pid" 20 || fail "the foreman did not stop"
  grep -q "no heartbeat succeeded for 2s (the lease): the session may be gone" "$log" ||
    fail "the session was not suspended (the window was too short?): $(cat "$log")"
  grep -q "heartbeats succeed again: the session held" "$log" ||
    fail "the session did not resume: $(cat "$log")"
  grep -q "session lost" "$log" && fail "the session was given up: $(cat "$log")"
  local twice
  twice=$(sort "$D/runs" | uniq -d | tr '\n' ' ')
  [[ -z $twice ]] || fail "jobs ran twice: $twice: $(cat "$log")"
  [[ $(sort -u "$D/runs" | wc -l) == 8 ]] || fail "runs: $(sort "$D/runs" | tr '\n' ' ')"
}

t_read_only_window_mysql() {
  use_store mysql || return
  # A worker without the privilege to write to a read-only server.
  my_do -e "CREATE USER 'w_$S'@'127.0.0.1' IDENTIFIED BY 'w-pass';
            GRANT ALL ON $S.* TO 'w_$S'@'127.0.0.1'"
  local port
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$MY")
  W_URL="mysql://w_$S:w-pass@127.0.0.1:$port/$S"
  read_only_window 'my_do -e "SET GLOBAL read_only = 1"' 'my_do -e "SET GLOBAL read_only = 0"'
  my_do -e "SET GLOBAL read_only = 0; DROP USER 'w_$S'@'127.0.0.1'"
  drop_store
}

t_read_only_window_postgres() {
  use_store postgres || return
  W_URL=$U
  read_only_window \
    'psql_do -c "ALTER SYSTEM SET default_transaction_read_only = on" -c "SELECT pg_reload_conf()" >/dev/null' \
    'psql_do -c "ALTER SYSTEM RESET default_transaction_read_only" -c "SELECT pg_reload_conf()" >/dev/null'
  psql_do -c "ALTER SYSTEM RESET default_transaction_read_only" -c "SELECT pg_reload_conf()" >/dev/null
  drop_store
}

t_read_only_window_sqlite() {
  use_store sqlite || return
  command -v sqlite3 >/dev/null || { skip "the sqlite3 shell is not installed (scripts/deps.txt lists it)"; return; }
  W_URL="sqlite:$DB?busy_timeout=100ms"
  # No one can write while another process holds the write lock.
  read_only_window '(echo "BEGIN IMMEDIATE;"; sleep 5; echo "COMMIT;") | sqlite3 "$DB" & LOCKER=$!' \
    'wait $LOCKER'
}

run_cases
