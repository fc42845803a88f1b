/*
 * postgres.c - the PostgreSQL store: one database shared by workers on
 * many machines.
 *
 * Transactions are READ COMMITTED, the engine's default: every statement
 * sees what committed before it began, which the named locks of
 * lib/order.c rely on (a statement after a lock sees the work of whoever
 * held it).  A claim is one statement: per queue, the oldest ready jobs by
 * the claim index, locked with FOR UPDATE SKIP LOCKED so that claimers
 * never wait for each other, and marked running in the same statement.
 * The database clock is statement_timestamp(), so a statement that waited
 * for a lock still decides with the time it runs at.  Named locks are
 * transaction-scoped advisory locks, named by hashtextextended() of the
 * lock's name, so that the jobq_put() SQL function takes the same ones.
 *
 * Batches of plain jobs (no ordering key, no barrier, no unique key) are
 * put with one INSERT from arrays, and completed with one statement that
 * moves them to the archive; everything else goes through the common
 * logic, statement by statement.  Arrays travel in binary.
 *
 * Every value is bound.  Statements are prepared once per connection and
 * results come back in binary.  A wake-up is a NOTIFY on channel "jobq"
 * whose payload is a queue name, sent once per committed transaction that
 * made work ready; the watcher LISTENs on a second connection of its own.
 *
 * libpq reads the URL (PQconninfoParse: URLs, Unix socket folders, its
 * keyword/value form), and the store keeps every parameter, jobq's own
 * options taken out, for each connection it makes: the work connection
 * when a transaction finds it broken, the LISTEN connection when a look
 * for wake-ups finds it gone, and a vacuum's.  It tries the URL's hosts
 * one after the other, each for at most connect_timeout, with the
 * server's messages in libpq's verbose form: their SQLSTATE tells a
 * refusal that lasts (JOBQ_EDENIED) from a failure that may pass.
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

#include "internal.h"
#include "store/libpq.h"

/* Type oids of the results and arrays this store reads and sends. */
enum {
  OID_BOOL = 16,
  OID_BYTEA = 17,
  OID_INT8 = 20,
  OID_INT2 = 21,
  OID_INT4 = 23,
  OID_TEXT = 25,
  OID_TID = 27
};

#define PG_MIN_VERSION 130000

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
  "  IF order_key IS NOT NULL THEN\n"                                          \
  "    PERFORM pg_advisory_xact_lock(hashtextextended('k:' || queue || '/' || order_key, 0));\n" \
  "    must_wait := must_wait\n"                                               \
  /* As the library's look (JOBQ_Q_KEY_TAKEN). */                              \
  "      OR EXISTS (SELECT 1 FROM (SELECT 1 FROM jobq_jobs j WHERE j.queue = jobq_put.queue\n" \
  "        AND j.order_key >= jobq_put.order_key AND j.order_key <= jobq_put.order_key\n" \
  "        ORDER BY j.order_key, j.state, j.id LIMIT 1) f)\n"                  \
  "      OR EXISTS (SELECT 1 FROM jobq_blocked b WHERE b.queue = jobq_put.queue AND b.order_key = jobq_put.order_key);\n" \
  "  END IF;\n"                                                                \
  "  INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n" \
  "                        max_attempts, timeout_ms, backoff_ms, created_at)\n" \
  "    VALUES (queue, priority, now_ms + delay_ms, CASE WHEN must_wait THEN 'waiting' ELSE 'ready' END,\n" \
  "            order_key, CASE WHEN barrier THEN 1 ELSE 0 END, unique_key, payload, max_attempts,\n" \
  "            timeout_ms, backoff_ms, now_ms)\n"                              \
  "    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING\n" \
  "    RETURNING id INTO new_id;\n"                                            \
  "  IF new_id IS NULL THEN\n"                                                 \
  "    SELECT j.id INTO new_id FROM jobq_jobs j WHERE j.queue = jobq_put.queue\n" \
  "      AND j.unique_key = jobq_put.unique_key;\n"                            \
  "    RETURN new_id;\n"                                                       \
  "  END IF;\n"                                                                \
  "  IF NOT must_wait AND delay_ms = 0 THEN PERFORM pg_notify('jobq', queue); END IF;\n" \
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
static const jobq_step *const versions[] = {meta_steps, v1_steps, v2_steps, v3_steps, v4_steps,
                                          v5_steps};
_Static_assert(sizeof versions / sizeof versions[0] == JOBQ_SCHEMA_VERSION + 1,
               "one migration per version");

/* ---------------------------------------------------------------- statements */

/* The key of the vacuums' lock (refresh_stats), the same on every
 * connection to this schema. */
#define VACUUM_LOCK_KEY "hashtextextended('v:' || 'jobq_jobs'::regclass::oid::text, 0)"

/* This store's own statements, numbered after lib/sql.h's. */
enum {
  PG_LOCK_SHARED = JOBQ_STMT_COUNT,
  PG_LOCK,
  PG_LOCKS,
  PG_NOTIFY,
  PG_TABLE_STATS,
  PG__END
};

static const char *const own_sql[] = {
    [PG_LOCK_SHARED - JOBQ_STMT_COUNT] =
        "SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))",
    [PG_LOCK - JOBQ_STMT_COUNT] = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
    /* The locks named $1, exclusive where $2 says 1, in that order. */
    [PG_LOCKS - JOBQ_STMT_COUNT] =
        "SELECT CASE WHEN x.e = 1 THEN pg_advisory_xact_lock(hashtextextended(x.name, 0)) "
        "ELSE pg_advisory_xact_lock_shared(hashtextextended(x.name, 0)) END FROM (SELECT "
        "u.name, u.e FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS u(name, e, n) "
        "ORDER BY u.n) x",
    [PG_NOTIFY - JOBQ_STMT_COUNT] =
        "SELECT pg_notify('jobq', q) FROM unnest($1::text[]) q",
    /* A row when this role may analyze and vacuum the hot table (see
     * refresh_stats): whether the planner's count of its rows is under a
     * tenth of what the statistics collector counts live, or of $1 jobs
     * that the last claim took (there is no count: -1, a table never
     * vacuumed nor analyzed, as after jobq init); with $2 > 0 (this
     * handle may start a vacuum), whether it has 20000 dead rows or more,
     * no vacuum at work and the vacuums' lock was free, now held by this
     * connection (vacuum_unlock); and the planner's count. */
    [PG_TABLE_STATS - JOBQ_STMT_COUNT] =
        "SELECT (s.n_live_tup >= 200 AND c.reltuples * 10 < s.n_live_tup) OR "
        "($1 > 0 AND c.reltuples * 10 < $1), CASE WHEN $2 > 0 AND s.n_dead_tup >= "
        "20000 AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum v WHERE "
        "v.relid = c.oid) THEN pg_try_advisory_lock(" VACUUM_LOCK_KEY ") ELSE false END, "
        "c.reltuples::bigint FROM pg_class c JOIN pg_stat_user_tables s ON "
        "s.relid = c.oid WHERE c.oid = 'jobq_jobs'::regclass AND "
        "pg_has_role(c.relowner, 'MEMBER')",
};

/* What each statement does, for messages. */
static const char *stmt_what(int id) {
  switch (id) {
    case PG_LOCK_SHARED:
    case PG_LOCK: return "taking a queue's lock";
    case PG_LOCKS: return "taking the locks";
    case PG_NOTIFY: return "sending wake-ups";
    case PG_TABLE_STATS: return "reading the job table's statistics";
    default: return jobq__sql_what(id);
  }
}

/* ---------------------------------------------------------------- state */

/* A growing list of distinct queue names. */
typedef struct names {
  char **v;
  size_t n, cap;
} names;

#define MAX_PARAMS 24 /* the most a statement binds: JOBQ_Q_BLOCK_8 */
#define MAX_LATER 8

/* A statement whose result no one reads, held until the next statement
 * whose result is read (or the commit) so that both go in one round trip:
 * a queue's lock, the queues of a put made sure of, the held-back starts.
 * Or a put's INSERT, whose ids are read when that round trip comes back
 * (ids).  Its values are copied. */
typedef struct later {
  int id, n;
  char *copy;                    /* the values, one after the other */
  const char *values[MAX_PARAMS];
  int lengths[MAX_PARAMS], formats[MAX_PARAMS];
  int late;                      /* it may go with the commit */
  int64_t *ids;                  /* where the rows' first column goes, or NULL */
  size_t nids;
} later;

typedef struct pg {
  PGconn *conn;
  const char *redacted;        /* the URL for messages (db's) */
  /* The libpq parameters of every connection, kept for reconnecting:
   * what the URL gave but jobq's own options, each string owned. */
  char **pkeys, **pvals;
  int nparams;
  int64_t connect_timeout_s;   /* per host (connect_to); 0: none */
  /* Wake-ups (pg_watch): an epoll set, the caller's descriptor for as
   * long as the handle lives, holding the socket of the LISTEN
   * connection while there is one; a lost one is opened again by
   * pg_changed, no sooner than listen_retry_ms. */
  int watch_fd;
  PGconn *listener;
  int listen_failures;
  int64_t listen_retry_ms;     /* monotonic */
  char listen_why[JOBQ_ERRMSG_MAX]; /* why the last attempt failed */
  /* The hosts to try in turn (connect_to): the URL's host, hostaddr and
   * port lists (NULL when not given; nhosts 0: libpq's default), one
   * port for all or one for each. */
  char **host, **hostaddr, **port;
  int nhosts, nports;
  char *schema;
  int notify;                  /* send NOTIFY when work becomes ready */
  int64_t statement_timeout_ms;
  unsigned char prepared[PG__END];
  unsigned char params[PG__END]; /* of each prepared statement: its highest $N */
  int64_t changes;
  names wake;                  /* queues with work made ready in this transaction */
  int lazy;                    /* the transaction is the library's own */
  int begin_pending;           /* a lazy BEGIN, sent with the first statement */
  later later[MAX_LATER];      /* statements sent with the next one (lazy only) */
  int nlater;
  int64_t stats_checked_ms;    /* monotonic, when refresh_stats last looked */
  int64_t reltuples;           /* the planner's count of the hot table's rows then
                                  (INT64_MAX: this handle analyzed it since) */
  int64_t full_claim;          /* the jobs the last claim took if it took all it
                                  asked for, else 0 */
  PGconn *vacuum;              /* a vacuum of the hot table at work, or NULL */
  int64_t vacuum_started_ms;   /* monotonic, when this handle last began one */
  int64_t vacuum_next_ms;      /* monotonic, none begins before (vacuum_reap) */
  int vacuum_wanted;           /* one starts when the transaction has ended */
  int vacuum_lock;             /* this connection holds the vacuums' lock */
  int commit_with;             /* the next statement goes with the COMMIT (jobq_how ends) */
  int committed;               /* it did: the transaction is over */
} pg;

struct jobq_rows {
  PGresult *res;
  int row, nrows;
};

static pg *conn(jobq *db) { return db->conn; }

static void names_clear(names *n) {
  for (size_t i = 0; i < n->n; i++) free(n->v[i]);
  n->n = 0;
}

/* Adds s unless the list has it: 0, or -1 when out of memory. */
static int names_add(names *n, const char *s) {
  for (size_t i = 0; i < n->n; i++)
    if (strcmp(n->v[i], s) == 0) return 0;
  if (n->n == n->cap) {
    size_t cap = n->cap ? n->cap * 2 : 8;
    char **v = realloc(n->v, cap * sizeof *v);
    if (v == NULL) return -1;
    n->v = v;
    n->cap = cap;
  }
  char *c = strdup(s);
  if (c == NULL) return -1;
  n->v[n->n++] = c;
  return 0;
}

/* ---------------------------------------------------------------- errors */

