#!/usr/bin/env bash
# cli_json.sh - the machine-readable side of the real `jobq` binary: bulk
# puts from NDJSON (all or none, the bad line named by number), the shapes
# of --json output (stats, ls, show, put) and the admin commands seen
# through them (pause, cancel, retry).
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

t_ndjson_bad_line() {
  cat >"$D/jobs.ndjson" <<'EOF'
{"queue":"a","payload":"one"}
{"queue":"a","payload":"two"
{"queue":"a","payload":"three"}
EOF
  run put --ndjson "$D/jobs.ndjson"
  expect_rc_in 1 2
  expect_err_has "line 2"
  expect_no_jobs

  cat >"$D/jobs2.ndjson" <<'EOF'
{"queue":"a","payload":"one"}
{"queue":"a","payload":"two"}
{"queue":"a","payload":"three"}
{"queue":"Bad Queue","payload":"four"}
EOF
  run put --ndjson "$D/jobs2.ndjson"
  expect_rc_in 1 2
  expect_err_has "line 4"
  expect_err_has "'Bad Queue'"
  expect_no_jobs

  printf '{"queue":"a","priority":99999}\n' >"$D/jobs3.ndjson"
  run put --ndjson "$D/jobs3.ndjson"
  expect_rc_in 1 2
  expect_err_has "line 1"
  expect_err_has "99999"
  expect_no_jobs
}

t_ndjson_round_trip() {
  cat >"$D/jobs.ndjson" <<'EOF'
{"queue":"a","payload":"one","priority":5}
{"queue":"a","payload":"two \"quoted\" \u00e9"}

{"queue":"b","payload":"three","key":"k1"}
{"queue":"b","payload":"four","key":"k1"}
EOF
  run put --ndjson "$D/jobs.ndjson"
  expect_rc 0
  run stats --json
  expect_rc 0
  [[ $(json_sum ready) == 3 ]] || fail "ready: $(cat "$T_OUT")"
  [[ $(json_sum waiting) == 1 ]] || fail "waiting: $(cat "$T_OUT")"
  run ls --json --queue a
  expect_rc 0
  local ids
  ids=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+' | tr '\n' ' ')
  [[ $(wc -w <<<"$ids") == 2 ]] || fail "ls --queue a: $(cat "$T_OUT")"
  local second
  second=$(awk '{ print $2 }' <<<"$ids")
  run show "$second" --json
  expect_rc 0
  expect_out_has 'two \"quoted\" '
  grep -q 'é\|\\u00e9' "$T_OUT" || fail "payload lost its é: $(cat "$T_OUT")"

  # From stdin too.
  printf '{"queue":"c","payload":"x"}\n{"queue":"c","payload":"y"}\n' >"$D/more"
  T_STDIN=$D/more run put --ndjson -
  expect_rc 0
  run stats --json
  [[ $(json_sum ready) == 5 ]] || fail "after stdin: $(cat "$T_OUT")"
}

t_stats_json_shape() {
  run init
  expect_rc 0
  run stats --json
  expect_rc 0
  [[ $(tr -d ' \n\t' <"$T_OUT") == '{"queues":[]}' ]] || fail "empty stats: $(cat "$T_OUT")"
  run put --queue alpha one
  run put --queue alpha --delay 1h two
  run put --queue beta three
  run pause beta
  expect_rc 0
  run stats --json
  expect_rc 0
  local flat
  flat=$(tr -d ' \n\t' <"$T_OUT")
  [[ $flat == '{"queues":[{'* ]] || fail "stats shape: $flat"
  [[ $flat == *'"name":"alpha"'* ]] || fail "no alpha: $flat"
  [[ $flat == *'"name":"beta"'* ]] || fail "no beta: $flat"
  local f
  for f in ready scheduled waiting running done dead cancelled paused; do
    [[ $flat == *"\"$f\":"* ]] || fail "no \"$f\" in $flat"
  done
  [[ $flat == *'"paused":false'* ]] || fail "alpha not paused:false: $flat"
  [[ $flat == *'"paused":true'* ]] || fail "beta not paused:true: $flat"
  [[ $(json_sum ready) == 2 ]] || fail "ready: $flat"
  [[ $(json_sum scheduled) == 1 ]] || fail "scheduled: $flat"
  if command -v jq >/dev/null 2>&1; then
    jq -e '.queues | length == 2 and (.[0].ready | type == "number")' "$T_OUT" >/dev/null ||
      fail "jq does not accept it: $flat"
  fi
}

t_cancel_and_retry() {
  run put --queue q --json a
  local id
  id=$(grep -oE '"id": *[0-9]+' "$T_OUT" | grep -oE '[0-9]+')
  run cancel "$id"
  expect_rc 0
  run stats --json
  [[ $(json_sum cancelled) == 1 ]] || fail "cancelled: $(cat "$T_OUT")"
  run cancel "$id"
  expect_rc 1
  run retry "$id"
  expect_rc 0
  run stats --json
  [[ $(json_sum ready) == 1 ]] || fail "ready after retry: $(cat "$T_OUT")"
  run ls --json --state ready
  expect_rc 0
  [[ $(tr -d ' \n\t' <"$T_OUT") == *"\"id\":$id"[,}]* ]] || fail "ls: $(cat "$T_OUT")"
  run ls --state nonsense
  expect_rc 2
  expect_err_has "'nonsense'"
}

run_cases
