/*
 * pg_schema.c - the PostgreSQL store's schema: the text of each version's
 * steps (tables, indexes, the jobq_put() SQL function), which lib/migrate.c
 * runs, and the transaction a migration runs in.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "store/pg.h"

/* ---------------------------------------------------------------- schema */

/* Enqueueing from SQL: docs/sql.md.  The same decisions and named locks
 * as the library's put (lib/put.c, lib/order.c).  Its search_path is the
 * one the schema's migration runs with (pg_migrate: the schema, then
 * pg_temp), so that it finds jobq's tables whatever its caller's path.
 * Each argument out of range is named with what was given and what is
 * expected, as the library names them (lib/validate.c). */
#define PUT_FUNCTION                                                           \
  "FUNCTION jobq_put(queue text, payload bytea,"                               \
  "  priority integer DEFAULT 0, delay_ms bigint DEFAULT 0,"                   \
  "  order_key text DEFAULT NULL, barrier boolean DEFAULT false,"              \
  "  unique_key text DEFAULT NULL, max_attempts integer DEFAULT 25,"           \
  "  timeout_ms bigint DEFAULT 0, backoff_ms bigint DEFAULT 1000)"             \
  " RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$\n"    \
  "#variable_conflict use_column\n"                                            \
  "DECLARE\n"                                                                  \
  "  now_ms bigint := floor(extract(epoch FROM statement_timestamp()) * 1000);\n" \
  "  new_id bigint;\n"                                                         \
  "  must_wait boolean;\n"                                                     \
  "  nparts integer;\n"                                                         \
  "  part_no integer;\n"                                                        \
  "  h bigint;\n"                                                               \
  "  kb bytea;\n"                                                               \
  "  bad text;\n"                                                              \
  "BEGIN\n"                                                                    \
  "  IF queue IS NULL OR queue !~ '^[a-z0-9][a-z0-9_.-]{0,62}$' THEN\n"        \
  "    RAISE EXCEPTION 'invalid queue name ''%'': expected 1 to 63 characters of a-z, 0-9, _, ., -', queue\n" \
  "      USING ERRCODE = '22023';\n"                                           \
  "  END IF;\n"                                                                \
  "  IF payload IS NULL THEN payload := ''::bytea; END IF;\n"                  \
  "  bad := CASE\n"                                                            \
  "    WHEN priority IS NULL OR priority NOT BETWEEN -32768 AND 32767 THEN\n"  \
  "      format('priority => %s: expected -32768 to 32767', coalesce(priority::text, 'NULL'))\n" \
  /* The one range of times (JOBQ_DURATION_MAX_MS in jobq.h). */              \
  "    WHEN delay_ms IS NULL OR delay_ms NOT BETWEEN 0 AND 3153600000000 THEN\n" \
  "      format('delay_ms => %s: expected 0 to 3153600000000 milliseconds (100 years)', coalesce(delay_ms::text, 'NULL'))\n" \
  "    WHEN max_attempts IS NULL OR max_attempts NOT BETWEEN 1 AND 1000 THEN\n" \
  "      format('max_attempts => %s: expected 1 to 1000', coalesce(max_attempts::text, 'NULL'))\n" \
  "    WHEN timeout_ms IS NULL OR timeout_ms NOT BETWEEN 0 AND 3153600000000 THEN\n" \
  "      format('timeout_ms => %s: expected 0 (none) to 3153600000000 milliseconds (100 years)', coalesce(timeout_ms::text, 'NULL'))\n" \
  "    WHEN backoff_ms IS NULL OR backoff_ms NOT BETWEEN 0 AND 3600000 THEN\n" \
  "      format('backoff_ms => %s: expected 0 to 3600000', coalesce(backoff_ms::text, 'NULL'))\n" \
  "    WHEN barrier IS NULL THEN 'barrier => NULL: expected true or false'\n"  \
  "    WHEN barrier AND order_key IS NOT NULL THEN\n"                          \
  "      'barrier => true with an order_key: expected one or the other'\n"     \
  "    WHEN octet_length(order_key) NOT BETWEEN 1 AND 255 THEN\n"              \
  "      format('order_key of %s bytes: expected 1 to 255', octet_length(order_key))\n" \
  "    WHEN octet_length(unique_key) NOT BETWEEN 1 AND 255 THEN\n"             \
  "      format('unique_key of %s bytes: expected 1 to 255', octet_length(unique_key))\n" \
  "  END;\n"                                                                   \
  "  IF bad IS NOT NULL THEN\n"                                                \
  "    RAISE EXCEPTION 'invalid jobq_put argument %', bad USING ERRCODE = '22023';\n" \
  "  END IF;\n"                                                                \
  "  IF unique_key IS NOT NULL THEN\n"                                         \
  "    SELECT j.id INTO new_id FROM jobq_jobs j WHERE j.queue = jobq_put.queue\n" \
  "      AND j.unique_key = jobq_put.unique_key;\n"                            \
  "    IF FOUND THEN RETURN new_id; END IF;\n"                                 \
  "  END IF;\n"                                                                \
  "  INSERT INTO jobq_queues(name, created_at) VALUES (queue, now_ms) ON CONFLICT DO NOTHING;\n" \
  "  IF barrier THEN\n"                                                        \
  "    PERFORM pg_advisory_xact_lock(hashtextextended('q:' || queue, 0));\n"   \
  /* As the library's look (lib/sql.c, JOBQ_Q_ANY_BEFORE). */                  \
  "    must_wait := EXISTS (SELECT 1 FROM (SELECT j.id FROM jobq_jobs j\n"     \
  "      WHERE (j.queue, j.id) > (jobq_put.queue, 0)\n"                        \
  "        AND (j.queue, j.id) < (jobq_put.queue, 9223372036854775807) AND j.session IS NULL\n" \
  "      ORDER BY j.queue, j.id LIMIT 1) f)\n"                                 \
  "      OR EXISTS (SELECT 1 FROM (SELECT j.id FROM jobq_jobs j WHERE j.session IS NOT NULL\n" \
  "        AND j.queue = jobq_put.queue ORDER BY j.session LIMIT 1) r);\n"     \
  "  ELSE\n"                                                                   \
  "    PERFORM pg_advisory_xact_lock_shared(hashtextextended('q:' || queue, 0));\n" \
  "    must_wait := EXISTS (SELECT 1 FROM jobq_jobs j WHERE j.queue = jobq_put.queue AND j.barrier = 1);\n" \
  "  END IF;\n"                                                                \
  /* A key of a queue with a limit per key does not order (lib/limit.c). */ \
  "  IF order_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jobq_queues l\n"   \
  "      WHERE l.name = jobq_put.queue AND l.max_per_key IS NOT NULL) THEN\n"   \
  "    PERFORM pg_advisory_xact_lock(hashtextextended('k:' || queue || '/' || order_key, 0));\n" \
  "    must_wait := must_wait\n"                                               \
  /* As the library's look (JOBQ_Q_KEY_TAKEN). */                              \
  "      OR EXISTS (SELECT 1 FROM (SELECT 1 FROM jobq_jobs j WHERE j.queue = jobq_put.queue\n" \
  "        AND j.order_key >= jobq_put.order_key AND j.order_key <= jobq_put.order_key\n" \
  "        ORDER BY j.order_key, j.state, j.id LIMIT 1) f)\n"                  \
  "      OR EXISTS (SELECT 1 FROM jobq_blocked b WHERE b.queue = jobq_put.queue AND b.order_key = jobq_put.order_key);\n" \
  "  END IF;\n"                                                                \
  /* The job's part (lib/part.c): FNV-1a of its key, as jobq_part_of(). */ \
  "  SELECT q.parts INTO nparts FROM jobq_queues q WHERE q.name = jobq_put.queue;\n" \
  "  IF nparts > 1 AND order_key IS NULL THEN\n"                               \
  "    part_no := floor(random() * nparts);\n"                                 \
  "  ELSIF nparts > 1 THEN\n"                                                  \
  "    h := 2166136261;\n"                                                     \
  "    kb := convert_to(order_key, 'UTF8');\n"                                 \
  "    FOR i IN 0 .. length(kb) - 1 LOOP\n"                                    \
  "      h := ((h # get_byte(kb, i)) * 16777619) % 4294967296;\n"              \
  "    END LOOP;\n"                                                            \
  "    part_no := h % nparts;\n"                                               \
  "  END IF;\n"                                                                \
  "  INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n" \
  "                        max_attempts, timeout_ms, backoff_ms, created_at, part)\n" \
  "    VALUES (queue, priority, now_ms + delay_ms, CASE WHEN must_wait THEN 'waiting' ELSE 'ready' END,\n" \
  "            order_key, CASE WHEN barrier THEN 1 ELSE 0 END, unique_key, payload, max_attempts,\n" \
  "            timeout_ms, backoff_ms, now_ms, part_no)\n"                     \
  "    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING\n" \
  "    RETURNING id INTO new_id;\n"                                            \
  "  IF new_id IS NULL THEN\n"                                                 \
  "    SELECT j.id INTO new_id FROM jobq_jobs j WHERE j.queue = jobq_put.queue\n" \
  "      AND j.unique_key = jobq_put.unique_key;\n"                            \
  "    RETURN new_id;\n"                                                       \
  "  END IF;\n"                                                                \
  /* Delayed too: an idle worker then asks when it comes due. */            \
  "  IF NOT must_wait THEN PERFORM pg_notify('jobq', queue); END IF;\n"      \
  "  RETURN new_id;\n"                                                         \
  "END\n"                                                                      \
  "$fn$"

