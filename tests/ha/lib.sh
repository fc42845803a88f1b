# lib.sh - what the high-availability cases of tests/cli_ha.sh and
# tests/cli_ha_mariadb.sh share, sourced after tests/clitest.sh: a case's
# test bed (tests/ha/bed.sh) made and torn down, foremen started on its
# hosts, a job that logs its runs, waits, and the checks that a database
# that lost acknowledged jobs is refused.
#
# A case calls ha_begin NHOSTS first (it skips the case, with the reason,
# when the bed cannot be made here) and ha_end last; the script's exit
# tears down whatever a failed case left.

HA_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$HA_TESTS/ha/bed.sh"
PGS=$HA_TESTS/pgserver.sh
MYS=$HA_TESTS/mysqlserver.sh
HA_WHY=$(ha_bed_check)
HA_CASES=0
HA_MY_DIRS=()
HA_PIDS=()
trap 'ha_end; [[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T_ROOT"' EXIT

# ha_begin NHOSTS: the bed for this case, or 1 (skipped) when it cannot be
# made.  Sets RUNS (the job's log: "ID ATTEMPT PAYLOAD FOREMAN_PID" per
# run) and JOB (the job: it logs its run, sleeps 0.3 s for a payload
# "slow-..." and 4 s for "long-...", and prints its claim token).
ha_begin() {
  if [[ -n $HA_WHY ]]; then
    skip "$HA_WHY"
    return 1
  fi
  HA_CASES=$((HA_CASES + 1))
  chmod 755 "$T_ROOT" "$D"
  if ! ha_bed_up "jqha$(($$ % 1000))$HA_CASES" "$1"; then
    fail "the network bed could not be made"
    ha_end
    return 1
  fi
  RUNS=$D/runs
  : >"$RUNS"
  JOB=$D/job.sh
  cat >"$JOB" <<EOF
#!/usr/bin/env bash
IFS= read -r -d '' payload || true
printf '%s %s %s %s\\n' "\$JOBQ_JOB_ID" "\$JOBQ_ATTEMPT" "\$payload" "\$PPID" >>"$RUNS"
case \$payload in slow-*) sleep 0.3 ;; long-*) sleep 4 ;; esac
printf '%s' "\$JOBQ_CLAIM"
EOF
  chmod +x "$JOB"
}

# ha_end: stops the case's foremen, servers and bed.
ha_end() {
  local pid dir
  for pid in "${HA_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  HA_PIDS=()
  ha_pg_down
  for dir in "${HA_MY_DIRS[@]}"; do "$MYS" stop "$dir"; done
  HA_MY_DIRS=()
  ha_bed_down
}

# foreman HOST LOG ARGS...: `jobq work ARGS...` on host HOST in the
# background, its log (with times) in LOG; FOREMAN is its pid (the same
# process: `ip netns exec` runs it in place).
foreman() {
  local host=$1 log=$2
  shift 2
  # Not through ha_on: a function in the background is a subshell of its
  # own, whose pid is not the foreman's.
  ip netns exec "${HA_NS[$host]}" "$JOBQ" --db "$URL" work --log-times "$@" \
    </dev/null >/dev/null 2>>"$log" &
  FOREMAN=$!
  HA_PIDS+=("$FOREMAN")
}

# jq_on HOST ARGS...: jobq ARGS on host HOST, with $URL; sets rc, T_OUT, T_ERR.
jq_on() {
  local host=$1
  shift
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  T_LAST="$*"
  ha_on "$host" "$JOBQ" --db "$URL" "$@" </dev/null >"$T_OUT" 2>"$T_ERR"
  rc=$?
}

# put_jobs HOST QUEUE PREFIX N [PUT OPTIONS...]: puts N jobs, payloads
# PREFIX-1..N, one `jobq put` each; IDS gets their ids; returns nonzero
# (and fails the case) when a put was not acknowledged.
put_jobs() {
  local host=$1 queue=$2 prefix=$3 n=$4 i
  shift 4
  IDS=()
  for ((i = 1; i <= n; i++)); do
    jq_on "$host" put -q "$queue" "$@" "$prefix-$i"
    if [[ $rc != 0 ]]; then
      fail "putting job '$prefix-$i' failed with $rc: $(head -c 300 "$T_ERR")"
      return 1
    fi
    IDS+=("$(cat "$T_OUT")")
  done
}

# wait_for SECONDS CMD...: until CMD succeeds (0) or SECONDS went by (1).
wait_for() {
  local until=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < until)) || return 1
    sleep 0.2
  done
}

# count_done QUEUE: how many jobs of QUEUE are done (from the root
# namespace, which reaches the bridge's address).
count_done() {
  "$JOBQ" --db "$URL" stats --json 2>/dev/null | python3 -c '
import json, sys
q = [q for q in json.load(sys.stdin)["queues"] if q["name"] == sys.argv[1]]
print(q[0]["done"] if q else 0)' "$1" 2>/dev/null
}

