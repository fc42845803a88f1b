#!/usr/bin/env bash
# cli_ha_mariadb.sh - the high-availability cases on MariaDB (tests/ha/):
# a foreman on a host of its own (a network namespace joined to a bridge
# of the test's own) works through faults of its server, which listens on
# the bridge; with a replica, the URL lists both servers and jobq picks the
# one that accepts writes.  The lease (10 s) is longer than every fault
# here, so the foreman's session lives through it: every job must run
# once, its outcome kept and written once the server takes writes again.
# jobq's user has every privilege but READ ONLY ADMIN, as an application's
# should: with it, read_only would not stop its writes.
#
#   primary_restart    the server stopped and started under load
#   read_only_window   read_only = 1 for 4 s under load; the read-only
#       commands (ls, stats, show) work meanwhile, and no message shows
#       jobq's internal step names
#   gtid_switchover    the primary set read-only, the replica caught up
#       (MASTER_GTID_WAIT) and promoted, the old primary made its replica
#       (CHANGE MASTER TO ... MASTER_USE_GTID = slave_pos), under load
#   gtid_held_back     a replica held back (STOP SLAVE), jobs put and
#       finished on the primary, the primary killed, the replica
#       promoted: the loss is refused (JOBQ_EIDENTITY) by the foreman that
#       saw it and by a fresh worker, `jobq doctor` lists it, nothing runs
#       again until `jobq epoch bump`
#
# Root only: skipped, with the reason, when not root, without network
# namespaces or without MariaDB.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/ha/lib.sh"

LEASE=10
BINLOG="--log-bin=binlog --binlog-format=ROW --sync-binlog=1 --log-slave-updates --gtid-strict-mode=1"

# my_up [replica]: a server in $D/a listening on the bridge (with a binary
# log and global transaction ids), and with "replica" its replica in $D/b;
# sets MY_A, MY_B and URL (both servers when there is a replica).
my_up() {
  local out
  MY_A=$D/a MY_B=$D/b
  out=$(JOBQ_MYSQL_LISTEN=$HA_CIDR JOBQ_MYSQLD_OPTIONS="$BINLOG --server-id=1" "$MYS" start "$MY_A" 2>&1)
  case $? in
    0) HA_MY_DIRS+=("$MY_A") ;;
    77) skip "$out"; return 1 ;;
    *) fail "the server did not start: $out"; return 1 ;;
  esac
  # As an application's user: read_only applies to it (ALL PRIVILEGES
  # includes READ ONLY ADMIN, which writes through read_only).
  sql "$MY_A" "REVOKE READ_ONLY ADMIN ON *.* FROM 'jobq'@'127.0.0.1', 'jobq'@'localhost',
    'jobq'@'${HA_ADDR%.*}.%'" || { fail "cannot revoke READ ONLY ADMIN"; return 1; }
  URL="mysql://jobq:$(cat "$MY_A/password")@$HA_ADDR:$(cat "$MY_A/port")"
  if [[ ${1:-} == replica ]]; then
    if ! out=$(JOBQ_MYSQLD_OPTIONS="$BINLOG --server-id=2 --read-only" "$MYS" replica "$MY_A" "$MY_B" 2>&1); then
      fail "the replica did not start: $out"
      return 1
    fi
    HA_MY_DIRS+=("$MY_B")
    URL="$URL,$HA_ADDR:$(cat "$MY_B/port")"
  fi
  URL="$URL/jobq"
  jq_on 1 init
  expect_rc 0
}

# sql DIR SQL: one statement as root on the server in DIR; its output.
sql() { "$MYS" sql "$1" -N -B -e "$2"; }

# caught_up FROM TO: the replica in TO has applied all that FROM logged.
caught_up() {
  [[ $(sql "$2" "SELECT MASTER_GTID_WAIT('$(sql "$1" "SELECT @@gtid_binlog_pos")', 10)") == 0 ]]
}

# promote DIR: the replica in DIR stops replicating and takes writes.
promote() {
  sql "$1" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0"
}

# under_load PREFIX N: a foreman on host 0 and N slow jobs PREFIX-* put
# from host 1; returns once 4 of them are done.
under_load() {
  foreman 0 "$D/foreman.log" -q q -c 4 --lease "${LEASE}s" --poll 500ms -- "$JOB"
  wait_for 20 grep -q "started:" "$D/foreman.log" ||
    fail "the foreman did not start: $(head -c 300 "$D/foreman.log")"
  put_jobs 1 q "$1" "$2" || return 1
  wait_for 30 at_least_done q 4 || { fail "the jobs did not start"; return 1; }
}

