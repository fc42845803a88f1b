#!/usr/bin/env bash
# pg_shape.sh - what a fenced, archived drain costs a PostgreSQL server per
# job, by the shape of its tables, and what jobq's own drain costs it.
# A throwaway server (tests/pgserver.sh) drains N rows four times, each
# time with C clients in batches of 100 using the archived protocol of
# `jobq bench --workload ceiling` (one transaction marks a batch of ready
# rows running under a token; a second deletes them where they carry it
# and moves them to an archive table), with pgbench on tables of three
# shapes, then with jobq:
#
#   narrow   an id, a state, a token and a payload, the ready rows indexed
#            by id; the archive an id, the payload, a result, the token
#            and a time, indexed by that time (the ceiling's tables)
#   wide     the columns of jobq_jobs and jobq_done (CREATE TABLE ... LIKE),
#            the ready rows indexed by id, the archive by its finish time;
#            the claim sets what jobq's claim sets
#   ordered  jobq_jobs and jobq_done with all their indexes (LIKE ...
#            INCLUDING ALL), claimed in jobq's order: one queue's ready
#            rows that are due, by priority, run time and id
#   jobq     the jobs put with `jobq put`, drained by C `jobq work
#            --persistent -c 1 --until-empty` foremen, one worker each
#
# For each: the rate, and the CPU time of every server process (the
# postmaster and its children, those that ended included) per job, over
# the drain and a VACUUM of the hot table after it.  CPU per job moves
# less from run to run than the rate does on a shared machine.
#
# usage: bench/pg_shape.sh [-n ROWS] [-c CLIENTS]
#   JOBQ_BUILD selects the build (default build).
set -euo pipefail

rows=200000 clients=4
while getopts n:c: opt; do
  case $opt in
    n) rows=$OPTARG ;;
    c) clients=$OPTARG ;;
    *) echo "usage: bench/pg_shape.sh [-n ROWS] [-c CLIENTS]" >&2; exit 2 ;;
  esac
