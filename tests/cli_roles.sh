#!/usr/bin/env bash
# cli_roles.sh - the roles of `jobq init --print-roles` on the PostgreSQL
# and MariaDB servers that tests/run.sh started, through jobq itself with
# one login per role: every action of a role works (put as the producer;
# claims, acknowledgements, heartbeats and reaping as the worker; stats,
# ls, show, sessions, epoch and doctor as the reader; everything as the
# admin), and every action of another role is refused with a message that
# says what was being done and which role may do it.  What jobq never
# does but a login could try by hand in SQL is refused too: a reader that
# takes one of jobq's advisory locks or locks rows, a producer that reads
# payloads or writes a paused queue or a claimed job, a worker that asks to
# cancel a job or archives one no session held.  Each engine's case works
# in a database of its own and drops it, with its roles and logins.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

PG=${JOBQ_TEST_PG_URL:-}
MY=${JOBQ_TEST_MYSQL_URL:-}

# refused ROLE...: the last run failed (exit 1) on a permission, said so
# in words (no statement's name), and named the roles that may.
refused() {
  expect_rc 1
  grep -qiE "denied|row-level security" "$T_ERR" || fail "no permission in: $(head -c 300 "$T_ERR")"
  expect_err_has "the login needs the role $1"
  expect_err_style
  if grep -qE '[A-Z]{3,}_[A-Z_]+:' "$T_ERR"; then
    fail "the message names a statement: $(head -c 300 "$T_ERR")"
  fi
}

# job_state ID: the job's state, as the admin sees it.
job_state() {
  T_DBURL=$A run show "$1" --json
  /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["state"])' "$T_OUT" \
    2>/dev/null
}