/* The first line of libpq's message. */
static const char *first_line(const char *msg, char *buf, size_t len) {
  if (msg == NULL || *msg == '\0') return "no message";
  size_t n = strcspn(msg, "\n");
  snprintf(buf, len, "%.*s", (int)n, msg);
  return buf;
}

/* The start of the names of the roles of pg_roles(): jobq_, or
 * jobq_SCHEMA_ for a schema of its own. */
static const char *role_prefix(const pg *c, char *buf, size_t len) {
  if (strcmp(c->schema, "public") == 0)
    snprintf(buf, len, "jobq_");
  else
    snprintf(buf, len, "jobq_%s_", c->schema);
  return buf;
}

/* Records a failed statement (res may be NULL: a connection failure) as
 * a jobq error, with retry set where running the whole transaction again
 * may succeed. */
static int pg_fail(jobq *db, PGresult *res, const char *what) {
  pg *c = conn(db);
  char line[400];
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = first_line(res ? PQresultErrorMessage(res) : PQerrorMessage(c->conn),
                               line, sizeof line);
  if (PQstatus(c->conn) != CONNECTION_OK || state == NULL ||
      strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)
    return jobq__fail(db, JOBQ_ECONN, "%s: lost the connection to '%s': %s", what,
                      c->redacted, msg);
  if (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0) {
    db->retry = 1;
    return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
  }
  if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
    return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
  if (strcmp(state, "25006") == 0)
    return jobq__fail(db, JOBQ_EREADONLY, "%s: '%s' is read-only: %s", what, c->redacted,
                      msg);
  if (strcmp(state, "42501") == 0) {
    /* Permission denied, or a row the role's policy does not take. */
    char prefix[80];
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    return jobq__denied(db, what, primary ? primary : msg,
                        role_prefix(c, prefix, sizeof prefix));
  }
  if (strcmp(state, "53100") == 0)
    return jobq__fail(db, JOBQ_EDB, "%s: the disk of '%s' is full: %s", what, c->redacted,
                      msg);
  if (strcmp(state, "53300") == 0)
    return jobq__fail(db, JOBQ_ECONN, "%s: '%s' has too many connections: %s", what,
                      c->redacted, msg);
  /* The statements this connection prepared are gone, or another's are
   * there: the server connection changed hands. */
  if (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0)
    return jobq__fail(db, JOBQ_EDB,
                      "%s: %s: the server connection is shared with other clients, as "
                      "behind a pooler in transaction mode; jobq needs a connection of its "
                      "own (a pooler in session mode)",
                      what, msg);
  return jobq__fail(db, JOBQ_EDB, "%s: %s (SQLSTATE %s)", what, msg, state);
}

