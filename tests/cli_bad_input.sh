#!/usr/bin/env bash
# cli_bad_input.sh - the catalogue of malformed input, one row each: the
# real `jobq` binary must refuse it with the expected exit status, a
# one-line message that names the input, nothing written to the queue,
# and never the password of a URL.  Then the inputs that look odd but are
# good: payloads with NUL bytes and invalid UTF-8 come back byte for byte.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

SECRET=hunter2-$$

# A row: expected status, a fragment of the message, then jobq's
# arguments.  @NDJSON:TEXT as the first argument puts TEXT (printf
# escapes) on stdin and runs `put --ndjson -`.
ROWS=(
  # URLs
  "2|unknown scheme|--db foo://x/y stats"
  "2|port|--db postgres://u:$SECRET@127.0.0.1:99999/db stats"
  "2|port|--db postgres://u:$SECRET@127.0.0.1:0/db stats"
  "2|port|--db postgres://u:$SECRET@127.0.0.1:12ab/db stats"
  "2|IPv6|--db postgres://u:$SECRET@::1:5432/db stats"
  "2|'['|--db postgres://u:$SECRET@[::1:5432/db stats"
  "2|percent|--db postgres://u:$SECRET@h/db%zz stats"
  "2|percent|--db postgres://u:$SECRET@h/db%4 stats"
  "2|percent|--db sqlite:/tmp/x%g.db stats"
  "2|sslmode|--db postgres://u:$SECRET@127.0.0.1:5432/db?sslmode=sometimes stats"
  "2|colour|--db postgres://u:$SECRET@127.0.0.1:5432/db?colour=red stats"
  "2|KEY=VALUE|--db postgres://u:$SECRET@127.0.0.1:5432/db?justakey stats"
  "2|host name|--db postgres://u:$SECRET@a,,b/db stats"
  "2|%2F|--db postgres://u:$SECRET/x@h/db stats"
  "2|%3F|--db mysql://u:$SECRET?x@h/db stats"
  "2|%40|--db postgres://u:$SECRET@x@h/db stats"
  "2|given twice|--db 'postgres://u:$SECRET@127.0.0.1:5432/db?schema=a&schema=a' stats"
  "2|given twice|--db 'sqlite:@DB@?busy_timeout=1s&busy_timeout=2s' stats"
  "2|connect_timeout|--db postgres://u:$SECRET@127.0.0.1:5432/db?connect_timeout=99999999999999 stats"
  "2|connect_timeout|--db mysql://u:$SECRET@127.0.0.1:3306/db?connect_timeout=99999999999999 stats"
  "2|port|--db postgres://u:$SECRET@127.0.0.1:5432/db?port=70000 stats"
  "2|busy_timeout|--db sqlite:@DB@?busy_timeout=2d stats"
  "2|busy_timeout|--db sqlite:@DB@?busy_timeout=soon stats"
  "2|max_payload|--db sqlite:@DB@?max_payload=-1 stats"
  "2|unknown option|--db sqlite:@DB@?nosuch=1 stats"
  "2|memory|--db sqlite::memory: stats"
  "2|expected|--db sqlite: stats"
  # queue names
  "2|queue|put -q 'a;b' x"
  "2|queue|put -q 'DROP TABLE' x"
  "2|queue|put -q Upper x"
  "2|queue|put -q .dot x"
  "2|queue|put -q $(printf 'q%.0s' $(seq 64)) x"
  "2|queue|ls -q bad/name"
  # durations and times
  "2|'10'|put --delay 10 x"
  "2|'-1s'|put --delay -1s x"
  "2|'99999999999999999999h'|put --delay 99999999999999999999h x"
  "2|'1x'|put --timeout 1x x"
  "2|'2h'|put --backoff 2h x"
  "2|'yesterday'|put --at yesterday x"
  "2|'2026-13-01T00:00:00Z'|put --at 2026-13-01T00:00:00Z x"
  "2|9999-12-31T23:59:59.999Z|put --at @999999999999 x"
  "2|9999-12-31T23:59:59.999Z|put --at 9999-12-31T23:59:59.999-01:00 x"
  "2|at most 36500d|put --delay 36501d x"
  "2|at most 36500d|put --timeout 106751991167d x"
  "2|'1d1'|prune --older-than 1d1"
  "2|'-7d'|prune --older-than -7d"
  # numbers and counts
  "2|'40000'|put -p 40000 x"
  "2|'0x10'|put -p 0x10 x"
  "2|'1e3'|put --max-attempts 1e3 x"
  "2|'99999999999999999999'|ls --limit 99999999999999999999"
  "2|'0'|ls --limit 0"
  "2|'-3'|show -3"
  "2|'abc'|show abc"
  "2|'99999999999999999999'|cancel 99999999999999999999"
  "2|'1,2'|retry 1,2"
  # keys and flags
  "2|--key|put --key $(printf 'k%.0s' $(seq 256)) x"
  "2|--unique|put --unique '' x"
  "2|UTF-8|put --key $'\xff' x"
  "2|UTF-8|put --unique $'a\xc0\x80' x"
  "2|folder|put --ndjson /"
  "2|barrier|put --barrier --key k x"
  "2|did you mean|put --prioity 3 x"
  "2|did you mean|stast"
  "2|--queue|put --queue"
  # NDJSON lines
  "2|line 1|@NDJSON:{\"payload\": 1}\n"
  "2|line 2|@NDJSON:{\"payload\":\"a\"}\n{\"queue\":\"Bad\"}\n"
  "2|invalid JSON|@NDJSON:{\"payload\":\n"
  "2|expected a JSON object|@NDJSON:[1,2,3]\n"
  "2|did you mean 'priority'|@NDJSON:{\"priorty\":1}\n"
  "2|duplicate|@NDJSON:{\"queue\":\"a\",\"queue\":\"b\"}\n"
  "2|payload_base64|@NDJSON:{\"payload_base64\":\"!!!\"}\n"
  "2|both|@NDJSON:{\"payload\":\"a\",\"payload_base64\":\"YQ==\"}\n"
  "2|both|@NDJSON:{\"delay\":\"1s\",\"run_at\":1795000000000}\n"
  "2|barrier|@NDJSON:{\"barrier\":\"yes\"}\n"
  "2|max_attempts|@NDJSON:{\"max_attempts\":0}\n"
  "2|priority|@NDJSON:{\"priority\":1.5}\n"
  "2|timeout|@NDJSON:{\"timeout\":-5}\n"
  "2|run_at '9223372036854775807'|@NDJSON:{\"run_at\":9223372036854775807}\n"
  "2|run_at '253402300800000'|@NDJSON:{\"run_at\":253402300800000}\n"
  "2|9999-12-31T23:59:59.999Z|@NDJSON:{\"run_at\":\"@999999999999\"}\n"
  "2|delay '3153600000001'|@NDJSON:{\"delay\":3153600000001}\n"
  "2|delay '36501d'|@NDJSON:{\"delay\":\"36501d\"}\n"
  "2|timeout '9223372036854775807'|@NDJSON:{\"timeout\":9223372036854775807}\n"
  "2|backoff '2h'|@NDJSON:{\"backoff\":\"2h\"}\n"
  "2|line 3|@NDJSON:\n\n{\"payload\": 1}\n"
  "2|NUL|@NDJSON:{\"key\":\"a\\\\u0000b\"}\n"
  "2|NUL|@NDJSON:{\"queue\":\"q\\\\u0000x\"}\n"
  "2|NUL|@NDJSON:{\"unique\":\"u\\\\u0000\"}\n"
  "2|invalid Unicode|@NDJSON:{\"key\":\"\\\\udc00\"}\n"
)