/* version 1 */
static const jobq_step v1_steps[] = {{"CREATE TABLE jobq_queues ("
    "  name text COLLATE \"C\" PRIMARY KEY,"
    "  paused smallint NOT NULL DEFAULT 0,"
    "  key_policy text NOT NULL DEFAULT 'block' CHECK (key_policy IN ('block','skip')),"
    "  created_at bigint NOT NULL);"
    "CREATE TABLE jobq_counts ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  shard smallint NOT NULL,"
    "  n_done bigint NOT NULL DEFAULT 0,"
    "  n_dead bigint NOT NULL DEFAULT 0,"
    "  n_cancelled bigint NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (queue, shard));"
    "CREATE TABLE jobq_sessions ("
    "  id text COLLATE \"C\" PRIMARY KEY,"
    "  epoch bigint NOT NULL,"
    "  name text NOT NULL,"
    "  host text NOT NULL,"
    "  pid bigint NOT NULL,"
    "  started_at bigint NOT NULL,"
    "  heartbeat_at bigint NOT NULL,"
    "  expires_at bigint NOT NULL,"
    "  lease_ms bigint NOT NULL,"
    "  in_flight bigint NOT NULL DEFAULT 0,"
    "  done bigint NOT NULL DEFAULT 0,"
    "  failed bigint NOT NULL DEFAULT 0);"
    "CREATE INDEX jobq_sessions_expires ON jobq_sessions(expires_at);"
    /* The hot table churns (every job is inserted, updated and deleted):
     * vacuum it early and often, so that it and its indexes stay small.
     * Vacuum does not cut its empty pages off: statements are planned
     * once per connection, and a plan made while the table had no pages
     * would scan the whole table for every job once it filled (a scan of
     * no pages costs nothing, so it beats every index). */
    "CREATE TABLE jobq_jobs ("
    "  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  queue text COLLATE \"C\" NOT NULL,"
    "  priority integer NOT NULL DEFAULT 0,"
    "  run_at bigint NOT NULL,"
    "  state text COLLATE \"C\" NOT NULL CHECK (state IN ('ready','running','waiting')),"
    "  order_key text COLLATE \"C\","
    "  barrier smallint NOT NULL DEFAULT 0,"
    "  unique_key text COLLATE \"C\","
    "  payload bytea NOT NULL,"
    "  attempts integer NOT NULL DEFAULT 0,"
    "  max_attempts integer NOT NULL,"
    "  timeout_ms bigint NOT NULL DEFAULT 0,"
    "  backoff_ms bigint NOT NULL,"
    "  session text COLLATE \"C\","
    "  claim text COLLATE \"C\","
    "  claimed_at bigint,"
    "  deadline_at bigint,"
    "  created_at bigint NOT NULL,"
    "  last_error text,"
    "  cancel_requested smallint NOT NULL DEFAULT 0,"
    "  prev_lost smallint NOT NULL DEFAULT 0,"
    "  started smallint NOT NULL DEFAULT 1"
    ") WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,"
    "  autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.05,"
    "  autovacuum_vacuum_cost_delay = 0, vacuum_truncate = false);"
    /* The claim index: exactly the claim query's WHERE and ORDER BY. */
    "CREATE INDEX jobq_jobs_claim ON jobq_jobs(queue, priority DESC, run_at, id)"
    "  WHERE state = 'ready';"
    "CREATE INDEX jobq_jobs_session ON jobq_jobs(session) WHERE session IS NOT NULL;"
    "CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, order_key, state, id)"
    "  WHERE order_key IS NOT NULL;"
    "CREATE INDEX jobq_jobs_barrier ON jobq_jobs(queue, id) WHERE barrier = 1;"
    /* Without the claimed jobs: a claim, an UPDATE that cannot be HOT,
     * writes an entry into every index whose condition its new row meets,
     * and claimed jobs are found through the session's index instead
     * (JOBQ_Q_ANY_BEFORE). */
    "CREATE INDEX jobq_jobs_queue ON jobq_jobs(queue, id) WHERE session IS NULL;"
    "CREATE UNIQUE INDEX jobq_jobs_unique ON jobq_jobs(queue, unique_key)"
    "  WHERE unique_key IS NOT NULL;"
    "CREATE TABLE jobq_done ("
    "  id bigint PRIMARY KEY,"
    "  queue text COLLATE \"C\" NOT NULL,"
    "  priority integer NOT NULL,"
    "  run_at bigint NOT NULL,"
    "  outcome text COLLATE \"C\" NOT NULL CHECK (outcome IN ('done','dead','cancelled')),"
    "  order_key text COLLATE \"C\","
    "  barrier smallint NOT NULL,"
    "  unique_key text COLLATE \"C\","
    "  payload bytea NOT NULL,"
    "  result bytea,"
    "  attempts integer NOT NULL,"
    "  max_attempts integer NOT NULL,"
    "  timeout_ms bigint NOT NULL,"
    "  backoff_ms bigint NOT NULL,"
    "  session text COLLATE \"C\","
    "  claim text COLLATE \"C\","
    "  created_at bigint NOT NULL,"
    "  claimed_at bigint,"
    "  finished_at bigint NOT NULL,"
    "  last_error text,"
    "  prev_lost smallint NOT NULL DEFAULT 0);"
    "CREATE INDEX jobq_done_finished ON jobq_done(finished_at);"
    "CREATE INDEX jobq_done_outcome ON jobq_done(outcome, queue, id) WHERE outcome <> 'done';"
    "CREATE TABLE jobq_blocked ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  order_key text COLLATE \"C\" NOT NULL,"
    "  job_id bigint NOT NULL,"
    "  PRIMARY KEY (queue, order_key)) WITH (vacuum_truncate = false);"
    "CREATE INDEX jobq_blocked_job ON jobq_blocked(job_id);"
    "CREATE " PUT_FUNCTION ";", NULL}, {NULL, NULL}};

