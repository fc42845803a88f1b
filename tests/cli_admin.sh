#!/usr/bin/env bash
# cli_admin.sh - the operator's commands of the real `jobq` binary: ls
# with filters and paging, pause and resume, the key policy, cancel of
# several ids (the exit status is the worst), prune, epoch and its bump,
# init, sessions, reap, and the global options (--json and --max-payload
# before or after the command), each with its bad-input refusals.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# ids_in_out: the "id" values of the JSON in $T_OUT, space-separated.
ids_in_out() {
  grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+' | tr '\n' ' ' | sed 's/ $//'
}

put_n() {
  local k
  for ((k = 1; k <= $1; k++)); do
    run put "${@:2}" "job$k"
    expect_rc 0
  done
}

t_ls_paging_and_filters() {
  put_n 5
  run put --delay 1h later
  run ls --json --limit 2
  expect_rc 0
  [[ $(ids_in_out) == "1 2" ]] || fail "first page: $(ids_in_out)"
  expect_out_has '"next_after":2'
  run ls --limit 2
  expect_rc 0
  expect_err_has "--after 2"
  run ls --json --limit 2 --after 2
  [[ $(ids_in_out) == "3 4" ]] || fail "second page: $(ids_in_out)"
  run ls --json --after 4
  [[ $(ids_in_out) == "5 6" ]] || fail "last page: $(ids_in_out)"
  expect_out_has '"next_after":null'
  run ls --json --state scheduled
  [[ $(ids_in_out) == "6" ]] || fail "scheduled: $(ids_in_out)"
  run ls --json --state ready
  [[ $(ids_in_out) == "1 2 3 4 5" ]] || fail "ready: $(ids_in_out)"
  run ls --json --state running
  expect_rc 0
  [[ -z $(ids_in_out) ]] || fail "running: $(ids_in_out)"
  run ls --limit 0
  expect_rc 2
  expect_err_has "'0'"
  run ls --after x
  expect_rc 2
  expect_err_has "'x'"
  run ls --queue 'A;'
  expect_rc 2
  expect_err_has "'A;'"
}

t_pause_resume() {
  run put --queue q a
  run pause q
  expect_rc 0
  expect_out_has "paused q"
  run stats --json
  [[ $(tr -d ' \n' <"$T_OUT") == *'"paused":true'* ]] || fail "not paused: $(cat "$T_OUT")"
  run resume q
  expect_rc 0
  run --json stats
  [[ $(tr -d ' \n' <"$T_OUT") == *'"paused":false'* ]] || fail "still paused: $(cat "$T_OUT")"
  run pause 'Bad Q'
  expect_rc 2
  expect_err_has "'Bad Q'"
  run pause
  expect_rc 2
}

t_key_policy() {
  run policy q skip
  expect_rc 0
  run policy q --json
  expect_rc 0
  expect_out_has '"key_policy":"skip"'
  run policy q wait
  expect_rc 2
  expect_err_has "'wait'"
  run policy q --json
  expect_out_has '"key_policy":"skip"'
}

t_cancel_worst_status() {
  put_n 2
  run cancel 1 2 999
  expect_rc 1
  expect_err_has "999"
  run stats --json
  [[ $(json_sum cancelled) == 2 ]] || fail "cancelled: $(cat "$T_OUT")"
  run cancel 0
  expect_rc 2
  expect_err_has "'0'"
}

t_prune() {
  put_n 3
  run cancel 1 2
  run prune
  expect_rc 2
  expect_err_has "--older-than"
  run prune --older-than 10x
  expect_rc 2
  expect_err_has "'10x'"
  run prune --older-than 1h
  expect_rc 0
  expect_out_has "pruned 0"
  sleep 0.05
  run prune --older-than 0s
  expect_rc 0
  expect_out_has "pruned 2"
  run stats --json
  [[ $(json_sum cancelled) == 0 ]] || fail "cancelled left: $(cat "$T_OUT")"
  [[ $(json_sum ready) == 1 ]] || fail "the unfinished job went: $(cat "$T_OUT")"
}