/* Runs SQL without parameters (transaction control, settings). */
static int run_plain(jobq *db, const char *sql, const char *what) {
  PGresult *res = PQexec(conn(db)->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? JOBQ_OK : pg_fail(db, res, what);
  PQclear(res);
  return rc;
}

/* ---------------------------------------------------------------- binary arrays */

/* A one-dimensional array in PostgreSQL's binary format. */
typedef struct array {
  char *p;
  size_t len, cap;
  int failed;
} array;

static void arr_put(array *a, const void *p, size_t n) {
  if (a->failed) return;
  if (a->len + n > a->cap) {
    size_t cap = (a->len + n) * 2 + 64;
    char *q = realloc(a->p, cap);
    if (q == NULL) {
      a->failed = 1;
      return;
    }
    a->p = q;
    a->cap = cap;
  }
  memcpy(a->p + a->len, p, n);
  a->len += n;
}

static void arr_i32(array *a, int32_t v) {
  uint32_t be = htobe32((uint32_t)v);
  arr_put(a, &be, 4);
}

static void arr_begin(array *a, uint32_t oid, size_t n) {
  memset(a, 0, sizeof *a);
  arr_i32(a, 1);           /* dimensions */
  arr_i32(a, 0);           /* no NULLs */
  arr_i32(a, (int32_t)oid);
  arr_i32(a, (int32_t)n);  /* length */
  arr_i32(a, 1);           /* lower bound */
}

static void arr_int8(array *a, int64_t v) {
  uint64_t be = htobe64((uint64_t)v);
  arr_i32(a, 8);
  arr_put(a, &be, 8);
}

static void arr_bytes(array *a, const void *p, size_t n) {
  arr_i32(a, (int32_t)n);
  if (n > 0) arr_put(a, p, n);
}

/* A NULL element (the header's flag is a hint the server need not have). */
static void arr_null(array *a) { arr_i32(a, -1); }

static jobq_val arr_val(const array *a) { return (jobq_val){.type = 'a', .p = a->p, .len = a->len}; }

/* A column of a set statement (V_COL, lib/sql.h) as an array of its
 * kind: bigint, text, bytea or tid. */
static void arr_column(array *a, const jobq_val *col) {
  const jobq_val *v = col->p;
  uint32_t oid = col->i == 'i' ? OID_INT8 : col->i == 'b' ? OID_BYTEA : col->i == 'r' ? OID_TID
                                                                                      : OID_TEXT;
  arr_begin(a, oid, col->len);
  for (size_t i = 0; i < col->len; i++) {
    if (v[i].type == 'n')
      arr_null(a);
    else if (v[i].type == 'i')
      arr_int8(a, v[i].i);
    else
      arr_bytes(a, v[i].p, v[i].len);
  }
}

/* ---------------------------------------------------------------- executor */

/* The name statement id is prepared under. */
static const char *stmt_name(char buf[16], int id) {
  snprintf(buf, 16, "jobq%d", id);
  return buf;
}

static int prepare(jobq *db, int id) {
  pg *c = conn(db);
  if (c->prepared[id]) return JOBQ_OK;
  char *text = id < JOBQ_STMT_COUNT
                   ? jobq__sql_text(JOBQ_DIALECT_PG, id, NULL, NULL)
                   : jobq__sql_spell(JOBQ_DIALECT_PG, own_sql[id - JOBQ_STMT_COUNT], NULL, NULL);
  if (text == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  char name[16];
  PGresult *res = PQprepare(c->conn, stmt_name(name, id), text, 0, NULL);
  int most = 0;
  for (const char *p = text; (p = strchr(p, '$')) != NULL;) {
    char *end;
    long k = strtol(++p, &end, 10);
    if (end != p && k > most) most = (int)k;
  }
  c->params[id] = (unsigned char)most;
  free(text);
  int rc = JOBQ_OK;
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    char what[64];
    snprintf(what, sizeof what, "preparing the statement for %s", stmt_what(id));
    rc = pg_fail(db, res, what);
  } else {
    c->prepared[id] = 1;
  }
  PQclear(res);
  return rc;
}

static int begin_now(jobq *db);

/* One statement to send: prepared statement id with its values, or, with
 * id -1, sql without parameters. */
typedef struct sendable {
  int id;
  const char *sql;
  int n;
  const char *const *values;
  const int *lengths, *formats;
} sendable;

/* The store's own statements held like the library's deferred ones: the
 * locks, and the wake-ups, which go with the commit. */
static const jobq_how held = {.defer = 1}, with_commit = {.defer = 1, .late = 1};

static void later_clear(pg *c) {
  for (int i = 0; i < c->nlater; i++) free(c->later[i].copy);
  c->nlater = 0;
}

/* Holds statement id with its values for the next round trip; 0 when it
 * cannot wait (the list is full, or out of memory) and must run now. */
static int later_add(pg *c, int id, int n, const char *const *values, const int *lengths,
                     const int *formats, const jobq_how *how) {
  if (c->nlater == MAX_LATER) return 0;
  size_t size = 0;
  for (int i = 0; i < n; i++) size += values[i] ? (size_t)lengths[i] + 1 : 0;
  later *l = &c->later[c->nlater];
  l->copy = malloc(size ? size : 1);
  if (l->copy == NULL) return 0;
  l->id = id;
  l->n = n;
  l->late = how->late;
  l->ids = how->ids;
  l->nids = how->nids;
  char *p = l->copy;
  for (int i = 0; i < n; i++) {
    l->lengths[i] = lengths[i];
    l->formats[i] = formats[i];
    l->values[i] = NULL;
    if (values[i] == NULL) continue;
    /* Text values are read up to their NUL: it is copied too. */
    memcpy(p, values[i], (size_t)lengths[i]);
    p[lengths[i]] = '\0';
    l->values[i] = p;
    p += lengths[i] + 1;
  }
  c->nlater++;
  return 1;
}

static int send_one(PGconn *pc, const sendable *q) {
  char name[16];
  return q->id >= 0 ? PQsendQueryPrepared(pc, stmt_name(name, q->id), q->n, q->values,
                                          q->lengths, q->formats, 1)
                    : PQsendQueryParams(pc, q->sql, 0, NULL, NULL, NULL, NULL, 0);
}

static PGresult *exec_one(PGconn *pc, const sendable *q) {
  char name[16];
  return q->id >= 0 ? PQexecPrepared(pc, stmt_name(name, q->id), q->n, q->values, q->lengths,
                                     q->formats, 1)
                    : PQexec(pc, q->sql);
}

/* Reads the results of one statement of a pipeline up to its end (NULL):
 * the first, the others cleared. */
static PGresult *pipeline_result(PGconn *pc) {
  PGresult *first = NULL, *r;
  while ((r = PQgetResult(pc)) != NULL) {
    if (first == NULL)
      first = r;
    else
      PQclear(r);
  }
  return first;
}

/* The n statements of q in one round trip (libpq's pipeline mode): res[i]
 * gets the result of q[i], NULL when it could not be sent.  A statement
 * after one that failed does not run (PGRES_PIPELINE_ABORTED). */
static void pipeline(pg *c, const sendable *q, size_t n, PGresult **res) {
  PGconn *pc = c->conn;
  for (size_t i = 0; i < n; i++) res[i] = NULL;
  if (!PQenterPipelineMode(pc)) return;
  size_t sent = 0;
  while (sent < n && send_one(pc, &q[sent])) sent++;
  if (sent == n && PQpipelineSync(pc)) {
    for (size_t i = 0; i < n; i++) res[i] = pipeline_result(pc);
    PQclear(PQgetResult(pc)); /* PGRES_PIPELINE_SYNC */
  }
  PQexitPipelineMode(pc);
}

static int result_ok(const PGresult *res) {
  ExecStatusType st = PQresultStatus(res);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

static int reconnect(jobq *db);

/* Nothing of a lazy transaction reached the server, and its connection
 * turned out broken: it is made again, and the transaction fails, to be
 * run again from its start by the library (db->retry), so that the
 * checks the library makes on a connection made again (lib/mark.c,
 * lib/session.c) come before its statements.  The failure is reported
 * when the connection cannot be made. */
static int restart(jobq *db) {
  pg *c = conn(db);
  c->begin_pending = 0;
  later_clear(c);
  int rc = reconnect(db);
  if (rc != JOBQ_OK) return rc;
  db->retry = 1;
  return jobq__fail(db, JOBQ_ECONN,
                    "the connection to '%s' was broken and is made again: run the "
                    "transaction again",
                    c->redacted);
}

static int64_t pg_col_int(jobq_rows *r, int col);

static int int64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The ids an INSERT of nids jobs returned, into ids in the order of the
 * jobs: the rows come back in no promised order, and the ids were given
 * in the order of the rows inserted, which is the jobs'. */
static int insert_ids(jobq *db, PGresult *res, int64_t *ids, size_t nids) {
  jobq_rows r = {res, 0, PQntuples(res)};
  if ((size_t)r.nrows != nids)
    return jobq__fail(db, JOBQ_EDB, "putting %zu jobs returned %d ids", nids, r.nrows);
  for (; r.row < r.nrows; r.row++) ids[r.row] = pg_col_int(&r, 0);
  qsort(ids, nids, sizeof *ids, int64_cmp);
  return JOBQ_OK;
}

static const char *sent_what(const sendable *q) {
  if (q->id >= 0) return stmt_what(q->id);
  return strcmp(q->sql, "COMMIT") == 0 ? "committing" : "starting a transaction";
}

/* Runs q, after what waits to be sent (a lazy BEGIN, the statements held
 * for later), all in one round trip.  With commit_with, what is held for
 * the commit goes after q, then COMMIT (committed tells that it went
 * through).  *res gets q's result, which may be an error; the failure of
 * a statement sent before it is returned, with its message (*res NULL),
 * as is one after it.  A BEGIN that found the connection broken did
 * nothing: the transaction runs again on a connection made again
 * (restart). */
static int exec_pending(jobq *db, const sendable *q, PGresult **res) {
  pg *c = conn(db);
  *res = NULL;
  if (!c->begin_pending && c->nlater == 0 && !c->commit_with) {
    *res = exec_one(c->conn, q);
    return JOBQ_OK;
  }
  sendable all[MAX_LATER + 3];
  PGresult *got[MAX_LATER + 3];
  size_t k = 0;
  int begin = c->begin_pending;
  c->begin_pending = 0;
  if (begin) all[k++] = (sendable){.id = -1, .sql = "BEGIN"};
  int before = c->nlater;
  /* What may go with the commit (the counters, lib/counts.c, and the
   * wake-ups) is held last: after the claim that ends the transaction. */
  while (c->commit_with && before > 0 && c->later[before - 1].late) before--;
  const size_t at = (size_t)(begin + before);
  for (int i = 0; i < c->nlater; i++) {
    const later *l = &c->later[i];
    if (i == before) all[k++] = *q;
    all[k++] = (sendable){l->id, NULL, l->n, l->values, l->lengths, l->formats};
  }
  if (before == c->nlater) all[k++] = *q;
  if (c->commit_with) all[k++] = (sendable){.id = -1, .sql = "COMMIT"};
  pipeline(c, all, k, got);
  if (begin && !result_ok(got[0]) && (got[0] == NULL || PQstatus(c->conn) != CONNECTION_OK)) {
    for (size_t i = 0; i < k; i++) PQclear(got[i]);
    return restart(db);
  }
  /* The first failure is what went wrong; what came after it did not
   * run.  q's own is for the caller. */
  int rc = JOBQ_OK;
  for (size_t i = 0; i < k && rc == JOBQ_OK; i++)
    if (i != at && (i < at || result_ok(got[at])) && !result_ok(got[i]))
      rc = pg_fail(db, got[i], sent_what(&all[i]));
  for (int j = 0; j < before && rc == JOBQ_OK; j++)
    if (c->later[j].ids != NULL)
      rc = insert_ids(db, got[j + begin], c->later[j].ids, c->later[j].nids);
  /* A COMMIT that ended a failed transaction says ROLLBACK. */
  if (rc == JOBQ_OK && c->commit_with && result_ok(got[at])) {
    c->committed = strcmp(PQcmdStatus(got[k - 1]), "COMMIT") == 0;
    if (!c->committed)
      rc = jobq__fail(db, JOBQ_EDB, "committing: the server rolled the transaction back");
  }
  for (size_t j = 0; j < k; j++)
    if (j != at) PQclear(got[j]);
  if (rc == JOBQ_OK)
    *res = got[at];
  else
    PQclear(got[at]);
  later_clear(c);
  return rc;
}

/* Runs SQL without parameters after what waits to be sent. */
static int run_after(jobq *db, const char *sql, const char *what) {
  const sendable q = {.id = -1, .sql = sql};
  PGresult *res;
  int rc = exec_pending(db, &q, &res);
  if (rc == JOBQ_OK && !result_ok(res)) rc = pg_fail(db, res, what);
  PQclear(res);
  return rc;
}

/* Runs statement id with a, or holds it for the next round trip, when how
 * allows and the transaction is the library's own (lazy): a statement
 * whose result is not read, or an INSERT whose ids may come with the
 * commit's round trip (insert_ids).  In a caller's transaction, every
 * statement runs at once. */
static int refresh_stats(jobq *db, int64_t rows, int may_vacuum);
static int notify_later(jobq *db);

static int pg_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how) {
  pg *c = conn(db);
  /* The planner's statistics looked at before a claim (refresh_stats),
   * and before a put in a transaction of the library's own. */
  int rc = JOBQ_OK;
  if (how != NULL && how->claim > 0)
    rc = refresh_stats(db, c->full_claim, 1);
  else if (how != NULL && how->adds && c->lazy)
    rc = refresh_stats(db, 0, 0);
  if (rc != JOBQ_OK) return rc;
  if (n > MAX_PARAMS) return jobq__fail(db, JOBQ_EINVAL, "too many parameters");
  rc = prepare(db, id);
  /* Nothing was done yet in a lazy transaction: it runs again on a
   * connection made again. */
  if (rc == JOBQ_ECONN && c->begin_pending && PQstatus(c->conn) != CONNECTION_OK)
    rc = restart(db);
  if (rc != JOBQ_OK) return rc;
  /* A set statement may leave a value of its other dialects unused. */
  if (n > c->params[id]) n = c->params[id];
  const char *values[MAX_PARAMS];
  int lengths[MAX_PARAMS], formats[MAX_PARAMS];
  char ints[MAX_PARAMS][24];
  array cols[MAX_PARAMS];
  size_t ncols = 0;
  for (size_t i = 0; i < n; i++) {
    lengths[i] = (int)a[i].len;
    formats[i] = 1;
    switch (a[i].type) {
      case 'i':
        /* In text, so that the server reads it as whatever integer type
         * the statement wants. */
        lengths[i] = snprintf(ints[i], sizeof ints[i], "%lld", (long long)a[i].i);
        values[i] = ints[i];
        formats[i] = 0;
        break;
      case 'n': values[i] = NULL; break;
      case 'c':
        arr_column(&cols[ncols], &a[i]);
        values[i] = cols[ncols].p;
        lengths[i] = (int)cols[ncols].len;
        if (cols[ncols++].failed) rc = JOBQ_ENOMEM;
        break;
      default: values[i] = a[i].p; break; /* text, bytes, arrays */
    }
  }
  if (rc != JOBQ_OK) {
    for (size_t i = 0; i < ncols; i++) free(cols[i].p);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  if (rows == NULL && c->lazy && how != NULL && how->defer &&
      later_add(c, id, (int)n, values, lengths, formats, how)) {
    for (size_t i = 0; i < ncols; i++) free(cols[i].p);
    return JOBQ_OK;
  }
  /* The claim, the last statement of the library's own transaction:
   * the counters, the wake-ups and the COMMIT go after it in its round
   * trip (exec_pending). */
  int fused = how != NULL && how->ends && c->lazy;
  if (fused) rc = notify_later(db);
  c->commit_with = fused && rc == JOBQ_OK;
  PGresult *res = NULL;
  const sendable q = {id, NULL, (int)n, values, lengths, formats};
  if (rc == JOBQ_OK) rc = exec_pending(db, &q, &res);
  c->commit_with = 0;
  /* Committed; or the connection broke with the COMMIT on its way
   * (after the BEGIN went through: then nothing was sent). */
  if (fused) db->txn_committed = c->committed ? 1 : rc == JOBQ_ECONN && !db->retry ? -1 : 0;
  for (size_t i = 0; i < ncols; i++) free(cols[i].p);
  if (rc != JOBQ_OK) return rc;
  if (!result_ok(res)) {
    rc = pg_fail(db, res, stmt_what(id));
    PQclear(res);
    return rc;
  }
  const char *t = PQcmdTuples(res);
  c->changes = t && *t ? strtoll(t, NULL, 10) : 0;
  if (how != NULL && how->claim > 0)
    c->full_claim = (size_t)PQntuples(res) == how->claim ? PQntuples(res) : 0;
  if (rows == NULL) {
    rc = how != NULL && how->ids != NULL ? insert_ids(db, res, how->ids, how->nids) : JOBQ_OK;
    PQclear(res);
    return rc;
  }
  jobq_rows *r = malloc(sizeof *r);
  if (r == NULL) {
    PQclear(res);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *r = (jobq_rows){res, -1, PQntuples(res)};
  *rows = r;
  return JOBQ_OK;
}

static int pg_next(jobq *db, jobq_rows *r) {
  (void)db;
  if (r->row + 1 >= r->nrows) return 0;
  r->row++;
  return 1;
}

static void pg_done(jobq *db, jobq_rows *r) {
  (void)db;
  PQclear(r->res);
  free(r);
}

static int pg_is_null(jobq_rows *r, int col) { return PQgetisnull(r->res, r->row, col); }

static int64_t pg_col_int(jobq_rows *r, int col) {
  if (PQgetisnull(r->res, r->row, col)) return 0;
  const char *p = PQgetvalue(r->res, r->row, col);
  uint64_t v8;
  uint32_t v4;
  uint16_t v2;
  switch (PQftype(r->res, col)) {
    case OID_INT8: memcpy(&v8, p, 8); return (int64_t)be64toh(v8);
    case OID_INT4: memcpy(&v4, p, 4); return (int32_t)be32toh(v4);
    case OID_INT2: memcpy(&v2, p, 2); return (int16_t)be16toh(v2);
    case OID_BOOL: return p[0] != 0;
    default: return strtoll(p, NULL, 10);
  }
}

static const void *pg_col_bytes(jobq_rows *r, int col, size_t *len) {
  *len = (size_t)PQgetlength(r->res, r->row, col);
  return PQgetvalue(r->res, r->row, col); /* libpq adds a NUL */
}

static int64_t pg_changes(jobq *db) { return conn(db)->changes; }

/* Every INSERT of the library's returns its ids as rows (RETURNING). */
static int64_t pg_insert_id(jobq *db) {
  (void)db;
  return 0;
}

/* ---------------------------------------------------------------- connection */

/* jobq's own options; every other option is libpq's (PQconninfoParse
 * knows them all), passed on as it is. */
static const char *const own_options[] = {"schema", "notify", "statement_timeout",
                                          "max_payload", NULL};

/* libpq's numeric options, checked here so that a bad one is a bad URL
 * rather than a connection that fails: seconds (passed on as a number)
 * or integers. */
static const struct {
  const char *key;
  int seconds;
  int64_t min, max;
} numeric_options[] = {
    {"connect_timeout", 1, 0, 86400},   {"keepalives", 0, 0, 1},
    {"keepalives_idle", 1, 0, 86400},   {"keepalives_interval", 1, 0, 86400},
    {"keepalives_count", 0, 0, 1000},   {"tcp_user_timeout", 0, 0, 86400000},
};

/* What jobq sets where the URL does not: TCP keepalives and a limit on
 * unacknowledged data, so that a connection to a server that went away
 * without a word (a network cut, a machine powered off) is found broken
 * within about half a minute, and made again, instead of when the
 * kernel gives up on it (two hours for an idle LISTEN connection). */
static const char *const tcp_defaults[][2] = {
    {"keepalives_idle", "10"}, {"keepalives_interval", "5"}, {"keepalives_count", "3"},
    {"tcp_user_timeout", "30000"}};

static int is_own_option(const char *k) {
  for (int i = 0; own_options[i]; i++)
    if (strcmp(k, own_options[i]) == 0) return 1;
  return 0;
}

static const char *param(const pg *c, const char *key) {
  for (int i = 0; i < c->nparams; i++)
    if (strcmp(c->pkeys[i], key) == 0) return c->pvals[i];
  return NULL;
}

/* Sets libpq parameter key to value (both copied), in place of an
 * earlier value: JOBQ_OK or JOBQ_ENOMEM. */
static int param_set(pg *c, const char *key, const char *value) {
  char *v = strdup(value);
  if (v == NULL) return JOBQ_ENOMEM;
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], key) == 0) {
      free(c->pvals[i]);
      c->pvals[i] = v;
      return JOBQ_OK;
    }
  }
  char *k = strdup(key);
  char **ks = k ? realloc(c->pkeys, (size_t)(c->nparams + 1) * sizeof *ks) : NULL;
  if (ks != NULL) c->pkeys = ks;
  char **vs = ks ? realloc(c->pvals, (size_t)(c->nparams + 1) * sizeof *vs) : NULL;
  if (vs == NULL) {
    free(k);
    free(v);
    return JOBQ_ENOMEM;
  }
  c->pvals = vs;
  c->pkeys[c->nparams] = k;
  c->pvals[c->nparams] = v;
  c->nparams++;
  return JOBQ_OK;
}

