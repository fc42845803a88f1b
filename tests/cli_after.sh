#!/usr/bin/env bash
# cli_after.sh - `jobq put --after` and NDJSON's after / after_index with
# the real binary: a job waits pending until its parents are done (a
# foreman runs the whole graph in order), is cancelled naming a parent
# that dies, runs anyway with --after-any-outcome; `jobq show` lists
# parents and children; with --key, a job after others keeps its place
# in its key's order and a foreman runs the key's jobs one at a time in
# put order; a barrier after others runs alone in its place; bad input (an unknown id, the id the batch itself
# would take, after_index pointing forward or out of range, a malformed
# list) exits 2 and writes nothing, the whole batch included.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# bad_put QUOTED ARGS...: `jobq put ARGS` exits 2, says QUOTED, and the
# database holds only the jobs it held before ($1 of them: see count).
bad() {
  local quoted=$1 before=$2
  shift 2
  run put "$@"
  expect_rc 2
  expect_err_has "$quoted"
  expect_err_style
  count_is "$before"
}

# count_is N: the database holds N jobs, whatever their state.
count_is() {
  local save_out=$T_OUT save_err=$T_ERR save_rc=$rc n
  run ls --json --limit 1000
  n=$(grep -o '"id":' "$T_OUT" | wc -l)
  [[ $n == "$1" ]] || fail "the database holds $n jobs, expected $1"
  T_OUT=$save_out T_ERR=$save_err rc=$save_rc
}

# state_is ID STATE
state_is() {
  local save_out=$T_OUT save_err=$T_ERR save_rc=$rc
  run show "$1" --json
  grep -q "\"state\":\"$2\"" "$T_OUT" || fail "job $1: $(grep -o '"state":"[a-z]*"' "$T_OUT" | head -1), expected $2"
  T_OUT=$save_out T_ERR=$save_err rc=$save_rc
}

t_pending_until_done_then_runs() {
  run put a
  run put --after 1 b
  expect_rc 0
  state_is 2 pending
  run stats --json
  expect_out_has '"pending":1'
  run ls --state pending
  expect_out_has 'pending'
  run show 2
  expect_out_has 'after             1 ready'
  run show 1 --json
  expect_out_has '"children":[{"id":2,"state":"pending"}]'
  # A worker runs 1, then 2; the record of the order is the output file.
  local out=$D/order
  run work --until-empty -c 2 -- sh -c "cat >> '$out'; echo >> '$out'"
  expect_rc 0
  [[ $(tr -d '\n' <"$out") == ab ]] || fail "ran in the order '$(tr '\n' ' ' <"$out")', expected a then b"
  state_is 2 done
}

t_dead_parent_cancels() {
  run put --max-attempts 1 a
  run put --after 1 b
  run put --after 1 --after-any-outcome --max-attempts 1 c
  run work --until-empty -- false
  expect_rc 0
  state_is 1 dead
  state_is 2 cancelled
  # It ran (and failed as its parent did).
  state_is 3 dead
  run show 3
  expect_out_has 'attempts          1 of 1'
  run show 2
  expect_out_has 'job 1 that it was put after is dead'
}

t_ndjson_graph_in_one_batch() {
  printf '%s\n' '{"payload":"root"}' '{"payload":"l","after_index":[0]}' \
    '{"payload":"r","after_index":[0]}' '{"payload":"join","after_index":[1,2]}' >"$D/g.ndjson"
  run put --ndjson "$D/g.ndjson"
  expect_rc 0
  state_is 1 ready
  state_is 4 pending
  run show 4 --json
  expect_out_has '"after":[{"id":2,"state":"pending"},{"id":3,"state":"pending"}]'
  # Ids of jobs put before, from the file.
  printf '%s\n' '{"payload":"x","after":[1,4],"after_any_outcome":true}' >"$D/ids.ndjson"
  run put --ndjson "$D/ids.ndjson"
  expect_rc 0
  state_is 5 pending
}

t_bad_input_writes_nothing() {
  run put a
  bad "unknown job 99" 1 --after 99 x
  bad "'1,,2'" 1 --after 1,,2 x
  bad "'0'" 1 --after 0 x
  bad "'-1'" 1 --after -1 x
  bad "--after" 1 --after-any-outcome x
  bad "unknown job 99" 1 --after 99 --key k x
  # The id the batch's first job would take is not a job yet: no cycle
  # can go through ids.
  printf '%s\n' '{"payload":"p"}' '{"payload":"c","after":[2]}' >"$D/self.ndjson"
  bad "unknown job 2" 1 --ndjson "$D/self.ndjson"
  expect_err_has "line 2:"
  # after_index forward, to itself, out of range, or not a list.
  printf '%s\n' '{"payload":"p","after_index":[1]}' '{"payload":"c"}' >"$D/fwd.ndjson"
  bad "invalid after_index '1'" 1 --ndjson "$D/fwd.ndjson"
  expect_err_has "line 1:"
  printf '%s\n' '{"payload":"p"}' '{"payload":"c","after_index":[1]}' >"$D/self2.ndjson"
  bad "invalid after_index '1'" 1 --ndjson "$D/self2.ndjson"
  printf '%s\n' '{"payload":"p"}' '{"payload":"c","after_index":[7]}' >"$D/far.ndjson"
  bad "(0 to 0)" 1 --ndjson "$D/far.ndjson"
  printf '%s\n' '{"payload":"p","after_index":0}' >"$D/scalar.ndjson"
  bad "invalid after_index" 1 --ndjson "$D/scalar.ndjson"
  printf '%s\n' '{"payload":"p","after":["1"]}' >"$D/text.ndjson"
  bad "invalid after" 1 --ndjson "$D/text.ndjson"
}

# Key k: a, then b after a job of another queue, then c.  The parent
# takes a second, yet a foreman with four slots runs k's jobs a, b, c,
# b after the parent; then a barrier after a job of another queue runs
# after the queue's earlier job and the parent, and before its later
# one.
t_key_and_barrier_after() {
  local out=$D/order
  local cmd="p=\$(cat); case \$p in parent*) sleep 1;; esac; echo \$p >> '$out'"
  run put -q p --max-attempts 1 parent
  run put -q q --key k a
  run put -q q --key k --after 1 b
  expect_rc 0
  run put -q q --key k c
  state_is 3 pending
  state_is 4 waiting
  run work -q q -q p --until-empty -c 4 -- sh -c "$cmd"
  expect_rc 0
  [[ $(tr '\n' ' ' <"$out") == "a parent b c " ]] ||
    fail "ran '$(tr '\n' ' ' <"$out")', expected a, parent, b, c"
  : >"$out"
  run put -q p --max-attempts 1 parent2
  run put -q q early
  run put -q q --barrier --after 5 barrier
  expect_rc 0
  run put -q q late
  state_is 7 pending
  state_is 8 waiting
  run work -q q -q p --until-empty -c 4 -- sh -c "$cmd"
  expect_rc 0
  [[ $(tr '\n' ' ' <"$out") == "early parent2 barrier late " ]] ||
    fail "ran '$(tr '\n' ' ' <"$out")', expected early, parent2, barrier, late"
}

run_cases