/* version 2: the sessions' figures per minute (lib/tally.c) and the
     * attempts that ended without finishing their job. */
static const jobq_step v2_steps[] = {{"CREATE TABLE jobq_tally ("
    "  at_minute bigint NOT NULL,"
    "  session text NOT NULL,"
    "  queue text NOT NULL,"
    "  claimed bigint NOT NULL DEFAULT 0,"
    "  empty_claims bigint NOT NULL DEFAULT 0,"
    "  done bigint NOT NULL DEFAULT 0,"
    "  failed bigint NOT NULL DEFAULT 0,"
    "  retried bigint NOT NULL DEFAULT 0,"
    "  dead bigint NOT NULL DEFAULT 0,"
    "  cancelled bigint NOT NULL DEFAULT 0,"
    "  wait_ms bigint NOT NULL DEFAULT 0,"
    "  w0 bigint NOT NULL DEFAULT 0,"
    "  w1 bigint NOT NULL DEFAULT 0,"
    "  w2 bigint NOT NULL DEFAULT 0,"
    "  w3 bigint NOT NULL DEFAULT 0,"
    "  w4 bigint NOT NULL DEFAULT 0,"
    "  w5 bigint NOT NULL DEFAULT 0,"
    "  w6 bigint NOT NULL DEFAULT 0,"
    "  w7 bigint NOT NULL DEFAULT 0,"
    "  w8 bigint NOT NULL DEFAULT 0,"
    "  w9 bigint NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (at_minute, session, queue)"
    ");"
    "CREATE TABLE jobq_attempts ("
    "  id bigserial PRIMARY KEY,"
    "  job_id bigint NOT NULL,"
    "  attempt INTEGER NOT NULL,"
    "  outcome text NOT NULL,"
    "  error TEXT,"
    "  session text,"
    "  host text,"
    "  claimed_at bigint,"
    "  ended_at bigint NOT NULL"
    ");"
    "CREATE INDEX jobq_attempts_job ON jobq_attempts(job_id);"
    "CREATE INDEX jobq_attempts_ended ON jobq_attempts(ended_at);", NULL}, {NULL, NULL}};