# The actions of every role, the same on both engines, with $R, $P, $W and
# $A the logins' URLs and $PFX the roles' prefix.
role_matrix() {
  local engine=$1
  # The producer puts: plain, keyed, unique, a barrier, many at once.
  T_DBURL=$P run put -q q1 one
  expect_rc 0
  T_DBURL=$P run put -q q1 --key k two
  expect_rc 0
  T_DBURL=$P run put -q q1 --unique u three
  expect_rc 0
  T_DBURL=$P run put -q q1 --unique u again
  expect_rc 0
  T_DBURL=$P run put -q q1 --barrier four
  expect_rc 0
  printf '{"queue":"q1","payload":"five"}\n{"queue":"q1","key":"k","payload":"six"}\n' >"$D/in"
  T_STDIN=$D/in T_DBURL=$P run put --ndjson -
  expect_rc 0
  expect_out_has "put 2 jobs"
  # ... and nothing else.
  T_DBURL=$P run stats
  refused "${PFX}reader, ${PFX}worker or ${PFX}admin"
  T_DBURL=$P run reap
  refused "${PFX}worker or ${PFX}admin"
  T_DBURL=$P run cancel 1
  refused "${PFX}admin"
  T_DBURL=$P run pause q1
  refused "${PFX}admin"
  expect_quiet_about "p-pass"

  # The reader reads, and nothing else.
  local c
  for c in stats ls "show 1" sessions epoch doctor; do
    T_DBURL=$R run $c
    expect_rc 0
  done
  T_DBURL=$R run show 1 --json
  expect_out_has '"payload":"one"'
  T_DBURL=$R run put -q q1 x
  refused "${PFX}producer or ${PFX}admin"
  T_DBURL=$R run cancel 1
  refused "${PFX}admin"
  T_DBURL=$R run epoch bump
  refused "${PFX}admin"

  # The worker works: claims, completes, fails to the end, reaps.
  T_DBURL=$W run_work 60 --db "$W" -q q1 --until-empty -- cat
  expect_rc 0
  T_DBURL=$A run stats --json
  [[ $(json_sum done) == 6 ]] || fail "the worker did not complete 6 jobs: $(cat "$T_OUT")"
  T_DBURL=$P run put -q q2 --max-attempts 1 --key dk first
  run_work 60 --db "$W" -q q2 --until-empty -- false
  expect_rc 0
  T_DBURL=$P run put -q q2 --key dk second
  T_DBURL=$A run stats --json
  [[ $(json_sum dead) == 1 && $(json_sum waiting) == 1 ]] ||
    fail "expected a dead head and its key's next job waiting: $(cat "$T_OUT")"
  T_DBURL=$W run reap
  expect_rc 0
  # Jobs put after others: the producer puts them pending, the worker runs
  # them in order, and cancels the child of a parent that died.
  local parent child doomed orphan
  T_DBURL=$P run put -q d1 parent
  parent=$(cat "$T_OUT")
  T_DBURL=$P run put -q d1 --after "$parent" child
  expect_rc 0
  child=$(cat "$T_OUT")
  [[ $(job_state "$child") == pending ]] || fail "job $child put after $parent is $(job_state "$child")"
  T_DBURL=$P run put -q d2 --max-attempts 1 doomed
  doomed=$(cat "$T_OUT")
  T_DBURL=$P run put -q d2 --after "$doomed" orphan
  expect_rc 0
  orphan=$(cat "$T_OUT")
  run_work 60 --db "$W" -q d1 -q d2 --until-empty -- sh -c 'x=$(cat); [ "$x" != doomed ]'
  expect_rc 0
  [[ $(job_state "$child") == done ]] || fail "job $child after its parent: $(job_state "$child")"
  [[ $(job_state "$orphan") == cancelled ]] ||
    fail "job $orphan after a dead parent: $(job_state "$orphan")"
  # ... and asks no job to stop: neither a running one nor a waiting one.
  T_DBURL=$P run put -q q3 sleeper
  local sleeper
  sleeper=$(cat "$T_OUT")
  start_work slow --db "$W" -q q3 -- sleep 60
  wait_until 20 '[[ $(job_state "$sleeper") == running ]]' || fail "job $sleeper never ran"
  T_DBURL=$W run cancel "$sleeper"
  refused "${PFX}admin"
  local waiting
  waiting=$( T_DBURL=$A run ls -q q2 --state waiting --json; grep -oE '"id":[0-9]+' "$T_OUT" | grep -oE '[0-9]+' | head -1)
  if [[ $engine == postgres ]]; then
    T_DBURL=$W run cancel "$waiting"
    refused "${PFX}admin"
    [[ $(job_state "$waiting") == waiting ]] || fail "the worker cancelled job $waiting"
  fi
  T_DBURL=$W run pause q1
  refused "${PFX}admin"
  T_DBURL=$W run retry --dead -q q2
  refused "${PFX}admin"
  T_DBURL=$W run prune --older-than 0s
  refused "${PFX}admin"
  T_DBURL=$W run put -q q1 x
  refused "${PFX}producer or ${PFX}admin"

  # The admin does the rest: its cancel reaches the running job through
  # its worker, which archives it.
  T_DBURL=$A run cancel "$sleeper"
  expect_rc 0
  wait_until 30 '[[ $(job_state "$sleeper") == cancelled ]]' ||
    fail "job $sleeper did not end cancelled: $(job_state "$sleeper")"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 20 || fail "the worker did not stop"
  T_DBURL=$A run cancel "$waiting"
  expect_rc 0
  T_DBURL=$A run retry --dead -q q2
  expect_rc 0
  for c in "pause q1" "resume q1" "policy q2 skip" "prune --older-than 0s" "epoch bump" reap; do
    T_DBURL=$A run $c
    expect_rc 0
  done
  T_DBURL=$A run put -q q1 seven
  expect_rc 0
}

# ---------------------------------------------------------------- PostgreSQL

