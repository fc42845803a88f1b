#!/usr/bin/env bash
# cli_put.sh - `jobq put` with the real binary: every family of bad input
# (queue names, priority, attempts, delays, keys, barriers, payload size)
# is refused with exit status 2, a message that quotes the bad value, and
# nothing written; good puts land with their options, from an argument or
# from stdin, byte for byte.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# bad_put QUOTED ARGS...: `jobq put ARGS` must exit 2, name QUOTED on
# stderr and write nothing.
bad_put() {
  local quoted=$1
  shift
  run put "$@"
  expect_rc 2
  expect_err_has "$quoted"
  expect_err_style
  expect_no_jobs
}

t_queue_names() {
  bad_put "'a;b'" --queue 'a;b' x
  bad_put "'a b'" --queue 'a b' x
  bad_put "'Abc'" --queue Abc x
  bad_put "'café'" --queue 'café' x
  local long
  long=$(printf 'q%.0s' $(seq 64))
  bad_put "queue" --queue "$long" x
  bad_put "''" --queue '' x
  bad_put "'_x'" --queue _x x
}

t_priority() {
  bad_put "'x'" --priority x p
  bad_put "'32768'" --priority 32768 p
  bad_put "'-32769'" --priority -32769 p
  bad_put "'1.5'" --priority 1.5 p
  bad_put "'5abc'" --priority 5abc p
}

t_max_attempts() {
  bad_put "'0'" --max-attempts 0 p
  bad_put "'1001'" --max-attempts 1001 p
  bad_put "'many'" --max-attempts many p
}

t_delay() {
  bad_put "'-5s'" --delay -5s p
  bad_put "'10x'" --delay 10x p
  bad_put "'10'" --delay 10 p
  bad_put "'00'" --delay 00 p
  # Zero needs no unit.
  run put --delay 0 p
  expect_rc 0
}

t_key_too_long() {
  local key
  key=$(printf 'k%.0s' $(seq 256))
  run put --key "$key" p
  expect_rc 2
  expect_err_has "--key"
  expect_no_jobs
  run put --unique "$key" p
  expect_rc 2
  expect_err_has "--unique"
  expect_no_jobs
}

t_barrier_with_key() {
  run put --barrier --key k p
  expect_rc 2
  expect_err_has "barrier"
  expect_no_jobs
}

t_payload_too_big() {
  head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' 'x' >"$D/big"
  T_STDIN=$D/big run put -
  expect_rc_in 1 2
  expect_err_has "payload"
  expect_no_jobs
}

t_unknown_option_suggests() {
  run put --prority 5 p
  expect_rc 2
  expect_err_has "--prority"
  expect_err_has "--priority"
  expect_no_jobs
}

t_unknown_command_suggests() {
  run pt x
  expect_rc 2
  expect_err_has "'pt'"
  expect_err_has "put"
  [[ -e $DB ]] && fail "an unknown command created the queue file"
  run
  expect_rc 2
}

t_good_put() {
  run put --queue mail --priority 7 --max-attempts 3 --key cust-1 hello
  expect_rc 0
  local id
  id=$(grep -oE '[0-9]+' "$T_OUT" | head -n 1)
  [[ -n $id ]] || fail "put printed no id: $(cat "$T_OUT")"
  run show "$id" --json
  expect_rc 0
  expect_out_has '"queue":"mail"'
  expect_out_has '"priority":7'
  expect_out_has '"max_attempts":3'
  expect_out_has '"key":"cust-1"'
  expect_out_has 'hello'
  run stats --json
  expect_rc 0
  [[ $(json_sum ready) == 1 ]] || fail "stats: $(cat "$T_OUT")"
}

t_put_from_stdin() {
  printf 'line one\nline "two"\n\ttab' >"$D/payload"
  T_STDIN=$D/payload run put --queue in --json -
  expect_rc 0
  local id
  id=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+')
  [[ -n $id ]] || fail "put --json printed no id: $(cat "$T_OUT")"
  run show "$id" --json
  expect_rc 0
  expect_out_has '"payload":"line one\nline \"two\"\n\ttab"'
}

