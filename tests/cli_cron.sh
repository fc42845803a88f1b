#!/usr/bin/env bash
# cli_cron.sh - periodic jobs through the jobq command: adding, listing,
# pausing, resuming and removing schedules and what each refuses; slots
# put by `jobq cron run` with the clock moved by libfaketime (on SQLite the
# database clock is the process's): a slot put once, a missed slot put
# once (the latest, not a burst) or skipped with --skip-missed, daylight
# saving in America/New_York (the skipped 02:30, the repeated 01:30);
# five `jobq cron run` processes racing at the same faked moment, and five
# foremen racing, each slot put once; and on PostgreSQL and MariaDB, whose
# clock is the server's, a schedule whose next slot is set a month in the
# past, and five `jobq cron run --loop` racing on @every 1s.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# at TIME ARGS...: jobq ARGS with the clock at TIME (UTC, "2025-06-01
# 10:05:10"), as run does.
# libfaketime is preloaded before the sanitizer build's libasan, which
# ASan refuses unless told that the order is fine.
FAKE_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

at() {
  local when=$1
  shift
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  T_LAST="$*"
  JOBQ_DB=${T_DBURL:-sqlite:$DB} TZ=UTC ASAN_OPTIONS=$FAKE_ASAN faketime "$when" "$JOBQ" "$@" \
    <"${T_STDIN:-/dev/null}" >"$T_OUT" 2>"$T_ERR"
  rc=$?
}

# json_field NAME FIELD: the string FIELD of schedule NAME in `cron ls
# --json` ($T_OUT).
json_field() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([s for s in d["schedules"] if s["name"] == sys.argv[2]][0][sys.argv[3]])' "$T_OUT" "$1" "$2"
}

# run_at_list QUEUE: the run-at times of the queue's jobs, one a line.
run_at_list() {
  local save=$T_OUT
  run ls -q "$1" -n 10000 --json
  python3 -c 'import json,sys
for j in json.load(open(sys.argv[1]))["jobs"]: print(j["run_at"])' "$T_OUT"
  T_OUT=$save
}

t_add_ls_rm() {
  run cron add nightly -q reports '0 3 * * mon-fri' '{"r":1}' --tz Europe/Berlin --priority 5 \
    --unique nightly --max-attempts 3
  expect_rc 0
  expect_out_has "added nightly: next slot "
  run cron add nightly '@daily'
  expect_rc 1
  expect_err_has "schedule 'nightly' exists"
  expect_err_has "--replace"
  run cron ls --json
  [[ $(json_field nightly spec) == "0 3 * * mon-fri" ]] || fail "the refused add changed it"
  [[ $(json_field nightly unique) == nightly ]] || fail "unique: $(json_field nightly unique)"
  [[ $(json_field nightly priority) == 5 ]] || fail "priority"
  [[ $(json_field nightly payload) == '{"r":1}' ]] || fail "payload"
  run cron add nightly '@hourly' -q reports --replace
  expect_rc 0
  expect_out_has "replaced nightly"
  run cron add every '@every 30s' -q fast
  expect_rc 0
  run cron ls
  expect_rc 0
  expect_out_has "NAME"
  expect_out_has "@hourly"
  expect_out_has "@every 30s"
  run cron ls --json
  [[ $(json_field nightly tz) == UTC ]] || fail "--replace kept the old zone"
  [[ $(json_field nightly paused) == False ]] || fail "paused"
  run cron pause nightly
  expect_rc 0
  expect_out_has "paused nightly"
  run cron ls
  expect_out_has "paused"
  run cron resume nightly
  expect_out_has "resumed nightly"
  run cron rm every nosuch
  expect_rc 1
  expect_out_has "removed every"
  expect_err_has "no schedule named 'nosuch'"
  run cron ls --json
  grep -q '"every"' "$T_OUT" && fail "every was not removed"
  run cron pause --json nightly
  expect_out_has '"status":"paused"'
}

