#!/usr/bin/env bash
# run.sh - runs the whole test suite against one build and adds it up.
#
# Every $JOBQ_BUILD/tests/test_* binary (cmocka) runs once per store: the
# conformance suite is the same binaries against SQLite, against a
# throwaway PostgreSQL server and against a throwaway MariaDB server that
# this script starts first (tests/pgserver.sh, tests/mysqlserver.sh: a
# fresh data folder on a free port of 127.0.0.1) and stops at the end;
# test_parse and test_cronspec, which test no store, run once, and test_postgres and
# test_mysql, a store's own tests, run on that store only.  The store
# "pgbouncer" is PostgreSQL through a PgBouncer in transaction mode
# (tests/pgbouncer.sh, a pool of 2 server connections) with
# pooler=transaction in the URL: the binaries of JOBQ_TEST_PGBOUNCER run
# again through it.  Then every
# tests/cli_*.sh and tests/build_*.sh script runs (given JOBQ=$JOBQ_BUILD/jobq, JOBQ_TEST_PG_URL
# and JOBQ_TEST_MYSQL_URL).  Each file runs under a
# per-file timeout.  One line per file says how it went; a failing file's
# details follow it.  The last line is always "N passed, N failed",
# counting test cases, and the exit status is nonzero when anything failed.
#
# cmocka binaries report "[  PASSED  ] N test(s)." and "[  FAILED  ] N
# test(s)"; the shell scripts end with "RESULT: N passed, N failed[, N
# skipped]", and a skipped case's line says why ("skip CASE: REASON").  A file
# that crashes, times out or exits nonzero after reporting (a sanitizer
# finding, a leak) counts its unreported cases, and at least one, as failed.
#
#   JOBQ_BUILD          build directory (default: build)
#   JOBQ_TEST_TIMEOUT   seconds per file (default: 300)
#   JOBQ_TEST_FILTER    only files whose name contains this
#   JOBQ_TEST_SKIP      files to leave out (names, space-separated), each
#                       reported as skipped with JOBQ_TEST_SKIP_WHY
#   JOBQ_TEST_CASE      only the cases of this name: a shell script's case
#                       (its t_ function without t_), a cmocka test's
#                       function (* and ? match any text, any character)
#   JOBQ_TEST_VERBOSE   1: print every file's whole output
#   JOBQ_TEST_STORES    the stores to run the suite on (default
#                       "sqlite postgres pgbouncer mysql")
#   JOBQ_TEST_PGBOUNCER the binaries run through PgBouncer, without test_
#                       (default: claim ack session order limit put admin
#                       tally bad_input)
#   JOBQ_TEST_PG_URL    a PostgreSQL server to use instead of starting one
#   JOBQ_TEST_MYSQL_URL a MariaDB server to use instead of starting one
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${JOBQ_BUILD:-build}
case $build in
  /*) ;;
  *) build=$root/$build ;;
esac
export JOBQ=$build/jobq
limit=${JOBQ_TEST_TIMEOUT:-300}
filter=${JOBQ_TEST_FILTER:-}
skip=" ${JOBQ_TEST_SKIP:-} "
skip_why=${JOBQ_TEST_SKIP_WHY:-left out of this run}
verbose=${JOBQ_TEST_VERBOSE:-0}
# Sanitizer findings end the process with a clear status; leaks count.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

stores=${JOBQ_TEST_STORES:-sqlite postgres pgbouncer mysql}
pooled=" ${JOBQ_TEST_PGBOUNCER:-claim ack session order limit put after admin tally bad_input} "

total_pass=0
total_fail=0
out=$(mktemp "${TMPDIR:-/tmp}/jobq-run.XXXXXX")
# The state file of every foreman the tests start (jobq work --state),
# away from the machine's own.
XDG_STATE_HOME=$(mktemp -d "${TMPDIR:-/tmp}/jobq-state.XXXXXX")
export XDG_STATE_HOME
pgdir=""
bouncerdir=""
mydir=""
cleanup() {
  rm -f "$out"
  rm -rf "$XDG_STATE_HOME"
  if [[ -n $bouncerdir ]]; then "$here/pgbouncer.sh" stop "$bouncerdir"; fi
  if [[ -n $pgdir ]]; then "$here/pgserver.sh" stop "$pgdir"; fi
  if [[ -n $mydir ]]; then "$here/mysqlserver.sh" stop "$mydir"; fi
}
trap cleanup EXIT

# report NAME PASSED FAILED SKIPPED STATUS SECONDS
report() {
  local name=$1 p=$2 f=$3 s=$4 rc=$5 secs=$6 word=ok extra=""
  ((f > 0)) && word=FAIL
  ((s > 0)) && extra=", $s skipped"
  ((rc != 0)) && extra="$extra, exit status $rc"
  ((rc == 124 || rc == 137)) && extra="$extra (timed out after ${limit}s)"
  printf '%-4s %-26s %3d passed, %d failed%s (%ss)\n' "$word" "$name" "$p" "$f" \
    "$extra" "$secs"
  if ((f > 0)) || [[ $verbose == 1 ]]; then
    # The lines that explain a failure: cmocka's, the sanitizers', ours.
    if [[ $verbose == 1 ]]; then
      sed 's/^/    /' "$out"
    else
      grep -E '^\[  (ERROR|FAILED) |^\[   LINE   \]|^(ERROR|FAIL):|ERROR: |SUMMARY: |runtime error|^child |^not ok|^skip |^#' "$out" |
        head -n 60 | sed 's/^/    /'
    fi
  fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
}

run_cmocka() {
  local bin=$1 name=$2 rc start p f s n
  start=$SECONDS
  timeout -k 10 "$limit" "$bin" >"$out" 2>&1
  rc=$?
  n=$(sed -n 's/.*\[==========\] Running \([0-9]*\) test(s)\..*/\1/p' "$out" | tail -n 1)
  p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$out" | tail -n 1)
  f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$out" | tail -n 1)
  s=$(sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' "$out" | tail -n 1)
  n=${n:-0} p=${p:-0} f=${f:-0} s=${s:-0}
  if ((rc != 0)); then
    local missing=$((n - p - f - s))
    ((missing > 0)) && f=$((f + missing))
    ((f == 0)) && f=1
  fi
  report "$name" "$p" "$f" "$s" "$rc" $((SECONDS - start))
}

