#!/usr/bin/env bash
# demo.sh - what `make demo` runs: a few thousand jobs of mixed kinds
# through four `jobq work` foremen on a fresh SQLite queue file, then
# checks that every promise held.
#
# It makes jobq-demo.db in the current directory (removing an old one),
# puts about 2700 jobs on three queues in one transaction with
# `jobq put --ndjson` (priorities, delayed jobs, an ordering key with 20
# jobs, a job that always fails, one that fails once, one that hangs past
# its timeout), and starts four foremen with --until-empty:
#
#   email    persistent Python workers (examples/workers/worker.py), -c 4
#   images   persistent Node workers (examples/workers/worker.js), -c 4,
#            or Python ones when there is no node
#   reports  two foremen running examples/job.sh once per job, -c 4 each
#
# Then it checks: every job but two is done; the always-failing job is
# dead after exactly 3 attempts and the hanging one after 2 timeouts; the
# fail-once job is done on attempt 2; the delayed jobs did not run early;
# the urgent job was claimed first; and the ordering-key jobs ran one at a
# time, in order, across the two report foremen.  It shows the foremen's
# logs and `jobq stats`, and exits nonzero when a check fails (or the
# foremen take longer than 60 s).  The database is left in place to look at.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
jobq=$build/jobq
for bin in "$jobq" "$build/jobq-exec"; do
  if [[ ! -x $bin ]]; then
    echo "demo: $bin is missing: run 'make' first (or 'make demo')" >&2
    exit 1
  fi
done
if ! command -v python3 >/dev/null; then
  echo "demo: python3 is missing: run 'make demo' (it installs scripts/deps.txt)" >&2
  exit 1
fi
images_worker=(python3 "$root/examples/workers/worker.py")
if command -v node >/dev/null; then images_worker=(node "$root/examples/workers/worker.js"); fi

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
# 2 ms each so that the workers share the work.
{
  for i in $(seq 1 1500); do
    printf '{"queue":"email","payload":"mail %d","priority":%d}\n' "$i" $((i % 3))
  done
  for i in $(seq 1 1000); do
    printf '{"queue":"images","payload":"sleep:2"}\n'
  done
  for i in $(seq 1 180); do
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
  # Hangs: stopped by its 500 ms timeout, twice, then dead.
  printf '{"queue":"reports","payload":"hang","timeout":"500ms","max_attempts":2,"backoff":"100ms"}\n'
} >"$work/jobs.ndjson"
total=$(wc -l <"$work/jobs.ndjson")

say "jobq put --ndjson jobs.ndjson   ($total jobs in one transaction)"
t0=$(now_ms)
"$jobq" --json put --ndjson "$work/jobs.ndjson" >"$work/put.json"
echo "put $total jobs in $(($(now_ms) - t0)) ms"
first_id=$(json_num first_id <"$work/put.json")

say "jobq stats   (before the foremen start)"
"$jobq" stats

# ------------------------------------------------------------------ foremen
say "4 foremen: jobq work --until-empty, persistent workers and one process per job"
t0=$(now_ms)
: >"$work/ran.log"
pids=() names=()
foreman() { # foreman NAME ARGS...: one jobq work in the background
  local name=$1
  shift
  timeout 60s "$jobq" work --until-empty --poll 100ms --name "demo-$name" "$@" \
    2>"$work/$name.log" &
  pids+=($!) names+=("$name")
}
foreman email -q email --persistent -c 4 -- python3 "$root/examples/workers/worker.py"
foreman images -q images --persistent -c 4 -- "${images_worker[@]}"
DEMO_LOG=$work/ran.log foreman reports-1 -q reports -c 4 -- "$root/examples/job.sh"
DEMO_LOG=$work/ran.log foreman reports-2 -q reports -c 4 -- "$root/examples/job.sh"
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail "foreman ${names[$i]} exited with status $?"
done
echo "all foremen done in $(($(now_ms) - t0)) ms"
for name in "${names[@]}"; do
  printf '\n%s:\n' "$name"
  sed 's/^/  /' "$work/$name.log"
done

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
[[ $done_n -eq $((total - 2)) ]] && echo "ok: $done_n of $total jobs done" ||
  fail "$done_n jobs done, expected $((total - 2))"
[[ $dead_n -eq 2 ]] || fail "$dead_n jobs dead, expected 2"

# The always-failing job: dead after exactly 3 attempts.
fail_id=$(id_of fail)
"$jobq" show "$fail_id" --json >"$work/fail.json"
if grep -q '"state": *"dead"' "$work/fail.json" &&
   [[ $(json_num attempts <"$work/fail.json") -eq 3 ]]; then
  echo "ok: job $fail_id (payload \"fail\") is dead after 3 attempts"
else
  fail "expected job $fail_id dead after 3 attempts"
fi

# The hanging job: stopped by its timeout twice, then dead.
hang_id=$(id_of hang)
"$jobq" show "$hang_id" --json >"$work/hang.json"
if grep -q '"state": *"dead"' "$work/hang.json" &&
   [[ $(json_num attempts <"$work/hang.json") -eq 2 ]] &&
   grep -q 'timed out after 500ms' "$work/hang.json"; then
  echo "ok: job $hang_id (payload \"hang\") timed out twice and is dead"
else
  fail "expected job $hang_id dead after 2 timeouts"
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

# The ordering key: job.sh logged each run as it started, from both report
# foremen, so the steps must appear in order (a step may repeat if an
# attempt was lost, but never after a later one); and in the database each
# step was claimed no earlier than the step before it finished.
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
printf '  %-54s # %s\n' \
  "export JOBQ_DB=$JOBQ_DB" "or --db $JOBQ_DB on each command" \
  "export PATH=$([[ $shown = /* ]] || printf '$PWD/')$shown:\$PATH" "where the jobq command is" \
  "jobq stats" "per-queue counts" \
  "jobq ls --state dead" "what failed for good" \
  "jobq show $fail_id" "one job: payload, attempts, last error" \
  "jobq ls --queue reports --limit 5" "a page of jobs; --after ID for the next" \
  "jobq retry $fail_id" "run the dead job again ..." \
  "jobq work -q reports --until-empty -- examples/job.sh" "... on a foreman (it fails again)"
echo
echo "The README has a five-minute tour of the jobq command and the C API."