t_refused() {
  run cron add bad '61 * * * *'
  expect_rc 2
  expect_err_has "invalid schedule '61 * * * *': minute 61 is out of range 0-59"
  expect_err_style
  run cron add bad '0 0 30 2 *'
  expect_rc 2
  expect_err_has "never runs"
  run cron add bad '@every 500ms'
  expect_rc 2
  run cron add bad '0 0 * * *' --tz Mars/Olympus
  expect_rc 2
  expect_err_has "unknown time zone 'Mars/Olympus'"
  run cron add 'Bad Name' '@daily'
  expect_rc 2
  expect_err_has "invalid schedule name"
  run cron add x '@daily' --delay 5s
  expect_rc 2
  run cron add x
  expect_rc 2
  expect_err_has "missing spec"
  run cron add x '@daily' a b
  expect_rc 2
  run cron frob
  expect_rc 2
  expect_err_has "unknown command 'frob'"
  run cron lss
  expect_err_has "did you mean 'ls'"
  run cron
  expect_rc 2
  run cron rm
  expect_rc 2
  run cron ls --json
  expect_rc 0
  expect_out_has '"schedules":[]'
  expect_no_jobs
}

# A slot whose job this handle cannot take (a payload over its limit) is
# passed over, its error kept on the schedule; the others go on.
t_job_that_does_not_fit() {
  head -c 3000 /dev/zero | tr '\0' x >"$D/big"
  T_STDIN=$D/big run --max-payload 4KiB cron add big '@every 1s' -q big -
  expect_rc 0
  run cron add small '@every 1s' -q small
  sleep 1.1
  T_DBURL="sqlite:$DB?max_payload=1KiB" run cron run
  expect_rc 1
  expect_err_has "schedule big, slot "
  expect_out_has "of small (slot "
  run cron ls
  expect_out_has "error: "
  run cron ls --json
  [[ $(json_field big last_error) == *"1024"* ]] || fail "last_error: $(json_field big last_error)"
  [[ $(run_at_list big | wc -l) == 0 ]] || fail "the big job went in"
}

# A slot is put once; after hours with nothing running, the latest missed
# slot is put once, not a burst; --skip-missed puts nothing for it.
t_missed_slot() {
  at "2025-06-01 10:00:00" cron add m '*/5 * * * *' -q m
  expect_out_has "next slot 2025-06-01T10:05:00.000Z"
  at "2025-06-01 10:00:00" cron add s '*/5 * * * *' -q s --skip-missed
  at "2025-06-01 10:04:00" cron run
  expect_rc 0
  expect_out_has "no slot due"
  at "2025-06-01 10:05:10" cron run
  expect_out_has "put job 1 of m (slot 2025-06-01T10:05:00.000Z)"
  expect_out_has "of s (slot 2025-06-01T10:05:00.000Z)"
  at "2025-06-01 10:05:20" cron run
  expect_out_has "no slot due"
  # Two hours and 24 slots later.
  at "2025-06-01 12:07:00" cron run --json
  expect_rc 0
  expect_out_has '"name":"m","slot":"2025-06-01T12:05:00.000Z"'
  expect_out_has '"name":"s","slot":"2025-06-01T12:05:00.000Z","id":null,"existed":false,"skipped":true'
  [[ $(run_at_list m | wc -l) == 2 ]] || fail "m: $(run_at_list m | tr '\n' ' ')"
  [[ $(run_at_list s | wc -l) == 1 ]] || fail "s: $(run_at_list s | tr '\n' ' ')"
  run cron ls --json
  [[ $(json_field m next_at) == 2025-06-01T12:10:00.000Z ]] || fail "next: $(json_field m next_at)"
  [[ $(json_field m last_at) == 2025-06-01T12:05:00.000Z ]] || fail "last: $(json_field m last_at)"
  # A slot found a little late is no missed one.
  at "2025-06-01 12:10:30" cron run
  expect_out_has "of s (slot 2025-06-01T12:10:00.000Z)"
  # A resumed schedule starts from its next slot: the pause's are not put.
  run cron pause m
  at "2025-06-01 13:00:00" cron run
  expect_quiet_about "of m"
  at "2025-06-01 14:01:00" cron resume m
  at "2025-06-01 14:01:30" cron run
  expect_quiet_about "of m"
  at "2025-06-01 14:05:01" cron run
  expect_out_has "of m (slot 2025-06-01T14:05:00.000Z)"
}