/* Takes key out of the parameters: its value, for the caller to free
 * (NULL when it was not there). */
static char *param_take(pg *c, const char *key) {
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], key) == 0) {
      char *v = c->pvals[i];
      free(c->pkeys[i]);
      c->nparams--;
      c->pkeys[i] = c->pkeys[c->nparams];
      c->pvals[i] = c->pvals[c->nparams];
      return v;
    }
  }
  return NULL;
}

static void wipe(char *s) {
  if (s != NULL) memset(s, 0, strlen(s));
}

/* Frees a NULL-terminated array of strings (NULL: nothing). */
static void strings_free(char **v) {
  for (size_t i = 0; v != NULL && v[i] != NULL; i++) free(v[i]);
  free(v);
}

/* Splits a comma-separated list into *n strings, NULL-terminated (an
 * absent list: none, and *out NULL). */
static int split_list(const char *list, char ***out, int *n) {
  *out = NULL;
  *n = 0;
  if (list == NULL) return JOBQ_OK;
  int count = 1;
  for (const char *p = list; *p; p++) count += *p == ',';
  char **v = calloc((size_t)count + 1, sizeof *v);
  if (v == NULL) return JOBQ_ENOMEM;
  const char *p = list;
  for (int i = 0; i < count; i++) {
    size_t len = strcspn(p, ",");
    if ((v[i] = strndup(p, len)) == NULL) {
      strings_free(v);
      return JOBQ_ENOMEM;
    }
    p += len + (p[len] == ',');
  }
  *out = v;
  *n = count;
  return JOBQ_OK;
}

/* Checks an identifier of ours: [a-z_][a-z0-9_]{0,62}. */
static int identifier_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63 || !(islower((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
      return 0;
  return 1;
}

/* jobq's own option k = v. */
static int own_option(jobq *db, const char *k, const char *v) {
  pg *c = conn(db);
  if (strcmp(k, "schema") == 0) {
    if (!identifier_ok(v))
      return jobq__fail(db, JOBQ_EURL,
                        "invalid schema '%s' in the database url: expected 1 to 63 "
                        "characters of a-z, 0-9 and '_', not starting with a digit",
                        v);
    free(c->schema);
    if ((c->schema = strdup(v)) == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  } else if (strcmp(k, "notify") == 0) {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
      return jobq__fail(db, JOBQ_EURL,
                        "invalid notify '%s' in the database url: expected on or off", v);
    c->notify = strcmp(v, "on") == 0;
  } else if (strcmp(k, "statement_timeout") == 0) {
    if (jobq_parse_duration(v, &c->statement_timeout_ms) != JOBQ_OK ||
        c->statement_timeout_ms < 1 || c->statement_timeout_ms > 86400000LL)
      return jobq__fail(db, JOBQ_EURL,
                        "invalid statement_timeout '%s' in the database url: expected a "
                        "duration from 1ms to 1d, like 30s",
                        v);
  }
  return JOBQ_OK; /* max_payload is the library's */
}

/* libpq's option k = v, checked where a bad value would only show when
 * connecting; *value is what to pass on (v, or a number in place of a
 * duration, in buf). */
static int libpq_option(jobq *db, const char *k, const char *v, char *buf, size_t len,
                        const char **value) {
  *value = v;
  if (strcmp(k, "replication") == 0)
    return jobq__fail(db, JOBQ_EURL,
                      "option 'replication' in the database url: jobq needs an ordinary "
                      "connection, not a replication one");
  if (strcmp(k, "sslmode") == 0 && strcmp(v, "disable") != 0 && strcmp(v, "allow") != 0 &&
      strcmp(v, "prefer") != 0 && strcmp(v, "require") != 0 && strcmp(v, "verify-ca") != 0 &&
      strcmp(v, "verify-full") != 0)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid sslmode '%s' in the database url: expected disable, allow, "
                      "prefer, require, verify-ca or verify-full",
                      v);
  /* jobq refuses a standby: only the sessions that may be a primary. */
  if (strcmp(k, "target_session_attrs") == 0 && strcmp(v, "any") != 0 &&
      strcmp(v, "read-write") != 0 && strcmp(v, "primary") != 0)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid target_session_attrs '%s' in the database url: expected "
                      "read-write, primary or any (jobq needs a primary)",
                      v);
  for (size_t i = 0; i < sizeof numeric_options / sizeof numeric_options[0]; i++) {
    if (strcmp(k, numeric_options[i].key) != 0) continue;
    int64_t n;
    int rc = numeric_options[i].seconds
                 ? jobq__url_seconds(db, k, v, numeric_options[i].min, numeric_options[i].max, &n)
                 : jobq__url_int(db, k, v, numeric_options[i].min, numeric_options[i].max, &n);
    if (rc != JOBQ_OK) return rc;
    snprintf(buf, len, "%lld", (long long)n);
    *value = buf;
  }
  return JOBQ_OK;
}

/* PQconninfoParse could not read the URL: its message, which quotes the
 * URL it was given, with the URL redacted. */
static int libpq_refused(jobq *db, const jobq_url *u, const char *err) {
  char line[400], shown[400];
  first_line(err, line, sizeof line);
  char *red = u->base ? jobq_url_redact(u->base) : NULL;
  const char *hit = u->base && *u->base ? strstr(line, u->base) : NULL;
  if (hit != NULL && red != NULL)
    snprintf(shown, sizeof shown, "%.*s%s%s", (int)(hit - line), line, red,
             hit + strlen(u->base));
  else
    snprintf(shown, sizeof shown, "%s", line);
  free(red);
  if (u->password != NULL && *u->password != '\0' && strstr(shown, u->password) != NULL)
    snprintf(shown, sizeof shown, "libpq cannot read it");
  return jobq__fail(db, JOBQ_EURL, "invalid database url '%s': %s", conn(db)->redacted, shown);
}

/* The hosts to try in turn, from the host, hostaddr and port lists. */
static int split_hosts(jobq *db) {
  pg *c = conn(db);
  char *host = param_take(c, "host"), *addr = param_take(c, "hostaddr");
  char *port = param_take(c, "port");
  int nh, na, rc = split_list(host, &c->host, &nh);
  if (rc == JOBQ_OK) rc = split_list(addr, &c->hostaddr, &na);
  if (rc == JOBQ_OK) rc = split_list(port, &c->port, &c->nports);
  free(host);
  free(addr);
  free(port);
  if (rc != JOBQ_OK) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  c->nhosts = nh > na ? nh : na;
  if (nh > 0 && na > 0 && nh != na)
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' gives %d host addresses for %d hosts: expected "
                      "one per host",
                      c->redacted, na, nh);
  if (c->nports > 1 && c->nports != c->nhosts)
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' gives %d ports for %d hosts: expected one port, "
                      "or one per host",
                      c->redacted, c->nports, c->nhosts);
  for (int i = 0; i < c->nports; i++) {
    int64_t n;
    if (c->port[i][0] != '\0' && jobq__url_int(db, "port", c->port[i], 1, 65535, &n) != JOBQ_OK)
      return JOBQ_EURL;
  }
  return JOBQ_OK;
}

/* The connection parameters: what libpq reads from the URL, then its
 * options, jobq's own taken out and checked. */
static int pg_params(jobq *db, const jobq_url *u) {
  pg *c = conn(db);
  char *err = NULL;
  PQconninfoOption *opts = PQconninfoParse(u->conninfo ? "" : u->base, &err);
  if (opts == NULL) {
    int rc = err ? libpq_refused(db, u, err) : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    PQfreemem(err);
    return rc;
  }
  int rc = JOBQ_OK;
  for (PQconninfoOption *o = opts; o->keyword != NULL && rc == JOBQ_OK; o++)
    if (o->val != NULL && param_set(c, o->keyword, o->val) != JOBQ_OK)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < u->nopts && rc == JOBQ_OK; i++) {
    const char *k = u->keys[i], *v = u->values[i];
    const PQconninfoOption *o = opts;
    while (o->keyword != NULL && strcmp(o->keyword, k) != 0) o++;
    char buf[32];
    const char *value;
    if (is_own_option(k))
      rc = own_option(db, k, v);
    else if (o->keyword == NULL)
      rc = jobq__fail(db, JOBQ_EURL,
                      "unknown option '%s' in the database url: expected schema, notify, "
                      "statement_timeout, max_payload, or a libpq connection option such as "
                      "sslmode, host or connect_timeout",
                      k);
    else if ((rc = libpq_option(db, k, v, buf, sizeof buf, &value)) == JOBQ_OK &&
             param_set(c, k, value) != JOBQ_OK)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    if (rc == JOBQ_EURL && jobq__url_after_secret(u, i))
      rc = jobq__fail(db, JOBQ_EURL,
                      "invalid database url '%s': an option after the password is unknown "
                      "or has a bad value (write '&' in a password as %%26)",
                      c->redacted);
  }
  PQconninfoFree(opts);
  if (rc != JOBQ_OK) return rc;
  const char *t = param(c, "connect_timeout"); /* checked above: a number */
  if (t != NULL) c->connect_timeout_s = strtoll(t, NULL, 10);
  if (param(c, "application_name") == NULL && param_set(c, "application_name", "jobq") != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < sizeof tcp_defaults / sizeof tcp_defaults[0]; i++)
    if (param(c, tcp_defaults[i][0]) == NULL &&
        param_set(c, tcp_defaults[i][0], tcp_defaults[i][1]) != JOBQ_OK)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (c->schema == NULL && (c->schema = strdup("public")) == NULL)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  return split_hosts(db);
}

/* The SQLSTATE in a message of libpq's verbose form ("FATAL:  28P01:
 * password ..."), copied into state; the line it is on, or NULL. */
static const char *sqlstate_of(const char *msg, char state[6], const char **code) {
  for (const char *p = msg; (p = strstr(p, ":  ")) != NULL; p++) {
    const char *s = p + 3;
    if (strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 5 && s[5] == ':' && s[6] == ' ') {
      memcpy(state, s, 5);
      state[5] = '\0';
      *code = s;
      const char *line = p;
      while (line > msg && line[-1] != '\n') line--;
      return line;
    }
  }
  return NULL;
}

/* Refusals that will not heal by trying again: a password or a role
 * that is wrong, a database that does not exist, a missing privilege. */
static int denied_state(const char *state) {
  return strncmp(state, "28", 2) == 0 || strcmp(state, "3D000") == 0 ||
         strcmp(state, "42501") == 0;
}

/* The server's notices and warnings (an analyze skipped because a vacuum
 * holds the table) are not errors; the library prints nothing. */
static void ignore_notice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* One attempt at the host that keys and values name, for at most the
 * URL's connect_timeout (at least 2 s, as libpq's own).  The server's
 * messages come in libpq's verbose form, whose SQLSTATE tells a refusal
 * for good from one that may pass.  NULL on failure, with *code
 * (JOBQ_EDENIED or JOBQ_ECONN) and msg. */