# A prune that fails part way says how many jobs it pruned before: the
# archive holds 15000 old jobs, and a trigger refuses to delete one of
# the second part's.
t_prune_fails_part_way() {
  run init
  sqlite3 "$DB" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 15000)
    INSERT INTO jobq_done(id, queue, priority, run_at, outcome, barrier, payload, attempts,
      max_attempts, timeout_ms, backoff_ms, created_at, finished_at)
    SELECT i, 'old', 0, 0, 'done', 0, x'78', 1, 1, 0, 0, 0, i FROM n;
    INSERT INTO jobq_queues(name, created_at) VALUES ('old', 0);
    INSERT INTO jobq_counts(queue, shard, n_done, n_dead, n_cancelled) VALUES ('old', 0, 15000, 0, 0);
    CREATE TRIGGER held BEFORE DELETE ON jobq_done WHEN OLD.id = 12000
      BEGIN SELECT RAISE(ABORT, 'job 12000 is held'); END;" || fail "sqlite3 failed"
  run prune --older-than 0s
  expect_rc 1
  expect_err_has "job 12000 is held"
  expect_err_has "pruned 10000 jobs before that"
  [[ $(sqlite3 "$DB" "SELECT count(*) FROM jobq_done") == 5000 ]] || fail "not 5000 jobs left"
  sqlite3 "$DB" "DROP TRIGGER held"
  run prune --older-than 0s
  expect_rc 0
  expect_out_has "pruned 5000 jobs"
}

t_epoch_and_init() {
  run init --json
  expect_rc 0
  [[ -f $DB ]] || fail "init did not create the file"
  local qid e1 e2
  qid=$(grep -oE '"queue_id": *"[0-9a-f-]{36}"' "$T_OUT")
  e1=$(grep -oE '"epoch": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+$')
  [[ -n $qid && -n $e1 ]] || fail "init --json: $(cat "$T_OUT")"
  run init --json
  expect_rc 0
  expect_out_has "$qid"
  run epoch bump --json
  expect_rc 0
  e2=$(grep -oE '"epoch": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+$')
  [[ -n $e2 ]] && ((e2 > e1)) || fail "epoch $e1 then $e2"
  run epoch --json
  expect_out_has "$qid"
  expect_out_has "\"epoch\":$e2"
  run epoch jump
  expect_rc 2
  expect_err_has "'jump'"
}

t_sessions_and_reap() {
  run init
  run sessions --json
  expect_rc 0
  [[ $(tr -d ' \n' <"$T_OUT") == '{"sessions":[]}' ]] || fail "sessions: $(cat "$T_OUT")"
  run reap --json
  expect_rc 0
  expect_out_has '"reaped":0'
}

t_max_payload_option() {
  head -c 2000 /dev/zero | tr '\0' 'y' >"$D/p"
  T_STDIN=$D/p run --max-payload 1KiB put -
  expect_rc_in 1 2
  expect_err_has "1024"
  expect_no_jobs
  T_STDIN=$D/p run put --max-payload 4KiB -
  expect_rc 0
  run --max-payload lots put x
  expect_rc 2
  expect_err_has "'lots'"
}

t_doctor() {
  run put -q d x
  run doctor
  expect_rc 0
  expect_out_has "durability"
  expect_out_has "WAL"
  expect_out_has "no dead jobs"
  expect_out_has "within"
  run doctor --json
  expect_rc 0
  expect_out_has '"worst":"ok"'
  expect_out_has '"name":"clock","level":"ok"'
  run doctor extra
  expect_rc 2
}

t_help_and_version() {
  run --help
  expect_rc 0
  expect_out_has "put"
  run help put
  expect_rc 0
  expect_out_has "--priority"
  run help nosuch
  expect_rc 2
  expect_err_has "'nosuch'"
  run --version
  expect_rc 0
  grep -qE '[0-9]+\.[0-9]+\.[0-9]+' "$T_OUT" || fail "version: $(cat "$T_OUT")"
}

run_cases
