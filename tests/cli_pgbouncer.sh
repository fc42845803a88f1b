#!/usr/bin/env bash
# cli_pgbouncer.sh - jobq through PgBouncer in transaction pooling mode, in
# front of the PostgreSQL server that tests/run.sh started
# (JOBQ_TEST_PG_URL): the script starts a pooler of its own
# (tests/pgbouncer.sh: a free port on 127.0.0.1, pool_mode = transaction,
# a pool of 2 server connections) and stops it at the end.  With
# pooler=transaction in the URL, several foremen at once put, work and
# acknowledge every job exactly once and each key's jobs in order, say
# that they poll for want of wake-ups, and the server never sees more
# connections than the pool; a foreman killed there loses its jobs to
# another after its lease; a bad value of the option is refused; and
# without the option, jobq through the pooler fails with a message that
# names it.  Each case works in a schema of its own.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

PG=${JOBQ_TEST_PG_URL:-}
if [[ -z $PG ]]; then
  echo "skipped: JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"
  echo "RESULT: 0 passed, 0 failed"
  exit 0
fi
PG=${PG%%\?*}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_PASSWORD=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
PG_PORT=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$PG")

# The poolers this script started, stopped at its end whatever happened.
BOUNCERS=()
trap 'for p in "${W_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
      for b in "${BOUNCERS[@]}"; do "$HERE/pgbouncer.sh" stop "$b"; done
      [[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T_ROOT"' EXIT

# start_bouncer [DATABASE]: a pooler of the case's own in front of the
# server's database "jobq" (or DATABASE), its URL in $B (empty, with the
# case skipped, when PgBouncer is not installed).  Its folder is out of
# $T_ROOT, which only we may enter: PgBouncer runs as another user.
start_bouncer() {
  local dir status
  dir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bouncer.XXXXXX")
  B=$("$HERE/pgbouncer.sh" start "$dir" "${PG%/*}/${1:-jobq}" 2>"$D/bouncer.err")
  status=$?
  BOUNCERS+=("$dir")
  if ((status == 77)); then
    B=""
    skip "$(cat "$D/bouncer.err")"
  elif ((status != 0)); then
    B=""
    fail "the pooler did not start: $(cat "$D/bouncer.err")"
  fi
}

# psql_do SQL...: runs SQL as the server's superuser, on the server itself,
# in its database "jobq" (or $PSQL_DB).
psql_do() {
  PGOPTIONS="-c client_min_messages=warning" PGPASSWORD=$PG_PASSWORD psql -X -q \
    -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U jobq -d "${PSQL_DB:-jobq}" -At "$@"
}

# server_connections DATABASE: the connections to DATABASE on the server
# but this one.
server_connections() {
  psql_do -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$1' AND
    backend_type = 'client backend' AND pid <> pg_backend_pid()"
}

# A schema of the case's own, and the URL through the pooler in $U.
new_schema() {
  S=b$$_$RANDOM$RANDOM
  U="$B?pooler=transaction&schema=$S"
  T_DBURL=$U
}

t_a_bad_pooler_value_is_refused() {
  run --db "$PG?pooler=statement" stats
  expect_rc 2
  expect_err_has "invalid pooler 'statement'"
  expect_err_has "transaction, session or none"
  expect_err_style
  expect_quiet_about "$PG_PASSWORD"
}

t_foremen_through_the_pooler() {
  # A database of the case's own, whose connections are the pooler's.
  local db=jobq_bouncer_$$_$RANDOM
  psql_do -c "CREATE DATABASE $db"
  start_bouncer "$db"
  [[ -n $B ]] || { psql_do -c "DROP DATABASE $db"; return; }
  new_schema
  run init
  expect_rc 0
  # 600 jobs on 12 keys, each job's payload its key and its place.
  local k i n=600 keys=12
  for ((i = 0; i < n; i++)); do
    k=$((i % keys))
    printf '{"queue":"pb","key":"k%d","payload":"k%d %d"}\n' "$k" "$k" "$i"
  done >"$D/jobs.ndjson"
  T_STDIN=$D/jobs.ndjson run put --ndjson -
  unset T_STDIN
  expect_rc 0
  # Four foremen, each appending the payload of each job it runs to one
  # log (lines this short are written whole); two of them with up to
  # three connections to the pooler, which the pool bounds all the same.
  local pids=() logs=() f
  for f in 1 2 3 4; do
    work_env JOBQ_DB="$U"
    start_work "fm$f" -q pb -c 4 --poll 200ms --name "fm$f" --connections $((f <= 2 ? 3 : 1)) -- \
      sh -c 'read -r line; echo "$line" >>"$0"; echo done' "$D/ran.log"
    pids+=("$W_PID")
    logs+=("$W_LOG")
  done
  local most=0 now end=$((SECONDS + 120))
  while ((SECONDS < end)); do
    now=$(server_connections "$db")
    ((now > most)) && most=$now
    run stats --json
    [[ $(json_sum done) == "$n" ]] && break
    sleep 0.2
  done
  for f in "${pids[@]}"; do kill -TERM "$f" 2>/dev/null; done
  for f in "${pids[@]}"; do wait_exit "$f" 30 || fail "foreman $f did not stop"; done
  expect_counts done=$n ready=0 running=0 waiting=0 dead=0
  # Exactly once: every job ran, none twice.
  [[ $(wc -l <"$D/ran.log") == "$n" ]] || fail "$(wc -l <"$D/ran.log") runs for $n jobs"
  [[ $(sort -u "$D/ran.log" | wc -l) == "$n" ]] || fail "some jobs ran twice"
  # Each key's jobs ran in the order they were put.
  local bad
  bad=$(awk '{ if (($1 in last) && $2 < last[$1]) print; last[$1] = $2 }' "$D/ran.log")
  [[ -z $bad ]] || fail "out of order: $(head -3 <<<"$bad")"
  # Every foreman polled for want of wake-ups, and said so; each ran jobs.
  for f in "${logs[@]}"; do
    grep -q "no wake-ups through a pooler in transaction mode (pooler=transaction)" "$f" &&
      grep -q ": polling" "$f" || fail "$f does not say that it polls: $(head -c 400 "$f")"
    grep -q "0 lost" "$f" || fail "$f lost jobs: $(tail -n 2 "$f")"
  done
  # The server saw the pool's connections, never more.
  echo "# the server had at most $most connections of the pooler"
  ((most >= 1 && most <= 2)) || fail "the server had $most connections: expected 1 or 2, the pool"
  run sessions --json
  grep -qF '"sessions":[]' "$T_OUT" || fail "sessions are left: $(cat "$T_OUT")"
  psql_do -c "DROP DATABASE $db WITH (FORCE)"
}

t_a_killed_foremans_jobs_go_to_another() {
  start_bouncer
  [[ -n $B ]] || return
  new_schema
  run init
  expect_rc 0
  run put -q slow first
  expect_rc 0
  work_env JOBQ_DB="$U"
  start_work a -q slow -c 1 --lease 1s --poll 100ms -- sleep 60
  local a=$W_PID
  wait_until 20 '[[ $(psql_do -c "SELECT count(*) FROM $S.jobq_jobs WHERE state = '"'running'"'") == 1 ]]' ||
    fail "the first foreman did not claim the job: $(cat "$W_LOG")"
  kill -9 "$a"
  wait "$a" 2>/dev/null
  work_env JOBQ_DB="$U"
  start_work b -q slow -c 1 --lease 1s --poll 100ms --until-empty -- cat
  wait_exit "$W_PID" 60 || fail "the second foreman did not finish"
  [[ $W_RC == 0 ]] || fail "the second foreman exited with $W_RC: $(cat "$W_LOG")"
  grep -q "1 done" "$W_LOG" || fail "the second foreman did not run the job: $(cat "$W_LOG")"
  run show 1 --json
  expect_out_has '"attempts":2'
  psql_do -c "DROP SCHEMA $S CASCADE"
}

# Without the option, the statements jobq prepares on one server
# connection are missing, or already there, on the next one its
# transactions get; jobq says what happened and what to do, and the
# statement that failed wrote nothing.
t_without_the_option_it_fails_clearly() {
  start_bouncer
  [[ -n $B ]] || return
  new_schema
  run init
  expect_rc 0
  T_DBURL="$B?schema=$S"
  local i ok=0 failed=0
  for ((i = 0; i < 6; i++)); do
    run put -q plain "job $i"
    if ((rc == 0)); then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
      expect_rc 1
      expect_err_has "pooler=transaction in the url"
      expect_err_style
    fi
  done
  ((failed > 0)) || fail "six puts through the pooler without pooler=transaction all worked"
  [[ $(psql_do -c "SELECT count(*) FROM $S.jobq_jobs") == "$ok" ]] ||
    fail "$ok puts worked but the table holds $(psql_do -c "SELECT count(*) FROM $S.jobq_jobs") jobs"
  psql_do -c "DROP SCHEMA $S CASCADE"
}

run_cases
