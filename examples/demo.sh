#!/usr/bin/env bash
# demo.sh - what `make demo` runs: a few thousand jobs through four worker
# processes on a fresh SQLite queue file, then checks that every promise
# held.
#
# It makes jobq-demo.db in the current directory (removing an old one),
# puts about 3000 jobs on three queues in one transaction with
# `jobq put --ndjson` (priorities, delayed jobs, an ordering key with 20
# jobs, a job that always fails, one that fails once), runs four
# build/examples/worker processes in parallel until the queues are empty,
# and checks: every job but the always-failing one is done, that one is dead
# after exactly 3 attempts, the fail-once job is done on attempt 2, the
# delayed jobs did not run early, the urgent job was claimed first, and the
# ordering-key jobs ran one at a time in order.  It exits nonzero when a
# check fails (or the workers take longer than 45 s).  The database is left
# in place to look at.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
jobq=$build/jobq
worker=$build/examples/worker
for bin in "$jobq" "$worker"; do
  if [[ ! -x $bin ]]; then
    echo "demo: $bin is missing: run 'make' first (or 'make demo')" >&2
    exit 1
  fi
done

db=jobq-demo.db
export JOBQ_DB=sqlite:$db
rm -f "$db" "$db-wal" "$db-shm"
work=$(mktemp -d "${TMPDIR:-/tmp}/jobq-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

failures=0
fail() {
  echo "demo: FAILED: $*" >&2
  failures=$((failures + 1))
}
json_num() { # json_num FIELD < JSON: the first integer value of FIELD
  grep -o "\"$1\": *-\{0,1\}[0-9]*" | head -1 | grep -o -- '-\{0,1\}[0-9]*$' || true
}
json_ms() { # json_ms FIELD < JSON: the first time value of FIELD, in Unix ms
  local t
  t=$(grep -o "\"$1\": *\"[^\"]*\"" | head -1 | cut -d'"' -f4) || true
  if [[ -n $t ]]; then date -d "$t" +%s%3N; fi
}
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
now_ms() { date +%s%3N; }

say "the queue database: $JOBQ_DB (a new file in $(pwd))"

# ------------------------------------------------------------------ jobs
# One JSON object a line.  Most jobs are quick; the "images" ones sleep
# 2 ms each so that the four workers share the work.
{
  for i in $(seq 1 1500); do
    printf '{"queue":"email","payload":"mail %d","priority":%d}\n' "$i" $((i % 3))
  done
  for i in $(seq 1 1000); do
    printf '{"queue":"images","payload":"sleep:2"}\n'
  done
  for i in $(seq 1 480); do
    printf '{"queue":"reports","payload":"report %d"}\n' "$i"
  done
  # An ordering key: 20 jobs that must run one at a time, in this order.
  for i in $(seq 1 20); do
    printf '{"queue":"reports","payload":"account-42 step %d","key":"account-42"}\n' "$i"
  done
  # Delayed jobs: not before 1 or 2 seconds from now.
  for d in 1s 1s 2s 2s 2s; do
    printf '{"queue":"email","payload":"delayed %s","delay":"%s"}\n' "$d" "$d"
  done
  # High priority: claimed before everything else that is ready.
  printf '{"queue":"email","payload":"urgent","priority":100}\n'
  # Fails every time: dead after 3 attempts, 200 ms base backoff.
  printf '{"queue":"reports","payload":"fail","max_attempts":3,"backoff":"200ms"}\n'
  # Fails on its first attempt only.
  printf '{"queue":"reports","payload":"fail-once","max_attempts":3,"backoff":"200ms"}\n'
} >"$work/jobs.ndjson"
total=$(wc -l <"$work/jobs.ndjson")

say "jobq put --ndjson jobs.ndjson   ($total jobs in one transaction)"
t0=$(now_ms)
"$jobq" --json put --ndjson "$work/jobs.ndjson" >"$work/put.json"
echo "put $total jobs in $(($(now_ms) - t0)) ms"
first_id=$(json_num first_id <"$work/put.json")

say "jobq stats   (before the workers start)"
"$jobq" stats

# ------------------------------------------------------------------ workers
say "4 workers: build/examples/worker --batch 10 --idle 1s"
t0=$(now_ms)
: >"$work/ran.log"
pids=()
for n in 1 2 3 4; do
  timeout 45s "$worker" --name "demo-$n" --batch 10 --idle 1s --log "$work/ran.log" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || fail "worker $pid exited with status $?"
done
echo "all workers done in $(($(now_ms) - t0)) ms"

# ------------------------------------------------------------------ checks
say "jobq ls --state dead"
"$jobq" ls --state dead

say "checks"
id_of() { # id_of PAYLOAD: the id of the first job put with that payload
  local line
  line=$(grep -n -F "\"payload\":\"$1\"" "$work/jobs.ndjson" | head -1 | cut -d: -f1)
  echo $((first_id + line - 1)) # one transaction on a new file: ids follow the lines
}

# Nothing unfinished, everything but one job done.
"$jobq" stats --json >"$work/stats.json"
sum() { # sum FIELD: FIELD added up over the queues
  grep -o "\"$1\": *[0-9]*" "$work/stats.json" | awk -F: '{ n += $2 } END { print n + 0 }'
}
for state in ready scheduled running waiting; do
  n=$(sum "$state")
  [[ $n -eq 0 ]] || fail "$n jobs still $state"
done
done_n=$(sum done) dead_n=$(sum dead)
[[ $done_n -eq $((total - 1)) ]] && echo "ok: $done_n of $total jobs done" ||
  fail "$done_n jobs done, expected $((total - 1))"

# The always-failing job: dead after exactly 3 attempts.
fail_id=$(id_of fail)
"$jobq" show "$fail_id" --json >"$work/fail.json"
if [[ $dead_n -eq 1 ]] && grep -q '"state": *"dead"' "$work/fail.json" &&
   [[ $(json_num attempts <"$work/fail.json") -eq 3 ]]; then
  echo "ok: job $fail_id (payload \"fail\") is dead after 3 attempts"
else
  fail "expected job $fail_id alone dead after 3 attempts ($dead_n dead)"
fi

# The fail-once job: done on its second attempt.
once_id=$(id_of fail-once)
"$jobq" show "$once_id" --json >"$work/once.json"
if grep -q '"state": *"done"' "$work/once.json" &&
   [[ $(json_num attempts <"$work/once.json") -eq 2 ]]; then
  echo "ok: job $once_id (payload \"fail-once\") is done on attempt 2"
else
  fail "expected job $once_id done on attempt 2"
fi

# Delayed jobs: claimed no earlier than their run_at.
for d in 1s 2s; do
  id=$(id_of "delayed $d")
  "$jobq" show "$id" --json >"$work/delayed.json"
  run_at=$(json_ms run_at <"$work/delayed.json")
  claimed=$(json_ms claimed_at <"$work/delayed.json")
  created=$(json_ms created_at <"$work/delayed.json")
  if [[ -z $claimed ]]; then
    fail "job $id (delay $d) never ran"
  elif [[ $claimed -ge $run_at ]]; then
    echo "ok: job $id (delay $d) ran $((claimed - created)) ms after it was put"
  else
    fail "job $id (delay $d) ran at $claimed, before its run_at $run_at"
  fi
done

# The urgent job (priority 100) was claimed before the priority-0 jobs
# that were ready at the same time.
urgent=$(id_of urgent) plain_mail=$(id_of "mail 3")
"$jobq" show "$urgent" --json >"$work/urgent.json"
"$jobq" show "$plain_mail" --json >"$work/plain.json"
u_claimed=$(json_ms claimed_at <"$work/urgent.json")
p_claimed=$(json_ms claimed_at <"$work/plain.json")
if [[ -n $u_claimed && -n $p_claimed && $u_claimed -le $p_claimed ]]; then
  echo "ok: job $urgent (priority 100) was claimed no later than job $plain_mail (priority 0)"
else
  fail "job $urgent (priority 100) was not claimed before job $plain_mail (priority 0)"
fi

# The ordering key: the workers logged each run before acknowledging it,
# so the steps must appear in order (a step may repeat if an attempt was
# lost, but never after a later one); and in the database each step was
# claimed no earlier than the step before it finished.
awk -F '\t' '$3 == "account-42" { print $NF }' "$work/ran.log" | { grep -o '[0-9]*$' || true; } >"$work/steps"
key_ok=1
if [[ $(uniq "$work/steps" | tr '\n' ' ') != "$(seq 1 20 | tr '\n' ' ')" ]]; then
  key_ok=0
  fail "ordering key account-42 ran out of order: $(tr '\n' ' ' <"$work/steps")"
fi
prev_finished=0
for step in $(seq 1 20); do
  id=$(id_of "account-42 step $step")
  "$jobq" show "$id" --json >"$work/step.json"
  claimed=$(json_ms claimed_at <"$work/step.json")
  finished=$(json_ms finished_at <"$work/step.json")
  if [[ -z $finished ]]; then
    key_ok=0
    fail "job $id (account-42 step $step) did not finish"
    break
  elif [[ $claimed -lt $prev_finished ]]; then
    key_ok=0
    fail "job $id (account-42 step $step) started before step $((step - 1)) finished"
  fi
  prev_finished=${finished:-0}
done
((key_ok)) && echo "ok: the 20 jobs of ordering key account-42 ran one at a time, in order"

say "jobq stats"
"$jobq" stats

if ((failures > 0)); then
  echo
  echo "demo: $failures check(s) failed" >&2
  exit 1
fi

say "what next"
shown=$build
[[ $shown == "$PWD"/* ]] && shown=${shown#"$PWD"/}
echo "The queue is still in $db.  Point jobq at it and look around:"
echo
printf '  %-40s # %s\n' \
  "export JOBQ_DB=$JOBQ_DB" "or --db $JOBQ_DB on each command" \
  "export PATH=$([[ $shown = /* ]] || printf '$PWD/')$shown:\$PATH" "where the jobq command is" \
  "jobq stats" "per-queue counts" \
  "jobq ls --state dead" "what failed for good" \
  "jobq show $fail_id" "one job: payload, attempts, last error" \
  "jobq ls --queue reports --limit 5" "a page of jobs; --after ID for the next" \
  "jobq retry $fail_id" "run the dead job again ..." \
  "$shown/examples/worker -q reports" "... on a worker (it fails again)"
echo
echo "The README has a five-minute tour of the jobq command and the C API."