# The rows are cases of their own, so that a failure names the row.
run_row() {
  local row=$1 want_rc want_msg rest
  want_rc=${row%%|*}
  rest=${row#*|}
  want_msg=${rest%%|*}
  rest=${rest#*|}
  rest=${rest//@DB@/$DB}
  if [[ $rest == @NDJSON:* ]]; then
    printf "${rest#@NDJSON:}" >"$D/in.ndjson"
    T_STDIN=$D/in.ndjson run put --ndjson -
  else
    eval "run $rest"
  fi
  expect_rc "$want_rc"
  expect_err_has "$want_msg"
  expect_err_style
  local lines
  lines=$(grep -c . "$T_ERR")
  ((lines == 1)) || fail "expected a one-line message, got $lines lines"
  expect_quiet_about "$SECRET"
  expect_no_jobs
}

i=0
for row in "${ROWS[@]}"; do
  i=$((i + 1))
  eval "t_row_$(printf '%02d' "$i")() { run_row $(printf '%q' "$row"); }"
done

# Bytes that are no text come back as they went in.
t_payload_bytes_round_trip() {
  printf 'a\0b\xff\xfe\x80\n' >"$D/p"
  T_STDIN=$D/p run put -q raw -
  expect_rc 0
  local id
  id=$(cat "$T_OUT")
  run show "$id" --json
  expect_rc 0
  # Not valid UTF-8: the JSON carries it as base64.
  expect_out_has '"payload_base64":"YQBi//6ACg=="'
}

# An NDJSON line may carry any bytes through payload_base64.
t_ndjson_base64_payload() {
  printf '{"queue":"raw","payload_base64":"AAEC/w=="}\n' >"$D/in"
  T_STDIN=$D/in run put --ndjson -
  expect_rc 0
  run ls -q raw --json
  expect_out_has '"payload_len":4'
}

# The refusals above add up to the catalogue's size.
t_catalogue_size() {
  ((${#ROWS[@]} >= 50)) || fail "only ${#ROWS[@]} malformed inputs"
}

run_cases
