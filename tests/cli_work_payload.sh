#!/usr/bin/env bash
# cli_work_payload.sh - a job's command never runs on a payload it was not
# wholly given: the foreman killed with SIGKILL at each point of a job's
# start (the failpoints job.payload and job.spawned, killing it there or
# while it sleeps there) and at random times while it starts hundreds of
# jobs, with jobs that read their stdin as the foreman dies and jobs that
# daemonize to outlive it; every line a job writes must hold its own whole
# payload.  Payloads up to the largest one (1 MiB by default, more with
# --max-payload) reach the job whole.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

# put_payload ID SIZE: puts job ID (the next one) whose payload is "pID"
# followed by SIZE bytes of filler, and adds "ID MD5" to $D/sums.
put_payload() {
  local id=$1 size=$2
  {
    printf 'p%d' "$id"
    ((size > 0)) && head -c "$size" /dev/zero | tr '\0' "$(printf "\\$((id % 7 + 141))")"
  } >"$D/payload"
  echo "$id $(md5sum <"$D/payload" | cut -d' ' -f1)" >>"$D/sums"
  T_STDIN=$D/payload run put -q k -
  unset T_STDIN
  [[ $rc == 0 ]] || fail "put of job $id: status $rc"
}

# check_reads FILE: every "ID MD5" line a job wrote matches $D/sums;
# sets $N_READ to the number of lines.
check_reads() {
  N_READ=0
  [[ -e $1 ]] || return
  local bad
  bad=$(awk 'NR == FNR { want[$1] = $2; next }
             !($1 in want) || want[$1] != $2 { print "job " $1 " read " $2 ", put " want[$1] }' \
        "$D/sums" "$1" | head -3)
  [[ -z $bad ]] || fail "a job's command read a payload that is not its own, whole: $bad"
  N_READ=$(wc -l <"$1")
}

# The job: a daemon (its own session, out of the job's process group and
# not the process the parent-death signal reaches) that records that it
# started, reads stdin to its end and records the sum of what it read.
# Only a command started on its whole payload can make that sum right.
write_daemon_job() {
  cat >"$D/job.sh" <<'EOF2'
#!/bin/sh
exec setsid -w sh -c 'echo "$JOBQ_JOB_ID" >>"$DIR/started"
  sum=$(md5sum | cut -d" " -f1); echo "$JOBQ_JOB_ID $sum" >>"$DIR/read"'
EOF2
  chmod +x "$D/job.sh"
}

# kill_at POINT HOW: one foreman started with the failpoint POINT, killed
# there (HOW=kill) or by this script while it sleeps there (HOW=sleep,
# once the job's command has started, or after a second if it does not).
kill_at() {
  local point=$1 how=$2
  if [[ $how == kill ]]; then
    work_env DIR="$D" JOBQ_FAILPOINT="$point=kill"
  else
    work_env DIR="$D" JOBQ_FAILPOINT="$point=sleep:5000"
  fi
  start_work "$point-$how" -q k -c 1 --prefetch 0 --lease 1s -- "$D/job.sh"
  if [[ $how == sleep ]]; then
    wait_until 1 "[[ -s '$D/started' ]]"
    kill -9 "$W_PID"
  fi
  wait_exit "$W_PID" 10 || fail "the foreman did not die at $point ($how)"
  # What the job left behind has time to read and write.
  sleep 0.3
}

t_killed_at_each_point_of_a_start() {
  command -v setsid >/dev/null || { skip "setsid (util-linux) is not installed"; return; }
  write_daemon_job
  # Small payloads, and ones larger than a pipe holds.
  put_payload 1 0
  put_payload 2 0
  put_payload 3 300000
  put_payload 4 300000
  local point how
  for point in job.spawned job.payload; do
    for how in kill sleep; do
      rm -f "$D/started"
      kill_at "$point" "$how"
    done
  done
  check_reads "$D/read"
  # The jobs come back after the dead foremen's lease and run whole.
  rm -f "$D/read"
  work_env DIR="$D"
  run_work 60 -q k --lease 1s --poll 100ms --until-empty -- "$D/job.sh"
  expect_rc 0
  sleep 0.3
  check_reads "$D/read"
  ((N_READ == 4)) || fail "$N_READ of 4 jobs read their payload after the kills"
  expect_counts done=4 ready=0 running=0
}

# The reproduction as a user found it: a job that takes whatever stdin
# held for its payload, foremen killed with SIGKILL a random fraction of a
# second into their run, then one that finishes the queue; here with
# every third job leaving a daemon that outlives its foreman.
t_random_kills_while_starting_jobs() {
  command -v setsid >/dev/null || { skip "setsid (util-linux) is not installed"; return; }
  local i round
  seq 1 400 | awk '{ printf "{\"queue\":\"k\",\"payload\":\"p%d\"}\n", $1 }' >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  expect_rc 0
  write_daemon_job
  mv "$D/job.sh" "$D/daemon.sh"
  cat >"$D/job.sh" <<'EOF'
#!/bin/sh
# Every third job leaves a daemon that outlives its foreman; the rest are
# the plain job.
if [ $((JOBQ_JOB_ID % 3)) = 0 ]; then exec "$DIR/daemon.sh"; fi
x=$(cat)
printf '%s %s|\n' "$JOBQ_JOB_ID" "$x" >>"$DIR/out"
EOF
  chmod +x "$D/job.sh"
  local points=(job.payload job.spawned) fp
  for round in $(seq 1 8); do
    # A random short sleep at a random point of each start widens the
    # windows that a kill at a random time must hit.
    fp="${points[RANDOM % 2]}=sleep:$((RANDOM % 20))"
    DIR=$D JOBQ_FAILPOINT=$fp setsid "$JOBQ" work --db "sqlite:$DB" -q k -c 8 --lease 1s -- "$D/job.sh" \
      </dev/null >/dev/null 2>"$D/round$round.log" &
    local pid=$!
    W_PIDS+=("$pid")
    sleep "0.$((RANDOM % 6 + 1))$((RANDOM % 10))"
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid"
    wait "$pid" 2>/dev/null
  done
  sleep 0.3
  work_env DIR="$D"
  run_work 120 -q k -c 8 --lease 1s --poll 100ms --until-empty -- "$D/job.sh"
  expect_rc 0
  sleep 0.3
  # The plain jobs' lines: "ID pID|"; the daemons': "ID MD5".
  local bad
  bad=$(grep -v '^[0-9]* p[0-9]*|$' "$D/out" | head -3)
  [[ -z $bad ]] || fail "a job ran its body on a payload that was not its own, whole: $bad"
  bad=$(awk '{ split($2, p, "|"); if ("p" $1 != p[1]) print }' "$D/out" | head -3)
  [[ -z $bad ]] || fail "a job read another job's payload: $bad"
  : >"$D/sums"
  for i in $(seq 3 3 400); do echo "$i $(printf 'p%d' "$i" | md5sum | cut -d' ' -f1)" >>"$D/sums"; done
  check_reads "$D/read"
  expect_counts done=400 ready=0 running=0
}

t_large_payloads_reach_the_job_whole() {
  # 1 MiB, the default largest payload, and 4 MiB with --max-payload.
  head -c 1048576 /dev/urandom >"$D/one"
  head -c 4194304 /dev/urandom >"$D/four"
  T_STDIN=$D/one run put -q k -
  expect_rc 0
  T_STDIN=$D/four run put --max-payload 4MiB -q k -
  expect_rc 0
  T_STDIN=$D/four run put -q k -
  expect_rc 2
  work_env DIR="$D"
  run_work 60 --max-payload 4MiB -q k --until-empty -- sh -c \
    'md5sum | cut -d" " -f1 >"$DIR/sum.$JOBQ_JOB_ID"'
  expect_rc 0
  expect_counts done=2
  [[ $(cat "$D/sum.1" 2>/dev/null) == "$(md5sum <"$D/one" | cut -d' ' -f1)" ]] ||
    fail "the 1 MiB payload did not reach the job whole"
  [[ $(cat "$D/sum.2" 2>/dev/null) == "$(md5sum <"$D/four" | cut -d' ' -f1)" ]] ||
    fail "the 4 MiB payload did not reach the job whole"
}

run_cases