at_least_done() { (($(count_done "$1") >= $2)); }

# after_fault PREFIX N: every job PREFIX-* ran once, the foreman kept its
# session, and a job put now runs.
after_fault() {
  if ! wait_for 60 done_is q "$2"; then
    fail "$(count_done q) of the $2 jobs are done a minute after the fault"
  fi
  expect_each_ran_once "$1" "$2"
  if grep -q "session lost" "$D/foreman.log"; then
    fail "the foreman lost its session in a fault shorter than its lease: $(grep "session lost" "$D/foreman.log" | head -n 2 | cut -c 25- | tr '\n' ' ')"
  fi
  put_jobs 1 q after 1 || return
  wait_for 15 grep -q " after-1" "$RUNS" || fail "a job put after the fault did not run within 15s"
}

t_primary_restart() {
  ha_begin 2 || return
  my_up || { ha_end; return; }
  under_load slow 40 || { ha_end; return; }
  "$MYS" restart "$MY_A" || fail "the server did not restart"
  after_fault slow 40
  ha_end
}

t_read_only_window() {
  ha_begin 2 || return
  my_up || { ha_end; return; }
  under_load slow 40 || { ha_end; return; }
  sql "$MY_A" "SET GLOBAL read_only = 1"
  # What only reads works on a read-only server.
  local cmd
  for cmd in ls stats "show 1"; do
    # shellcheck disable=SC2086
    jq_on 1 $cmd
    [[ $rc == 0 ]] || fail "jobq $cmd on a read-only server: exit status $rc: $(head -c 200 "$T_ERR")"
  done
  sleep 4
  sql "$MY_A" "SET GLOBAL read_only = 0"
  after_fault slow 40
  local step
  for step in SESSION_STARTED: EXPIRED: RENEW_ALL:; do
    if grep -qF "$step" "$D/foreman.log"; then
      fail "the foreman's log shows an internal step name: $(grep -F "$step" "$D/foreman.log" | head -n 1 | cut -c 25-)"
    fi
  done
  ha_end
}

t_gtid_switchover() {
  ha_begin 2 || return
  my_up replica || { ha_end; return; }
  under_load slow 40 || { ha_end; return; }
  sql "$MY_A" "SET GLOBAL read_only = 1"
  caught_up "$MY_A" "$MY_B" || fail "the replica did not catch up"
  promote "$MY_B"
  sql "$MY_A" "CHANGE MASTER TO MASTER_HOST = '$HA_ADDR', MASTER_PORT = $(cat "$MY_B/port"),
    MASTER_USER = 'jobq', MASTER_PASSWORD = '$(cat "$MY_B/password")',
    MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE"
  after_fault slow 40
  caught_up "$MY_B" "$MY_A" || fail "the old primary does not replicate from the new one"
  ha_end
}

t_gtid_held_back() {
  ha_begin 2 || return
  my_up replica || { ha_end; return; }
  local log=$D/foreman.log mark lost_id before st
  st=$(state_opt)
  # shellcheck disable=SC2086
  foreman 0 "$log" -q q -c 2 --lease 3s --poll 500ms $st -- "$JOB"
  wait_for 20 grep -q "started:" "$log" || fail "the foreman did not start: $(head -c 300 "$log")"
  put_jobs 1 q before 5 || { ha_end; return; }
  wait_for 20 done_is q 5 || fail "the first 5 jobs did not run"
  put_jobs 1 q delayed 3 --delay 4s || { ha_end; return; }
  caught_up "$MY_A" "$MY_B" || fail "the replica did not catch up"
  sql "$MY_B" "STOP SLAVE"
  put_jobs 1 q lost 6 || { ha_end; return; }
  lost_id=${IDS[5]}
  wait_for 30 done_is q 14 || fail "the jobs put after the hold-back did not all run: $(count_done q) of 14 done"
  before=$(wc -l <"$RUNS")
  mark=$(wc -l <"$log")
  "$MYS" crash "$MY_A"
  promote "$MY_B"
  echo "# failed over to a replica that missed jobs up to $lost_id and 9 completions"
  expect_loss_refused "$log" "$mark" 3 q "$lost_id" "$before"
  ha_end
}

run_cases
