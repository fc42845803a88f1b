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

# The operator's reap with no worker left alive: a foreman killed with
# SIGKILL holding a long job, its lease run out, then `jobq reap`.  The
# stall guard used to renew the dead session's heartbeat on every reap,
# so that it was never reaped and the job stayed running for good.
reap_with_no_worker_alive() {
  use_store "$1" || return
  run put -q r sleep:60000
  expect_rc 0
  work_env JOBQ_DB="$U"
  start_work w -q r --lease 2s -- "$HERE/../examples/job.sh"
  local pid=$W_PID
  wait_until 20 'run ls --json --state running; grep -q "\"id\":1" "$T_OUT"' ||
    fail "the foreman did not claim the job"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  sleep 3
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
  run put -q r sleep:60000
  work_env JOBQ_DB="$U"
  start_work w -q r --lease 1s -- "$HERE/../examples/job.sh"
  local pid=$W_PID
  wait_until 20 'run ls --json --state running; grep -q "\"id\":1" "$T_OUT"' ||
    fail "the foreman did not claim the job"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  sleep 2
  run reap --no-wait
  expect_rc 0
  expect_out_has "reaped 0 sessions"
  expect_err_has "run 'jobq reap' again in 1s"
  sleep 1.2
  run reap --no-wait
  expect_rc 0
  expect_out_has "reaped 1 session"
}

run_cases