t_binary_payload() {
  printf 'a\0b\377\n' >"$D/bin"
  T_STDIN=$D/bin run put --json -
  expect_rc 0
  local id want
  id=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+')
  run show "$id" --json
  expect_rc 0
  expect_out_has '"payload_len":5'
  # Not UTF-8, so shown as base64: exactly the bytes that went in.
  want=$(base64 <"$D/bin")
  expect_out_has "\"payload_base64\":\"$want\""
  # The same bytes through NDJSON's payload_base64.
  printf '{"queue":"b","payload_base64":"%s"}\n' "$want" >"$D/in.ndjson"
  run put --ndjson "$D/in.ndjson"
  expect_rc 0
  run show $((id + 1)) --json
  expect_rc 0
  expect_out_has '"queue":"b"'
  expect_out_has "\"payload_base64\":\"$want\""
}

t_delay_is_scheduled() {
  run put --delay 1h later
  expect_rc 0
  run stats --json
  [[ $(json_sum scheduled) == 1 ]] || fail "not scheduled: $(cat "$T_OUT")"
  [[ $(json_sum ready) == 0 ]] || fail "ready: $(cat "$T_OUT")"
}

t_unique_put() {
  run put --unique u1 --json a
  expect_rc 0
  local first second
  first=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+')
  run put --unique u1 --json b
  expect_rc 0
  second=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+')
  [[ -n $first && $first == "$second" ]] || fail "ids $first and $second"
  expect_out_has '"existed":true'
}

# Blank lines (empty, or spaces, tabs and carriage returns only) are
# skipped wherever they are, the first line included; the others keep
# their numbers in messages.
t_ndjson_blank_lines() {
  printf '\n{"queue":"a","payload":"1"}\n\n \t\r\n{"queue":"a","payload":"2"}\r\n\n' >"$D/in"
  T_STDIN=$D/in run put --ndjson -
  expect_rc 0
  expect_out_has "put 2 jobs"
  run stats --json
  [[ $(json_sum ready) == 2 ]] || fail "not 2 ready jobs: $(cat "$T_OUT")"
  # Only blank lines: nothing to put, and that is no error.
  printf '\n\n  \n' >"$D/blank"
  T_STDIN=$D/blank run put --ndjson -
  expect_rc 0
  expect_out_has "put 0 jobs"
  # A bad line after blank ones is named by its own number.
  printf '\n\n{"queue":"Bad"}\n' >"$D/bad"
  T_STDIN=$D/bad run put --ndjson -
  expect_rc 2
  expect_err_has "line 3:"
}

# The last time jobq takes comes back as it went in, through every way
# in; a time beyond it, written into the file by hand, is still shown
# as a well-formed time (Unix seconds).
t_time_range_ends() {
  run put --at 9999-12-31T23:59:59.999Z --json last
  expect_rc 0
  run put --at @253402300799.999 --json last
  expect_rc 0
  printf '{"run_at":253402300799999}\n{"run_at":"9999-12-31T23:59:59.999Z"}\n' >"$D/in"
  T_STDIN=$D/in run put --ndjson -
  expect_rc 0
  run ls --json
  expect_rc 0
  local n
  n=$(grep -o '"run_at":"9999-12-31T23:59:59.999Z"' "$T_OUT" | wc -l)
  ((n == 4)) || fail "expected 4 jobs at 9999-12-31T23:59:59.999Z: $(cat "$T_OUT")"
  run put --delay 36500d --timeout 36500d --json far
  expect_rc 0
  sqlite3 "$DB" "UPDATE jobq_jobs SET run_at = 9223372036854775807 WHERE id = 1;
                 UPDATE jobq_jobs SET run_at = -9223372036854775807 WHERE id = 2"
  run show 1 --json
  expect_rc 0
  expect_out_has '"run_at":"@9223372036854775.807"'
  run show 2
  expect_rc 0
  expect_out_has '@-9223372036854776.193'
  run ls
  expect_rc 0
}

run_cases