pg_setup() {
  PG_PASSWORD=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
  PG_PORT=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$PG")
  S=r$$_$RANDOM
  PFX=jobq_${S}_
  pg_super jobq -c "CREATE DATABASE $S"
  local base="postgres://jobq:$PG_PASSWORD@127.0.0.1:$PG_PORT/$S?schema=$S"
  T_DBURL=$base run init
  expect_rc 0
  T_DBURL=$base run init --print-roles
  expect_rc 0
  cp "$T_OUT" "$D/roles.sql"
  # As a superuser, who also closes the advisory locks; twice, as a
  # second run changes nothing.
  pg_super "$S" -f "$D/roles.sql" >/dev/null 2>"$D/roles.err" || fail "roles: $(cat "$D/roles.err")"
  pg_super "$S" -f "$D/roles.sql" >/dev/null 2>"$D/roles.err" || fail "roles again: $(cat "$D/roles.err")"
  local r
  for r in reader producer worker admin; do
    pg_super "$S" -c "CREATE ROLE ${r:0:1}_$S LOGIN PASSWORD '${r:0:1}-pass' IN ROLE $PFX$r"
  done
  R="postgres://r_$S:r-pass@127.0.0.1:$PG_PORT/$S?schema=$S"
  P="postgres://p_$S:p-pass@127.0.0.1:$PG_PORT/$S?schema=$S"
  W="postgres://w_$S:w-pass@127.0.0.1:$PG_PORT/$S?schema=$S"
  A="postgres://a_$S:a-pass@127.0.0.1:$PG_PORT/$S?schema=$S"
}

pg_teardown() {
  pg_super jobq -c "DROP DATABASE $S WITH (FORCE)"
  local r
  for r in reader producer worker admin; do
    pg_super jobq -c "DROP ROLE ${r:0:1}_$S" -c "DROP ROLE $PFX$r"
  done
}

# pg_super DATABASE ARGS...: psql as the server's superuser.
pg_super() {
  local db=$1
  shift
  PGOPTIONS="-c client_min_messages=warning" PGPASSWORD=$PG_PASSWORD psql -X -q \
    -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U jobq -d "$db" -At "$@"
}

# pg_denied LOGIN WHAT SQL: SQL run as the login (r, p, w) fails with a
# message that holds WHAT.
pg_denied() {
  local out
  if out=$(PGOPTIONS="-c search_path=$S" PGPASSWORD=$1-pass psql -X -q -v ON_ERROR_STOP=1 \
      -h 127.0.0.1 -p "$PG_PORT" -U "$1_$S" -d "$S" -At -c "$3" 2>&1); then
    fail "$1_$S was let: $3"
  elif [[ $out != *"$2"* ]]; then
    fail "$1_$S: $3: expected \"$2\", got: $out"
  fi
}

# producer_reconnects KILL...: a producer's handle puts, loses its
# connection (KILL, run between its puts, ends it on the server), and puts
# again: the read-back of its first put on the new connection (lib/mark.c)
# must work with the producer's rights, which do not read payloads.
# Through the Python package, whose handle lives across the two puts.
producer_reconnects() {
  local root lib
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  lib=$(dirname "$JOBQ")/libjobq.so
  rm -f "$D/go"
  mkfifo "$D/go"
  cat >"$D/prod.py" <<'PY'
import sys, time
import jobq
q = jobq.connect(sys.argv[1])
print("put", int(q.put("q9", b"before")), flush=True)
sys.stdin.readline()
for attempt in range(3):
    try:
        print("put", int(q.put("q9", b"after")), flush=True)
        break
    except (jobq.Unreachable, jobq.Busy) as e:
        print("again:", e, file=sys.stderr, flush=True)
        time.sleep(0.2)
q.close()
PY
  san_env "$lib"
  env "${SAN_ENV[@]}" JOBQ_LIBRARY="$lib" PYTHONPATH="$root/clients/python" \
    /usr/bin/python3 "$D/prod.py" "$P" <"$D/go" >"$D/prod.out" 2>"$D/prod.err" &
  local pid=$!
  exec 7>"$D/go"
  wait_until 20 "grep -q '^put' '$D/prod.out'" || fail "the producer's first put: $(cat "$D/prod.err")"
  "$@" >/dev/null
  echo go >&7
  exec 7>&-
  wait "$pid" || fail "the producer failed after its connection was ended: $(cat "$D/prod.err")"
  [[ $(grep -c '^put' "$D/prod.out") == 2 ]] ||
    fail "the producer's put after its connection was ended: $(cat "$D/prod.err")"
}