static PGconn *try_host(pg *c, const char *const *keys, const char *const *values, int *code,
                        char *msg, size_t len) {
  PGconn *pc = PQconnectStartParams(keys, values, 0);
  if (pc == NULL) {
    *code = JOBQ_ENOMEM;
    snprintf(msg, len, "out of memory");
    return NULL;
  }
  PQsetErrorVerbosity(pc, PQERRORS_VERBOSE);
  int64_t limit = c->connect_timeout_s <= 0 ? -1
                  : c->connect_timeout_s < 2 ? 2000
                                             : c->connect_timeout_s * 1000;
  int64_t deadline = limit > 0 ? jobq__mono_ms() + limit : -1;
  PostgresPollingStatusType st =
      PQstatus(pc) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  int timed_out = 0, poll_errno = 0;
  while (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) {
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - jobq__mono_ms();
      if (left <= 0) {
        timed_out = 1;
        break;
      }
      wait = left > INT_MAX ? INT_MAX : (int)left;
    }
    struct pollfd p = {PQsocket(pc), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
    int r = poll(&p, 1, wait);
    if (r < 0 && errno != EINTR) {
      poll_errno = errno;
      break;
    }
    if (r > 0) st = PQconnectPoll(pc);
  }
  if (st == PGRES_POLLING_OK) {
    PQsetErrorVerbosity(pc, PQERRORS_DEFAULT);
    return pc;
  }
  const char *all = PQerrorMessage(pc), *at = NULL;
  char state[6] = "";
  const char *line = sqlstate_of(all, state, &at);
  if (line == NULL) line = all;
  size_t n = strcspn(line, "\n");
  /* The line, without the SQLSTATE the verbose form added. */
  if (at != NULL && at < line + n)
    snprintf(msg, len, "%.*s%.*s", (int)(at - line), line, (int)(line + n - at - 7), at + 7);
  else
    snprintf(msg, len, "%.*s", (int)n, line);
  if (timed_out)
    snprintf(msg, len, "connection to server at \"%s\", port %s failed: no answer within %llds "
             "(connect_timeout)",
             PQhost(pc), PQport(pc), (long long)(limit / 1000));
  else if (poll_errno != 0)
    snprintf(msg, len, "waiting for the server: %s", strerror(poll_errno));
  *code = JOBQ_ECONN;
  if (PQconnectionNeedsPassword(pc)) {
    *code = JOBQ_EDENIED;
    size_t used = strlen(msg);
    snprintf(msg + used, len - used, ": expected a password in the url, PGPASSWORD or a "
             "password file (~/.pgpass)");
  } else if (state[0] != '\0' && denied_state(state)) {
    *code = JOBQ_EDENIED;
  }
  PQfinish(pc);
  return NULL;
}

/* What a new connection needs before jobq uses it: the schema on the
 * search path, timeouts, durable commits, generic plans, no compiled
 * plans, and a primary that accepts writes.  A generic plan does not know
 * its LIMIT and expects a tenth of the table: with a million jobs
 * analyzed, the claim's cost passed jit_above_cost, and the server spent
 * about 10 ms compiling each claim of 10 jobs (test_postgres.c). */
static int setup(jobq *db, PGconn *pc) {
  pg *c = conn(db);
  char line[400];
  if (PQserverVersion(pc) < PG_MIN_VERSION)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "'%s' runs PostgreSQL %d.%d: expected 13 or newer", c->redacted,
                      PQserverVersion(pc) / 10000, PQserverVersion(pc) % 10000);
  char path[80], timeout[32];
  snprintf(path, sizeof path, "\"%s\"", c->schema);
  snprintf(timeout, sizeof timeout, "%lldms", (long long)c->statement_timeout_ms);
  const char *values[2] = {path, timeout};
  PGresult *res = PQexecParams(
      pc,
      "SELECT set_config('search_path', $1, false), "
      "set_config('statement_timeout', $2, false), "
      "set_config('idle_in_transaction_session_timeout', '60s', false), "
      "set_config('synchronous_commit', 'on', false), "
      "set_config('lock_timeout', $2, false), "
      "set_config('plan_cache_mode', 'force_generic_plan', false), "
      "set_config('jit', 'off', false), "
      "pg_is_in_recovery(), current_setting('default_transaction_read_only')",
      2, NULL, values, NULL, NULL, 0);
  int rc = JOBQ_OK;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    rc = jobq__fail(db, JOBQ_ECONN, "setting up the connection to '%s': %s", c->redacted,
                    first_line(PQresultErrorMessage(res), line, sizeof line));
  } else if (db->readonly) {
    /* A handle that only reads takes a standby or a read-only database,
     * and makes sure of writing nothing. */
    PQclear(res);
    res = PQexec(pc, "SET default_transaction_read_only = on");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
      rc = jobq__fail(db, JOBQ_ECONN, "setting up the connection to '%s': %s", c->redacted,
                      first_line(PQresultErrorMessage(res), line, sizeof line));
  } else if (strcmp(PQgetvalue(res, 0, 7), "t") == 0) {
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' is a standby in recovery: expected the primary (list every "
                    "host and add target_session_attrs=read-write to fail over)",
                    c->redacted);
  } else if (strcmp(PQgetvalue(res, 0, 8), "on") == 0) {
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' is read-only (default_transaction_read_only is on): "
                    "expected a database that accepts writes",
                    c->redacted);
  }
  PQclear(res);
  return rc;
}

/* A new connection, set up: to the first host of the URL's list that
 * answers, lets us in and accepts writes, each tried for at most the
 * URL's connect_timeout.  On failure db's error says what each host
 * said; JOBQ_EDENIED when one refused us for good (a wrong password, an
 * unknown role or database, a missing privilege), JOBQ_EREADONLY when
 * every host was a standby or read-only, else JOBQ_ECONN, a failure
 * that may pass. */
static PGconn *connect_to(jobq *db) {
  pg *c = conn(db);
  if (jobq__libpq_load(db) != JOBQ_OK) return NULL;
  const char **keys = calloc((size_t)c->nparams + 4, sizeof *keys);
  const char **values = calloc((size_t)c->nparams + 4, sizeof *values);
  if (keys == NULL || values == NULL) {
    free(keys);
    free(values);
    jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    return NULL;
  }
  for (int i = 0; i < c->nparams; i++) keys[i] = c->pkeys[i], values[i] = c->pvals[i];
  char why[JOBQ_ERRMSG_MAX] = "";
  size_t used = 0;
  int tries = c->nhosts > 0 ? c->nhosts : 1, denied = 0, readonly = 0, set_up = 0;
  int code = JOBQ_ECONN;
  PGconn *pc = NULL;
  for (int i = 0; i < tries && pc == NULL; i++) {
    int k = c->nparams;
    if (i < c->nhosts && c->host != NULL && c->host[i][0] != '\0')
      keys[k] = "host", values[k++] = c->host[i];
    if (i < c->nhosts && c->hostaddr != NULL && c->hostaddr[i][0] != '\0')
      keys[k] = "hostaddr", values[k++] = c->hostaddr[i];
    const char *port = c->nports == 1 ? c->port[0] : c->nports > i ? c->port[i] : "";
    if (port[0] != '\0') keys[k] = "port", values[k++] = port;
    keys[k] = values[k] = NULL;
    char msg[JOBQ_ERRMSG_MAX];
    int rc;
    pc = try_host(c, keys, values, &rc, msg, sizeof msg);
    if (pc != NULL) {
      PQsetNoticeProcessor(pc, ignore_notice, NULL);
      rc = setup(db, pc);
      if (rc == JOBQ_OK) break;
      PQfinish(pc);
      pc = NULL;
      memcpy(msg, db->errmsg, sizeof msg);
      set_up++;
      if (rc != JOBQ_EREADONLY && rc != JOBQ_ECONN) {
        /* An old server, or no memory: no other host helps. */
        code = rc;
        snprintf(why, sizeof why, "%s", msg);
        used = strlen(why);
        tries = 0;
        break;
      }
    }
    denied |= rc == JOBQ_EDENIED;
    readonly += rc == JOBQ_EREADONLY;
    if (rc == JOBQ_ENOMEM) code = rc;
    if (used < sizeof why)
      used += (size_t)snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", msg);
  }
  free(keys);
  free(values);
  if (pc != NULL) return pc;
  if (tries > 0)
    code = code == JOBQ_ENOMEM ? code
           : denied            ? JOBQ_EDENIED
           : readonly == tries ? JOBQ_EREADONLY
                               : JOBQ_ECONN;
  /* setup's messages name the URL already. */
  if (tries > 1 || (tries == 1 && set_up == 0))
    jobq__fail(db, code, "cannot connect to '%s': %s", c->redacted, why);
  else
    jobq__fail(db, code, "%s", why);
  return NULL;
}

static int pg_open(jobq *db, const jobq_url *u) {
  pg *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->notify = 1;
  c->statement_timeout_ms = 30000;
  c->redacted = db->url_redacted;
  c->watch_fd = -1;
  int rc = jobq__libpq_load(db);
  if (rc == JOBQ_OK) rc = pg_params(db, u);
  if (rc != JOBQ_OK) return rc;
  if ((c->conn = connect_to(db)) == NULL) return db->err;
  return JOBQ_OK;
}

static void listener_drop(pg *c);

static void pg_close(jobq *db) {
  pg *c = conn(db);
  if (c == NULL) return;
  if (c->conn != NULL) PQfinish(c->conn);
  listener_drop(c);
  if (c->watch_fd >= 0) close(c->watch_fd);
  if (c->vacuum != NULL) PQfinish(c->vacuum);
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], "password") == 0 || strcmp(c->pkeys[i], "sslpassword") == 0)
      wipe(c->pvals[i]);
    free(c->pkeys[i]);
    free(c->pvals[i]);
  }
  free(c->pkeys);
  free(c->pvals);
  strings_free(c->host);
  strings_free(c->hostaddr);
  strings_free(c->port);
  names_clear(&c->wake);
  free(c->wake.v);
  later_clear(c);
  free(c->schema);
  free(c);
  db->conn = NULL;
}

static void *pg_native(jobq *db) { return conn(db)->conn; }

/* ---------------------------------------------------------------- schema */

/* A migration is one transaction, one initialiser at a time (the others
 * then find it done), with the schema made if it is not public.  Its
 * search_path is the schema and then pg_temp, which would be searched
 * first if it were not named: the one that jobq_put() keeps (SET
 * search_path FROM CURRENT). */