/* version 3: the checks that no writer may pass, whatever its rights:
     * a running job has a session, and times are in the one range of
     * jobq.h.  NOT VALID: they hold for every row written from now on,
     * without reading the rows there are.  The SQL put checks its delay
     * and timeout the same way (version 4). */
static const jobq_step v3_steps[] = {{"ALTER TABLE jobq_jobs"
    "  ADD CONSTRAINT jobq_jobs_claimed CHECK (state <> 'running' OR session IS NOT NULL)"
    "    NOT VALID,"
    "  ADD CONSTRAINT jobq_jobs_times CHECK (run_at BETWEEN 0 AND 253402300799999"
    "    AND timeout_ms BETWEEN 0 AND 3153600000000) NOT VALID;", NULL}, {NULL, NULL}};

/* version 4: the stall guard's look (lib/session.c), the horizon of
     * pruned jobs (lib/mark.c), and jobq_put() with its own search_path,
     * its argument messages and the one range of times. */
static const jobq_step v4_steps[] = {{"ALTER TABLE jobq_meta ADD COLUMN guard_at bigint NOT NULL DEFAULT 0,"
    "  ADD COLUMN pruned_before bigint NOT NULL DEFAULT 0;"
    "CREATE OR REPLACE " PUT_FUNCTION ";", NULL}, {NULL, NULL}};

