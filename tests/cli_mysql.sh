#!/usr/bin/env bash
# cli_mysql.sh - the jobq command against the MariaDB server that
# tests/run.sh started (JOBQ_TEST_MYSQL_URL): init and its identity, both
# schemes, a database without the schema, bad URLs, passwords kept out of
# every message, a read-only server that only the commands that read
# may use, a schema version 1 migrated, the warning about
# innodb_flush_log_at_trx_commit, a max_payload the server cannot carry,
# least-privilege roles that cannot drop or alter jobq's tables, passwords
# with '/' or '?' in them, options given twice or out of range, errors that
# do not pass by themselves, a foreman that goes on after a restart of
# the server, and one of --connections 2 and 3 (each job once; its
# connections counted, and back after a restart).  Each case works in a
# database of its own.  The server's version check is unit-tested in
# test_mysql.c (no old server runs here).
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

MY=${JOBQ_TEST_MYSQL_URL:-}
if [[ -z $MY ]]; then
  echo "skipped: JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)"
  echo "RESULT: 0 passed, 0 failed"
  exit 0
fi
MY_PASSWORD=$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$MY")
MY_PORT=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$MY")
MY_BASE=${MY%/*}

# my_do ARGS...: the mariadb client as the server's jobq user (-e "SQL").
my_do() {
  MYSQL_PWD=$MY_PASSWORD mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u jobq \
    -N -B "$@"
}

# A database of the case's own: $S and the URL $U.
new_db() {
  S=c$$_$RANDOM$RANDOM
  my_do -e "CREATE DATABASE $S"
  U="$MY_BASE/$S"
  T_DBURL=$U
}

t_init_and_identity() {
  new_db
  run stats
  expect_rc 2
  expect_err_has "jobq init"
  expect_quiet_about "$MY_PASSWORD"
  run init
  expect_rc 0
  expect_out_has "queue id"
  expect_out_has "mysql://jobq:***@"
  expect_quiet_about "$MY_PASSWORD"
  [[ -s $T_ERR ]] && fail "init warned: $(cat "$T_ERR")"
  run init --json
  expect_rc 0
  expect_out_has "\"schema_version\":$(schema_version)"
  run put -q email hello
  expect_rc 0
  run stats --json
  expect_rc 0
  expect_out_has '"name":"email"'
  # The same database through the other scheme.
  T_DBURL=mariadb://${U#mysql://} run stats --json
  expect_rc 0
  expect_out_has '"name":"email"'
  my_do -e "DROP DATABASE $S"
}

t_bad_urls() {
  run --db "$MY_BASE/jobq?sslmode=maybe" stats
  expect_rc 2
  expect_err_has "sslmode"
  expect_err_style
  expect_quiet_about "$MY_PASSWORD"
  run --db "$MY_BASE/jobq?colour=blue" stats
  expect_rc 2
  expect_err_has "colour"
  run --db "$MY_BASE/jobq?lock_wait_timeout=soon" stats
  expect_rc 2
  expect_err_has "lock_wait_timeout"
  run --db "$MY_BASE" stats
  expect_rc 2
  expect_err_has "names no database"
  expect_quiet_about "$MY_PASSWORD"
  run --db "mysql://jobq:$MY_PASSWORD@127.0.0.1:99999/jobq" stats
  expect_rc 2
  expect_err_has "port"
  expect_quiet_about "$MY_PASSWORD"
  run --db "mysql://jobq:$MY_PASSWORD@127.0.0.1:$MY_PORT/jobq%zz" stats
  expect_rc 2
  expect_err_has "percent"
  expect_quiet_about "$MY_PASSWORD"
}

t_unreachable_and_wrong_password() {
  # Nothing listens on port 1: a temporary failure, without the password.
  run --db "mysql://jobq:s3cr3t-word@127.0.0.1:1/jobq?connect_timeout=2s" stats
  expect_rc 75
  expect_err_has "127.0.0.1"
  expect_quiet_about "s3cr3t-word"
  run --db "mysql://jobq:not-the-password@127.0.0.1:$MY_PORT/jobq" stats
  expect_rc 1
  expect_err_has "***"
  expect_err_has "Access denied"
  expect_quiet_about "not-the-password"
  # A database that does not exist.
  run --db "$MY_BASE/no_such_db_$$" stats
  expect_rc 1
  expect_err_has "no_such_db_$$"
  expect_quiet_about "$MY_PASSWORD"
}

t_failover_host_list() {
  new_db
  run init
  expect_rc 0
  # The first host does not answer; the next one does.
  run --db "mysql://jobq:$MY_PASSWORD@127.0.0.1:1,127.0.0.1:$MY_PORT/$S?connect_timeout=2s" put -q mh x
  expect_rc 0
  run stats --json
  expect_out_has '"name":"mh"'
  my_do -e "DROP DATABASE $S"
}

# A read-only server: the commands that only read work, a put is
# refused; both as the server's user and as a login of no privilege,
# whom read_only binds.
t_read_only_refused() {
  new_db
  run init
  expect_rc 0
  run put -q ro job
  expect_rc 0
  my_do -e "CREATE USER 'ro_$S'@'127.0.0.1' IDENTIFIED BY 'ro-pass';
            GRANT SELECT, INSERT, UPDATE, DELETE ON $S.* TO 'ro_$S'@'127.0.0.1'"
  my_do -e "SET GLOBAL read_only = 1"
  local u c status=()
  for u in "$U" "mysql://ro_$S:ro-pass@127.0.0.1:$MY_PORT/$S"; do
    for c in stats ls "show 1" sessions epoch doctor; do
      run --db "$u" $c
      status+=("$c:$rc")
    done
    run --db "$u" put x
    status+=("put:$rc")
    cp "$T_ERR" "$D/put.err"
  done
  my_do -e "SET GLOBAL read_only = 0"
  [[ ${status[*]} == "stats:0 ls:0 show 1:0 sessions:0 epoch:0 doctor:0 put:1 stats:0 ls:0 show 1:0 sessions:0 epoch:0 doctor:0 put:1" ]] ||
    fail "on a read-only server: ${status[*]}"
  T_ERR=$D/put.err expect_err_has "read-only"
  T_ERR=$D/put.err expect_err_has "expected a primary"
  expect_quiet_about "$MY_PASSWORD"
  run put x
  expect_rc 0
  my_do -e "DROP USER 'ro_$S'@'127.0.0.1'; DROP DATABASE $S"
}

t_durability_warning() {
  new_db
  my_do -e "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
  run init
  local init_rc=$rc
  cp "$T_ERR" "$D/init.err"
  my_do -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1"
  rc=$init_rc expect_rc 0
  T_ERR=$D/init.err expect_err_has "warning: "
  T_ERR=$D/init.err expect_err_has "innodb_flush_log_at_trx_commit = 2"
  T_ERR=$D/init.err expect_err_has "expected 1"
  T_ERR=$D/init.err expect_quiet_about "$MY_PASSWORD"
  # Durable again: no warning.
  run init
  expect_rc 0
  [[ -s $T_ERR ]] && fail "warned with innodb_flush_log_at_trx_commit = 1: $(cat "$T_ERR")"
  my_do -e "DROP DATABASE $S"
}

t_payload_larger_than_packets() {
  new_db
  run --db "$U?max_payload=1GiB" init
  expect_rc 2
  expect_err_has "max_allowed_packet"
  expect_err_style
  run --db "$U?max_payload=16MiB" init
  expect_rc 0
  my_do -e "DROP DATABASE $S"
}

t_newer_schema_refused() {
  new_db
  run init
  my_do -e "UPDATE $S.jobq_meta SET version = 99"
  run stats
  expect_rc 2
  expect_err_has "99"
  run init
  expect_rc 2
  my_do -e "DROP DATABASE $S"
}

# A database of schema version 1, without the tables of version 2, the
# checks of version 3, the columns of version 4, the schedules of version
# 5, the limits of version 6, the counters by session of version 7, the
# dependencies of version 8, the parts of version 9 and the rate per key
# of version 10:
# the commands ask for jobq init, which migrates it, jobs and all.
t_version_1_migrated() {
  new_db
  run init
  expect_rc 0
  run put -q old kept
  expect_rc 0
  my_do "$S" -e "ALTER TABLE jobq_jobs DROP CONSTRAINT jobq_jobs_claimed;
                 ALTER TABLE jobq_jobs DROP CONSTRAINT jobq_jobs_times;
                 DROP TABLE jobq_tally, jobq_attempts, jobq_cron, jobq_starts, jobq_key_starts;
                 ALTER TABLE jobq_queues DROP COLUMN max_running, DROP COLUMN max_per_key,
                   DROP COLUMN rate_n, DROP COLUMN rate_ms, DROP COLUMN key_rate_n,
                   DROP COLUMN key_rate_ms;
                 ALTER TABLE jobq_meta DROP COLUMN guard_at, DROP COLUMN pruned_before;
                 ALTER TABLE jobq_counts DROP PRIMARY KEY, DROP COLUMN session, ADD PRIMARY KEY (queue, shard);
                 INSERT INTO jobq_counts VALUES ('old', 3, 7, 0, 0);
                 DROP TABLE jobq_after, jobq_parts, jobq_claimers;
                 ALTER TABLE jobq_queues DROP COLUMN parts;
                 ALTER TABLE jobq_jobs DROP INDEX jobq_jobs_part, DROP COLUMN part,
                   DROP COLUMN parents_left, DROP COLUMN children,
                   MODIFY state VARCHAR(8) NOT NULL CHECK (state IN ('ready','running','waiting'));
                 UPDATE jobq_meta SET version = 1"
  run put -q old x
  expect_rc 2
  expect_err_has "jobq init"
  run init --json
  expect_rc 0
  expect_out_has "\"schema_version\":$(schema_version)"
  [[ $(my_do -e "SELECT count(*) FROM information_schema.TABLE_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = '$S' AND CONSTRAINT_NAME IN ('jobq_jobs_claimed', 'jobq_jobs_times')") == 2 ]] ||
    fail "the checks were not added"
  run init
  expect_rc 0
  run show 1 --json
  expect_out_has '"payload":"kept"'
  run stats --json
  expect_out_has '"done":7'
  # The state of version 8: a job put after another.
  run put -q old --after 1 later
  expect_rc 0
  run stats --json
  expect_out_has '"pending":1'
  my_do -e "DROP DATABASE $S"
}

t_roles() {
  new_db
  run init
  expect_rc 0
  run init --print-roles
  expect_rc 0
  expect_out_has "jobq_${S}_worker"
  expect_out_has "SET DEFAULT ROLE"
  cp "$T_OUT" "$D/roles.sql"
  my_do <"$D/roles.sql" || fail "the roles SQL did not run"
  my_do -e "CREATE USER 'w_$S'@'127.0.0.1' IDENTIFIED BY 'w-pass';
            GRANT jobq_${S}_worker TO 'w_$S'@'127.0.0.1';
            SET DEFAULT ROLE jobq_${S}_worker FOR 'w_$S'@'127.0.0.1';
            CREATE USER 'p_$S'@'127.0.0.1' IDENTIFIED BY 'p-pass';
            GRANT jobq_${S}_producer TO 'p_$S'@'127.0.0.1';
            SET DEFAULT ROLE jobq_${S}_producer FOR 'p_$S'@'127.0.0.1';"
  local W="mysql://w_$S:w-pass@127.0.0.1:$MY_PORT/$S"
  local P="mysql://p_$S:p-pass@127.0.0.1:$MY_PORT/$S"
  # The producer puts (plain, keyed, many), and can do nothing a worker does.
  run --db "$P" put -q r one
  expect_rc 0
  run --db "$P" put -q r --key k two
  expect_rc 0
  run --db "$P" cancel 1
  expect_rc 1
  expect_err_has "denied"
  expect_quiet_about "p-pass"
  # The worker reads and reaps, but cannot drop or alter the tables.
  run --db "$W" stats --json
  expect_rc 0
  expect_out_has '"ready":2'
  run --db "$W" reap
  expect_rc 0
  # ... and works, under a rate per key whose claims it records: the
  # example worker claims and completes both jobs.
  run limit r --rate-per-key 5/1m
  expect_rc 0
  local worker
  worker=$(dirname "$JOBQ")/examples/worker
  if [[ -x $worker ]]; then
    "$worker" --db "$W" -q r --batch 2 --idle 500ms >"$D/worker.out" 2>&1 ||
      fail "the worker failed: $(tail -n 3 "$D/worker.out")"
    run --db "$W" stats --json
    expect_out_has '"done":2'
  else
    fail "no example worker at $worker"
  fi
  local out
  # A reaper records the stall guard's look, and nothing else of jobq_meta.
  MYSQL_PWD=w-pass mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u "w_$S" "$S" \
    -e "UPDATE jobq_meta SET guard_at = 0" || fail "the worker cannot record the guard's look"
  out=$(MYSQL_PWD=w-pass mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u "w_$S" "$S" \
    -e "UPDATE jobq_meta SET epoch = epoch + 1" 2>&1) && fail "the worker changed the epoch"
  [[ $out == *"denied"* ]] || fail "epoch: $out"
  out=$(MYSQL_PWD=w-pass mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u "w_$S" "$S" \
    -e "DROP TABLE jobq_jobs" 2>&1) && fail "the worker dropped a table"
  [[ $out == *"denied"* ]] || fail "drop: $out"
  out=$(MYSQL_PWD=w-pass mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u "w_$S" "$S" \
    -e "ALTER TABLE jobq_jobs ADD COLUMN x INT" 2>&1) && fail "the worker altered a table"
  [[ $out == *"denied"* ]] || fail "alter: $out"
  local r
  my_do -e "DROP USER 'w_$S'@'127.0.0.1'; DROP USER 'p_$S'@'127.0.0.1'"
  for r in reader producer worker admin; do my_do -e "DROP ROLE jobq_${S}_$r"; done
  my_do -e "DROP DATABASE $S"
}

if [[ -n ${ONLY_CASE:-} ]]; then for f in $(declare -F | awk "{print \$3}" | grep "^t_" | grep -v "^t_$ONLY_CASE\$"); do unset -f "$f"; done; fi
# A password with '/', '?' or '@' left as they are: never shown, by any
# command or the foreman, and the message says how to write it.
t_password_with_slashes_never_shown() {
  local url
  for url in "mysql://app:Xk9/Tq+2vR==@db.internal:3306/app" \
             "mariadb://app:Xk9?Tq+2vR==@db.internal/app?connect_timeout=2" \
             "mysql://app:Xk9@Tq+2vR==@h1:3306,h2:3306/app"; do
    run --db "$url" stats
    expect_rc 2
    expect_quiet_about "Xk9"
    expect_quiet_about "Tq+2vR"
    expect_err_has "%2F"
    expect_err_style
    work_env JOBQ_DB="$url"
    run_work 10 -q x -- cat
    expect_rc 2
    expect_quiet_about "Xk9"
    expect_quiet_about "Tq+2vR"
  done
}

t_url_options_checked() {
  local opt
  run --db "$MY_BASE/jobq?connect_timeout=2&connect_timeout=3" stats
  expect_rc 2
  expect_err_has "'connect_timeout' is given twice"
  expect_quiet_about "$MY_PASSWORD"
  for opt in connect_timeout=99999999999999 connect_timeout=0 lock_wait_timeout=2d \
             statement_timeout=99999999999d max_payload=2GiB; do
    run --db "$MY_BASE/jobq?$opt" stats
    expect_rc 2
    expect_err_has "${opt%%=*}"
    expect_err_style
  done
}

# Errors that do not pass by themselves (a wrong password, a database
# that does not exist, a user without the privileges): exit status 1, and
# a foreman that gives up at once, with --until-empty too.
t_permanent_errors() {
  new_db
  run init
  expect_rc 0
  my_do -e "CREATE USER 'np_$S'@'127.0.0.1' IDENTIFIED BY 'np-pass';
            CREATE USER 'ro_$S'@'127.0.0.1' IDENTIFIED BY 'ro-pass';
            GRANT SELECT ON $S.* TO 'ro_$S'@'127.0.0.1'"
  local url
  for url in "mysql://jobq:not-the-password@127.0.0.1:$MY_PORT/$S" \
             "mysql://nosuchuser_$S:whatever@127.0.0.1:$MY_PORT/$S" \
             "$MY_BASE/nosuchdb_$S" \
             "mysql://np_$S:np-pass@127.0.0.1:$MY_PORT/$S" \
             "mysql://ro_$S:ro-pass@127.0.0.1:$MY_PORT/$S"; do
    run --db "$url" put -q p x
    expect_rc 1
    expect_quiet_about "$MY_PASSWORD"
    expect_quiet_about "not-the-password"
    local t0=$SECONDS
    work_env JOBQ_DB="$url"
    run_work 60 --until-empty -q p -- cat
    expect_rc 1
    expect_err_has "cannot start"
    ((SECONDS - t0 < 15)) || fail "jobq work took $((SECONDS - t0))s to give up on $url"
  done
  my_do -e "DROP USER 'np_$S'@'127.0.0.1'; DROP USER 'ro_$S'@'127.0.0.1'; DROP DATABASE $S"
}

# A foreman whose server restarts goes on with the jobs put after it, and
# claims at its poll's pace meanwhile.
t_restart_under_a_foreman() {
  if [[ -z ${JOBQ_TEST_MYSQL_DIR:-} ]]; then
    skip "JOBQ_TEST_MYSQL_DIR (the server's folder, to restart it) is not set"
    return
  fi
  new_db
  run init
  expect_rc 0
  local start=$SECONDS
  start_foreman "$U?connect_timeout=2s" -q r --poll 1s -- cat
  local fm=$W_PID log=$W_LOG
  "$(dirname "${BASH_SOURCE[0]}")/mysqlserver.sh" restart "$JOBQ_TEST_MYSQL_DIR" ||
    fail "the server did not restart"
  run put -q r one
  expect_rc 0
  run put -q r two
  expect_rc 0
  wait_until 30 'run stats --json; [[ $(json_sum done) == 2 ]]' ||
    fail "the jobs put after the restart were not done: $(cat "$T_OUT"); $(tail -5 "$log")"
  kill -TERM "$fm"
  wait_exit "$fm" 20 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "the foreman exited with $W_RC"
  local secs=$((SECONDS - start)) claims
  claims=$(claims_made "$log")
  [[ -n $claims ]] && ((claims <= 2 * secs + 20)) ||
    fail "${claims:-no} claims in ${secs}s: $(tail -1 "$log")"
  my_do -e "DROP DATABASE $S"
}

# --connections 2 and 3 run every job once.
t_foreman_connections_exactly_once() {
  new_db
  run init
  expect_rc 0
  drain_once "$U" 3000 2
  drain_once "$U" 3000 3
  my_do -e "DROP DATABASE $S"
}

# my_conns: the server's connections to the case's database.
my_conns() {
  my_do -e "SELECT count(*) FROM information_schema.processlist WHERE db = '$S'"
}

# A busy foreman of --connections 3 holds at most 3 connections (MariaDB
# has no LISTEN: it polls), and they come back after a restart of the
# server; no job is lost.
t_foreman_connections_after_a_restart() {
  if [[ -z ${JOBQ_TEST_MYSQL_DIR:-} ]]; then
    skip "JOBQ_TEST_MYSQL_DIR (the server's folder, to restart it) is not set"
    return
  fi
  new_db
  run init
  expect_rc 0
  conn_worker
  put_many "$U" c 10000
  start_foreman "$U?connect_timeout=2s" -q c --connections 3 --persistent -c 4 -- "$D/w.sh"
  local fm=$W_PID log=$W_LOG most=0 now end
  end=$((SECONDS + 90))
  while ((SECONDS <= end)); do
    T_DBURL=$U run stats --json
    [[ $(json_sum done) -ge 10000 ]] && break
    now=$(my_conns)
    ((now > most)) && most=$now
    ((now <= 3)) || fail "$now connections, expected at most 3"
    sleep 0.05
  done
  [[ $(json_sum done) -ge 10000 ]] || fail "10000 jobs were not done: $(tail -3 "$log")"
  ((most >= 2)) || fail "a busy foreman of --connections 3 used $most connection"
  "$(dirname "${BASH_SOURCE[0]}")/mysqlserver.sh" restart "$JOBQ_TEST_MYSQL_DIR" ||
    fail "the server did not restart"
  put_many "$U" c 10000
  wait_until 90 'T_DBURL=$U run stats --json; [[ $(json_sum done) -ge 20000 ]]' ||
    fail "the jobs put after the restart were not done: $(tail -3 "$log")"
  wait_until 20 '[[ $(my_conns) == "$most" ]]' ||
    fail "$(my_conns) connections after the restart, expected $most"
  kill -TERM "$fm"
  wait_exit "$fm" 20 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "the foreman exited with $W_RC"
  [[ $(sort -u "$D/ran" | wc -l) == 20000 ]] || fail "$(sort -u "$D/ran" | wc -l) of 20000 jobs ran"
  my_do -e "DROP DATABASE $S"
}

run_cases
