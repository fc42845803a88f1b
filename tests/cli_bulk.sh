#!/usr/bin/env bash
# cli_bulk.sh - the commands over many jobs: jobq cancel --queue (by state
# and key, running jobs asked to stop through a live foreman), jobq purge
# and jobq prune --queue, each with its count, --dry-run, --quiet, --json,
# a progress bar on a terminal (and none elsewhere), and what they refuse.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# put_many N QUEUE: N jobs into QUEUE in one transaction.
put_many() {
  local i
  for ((i = 0; i < $1; i++)); do echo "{\"queue\":\"$2\",\"payload\":\"$i\"}"; done >"$D/jobs.ndjson"
  run put --ndjson "$D/jobs.ndjson"
  expect_rc 0
}

t_cancel_queue() {
  put_many 2500 big
  run put -q big --delay 1h later
  run put -q big --key k head
  run put -q big --key k behind
  run put -q other x
  run cancel --queue big --state scheduled --dry-run
  expect_rc 0
  expect_out_has "would cancel 1 job, ask 0 running jobs to stop"
  run cancel --queue big --state scheduled
  expect_out_has "cancelled 1 job, asked 0 running jobs to stop"
  run cancel --queue big --key k --json
  expect_out_has '{"cancelled":2,"cancel_requested":0,"dry_run":false}'
  run cancel --queue big --quiet
  expect_rc 0
  [[ -s $T_OUT ]] && fail "--quiet printed: $(head -c 200 "$T_OUT")"
  run stats --json
  expect_out_has '"name":"big","ready":0,"scheduled":0,"waiting":0,"running":0,"done":0,"dead":0,"cancelled":2503'
  expect_out_has '"name":"other","ready":1'
}

t_cancel_running() {
  run put -q slow x
  JOBQ_DB=sqlite:$DB "$JOBQ" work -q slow -c 1 -- sleep 30 >/dev/null 2>"$D/foreman" &
  local pid=$! i
  for i in $(seq 50); do
    run stats --json
    grep -q '"running":1' "$T_OUT" && break
    sleep 0.2
  done
  run cancel --queue slow --state running
  expect_out_has "cancelled 0 jobs, asked 1 running job to stop"
  for i in $(seq 50); do
    run stats --json
    grep -q '"cancelled":1' "$T_OUT" && break
    sleep 0.2
  done
  expect_out_has '"cancelled":1'
  kill -TERM $pid
  wait $pid
}

t_refused() {
  run cancel --state ready
  expect_rc 2
  expect_err_has "--state needs --queue"
  run cancel --queue q 5
  expect_rc 2
  expect_err_has "unexpected argument '5'"
  run cancel --queue q --state done
  expect_rc 2
  expect_err_has "invalid --state 'done'"
  run cancel --queue 'Bad Q'
  expect_rc 2
  run purge
  expect_rc 2
  expect_err_has "missing queue"
  run purge a b
  expect_rc 2
  run prune --older-than 1d --queue 'Bad Q'
  expect_rc 2
  expect_no_jobs
}

t_purge_and_prune() {
  put_many 1200 p
  run cancel --queue p --quiet
  put_many 300 p
  run put -q keep x
  run purge p --dry-run
  expect_out_has "would purge 1500 jobs"
  run prune --older-than 0 --queue p --dry-run
  expect_out_has "would prune 1200 jobs"
  run prune --older-than 0 --queue keep --json
  expect_out_has '{"pruned":0,"dry_run":false}'
  run purge p --json
  expect_out_has '{"purged":1500,"dry_run":false}'
  run purge p
  expect_out_has "purged 0 jobs"
  run stats --json
  expect_out_has '"name":"keep","ready":1'
  expect_out_has '"name":"p","ready":0,"scheduled":0,"waiting":0,"running":0,"done":0,"dead":0,"cancelled":0'
  run purge keep --quiet
  expect_rc 0
  [[ -s $T_OUT ]] && fail "--quiet printed: $(head -c 200 "$T_OUT")"
  return 0
}

# A bar on a terminal's stderr, drawn over itself; none when stderr is a
# file (the other cases) or with --quiet.
t_progress_on_a_terminal() {
  command -v script >/dev/null || { skip "no script(1) for a terminal"; return; }
  put_many 25000 t
  JOBQ_DB=sqlite:$DB script -qec "$JOBQ purge t" /dev/null >"$D/tty" 2>&1
  grep -q "jobq purge: \[" "$D/tty" || fail "no bar: $(head -c 300 "$D/tty" | tr '\r' '|')"
  grep -q "purged 25000 jobs" "$D/tty" || fail "no count: $(tail -c 200 "$D/tty")"
  put_many 100 t
  JOBQ_DB=sqlite:$DB script -qec "$JOBQ purge t --quiet" /dev/null >"$D/tty" 2>&1
  [[ -s $D/tty ]] && fail "--quiet drew: $(head -c 200 "$D/tty" | tr '\r' '|')"
  return 0
}

run_cases