t_postgres_roles() {
  [[ -n $PG ]] || { skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"; return; }
  pg_setup
  role_matrix postgres
  # The SQL put is the producer's too.
  PGOPTIONS="-c search_path=$S" PGPASSWORD=p-pass psql -X -q -h 127.0.0.1 -p "$PG_PORT" \
    -U "p_$S" -d "$S" -At -c "SELECT jobq_put('q1', 'by sql'::bytea)" >/dev/null 2>"$D/sqlput.err" ||
    fail "the producer's SQL put failed: $(cat "$D/sqlput.err")"
  pg_denied r "permission denied" "SELECT jobq_put('q1', 'x'::bytea)"
  producer_reconnects pg_super "$S" -c \
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'p_$S'"
  # What jobq never does, by hand.
  local q1="hashtextextended('q:q1', 0)"
  pg_denied r "permission denied for function pg_advisory_lock" "SELECT pg_advisory_lock($q1)"
  pg_denied r "permission denied for function pg_advisory_xact_lock" \
    "SELECT pg_advisory_xact_lock($q1)"
  pg_denied r "permission denied" "SELECT id FROM jobq_jobs FOR UPDATE"
  pg_denied r "permission denied" "SELECT 1 FROM jobq_sessions FOR KEY SHARE"
  pg_denied p "permission denied for function pg_advisory_lock" "SELECT pg_advisory_lock($q1)"
  pg_denied p "permission denied" "SELECT payload FROM jobq_jobs"
  pg_denied p "permission denied" "SELECT * FROM jobq_done"
  pg_denied p "permission denied" \
    "INSERT INTO jobq_queues(name, created_at, paused) VALUES ('stopped', 0, 1)"
  pg_denied p "permission denied" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at, session, claim) VALUES ('q1', 0, 'running', '', 1, 0, 0, 'fake', 'fake')"
  pg_denied p "jobq_jobs_claimed" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at) VALUES ('q1', 0, 'running', '', 1, 0, 0)"
  pg_denied p "jobq_jobs_times" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at) VALUES ('q1', 9223372036854775807, 'ready', '', 1, 0, 0)"
  pg_denied p "permission denied" "UPDATE jobq_jobs SET priority = 9"
  pg_denied w "permission denied" "UPDATE jobq_jobs SET cancel_requested = 1"
  pg_denied w "permission denied" "UPDATE jobq_jobs SET payload = 'x'"
  pg_denied w "permission denied" "UPDATE jobq_queues SET paused = 1"
  pg_denied w "permission denied" "UPDATE jobq_meta SET epoch = epoch + 1"
  pg_denied w "row-level security" \
    "INSERT INTO jobq_done(id, queue, priority, run_at, outcome, barrier, payload, attempts, max_attempts, timeout_ms, backoff_ms, created_at, finished_at) VALUES (999999, 'q1', 0, 0, 'cancelled', 0, '', 0, 1, 0, 0, 0, 0)"
  pg_denied w "permission denied for function pg_advisory_lock" "SELECT pg_advisory_lock($q1)"
  # None of them drops or alters what jobq made.
  pg_denied a "must be owner" "DROP TABLE jobq_jobs"
  pg_denied w "must be owner" "ALTER TABLE jobq_jobs ADD COLUMN x int"
  pg_teardown
}

# ---------------------------------------------------------------- MariaDB