static int pg_schema_begin(jobq *db) {
  pg *c = conn(db);
  int rc = run_plain(db, "BEGIN", "initialising the schema");
  if (rc == JOBQ_OK)
    rc = run_plain(db, "SELECT pg_advisory_xact_lock(7236982757301234)",
                   "initialising the schema");
  const char *values[1] = {c->schema};
  if (rc == JOBQ_OK && strcmp(c->schema, "public") != 0) {
    PGresult *res = PQexecParams(
        c->conn, "SELECT format('CREATE SCHEMA IF NOT EXISTS %I', $1::text)", 1, NULL,
        values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
      rc = pg_fail(db, res, "creating the schema");
    else /* the identifier was checked at open and quoted by format() */
      rc = run_plain(db, PQgetvalue(res, 0, 0), "creating the schema");
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

static int pg_schema_end(jobq *db, int ok) {
  if (ok) return run_plain(db, "COMMIT", "initialising the schema");
  PQclear(PQexec(conn(db)->conn, "ROLLBACK"));
  return JOBQ_OK;
}

static int pg_schema_run(jobq *db, const char *sql, int64_t *first) {
  PGresult *res = PQexec(conn(db)->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
               ? JOBQ_OK
               : pg_fail(db, res, "migrating the schema");
  if (rc == JOBQ_OK && first != NULL)
    *first = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  PQclear(res);
  return rc;
}

/* ---------------------------------------------------------------- roles */

/* %1$s: the schema, %2$s: the role prefix (jobq_, or jobq_SCHEMA_).
 * What each role may do, and why not less, is docs/security.md's. */
static const char roles_sql[] =
    "-- Least-privilege roles for the jobq schema \"%1$s\".  Run as the owner\n"
    "-- of its tables (the role that ran jobq init), and as a superuser for\n"
    "-- the advisory locks below; then grant a role to each login:\n"
    "--   CREATE ROLE app LOGIN PASSWORD '...' IN ROLE %2$sworker;\n"
    "--   ALTER ROLE app SET idle_in_transaction_session_timeout = '60s';\n"
    "-- None of them owns the tables, so none can drop or alter them.  What\n"
    "-- each may do, and what no grant can keep it from, is in jobq's\n"
    "-- docs/security.md.  Running this again changes nothing.\n"
    "DO $$ BEGIN\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sreader') THEN CREATE ROLE %2$sreader NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sproducer') THEN CREATE ROLE %2$sproducer NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sworker') THEN CREATE ROLE %2$sworker NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sadmin') THEN CREATE ROLE %2$sadmin NOLOGIN; END IF;\n"
    "END $$;\n"
    "GRANT USAGE ON SCHEMA \"%1$s\" TO %2$sreader, %2$sproducer, %2$sworker, %2$sadmin;\n"
    "REVOKE ALL ON ALL TABLES IN SCHEMA \"%1$s\" FROM %2$sreader, %2$sproducer, %2$sworker,\n"
    "  %2$sadmin;\n"
    "REVOKE ALL ON ALL SEQUENCES IN SCHEMA \"%1$s\" FROM %2$sreader, %2$sproducer,\n"
    "  %2$sworker, %2$sadmin;\n"
    "REVOKE ALL ON FUNCTION \"%1$s\".jobq_put(text, bytea, integer, bigint, text, boolean,\n"
    "  text, integer, bigint, bigint) FROM PUBLIC;\n"
    "\n"
    "-- reader: jobq stats, ls, show, sessions, doctor, and dashboards.  It\n"
    "-- reads everything, payloads and results included, and writes nothing.\n"
    "GRANT SELECT ON \"%1$s\".jobq_meta, \"%1$s\".jobq_queues, \"%1$s\".jobq_counts,\n"
    "  \"%1$s\".jobq_sessions, \"%1$s\".jobq_jobs, \"%1$s\".jobq_done, \"%1$s\".jobq_blocked,\n"
    "  \"%1$s\".jobq_tally, \"%1$s\".jobq_attempts, \"%1$s\".jobq_cron,\n"
    "  \"%1$s\".jobq_jobs_id_seq TO %2$sreader;\n"
    "\n"
    "-- producer: jobq put, jobq_put(), and the jobq_put() SQL function.  It\n"
    "-- sees the unfinished jobs' queues, keys and states, to put its own in\n"
    "-- order, not their payloads; it writes what a new job is (not how its\n"
    "-- work stands: session, claim, attempts) and new queues (not their\n"
    "-- settings).\n"
    "GRANT SELECT ON \"%1$s\".jobq_meta, \"%1$s\".jobq_queues, \"%1$s\".jobq_blocked\n"
    "  TO %2$sproducer;\n"
    "GRANT SELECT (id, queue, state, order_key, barrier, unique_key, session)\n"
    "  ON \"%1$s\".jobq_jobs TO %2$sproducer;\n"
    "-- the id and queue of finished jobs: a producer's put, read back after\n"
    "-- a reconnection, proves the database still has it.\n"
    "GRANT SELECT (id, queue) ON \"%1$s\".jobq_done TO %2$sproducer;\n"
    "GRANT INSERT (name, created_at) ON \"%1$s\".jobq_queues TO %2$sproducer;\n"
    "GRANT INSERT (queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n"
    "  max_attempts, timeout_ms, backoff_ms, created_at) ON \"%1$s\".jobq_jobs TO %2$sproducer;\n"
    "GRANT USAGE, SELECT ON \"%1$s\".jobq_jobs_id_seq TO %2$sproducer;\n"
    "GRANT EXECUTE ON FUNCTION \"%1$s\".jobq_put(text, bytea, integer, bigint, text, boolean,\n"
    "  text, integer, bigint, bigint) TO %2$sproducer;\n"
    "-- And jobq cron run: the jobs of the schedules' slots (a foreman puts\n"
    "-- them when its login is a producer too).\n"
    "GRANT SELECT, UPDATE (next_at, last_at, last_error, updated_at) ON \"%1$s\".jobq_cron\n"
    "  TO %2$sproducer;\n"
    "\n"
    "-- worker: sessions, claims, acknowledgements, reaping (jobq work).  It\n"
    "-- changes how a job's work stands, not what the job is, and cannot ask\n"
    "-- to cancel one; it archives only jobs that a session held.\n"
    "GRANT %2$sreader TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_sessions TO %2$sworker;\n"
    "GRANT UPDATE (state, session, claim, claimed_at, deadline_at, attempts, run_at,\n"
    "  last_error, prev_lost, started), DELETE ON \"%1$s\".jobq_jobs TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_done TO %2$sworker;\n"
    "GRANT INSERT, UPDATE ON \"%1$s\".jobq_counts TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_blocked TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_tally TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_attempts TO %2$sworker;\n"
    "GRANT USAGE ON \"%1$s\".jobq_attempts_id_seq TO %2$sworker;\n"
    "-- the stall guard's look, which any reaper records\n"
    "GRANT UPDATE (guard_at) ON \"%1$s\".jobq_meta TO %2$sworker;\n"
    "\n"
    "-- admin: retry, cancel, pause, prune, purge, epoch bump, and the\n"
    "-- others' rights.\n"
    "GRANT %2$sproducer, %2$sworker TO %2$sadmin;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_jobs, \"%1$s\".jobq_queues,\n"
    "  \"%1$s\".jobq_done, \"%1$s\".jobq_blocked, \"%1$s\".jobq_counts, \"%1$s\".jobq_attempts\n"
    "  TO %2$sadmin;\n"
    "GRANT UPDATE ON \"%1$s\".jobq_meta TO %2$sadmin;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_cron TO %2$sadmin;\n"
    "\n"
    "-- The archive takes from a worker only the jobs that a session held, so\n"
    "-- that a worker cannot cancel a job that is waiting for its turn.\n"
    "ALTER TABLE \"%1$s\".jobq_done ENABLE ROW LEVEL SECURITY;\n"
    "DROP POLICY IF EXISTS jobq_read ON \"%1$s\".jobq_done;\n"
    "DROP POLICY IF EXISTS jobq_held ON \"%1$s\".jobq_done;\n"
    "DROP POLICY IF EXISTS jobq_admin ON \"%1$s\".jobq_done;\n"
    "CREATE POLICY jobq_read ON \"%1$s\".jobq_done FOR SELECT TO %2$sreader, %2$sproducer\n"
    "  USING (true);\n"
    "CREATE POLICY jobq_held ON \"%1$s\".jobq_done FOR INSERT TO %2$sworker\n"
    "  WITH CHECK (session IS NOT NULL);\n"
    "CREATE POLICY jobq_admin ON \"%1$s\".jobq_done TO %2$sadmin USING (true) WITH CHECK (true);\n"
    "\n"
    "-- Advisory locks.  jobq names its locks with them, and PostgreSQL lets\n"
    "-- any login of the database take any of them: one that may only read\n"
    "-- could hold a queue's lock and stop every put to the queue.  Run by a\n"
    "-- superuser, this takes them from PUBLIC in this database and gives the\n"
    "-- ones jobq takes to its roles and to the owner of its tables.  Another\n"
    "-- application of this database that takes advisory locks needs them\n"
    "-- back:  GRANT EXECUTE ON FUNCTION pg_advisory_lock(bigint) TO its_role;\n"
    "DO $$ DECLARE\n"
    "  owner name := (SELECT tableowner FROM pg_tables WHERE schemaname = '%1$s'\n"
    "                 AND tablename = 'jobq_meta');\n"
    "BEGIN\n"
    "  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN\n"
    "    RAISE WARNING 'not a superuser: any login may still take jobq''s advisory locks; run this file as a superuser to keep them to jobq''s roles';\n"
    "    RETURN;\n"
    "  END IF;\n"
    "  REVOKE EXECUTE ON FUNCTION pg_advisory_lock(bigint), pg_advisory_lock_shared(bigint),\n"
    "    pg_try_advisory_lock(bigint), pg_try_advisory_lock_shared(bigint),\n"
    "    pg_advisory_xact_lock(bigint), pg_advisory_xact_lock_shared(bigint),\n"
    "    pg_try_advisory_xact_lock(bigint), pg_try_advisory_xact_lock_shared(bigint) FROM PUBLIC;\n"
    "  EXECUTE format('GRANT EXECUTE ON FUNCTION pg_advisory_xact_lock(bigint), '\n"
    "    'pg_advisory_xact_lock_shared(bigint), pg_try_advisory_lock(bigint) TO %%I, %%I, %%I',\n"
    "    '%2$sproducer', '%2$sworker', owner);\n"
    "END $$;\n";

static int pg_roles(jobq *db, char **out) {
  pg *c = conn(db);
  char prefix[80];
  role_prefix(c, prefix, sizeof prefix);
  size_t len = sizeof roles_sql + 64 * (strlen(c->schema) + strlen(prefix));
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, roles_sql, c->schema, prefix);
  *out = sql;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- doctor */

/* Runs a query of the doctor's (no values) for its first row; NULL when
 * it returns none.  Caller PQclear()s. */
static PGresult *doctor_row(jobq *db, const char *sql) {
  PGresult *res = PQexec(conn(db)->conn, sql);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    pg_fail(db, res, "checking the server");
    PQclear(res);
    return NULL;
  }
  return res;
}

static int pg_doctor(jobq *db, jobq__checks *c) {
  PGresult *r = doctor_row(
      db,
      "SELECT current_setting('server_version'), current_setting('fsync'), "
      "(SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'), "
      "current_setting('full_page_writes'), current_setting('synchronous_standby_names'), "
      "current_setting('autovacuum')");
  if (r == NULL) return db->err;
  const char *version = PQgetvalue(r, 0, 0), *fsync = PQgetvalue(r, 0, 1);
  const char *sync = PQgetvalue(r, 0, 2), *fpw = PQgetvalue(r, 0, 3);
  const char *standbys = PQgetvalue(r, 0, 4), *autovacuum = PQgetvalue(r, 0, 5);
  jobq__check_add(c, JOBQ_CHECK_OK, "server", NULL, "PostgreSQL %s", version);
  if (strcmp(fsync, "on") != 0 || strcmp(fpw, "on") != 0)
    jobq__check_add(c, JOBQ_CHECK_FAIL, "durability",
                    "set fsync = on and full_page_writes = on in postgresql.conf: "
                    "without them a crash can lose or corrupt acknowledged jobs",
                    "fsync = %s, full_page_writes = %s", fsync, fpw);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "durability", NULL,
                    "fsync and full_page_writes on; jobq's connections commit with "
                    "synchronous_commit = on (the server's default is %s)",
                    sync);
  if (*standbys == '\0')
    jobq__check_add(c, JOBQ_CHECK_WARN, "replication",
                    "with no synchronous standby, losing this server loses the "
                    "latest commits; a failover to an asynchronous replica may bring "
                    "finished jobs back (workers stop with a changed identity: run "
                    "'jobq epoch bump' on the new primary)",
                    "no synchronous standby (synchronous_standby_names is empty)");
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "replication", NULL, "synchronous standbys: %s",
                    standbys);
  int autovac_on = strcmp(autovacuum, "on") == 0;
  PQclear(r);

  /* The oldest transaction anywhere holds vacuum back in every table. */
  r = doctor_row(db,
                 "SELECT pid, coalesce(usename, ''), coalesce(application_name, ''), "
                 "coalesce(state, ''), CAST(extract(epoch FROM clock_timestamp() - "
                 "xact_start) AS bigint), left(regexp_replace(coalesce(query, ''), "
                 "'\\s+', ' ', 'g'), 60) FROM pg_stat_activity WHERE xact_start IS "
                 "NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 1");
  if (r == NULL) return db->err;
  long long age = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 4), NULL, 10) : 0;
  if (age >= 60)
    jobq__check_add(c, age >= 600 ? JOBQ_CHECK_FAIL : JOBQ_CHECK_WARN, "vacuum",
                    "a long transaction keeps vacuum from reclaiming the hot table, so "
                    "it bloats and claims slow down: end it (SELECT "
                    "pg_terminate_backend(PID)) and keep transactions short",
                    "the oldest transaction has been open for %llds: pid %s, user '%s', "
                    "application '%s', %s: %s",
                    age, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
                    PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 5));
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "vacuum", NULL,
                    "no transaction older than a minute holds vacuum back");
  PQclear(r);

  r = doctor_row(db,
                 "SELECT n_live_tup, n_dead_tup, pg_total_relation_size(relid), "
                 "coalesce(to_char(greatest(last_autovacuum, last_vacuum), "
                 "'YYYY-MM-DD HH24:MI:SS'), 'never') FROM pg_stat_user_tables WHERE "
                 "relid = 'jobq_jobs'::regclass");
  if (r == NULL) return db->err;
  if (PQntuples(r) == 1) {
    long long live = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    long long dead = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    long long bytes = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    int bloated = dead > 10000 && dead > 2 * live;
    int oversized = bytes > (64LL << 20) && bytes > (live + 1) * 20480;
    if (!autovac_on || bloated || oversized)
      jobq__check_add(c, JOBQ_CHECK_WARN, "bloat",
                      !autovac_on ? "turn autovacuum on: the hot table churns and "
                                    "grows without it"
                                  : "vacuum is behind on the hot table: look for long "
                                    "transactions (above); VACUUM jobq_jobs now, and "
                                    "at a quiet time VACUUM FULL or pg_repack to give "
                                    "the space back",
                      "jobq_jobs: %lld live and %lld dead rows in %lld MiB; last vacuum "
                      "%s; autovacuum %s",
                      live, dead, bytes >> 20, PQgetvalue(r, 0, 3), autovac_on ? "on" : "off");
    else
      jobq__check_add(c, JOBQ_CHECK_OK, "bloat", NULL,
                      "jobq_jobs: %lld live and %lld dead rows in %lld MiB", live, dead,
                      bytes >> 20);
  }
  PQclear(r);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- transactions */