# America/New_York: 2025-03-09 02:00 EST became 03:00 EDT (07:00Z);
# 2025-11-02 02:00 EDT became 01:00 EST (06:00Z).
t_daylight_saving() {
  local ny=America/New_York
  at "2025-03-09 05:00:00" cron add fixed '30 2 * * *' -q f --tz $ny
  expect_out_has "next slot 2025-03-09T07:00:00.000Z"
  at "2025-03-09 05:00:00" cron add wild '30 * * * *' -q w --tz $ny
  at "2025-03-09 06:31:00" cron run
  expect_out_has "of wild (slot 2025-03-09T06:30:00.000Z)"
  expect_quiet_about "of fixed"
  # The skipped 02:30: the fixed job runs at the change, the other not.
  at "2025-03-09 07:00:30" cron run
  expect_out_has "of fixed (slot 2025-03-09T07:00:00.000Z)"
  expect_quiet_about "of wild"
  at "2025-03-09 07:30:30" cron run
  expect_out_has "of wild (slot 2025-03-09T07:30:00.000Z)"
  run cron ls --json
  [[ $(json_field fixed next_at) == 2025-03-10T06:30:00.000Z ]] || fail "fixed: $(json_field fixed next_at)"

  at "2025-11-02 04:00:00" cron add once '30 1 * * *' -q o --tz $ny
  at "2025-11-02 04:00:00" cron add twice '30 1 * * *' -q t --replace --tz $ny
  at "2025-11-02 04:00:00" cron add twice '30 * * * *' -q t --replace --tz $ny
  at "2025-11-02 05:30:05" cron run
  expect_out_has "of once (slot 2025-11-02T05:30:00.000Z)"
  expect_out_has "of twice (slot 2025-11-02T05:30:00.000Z)"
  # The repeated 01:30: the fixed job does not run again, the other does.
  at "2025-11-02 06:30:05" cron run
  expect_quiet_about "of once"
  expect_out_has "of twice (slot 2025-11-02T06:30:00.000Z)"
  run cron ls --json
  [[ $(json_field once next_at) == 2025-11-03T06:30:00.000Z ]] || fail "once: $(json_field once next_at)"
  [[ $(run_at_list o | wc -l) == 1 ]] || fail "once ran $(run_at_list o | wc -l) times"
}

# Five `jobq cron run` processes at the same moment, slot after slot:
# each slot once.
t_five_runs_race() {
  at "2025-06-01 10:00:00" cron add r '* * * * *' -q r
  local k
  for k in $(seq 1 8); do
    local when pids=()
    when=$(printf '2025-06-01 10:%02d:01' "$k")
    for _ in 1 2 3 4 5; do
      JOBQ_DB=sqlite:$DB TZ=UTC ASAN_OPTIONS=$FAKE_ASAN faketime "$when" "$JOBQ" cron run >>"$D/runs" 2>>"$D/errs" &
      pids+=($!)
    done
    wait "${pids[@]}"
  done
  [[ -s $D/errs ]] && fail "errors: $(head -c 300 "$D/errs")"
  local n distinct
  n=$(run_at_list r | wc -l)
  distinct=$(run_at_list r | sort -u | wc -l)
  [[ $n == 8 && $distinct == 8 ]] || fail "8 slots gave $n jobs ($distinct distinct)"
  [[ $(grep -c "^put job" "$D/runs") == 8 ]] || fail "runs said: $(grep -c "^put job" "$D/runs") puts"
}