/* version 5: the schedules of periodic jobs (lib/cron.c). */
static const jobq_step v5_steps[] = {{"CREATE TABLE jobq_cron ("
    "  name text COLLATE \"C\" PRIMARY KEY,"
    "  queue text COLLATE \"C\" NOT NULL,"
    "  spec text NOT NULL,"
    "  tz text NOT NULL,"
    "  payload bytea NOT NULL,"
    "  priority integer NOT NULL,"
    "  order_key text COLLATE \"C\","
    "  barrier smallint NOT NULL,"
    "  unique_key text COLLATE \"C\","
    "  max_attempts integer NOT NULL,"
    "  timeout_ms bigint NOT NULL,"
    "  backoff_ms bigint NOT NULL,"
    "  skip_missed smallint NOT NULL,"
    "  paused smallint NOT NULL,"
    "  next_at bigint NOT NULL,"
    "  last_at bigint,"
    "  last_error text,"
    "  created_at bigint NOT NULL,"
    "  updated_at bigint NOT NULL);"
    "CREATE INDEX jobq_cron_next ON jobq_cron(next_at);", NULL}, {NULL, NULL}};

/* version 6: the queues' limits and the claims of the last rate period
 * (lib/limit.c). */
static const jobq_step v6_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN max_running bigint,"
    "  ADD COLUMN max_per_key bigint, ADD COLUMN rate_n bigint, ADD COLUMN rate_ms bigint;"
    "CREATE TABLE jobq_starts ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  at bigint NOT NULL,"
    "  n bigint NOT NULL,"
    "  PRIMARY KEY (queue, at));"
    /* A key of a queue with a limit per key does not order its jobs. */
    "CREATE OR REPLACE " PUT_FUNCTION ";", NULL}, {NULL, NULL}};