my_setup() {
  MY_PASSWORD=$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$MY")
  MY_PORT=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$MY")
  S=r$$_$RANDOM
  PFX=jobq_${S}_
  my_super -e "CREATE DATABASE $S"
  local base="${MY%/*}/$S"
  T_DBURL=$base run init
  expect_rc 0
  T_DBURL=$base run init --print-roles
  expect_rc 0
  cp "$T_OUT" "$D/roles.sql"
  my_super <"$D/roles.sql" 2>"$D/roles.err" || fail "roles: $(cat "$D/roles.err")"
  my_super <"$D/roles.sql" 2>"$D/roles.err" || fail "roles again: $(cat "$D/roles.err")"
  local r
  for r in reader producer worker admin; do
    my_super -e "CREATE USER '${r:0:1}_$S'@'127.0.0.1' IDENTIFIED BY '${r:0:1}-pass';
                 GRANT $PFX$r TO '${r:0:1}_$S'@'127.0.0.1';
                 SET DEFAULT ROLE $PFX$r FOR '${r:0:1}_$S'@'127.0.0.1';"
  done
  R="mysql://r_$S:r-pass@127.0.0.1:$MY_PORT/$S"
  P="mysql://p_$S:p-pass@127.0.0.1:$MY_PORT/$S"
  W="mysql://w_$S:w-pass@127.0.0.1:$MY_PORT/$S"
  A="mysql://a_$S:a-pass@127.0.0.1:$MY_PORT/$S"
}

my_teardown() {
  local r
  for r in reader producer worker admin; do
    my_super -e "DROP USER '${r:0:1}_$S'@'127.0.0.1'; DROP ROLE $PFX$r;"
  done
  my_super -e "DROP DATABASE $S"
}

my_super() {
  MYSQL_PWD=$MY_PASSWORD mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u jobq -N -B "$@"
}

# my_kill USER: ends the server connections of the login USER.
my_kill() {
  local id
  for id in $(my_super -e "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '$1'"); do
    my_super -e "KILL $id" || true
  done
}

# my_denied LOGIN WHAT SQL: as pg_denied.
my_denied() {
  local out
  if out=$(MYSQL_PWD=$1-pass mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u "$1_$S" \
      -N -B "$S" -e "$3" 2>&1); then
    fail "$1_$S was let: $3"
  elif [[ $out != *"$2"* ]]; then
    fail "$1_$S: $3: expected \"$2\", got: $out"
  fi
}

t_mariadb_roles() {
  [[ -n $MY ]] || { skip "JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)"; return; }
  my_setup
  role_matrix mysql
  producer_reconnects my_kill "p_$S"
  # What jobq never does, by hand.
  my_denied r "denied" "SELECT name FROM jobq_locks FOR UPDATE"
  my_denied r "denied" "INSERT INTO jobq_locks(name) VALUES ('q:q1')"
  my_denied p "denied" "SELECT payload FROM jobq_jobs"
  my_denied p "denied" "SELECT * FROM jobq_done"
  my_denied p "denied" "INSERT INTO jobq_queues(name, created_at, paused) VALUES ('stopped', 0, 1)"
  my_denied p "denied" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at, session, claim) VALUES ('q1', 0, 'running', '', 1, 0, 0, 'fake', 'fake')"
  my_denied p "jobq_jobs_claimed" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at) VALUES ('q1', 0, 'running', '', 1, 0, 0)"
  my_denied p "jobq_jobs_times" \
    "INSERT INTO jobq_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at) VALUES ('q1', 9223372036854775807, 'ready', '', 1, 0, 0)"
  my_denied p "denied" "UPDATE jobq_jobs SET priority = 9"
  my_denied w "denied" "UPDATE jobq_jobs SET cancel_requested = 1"
  my_denied w "denied" "UPDATE jobq_jobs SET payload = 'x'"
  my_denied w "denied" "UPDATE jobq_queues SET paused = 1"
  my_denied w "denied" "UPDATE jobq_meta SET epoch = epoch + 1"
  my_denied a "denied" "DROP TABLE jobq_jobs"
  my_denied w "denied" "ALTER TABLE jobq_jobs ADD COLUMN x INT"
  my_teardown
}

run_cases
