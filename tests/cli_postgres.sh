#!/usr/bin/env bash
# cli_postgres.sh - the jobq command against the PostgreSQL server that
# tests/run.sh started (JOBQ_TEST_PG_URL): init and its identity, a
# database without the schema, bad URLs (options, sslmode, schema names,
# ports), passwords kept out of every message, multi-host URLs that fail
# over to the host that answers, a standby and a read-only database that
# only the commands that read may use, a schema version 1 migrated,
# least-privilege roles
# that cannot drop or alter jobq's tables, the jobq_put() SQL function,
# a foreman that claims only on wake-ups for its own queues, URL options
# that hold across a server restart, an idle foreman that does not spin
# after one, an idle fleet without wake-ups polling by its size, the Unix
# socket in libpq's forms, passwords with '/' or '?' in them, errors that
# do not pass by themselves, and a foreman of --connections 2 and 3 (each
# job once; its connections counted, and all back after a restart).  Each
# case works in a schema of its own.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

PG=${JOBQ_TEST_PG_URL:-}
if [[ -z $PG ]]; then
  echo "skipped: JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"
  echo "RESULT: 0 passed, 0 failed"
  exit 0
fi
PG_PASSWORD=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
PG_PORT=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$PG")

# psql_do SQL...: runs SQL as the server's superuser.
psql_do() {
  PGOPTIONS="-c client_min_messages=warning" PGPASSWORD=$PG_PASSWORD psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" \
    -U jobq -d jobq -At "$@"
}

# A schema of the case's own: $S and the URL $U.
new_schema() {
  S=c$$_$RANDOM$RANDOM
  U="$PG?schema=$S"
  T_DBURL=$U
}

t_init_and_identity() {
  new_schema
  run stats
  expect_rc 2
  expect_err_has "jobq init"
  expect_quiet_about "$PG_PASSWORD"
  run init
  expect_rc 0
  expect_out_has "queue id"
  expect_out_has "postgres://jobq:***@"
  expect_quiet_about "$PG_PASSWORD"
  run init --json
  expect_rc 0
  expect_out_has "\"schema_version\":$(schema_version)"
  run put -q email hello
  expect_rc 0
  run stats --json
  expect_rc 0
  expect_out_has '"name":"email"'
  psql_do -c "DROP SCHEMA $S CASCADE"
}

t_bad_urls() {
  local base=${PG%%\?*}
  run --db "$base?sslmode=maybe" stats
  expect_rc 2
  expect_err_has "sslmode"
  expect_err_style
  expect_quiet_about "$PG_PASSWORD"
  run --db "$base?colour=blue" stats
  expect_rc 2
  expect_err_has "colour"
  run --db "$base?schema=Bad-Name" stats
  expect_rc 2
  expect_err_has "schema"
  run --db "$base?notify=sometimes" stats
  expect_rc 2
  expect_err_has "notify"
  run --db "postgres://jobq:$PG_PASSWORD@127.0.0.1:99999/jobq" stats
  expect_rc 2
  expect_err_has "port"
  expect_quiet_about "$PG_PASSWORD"
  run --db "postgres://jobq:$PG_PASSWORD@::1:5432/jobq" stats
  expect_rc 2
  expect_err_has "IPv6"
  run --db "postgres://jobq:$PG_PASSWORD@127.0.0.1:$PG_PORT/jobq%zz" stats
  expect_rc 2
  expect_err_has "percent"
  expect_quiet_about "$PG_PASSWORD"
}

t_unreachable_and_wrong_password() {
  # Nothing listens on port 1: a temporary failure, without the password.
  run --db "postgres://jobq:s3cr3t-word@127.0.0.1:1/jobq?connect_timeout=2" stats
  expect_rc 75
  expect_err_has "127.0.0.1"
  expect_quiet_about "s3cr3t-word"
  run --db "postgres://jobq:not-the-password@127.0.0.1:$PG_PORT/jobq" stats
  expect_rc 1
  expect_err_has "***"
  expect_quiet_about "not-the-password"
}