# Five foremen, each putting the slots due with its heartbeats (five
# times a second here): every slot once.  On the true clock: a foreman's
# lease is on the database clock and its heartbeats on its own, so a
# clock made to run fast would end its sessions.
t_five_foremen_race() {
  run cron add f '@every 1s' -q f
  local pids=() i
  for i in 1 2 3 4 5; do
    JOBQ_DB=sqlite:$DB "$JOBQ" work -q f -c 1 --lease 600ms -- cat >/dev/null 2>>"$D/foremen" &
    pids+=($!)
  done
  sleep 6
  kill -TERM "${pids[@]}"
  wait "${pids[@]}"
  local n distinct
  n=$(run_at_list f | wc -l)
  distinct=$(run_at_list f | sort -u | wc -l)
  ((n >= 4)) || fail "only $n slots put in 6s: $(tail -n 3 "$D/foremen")"
  [[ $n == "$distinct" ]] || fail "$n jobs for $distinct slots: $(run_at_list f | sort | uniq -d)"
  [[ $(grep -c "cron: put job" "$D/foremen") == "$n" ]] ||
    fail "the foremen said they put $(grep -c "cron: put job" "$D/foremen") jobs, not $n"
}

# The servers' clock is their own: slots made due by setting the next
# one in the past, and @every 1s.
server_case() {
  local url=$1 sql=$2
  T_DBURL=$url
  run init
  expect_rc 0
  run cron add past '0 3 * * *' -q past
  expect_rc 0
  "$sql" "UPDATE jobq_cron SET next_at = next_at - 2592000000 WHERE name = 'past'"
  run cron run
  expect_rc 0
  expect_out_has "put job"
  expect_out_has "of past (slot "
  run cron run
  expect_out_has "no slot due"
  [[ $(run_at_list past | wc -l) == 1 ]] || fail "a missed month put $(run_at_list past | wc -l) jobs"
  run cron add sec '@every 1s' -q sec
  local pids=() i
  for i in 1 2 3 4 5; do
    JOBQ_DB=$url timeout -s TERM 4 "$JOBQ" cron run --loop >>"$D/loops" 2>>"$D/errs" &
    pids+=($!)
  done
  wait "${pids[@]}"
  [[ -s $D/errs ]] && fail "errors: $(head -c 300 "$D/errs")"
  local n distinct
  n=$(run_at_list sec | wc -l)
  distinct=$(run_at_list sec | sort -u | wc -l)
  ((n >= 2)) || fail "@every 1s put $n jobs in 4s"
  [[ $n == "$distinct" ]] || fail "$n jobs for $distinct slots"
  unset T_DBURL
}

pg_sql() {
  local pw port
  pw=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$JOBQ_TEST_PG_URL")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$JOBQ_TEST_PG_URL")
  PGOPTIONS="-c client_min_messages=warning -c search_path=$PG_SCHEMA" PGPASSWORD=$pw \
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U jobq -d jobq -At -c "$1"
}

t_postgres() {
  [[ -n ${JOBQ_TEST_PG_URL:-} ]] || { skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"; return; }
  PG_SCHEMA=jqcron_$$_$RANDOM
  server_case "$JOBQ_TEST_PG_URL?schema=$PG_SCHEMA" pg_sql
  PGOPTIONS="-c client_min_messages=warning" pg_sql "DROP SCHEMA $PG_SCHEMA CASCADE"
}

# my_sql SQL: runs SQL in the case's MariaDB database as the server's jobq
# user.
my_sql() {
  local u=$JOBQ_TEST_MYSQL_URL
  MYSQL_PWD=$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$u") mariadb --no-defaults \
    -h 127.0.0.1 -P "$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$u")" -u jobq -N -B \
    ${MY_DBNAME:+"$MY_DBNAME"} -e "$1"
}

t_mysql() {
  [[ -n ${JOBQ_TEST_MYSQL_URL:-} ]] || { skip "JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)"; return; }
  local name=jqcron_$$_$RANDOM
  MY_DBNAME="" my_sql "CREATE DATABASE $name"
  MY_DBNAME=$name
  server_case "${JOBQ_TEST_MYSQL_URL%/*}/$name" my_sql
  MY_DBNAME="" my_sql "DROP DATABASE $name"
  unset MY_DBNAME
}

run_cases