/* version 7: the finished-job counters by session (lib/counts.c): a
     * session adds to rows of its own, so that no two sessions wait on
     * one row; '' is the rows of writers without a session.  The key
     * leads with the session, which its end folds away.  And jobq_put()
     * wakes workers for delayed jobs too. */
static const jobq_step v7_steps[] = {{"ALTER TABLE jobq_counts"
    "  ADD COLUMN session text COLLATE \"C\" NOT NULL DEFAULT '',"
    "  DROP CONSTRAINT jobq_counts_pkey,"
    "  ADD PRIMARY KEY (session, queue, shard);"
    "CREATE OR REPLACE " PUT_FUNCTION ";", NULL}, {NULL, NULL}};

/* version 8: dependencies (lib/after.c): the state 'pending' of a job
 * put after others, with the number of its parents not yet done and
 * whether others were put after it, and the edges between them. */
static const jobq_step v8_steps[] = {{"ALTER TABLE jobq_jobs"
    "  DROP CONSTRAINT jobq_jobs_state_check,"
    "  ADD CONSTRAINT jobq_jobs_state_check"
    "    CHECK (state IN ('ready','running','waiting','pending')),"
    "  ADD COLUMN parents_left integer NOT NULL DEFAULT 0,"
    "  ADD COLUMN children smallint NOT NULL DEFAULT 0;"
    "CREATE TABLE jobq_after ("
    "  parent bigint NOT NULL,"
    "  child bigint NOT NULL,"
    "  any_outcome smallint NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (parent, child));"
    "CREATE INDEX jobq_after_child ON jobq_after(child, parent);",
    /* Unless it was made already (a schema set back to an older version
     * by hand). */
    "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND table_name = 'jobq_jobs' AND column_name = 'parents_left'"}, {NULL, NULL}};

/* version 9: parts (lib/part.c): a queue's count of parts, a job's part
 * (NULL while its queue has one), the parts' owners and the sessions
 * that claim from each partitioned queue.  The claim index of parts
 * holds only the jobs of partitioned queues. */
static const jobq_step v9_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN parts integer NOT NULL DEFAULT 1;"
    "ALTER TABLE jobq_jobs ADD COLUMN part integer;"
    "CREATE INDEX jobq_jobs_part ON jobq_jobs(queue, part, priority DESC, run_at, id)"
    "  WHERE state = 'ready' AND part IS NOT NULL;"
    "CREATE TABLE jobq_parts ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  part integer NOT NULL,"
    "  session text COLLATE \"C\","
    "  since bigint NOT NULL,"
    "  PRIMARY KEY (queue, part));"
    "CREATE INDEX jobq_parts_session ON jobq_parts(session) WHERE session IS NOT NULL;"
    "CREATE TABLE jobq_claimers ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  session text COLLATE \"C\" NOT NULL,"
    "  since bigint NOT NULL,"
    "  PRIMARY KEY (queue, session));"
    "CREATE INDEX jobq_claimers_session ON jobq_claimers(session);"
    /* jobq_put() puts a job in its part. */
    "CREATE OR REPLACE " PUT_FUNCTION ";",
    "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND table_name = 'jobq_jobs' AND column_name = 'part'"}, {NULL, NULL}};