/* A connection that broke since the last transaction is made again (its
 * prepared statements with it) before the next one begins. */
static int reconnect(jobq *db) {
  pg *c = conn(db);
  PGconn *pc = connect_to(db);
  if (pc == NULL) return db->err;
  PQfinish(c->conn);
  c->conn = pc;
  db->connects++; /* for the check of acknowledged writes (lib/mark.c) */
  c->vacuum_lock = 0; /* it ended with the session that held it */
  memset(c->prepared, 0, sizeof c->prepared);
  /* The wake-up connection may be on a server that is gone without a
   * word (a failover): it is opened again too, by the next look. */
  listener_drop(c);
  c->listen_failures = 0;
  c->listen_retry_ms = 0;
  return JOBQ_OK;
}

/* A connection known to be broken is made again before a transaction. */
static int connected(jobq *db) {
  return PQstatus(conn(db)->conn) == CONNECTION_OK ? JOBQ_OK : reconnect(db);
}

/* BEGIN, at once. */
static int begin_now(jobq *db) {
  conn(db)->begin_pending = 0;
  int rc = connected(db);
  if (rc != JOBQ_OK) return rc;
  rc = run_plain(db, "BEGIN", "starting a transaction");
  /* Nothing was done yet: a connection that turns out broken is made
   * again, once. */
  if (rc == JOBQ_ECONN && reconnect(db) == JOBQ_OK)
    rc = run_plain(db, "BEGIN", "starting a transaction");
  return rc;
}

/* The end of a transaction: nothing waits to be sent any more. */
static void txn_over(pg *c) {
  later_clear(c);
  names_clear(&c->wake);
  c->begin_pending = 0;
  c->commit_with = 0;
  c->committed = 0;
  c->lazy = 0;
}

/* A lazy BEGIN waits for the first statement (exec_pending), which
 * saves a round trip on every transaction of the library's own; so do
 * the statements that may wait (may_wait).  In a caller's transaction
 * (jobq_begin) every statement runs at once: the caller's own statements
 * on the connection come next. */
static int pg_begin(jobq *db, int depth, int lazy) {
  pg *c = conn(db);
  if (depth > 0) {
    int rc = c->begin_pending ? begin_now(db) : JOBQ_OK;
    return rc == JOBQ_OK ? run_after(db, "SAVEPOINT jobq", "starting a savepoint") : rc;
  }
  txn_over(c);
  c->lazy = lazy;
  if (!lazy) return begin_now(db);
  int rc = connected(db);
  if (rc == JOBQ_OK) c->begin_pending = 1;
  return rc;
}

/* The transaction's wake-ups, if any (and the URL allows them), held to
 * go with its commit (or sent now, after what is held, when the list is
 * full). */
static int notify_later(jobq *db) {
  pg *c = conn(db);
  if (!c->notify || c->wake.n == 0) return JOBQ_OK;
  array a;
  arr_begin(&a, OID_TEXT, c->wake.n);
  for (size_t i = 0; i < c->wake.n; i++) arr_bytes(&a, c->wake.v[i], strlen(c->wake.v[i]));
  int rc = a.failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : prepare(db, PG_NOTIFY);
  const char *values[] = {a.p};
  const int lengths[] = {(int)a.len}, formats[] = {1};
  if (rc == JOBQ_OK && !later_add(c, PG_NOTIFY, 1, values, lengths, formats, &with_commit))
    rc = pg_query(db, PG_NOTIFY, SQL_ARGS(arr_val(&a)), NULL, NULL);
  free(a.p);
  return rc;
}

static void vacuum_reap(pg *c);
static void vacuum_start(jobq *db);
static void vacuum_unlock(pg *c);

/* What waits for the end of a transaction: a vacuum (refresh_stats), or
 * the vacuums' lock given back once this handle's vacuum has ended or
 * could not start. */
static void txn_ended(jobq *db) {
  pg *c = conn(db);
  vacuum_reap(c);
  if (c->vacuum_wanted) {
    c->vacuum_wanted = 0;
    vacuum_start(db);
  }
  if (c->vacuum_lock && c->vacuum == NULL) vacuum_unlock(c);
}

static int pg_commit(jobq *db, int depth) {
  if (depth > 0) return run_after(db, "RELEASE SAVEPOINT jobq", "releasing a savepoint");
  pg *c = conn(db);
  int rc = JOBQ_OK;
  /* When no statement ran (nothing was sent, nothing waits), there is
   * nothing to commit; nor when the claim took the COMMIT with it. */
  if (!c->committed && (!c->begin_pending || c->nlater > 0)) {
    rc = notify_later(db);
    if (rc == JOBQ_OK) rc = run_after(db, "COMMIT", "committing");
  }
  txn_over(c);
  txn_ended(db);
  return rc;
}

static int pg_rollback(jobq *db, int depth) {
  pg *c = conn(db);
  /* What waited to be sent was never sent; with a BEGIN still waiting,
   * neither was anything else.  A transaction committed with its claim
   * has nothing to undo. */
  int sent = depth > 0 || (!c->begin_pending && !c->committed);
  if (depth > 0)
    later_clear(c);
  else
    txn_over(c);
  if (sent && PQstatus(c->conn) == CONNECTION_OK)
    PQclear(PQexec(c->conn, depth > 0 ? "ROLLBACK TO SAVEPOINT jobq; RELEASE SAVEPOINT jobq"
                                      : "ROLLBACK"));
  if (depth == 0) txn_ended(db);
  return JOBQ_OK;
}

/* A wake-up lost for want of memory is no harm: watchers poll as well. */
static void pg_wake(jobq *db, const char *queue) { (void)names_add(&conn(db)->wake, queue); }

/* ---------------------------------------------------------------- locks */

/* A lock's name, the same as the jobq_put() SQL function's: "q:queue",
 * "k:queue/key"; a new string, or NULL when out of memory. */
static char *lock_name(const jobq_lock *l) {
  size_t len = strlen(l->queue) + (l->key ? strlen(l->key) + 1 : 0) + 3;
  char *name = malloc(len);
  if (name != NULL)
    snprintf(name, len, "%c:%s%s%s", l->kind, l->queue, l->key ? "/" : "", l->key ? l->key : "");
  return name;
}

/* One lock a statement, or many in one (PG_LOCKS); either waits to be
 * sent with the next statement. */
