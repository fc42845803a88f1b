# clitest.sh - the little harness that tests/cli_*.sh source: a temp
# directory for the whole script and a fresh one per case, running the real
# `jobq` binary ($JOBQ) with its output captured, assertions on exit status,
# stderr and stdout, checks that nothing was written, and the closing
# "RESULT: N passed, N failed" line that tests/run.sh adds up.
#
# A script defines functions named t_* and ends with `run_cases`.  Inside a
# case: $D is the case's directory, $DB a queue file in it (not created),
# `run ARGS...` runs jobq with JOBQ_DB=sqlite:$DB and sets $rc, $T_OUT and
# $T_ERR (files); `expect_*` record failures without stopping the case;
# `skip REASON` (then return) marks a case that cannot run here, and why.

set -u

if [[ -z ${JOBQ:-} ]]; then
  JOBQ=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/jobq
fi
T_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobq-cli.XXXXXX")
trap '[[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T_ROOT"' EXIT
# The foremen's state file (jobq work --state) stays in the test's folder.
export XDG_STATE_HOME=$T_ROOT/state
T_PASS=0
T_FAIL=0
T_SKIP=0
T_CASE=""
T_CASE_FAILED=0
T_CASE_SKIPPED=""

fail() {
  echo "FAIL: $T_CASE: $*"
  if [[ -s ${T_ERR:-/dev/null} ]]; then
    echo "#   stderr: $(head -c 400 "$T_ERR" | tr '\n' ' ')"
  fi
  T_CASE_FAILED=1
}

# skip REASON: this case cannot run here (a missing program); say why.
skip() {
  T_CASE_SKIPPED=$*
}

# run ARGS...: jobq ARGS with stdin from /dev/null (or $T_STDIN when set).
run() {
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  local input=${T_STDIN:-/dev/null}
  T_LAST="$*"
  JOBQ_DB=${T_DBURL:-sqlite:$DB} "$JOBQ" "$@" <"$input" >"$T_OUT" 2>"$T_ERR"
  rc=$?
}

# run_env VAR=VALUE... -- ARGS...: like run, with more environment.
run_env() {
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  T_LAST="$*"
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  env JOBQ_DB="${T_DBURL:-sqlite:$DB}" "${envs[@]}" "$JOBQ" "$@" \
    <"${T_STDIN:-/dev/null}" >"$T_OUT" 2>"$T_ERR"
  rc=$?
}

expect_rc() {
  [[ $rc == "$1" ]] || fail "exit status $rc, expected $1 (jobq ${T_LAST:-})"
}

# expect_rc_in A B...: the status is one of them.
expect_rc_in() {
  local want
  for want in "$@"; do [[ $rc == "$want" ]] && return 0; done
  fail "exit status $rc, expected one of $*"
}

expect_err_has() {
  grep -qF -- "$1" "$T_ERR" || fail "stderr does not contain \"$1\""
}

expect_err_has_ci() {
  grep -qiF -- "$1" "$T_ERR" || fail "stderr does not contain \"$1\" (any case)"
}

expect_out_has() {
  grep -qF -- "$1" "$T_OUT" || fail "stdout does not contain \"$1\": $(head -c 300 "$T_OUT")"
}

# expect_quiet_about WORD: neither stdout nor stderr mentions WORD.
expect_quiet_about() {
  if grep -qF -- "$1" "$T_OUT" "$T_ERR"; then
    fail "output shows \"$1\""
  fi
}

# The message follows the house style: one line, lower case start, no
# final period.
expect_err_style() {
  local first
  first=$(grep -v '^[[:space:]]*$' "$T_ERR" | head -n 1)
  [[ -n $first ]] || { fail "no message on stderr"; return; }
  [[ $first == *. ]] && fail "message ends with a period: $first"
  [[ $first =~ ^jobq ]] || [[ $first =~ ^[a-z] ]] || fail "message does not start in lower case: $first"
  return 0
}