t_multi_host_fails_over() {
  new_schema
  run init
  expect_rc 0
  # The first host does not answer; libpq goes on to the next.
  run --db "postgres://jobq:$PG_PASSWORD@127.0.0.1:1,127.0.0.1:$PG_PORT/jobq?schema=$S&target_session_attrs=read-write&connect_timeout=2" put -q mh x
  expect_rc 0
  run stats --json
  expect_out_has '"name":"mh"'
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# A read-only database: the commands that only read work, a put is
# refused.
t_read_only_refused() {
  new_schema
  run init
  expect_rc 0
  run put -q ro job
  expect_rc 0
  psql_do -c "CREATE ROLE ro_$S LOGIN PASSWORD 'ro-pass' IN ROLE jobq" \
    -c "ALTER ROLE ro_$S SET default_transaction_read_only = on"
  local ro="postgres://ro_$S:ro-pass@127.0.0.1:$PG_PORT/jobq?schema=$S" c
  for c in stats ls "show 1" sessions epoch doctor; do
    run --db "$ro" $c
    expect_rc 0
  done
  run --db "$ro" put x
  expect_rc 1
  expect_err_has "read-only"
  expect_quiet_about "ro-pass"
  psql_do -c "DROP ROLE ro_$S" -c "DROP SCHEMA $S CASCADE"
}

# A real standby (streaming from the test server): refused on its own,
# skipped over in a host list with target_session_attrs=read-write.
t_standby() {
  if [[ -z ${JOBQ_TEST_PG_DIR:-} ]]; then
    echo "# skipped standby: JOBQ_TEST_PG_DIR (the server's folder) is not set"
    return 0
  fi
  new_schema
  run init
  expect_rc 0
  local sdir
  sdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-standby.XXXXXX")
  local surl
  if ! surl=$("$(dirname "${BASH_SOURCE[0]}")/pgserver.sh" standby "$JOBQ_TEST_PG_DIR" "$sdir" 2>"$D/standby.err"); then
    fail "the standby did not start: $(tail -n 5 "$D/standby.err")"
    return
  fi
  local sport=${surl##*:}
  sport=${sport%%/*}
  # The commands that only read work on the standby (once it has caught
  # up with the job); a put is refused.
  run put -q sb on-the-primary
  expect_rc 0
  local c
  wait_until 20 'run --db "$surl?schema=$S" ls --json; grep -q '\''"queue":"sb"'\'' "$T_OUT"' ||
    fail "the standby never showed the job: $(cat "$T_ERR")"
  for c in stats ls "show 1" sessions epoch doctor; do
    run --db "$surl?schema=$S" $c
    expect_rc 0
  done
  run --db "$surl?schema=$S" put -q sb x
  expect_rc 1
  expect_err_has "standby"
  expect_quiet_about "$PG_PASSWORD"
  run --db "postgres://jobq:$PG_PASSWORD@127.0.0.1:$sport,127.0.0.1:$PG_PORT/jobq?schema=$S&target_session_attrs=read-write" put -q fo y
  expect_rc 0
  "$(dirname "${BASH_SOURCE[0]}")/pgserver.sh" stop "$sdir"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# A database of schema version 1 (without the tables of version 2, the
# checks of version 3, the columns of version 4, the schedules of version
# 5, the limits of version 6, the counters by session of version 7, the
# dependencies of version 8, the parts of version 9, the rate per key of
# version 10, and with the SQL put of then): the commands ask for jobq
# init, which
# migrates it, jobs and all.
t_version_1_migrated() {
  new_schema
  run init
  expect_rc 0
  run put -q old kept
  expect_rc 0
  psql_do -c "SET search_path = $S" \
    -c "ALTER TABLE jobq_jobs DROP CONSTRAINT jobq_jobs_claimed, DROP CONSTRAINT jobq_jobs_times" \
    -c "DROP TABLE jobq_tally, jobq_attempts, jobq_cron, jobq_starts, jobq_key_starts" \
    -c "ALTER TABLE jobq_queues DROP COLUMN max_running, DROP COLUMN max_per_key, DROP COLUMN rate_n, DROP COLUMN rate_ms, DROP COLUMN key_rate_n, DROP COLUMN key_rate_ms" \
    -c "ALTER TABLE jobq_meta DROP COLUMN guard_at, DROP COLUMN pruned_before" \
    -c "ALTER TABLE jobq_counts DROP CONSTRAINT jobq_counts_pkey, DROP COLUMN session, ADD PRIMARY KEY (queue, shard)" \
    -c "INSERT INTO jobq_counts VALUES ('old', 3, 7, 0, 0)" \
    -c "DROP TABLE jobq_after, jobq_parts, jobq_claimers" \
    -c "ALTER TABLE jobq_queues DROP COLUMN parts" \
    -c "ALTER TABLE jobq_jobs DROP COLUMN part, DROP COLUMN parents_left, DROP COLUMN children, DROP CONSTRAINT jobq_jobs_state_check, ADD CONSTRAINT jobq_jobs_state_check CHECK (state IN ('ready','running','waiting'))" \
    -c "CREATE OR REPLACE FUNCTION jobq_put(queue text, payload bytea, priority integer DEFAULT 0, delay_ms bigint DEFAULT 0, order_key text DEFAULT NULL, barrier boolean DEFAULT false, unique_key text DEFAULT NULL, max_attempts integer DEFAULT 25, timeout_ms bigint DEFAULT 0, backoff_ms bigint DEFAULT 1000) RETURNS bigint LANGUAGE sql AS 'SELECT -1::bigint'" \
    -c "UPDATE jobq_meta SET version = 1"
  run put -q old x
  expect_rc 2
  expect_err_has "jobq init"
  run stats
  expect_rc 2
  run init --json
  expect_rc 0
  expect_out_has "\"schema_version\":$(schema_version)"
  [[ $(psql_do -c "SELECT count(*) FROM pg_constraint WHERE conrelid = '$S.jobq_jobs'::regclass AND conname IN ('jobq_jobs_claimed', 'jobq_jobs_times')") == 2 ]] ||
    fail "the checks were not added"
  psql_do -c "SET search_path = $S" -c "SELECT jobq_put('old', 'x'::bytea, delay_ms => 9223372036854775807)" \
    2>"$D/err" && fail "the SQL put was not replaced"
  grep -q "invalid jobq_put argument delay_ms" "$D/err" || fail "the SQL put: $(cat "$D/err")"
  run show 1 --json
  expect_out_has '"payload":"kept"'
  run stats --json
  expect_out_has '"done":7'
  # The state of version 8: a job put after another.
  run put -q old --after 1 later
  expect_rc 0
  run stats --json
  expect_out_has '"pending":1'
  psql_do -c "DROP SCHEMA $S CASCADE"
}

t_newer_schema_refused() {
  new_schema
  run init
  psql_do -c "UPDATE $S.jobq_meta SET version = 99"
  run stats
  expect_rc 2
  expect_err_has "99"
  run init
  expect_rc 2
  psql_do -c "DROP SCHEMA $S CASCADE"
}

t_roles() {
  new_schema
  run init
  expect_rc 0
  run init --print-roles
  expect_rc 0
  expect_out_has "jobq_${S}_worker"
  cp "$T_OUT" "$D/roles.sql"
  psql_do -f "$D/roles.sql" >/dev/null
  psql_do -c "CREATE ROLE w_$S LOGIN PASSWORD 'w-pass' IN ROLE jobq_${S}_worker" \
    -c "CREATE ROLE p_$S LOGIN PASSWORD 'p-pass' IN ROLE jobq_${S}_producer"
  local W="postgres://w_$S:w-pass@127.0.0.1:$PG_PORT/jobq?schema=$S"
  local P="postgres://p_$S:p-pass@127.0.0.1:$PG_PORT/jobq?schema=$S"
  # The producer puts, and can do nothing a worker does.
  run --db "$P" put -q r one
  expect_rc 0
  run --db "$P" cancel 1
  expect_rc 1
  expect_err_has "permission denied"
  # The worker reads and works, but cannot drop or alter the tables.
  run --db "$W" stats --json
  expect_rc 0
  expect_out_has '"ready":1'
  # ... and claims under a rate per key, whose claims it records.
  run limit r --rate-per-key 5/1m
  expect_rc 0
  run --db "$P" put -q r --key k two
  expect_rc 0
  run --db "$W" work -q r --until-empty -- true
  expect_rc 0
  run --db "$W" stats --json
  expect_out_has '"done":2'
  local out
  # A reaper records the stall guard's look, and nothing else of jobq_meta.
  PGPASSWORD=w-pass psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "w_$S" -d jobq \
    -c "UPDATE $S.jobq_meta SET guard_at = 0" >/dev/null || fail "the worker cannot record the guard's look"
  out=$(PGPASSWORD=w-pass psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "w_$S" -d jobq \
    -c "UPDATE $S.jobq_meta SET epoch = epoch + 1" 2>&1) && fail "the worker changed the epoch"
  [[ $out == *"permission denied"* ]] || fail "epoch: $out"
  out=$(PGPASSWORD=w-pass psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "w_$S" -d jobq \
    -c "DROP TABLE $S.jobq_jobs" 2>&1) && fail "the worker dropped a table"
  [[ $out == *"must be owner"* ]] || fail "drop: $out"
  out=$(PGPASSWORD=w-pass psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "w_$S" -d jobq \
    -c "ALTER TABLE $S.jobq_jobs ADD COLUMN x int" 2>&1) && fail "the worker altered a table"
  [[ $out == *"must be owner"* ]] || fail "alter: $out"
  psql_do -c "DROP OWNED BY w_$S, p_$S" -c "DROP ROLE w_$S" -c "DROP ROLE p_$S" \
    -c "DROP SCHEMA $S CASCADE"
  local r
  for r in reader producer worker admin; do
    psql_do -c "DROP OWNED BY jobq_${S}_$r" -c "DROP ROLE jobq_${S}_$r"
  done
}

t_sql_put_function() {
  new_schema
  run init
  expect_rc 0
  local a b c
  a=$(psql_do -c "SET search_path = $S" -c "SELECT jobq_put('sq', 'first'::bytea, order_key => 'k')")
  b=$(psql_do -c "SET search_path = $S" -c "SELECT jobq_put('sq', 'second'::bytea, order_key => 'k')")
  c=$(psql_do -c "SET search_path = $S" -c "SELECT jobq_put('sq', 'u'::bytea, unique_key => 'once')")
  [[ $(psql_do -c "SET search_path = $S" -c "SELECT jobq_put('sq', 'u'::bytea, unique_key => 'once')") == "$c" ]] ||
    fail "a second put with the unique key made another job"
  run show "$a" --json
  expect_out_has '"state":"ready"'
  run show "$b" --json
  expect_out_has '"state":"waiting"'
  psql_do -c "SET search_path = $S" -c "SELECT jobq_put('Bad Name', 'x'::bytea)" 2>"$D/err" &&
    fail "a bad queue name was taken"
  grep -q "invalid queue name" "$D/err" || fail "no message for the bad name: $(cat "$D/err")"
  # Each argument out of range is named, with what was expected.
  local arg want
  for arg in "max_attempts => 0|max_attempts => 0: expected 1 to 1000" \
             "priority => 40000|priority => 40000: expected -32768 to 32767" \
             "delay_ms => -1|delay_ms => -1: expected 0 to 3153600000000 milliseconds (100 years)" \
             "backoff_ms => NULL|backoff_ms => NULL: expected 0 to 3600000" \
             "barrier => true, order_key => 'k'|barrier => true with an order_key"; do
    want=${arg#*|}
    psql_do -c "SET search_path = $S" -c "SELECT jobq_put('sq', 'x'::bytea, ${arg%%|*})" \
      2>"$D/err" && fail "jobq_put took ${arg%%|*}"
    grep -qF "invalid jobq_put argument $want" "$D/err" || fail "for ${arg%%|*}: $(cat "$D/err")"
  done
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# The function belongs to its schema: called by its qualified name from a
# session whose search_path is another jobq schema, or pg_catalog alone,
# it writes into its own schema's tables (it used to write into the other
# schema's, and to fail with pg_catalog).
t_sql_put_function_keeps_its_schema() {
  new_schema
  run init
  expect_rc 0
  local other=o$$_$RANDOM
  run --db "$PG?schema=$other" init
  expect_rc 0
  local a b
  a=$(psql_do -c "SET search_path = $other" -c "SELECT $S.jobq_put('bq', 'a'::bytea)") ||
    fail "the put from the other schema failed"
  b=$(psql_do -c "SET search_path = pg_catalog" -c "SELECT $S.jobq_put('bq', 'b'::bytea)") ||
    fail "the put with search_path=pg_catalog failed"
  run stats --json
  expect_out_has '"name":"bq"'
  expect_out_has '"ready":2'
  run --db "$PG?schema=$other" stats --json
  expect_quiet_about '"bq"'
  [[ $(psql_do -c "SELECT count(*) FROM $S.jobq_jobs WHERE id IN (${a:-0}, ${b:-0})") == 2 ]] ||
    fail "the jobs are not in $S.jobq_jobs"
  # An older schema (version 3, whose function had no search_path of its
  # own) is mended by jobq init.
  psql_do -c "ALTER FUNCTION $S.jobq_put(text, bytea, integer, bigint, text, boolean, text, integer, bigint, bigint) RESET search_path" \
    -c "UPDATE $S.jobq_meta SET version = 3" \
    -c "ALTER TABLE $S.jobq_meta DROP COLUMN guard_at, DROP COLUMN pruned_before" \
    -c "ALTER TABLE $S.jobq_counts DROP CONSTRAINT jobq_counts_pkey, DROP COLUMN session, ADD PRIMARY KEY (queue, shard)" \
    -c "DROP TABLE $S.jobq_cron, $S.jobq_starts, $S.jobq_key_starts" \
    -c "ALTER TABLE $S.jobq_queues DROP COLUMN max_running, DROP COLUMN max_per_key, DROP COLUMN rate_n, DROP COLUMN rate_ms, DROP COLUMN key_rate_n, DROP COLUMN key_rate_ms"
  psql_do -c "SET search_path = pg_catalog" -c "SELECT $S.jobq_put('bq', 'c'::bytea)" 2>/dev/null &&
    fail "the function without its search_path worked: the test shows nothing"
  run init
  expect_rc 0
  psql_do -c "SET search_path = pg_catalog" -c "SELECT $S.jobq_put('bq', 'c'::bytea)" >/dev/null ||
    fail "jobq init did not mend the function"
  run stats --json
  expect_out_has '"ready":3'
  psql_do -c "DROP SCHEMA $S CASCADE" -c "DROP SCHEMA $other CASCADE"
}

# Every put on the server wakes every foreman (one NOTIFY channel), but a
# claim costs a commit: a foreman of other queues does not claim for it.
# Its own queue's jobs still wake it.
t_foreman_claims_for_its_own_queues() {
  new_schema
  run init
  expect_rc 0
  work_env JOBQ_DB="$U"
  start_work fm -q mine -- true
  local fm=$W_PID log=$W_LOG
  T_DBURL=$U
  wait_until 10 'run sessions --json; grep -q "\"name\"" "$T_OUT"' || fail "the foreman opened no session"
  local i sql=()
  for i in $(seq 1 40); do sql+=(-c "SELECT jobq_put('theirs', 'x'::bytea)"); done
  psql_do -c "SET search_path = $S" "${sql[@]}" >/dev/null
  run put -q mine "ours"
  wait_until 10 'run stats --json; [[ $(json_sum done) == 1 ]]' || fail "the foreman did not run its own job"
  kill -TERM "$fm"
  wait_exit "$fm" 10 || fail "the foreman did not stop"
  local empty
  empty=$(grep -o '[0-9]* claims, [0-9]* empty' "$log" | sed -E 's/.* ([0-9]+) empty/\1/')
  [[ -n $empty ]] || fail "no claim counts in the summary: $(tail -1 "$log")"
  # Its own polls come back empty too, a handful in these seconds; a claim
  # on every wake-up would make 40 more.
  [[ -n $empty && $empty -lt 20 ]] || fail "$empty empty claims for 40 jobs of another queue: $(tail -1 "$log")"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# A foreman of a queue in parts whose part stays empty does not claim on
# each wake-up of the queue (every put notifies it).
t_idle_owner_claims_nothing() {
  new_schema
  run init
  expect_rc 0
  idle_owner "$U"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# An idle foreman with wake-ups sleeps until its queues' next job is due,
# not at its poll's pace: a delayed job put meanwhile wakes it, and it
# runs when due, long before the idle sleep (30 polls) would end.
t_idle_foreman_sleeps_until_due() {
  new_schema
  run init
  expect_rc 0
  start_foreman "$U" -q later --poll 300ms -- cat
  local fm=$W_PID log=$W_LOG
  T_DBURL=$U
  sleep 9
  run put -q later --delay 2s soon
  expect_rc 0
  wait_until 7 'run stats --json; [[ $(json_sum done) == 1 ]]' ||
    fail "the delayed job was not done within 7s: $(cat "$T_OUT")"
  kill -TERM "$fm"
  wait_exit "$fm" 10 || fail "the foreman did not stop"
  local claims
  claims=$(claims_made "$log")
  # At its poll's pace it would make 30 or more claims in these seconds:
  # a few as the poll backs off, then one when a job comes due or is put.
  [[ -n $claims ]] && ((claims < 20)) || fail "${claims:-no} claims: $(tail -1 "$log")"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# Without wake-ups (notify=off, as through a pooler), an idle fleet
# polls --fleet-polls times a second in all, not each foreman every
# --poll: six foremen at --poll 100ms and --fleet-polls 10 poll every
# 600ms each; one with --fleet-polls 0 beside them, every 100ms.  A job
# put meanwhile is found by the fleet's next poll.
t_idle_fleet_polls_by_its_size() {
  new_schema
  run init
  expect_rc 0
  local url="$U&notify=off" i fms=() logs=()
  for i in 1 2 3 4 5 6 7; do
    work_env JOBQ_DB="$url"
    start_work "fleet$i" -q fleet --poll 100ms --fleet-polls $((i < 7 ? 10 : 0)) \
      --lease 1500ms -- cat
    fms+=("$W_PID")
    logs+=("$W_LOG")
  done
  for i in "${logs[@]}"; do
    wait_until 10 'grep -q "started:" "$i"' || fail "a foreman did not start: $(cat "$i")"
  done
  local own=${fms[6]} own_log=${logs[6]}
  unset 'fms[6]' 'logs[6]'
  sleep 6
  T_DBURL=$U
  run put -q fleet one
  expect_rc 0
  wait_until 5 'run stats --json; [[ $(json_sum done) == 1 ]]' ||
    fail "the job was not done within 5s: $(cat "$T_OUT")"
  kill -TERM "${fms[@]}" "$own"
  for i in "${fms[@]}" "$own"; do wait_exit "$i" 10 || fail "foreman $i did not stop"; done
  local claims most=0
  for i in "${logs[@]}"; do
    claims=$(claims_made "$i")
    [[ -n $claims ]] || fail "no claims counted: $(tail -1 "$i")"
    ((${claims:-0} > most)) && most=$claims
  done
  claims=$(claims_made "$own_log")
  # About 7 s: every 600ms is some 12 polls, every 100ms some 70 (and a
  # few more as each backs off after its start).
  ((most <= 30)) || fail "a foreman of the fleet made $most claims: not by the fleet's share"
  ((${claims:-0} >= 40)) || fail "the foreman with --fleet-polls 0 made ${claims:-no} claims: expected one every 100ms"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# can_restart: whether the case can restart the test server; it is
# skipped, saying why, when not.
can_restart() {
  [[ -n ${JOBQ_TEST_PG_DIR:-} ]] && return 0
  skip "JOBQ_TEST_PG_DIR (the server's folder, to restart it) is not set"
  return 1
}

# restart_server: restarts the test server (fast shutdown), as an
# operator or a failover would.
restart_server() {
  "$(dirname "${BASH_SOURCE[0]}")/pgserver.sh" restart "$JOBQ_TEST_PG_DIR"
}

# listeners NAME: the server's LISTEN connections of application NAME.
listeners() {
  psql_do -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1' AND query = 'LISTEN jobq'"
}

# The libpq options of a URL hold for every connection made again after a
# restart: the foreman's work, its wake-ups, and its sessions.
t_url_options_survive_a_restart() {
  can_restart || return
  new_schema
  run init
  expect_rc 0
  local url="$U&connect_timeout=2&target_session_attrs=read-write&sslmode=prefer&keepalives=1&application_name=$S"
  start_foreman "$url" -q r --poll 1s -- cat
  local fm=$W_PID log=$W_LOG
  grep -q "no wake-ups" "$log" && fail "no wake-ups at the start: $(cat "$log")"
  restart_server || fail "the server did not restart"
  T_DBURL=$url
  run put -q r one
  expect_rc 0
  run put -q r two
  expect_rc 0
  wait_until 20 'run stats --json; [[ $(json_sum done) == 2 ]]' ||
    fail "the jobs put after the restart were not done: $(cat "$T_OUT"); $(tail -5 "$log")"
  wait_until 10 '[[ $(listeners "$S") == 1 ]]' || fail "no LISTEN connection after the restart"
  grep -q "invalid connection option" "$log" && fail "options lost: $(grep -m1 invalid "$log")"
  kill -TERM "$fm"
  wait_exit "$fm" 20 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "the foreman exited with $W_RC"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# An idle foreman whose server restarts claims at its poll's pace while
# its wake-up connection is gone, never in a loop, and is woken again
# once it is back.
t_idle_foreman_after_a_restart() {
  can_restart || return
  new_schema
  run init
  expect_rc 0
  local url="$U&application_name=$S" start=$SECONDS
  start_foreman "$url" -q idle --poll 3s -- cat
  local fm=$W_PID log=$W_LOG
  wait_until 10 '[[ $(listeners "$S") == 1 ]]' || fail "no LISTEN connection at the start"
  restart_server || fail "the server did not restart"
  sleep 4
  wait_until 20 '[[ $(listeners "$S") == 1 ]]' || fail "the LISTEN connection did not come back"
  wait_until 10 'grep -q "wake-ups from the database are back" "$log"' ||
    fail "no word of the wake-ups coming back: $(cat "$log")"
  # Woken, not polled: a job starts well within the 3 s poll.
  T_DBURL=$url
  local t0
  t0=$(date +%s%N)
  run put -q idle one
  wait_until 10 'run stats --json; [[ $(json_sum done) == 1 ]]' || fail "the job was not done"
  local ms=$((($(date +%s%N) - t0) / 1000000))
  ((ms < 2500)) || fail "the job waited ${ms}ms: not woken"
  kill -TERM "$fm"
  wait_exit "$fm" 20 || fail "the foreman did not stop"
  local secs=$((SECONDS - start)) claims
  claims=$(claims_made "$log")
  # Its polls, a few after each start of a session, and the job's: a
  # spin would make thousands.
  [[ -n $claims ]] && ((claims <= secs + 20)) ||
    fail "${claims:-no} claims in ${secs}s: $(tail -1 "$log")"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# PostgreSQL over its Unix socket (the test server's folder), in each
# form libpq knows: the host as a path in the URL, in an option, and the
# keyword/value string; with libpq's options= among them.
t_unix_socket() {
  if [[ -z ${JOBQ_TEST_PG_DIR:-} ]]; then
    skip "JOBQ_TEST_PG_DIR (the server's socket folder) is not set"
    return
  fi
  new_schema
  run init
  expect_rc 0
  local dir=$JOBQ_TEST_PG_DIR enc url
  enc=$(sed 's|/|%2F|g' <<<"$dir")
  for url in "postgres://jobq@$enc:$PG_PORT/jobq?schema=$S" \
             "postgres:///jobq?host=$dir&port=$PG_PORT&user=jobq&schema=$S&options=-c%20work_mem%3D7MB" \
             "host=$dir port=$PG_PORT user=jobq dbname=jobq schema=$S options='-c work_mem=7MB'"; do
    run --db "$url" put -q sock x
    expect_rc 0
  done
  T_DBURL="host=$dir port=$PG_PORT user=jobq dbname=jobq schema=$S"
  run stats --json
  expect_rc 0
  [[ $(json_sum ready) == 3 ]] || fail "3 jobs expected: $(cat "$T_OUT")"
  work_env JOBQ_DB="$T_DBURL"
  run_work 20 --until-empty -q sock -- cat
  expect_rc 0
  run stats --json
  [[ $(json_sum done) == 3 ]] || fail "not done over the socket: $(cat "$T_OUT")"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# A password with '/' or '?' left as they are (a base64 one, say): never
# shown, whatever could be parsed, by any command or the foreman, and the
# message says how to write it.
t_password_with_slashes_never_shown() {
  local url
  for url in "postgres://app:Xk9/Tq+2vR==@db.internal:5432/app" \
             "postgres://app:Xk9?Tq+2vR==@db.internal:5432/app" \
             "postgres://app:Xk9@Tq+2vR==@db.internal:5432/app" \
             "postgresql://app:Xk9/Tq+2vR==@h1:5432,h2:5432/app?schema=s" \
             "postgres://h/app?password=Xk9&Tq+2vR==&schema=s&schema=t"; do
    run --db "$url" stats
    expect_rc 2
    expect_quiet_about "Xk9"
    expect_quiet_about "Tq+2vR"
    expect_err_style
    T_DBURL=$url run put x
    expect_rc 2
    expect_quiet_about "Tq+2vR"
    work_env JOBQ_DB="$url"
    run_work 10 -q x -- cat
    expect_rc 2
    expect_quiet_about "Xk9"
    expect_quiet_about "Tq+2vR"
  done
  run --db "postgres://app:Xk9/Tq+2vR==@db.internal:5432/app" stats
  expect_err_has "%2F"
  # The keyword/value form, quoted or not.
  for url in "host=/nonexistent password=Xk9/Tq+2vR== dbname=app colour=red" \
             "host=/nonexistent password='Xk9 Tq+2vR==' dbname=app colour=red"; do
    run --db "$url" stats
    expect_rc 2
    expect_quiet_about "Xk9"
    expect_quiet_about "Tq+2vR"
  done
}

# URL options: each once, and numbers in range.
t_url_options_checked() {
  local base=${PG%%\?*} opt
  run --db "$base?schema=x&schema=y" stats
  expect_rc 2
  expect_err_has "'schema' is given twice"
  expect_quiet_about "$PG_PASSWORD"
  for opt in connect_timeout=99999999999999 connect_timeout=-1 connect_timeout=2x \
             keepalives=2 keepalives_idle=99999999999 keepalives_count=-3 \
             tcp_user_timeout=1e9 port=0 port=65536 statement_timeout=99999999999d \
             target_session_attrs=standby replication=database; do
    run --db "$base?$opt" stats
    expect_rc 2
    expect_err_has "${opt%%=*}"
    expect_err_style
  done
  # Seconds or a duration, in range.
  run --db "$base?connect_timeout=5s" stats
  expect_rc_in 0 2
  [[ $rc == 2 ]] && expect_err_has "jobq init"
  run --db "$base?connect_timeout=5" stats
  expect_rc_in 0 2
  [[ $rc == 2 ]] && expect_err_has "jobq init"
}

# Errors that do not pass by themselves are told from those that do: exit
# status 1, not 75, and a foreman that stops at once, with --until-empty
# too, rather than trying for ever.
t_permanent_errors() {
  new_schema
  run init
  expect_rc 0
  local base="127.0.0.1:$PG_PORT" url
  psql_do -c "CREATE ROLE nopriv_$S LOGIN PASSWORD 'np-pass'"
  for url in "postgres://jobq:not-the-password@$base/jobq?schema=$S" \
             "postgres://nosuchrole_$S:whatever@$base/jobq?schema=$S" \
             "postgres://jobq:$PG_PASSWORD@$base/nosuchdb_$S?schema=$S" \
             "postgres://nopriv_$S:np-pass@$base/jobq?schema=$S"; do
    run --db "$url" put -q p x
    expect_rc 1
    expect_quiet_about "$PG_PASSWORD"
    expect_quiet_about "not-the-password"
    local t0=$SECONDS
    work_env JOBQ_DB="$url"
    run_work 60 --until-empty -q p -- cat
    expect_rc 1
    expect_err_has "cannot start"
    ((SECONDS - t0 < 15)) || fail "jobq work took $((SECONDS - t0))s to give up on $url"
    work_env JOBQ_DB="$url"
    run_work 60 -q p -- cat
    expect_rc 1
  done
  psql_do -c "DROP ROLE nopriv_$S" -c "DROP SCHEMA $S CASCADE"
}

# work_conns NAME: the server's connections of application NAME that
# claim and acknowledge: not LISTEN, not the vacuum's own.
work_conns() {
  psql_do -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1' AND query <> 'LISTEN jobq' AND query NOT ILIKE 'vacuum%' AND query NOT ILIKE 'analyze%'"
}

# conns_watch NAME MOST SECONDS 'CONDITION': until CONDITION holds, checks
# every 50 ms that NAME has at most MOST work connections and one LISTEN;
# and one more, the vacuum's own connection, which work_conns tells apart
# only while its last statement was a VACUUM or an ANALYZE (not once it
# has been made again after a restart and has only set itself up).
# $W_MOST is the most it saw.  1 when CONDITION did not hold in time.
conns_watch() {
  local name=$1 most=$2 end=$((SECONDS + $3)) now listen
  while ((SECONDS <= end)); do
    eval "$4" && return 0
    now=$(work_conns "$name")
    listen=$(listeners "$name")
    ((now > W_MOST)) && W_MOST=$now
    ((now <= most + 1)) || fail "$now work connections, expected at most $most and the vacuum's"
    ((listen <= 1)) || fail "$listen LISTEN connections, expected at most 1"
    sleep 0.05
  done
  return 1
}

# --connections 2 and 3 run every job once.
t_foreman_connections_exactly_once() {
  new_schema
  run init
  expect_rc 0
  drain_once "$U" 5000 2
  drain_once "$U" 5000 3
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# A busy foreman of --connections 3 holds at most 3 connections for its
# work and one LISTEN, and every one of them comes back after a restart
# of the server; no job is lost.
t_foreman_connections_after_a_restart() {
  can_restart || return
  new_schema
  run init
  expect_rc 0
  local url="$U&application_name=$S"
  conn_worker
  put_many "$U" c 20000
  start_foreman "$url" -q c --connections 3 --persistent -c 4 -- "$D/w.sh"
  local fm=$W_PID log=$W_LOG before
  W_MOST=0
  conns_watch "$S" 3 60 'T_DBURL=$U run stats --json; [[ $(json_sum done) -ge 20000 ]]' ||
    fail "20000 jobs were not done: $(tail -3 "$log")"
  before=$W_MOST
  ((before >= 2)) || fail "a busy foreman of --connections 3 used $before connection"
  grep -q "opened database connection 2 of 3" "$log" || fail "no word of a second connection"
  restart_server || fail "the server did not restart"
  put_many "$U" c 20000
  conns_watch "$S" 3 60 'T_DBURL=$U run stats --json; [[ $(json_sum done) -ge 40000 ]]' ||
    fail "the jobs put after the restart were not done: $(tail -3 "$log")"
  conns_watch "$S" 3 20 '[[ $(work_conns "$S") == "$before" && $(listeners "$S") == 1 ]]' ||
    fail "$(work_conns "$S") work connections and $(listeners "$S") LISTEN after the restart, expected $before and 1"
  kill -TERM "$fm"
  wait_exit "$fm" 20 || fail "the foreman did not stop"
  [[ $W_RC == 0 ]] || fail "the foreman exited with $W_RC"
  [[ $(sort -u "$D/ran" | wc -l) == 40000 ]] ||
    fail "$(sort -u "$D/ran" | wc -l) of 40000 jobs ran"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

run_cases
