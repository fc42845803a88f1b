#!/usr/bin/env bash
# cli_ha.sh - the short high-availability run on PostgreSQL (tests/ha/; the
# long one is `make ha`): foremen and producers on hosts of their own
# (network namespaces joined to a bridge of the test's own), a primary and
# its streaming standby listening on the bridge, and a URL that lists both
# with target_session_attrs=read-write.
#
#   sync_failover_under_load  the chaos load (tests/chaos/chaos.py: foremen
#       killed, stopped and cut off from the network) through two
#       failovers to a synchronous standby: the primary killed with
#       `pg_ctl stop -m immediate`, the standby promoted; no acknowledged
#       job lost, none finished twice, none stuck running, every foreman
#       back at work within the lease and 5 s, no session lost to a
#       failover shorter than the lease
#   failover_idle_foreman   an idle foreman through a failover: its wake-ups
#       (LISTEN) come back, it does not spin, a job put then starts at once
#   partitioned_foreman   a foreman's host cut off from the network (its
#       link down: nothing stopped) for two leases while it runs jobs: they
#       run elsewhere within the lease and a few seconds, the cut-off
#       foreman gives up its session, and works again once back
#   async_held_back   an asynchronous standby held back (its WAL receiver
#       stopped), jobs put and finished on the primary, the primary killed,
#       the standby promoted: the loss is refused (JOBQ_EIDENTITY) by the
#       foreman that saw it and by a fresh worker, `jobq doctor` lists it,
#       nothing runs again until `jobq epoch bump`
#
# Root only (as CI runs it): skipped, with the reason, when not root or
# without network namespaces.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/ha/lib.sh"

HA_SECONDS=${JOBQ_HA_SECONDS:-${JOBQ_CHAOS_SECONDS:-25}}
LEASE=3

# failover: kills the primary at once, promotes the standby, and swaps
# HA_PG_P and HA_PG_S; a synchronous standby's promotion waits for no
# standby of its own (until one is made).
failover() {
  "$PGS" crash "$HA_PG_P" || fail "pg_ctl stop -m immediate failed"
  "$PGS" promote "$HA_PG_S" || fail "pg_ctl promote failed"
  "$PGS" psql "$HA_PG_S" -qAt -c "ALTER SYSTEM SET synchronous_standby_names = ''" \
    -c "SELECT pg_reload_conf()" >/dev/null
  local p=$HA_PG_P
  HA_PG_P=$HA_PG_S HA_PG_S=$p
}