# expect_no_jobs: the queue file was not created, or it holds no job at all.
expect_no_jobs() {
  [[ -e $DB ]] || return 0
  local save_out=$T_OUT save_err=$T_ERR save_rc=$rc
  run stats --json
  if [[ $rc != 0 ]]; then
    fail "jobq stats --json failed with $rc"
  elif grep -oE '"(ready|scheduled|waiting|pending|running|done|dead|cancelled)": *[0-9]+' "$T_OUT" |
      grep -qvE ': *0$'; then
    fail "jobs were written: $(head -c 300 "$T_OUT")"
  fi
  T_OUT=$save_out T_ERR=$save_err rc=$save_rc
}

# json_sum FIELD: the sum of "FIELD":N over stats --json output in $T_OUT.
json_sum() {
  grep -oE "\"$1\": *[0-9]+" "$T_OUT" | sed -E 's/.*: *//' |
    awk '{ s += $1 } END { print s + 0 }'
}

# run_chaos ARGS...: a chaos run (tests/chaos/chaos.py --jobq $JOBQ ARGS)
# under a timeout; prints its verdict, and a failure shows its details and
# its log folder.
run_chaos() {
  T_OUT=$D/chaos.out
  T_ERR=$D/chaos.err
  timeout -k 10 400 python3 "$(dirname "${BASH_SOURCE[0]}")/chaos/chaos.py" --jobq "$JOBQ" \
    "$@" >"$T_OUT" 2>"$T_ERR"
  rc=$?
  cat "$T_OUT"
  if [[ $rc != 0 ]]; then
    fail "chaos.py exited $rc"
    cat "$T_OUT" "$T_ERR" | head -40 | sed 's/^/# /'
  fi
}

# san_env LIB: SAN_ENV gets what a program of another language (python3,
# node) needs in its environment to load LIB: nothing, or, for a library
# built with AddressSanitizer, its runtime loaded first (that program's
# own memory is not checked: no leak checks).
san_env() {
  SAN_ENV=()
  if readelf -d "$1" 2>/dev/null | grep -q 'libasan'; then
    SAN_ENV=(LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)"
             ASAN_OPTIONS=detect_leaks=0:abort_on_error=0)
  fi
}

# schema_version: the schema version this jobq makes, read from a new
# SQLite file (for tests that must not name it).
schema_version() {
  local d
  d=$(mktemp -d "$T_ROOT/schema.XXXX")
  "$JOBQ" --db "sqlite:$d/v.db" init --json | sed -n 's/.*"schema_version":\([0-9]*\).*/\1/p'
  rm -rf "$d"
}

run_cases() {
  if [[ ! -x $JOBQ ]]; then
    echo "FAIL: the jobq binary is not built ($JOBQ)"
    echo "RESULT: 0 passed, 1 failed"
    exit 1
  fi
  local fn
  for fn in $(declare -F | awk '{ print $3 }' | grep '^t_'); do
    T_CASE=${fn#t_}
    # JOBQ_TEST_CASE=NAME runs that case alone.
    [[ -n ${JOBQ_TEST_CASE:-} && $T_CASE != "$JOBQ_TEST_CASE" ]] && continue
    T_CASE_FAILED=0
    T_CASE_SKIPPED=""
    D=$(mktemp -d "$T_ROOT/$T_CASE.XXXX")
    DB=$D/queue.db
    unset T_STDIN T_DBURL
    "$fn"
    if ((T_CASE_FAILED)); then
      T_FAIL=$((T_FAIL + 1))
      echo "not ok $T_CASE"
    elif [[ -n $T_CASE_SKIPPED ]]; then
      T_SKIP=$((T_SKIP + 1))
      echo "skip $T_CASE: $T_CASE_SKIPPED"
    else
      T_PASS=$((T_PASS + 1))
      echo "ok $T_CASE"
    fi
  done
  echo "RESULT: $T_PASS passed, $T_FAIL failed, $T_SKIP skipped"
  ((T_FAIL == 0))
}