done
[[ $rows =~ ^[1-9][0-9]*$ ]] || { echo "pg_shape.sh: invalid -n '$rows': expected a count of rows" >&2; exit 2; }
[[ $clients =~ ^[1-9][0-9]?$ ]] || { echo "pg_shape.sh: invalid -c '$clients': expected 1 to 99 clients" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JOBQ_BUILD:-build}
[[ $build = /* ]] || build=$root/$build
[[ -x $build/jobq ]] || { echo "pg_shape.sh: $build/jobq is missing: run make first" >&2; exit 1; }
command -v pgbench >/dev/null || { echo "pg_shape.sh: pgbench is missing (it comes with the Debian package postgresql)" >&2; exit 1; }
# One folder for the run: the server's cluster (made by pgserver.sh, which
# wants a path that does not exist yet, owned by the server's user when we
# are root: that user must be able to pass through) and the pgbench scripts.
work=$(mktemp -d)
chmod 711 "$work"
dir=$work/pg scripts=$work
trap '[[ -d $dir ]] && "$root/tests/pgserver.sh" stop "$dir"; rm -rf "$work"' EXIT

url=$("$root/tests/pgserver.sh" start "$dir")
sql() { psql "$url" -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
"$build/jobq" --db "$url" init >/dev/null

# Seconds of CPU the server has used: the postmaster with its ended
# children, and its live children.
server_cpu() {
  local pm
  pm=$(head -n 1 "$dir/data/postmaster.pid")
  # A process may end between the glob and its read: cat then fails.
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" -v hz="$(getconf CLK_TCK)" '{
    pid = $1; sub(/^.*\) /, ""); split($0, f, " ")
    if (pid == pm) t += f[12] + f[13] + f[14] + f[15]
    else if (f[2] == pm) t += f[12] + f[13]
  } END { printf "%.2f\n", t / hz }'
}

# measure NAME TABLE CMD...: runs CMD, then a VACUUM of TABLE, and prints
# the rate and the server's CPU per row; TABLE must be empty after CMD.
measure() {
  local name=$1 table=$2
  shift 2
  sql "VACUUM ANALYZE $table"
  sql "CHECKPOINT"
  sleep 1
  local c0 t0 t1 c1 left
  c0=$(server_cpu)
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  left=$(sql "SELECT count(*) FROM $table")
  [[ $left == 0 ]] || { echo "pg_shape.sh: $name: $left rows were left" >&2; exit 1; }
  sql "VACUUM $table"
  c1=$(server_cpu)
  awk -v name="$name" -v n="$rows" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" 'BEGIN {
    printf "%-8s %8.0f rows/s  %6.1f us of server CPU per row\n", name, n / (t1 - t0),
      (c1 - c0) * 1e6 / n }'
}

# pgbench_drain SCRIPT: the clients run SCRIPT until every row was taken.
pgbench_drain() {
  pgbench -n -M prepared -c "$clients" -j "$clients" \
    -t $((rows / (100 * clients) + 2)) -f "$1" "$url"
}

# narrow: the ceiling's tables.
sql "CREATE TABLE n_jobs (id bigserial PRIMARY KEY, state smallint NOT NULL DEFAULT 0,
       claim bigint, payload bytea NOT NULL);
     CREATE INDEX ON n_jobs(id) WHERE state = 0;
     CREATE TABLE n_done (id bigint PRIMARY KEY, payload bytea NOT NULL, result bytea,
       claim bigint NOT NULL, finished_at bigint NOT NULL);
     CREATE INDEX ON n_done(finished_at);
     INSERT INTO n_jobs(payload) SELECT 'x' FROM generate_series(1, $rows)"
cat >"$scripts/narrow.sql" <<'EOF'
\set token random(1, 9000000000000000000)
WITH c AS (UPDATE n_jobs SET state = 1, claim = :token WHERE id = ANY(ARRAY(SELECT id FROM n_jobs WHERE state = 0 ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)) RETURNING id) SELECT coalesce(array_agg(id), '{}') AS ids FROM c \gset
WITH d AS (DELETE FROM n_jobs WHERE id = ANY(:ids::bigint[]) AND claim = :token RETURNING id, payload, claim) INSERT INTO n_done SELECT id, payload, '', claim, floor(extract(epoch FROM statement_timestamp()) * 1000) FROM d;
EOF

# wide and ordered: jobq's own columns; ordered also its indexes and order.
for shape in wide ordered; do
  if [[ $shape == wide ]]; then
    sql "CREATE TABLE w_jobs (LIKE jobq_jobs INCLUDING DEFAULTS INCLUDING IDENTITY
           INCLUDING CONSTRAINTS, PRIMARY KEY (id));
         CREATE INDEX ON w_jobs(id) WHERE state = 'ready';
         CREATE TABLE w_done (LIKE jobq_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
           PRIMARY KEY (id));
         CREATE INDEX ON w_done(finished_at)"
    take="state = 'ready' ORDER BY id"
  else
    sql "CREATE TABLE o_jobs (LIKE jobq_jobs INCLUDING ALL);
         CREATE TABLE o_done (LIKE jobq_done INCLUDING ALL)"
    take="queue = 'q' AND state = 'ready' AND run_at <= floor(extract(epoch FROM statement_timestamp()) * 1000) ORDER BY priority DESC, run_at, id"
  fi
  p=${shape:0:1}
  sql "INSERT INTO ${p}_jobs(queue, run_at, state, payload, max_attempts, backoff_ms, created_at)
       SELECT 'q', 0, 'ready', 'x', 25, 1000, 0 FROM generate_series(1, $rows)"
  cols="id, queue, priority, run_at, order_key, barrier, unique_key, payload, attempts,
        max_attempts, timeout_ms, backoff_ms, session, claim, created_at, claimed_at, last_error,
        prev_lost"
  cat >"$scripts/$shape.sql" <<EOF
\\set token random(1, 9000000000000000000)
WITH c AS (UPDATE ${p}_jobs SET state = 'running', session = 'pg-shape-session-' || :client_id, started = 1, claim = :token || '-' || id, claimed_at = floor(extract(epoch FROM statement_timestamp()) * 1000), attempts = attempts + 1, cancel_requested = 0, deadline_at = NULL WHERE id = ANY(ARRAY(SELECT id FROM ${p}_jobs WHERE $take LIMIT 100 FOR UPDATE SKIP LOCKED)) RETURNING id, claim) SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(claim), '{}') AS claims FROM c \\gset
WITH a AS (SELECT * FROM unnest(:ids::bigint[], :claims::text[]) AS a(id, claim)), d AS (DELETE FROM ${p}_jobs j USING a WHERE j.id = a.id AND j.claim = a.claim AND j.session = 'pg-shape-session-' || :client_id RETURNING j.*) INSERT INTO ${p}_done($(tr -d '\n' <<<"$cols"), outcome, result, finished_at) SELECT $(tr -d '\n' <<<"$cols"), 'done', '', floor(extract(epoch FROM statement_timestamp()) * 1000) FROM d;
EOF
done

echo "$rows rows, $clients clients, batches of 100: the drain and a VACUUM of its table"
measure narrow n_jobs pgbench_drain "$scripts/narrow.sql"
measure wide w_jobs pgbench_drain "$scripts/wide.sql"
measure ordered o_jobs pgbench_drain "$scripts/ordered.sql"

awk -v n="$rows" 'BEGIN { for (i = 0; i < n; i++) print "{\"queue\":\"q\",\"payload\":\"x\"}" }' |
  "$build/jobq" --db "$url" put --ndjson - >/dev/null
jobq_drain() {
  local pids=() i
  for ((i = 0; i < clients; i++)); do
    "$build/jobq" --db "$url" work --persistent -c 1 --until-empty -q q \
      -- "$build/jobq" bench --internal-worker &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
}
measure jobq jobq_jobs jobq_drain