/* version 10: the rate limit per ordering key and the claims of each
 * key in the last period (lib/limit.c). */
static const jobq_step v10_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN key_rate_n bigint,"
    "  ADD COLUMN key_rate_ms bigint;"
    "CREATE TABLE jobq_key_starts ("
    "  queue text COLLATE \"C\" NOT NULL,"
    "  order_key text COLLATE \"C\" NOT NULL,"
    "  at bigint NOT NULL,"
    "  n bigint NOT NULL,"
    "  PRIMARY KEY (queue, order_key, at));"
    "CREATE INDEX jobq_key_starts_at ON jobq_key_starts(queue, at);",
    "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND table_name = 'jobq_queues' AND column_name = 'key_rate_n'"}, {NULL, NULL}};

static const jobq_step meta_steps[] = {{"CREATE TABLE jobq_meta ("
                                        "  id integer PRIMARY KEY CHECK (id = 1),"
                                        "  version integer NOT NULL,"
                                        "  queue_id text NOT NULL,"
                                        "  epoch bigint NOT NULL,"
                                        "  created_at bigint NOT NULL)",
                                        NULL},
                                       {NULL, NULL}};
/* The steps of lib/migrate.c, a version a step, in the migration's one
 * transaction. */
const jobq_step *const pg_versions[JOBQ_SCHEMA_VERSION + 1] = {meta_steps, v1_steps, v2_steps, v3_steps, v4_steps,
                                          v5_steps, v6_steps, v7_steps, v8_steps, v9_steps,
                                          v10_steps};
_Static_assert(sizeof pg_versions / sizeof pg_versions[0] == JOBQ_SCHEMA_VERSION + 1,
               "one migration per version");

/* ---------------------------------------------------------------- schema */

/* A migration is one transaction, one initialiser at a time (the others
 * then find it done), with the schema made if it is not public.  Its
 * search_path is the schema and then pg_temp, which would be searched
 * first if it were not named: the one that jobq_put() keeps (SET
 * search_path FROM CURRENT). */
int pg_schema_begin(jobq *db) {
  pg *c = pg_conn(db);
  int rc = pg_run_begin(db, "initialising the schema");
  if (rc == JOBQ_OK)
    rc = pg_run_plain(db, "SELECT pg_advisory_xact_lock(7236982757301234)",
                   "initialising the schema");
  const char *values[1] = {c->schema};
  if (rc == JOBQ_OK && strcmp(c->schema, "public") != 0) {
    PGresult *res = PQexecParams(
        c->conn, "SELECT format('CREATE SCHEMA IF NOT EXISTS %I', $1::text)", 1, NULL,
        values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
      rc = pg_fail(db, res, "creating the schema");
    else /* the identifier was checked at open and quoted by format() */
      rc = pg_run_plain(db, PQgetvalue(res, 0, 0), "creating the schema");
    PQclear(res);
  }
  if (rc == JOBQ_OK) {
    PGresult *res = PQexecParams(
        c->conn, "SELECT set_config('search_path', format('%I, pg_temp', $1::text), true)", 1,
        NULL, values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) rc = pg_fail(db, res, "initialising the schema");
    PQclear(res);
  }
  if (rc != JOBQ_OK) PQclear(PQexec(c->conn, "ROLLBACK"));
  return rc;
}

int pg_schema_end(jobq *db, int ok) {
  if (ok) return pg_run_plain(db, "COMMIT", "initialising the schema");
  PQclear(PQexec(pg_conn(db)->conn, "ROLLBACK"));
  return JOBQ_OK;
}

int pg_schema_run(jobq *db, const char *sql, int64_t *first) {
  PGresult *res = PQexec(pg_conn(db)->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
               ? JOBQ_OK
               : pg_fail(db, res, "migrating the schema");
  if (rc == JOBQ_OK && first != NULL)
    *first = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  PQclear(res);
  return rc;
}