static int pg_lock(jobq *db, const jobq_lock *l, size_t n) {
  if (n == 1) {
    char *name = lock_name(l);
    if (name == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    int rc = pg_query(db, l->exclusive ? PG_LOCK : PG_LOCK_SHARED, SQL_ARGS(V_TEXT(name)), NULL,
                      &held);
    free(name);
    return rc;
  }
  array lnames, modes;
  arr_begin(&lnames, OID_TEXT, n);
  arr_begin(&modes, OID_INT8, n);
  for (size_t i = 0; i < n; i++) {
    char *name = lock_name(&l[i]);
    if (name == NULL) lnames.failed = 1;
    else arr_bytes(&lnames, name, strlen(name));
    free(name);
    arr_int8(&modes, l[i].exclusive);
  }
  int rc = lnames.failed || modes.failed
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : pg_query(db, PG_LOCKS, SQL_ARGS(arr_val(&lnames), arr_val(&modes)), NULL, &held);
  free(lnames.p);
  free(modes.p);
  return rc;
}

/* ---------------------------------------------------------------- statistics */

/* The planner's statistics of the hot table, analyzed again when they
 * fell far behind it.  Vacuum that finds the table empty records no rows;
 * until an analyze says otherwise every plan expects none, every index
 * looks free, and a burst of jobs is claimed through whichever index won
 * that tie: the queue's index and a sort of all its jobs (200000 of them:
 * 150 ms a claim; or a bitmap of the claim index and a sort: 75 ms at
 * 20000).  Autovacuum analyzes once 5 % changed, but only at its next
 * round, up to a minute later; a claimer looks every second, and at once
 * after a full batch from a table the planner counts under a tenth of it.
 * SKIP_LOCKED: a vacuum or another claimer's analyze at work already is
 * as good, and no claim waits for one.  It samples 3000 rows rather
 * than 30000 (a statistics target of 10, for this analyze only): 24 ms
 * instead of 116 to 181 for a table of a million rows here, which the
 * claim that runs it waits for, and the plans need the row count, not
 * fine histograms.  Autovacuum's own analyze, with the server's target,
 * comes later.
 *
 * The same look starts a vacuum of the hot table when it has 20000 dead
 * rows or more and none is at work.  Every job leaves two dead rows
 * (its claim and its acknowledgement) and their entries stay at the head
 * of the claim index until a vacuum removes them; each claim walks over
 * them all.  A million jobs done leave 6500 index pages to walk: 10 ms a
 * claim, until autovacuum's next round, up to a minute later.  The
 * vacuum runs on a connection of its own that the claim does not wait
 * for, made once the claim's transaction has ended: making it takes
 * milliseconds, more on a busy machine, and the locks of the claim's
 * jobs were held meanwhile when it was made inside.
 *
 * The end of each of the handle's transactions closes that connection
 * once its vacuum has finished.  The handle then starts none for as
 * long again as the vacuum ran, so that its vacuums take at most half
 * of a core's time, however large the table: a vacuum of a million
 * dead rows took under a second here, and the next one may come as soon
 * after.  A fixed ten seconds between two
 * let a million jobs archived in twenty leave nearly a million dead rows
 * behind, and the claims after them ran at a quarter of their rate.
 * PARALLEL 0: that share is of one process.  Beside a large backlog the
 * hot table's indexes pass the size at which VACUUM hands them to
 * parallel workers (min_parallel_index_scan_size), and the vacuum then
 * took the leader and two workers, every core of a small machine, while
 * the claims waited for a core.
 *
 * One vacuum at a time, of all the handles on the database: the look
 * that finds the dead rows also takes a lock of the session's
 * (pg_try_advisory_lock on "v:" and the table's oid), and only the
 * handle that got it starts a vacuum; it gives the lock back at the end
 * of its first transaction after its vacuum has ended or could not
 * start.  Without it every claimer whose look came while another's
 * vacuum was still connecting, or just after it had begun, made and
 * authenticated a connection for a VACUUM that skipped the table: with
 * 64 claimer processes, 200 to 285 such connections in one run of
 * `jobq bench --workload scale`, up to 58 in one second; without them
 * the claims at 64 processes went a quarter faster (13133 to 14359
 * jobs/s against 10257 to 10919). */
/* The look of refresh_stats, once a second, before a put in a
 * transaction of the library's own; it leaves the vacuums to the
 * claimers, whose work leaves the dead rows.  Puts plan their looks for
 * a barrier and for a key's jobs once per connection, as every
 * statement; planned on a table that vacuum found empty, they scan the
 * whole table for each job put, and a burst of puts into an idle queue
 * with no claimer at work slowed down as it filled the table until
 * autovacuum analyzed it: 50000 jobs in batches of 1000 took 80 s here.
 * The jobs a put sends are not counted as a claim's batch is: they may
 * be claimed before the next put, and a producer beside fast workers
 * would then analyze an empty table at every put. */
#define STATS_CHECK_MS 1000
#define VACUUM_RETRY_MS 10000  /* after one that could not start; the most */

/* Closes the vacuum connection once its vacuum has ended (or failed),
 * and sets when the next may begin: as long after as it ran, as far as
 * this handle saw, which is later than it ended when the handle ran no
 * transaction meanwhile; hence no more than VACUUM_RETRY_MS. */
static void vacuum_reap(pg *c) {
  if (c->vacuum != NULL && !(PQconsumeInput(c->vacuum) && PQisBusy(c->vacuum))) {
    PQfinish(c->vacuum);
    c->vacuum = NULL;
    int64_t now = jobq__mono_ms(), ran = now - c->vacuum_started_ms;
    c->vacuum_next_ms = now + (ran < VACUUM_RETRY_MS ? ran : VACUUM_RETRY_MS);
  }
}

/* Gives back the vacuums' lock that the look of refresh_stats took, on
 * the handle's connection, with no transaction open.  A connection that
 * broke lost the lock with its session. */
static void vacuum_unlock(pg *c) {
  c->vacuum_lock = 0;
  if (PQstatus(c->conn) == CONNECTION_OK)
    PQclear(PQexec(c->conn, "SELECT pg_advisory_unlock(" VACUUM_LOCK_KEY ")"));
}

/* Starts VACUUM of the hot table on a new connection and leaves it
 * running.  Best effort: a vacuum that cannot start (the server's
 * connection limit, say) leaves the claim and db's last error as they
 * were, and is not tried again before VACUUM_RETRY_MS; autovacuum still
 * comes. */
static void vacuum_start(jobq *db) {
  pg *c = conn(db);
  c->vacuum_started_ms = jobq__mono_ms();
  c->vacuum_next_ms = c->vacuum_started_ms + VACUUM_RETRY_MS;
  jobq__error kept;
  jobq__error_keep(db, &kept);
  PGconn *pc = connect_to(db);
  jobq__error_restore(db, &kept);
  if (pc == NULL) return;
  PGresult *res = PQexec(pc, "SET statement_timeout = 0");
  int ok = PQresultStatus(res) == PGRES_COMMAND_OK &&
           PQsendQueryParams(pc, "VACUUM (SKIP_LOCKED, PARALLEL 0) jobq_jobs", 0, NULL, NULL, NULL,
                             NULL, 0) == 1;
  PQclear(res);
  if (!ok) {
    PQfinish(pc);
    return;
  }
  c->vacuum = pc;
}

static int refresh_stats(jobq *db, int64_t rows, int may_vacuum) {
  pg *c = conn(db);
  int64_t now = jobq__mono_ms();
  /* A full batch from a table the planner counts (nearly) empty: the
   * statistics collector may not count the rows yet (a backend reports
   * its inserts once a second at most), so look now, with that batch.
   * The look finds the count under a tenth of it and analyzes. */
  int behind = rows > 0 && c->reltuples < (rows + 9) / 10;
  if (!behind && now - c->stats_checked_ms < STATS_CHECK_MS) return JOBQ_OK;
  c->stats_checked_ms = now;
  jobq_rows *r;
  may_vacuum = may_vacuum && c->vacuum == NULL && !c->vacuum_lock && now >= c->vacuum_next_ms;
  int rc = pg_query(db, PG_TABLE_STATS, SQL_ARGS(V_INT(rows), V_INT(may_vacuum)), &r, NULL);
  if (rc != JOBQ_OK) return rc;
  int stale = 0, dirty = 0;
  c->reltuples = INT64_MAX; /* a role that may not analyze: no look before the next */
  if (pg_next(db, r) == 1) {
    stale = pg_col_int(r, 0) != 0;
    dirty = pg_col_int(r, 1) != 0;
    c->reltuples = pg_col_int(r, 2);
  }
  pg_done(db, r);
  if (dirty) c->vacuum_lock = c->vacuum_wanted = 1;
  if (!stale) return JOBQ_OK;
  c->reltuples = INT64_MAX;
  rc = run_after(db, "SET LOCAL default_statistics_target = 10", "analyzing the job table");
  return rc == JOBQ_OK ? run_after(db, "ANALYZE (SKIP_LOCKED) jobq_jobs", "analyzing the job table")
                       : rc;
}

/* ---------------------------------------------------------------- wake-ups */

/* The first wait before the LISTEN connection is opened again, doubled
 * after each failure up to LISTEN_RETRY_MAX_MS, with jitter. */
#define LISTEN_RETRY_MS 250
#define LISTEN_RETRY_MAX_MS 8000

/* Closes the LISTEN connection, its socket taken out of the watch set
 * first: at its end of file the set would stay readable for good. */
static void listener_drop(pg *c) {
  if (c->listener == NULL) return;
  if (c->watch_fd >= 0) epoll_ctl(c->watch_fd, EPOLL_CTL_DEL, PQsocket(c->listener), NULL);
  PQfinish(c->listener);
  c->listener = NULL;
}

/* Opens the LISTEN connection and puts its socket in the watch set. */
static int listen_now(jobq *db) {
  pg *c = conn(db);
  PGconn *pc = connect_to(db);
  if (pc == NULL) return db->err;
  PGresult *res = PQexec(pc, "LISTEN jobq");
  char line[400];
  int rc = JOBQ_OK;
  struct epoll_event ev = {.events = EPOLLIN};
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = jobq__fail(db, JOBQ_ECONN, "cannot listen for wake-ups on '%s': %s", c->redacted,
                    first_line(PQresultErrorMessage(res), line, sizeof line));
  else if (PQsetnonblocking(pc, 1) != 0 ||
           epoll_ctl(c->watch_fd, EPOLL_CTL_ADD, PQsocket(pc), &ev) != 0)
    rc = jobq__fail(db, JOBQ_ECONN, "cannot watch the wake-up connection to '%s'",
                    c->redacted);
  PQclear(res);
  if (rc != JOBQ_OK) {
    PQfinish(pc);
    return rc;
  }
  c->listener = pc;
  return JOBQ_OK;
}

/* The caller's descriptor is the watch set, not the LISTEN connection's
 * socket: it stays the same however often that connection is lost and
 * opened again (pg_changed).  A LISTEN that cannot be opened now is
 * tried again there. */
static int pg_watch(jobq *db, int *fd) {
  pg *c = conn(db);
  if (!c->notify)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "wake-ups are off for '%s' (notify=off): poll instead", c->redacted);
  if (c->watch_fd < 0) {
    c->watch_fd = epoll_create1(EPOLL_CLOEXEC);
    if (c->watch_fd < 0)
      return jobq__fail(db, JOBQ_EDB, "cannot watch '%s': %s", c->redacted, strerror(errno));
    c->listen_failures = 0;
    c->listen_retry_ms = 0;
    jobq__error kept;
    jobq__error_keep(db, &kept);
    if (listen_now(db) != JOBQ_OK) {
      /* pg_changed says so, and tries again. */
      memcpy(c->listen_why, db->errmsg, sizeof c->listen_why);
      c->listen_failures = 1;
      c->listen_retry_ms = jobq__mono_ms() + LISTEN_RETRY_MS;
    }
    jobq__error_restore(db, &kept);
  }
  *fd = c->watch_fd;
  return JOBQ_OK;
}

/* While there is no LISTEN connection, every look tries to open one once
 * its wait is over, and says that wake-ups are not coming (the caller
 * claims and keeps polling); once there is one again, 1: what was sent
 * meanwhile went unheard. */
static int pg_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue)) {
  pg *c = conn(db);
  if (c->watch_fd < 0) return 1;
  if (c->listener != NULL && !PQconsumeInput(c->listener)) {
    char line[400];
    snprintf(c->listen_why, sizeof c->listen_why, "lost the connection to '%s': %s",
             c->redacted, first_line(PQerrorMessage(c->listener), line, sizeof line));
    listener_drop(c);
    c->listen_failures = 0;
    c->listen_retry_ms = 0;
  }
  if (c->listener == NULL) {
    int64_t now = jobq__mono_ms();
    if (now >= c->listen_retry_ms) {
      if (listen_now(db) == JOBQ_OK) {
        c->listen_failures = 0;
        return 1;
      }
      memcpy(c->listen_why, db->errmsg, sizeof c->listen_why);
      c->listen_failures++;
      int n = c->listen_failures;
      /* Doubled after each failure, with jitter in [0.5, 1.5). */
      int64_t base = (int64_t)LISTEN_RETRY_MS << (n < 6 ? n - 1 : 5);
      int64_t wait = base / 2 + (int64_t)(jobq__rand(db) % (uint64_t)base);
      if (wait > LISTEN_RETRY_MAX_MS) wait = LISTEN_RETRY_MAX_MS;
      c->listen_retry_ms = now + wait;
    }
    return jobq__fail(db, JOBQ_ECONN,
                      "no wake-ups until the connection for them is back: %s; next attempt "
                      "in %lldms",
                      c->listen_why, (long long)(c->listen_retry_ms - now));
  }
  /* This handle's own commits are no news to it, nor work for queues it
   * does not watch (the payload is the queue's name). */
  int changed = 0, self = PQbackendPID(c->conn);
  PGnotify *note;
  while ((note = PQnotifies(c->listener)) != NULL) {
    changed |= note->be_pid != self &&
               (note->extra[0] == '\0' || wanted(db, note->extra));
    PQfreemem(note);
  }
  return changed;
}

const jobq_store jobq__store_postgres = {
    .scheme = "postgres",
    .dialect = JOBQ_DIALECT_PG,
    .named_wakes = 1,
    .open = pg_open,
    .close = pg_close,
    .native = pg_native,
    .schema = versions,
    .schema_begin = pg_schema_begin,
    .schema_end = pg_schema_end,
    .schema_run = pg_schema_run,
    .roles = pg_roles,
    .doctor = pg_doctor,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .query = pg_query,
    .next = pg_next,
    .done = pg_done,
    .is_null = pg_is_null,
    .col_int = pg_col_int,
    .col_bytes = pg_col_bytes,
    .changes = pg_changes,
    .insert_id = pg_insert_id,
    .lock = pg_lock,
    .wake = pg_wake,
    .watch = pg_watch,
    .changed = pg_changed,
};