# done_is QUEUE N: whether N jobs of QUEUE are done.
done_is() { [[ $(count_done "$1") == "$2" ]]; }

# runs_of PREFIX: how many runs of jobs whose payload starts with PREFIX
# the job logged.
runs_of() { grep -c " $1" "$RUNS"; }

# expect_each_ran_once PREFIX N: the N jobs PREFIX-* ran once each (an
# outcome kept through the fault, none run again).
expect_each_ran_once() {
  local prefix=$1 n=$2 runs again
  runs=$(runs_of "$prefix-")
  again=$(awk -v p=" $prefix-" 'index($0, p) { n[$1]++ } END { for (i in n) if (n[i] > 1) print i }' "$RUNS" | sort -n | tr '\n' ' ')
  if [[ -n $again ]]; then
    fail "jobs ran more than once: ${again}($runs runs of $n jobs '$prefix-*')"
  elif [[ $runs != "$n" ]]; then
    fail "$runs runs of the $n jobs '$prefix-*', expected $n"
  fi
}

# since LOG MARK: LOG's lines after line MARK.
since() { tail -n +"$(($2 + 1))" "$1"; }

# state_opt: "--state FILE" when `jobq work` knows the option (the state
# file that keeps what this machine's workers saw), else nothing.
state_opt() {
  if "$JOBQ" work --help 2>&1 | grep -q -- '--state'; then
    echo "--state $D/state"
  fi
}

# expect_loss_refused LOG MARK LEASE QUEUE LOST_ID RUNS_BEFORE: after a
# failover to a database that lost acknowledged jobs (LOST_ID is the
# highest id acknowledged to its producer; the foreman of LOG, started
# with $(state_opt), saw it), that nothing ran again, and that the loss is
# refused with JOBQ_EIDENTITY and a message that says what to do: by the
# foreman that saw it, by a fresh worker, and listed by `jobq doctor`;
# then, after `jobq epoch bump`, that work goes on.
expect_loss_refused() {
  local log=$1 mark=$2 lease=$3 queue=$4 lost_id=$5 before=$6 st now
  st=$(state_opt)
  [[ -n $st ]] || fail "jobq work has no --state option (a state file of what this machine's workers saw): a fresh worker cannot know of the loss"
  sleep $((lease + 4))
  now=$(wc -l <"$RUNS")
  if ((now != before)); then
    fail "$((now - before)) runs of jobs on the database that lost acknowledged writes (it was accepted silently): $(tail -n +"$((before + 1))" "$RUNS" | head -n 6 | tr '\n' ';')"
  fi
  if ! since "$log" "$mark" | grep -q "epoch bump"; then
    fail "the foreman did not refuse the database that lost acknowledged jobs (up to $lost_id): its log after the failover says: $(since "$log" "$mark" | cut -c 25- | head -n 4 | tr '\n' ';')"
  fi
  # A worker started now, on the same machine, refuses too.
  before=$(wc -l <"$RUNS")
  T_OUT=$D/fresh.out
  T_ERR=$D/fresh.err
  # shellcheck disable=SC2086
  timeout -k 5 15 ip netns exec "${HA_NS[0]}" "$JOBQ" --db "$URL" work -q "$queue" --lease "${lease}s" \
    $st -- "$JOB" </dev/null >"$T_OUT" 2>"$T_ERR"
  rc=$?
  if (($(wc -l <"$RUNS") != before)); then
    fail "a worker started after the loss ran jobs on the database that lost acknowledged writes"
  fi
  if ! grep -q "epoch bump" "$T_ERR"; then
    fail "a worker started after the loss did not refuse the database (exit status $rc): $(head -c 300 "$T_ERR" | tr '\n' ' ')"
  fi
  # jobq doctor lists the lost window.
  # shellcheck disable=SC2086
  jq_on 0 doctor $st
  if ! grep -qw -- "$lost_id" "$T_OUT" "$T_ERR"; then
    fail "jobq doctor does not list the lost jobs (up to id $lost_id): $(head -c 300 "$T_OUT" | tr '\n' ' ')"
  fi
  # Once the operator accepts the database, work goes on: on a worker
  # started now on that machine (the one that refused may have stopped).
  jq_on 1 epoch bump
  expect_rc 0
  # shellcheck disable=SC2086
  foreman 0 "$D/after-bump.log" -q "$queue" --lease "${lease}s" --poll 500ms $st -- "$JOB"
  put_jobs 1 "$queue" after-bump 1 || return
  if ! wait_for $((lease + 10)) grep -q " after-bump-1" "$RUNS"; then
    fail "no job ran within $((lease + 10))s after 'jobq epoch bump': $(head -c 300 "$D/after-bump.log")"
  fi
}