# caught_up DIR: the standby of the primary in DIR streams and has
# replayed everything the primary wrote.
caught_up() {
  [[ $("$PGS" psql "$1" -qAt -c "SELECT count(*) FROM pg_stat_replication
      WHERE state = 'streaming' AND replay_lsn >= pg_current_wal_lsn()") == 1 ]]
}

# no_standby DIR: no standby streams from the primary in DIR.
no_standby() {
  [[ $("$PGS" psql "$1" -qAt -c "SELECT count(*) FROM pg_stat_replication") == 0 ]]
}

t_sync_failover_under_load() {
  ha_begin 5 || return
  ha_pg_up "$D" sync || { fail "the servers did not start: $(ha_pg_why "$D")"; ha_end; return; }
  local hosts
  mapfile -t hosts < <(ha_hosts_args)
  run_chaos --store postgres --url "$HA_PG_URL" --pg-dir "$HA_PG_P" --standby "$HA_PG_S" \
    --sync --failovers 2 --lease "$LEASE" --seconds "$HA_SECONDS" --restarts 0 \
    --foremen 3 --producers 2 "${hosts[@]}"
  # chaos.py swapped the servers' roles: both folders are stopped alike.
  ha_end
}

t_partitioned_foreman() {
  ha_begin 3 || return
  ha_pg_up "$D" alone || { fail "the server did not start: $(ha_pg_why "$D")"; ha_end; return; }
  URL=$HA_PG_URL
  local a b cut_at id took
  jq_on 2 init
  expect_rc 0
  foreman 0 "$D/a.log" -q p -c 2 --lease "${LEASE}s" --poll 500ms -- "$JOB"
  a=$FOREMAN
  wait_for 20 grep -q "started:" "$D/a.log" || fail "foreman a did not start"
  # Two long jobs for a alone, then b comes.
  put_jobs 2 p long 2 || { ha_end; return; }
  wait_for 10 [ -s "$RUNS" ] || { fail "the long jobs did not start"; ha_end; return; }
  foreman 1 "$D/b.log" -q p -c 2 --lease "${LEASE}s" --poll 500ms -- "$JOB"
  b=$FOREMAN
  wait_for 20 grep -q "started:" "$D/b.log" || fail "foreman b did not start"
  # a's host is cut off: nothing is stopped, its packets go nowhere.
  ha_cut 0
  cut_at=$SECONDS
  # b takes a's jobs once a's session expired: the lease, a heartbeat, the
  # poll and a margin.
  for id in $(awk -v a="$a" '$4 == a { print $1 }' "$RUNS" | sort -u); do
    if ! wait_for $((LEASE + 5)) ran_on "$id" "$b"; then
      fail "job $id of the cut-off foreman did not run elsewhere within $((LEASE + 5))s"
    fi
  done
  took=$((SECONDS - cut_at))
  echo "# the cut-off foreman's jobs ran elsewhere within ${took}s of the cut"
  sleep $((2 * LEASE - took > 0 ? 2 * LEASE - took : 0))
  ha_heal 0
  wait_for 30 done_is p 2 || fail "the long jobs are not done: $(count_done p) of 2"
  # a is back at work: b stops, and a runs what comes next.
  kill -TERM "$b"
  wait "$b"
  local healed=$SECONDS
  put_jobs 2 p slow 2 || { ha_end; return; }
  if ! wait_for $((LEASE + 5)) ran_on_prefix slow- "$a"; then
    fail "the foreman whose host was cut off did not work again within $((LEASE + 5))s of the heal: $(tail -n 4 "$D/a.log" | cut -c 25- | tr '\n' ' ')"
  fi
  echo "# the cut-off foreman ran a job $((SECONDS - healed))s after it was the only one again"
  wait_for 15 done_is p 4 || fail "$(count_done p) of 4 jobs done"
  grep -q "session lost" "$D/a.log" ||
    fail "the cut-off foreman never said that it gave up its session"
  ha_end
}

# ran_on ID PID: job ID ran on the foreman PID.
ran_on() { awk -v i="$1" -v p="$2" '$1 == i && $4 == p { f = 1 } END { exit !f }' "$RUNS"; }

# ran_on_prefix PREFIX PID: a job whose payload starts with PREFIX ran on PID.
ran_on_prefix() { awk -v x="$1" -v p="$2" 'index($3, x) == 1 && $4 == p { f = 1 } END { exit !f }' "$RUNS"; }

t_failover_idle_foreman() {
  ha_begin 2 || return
  ha_pg_up "$D" sync || { fail "the servers did not start: $(ha_pg_why "$D")"; ha_end; return; }
  URL=$HA_PG_URL
  local log=$D/foreman.log addr claims conns
  jq_on 1 init
  expect_rc 0
  # A long poll: a job put after the failover starts quickly only if the
  # foreman's wake-ups came back.
  foreman 0 "$log" -q idle -c 2 --lease "${LEASE}s" --poll 10s -- "$JOB"
  wait_for 20 grep -q "started:" "$log" || fail "the foreman did not start: $(head -c 300 "$log")"
  put_jobs 1 idle before 1 || { ha_end; return; }
  wait_for 10 done_is idle 1 || fail "the first job did not run"
  failover
  sleep 2
  put_jobs 1 idle after 1 || { ha_end; return; }
  local put_at=$SECONDS
  # The heartbeat (every lease/3) opens the LISTEN connection again; the
  # poll would come 8s to 12s after the failover.
  if wait_for $((LEASE + 1)) grep -q " after-1" "$RUNS"; then
    echo "# the job put after the failover started after $((SECONDS - put_at))s or less"
  else
    fail "a job put 2s after the failover did not start within $((LEASE + 1))s (the foreman polls every 10s: its wake-ups did not come back)"
  fi
  # Its connections came back: the work one and the listener.
  addr=$(ip -n "${HA_NS[0]}" -4 -o addr show eth0 | awk '{ print $4 }' | cut -d/ -f1)
  sleep 1
  conns=$("$PGS" psql "$HA_PG_P" -qAt -c "SELECT count(*) FROM pg_stat_activity
    WHERE client_addr = '$addr' AND application_name = 'jobq'")
  if ((conns < 2)); then
    fail "the foreman holds $conns connections to the new primary, expected 2 (work and LISTEN)"
  fi
  # Idle for 10 s more: no spin.
  sleep 10
  kill -TERM "$FOREMAN"
  wait "$FOREMAN"
  local status=$?
  claims=$(sed -n 's/.*; \([0-9]*\) claims, [0-9]* empty.*/\1/p' "$log" | tail -n 1)
  echo "# an idle foreman made ${claims:-?} claims in all, over a failover and about 25s"
  if [[ -z $claims ]]; then
    fail "the foreman did not report its claims when it stopped (exit status $status): $(tail -n 3 "$log" | cut -c 25- | tr '\n' ' ')"
  elif ((claims > 60)); then
    # After each event the poll starts at 25 ms and doubles up to --poll:
    # about 10 claims for each of the start, the two jobs and the
    # failover, and one each 10 s.  A spin makes thousands.
    fail "an idle foreman made $claims claims in about 25s with --poll 10s (it spins after a failover)"
  fi
  ha_end
}

t_async_held_back() {
  ha_begin 2 || return
  ha_pg_up "$D" async || { fail "the servers did not start: $(ha_pg_why "$D")"; ha_end; return; }
  URL=$HA_PG_URL
  local log=$D/foreman.log mark lost_id before st
  st=$(state_opt)
  jq_on 1 init
  expect_rc 0
  # shellcheck disable=SC2086
  foreman 0 "$log" -q q -c 2 --lease "${LEASE}s" --poll 500ms $st -- "$JOB"
  wait_for 20 grep -q "started:" "$log" || fail "the foreman did not start: $(head -c 300 "$log")"
  put_jobs 1 q before 5 || { ha_end; return; }
  wait_for 20 done_is q 5 || fail "the first 5 jobs did not run"
  # Three jobs that the standby has, still waiting for their time.
  put_jobs 1 q delayed 3 --delay 4s || { ha_end; return; }
  wait_for 20 caught_up "$HA_PG_P" || fail "the standby did not catch up"
  # Hold the standby back: its WAL receiver stops.
  "$PGS" psql "$HA_PG_S" -qAt -c "ALTER SYSTEM SET primary_conninfo = ''" \
    -c "SELECT pg_reload_conf()" >/dev/null
  wait_for 20 no_standby "$HA_PG_P" || fail "the standby's WAL receiver did not stop"
  # Six jobs put (acknowledged) and nine finished that the standby never sees.
  put_jobs 1 q lost 6 || { ha_end; return; }
  lost_id=${IDS[5]}
  wait_for 30 done_is q 14 || fail "the jobs put after the hold-back did not all run: $(count_done q) of 14 done"
  before=$(wc -l <"$RUNS")
  mark=$(wc -l <"$log")
  failover
  echo "# failed over to a standby that missed jobs up to $lost_id and 9 completions"
  expect_loss_refused "$log" "$mark" "$LEASE" q "$lost_id" "$before"
  ha_end
}

run_cases