run_script() {
  local script=$1 name rc start line p f s
  name=$(basename "$script")
  start=$SECONDS
  timeout -k 10 "$limit" bash "$script" >"$out" 2>&1
  rc=$?
  line=$(grep -E '^RESULT: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
  p=$(sed -E 's/^RESULT: ([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  s=$(sed -nE 's/.* ([0-9]+) skipped.*/\1/p' <<<"$line")
  p=${p:-0} f=${f:-0} s=${s:-0}
  if [[ -z $line ]] || ((rc != 0 && f == 0)); then
    f=$((f + 1))
  fi
  report "$name" "$p" "$f" "$s" "$rc" $((SECONDS - start))
  # Why cases were skipped, always (a failure's details include it).
  if ((s > 0 && f == 0)) && [[ $verbose != 1 ]]; then
    grep -E '^skip ' "$out" | sed 's/^/    /'
  fi
}

# The PostgreSQL server, unless one was given.
if [[ " $stores " == *" postgres "* || " $stores " == *" pgbouncer "* ]] &&
   [[ -z ${JOBQ_TEST_PG_URL:-} ]]; then
  pgdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-pg.XXXXXX")
  if ! JOBQ_TEST_PG_URL=$("$here/pgserver.sh" start "$pgdir" 2>"$out"); then
    echo "FAIL postgres server           could not start:"
    sed 's/^/    /' "$out"
    total_fail=$((total_fail + 1))
    pgdir=""
    stores=${stores/postgres/}
    stores=${stores/pgbouncer/}
  fi
  export JOBQ_TEST_PG_URL
  [[ -n $pgdir ]] && export JOBQ_TEST_PG_DIR=$pgdir
fi

# PgBouncer in front of it.  Not installed: its runs are skipped, and say so.
bouncer_url=""
if [[ " $stores " == *" pgbouncer "* ]]; then
  bouncerdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-bouncer.XXXXXX")
  bouncer_url=$(JOBQ_PGBOUNCER_POOL=2 "$here/pgbouncer.sh" start "$bouncerdir" \
    "${JOBQ_TEST_PG_URL%%\?*}" 2>"$out")
  status=$?
  if ((status != 0)); then
    if ((status == 77)); then
      echo "skip pgbouncer               $(cat "$out")"
    else
      echo "FAIL pgbouncer               could not start:"
      sed 's/^/    /' "$out"
      total_fail=$((total_fail + 1))
    fi
    bouncerdir=""
    stores=${stores/pgbouncer/}
  fi
fi

# The MariaDB server, unless one was given.  Not installed: the store's
# tests are skipped, and say so.
if [[ " $stores " == *" mysql "* && -z ${JOBQ_TEST_MYSQL_URL:-} ]]; then
  mydir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-my.XXXXXX")
  JOBQ_TEST_MYSQL_URL=$("$here/mysqlserver.sh" start "$mydir" 2>"$out")
  status=$?
  if ((status == 77)); then
    echo "skip mysql server            $(cat "$out")"
    mydir=""
    stores=${stores/mysql/}
  elif ((status != 0)); then
    echo "FAIL mysql server            could not start:"
    sed 's/^/    /' "$out"
    total_fail=$((total_fail + 1))
    mydir=""
    stores=${stores/mysql/}
  fi
  export JOBQ_TEST_MYSQL_URL
  [[ -n $mydir ]] && export JOBQ_TEST_MYSQL_DIR=$mydir
fi

found=0
for bin in "$build"/tests/test_*; do
  [[ -f $bin && -x $bin ]] || continue
  [[ -n $filter && $(basename "$bin") != *"$filter"* ]] && continue
  found=1
  if [[ $(basename "$bin") == test_parse || $(basename "$bin") == test_cronspec ]]; then
    JOBQ_TEST_STORE=sqlite run_cmocka "$bin" "$(basename "$bin")"
    continue
  fi
  # A store's own tests run on that store only.
  own=${bin##*/test_}
  if [[ $own == mysql || $own == postgres ]]; then
    if [[ " $stores " == *" $own "* ]]; then
      JOBQ_TEST_STORE=$own run_cmocka "$bin" "$(basename "$bin")"
    fi
    continue
  fi
  for store in $stores; do
    if [[ $store == pgbouncer ]]; then
      [[ $pooled == *" $own "* ]] || continue
      JOBQ_TEST_STORE=postgres JOBQ_TEST_PG_URL="$bouncer_url?pooler=transaction" \
        run_cmocka "$bin" "$(basename "$bin")[$store]"
      continue
    fi
    JOBQ_TEST_STORE=$store run_cmocka "$bin" "$(basename "$bin")[$store]"
  done
done
for script in "$here"/cli_*.sh "$here"/build_*.sh; do
  [[ -f $script ]] || continue
  [[ -n $filter && $(basename "$script") != *"$filter"* ]] && continue
  found=1
  if [[ $skip == *" $(basename "$script") "* ]]; then
    printf 'skip %-26s %s\n' "$(basename "$script")" "$skip_why"
    continue
  fi
  run_script "$script"
done
if ((found == 0)); then
  echo "FAIL no test binaries in $build/tests and no tests/cli_*.sh: build first"
  total_fail=$((total_fail + 1))
fi

echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
