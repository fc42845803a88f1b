#!/usr/bin/env bash
# cli_chaos.sh - a short chaos run (tests/chaos/chaos.py) on each store:
# producers and three `jobq work` foremen under SIGKILL, SIGSTOP, dropped
# connections and, on PostgreSQL, a server restart and a server stall, and
# foremen whose clock is five minutes off; on PostgreSQL the queue is in
# parts, its jobs keyed, and foremen also leave and join; then the
# checker's verdict on what the database holds.  20 seconds of faults per store here; `make
# chaos` runs the long version.  The server stores use the servers
# tests/run.sh started (a database or schema of their own), and need their
# data folders (JOBQ_TEST_PG_DIR, JOBQ_TEST_MYSQL_DIR) to restart, stall
# and query them.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

SECONDS_PER_STORE=${JOBQ_CHAOS_SECONDS:-20}

chaos() {
  run_chaos --seconds "$SECONDS_PER_STORE" "$@"
}

t_sqlite() {
  chaos --store sqlite --url "sqlite:$DB"
}

t_postgres() {
  if [[ -z ${JOBQ_TEST_PG_URL:-} || -z ${JOBQ_TEST_PG_DIR:-} ]]; then
    skip "no PostgreSQL server of the tests' own (tests/run.sh starts one)"
    return
  fi
  # In parts: every job keyed, foremen leaving and joining besides the
  # other faults, each key's order and each part's one owner at a time
  # checked.
  chaos --store postgres --url "$JOBQ_TEST_PG_URL?schema=chaos_$$" \
    --pg-dir "$JOBQ_TEST_PG_DIR" --parts 8
}

t_mysql() {
  if [[ -z ${JOBQ_TEST_MYSQL_URL:-} || -z ${JOBQ_TEST_MYSQL_DIR:-} ]]; then
    skip "no MariaDB server of the tests' own (tests/run.sh starts one)"
    return
  fi
  local db=chaos_$$
  "$(dirname "${BASH_SOURCE[0]}")/mysqlserver.sh" sql "$JOBQ_TEST_MYSQL_DIR" \
    -e "CREATE DATABASE $db; GRANT ALL ON $db.* TO 'jobq'@'127.0.0.1'" ||
    { fail "cannot create database $db"; return; }
  chaos --store mysql --url "${JOBQ_TEST_MYSQL_URL%/*}/$db" \
    --mysql-dir "$JOBQ_TEST_MYSQL_DIR"
}

run_cases
