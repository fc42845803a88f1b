/*
 * sql.c - the texts of every statement the job logic runs, one column per
 * dialect where an engine needs its own words, the spelling of the common
 * notation (sql.h) for each engine, and the calls that run a statement
 * through the store's executor.
 *
 * All values are bound: no text here ever changes with input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sql.h"

/* ---------------------------------------------------------------- texts */

/* The columns every job listing reads, from either table. */
#define HOT_INFO                                                              \
  "SELECT id, queue, state, priority, run_at, order_key, barrier, "           \
  "unique_key, length(payload) AS payload_len, NULL AS result_len, "          \
  "attempts, max_attempts, timeout_ms, backoff_ms, session, claim, "          \
  "created_at, claimed_at, NULL AS finished_at, last_error, "                 \
  "cancel_requested, prev_lost, part"
#define DONE_INFO                                                             \
  "SELECT id, queue, outcome, priority, run_at, order_key, barrier, "         \
  "unique_key, length(payload), length(result), attempts, max_attempts, "     \
  "timeout_ms, backoff_ms, session, claim, created_at, claimed_at, "          \
  "finished_at, last_error, 0, prev_lost, NULL"

#define ARCHIVE_COLS                                                          \
  "id, queue, priority, run_at, outcome, order_key, barrier, unique_key, "    \
  "payload, result, attempts, max_attempts, timeout_ms, backoff_ms, "         \
  "session, claim, created_at, claimed_at, finished_at, last_error, "         \
  "prev_lost"

/* The rows deleted from the hot table (d, each with its outcome, new
 * result and new error, NULL to keep the last) into the archive, in a
 * PostgreSQL statement. */
#define DELETED_RETURNING(OUTCOME, RESULT, ERROR)                               \
  "RETURNING j.id, j.queue, j.priority, j.run_at, " OUTCOME " AS outcome, "     \
  "j.order_key, j.barrier, j.unique_key, j.payload, " RESULT " AS new_result, " \
  "j.attempts, j.max_attempts, j.timeout_ms, j.backoff_ms, j.session, j.claim, " \
  "j.created_at, j.claimed_at, " ERROR " AS new_error, j.last_error, j.prev_lost, " \
  "j.children"
#define DELETED_INTO_ARCHIVE                                                    \
  "INSERT INTO jobq_done(" ARCHIVE_COLS ") SELECT id, queue, priority, run_at, " \
  "outcome, order_key, barrier, unique_key, payload, new_result, attempts, "    \
  "max_attempts, timeout_ms, backoff_ms, session, claim, created_at, claimed_at, " \
  "{now}, coalesce(new_error, last_error), prev_lost FROM d"

/* The head of COMPLETE and COMPLETE_UNKEYED: the completions ?1 to ?3
 * of session ?4 deleted (d) and archived (i, its ids and queues). */
#define COMPLETE_ARCHIVE                                                         \
  "WITH a AS (SELECT * FROM unnest(?1::bigint[], ?2::text[], ?3::bytea[]) AS "   \
  "a(id, claim, result)), d AS (DELETE FROM jobq_jobs j USING a WHERE "          \
  "j.id = a.id AND j.claim = a.claim AND coalesce(j.session, '') = ?4 AND j.state = " \
  "'running' AND (j.order_key IS NULL OR ?5::boolean) AND j.barrier = 0 AND NOT "  \
  "EXISTS (SELECT 1 FROM jobq_jobs b WHERE b.queue = j.queue AND b.barrier = 1) "  \
  DELETED_RETURNING("'done'", "a.result", "NULL::text") "), i AS ("              \
  DELETED_INTO_ARCHIVE " RETURNING id, queue)"

/* The tail of COMPLETE and COMPLETE_UNKEYED: the jobs completed that
 * have children (lib/after.c), their ids negated. */
#define COMPLETE_PARENTS " UNION ALL SELECT -id, queue FROM d WHERE children = 1"

/* MariaDB: of the values ?V of each row, the one in the place of the
 * row's id among the ids ?I (see REQUEUE_ROWS). */
#define BY_ID(I, V) "ELT(FIELD(id, {each:" I "}), {each:" V "})"

/* The names of the queues in more than one part (lib/part.c), as
 * LIMITED. */
#define PARTED(AGG) "(SELECT " AGG " FROM jobq_queues WHERE parts > 1)"

/* PostgreSQL's put: each keyless job's hash moved on by its place among
 * the put's keyless jobs of its queue (u.o, from 0) and their number
 * (u.c), both from the put (0 and 1 for a keyed job, whose hash stays),
 * as lib/part.c's jobq__part_run() does elsewhere, for the queue's parts
 * N. */
#define PG_RUN_HASH(N) "u.h + u.o * " N " / u.c"
/* The parts of job u's queue, for a put: of the put's one queue ?15
 * read once (an InitPlan), or of each job's queue where it has several. */
#define PG_PUT_PARTS                                                           \
  "CASE WHEN ?15::text IS NOT NULL THEN (SELECT pq.parts FROM jobq_queues pq " \
  "WHERE pq.name = ?15::text) ELSE (SELECT pq.parts FROM jobq_queues pq WHERE " \
  "pq.name = u.q) END"

/* The parts of queue Q. */
#define QUEUE_PARTS(Q) "coalesce((SELECT pq.parts FROM jobq_queues pq WHERE pq.name = " Q "), 1)"

/* PART_OF where a put has the queue's parts, N, without a lookup of its
 * own: read before (PUT_WAITS: SQLite, MariaDB) or once for the whole
 * INSERT (PG_PUT_PARTS). */
#define PART_OF_READ(N, H) "CASE WHEN " N " > 1 THEN (" H ") % " N " END"

/* The part of a job of queue Q whose hash (lib/part.c) is H: NULL while
 * the queue has one part. */
#define PART_OF(Q, H)                                                         \
  "(SELECT CASE WHEN pq.parts > 1 THEN (" H ") % pq.parts END FROM jobq_queues " \
  "pq WHERE pq.name = " Q ")"

/* An archived job back into the hot table in state STATE, with a fresh
 * attempt count: the head of a statement, its WHERE on jobq_done to
 * follow. */
#define UNARCHIVE_AS(STATE)                                                   \
  "INSERT INTO jobq_jobs(id, queue, priority, run_at, state, order_key, "     \
  "barrier, unique_key, payload, attempts, max_attempts, timeout_ms, "        \
  "backoff_ms, created_at, last_error, part) SELECT id, queue, priority, "    \
  "{now}, " STATE ", order_key, barrier, unique_key, payload, 0, "            \
  "max_attempts, timeout_ms, backoff_ms, created_at, last_error, "            \
  PART_OF("queue", "id") " FROM jobq_done WHERE "
/* Queue ?1's dead jobs after id ?2 up to id ?3 with no ordering key, no
 * unique key and no barrier. */
#define DEAD_PLAIN                                                            \
  "outcome = 'dead' AND queue = ?1 AND id > ?2 AND id <= ?3 AND order_key "   \
  "IS NULL AND unique_key IS NULL AND barrier = 0"

/* CLAIM_ENTER's last columns: whether the archive has completion ?2
 * (claim ?3) and completion ?4 (claim ?5). */
#define MARKS_FOUND                                                           \
  "(SELECT count(*) FROM jobq_done WHERE id = ?2 AND claim = ?3), (SELECT "   \
  "count(*) FROM jobq_done WHERE id = ?4 AND claim = ?5)"

/* TALLY_ADD's minute: ?1, or the database clock's when ?1 is -1. */
#define TALLY_MINUTE "CASE WHEN ?1 < 0 THEN {now} / 60000 ELSE ?1 END"

/* The sums of jobq_tally's counters, in TALLY_ADD's order. */
#define TALLY_SUMS                                                            \
  "CAST(sum(claimed) AS {bigint}), CAST(sum(empty_claims) AS {bigint}), "     \
  "CAST(sum(done) AS {bigint}), CAST(sum(failed) AS {bigint}), "              \
  "CAST(sum(retried) AS {bigint}), CAST(sum(dead) AS {bigint}), "             \
  "CAST(sum(cancelled) AS {bigint}), CAST(sum(wait_ms) AS {bigint}), "        \
  "CAST(sum(w0) AS {bigint}), CAST(sum(w1) AS {bigint}), "                    \
  "CAST(sum(w2) AS {bigint}), CAST(sum(w3) AS {bigint}), "                    \
  "CAST(sum(w4) AS {bigint}), CAST(sum(w5) AS {bigint}), "                    \
  "CAST(sum(w6) AS {bigint}), CAST(sum(w7) AS {bigint}), "                    \
  "CAST(sum(w8) AS {bigint}), CAST(sum(w9) AS {bigint})"

/* The job's ordering key is P, or P is NULL. */
#define KEY_IS(P) "coalesce(order_key, '') = coalesce(" P ", order_key, '')"

/* The end of PostgreSQL's claim in one statement (CLAIM, CLAIM_CAPPED):
 * the rows c (t their ctid, rn their place in claim order) marked
 * running for session ?3, the first ?4 started, each with its token of
 * ?5, and handed out. */
#define CLAIM_MARKED                                                             \
  "UPDATE jobq_jobs u SET state = 'running', session = ?3, "                     \
  "started = CASE WHEN c.rn <= ?4 THEN 1 ELSE 0 END, "                           \
  "claim = (?5::text[])[c.rn], claimed_at = {now}, "                             \
  "attempts = u.attempts + 1, deadline_at = CASE WHEN "                          \
  "u.timeout_ms > 0 THEN {now} + u.timeout_ms END FROM c WHERE u.ctid = c.t "    \
  "AND u.ctid = ANY(ARRAY(SELECT t FROM c)) "                                    \
  "RETURNING u.id, u.queue, u.payload, u.attempts, u.max_attempts, u.priority, " \
  "u.order_key, u.timeout_ms, u.prev_lost, u.claim, u.run_at, u.claimed_at"

/* The names of the queues with a limit (lib/limit.c), joined by commas
 * (no queue name has one), with the aggregate AGG; NULL when none. */
#define LIMITED(AGG)                                                          \
  "(SELECT " AGG " FROM jobq_queues WHERE max_running IS NOT NULL OR rate_n " \
  "IS NOT NULL OR max_per_key IS NOT NULL OR key_rate_n IS NOT NULL)"

/* Queue Q's ordering keys order its jobs: it has no limit per key. */
#define KEYS_ORDER(Q)                                                         \
  "NOT EXISTS (SELECT 1 FROM jobq_queues l WHERE l.name = " Q " AND "          \
  "l.max_per_key IS NOT NULL)"

/* How many jobs of the key of job J (of queue Q) are running. */
#define KEY_BUSY(Q, J)                                                        \
  "(SELECT count(*) FROM jobq_jobs b WHERE b.queue = " Q " AND b.order_key = " \
  J ".order_key AND b.state = 'running')"

/* How many jobs of the key of job J (of queue Q) were claimed in the last
 * MS milliseconds: the key's rows, by the primary key.  "at + 0" is no
 * bound an index can take, so that no plan reads the index on (queue, at)
 * instead, every claim of the queue's period for each job (PostgreSQL's
 * generic plan did, made while the table had no statistics: 43 ms for a
 * claim of 100 jobs, against 2 ms by the key's rows). */
#define KEY_STARTED(Q, J, MS)                                                   \
  "(SELECT CAST(coalesce(sum(s.n), 0) AS {bigint}) FROM jobq_key_starts s "   \
  "WHERE s.queue = " Q " AND s.order_key = " J ".order_key AND s.at + 0 > "    \
  "{now} - " MS ")"

/* CLAIM_PICK_KEYED's parts: how many of job x's key run (0 without a
 * limit ?3 per key) and were claimed in the last ?5 ms (0 without a rate
 * ?4 per key); the ready jobs of queue ?1 (HINT: an index); and whether
 * x's key has room under both. */
#define KEY_LOOKS                                                              \
  "CASE WHEN order_key IS NULL OR ?3 = 0 THEN 0 ELSE " KEY_BUSY("?1", "x")     \
  " END, CASE WHEN order_key IS NULL OR ?4 = 0 THEN 0 ELSE "                   \
  KEY_STARTED("?1", "x", "?5") " END"
#define FROM_KEYED(HINT)                                                       \
  " FROM jobq_jobs x" HINT " WHERE queue = ?1 AND state = 'ready' AND run_at " \
  "<= {now}"
#define KEY_ROOM                                                               \
  "(order_key IS NULL OR ((?3 = 0 OR " KEY_BUSY("?1", "x") " < ?3) AND (?4 = " \
  "0 OR " KEY_STARTED("?1", "x", "?5") " < ?4)))"

/* Eight rows of (queue, key, job id): ?1 to ?24. */
#define BLOCK_ROWS_8                                                          \
  "(?1, ?2, ?3), (?4, ?5, ?6), (?7, ?8, ?9), (?10, ?11, ?12), (?13, ?14, "    \
  "?15), (?16, ?17, ?18), (?19, ?20, ?21), (?22, ?23, ?24)"

typedef struct text {
  const char *what;    /* what it does, in words, for messages */
  const char *common;  /* every dialect without its own text */
  const char *sqlite, *pg, *mysql;
  /* A set statement whose rows each add a row (an INSERT): where the
   * dialect spells rows out (MariaDB), never run with a row repeated (see
   * jobq__sql_set). */
  int exact;
} text;

static const text texts[JOBQ_Q__COUNT] = {
    [JOBQ_Q_NOW] = {.what = "reading the database clock",
                    .common = "SELECT {now}"},
    /* The identity, the clock, and the highest job id ever given (the
     * job sequence), in one round trip. */
    [JOBQ_Q_IDENT] =
        {.what = "reading the database's identity",
         .common = NULL,
         .sqlite = "SELECT queue_id, epoch, version, {now}, coalesce((SELECT seq "
                   "FROM sqlite_sequence WHERE name = 'jobq_jobs'), 0) FROM "
                   "jobq_meta WHERE id = 1",
         /* Not a SELECT from the sequence itself: that reads its row
          * without a lock and can catch it holding the value logged
          * ahead, up to 32 more than the last one given (nextval()). */
         .pg = "SELECT queue_id, epoch, version, {now}, "
               "coalesce(pg_sequence_last_value('jobq_jobs_id_seq'::regclass), 0) "
               "FROM jobq_meta WHERE id = 1",
         .mysql = "SELECT queue_id, epoch, version, {now}, (SELECT "
                  "coalesce(AUTO_INCREMENT, 1) - 1 FROM information_schema.TABLES "
                  "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'jobq_jobs') "
                  "FROM jobq_meta WHERE id = 1"},
    /* The schema (lib/migrate.c): whether jobq_meta is there (on
     * PostgreSQL, in the schema the connection's search_path names first,
     * named: a login that may not use it is told so by the next read,
     * not that it has no schema), its version, and what else an SQLite
     * file holds. */
    [JOBQ_Q_SCHEMA_HAS_META] =
        {.what = "reading the schema version",
         .common = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = "
                   "'jobq_meta'",
         .pg = "SELECT CASE WHEN to_regclass(split_part(current_setting('search_path'), ',', "
               "1) || '.jobq_meta') IS NULL THEN 0 ELSE 1 END",
         .mysql = "SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                  "DATABASE() AND TABLE_NAME = 'jobq_meta'"},
    [JOBQ_Q_SCHEMA_VERSION] = {.what = "reading the schema version",
                               .common = "SELECT version FROM jobq_meta WHERE id = 1"},
    [JOBQ_Q_SCHEMA_OBJECTS] = {.what = "reading the database",
                               .common = "SELECT count(*) FROM sqlite_schema",
                               .pg = "",
                               .mysql = ""},
    /* The identity of a new database: ?1 its queue id, epoch 1. */
    [JOBQ_Q_META_INSERT] =
        {.what = "writing the database's identity",
         .common = "INSERT INTO jobq_meta(id, version, queue_id, epoch, created_at) VALUES "
                   "(1, 0, ?1, 1, {now}) ON CONFLICT (id) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_meta(id, version, queue_id, epoch, created_at) "
                  "VALUES (1, 0, ?1, 1, {now})"},
    [JOBQ_Q_META_VERSION_SET] = {.what = "migrating the schema",
                                 .common = "UPDATE jobq_meta SET version = ?1 WHERE id = 1"},
    [JOBQ_Q_QUEUE_ENSURE] =
        {.what = "adding the queue",
         .common = "INSERT INTO jobq_queues(name, created_at) VALUES (?1, {now}) "
         "ON CONFLICT (name) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_queues(name, created_at) "
                  "VALUES (?1, {now})"},
    [JOBQ_Q_UNIQUE_FIND] = {.what = "looking up the unique key",
                            .common = "SELECT id FROM jobq_jobs WHERE queue = ?1 AND "
                            "unique_key = ?2"},
    /* The unfinished jobs that hold unique keys of a put: for each (?1
     * queue, ?2 unique key, columns) that one holds, ?3 its place and the
     * job's id. */
    [JOBQ_Q_UNIQUES_FIND] =
        {.what = "looking up the unique keys",
         .common = "",
         .sqlite = "SELECT u.column3, j.id FROM jobq_rows(?1, ?2, ?3) AS u CROSS JOIN jobq_jobs "
                   "j ON j.queue = u.column1 AND j.unique_key = u.column2",
         .mysql = "{each_union:SELECT ?3, id FROM jobq_jobs WHERE queue = ?1 AND "
                  "unique_key = ?2}",
         .pg = "SELECT u.n, j.id FROM unnest(?1::text[], ?2::text[], ?3::bigint[]) AS "
               "u(q, k, n) JOIN jobq_jobs j ON j.queue = u.q AND j.unique_key = u.k"},
    /* A generic plan on PostgreSQL expects any row to match, and to find
     * one at once by scanning the table or the primary key: it reads all
     * of the jobs before ?2 when none is the queue's.  Bounds on the pair
     * (queue, id), in its order, leave it the queue index alone.  There
     * that index leaves out the claimed jobs, which the session index
     * holds (read in its order, so that the plan takes it): a batch or so
     * per worker. */
    [JOBQ_Q_ANY_BEFORE] = {.what = "looking for earlier jobs of the queue",
                           .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND "
                           "id < ?2 LIMIT 1",
                           .pg = "SELECT 1 FROM ((SELECT 1 FROM jobq_jobs WHERE (queue, id) > "
                                 "(?1, 0) AND (queue, id) < (?1, ?2) AND session IS NULL ORDER "
                                 "BY queue, id LIMIT 1) UNION ALL (SELECT 1 FROM jobq_jobs WHERE "
                                 "session IS NOT NULL AND queue = ?1 AND id < ?2 ORDER BY session "
                                 "LIMIT 1)) f LIMIT 1"},
    [JOBQ_Q_BARRIER_FIRST] =
        {.what = "looking for the queue's barrier",
         .common = "SELECT id, state FROM jobq_jobs WHERE queue = ?1 AND barrier = 1 "
         "ORDER BY id LIMIT 1",
         .sqlite = "SELECT id, state FROM jobq_jobs INDEXED BY "
                   "jobq_jobs_barrier WHERE queue = ?1 AND barrier = 1 "
                   "ORDER BY id LIMIT 1"},
    [JOBQ_Q_BARRIER_BEFORE] =
        {.what = "looking for an earlier barrier",
         .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND barrier = 1 AND "
         "id < ?2 LIMIT 1",
         .sqlite = "SELECT 1 FROM jobq_jobs INDEXED BY jobq_jobs_barrier "
                   "WHERE queue = ?1 AND barrier = 1 AND id < ?2 LIMIT 1"},
    /* The three looks at a key read the key index, (queue, order_key,
     * state, id), within the key and the states asked for: a key's
     * waiting jobs, however many, are not walked to find its active one.
     * The active states are named, not "<> 'waiting'", which no index
     * can seek.  On PostgreSQL, whose generic plans expect any row to
     * match at once when few keys are in the statistics, and then scan
     * the table (96 ms at 300000 jobs for a key without jobs, 14 ms at
     * 200000 for a key without an active job), the key and the states
     * are bounds, in the index's order: the planner estimates them as
     * narrow, and only that index gives the order.  Bounds on the pair
     * (queue, order_key) let it use the queue index too, with an
     * incremental sort that reads the whole queue.  No state lies
     * between 'ready' and 'running'.  KEY_TAKEN, whether a new job of the
     * key waits, also asks whether a dead job blocks the key, so that
     * both take one round trip; it finds nothing in a queue with a limit
     * per key, whose keys do not order (KEYS_ORDER). */
    [JOBQ_Q_KEY_TAKEN] = {.what = "looking for the ordering key's jobs",
                          .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND "
                          "order_key = ?2 AND " KEYS_ORDER("?1") " UNION ALL SELECT 1 FROM "
                          "jobq_blocked WHERE queue = ?1 AND order_key = ?2 AND "
                          KEYS_ORDER("?1") " LIMIT 1",
                          .pg = "(SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND order_key >= "
                                "?2 AND order_key <= ?2 AND " KEYS_ORDER("?1") " ORDER BY "
                                "order_key, state, id LIMIT 1) UNION ALL (SELECT 1 FROM "
                                "jobq_blocked WHERE queue = ?1 AND order_key = ?2 AND "
                                KEYS_ORDER("?1") ") LIMIT 1"},
    /* KEY_TAKEN for each of queue ?1's keys ?2 (a column): the keys
     * found. */
    [JOBQ_Q_KEYS_TAKEN] =
        {.what = "looking for the keys' jobs",
         .common = "",
         .sqlite = "SELECT u.column1 FROM jobq_rows(?2) AS u WHERE EXISTS (SELECT 1 FROM "
                   "jobq_jobs j WHERE j.queue = ?1 AND j.order_key = u.column1) OR EXISTS "
                   "(SELECT 1 FROM jobq_blocked b WHERE b.queue = ?1 AND b.order_key = "
                   "u.column1)",
         .mysql = "SELECT order_key FROM jobq_jobs WHERE queue = ?1 AND order_key IN "
                  "({each:?2}) GROUP BY order_key UNION SELECT order_key FROM jobq_blocked "
                  "WHERE queue = ?1 AND order_key IN ({each:?2})",
         .pg = "SELECT u.k FROM unnest(?2::text[]) AS u(k) WHERE EXISTS (SELECT 1 FROM "
               "jobq_jobs j WHERE j.queue = ?1 AND j.order_key = u.k) OR EXISTS (SELECT 1 "
               "FROM jobq_blocked b WHERE b.queue = ?1 AND b.order_key = u.k)"},
    [JOBQ_Q_KEY_ACTIVE] = {.what = "looking for the ordering key's active job",
                           .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND "
                           "order_key = ?2 AND state IN ('ready', 'running') LIMIT 1",
                           .pg = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND (order_key, "
                                 "state) >= (?2, 'ready') AND (order_key, state) <= (?2, "
                                 "'running') AND order_key IS NOT NULL ORDER BY order_key, "
                                 "state, id LIMIT 1"},
    /* The key's first job by id that waits, for its turn or (pending)
     * for the jobs it was put after: id and state.  Only a waiting one
     * may be made ready: a pending one keeps the key's later jobs
     * behind it.  The first of each state, then the first of the two. */
    [JOBQ_Q_KEY_NEXT] = {.what = "finding the ordering key's next job",
                         .common = "SELECT id, state FROM (SELECT id, state FROM (SELECT id, "
                                   "state FROM jobq_jobs WHERE queue = ?1 AND order_key = ?2 "
                                   "AND state = 'pending' ORDER BY id LIMIT 1) p UNION ALL "
                                   "SELECT id, state FROM (SELECT id, state FROM jobq_jobs "
                                   "WHERE queue = ?1 AND order_key = ?2 AND state = 'waiting' "
                                   "ORDER BY id LIMIT 1) w) f ORDER BY id LIMIT 1",
                         .pg = "(SELECT id, state FROM jobq_jobs WHERE queue = ?1 AND "
                               "(order_key, state) >= (?2, 'pending') AND (order_key, state) "
                               "<= (?2, 'pending') AND order_key IS NOT NULL ORDER BY "
                               "order_key, state, id LIMIT 1) UNION ALL (SELECT id, state FROM "
                               "jobq_jobs WHERE queue = ?1 AND (order_key, state) >= (?2, "
                               "'waiting') AND (order_key, state) <= (?2, 'waiting') AND "
                               "order_key IS NOT NULL ORDER BY order_key, state, id LIMIT 1) "
                               "ORDER BY id LIMIT 1"},
    /* Whether a job of key ?2 of queue ?1 older than job ?3 is unfinished,
     * or a dead one blocks the key; nothing where keys do not order. */
    [JOBQ_Q_KEY_BEFORE] = {.what = "looking for the ordering key's earlier jobs",
                           .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND order_key = "
                                     "?2 AND id < ?3 AND " KEYS_ORDER("?1") " UNION ALL SELECT "
                                     "1 FROM jobq_blocked WHERE queue = ?1 AND order_key = ?2 "
                                     "AND " KEYS_ORDER("?1") " LIMIT 1",
                           .pg = "(SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND order_key >= "
                                 "?2 AND order_key <= ?2 AND id < ?3 AND " KEYS_ORDER("?1")
                                 " ORDER BY order_key, state, id LIMIT 1) UNION ALL (SELECT 1 "
                                 "FROM jobq_blocked WHERE queue = ?1 AND order_key = ?2 AND "
                                 KEYS_ORDER("?1") ") LIMIT 1"},
    [JOBQ_Q_BLOCKED] = {.what = "looking for a dead job that blocks the ordering key",
                        .common = "SELECT job_id FROM jobq_blocked WHERE queue = ?1 AND "
                        "order_key = ?2"},
    [JOBQ_Q_BLOCK] =
        {.what = "marking the ordering key blocked",
         .common = "INSERT INTO jobq_blocked(queue, order_key, job_id) VALUES "
         "(?1, ?2, ?3) ON CONFLICT (queue, order_key) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_blocked(queue, order_key, job_id) "
                  "VALUES (?1, ?2, ?3)"},
    /* Eight holds at a time (lib/order.c, hold_keys). */
    [JOBQ_Q_BLOCK_8] =
        {.what = "marking the ordering keys blocked",
         .common = "INSERT INTO jobq_blocked(queue, order_key, job_id) VALUES " BLOCK_ROWS_8
                   " ON CONFLICT (queue, order_key) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_blocked(queue, order_key, job_id) "
                  "VALUES " BLOCK_ROWS_8},
    [JOBQ_Q_UNBLOCK] = {.what = "unblocking the ordering key",
                        .common = "DELETE FROM jobq_blocked WHERE job_id = ?1"},
    [JOBQ_Q_BLOCKED_BY] = {.what = "looking for the key the job blocks",
                           .common = "SELECT 1 FROM jobq_blocked WHERE job_id = ?1"},
    [JOBQ_Q_MAKE_READY] = {.what = "making the next job ready",
                           .common = "UPDATE jobq_jobs SET state = 'ready' WHERE id = ?1"},
    /* ?3: run_at (0: now + ?4, the delay).  A unique key already taken
     * inserts nothing (MySQL: the store counts its duplicate-key error as
     * no row, which needs no UPDATE right and locks no existing row). */
    [JOBQ_Q_INSERT_JOB] =
        {.what = "putting the job",
         .common = "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, "
         "barrier, unique_key, payload, max_attempts, timeout_ms, backoff_ms, "
         "created_at, part) VALUES (?1, ?2, CASE WHEN CAST(?3 AS {bigint}) > 0 THEN "
         "CAST(?3 AS {bigint}) ELSE {now} + ?4 END, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, {now}, "
         PART_OF("?1", "CAST(?13 AS {bigint})") ") "
         "ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL "
         "DO NOTHING RETURNING id",
         /* Without RETURNING, which costs SQLite a temporary table per
          * statement: the store reads the new id (insert_id). */
         .sqlite = "INSERT INTO jobq_jobs(queue, priority, run_at, state, "
                   "order_key, barrier, unique_key, payload, max_attempts, "
                   "timeout_ms, backoff_ms, created_at, part) VALUES (?1, ?2, CASE "
                   "WHEN ?3 > 0 THEN ?3 ELSE {now} + ?4 END, ?5, ?6, ?7, ?8, "
                   "?9, ?10, ?11, ?12, {now}, " PART_OF("?1", "?13") ") ON CONFLICT (queue, unique_key) "
                   "WHERE unique_key IS NOT NULL DO NOTHING",
         .mysql = "INSERT INTO jobq_jobs(queue, priority, run_at, state, "
                  "order_key, barrier, unique_key, payload, max_attempts, "
                  "timeout_ms, backoff_ms, created_at, part) VALUES (?1, ?2, CASE "
                  "WHEN ?3 > 0 THEN ?3 ELSE {now} + ?4 END, ?5, ?6, ?7, ?8, "
                  "?9, ?10, ?11, ?12, {now}, " PART_OF("?1", "?13") ")"},
    /* The queues ?1 (a column, each once) made sure of. */
    [JOBQ_Q_QUEUES_ENSURE] =
        {.what = "adding the queues",
         .common = "",
         .sqlite = "INSERT INTO jobq_queues(name, created_at) SELECT column1, {now} FROM "
                   "jobq_rows(?1) WHERE true ON CONFLICT (name) DO NOTHING",
         .pg = "INSERT INTO jobq_queues(name, created_at) SELECT q, {now} FROM "
               "unnest(?1::text[]) q ON CONFLICT (name) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_queues(name, created_at) VALUES {each:(?1, {now})}"},
    /* MariaDB / MySQL and SQLite: which of the jobs of a put must wait,
     * as PostgreSQL's PUT_KEYED_ROWS decides within the INSERT, once for
     * each queue and key of the batch (lib/put.c): for each queue ?1 (?2
     * its place), whether it has an unfinished barrier, whether its keys
     * order (no limit per key) and its parts; PUT_WAITS_KEYS: the places ?3 of the
     * keys (?1 queue, ?2 key) that an unfinished job or a blocked key
     * holds, compared as they are (in the columns' collation).  Reads of
     * their own, before the INSERT: on MariaDB the reads within an INSERT
     * lock the rows they read, and a put that held a key's lock then
     * waited for the row of a job being finished, whose finisher waited
     * for the key's lock; on SQLite they ran again for each row, a
     * seventh of the time of a batch of a thousand jobs. */
    [JOBQ_Q_PUT_WAITS] =
        {.what = "looking for the jobs' barriers",
         .common = "",
         .sqlite = "SELECT u.column2, EXISTS (SELECT 1 FROM jobq_jobs b INDEXED BY "
                   "jobq_jobs_barrier WHERE b.queue = u.column1 AND b.barrier = 1), "
                   KEYS_ORDER("u.column1") ", " QUEUE_PARTS("u.column1") " FROM "
                   "jobq_rows(?1, ?2) AS u",
         .mysql = "{each_union:SELECT ?2, EXISTS (SELECT 1 FROM jobq_jobs b WHERE b.queue = ?1 "
                  "AND b.barrier = 1), " KEYS_ORDER("?1") ", " QUEUE_PARTS("?1") " FROM DUAL}"},
    [JOBQ_Q_PUT_WAITS_KEYS] =
        {.what = "looking for the jobs' keys",
         .common = "",
         .sqlite = "SELECT u.column3 FROM jobq_rows(?1, ?2, ?3) AS u WHERE EXISTS (SELECT 1 "
                   "FROM jobq_jobs j WHERE j.queue = u.column1 AND j.order_key = u.column2) OR "
                   "EXISTS (SELECT 1 FROM jobq_blocked x WHERE x.queue = u.column1 AND "
                   "x.order_key = u.column2)",
         .mysql = "{each_union:SELECT ?3 FROM DUAL WHERE EXISTS (SELECT 1 FROM jobq_jobs j "
                  "WHERE j.queue = ?1 AND j.order_key = ?2) OR EXISTS (SELECT 1 FROM "
                  "jobq_blocked x WHERE x.queue = ?1 AND x.order_key = ?2)}"},
    /* Jobs without a barrier or an ordering key, put in the order given,
     * after their queues' locks: ?1 queue, ?2 priority, ?3 run_at (0: now
     * + ?4, the delay), ?5 payload, ?6 max_attempts, ?7 timeout, ?8
     * backoff, ?9 unique key (NULL: none; no job holds it, UNIQUES_FIND
     * made sure, and one that took it since fails the INSERT), all
     * columns (PUT_KEYED_ROWS adds ?10 the key and ?11, whether an earlier
     * job of the batch has it; ?13 is the job's hash, ?12 a keyless job's
     * place among its queue's keyless jobs of the batch and ?14 their
     * number, for PostgreSQL's runs, PG_RUN_HASH; ?15, not a column, the
     * batch's queue when it has only one; ?16 the job's queue's parts
     * where PUT_WAITS read them).  On PostgreSQL ?9, and ?10 with ?11,
     * are NULL when no job of the batch has a unique key, or an ordering
     * key: unnest() pads them.  A queue with
     * an unfinished barrier gets them waiting.  The statement decides, so
     * that PostgreSQL puts in one round trip, its ids read with the
     * commit's; on MariaDB and SQLite, PUT_WAITS has decided (?11). */
    [JOBQ_Q_PUT_ROWS] =
        {.what = "putting jobs",
         .exact = 1,
         .common = "",
         .sqlite = "INSERT INTO jobq_jobs(queue, priority, run_at, state, payload, "
                   "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) SELECT u.column1, "
                   "u.column2, CASE WHEN u.column3 > 0 THEN u.column3 ELSE {now} + u.column4 "
                   "END, CASE WHEN u.column11 = 1 THEN 'waiting' ELSE 'ready' END, u.column5, "
                   "u.column6, u.column7, u.column8, {now}, u.column9, "
                   PART_OF_READ("u.column12", "u.column10") " FROM "
                   "jobq_rows(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?13, ?11, ?16) AS u",
         .pg = "INSERT INTO jobq_jobs(queue, priority, run_at, state, payload, "
               "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) SELECT u.q, u.p, CASE "
               "WHEN u.r > 0 THEN u.r ELSE {now} + u.d END, CASE WHEN EXISTS (SELECT 1 "
               "FROM jobq_jobs b WHERE b.queue = u.q AND b.barrier = 1) THEN 'waiting' "
               "ELSE 'ready' END, u.pl, u.m, u.t, u.b, {now}, u.u, "
               PART_OF_READ("u.pp", PG_RUN_HASH("u.pp")) " FROM (SELECT *, " PG_PUT_PARTS
               " AS pp FROM unnest(?1::text[], ?2::bigint[], ?3::bigint[], ?4::bigint[], "
               "?5::bytea[], ?6::bigint[], ?7::bigint[], ?8::bigint[], ?9::text[], ?10::text[], "
               "?11::bigint[], ?12::bigint[], ?13::bigint[], ?14::bigint[]) WITH ORDINALITY AS "
               "u(q, p, r, d, pl, m, t, b, u, k, a, o, h, c, n)) u ORDER BY u.n RETURNING id",
         .mysql = "INSERT INTO jobq_jobs(queue, priority, run_at, state, payload, "
                  "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) VALUES "
                  "{each:(?1, ?2, CASE WHEN ?3 > 0 THEN ?3 ELSE {now} + ?4 END, CASE WHEN ?11 "
                  "= 1 THEN 'waiting' ELSE 'ready' END, ?5, ?6, ?7, ?8, {now}, ?9, "
                  PART_OF_READ("?16", "?13") ")}"},
    /* PUT_ROWS with ordering keys, after the keys' locks, so that the
     * statement sees every job of its keys put or finished before: a
     * keyed job waits behind an earlier one of its key in the batch, or
     * as KEY_TAKEN decides (the key's jobs in the key index, or a dead
     * job that blocks it); never in a queue with a limit per key, whose
     * keys do not order (KEYS_ORDER, lib/limit.c). */
    [JOBQ_Q_PUT_KEYED_ROWS] =
        {.what = "putting jobs",
         .exact = 1,
         .common = "",
         .sqlite = "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, payload, "
                   "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) SELECT u.column1, "
                   "u.column2, CASE WHEN u.column3 > 0 THEN u.column3 ELSE {now} + u.column4 "
                   "END, CASE WHEN u.column10 = 1 THEN 'waiting' ELSE 'ready' END, u.column9, "
                   "u.column5, u.column6, u.column7, u.column8, {now}, u.column11, "
                   PART_OF_READ("u.column13", "u.column12") " FROM "
                   "jobq_rows(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?10, ?11, ?9, ?13, ?16) AS u",
         .pg = "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, payload, "
               "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) SELECT u.q, "
               "u.p, CASE "
               "WHEN u.r > 0 THEN u.r ELSE {now} + u.d END, CASE WHEN EXISTS (SELECT 1 "
               "FROM jobq_jobs b WHERE b.queue = u.q AND b.barrier = 1) OR u.k IS NOT NULL "
               "AND (u.a = 1 OR EXISTS (SELECT 1 FROM (SELECT 1 FROM jobq_jobs j WHERE "
               "j.queue = u.q AND j.order_key >= u.k AND j.order_key <= u.k ORDER BY "
               "j.order_key, j.state, j.id LIMIT 1) f) OR EXISTS (SELECT 1 FROM "
               "jobq_blocked x WHERE x.queue = u.q AND x.order_key = u.k)) AND "
               KEYS_ORDER("u.q") " THEN 'waiting' ELSE 'ready' END, u.k, u.pl, u.m, u.t, u.b, "
               "{now}, u.u, " PART_OF_READ("u.pp", PG_RUN_HASH("u.pp")) " FROM (SELECT *, "
               PG_PUT_PARTS " AS pp FROM unnest(?1::text[], ?2::bigint[], ?3::bigint[], "
               "?4::bigint[], ?5::bytea[], ?6::bigint[], ?7::bigint[], ?8::bigint[], "
               "?10::text[], ?11::bigint[], ?9::text[], ?12::bigint[], ?13::bigint[], "
               "?14::bigint[]) WITH ORDINALITY AS u(q, p, r, d, pl, m, t, b, k, a, u, o, h, c, "
               "n)) u ORDER BY u.n RETURNING id",
         .mysql = "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key, payload, "
                  "max_attempts, timeout_ms, backoff_ms, created_at, unique_key, part) VALUES "
                  "{each:(?1, ?2, CASE WHEN ?3 > 0 THEN ?3 ELSE {now} + ?4 END, CASE WHEN ?11 "
                  "= 1 THEN 'waiting' ELSE 'ready' END, ?10, ?5, ?6, ?7, ?8, {now}, ?9, "
                  PART_OF_READ("?16", "?13") ")}"},
    [JOBQ_Q_SESSION_INSERT] =
        {.what = "starting the session",
         .common = "INSERT INTO jobq_sessions(id, epoch, name, host, pid, started_at, "
         "heartbeat_at, expires_at, lease_ms) VALUES (?1, ?2, ?3, ?4, ?5, "
         "{now}, {now}, {now} + ?6, ?6)"},
    /* A claim or an acknowledgement holds its session row: reapers pass
     * the session by until it commits (jobq__session_enter); heartbeats
     * (which change no key) still go through. */
    /* An acknowledgement's lock on its session's row; nothing is read. */
    [JOBQ_Q_SESSION_LOCK] =
        {.what = "locking the session",
         .common = "SELECT 1 FROM jobq_sessions WHERE id = ?1",
         .pg = "SELECT 1 FROM jobq_sessions WHERE id = ?1 FOR KEY SHARE",
         .mysql = "SELECT 1 FROM jobq_sessions WHERE id = ?1 LOCK IN SHARE MODE"},
    /* A claim's look before it claims: IDENT's columns, then the session's
     * epoch and whether its lease holds (NULL when there is no such
     * session), with SESSION_LOCK's lock on the session's row and none on
     * jobq_meta's; then the queues with a limit (lib/limit.c); then
     * whether the archive has completions ?2 (claim ?3) and ?4 (claim ?5),
     * the handle's first since its last check and its last (0 and ''
     * when none: lib/mark.c); then the queues in parts (lib/part.c). */
    [JOBQ_Q_CLAIM_ENTER] =
        {.what = "checking the session before claiming",
         .common = NULL,
         .sqlite = "SELECT m.queue_id, m.epoch, m.version, {now}, coalesce((SELECT "
                   "seq FROM sqlite_sequence WHERE name = 'jobq_jobs'), 0), s.epoch, "
                   "CASE WHEN s.expires_at >= {now} THEN 1 ELSE 0 END, "
                   LIMITED("group_concat(name, ',')") ", " MARKS_FOUND ", "
                   PARTED("group_concat(name, ',')") " FROM jobq_meta m "
                   "LEFT JOIN jobq_sessions s ON s.id = ?1 WHERE m.id = 1",
         .pg = "SELECT m.queue_id, m.epoch, m.version, {now}, "
               "coalesce(pg_sequence_last_value('jobq_jobs_id_seq'::regclass), 0), "
               "s.epoch, CASE WHEN s.expires_at >= {now} THEN 1 ELSE 0 END, "
               LIMITED("string_agg(name, ',')") ", " MARKS_FOUND ", "
               PARTED("string_agg(name, ',')") " FROM jobq_meta m LEFT "
               "JOIN LATERAL (SELECT epoch, expires_at FROM jobq_sessions WHERE id = ?1 FOR "
               "KEY SHARE) s ON true WHERE m.id = 1",
         .mysql = "SELECT m.queue_id, m.epoch, m.version, {now}, (SELECT "
                  "coalesce(AUTO_INCREMENT, 1) - 1 FROM information_schema.TABLES "
                  "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'jobq_jobs'), "
                  "s.epoch, CASE WHEN s.expires_at >= {now} THEN 1 ELSE 0 END, "
                  LIMITED("GROUP_CONCAT(name SEPARATOR ',')") ", " MARKS_FOUND ", "
                  PARTED("GROUP_CONCAT(name SEPARATOR ',')") " FROM "
                  "jobq_meta m LEFT JOIN (SELECT epoch, expires_at FROM jobq_sessions WHERE "
                  "id = ?1 LOCK IN SHARE MODE) s ON 1 = 1 WHERE m.id = 1"},
    /* The columns a claim hands out (lib/claim.c): id, queue, payload,
     * attempt, max_attempts, priority, order_key, timeout_ms, prev_lost,
     * claim, run_at, claimed_at. */
    /* PostgreSQL's claim in one statement: ?1 the queues (a column, or
     * NULL: every queue), ?2 how many, ?3 the session, ?4 how many of
     * them start at once (the rest are held back), ?5 ?2 claim tokens (a
     * column).  The lateral join walks the claim index of each queue in
     * order, FOR UPDATE SKIP LOCKED; the rows it locked are updated where
     * they lie (ctid), with no second look-up, and take their tokens in
     * claim order.  The ctid list makes the plan fetch just those rows (a
     * TID scan) whatever the statistics say: joined on ctid or id alone,
     * a generic plan made with a large backlog analyzed expects ?2 to be
     * big and reads the whole table into a hash join, 13 ms a claim at
     * 30000 jobs.  The others pick (CLAIM_PICK), then mark (CLAIM_MARK). */
    [JOBQ_Q_CLAIM] =
        {.what = "claiming jobs",
         .common = "",
         .pg = "WITH q AS (SELECT name FROM jobq_queues WHERE paused = 0 AND "
               "(?1::text[] IS NULL OR name = ANY(?1::text[]))), "
               "c AS (SELECT j.ctid AS t, row_number() OVER (ORDER BY j.priority DESC, "
               "j.run_at, j.id) AS rn FROM q CROSS JOIN LATERAL (SELECT ctid, id, priority, "
               "run_at FROM jobq_jobs WHERE queue = q.name AND state = 'ready' AND run_at <= "
               "{now} ORDER BY priority DESC, run_at, id LIMIT ?2 FOR UPDATE SKIP LOCKED) j "
               "ORDER BY j.priority DESC, j.run_at, j.id LIMIT ?2) "
               CLAIM_MARKED},
    /* Queue ?1's jobs to claim, up to ?2, in claim order, by the claim
     * index (MariaDB: named, so that the ORDER BY needs no sort; locked
     * and skipping the rows others hold).  The claim and its time are the
     * library's to give (CLAIM_MARK). */
    [JOBQ_Q_CLAIM_PICK] =
        {.what = "claiming jobs",
         .common = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                   "timeout_ms, prev_lost, NULL, run_at, NULL FROM jobq_jobs WHERE queue = ?1 "
                   "AND state = 'ready' AND run_at <= {now} ORDER BY priority DESC, run_at, id "
                   "LIMIT ?2",
         /* PostgreSQL claims in steps only with queues in parts. */
         .pg = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
               "timeout_ms, prev_lost, NULL, run_at, NULL FROM jobq_jobs WHERE queue = ?1 "
               "AND state = 'ready' AND run_at <= {now} ORDER BY priority DESC, run_at, id "
               "LIMIT ?2 FOR UPDATE SKIP LOCKED",
         .mysql = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                  "timeout_ms, prev_lost, NULL, run_at, NULL FROM jobq_jobs FORCE INDEX "
                  "(jobq_jobs_claim) WHERE queue = ?1 AND state = 'ready' AND run_at <= {now} "
                  "ORDER BY priority DESC, run_at, id LIMIT ?2{skip_locked}"},
    /* The picked jobs ?4 (a column) marked running for session ?1,
     * started at once or held back (?2), claimed at ?3, each with its
     * claim ?5 (a column).  Their rows are this transaction's: locked by
     * the pick, or the file is (SQLite). */
    [JOBQ_Q_CLAIM_MARK] =
        {.what = "claiming jobs",
         .common = "",
         .sqlite = "UPDATE jobq_jobs SET state = 'running', session = ?1, started = ?2, "
                   "claimed_at = ?3, attempts = attempts + 1, deadline_at = CASE WHEN "
                   "timeout_ms > 0 THEN ?3 + timeout_ms END, claim = v.column2 FROM "
                   "jobq_rows(?4, ?5) AS v WHERE jobq_jobs.id = v.column1 AND state = 'ready'",
         .pg = "UPDATE jobq_jobs SET state = 'running', session = ?1, started = ?2, "
               "claimed_at = ?3, attempts = attempts + 1, deadline_at = CASE WHEN "
               "timeout_ms > 0 THEN ?3 + timeout_ms END, claim = v.c FROM "
               "unnest(?4::bigint[], ?5::text[]) AS v(i, c) WHERE jobq_jobs.id = v.i AND "
               "state = 'ready'",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (PRIMARY) SET state = 'running', session = ?1, "
                  "started = ?2, claimed_at = ?3, attempts = attempts + 1, deadline_at = CASE "
                  "WHEN timeout_ms > 0 THEN ?3 + timeout_ms END, claim = " BY_ID("?4", "?5")
                  " WHERE id IN ({each:?4})"},
    [JOBQ_Q_SESSION_DELETE] = {.what = "ending the session",
                               .common = "DELETE FROM jobq_sessions WHERE id = ?1"},
    /* On MariaDB/MySQL through the session's index by name: on a table of a
     * few rows the server would read all of it in id order, locking each
     * row it passed, and wait for other sessions' jobs. */
    [JOBQ_Q_SESSION_JOBS] = {.what = "reading the session's jobs",
                             .common = "SELECT id, attempts, max_attempts, "
                             "cancel_requested, queue, started, claim FROM jobq_jobs "
                             "WHERE session = ?1 ORDER BY id{for_update}",
                             .mysql = "SELECT id, attempts, max_attempts, "
                             "cancel_requested, queue, started, claim FROM jobq_jobs FORCE "
                             "INDEX (jobq_jobs_session) WHERE session = ?1 ORDER BY id "
                             "FOR UPDATE"},
    /* A claim's jobs by the start their tokens share (?2, ?3 characters
     * long), for a claim whose jobs are not known (lib/session.c). */
    [JOBQ_Q_CLAIM_HELD] = {.what = "reading the jobs of a claim",
                           .common = "SELECT id, claim FROM jobq_jobs WHERE session = ?1 "
                           "AND substr(claim, 1, ?3) = ?2 AND state = 'running'"},
    /* The held-back jobs ?1 (a column) that session ?2 started and still
     * holds.  On PostgreSQL the session is compared through coalesce(),
     * so that no plan starts from the session's index (see
     * PG's COMPLETE). */
    [JOBQ_Q_STARTED] = {.what = "noting the jobs the session started",
                        .common = "",
                        .sqlite = "UPDATE jobq_jobs SET started = 1 WHERE id IN (SELECT "
                                  "column1 FROM jobq_rows(?1)) AND session = ?2 AND started = 0",
                        .pg = "UPDATE jobq_jobs SET started = 1 WHERE id = ANY(?1::bigint[]) "
                              "AND coalesce(session, '') = ?2 AND started = 0",
                        .mysql = "UPDATE jobq_jobs FORCE INDEX (PRIMARY) SET started = 1 WHERE "
                                 "id IN ({each:?1}) AND session = ?2 AND started = 0"},
    [JOBQ_Q_HEARTBEAT] =
        {.what = "renewing the session's lease",
         .common = "UPDATE jobq_sessions SET heartbeat_at = {now}, expires_at = {now} + "
         "lease_ms, in_flight = ?2, done = ?3, failed = ?4 WHERE id = ?1 AND "
         "epoch = ?5"},
    /* What the stall guard weighs (lib/session.c): the database clock,
     * the last heartbeat of any session (NULL: no session), the longest
     * lease, when the guard last held reaping back; and the sessions
     * whose lease runs (jobq_session_peers). */
    [JOBQ_Q_STALL] = {.what = "checking whether any session heartbeats",
                      .common = "SELECT {now}, s.beat, s.lease, m.guard_at, s.live FROM "
                      "jobq_meta m, (SELECT max(heartbeat_at) AS beat, max(lease_ms) AS lease, "
                      "sum(CASE WHEN expires_at >= {now} THEN 1 ELSE 0 END) AS live FROM "
                      "jobq_sessions) s WHERE m.id = 1"},
    /* Every session gets a lease from now; their heartbeats stay as they
     * were, for the guard's next look and for `jobq sessions`. */
    [JOBQ_Q_RENEW_ALL] = {.what = "renewing every lease after a stall",
                          .common = "UPDATE jobq_sessions SET expires_at = "
                          "{greatest}(expires_at, {now} + lease_ms)"},
    [JOBQ_Q_GUARD_SET] = {.what = "recording the stall guard's look",
                          .common = "UPDATE jobq_meta SET guard_at = ?1 WHERE id = 1"},
    /* ?2: the reaper's own session, which its heartbeat renews instead. */
    [JOBQ_Q_EXPIRED] = {.what = "looking for expired sessions",
                        .common = "SELECT id FROM jobq_sessions WHERE expires_at < {now} "
                        "AND id <> ?2 ORDER BY expires_at LIMIT ?1{skip_locked}"},
    /* Running jobs whose session is gone (it can only happen through a
     * restore or a hand edit): they are lost like a reaped session's.
     * SQLite, which keeps no statistics here, would rather walk the whole
     * table in id order than sort the few jobs of the session index: 140
     * ms a look beside a million ready jobs, inside the write transaction
     * of each handle's first reap. */
    [JOBQ_Q_ORPHANS] =
        {.what = "looking for running jobs without a session",
         .common = "SELECT id FROM jobq_jobs WHERE session IS NOT NULL AND NOT EXISTS "
         "(SELECT 1 FROM jobq_sessions s WHERE s.id = jobq_jobs.session) "
         "ORDER BY id LIMIT ?1{skip_locked}",
         .sqlite = "SELECT id FROM jobq_jobs INDEXED BY jobq_jobs_session WHERE session "
                   "IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jobq_sessions s WHERE "
                   "s.id = jobq_jobs.session) ORDER BY id LIMIT ?1"},
    /* ?3: 1 gives the attempt back (a job its worker held back). */
    [JOBQ_Q_REQUEUE_LOST] =
        {.what = "putting a lost job back in its queue",
         .common = "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "
         "deadline_at = NULL, prev_lost = 1, last_error = ?2, attempts = attempts - ?3 "
         "WHERE id = ?1"},
    [JOBQ_Q_REQUEUE_GIVEN_BACK] =
        {.what = "giving a claimed job back",
         .common = "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "
         "deadline_at = NULL, attempts = attempts - 1 WHERE id = ?1"},
    /* An ended session's jobs that go back to ready, all at once (its
     * jobs locked beforehand by SESSION_JOBS, in id order): given back at
     * its close without spending their attempts; or, when it was lost,
     * those it started spending theirs (?2), the others not (?3), except
     * a started one on its last attempt, which dies.  A job whose cancel
     * was asked is cancelled instead.  On MariaDB/MySQL through the
     * session's index, as SESSION_JOBS. */
    [JOBQ_Q_SESSION_GIVE_BACK] =
        {.what = "giving the session's jobs back",
         .common = "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "
         "deadline_at = NULL, attempts = attempts - 1 WHERE session = ?1 AND "
         "cancel_requested = 0",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (jobq_jobs_session) SET state = 'ready', "
         "session = NULL, claim = NULL, deadline_at = NULL, attempts = attempts - 1 "
         "WHERE session = ?1 AND cancel_requested = 0"},
    [JOBQ_Q_SESSION_REQUEUE_LOST] =
        {.what = "putting an expired session's jobs back in their queues",
         .common = "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "
         "deadline_at = NULL, prev_lost = 1, last_error = CASE WHEN started = 1 THEN ?2 "
         "ELSE ?3 END, attempts = attempts + started - 1 WHERE session = ?1 AND "
         "cancel_requested = 0 AND (started = 0 OR attempts < max_attempts)",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (jobq_jobs_session) SET state = 'ready', "
         "session = NULL, claim = NULL, deadline_at = NULL, prev_lost = 1, last_error = "
         "CASE WHEN started = 1 THEN ?2 ELSE ?3 END, attempts = attempts + started - 1 "
         "WHERE session = ?1 AND cancel_requested = 0 AND (started = 0 OR attempts < "
         "max_attempts)"},
    [JOBQ_Q_CANCEL_LIST] = {.what = "reading the session's cancel requests",
                            .common = "SELECT id FROM jobq_jobs WHERE session = ?1 AND "
                            "cancel_requested = 1 ORDER BY id"},
    /* The fence: the job is still this claim's, locked until commit. */
    [JOBQ_Q_ACK_ROW] =
        {.what = "reading the acknowledged job",
         .common = "SELECT attempts, max_attempts, backoff_ms, cancel_requested, queue, "
         "order_key, barrier, children FROM jobq_jobs WHERE id = ?1 AND session = ?2 "
         "AND claim = ?3 AND state = 'running'{for_update}"},
    /* PostgreSQL only (a writable WITH): the completions ?1 (ids), ?2
     * (claims), ?3 (results), all columns, of session ?4, of jobs that
     * are no barrier in queues without one, fenced like ACK_ROW and moved
     * to the archive in one statement, under their queues' shared locks;
     * with ?5 (1), under their keys' locks, also of jobs with ordering
     * keys, each key handed on to its next waiting job as lib/order.c
     * does (the key not blocked, no pending job of the key before it;
     * no barrier before it, since the queue has none).  Its rows are the ids archived with their queues, for
     * the counters (lib/counts.c), then (id 0) the queues of the jobs
     * made ready.  The session is compared through coalesce() so that no
     * plan starts from the session's index: analyzed while the session
     * held nothing, it promises one job, and that plan compared each of
     * the session's jobs with every acknowledgement (1000 by 1000:
     * 180 ms).  The primary key finds each job at once. */
    [JOBQ_Q_COMPLETE] =
        {.what = "completing jobs",
         .common = "",
         .pg = COMPLETE_ARCHIVE ", k AS (SELECT DISTINCT queue, order_key FROM d WHERE "
               "order_key IS NOT NULL), p AS (UPDATE jobq_jobs w SET state = 'ready' FROM k "
               "WHERE w.id = (SELECT x.id FROM jobq_jobs x WHERE x.queue = k.queue AND "
               "(x.order_key, x.state) >= (k.order_key, 'waiting') AND (x.order_key, "
               "x.state) <= (k.order_key, 'waiting') AND x.order_key IS NOT NULL ORDER BY "
               "x.order_key, x.state, x.id LIMIT 1) AND NOT EXISTS (SELECT 1 FROM "
               "jobq_blocked b WHERE b.queue = k.queue AND b.order_key = k.order_key) "
               "AND NOT EXISTS (SELECT 1 FROM jobq_jobs y WHERE y.queue = k.queue AND "
               "(y.order_key, y.state) >= (k.order_key, 'pending') AND (y.order_key, "
               "y.state) <= (k.order_key, 'pending') AND y.order_key IS NOT NULL AND y.id "
               "< w.id) RETURNING w.queue) SELECT id, queue FROM i UNION ALL SELECT DISTINCT "
               "0::bigint, queue FROM p" COMPLETE_PARENTS},
    /* The same when no job of the batch has a key: no key to hand on, so
     * neither the update of the next job nor jobq_blocked (fewer
     * relations to lock, less to plan). */
    [JOBQ_Q_COMPLETE_UNKEYED] = {.what = "completing jobs",
                                 .common = "",
                                 .pg = COMPLETE_ARCHIVE " SELECT id, queue FROM i"
                                     COMPLETE_PARENTS},
    /* ACK_ROW for each of the jobs ?1 (a column, ids ascending) of
     * session ?2, each locked in that order, in the columns of
     * jobq__ack_got_row(): id, claim (which the library compares), the
     * row's columns, where the row is (PostgreSQL: its ctid, for
     * REQUEUE_ROWS and ARCHIVE_ROWS; NULL elsewhere), and whether jobs
     * were put after it (lib/after.c).  PostgreSQL looks
     * each job up by its id alone, as the claim looks up each queue: read
     * as one set ("id = ANY", or joined to the ids), the generic plan
     * made on an emptied table read the whole table; and compares the
     * session through coalesce(), so that no plan starts from the
     * session's index (see COMPLETE).  SQLite, whose transaction holds
     * the whole file, reads them in any order. */
    [JOBQ_Q_ACK_ROWS] =
        {.what = "reading the acknowledged jobs",
         .common = "",
         .sqlite = "SELECT j.id, j.claim, j.attempts, j.max_attempts, j.backoff_ms, "
                   "j.cancel_requested, j.queue, j.order_key, j.barrier, NULL, j.children FROM "
                   "jobq_rows(?1) AS a CROSS JOIN jobq_jobs j ON j.id = a.column1 WHERE "
                   "j.session = ?2 AND j.state = 'running'",
         .pg = "SELECT j.id, j.claim, j.attempts, j.max_attempts, j.backoff_ms, "
               "j.cancel_requested, j.queue, j.order_key, j.barrier, j.ctid, j.children "
               "FROM "
               "unnest(?1::bigint[]) AS a(id) CROSS JOIN LATERAL (SELECT ctid, id, claim, "
               "attempts, max_attempts, backoff_ms, cancel_requested, queue, order_key, "
               "barrier, children FROM jobq_jobs WHERE id = a.id AND coalesce(session, '') = "
               "?2 AND state = 'running' FOR UPDATE) j",
         .mysql = "SELECT id, claim, attempts, max_attempts, backoff_ms, cancel_requested, "
                  "queue, order_key, barrier, NULL, children FROM jobq_jobs FORCE INDEX "
                  "(PRIMARY) WHERE id IN ({each:?1}) AND session = ?2 AND state = 'running' "
                  "ORDER BY id FOR UPDATE"},
    [JOBQ_Q_ACK_DONE_BEFORE] = {.what = "looking for an earlier acknowledgement",
                                .common = "SELECT outcome FROM jobq_done WHERE id = ?1 "
                                "AND claim = ?2"},
    [JOBQ_Q_ACK_READY_BEFORE] = {.what = "looking for an earlier acknowledgement",
                                 .common = "SELECT 1 FROM jobq_jobs WHERE id = ?1 AND "
                                 "claim = ?2 AND session IS NULL"},
    /* ?3: 1 gives the attempt back (release), which also forgets the claim
     * so that a late fail with it is refused. */
    [JOBQ_Q_ACK_REQUEUE] =
        {.what = "putting the job back for a retry",
         .common = "UPDATE jobq_jobs SET state = 'ready', session = NULL, deadline_at = "
         "NULL, run_at = {now} + ?2, attempts = attempts - ?3, claim = CASE "
         "WHEN ?3 = 1 THEN NULL ELSE claim END, last_error = coalesce(?4, "
         "last_error), prev_lost = 0 WHERE id = ?1"},
    /* ACK_REQUEUE for each job whose row ACK_ROWS read and locked in
     * this transaction: where it is ?1 (PostgreSQL), its delay ?2,
     * give-back ?3, error ?4 and id ?5, all columns.  PostgreSQL finds
     * the rows by TID scan, whatever the statistics.  MariaDB names the
     * index of a list of ids: on a table of a few rows the server's plan
     * for a list was to scan it, locking each row it passed, so that a
     * batch waited for any row another transaction held, and two batches
     * deadlocked. */
    [JOBQ_Q_REQUEUE_ROWS] =
        {.what = "sending jobs back to their queues",
         .common = "",
         .sqlite = "UPDATE jobq_jobs SET state = 'ready', session = NULL, deadline_at = NULL, "
                   "run_at = {now} + v.column2, attempts = attempts - v.column3, claim = CASE "
                   "WHEN v.column3 = 1 THEN NULL ELSE claim END, last_error = "
                   "coalesce(v.column4, last_error), prev_lost = 0 FROM "
                   "jobq_rows(?5, ?2, ?3, ?4) AS v WHERE jobq_jobs.id = v.column1",
         .pg = "UPDATE jobq_jobs j SET state = 'ready', session = NULL, deadline_at = NULL, "
               "run_at = {now} + a.delay, attempts = j.attempts - a.back, claim = CASE WHEN "
               "a.back = 1 THEN NULL ELSE j.claim END, last_error = coalesce(a.error, "
               "j.last_error), prev_lost = 0 FROM unnest(?1::tid[], ?2::bigint[], "
               "?3::bigint[], ?4::text[], ?5::bigint[]) AS a(t, delay, back, error, id) WHERE "
               "j.ctid = a.t AND j.ctid = ANY(?1::tid[]) AND j.id = a.id",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (PRIMARY) SET state = 'ready', session = NULL, "
                  "deadline_at = NULL, run_at = {now} + CAST(" BY_ID("?5", "?2") " AS SIGNED), "
                  "attempts = attempts - CAST(" BY_ID("?5", "?3") " AS SIGNED), claim = CASE "
                  "WHEN CAST(" BY_ID("?5", "?3") " AS SIGNED) = 1 THEN NULL ELSE claim END, "
                  "last_error = coalesce(" BY_ID("?5", "?4") ", last_error), prev_lost = 0 "
                  "WHERE id IN ({each:?5})"},
    [JOBQ_Q_JOB_ORDER] = {.what = "reading the job's queue and key",
                          .common = "SELECT queue, order_key, barrier FROM jobq_jobs "
                          "WHERE id = ?1"},
    [JOBQ_Q_ARCHIVE] =
        {.what = "archiving the job",
         .common = "INSERT INTO jobq_done(" ARCHIVE_COLS ") SELECT id, queue, priority, "
         "run_at, ?2, order_key, barrier, unique_key, payload, ?3, attempts, "
         "max_attempts, timeout_ms, backoff_ms, session, claim, created_at, "
         "claimed_at, {now}, coalesce(?4, last_error), prev_lost FROM "
         "jobq_jobs WHERE id = ?1"},
    [JOBQ_Q_DELETE_JOB] = {.what = "removing the finished job",
                           .common = "DELETE FROM jobq_jobs WHERE id = ?1"},
    /* ARCHIVE and DELETE_JOB for each job whose row ACK_ROWS read and
     * locked in this transaction (and that no other statement of it
     * moved): where it is ?1 (PostgreSQL), its outcome ?2, result ?3
     * (done only), error ?4 (NULL: kept) and id ?5, all columns.
     * PostgreSQL moves them in one statement, by TID scan (see
     * REQUEUE_ROWS); the others then delete them with DELETE_ROWS. */
    [JOBQ_Q_ARCHIVE_ROWS] =
        {.what = "archiving jobs",
         .common = "",
         .sqlite = "INSERT INTO jobq_done(" ARCHIVE_COLS ") SELECT j.id, j.queue, j.priority, "
                   "j.run_at, v.column2, j.order_key, j.barrier, j.unique_key, j.payload, "
                   "v.column3, j.attempts, j.max_attempts, j.timeout_ms, j.backoff_ms, "
                   "j.session, j.claim, j.created_at, j.claimed_at, {now}, coalesce(v.column4, "
                   "j.last_error), j.prev_lost FROM jobq_rows(?5, ?2, ?3, ?4) AS v "
                   "CROSS JOIN jobq_jobs j ON j.id = v.column1",
         .pg = "WITH a AS (SELECT * FROM unnest(?1::tid[], ?2::text[], ?3::bytea[], "
               "?4::text[], ?5::bigint[]) AS a(t, outcome, result, error, id)), d AS (DELETE "
               "FROM jobq_jobs j USING a WHERE j.ctid = a.t AND j.ctid = ANY(?1::tid[]) AND "
               "j.id = a.id " DELETED_RETURNING("a.outcome", "a.result", "a.error") ") "
               DELETED_INTO_ARCHIVE,
         .mysql = "INSERT INTO jobq_done(" ARCHIVE_COLS ") SELECT id, queue, priority, run_at, "
                  BY_ID("?5", "?2") ", order_key, barrier, unique_key, payload, "
                  BY_ID("?5", "?3") ", attempts, max_attempts, timeout_ms, backoff_ms, "
                  "session, claim, created_at, claimed_at, {now}, coalesce(" BY_ID("?5", "?4")
                  ", last_error), prev_lost FROM jobq_jobs FORCE INDEX (PRIMARY) WHERE id IN "
                  "({each:?5})"},
    /* The jobs ?1 (a column) out of the hot table, after ARCHIVE_ROWS.
     * MariaDB joins the ids to the rows: a DELETE takes no index hint
     * (see REQUEUE_ROWS). */
    [JOBQ_Q_DELETE_ROWS] =
        {.what = "removing the finished jobs",
         .common = "",
         .sqlite = "DELETE FROM jobq_jobs WHERE id IN (SELECT column1 FROM jobq_rows(?1))",
         .pg = "",
         .mysql = "DELETE j FROM ({each_union:SELECT ?1 AS id}) AS ids STRAIGHT_JOIN jobq_jobs j "
                  "ON j.id = ids.id"},
    /* The finished-job counters: ?2 is the session whose rows they are
     * ('' for writers without one, spread over a few rows per queue, ?3),
     * so that concurrent acknowledgements do not queue up on one row. */
    [JOBQ_Q_COUNT_ADD] =
        {.what = "counting the finished jobs",
         .common = "INSERT INTO jobq_counts(queue, session, shard, n_done, n_dead, "
         "n_cancelled) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (session, queue, shard) "
         "DO UPDATE SET n_done = jobq_counts.n_done + excluded.n_done, n_dead = "
         "jobq_counts.n_dead + excluded.n_dead, n_cancelled = "
         "jobq_counts.n_cancelled + excluded.n_cancelled",
         .mysql = "INSERT INTO jobq_counts(queue, session, shard, n_done, n_dead, "
                  "n_cancelled) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON DUPLICATE KEY "
                  "UPDATE n_done = n_done + VALUES(n_done), n_dead = n_dead + "
                  "VALUES(n_dead), n_cancelled = n_cancelled + "
                  "VALUES(n_cancelled)"},
    /* An ended session's counters, folded into its ender's (lib/counts.c). */
    [JOBQ_Q_COUNTS_OF] = {.what = "reading the ended session's counters",
                          .common = "SELECT queue, n_done, n_dead, n_cancelled FROM "
                          "jobq_counts WHERE session = ?1{for_update}"},
    [JOBQ_Q_COUNTS_DROP] = {.what = "removing the ended session's counters",
                            .common = "DELETE FROM jobq_counts WHERE session = ?1"},
    /* How many of queue ?1's ready jobs (at most ?2) and how long until
     * the earliest of them comes due (lib/watch.c); NEXT_DUE_ALL: of
     * every queue.  Through the claim index, which holds only ready
     * jobs. */
    [JOBQ_Q_NEXT_DUE] = {.what = "looking for jobs coming due",
                         .common = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                         "(SELECT run_at FROM jobq_jobs WHERE queue = ?1 AND state = 'ready' "
                         "LIMIT ?2) AS s",
                         .sqlite = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                         "(SELECT run_at FROM jobq_jobs INDEXED BY jobq_jobs_claim WHERE queue = "
                         "?1 AND state = 'ready' LIMIT ?2) AS s"},
    [JOBQ_Q_NEXT_DUE_ALL] = {.what = "looking for jobs coming due",
                             .common = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                             "(SELECT run_at FROM jobq_jobs WHERE state = 'ready' LIMIT ?1) "
                             "AS s",
                             .sqlite = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                             "(SELECT run_at FROM jobq_jobs INDEXED BY jobq_jobs_claim WHERE "
                             "state = 'ready' LIMIT ?1) AS s"},
    /* NEXT_DUE of queue ?1 in parts, in session ?3's own parts only; of
     * the whole queue once it has no parts (back in one).  The test for
     * parts is a one-row table that the whole queue's jobs join: as a
     * test of each job, SQLite read every ready job of a queue in parts
     * (5 ms at 100,000 jobs). */
    [JOBQ_Q_NEXT_DUE_PARTS] = {.what = "looking for jobs coming due",
                               .common = "SELECT count(*), coalesce(min(j.run_at), 0) - {now} FROM "
                               "(SELECT j.run_at FROM jobq_parts p JOIN jobq_jobs j ON j.queue = "
                               "p.queue AND j.part = p.part WHERE p.queue = ?1 AND p.session = ?3 "
                               "AND j.state = 'ready' AND j.part IS NOT NULL UNION ALL SELECT "
                               "run_at FROM jobq_jobs WHERE queue = ?1 AND state = 'ready' AND NOT "
                               "EXISTS (SELECT 1 FROM jobq_parts WHERE queue = ?1) LIMIT ?2) AS j",
                               .sqlite = "SELECT count(*), coalesce(min(j.run_at), 0) - {now} FROM "
                               "(SELECT j.run_at FROM jobq_parts p CROSS JOIN jobq_jobs j INDEXED "
                               "BY jobq_jobs_part ON j.queue = p.queue AND j.part = p.part WHERE "
                               "p.queue = ?1 AND p.session = ?3 AND j.state = 'ready' AND j.part "
                               "IS NOT NULL UNION ALL SELECT j.run_at FROM (SELECT 1 WHERE NOT "
                               "EXISTS (SELECT 1 FROM jobq_parts WHERE queue = ?1)) AS whole CROSS "
                               "JOIN jobq_jobs j INDEXED BY jobq_jobs_claim WHERE j.queue = ?1 AND "
                               "j.state = 'ready' LIMIT ?2) AS j"},
    /* NEXT_DUE_ALL of the jobs session ?2 may claim: of a queue in parts
     * it claims from, only those in its own parts.  SQLite's text tests
     * the queues, not each job (a session whose parts were empty read
     * every ready job of the others' parts: 46 ms at 100,000): its own
     * parts' jobs, and every job of a queue in one part or that it does
     * not claim from (a queue in parts has no job without a part).
     * MariaDB's planner reads that one by the queue's index, every job
     * of the queue: 0.9 s at 100,000. */
    [JOBQ_Q_NEXT_DUE_MINE] = {.what = "looking for jobs coming due",
                              .common = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                              "(SELECT j.run_at FROM jobq_jobs j WHERE j.state = 'ready' AND "
                              "(j.part IS NULL OR NOT EXISTS (SELECT 1 FROM jobq_claimers c WHERE "
                              "c.queue = j.queue AND c.session = ?2) OR EXISTS (SELECT 1 FROM "
                              "jobq_parts p WHERE p.queue = j.queue AND p.part = j.part AND "
                              "p.session = ?2)) LIMIT ?1) AS s",
                              .sqlite = "SELECT count(*), coalesce(min(run_at), 0) - {now} FROM "
                              "(SELECT j.run_at FROM jobq_parts p CROSS JOIN jobq_jobs j INDEXED BY "
                              "jobq_jobs_part ON j.queue = p.queue AND j.part = p.part WHERE "
                              "p.session = ?2 AND j.state = 'ready' AND j.part IS NOT NULL UNION "
                              "ALL SELECT j.run_at FROM jobq_queues q CROSS JOIN jobq_jobs j "
                              "INDEXED BY jobq_jobs_claim ON j.queue = q.name WHERE j.state = "
                              "'ready' AND (q.parts = 1 OR NOT EXISTS (SELECT 1 FROM jobq_claimers "
                              "c WHERE c.queue = q.name AND c.session = ?2)) LIMIT ?1) AS s"},
    [JOBQ_Q_POLICY] = {.what = "reading the queue's key policy",
                       .common = "SELECT key_policy FROM jobq_queues WHERE name = ?1"},
    [JOBQ_Q_WAITING_UNKEYED] =
        {.what = "looking for jobs waiting behind a barrier",
         .common = "UPDATE jobq_jobs SET state = 'ready' WHERE queue = ?1 AND state = "
         "'waiting' AND barrier = 0 AND order_key IS NULL AND id < ?2 AND session IS NULL"},
    [JOBQ_Q_WAITING_KEYS] =
        {.what = "looking for keys waiting behind a barrier",
         .common = "SELECT DISTINCT order_key FROM jobq_jobs WHERE queue = ?1 AND state "
         "= 'waiting' AND order_key IS NOT NULL AND id < ?2"},
    [JOBQ_Q_EXTEND] = {.what = "extending the job's deadline",
                       .common = "UPDATE jobq_jobs SET deadline_at = {now} + ?4 WHERE "
                       "id = ?1 AND session = ?2 AND claim = ?3 AND state = "
                       "'running'"},
    [JOBQ_Q_EXTEND_CANCEL] = {.what = "reading the job's cancel request",
                              .common = "SELECT cancel_requested FROM jobq_jobs WHERE "
                              "id = ?1"},
    [JOBQ_Q_SHOW_HOT] = {.what = "reading the job",
                         .common = HOT_INFO ", payload, NULL FROM jobq_jobs WHERE id = ?1"},
    [JOBQ_Q_SHOW_DONE] = {.what = "reading the finished job",
                          .common = DONE_INFO ", payload, result FROM jobq_done WHERE "
                          "id = ?1"},
    /* The last parameter: the ordering key, NULL for any. */
    [JOBQ_Q_LIST_ALL] = {.what = "listing jobs",
                         .common = "SELECT * FROM (" HOT_INFO " FROM jobq_jobs UNION ALL "
                         DONE_INFO " FROM jobq_done) AS u WHERE id > ?1 AND "
                         "queue = coalesce(?2, queue) AND " KEY_IS("?4") " ORDER BY id "
                         "LIMIT ?3"},
    /* ?5 = 1: only the scheduled ones (run_at still ahead). */
    [JOBQ_Q_LIST_HOT] = {.what = "listing unfinished jobs",
                         .common = HOT_INFO " FROM jobq_jobs WHERE id > ?1 AND queue = "
                         "coalesce(?2, queue) AND state = ?4 AND (?5 = 0 OR "
                         "run_at > {now}) AND " KEY_IS("?6") " ORDER BY id LIMIT ?3"},
    [JOBQ_Q_LIST_DONE] = {.what = "listing finished jobs",
                          .common = DONE_INFO " FROM jobq_done WHERE outcome = ?4 AND "
                          "id > ?1 AND queue = coalesce(?2, queue) AND " KEY_IS("?5")
                          " ORDER BY id LIMIT ?3"},
    [JOBQ_Q_STATS_QUEUES] =
        {.what = "reading the queues",
         .common = "SELECT q.name, q.paused, q.key_policy, "
         "CAST(coalesce(sum(c.n_done), 0) AS {bigint}), "
         "CAST(coalesce(sum(c.n_dead), 0) AS {bigint}), "
         "CAST(coalesce(sum(c.n_cancelled), 0) AS {bigint}), q.parts, "
         "(SELECT count(*) FROM jobq_parts p LEFT JOIN jobq_sessions s ON s.id = "
         "p.session WHERE p.queue = q.name AND (s.id IS NULL OR s.expires_at < {now})) "
         "FROM jobq_queues q LEFT JOIN jobq_counts c ON c.queue = q.name "
         "GROUP BY q.name, q.paused, q.key_policy, q.parts ORDER BY q.name"},
    [JOBQ_Q_STATS_HOT] =
        {.what = "counting the queues' jobs",
         .common = "SELECT queue, state, CASE WHEN run_at <= {now} THEN 1 ELSE 0 END, "
         "count(*), min(run_at), {now} FROM jobq_jobs GROUP BY 1, 2, 3"},
    [JOBQ_Q_SESSIONS] =
        {.what = "listing the sessions",
         .common = "SELECT s.id, s.name, s.host, s.pid, s.epoch, s.started_at, "
         "s.heartbeat_at, s.expires_at, s.lease_ms, s.in_flight, s.done, "
         "s.failed, (SELECT count(*) FROM jobq_jobs j WHERE j.session = s.id), "
         "CASE WHEN s.expires_at < {now} THEN 1 ELSE 0 END FROM jobq_sessions "
         "s ORDER BY s.started_at, s.id"},
    [JOBQ_Q_DONE_ROW] = {.what = "reading the finished job",
                         .common = "SELECT outcome, queue, order_key, unique_key, "
                         "barrier FROM jobq_done WHERE id = ?1{for_update}"},
    [JOBQ_Q_HOT_STATE] = {.what = "reading the job's state",
                          .common = "SELECT state, queue, order_key, barrier, children FROM "
                          "jobq_jobs WHERE id = ?1{for_update}"},
    [JOBQ_Q_UNARCHIVE] = {.what = "putting the finished job back in its queue",
                          .common = UNARCHIVE_AS("?2") "id = ?1"},
    [JOBQ_Q_DELETE_DONE] = {.what = "removing the job from the archive",
                            .common = "DELETE FROM jobq_done WHERE id = ?1"},
    /* ?1 the queue, after id ?2, at most ?3: what the outcome index holds
     * in its order. */
    [JOBQ_Q_DEAD_IDS] = {.what = "listing dead jobs",
                         .common = "SELECT id FROM jobq_done WHERE outcome = 'dead' AND "
                         "queue = ?1 AND id > ?2 ORDER BY id LIMIT ?3{for_update}"},
    /* The first of queue ?1's dead barriers after id ?2 up to id ?3. */
    [JOBQ_Q_DEAD_BARRIER] = {.what = "looking for dead barriers",
                             .common = "SELECT id FROM jobq_done WHERE outcome = 'dead' "
                             "AND queue = ?1 AND id > ?2 AND id <= ?3 AND barrier = 1 "
                             "ORDER BY id LIMIT 1"},
    /* UNARCHIVE (ready) and DELETE_DONE of queue ?1's dead jobs after id
     * ?2 up to id ?3 that have no ordering key, no unique key and are no
     * barrier (locked by DEAD_IDS): one statement each for a part of a
     * retry of dead jobs (lib/admin.c). */
    [JOBQ_Q_UNARCHIVE_DEAD] = {.what = "putting dead jobs back in their queue",
                               .common = UNARCHIVE_AS("'ready'") DEAD_PLAIN},
    [JOBQ_Q_DELETE_DEAD] = {.what = "removing retried jobs from the archive",
                            .common = "DELETE FROM jobq_done WHERE " DEAD_PLAIN},
    [JOBQ_Q_MARK_CANCELLED] = {.what = "marking the dead job cancelled",
                               .common = "UPDATE jobq_done SET outcome = 'cancelled', "
                               "finished_at = {now} WHERE id = ?1"},
    [JOBQ_Q_REQUEST_CANCEL] = {.what = "asking the running job's worker to cancel it",
                               .common = "UPDATE jobq_jobs SET cancel_requested = 1 "
                               "WHERE id = ?1"},
    [JOBQ_Q_SET_PAUSED] = {.what = "pausing or resuming the queue",
                           .common = "UPDATE jobq_queues SET paused = ?2 WHERE name = ?1"},
    [JOBQ_Q_SET_POLICY] = {.what = "setting the queue's key policy",
                           .common = "UPDATE jobq_queues SET key_policy = ?2 WHERE "
                           "name = ?1"},
    /* A prune's statements.  ?1: the cut-off in Unix ms; ?3 (PRUNE_BOUND)
     * or ?2 (the others): only this queue's jobs, or NULL for all; a dead
     * head that blocks its key stays.  PRUNE_BOUND: the finish time of
     * the (?2+1)th oldest job a prune may delete, where its next
     * transaction stops. */
    [JOBQ_Q_PRUNE_BOUND] = {.what = "finding the finished jobs to prune",
                            .common = "SELECT finished_at FROM jobq_done WHERE finished_at < ?1 "
                            "AND queue = coalesce(?3, queue) AND id NOT IN (SELECT job_id "
                            "FROM jobq_blocked) ORDER BY finished_at LIMIT 1 OFFSET ?2"},
    /* The rows counted are locked until the prune deletes them: a retry
     * of one of them in between would take it away from the DELETE, and
     * its counters would go down twice. */
    [JOBQ_Q_PRUNE_COUNT] =
        {.what = "counting the pruned jobs",
         .common = "SELECT queue, "
         "CAST(sum(CASE WHEN outcome = 'done' THEN 1 ELSE 0 END) AS {bigint}), "
         "CAST(sum(CASE WHEN outcome = 'dead' THEN 1 ELSE 0 END) AS {bigint}), "
         "CAST(sum(CASE WHEN outcome = 'cancelled' THEN 1 ELSE 0 END) AS "
         "{bigint}) FROM (SELECT queue, outcome FROM jobq_done WHERE finished_at < ?1 "
         "AND queue = coalesce(?2, queue) AND id NOT IN (SELECT job_id FROM jobq_blocked)"
         "{for_update}) AS p GROUP BY queue",
         .mysql = "SELECT queue, "
         "CAST(sum(CASE WHEN outcome = 'done' THEN 1 ELSE 0 END) AS {bigint}), "
         "CAST(sum(CASE WHEN outcome = 'dead' THEN 1 ELSE 0 END) AS {bigint}), "
         "CAST(sum(CASE WHEN outcome = 'cancelled' THEN 1 ELSE 0 END) AS "
         "{bigint}) FROM (SELECT queue, outcome FROM jobq_done FORCE INDEX "
         "(jobq_done_finished) WHERE finished_at < ?1 AND queue = coalesce(?2, queue) AND "
         "id NOT IN (SELECT job_id FROM jobq_blocked){for_update}) AS p GROUP BY queue"},
    /* On MariaDB through the index of finish times, whatever the plan for
     * a small archive: a scan of all of it waited for any row another
     * transaction held, such as the jobs being finished just then. */
    [JOBQ_Q_PRUNE] = {.what = "pruning finished jobs",
                      .common = "DELETE FROM jobq_done WHERE finished_at < ?1 AND queue = "
                      "coalesce(?2, queue) AND id NOT IN (SELECT job_id FROM jobq_blocked)",
                      .mysql = "DELETE d FROM jobq_done d FORCE INDEX (jobq_done_finished) "
                               "WHERE d.finished_at < ?1 AND d.queue = coalesce(?2, d.queue) "
                               "AND d.id NOT IN (SELECT job_id FROM jobq_blocked)"},
    /* What a prune would delete (a dry run), as PRUNE_COUNT counts it. */
    [JOBQ_Q_PRUNE_TOTAL] = {.what = "counting the finished jobs to prune",
                            .common = "SELECT count(*) FROM jobq_done WHERE finished_at < ?1 "
                            "AND queue = coalesce(?2, queue) AND id NOT IN (SELECT job_id "
                            "FROM jobq_blocked)"},
    /* A purge of queue ?1 (lib/bulk.c): the jobs up to id ?2, the highest
     * when it started, in parts; a running job stays (and makes the
     * purge refuse when it is there at the start).  PURGE_BOUND: the id
     * of the (?3+1)th unclaimed job, where a part stops. */
    [JOBQ_Q_PURGE_RUNNING] = {.what = "looking for running jobs of the queue",
                              .common = "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND "
                              "state = 'running' LIMIT 1"},
    [JOBQ_Q_PURGE_BOUND] = {.what = "finding the queue's jobs to delete",
                            .common = "SELECT id FROM jobq_jobs WHERE queue = ?1 AND session "
                            "IS NULL AND id <= ?2 ORDER BY id LIMIT 1 OFFSET ?3"},
    /* On MariaDB through the queue's index, whatever the plan, with the
     * ids a filter, not a range: InnoDB locks the row past the end of a
     * range, which may be another queue's (the archive's the same, below:
     * each part reads all of the queue's rows there, and locks only its
     * own). */
    [JOBQ_Q_PURGE_JOBS] = {.what = "deleting the queue's jobs",
                           .common = "DELETE FROM jobq_jobs WHERE queue = ?1 AND "
                           "state <> 'running' AND session IS NULL AND id <= ?2",
                           .mysql = "DELETE j FROM jobq_jobs j FORCE INDEX (jobq_jobs_queue) "
                                    "WHERE j.queue = ?1 AND j.state <> 'running' AND "
                                    "j.session IS NULL AND j.id + 0 <= ?2"},
    [JOBQ_Q_PURGE_BLOCKED] = {.what = "reading the queue's blocked keys",
                              .common = "SELECT order_key FROM jobq_blocked WHERE queue = ?1 "
                              "AND job_id <= ?2 ORDER BY order_key"},
    [JOBQ_Q_PURGE_UNBLOCK] = {.what = "deleting the queue's blocked keys",
                              .common = "DELETE FROM jobq_blocked WHERE queue = ?1 AND "
                              "job_id <= ?2"},
    /* The archive after id ?2 up to id ?3: the (?4+1)th job's id, where a
     * part stops; its outcomes, counted under the queue's exclusive lock,
     * which a retry of one of them waits for (see PRUNE_COUNT); and the
     * DELETE.  No row is read with its lock: on MariaDB that would wait
     * for the row past the end of the range, another queue's. */
    [JOBQ_Q_PURGE_DONE_BOUND] = {.what = "finding the queue's finished jobs to delete",
                                 .common = "SELECT id FROM jobq_done WHERE queue = ?1 AND id "
                                 "> ?2 AND id <= ?3 ORDER BY id LIMIT 1 OFFSET ?4",
                                 .mysql = "SELECT id FROM jobq_done FORCE INDEX "
                                          "(jobq_done_outcome) WHERE outcome IN ('done', "
                                          "'dead', 'cancelled') AND queue = ?1 AND id > ?2 "
                                          "AND id <= ?3 ORDER BY id LIMIT 1 OFFSET ?4"},
    [JOBQ_Q_PURGE_DONE_COUNT] =
        {.what = "counting the queue's finished jobs",
         .common = "SELECT CAST(coalesce(sum(CASE WHEN outcome = 'done' THEN 1 ELSE 0 END), 0) "
         "AS {bigint}), CAST(coalesce(sum(CASE WHEN outcome = 'dead' THEN 1 ELSE 0 END), 0) AS "
         "{bigint}), CAST(coalesce(sum(CASE WHEN outcome = 'cancelled' THEN 1 ELSE 0 END), 0) "
         "AS {bigint}) FROM jobq_done WHERE queue = ?1 AND id > ?2 AND id <= ?3",
         .mysql = "SELECT CAST(coalesce(sum(CASE WHEN outcome = 'done' THEN 1 ELSE 0 END), 0) "
         "AS {bigint}), CAST(coalesce(sum(CASE WHEN outcome = 'dead' THEN 1 ELSE 0 END), 0) AS "
         "{bigint}), CAST(coalesce(sum(CASE WHEN outcome = 'cancelled' THEN 1 ELSE 0 END), 0) "
         "AS {bigint}) FROM jobq_done FORCE INDEX (jobq_done_outcome) WHERE outcome IN "
         "('done', 'dead', 'cancelled') AND queue = ?1 AND id > ?2 AND id <= ?3"},
    /* MariaDB's outcome index holds every row (the others leave out the
     * done ones): there, a purge names each outcome the table allows and
     * the index, so as to read only the queue's rows.  A scan of the
     * whole archive, its plan for a small table, waited for any row
     * another transaction held. */
    [JOBQ_Q_PURGE_DONE] = {.what = "deleting the queue's finished jobs",
                           .common = "DELETE FROM jobq_done WHERE queue = ?1 AND id > ?2 AND "
                           "id <= ?3",
                           .mysql = "DELETE d FROM jobq_done d FORCE INDEX "
                                    "(jobq_done_outcome) WHERE d.outcome IN ('done', "
                                    "'dead', 'cancelled') AND d.queue = ?1 AND d.id + 0 > ?2 "
                                    "AND d.id + 0 <= ?3"},
    [JOBQ_Q_PURGE_TOTAL] = {.what = "counting the queue's jobs",
                            .common = "SELECT (SELECT count(*) FROM jobq_jobs WHERE queue = "
                            "?1 AND session IS NULL) + (SELECT count(*) FROM jobq_done WHERE "
                            "queue = ?1)"},
    /* The unfinished jobs of queue ?1 after id ?2, ?3 of them, held: what
     * a bulk cancel looks at, a part at a time. */
    [JOBQ_Q_CANCEL_SCAN] = {.what = "reading the queue's jobs to cancel",
                            .common = "SELECT id, state, run_at, order_key, {now} FROM "
                            "jobq_jobs WHERE queue = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
                            "{for_update}"},
    [JOBQ_Q_ALL_SESSIONS] = {.what = "listing every session",
                             .common = "SELECT id FROM jobq_sessions ORDER BY id"
                             "{for_update}"},
    /* Epochs only rise, even across restores of older backups: the new one
     * is at least ?1, the current Unix time in seconds. */
    [JOBQ_Q_BUMP] = {.what = "raising the epoch",
                     .common = "UPDATE jobq_meta SET epoch = {greatest}(epoch + 1, ?1) "
                     "WHERE id = 1"},
    [JOBQ_Q_EPOCH] = {.what = "reading the epoch",
                      .common = "SELECT epoch FROM jobq_meta WHERE id = 1"},
    /* The proofs of acknowledged writes (lib/mark.c): a completion's row
     * under its claim token; a put's queue and payload, wherever the job
     * is now; and before which finish time archived jobs may have been
     * pruned, with the database clock. */
    [JOBQ_Q_MARK_DONE] = {.what = "reading back an acknowledged completion",
                          .common = "SELECT 1 FROM jobq_done WHERE id = ?1 AND claim = ?2"},
    [JOBQ_Q_MARK_PUT] = {.what = "reading back an acknowledged put",
                         .common = "SELECT queue, payload FROM jobq_jobs WHERE id = ?1 UNION "
                         "ALL SELECT queue, payload FROM jobq_done WHERE id = ?1"},
    /* The same for a login that may not read payloads. */
    [JOBQ_Q_MARK_PUT_QUEUE] = {.what = "reading back an acknowledged put",
                               .common = "SELECT queue FROM jobq_jobs WHERE id = ?1 UNION "
                               "ALL SELECT queue FROM jobq_done WHERE id = ?1"},
    [JOBQ_Q_MARK_META] = {.what = "reading what was pruned",
                          .common = "SELECT pruned_before, {now} FROM jobq_meta WHERE id = 1"},
    /* ?1: archived jobs that finished before it may be gone now. */
    [JOBQ_Q_PRUNED] = {.what = "recording what was pruned",
                       .common = "UPDATE jobq_meta SET pruned_before = "
                       "{greatest}(pruned_before, ?1) WHERE id = 1"},
    [JOBQ_Q_QUEUE_PAUSED] = {.what = "reading whether the queue is paused",
                             .common = "SELECT paused FROM jobq_queues WHERE name = ?1"},
    [JOBQ_Q_QUEUES_ACTIVE] = {.what = "listing the queues that are not paused",
                              .common = "SELECT name FROM jobq_queues WHERE paused = 0 "
                              "ORDER BY name"},
    [JOBQ_Q_QUEUE_NAMES] = {.what = "listing the queues",
                            .common = "SELECT name FROM jobq_queues ORDER BY name"},
    /* The figures of the sessions (lib/tally.c): ?1 the minute (0 for
     * what was folded, -1 for the database clock's), ?2 the session (''
     * when folded), ?3 the queue ('' for claims that found nothing),
     * then the counts added. */
    [JOBQ_Q_TALLY_ADD] =
        {.what = "adding to the figures per minute",
         .common = "INSERT INTO jobq_tally(at_minute, session, queue, claimed, empty_claims, "
         "done, failed, retried, dead, cancelled, wait_ms, w0, w1, w2, w3, w4, w5, "
         "w6, w7, w8, w9) VALUES (" TALLY_MINUTE ", ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
         "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21) "
         "ON CONFLICT (at_minute, session, queue) DO UPDATE SET claimed = jobq_tally.claimed + "
         "excluded.claimed, empty_claims = jobq_tally.empty_claims + "
         "excluded.empty_claims, done = jobq_tally.done + excluded.done, failed = "
         "jobq_tally.failed + excluded.failed, retried = jobq_tally.retried + "
         "excluded.retried, dead = jobq_tally.dead + excluded.dead, cancelled = "
         "jobq_tally.cancelled + excluded.cancelled, wait_ms = jobq_tally.wait_ms + "
         "excluded.wait_ms, w0 = jobq_tally.w0 + excluded.w0, w1 = jobq_tally.w1 + "
         "excluded.w1, w2 = jobq_tally.w2 + excluded.w2, w3 = jobq_tally.w3 + "
         "excluded.w3, w4 = jobq_tally.w4 + excluded.w4, w5 = jobq_tally.w5 + "
         "excluded.w5, w6 = jobq_tally.w6 + excluded.w6, w7 = jobq_tally.w7 + "
         "excluded.w7, w8 = jobq_tally.w8 + excluded.w8, w9 = jobq_tally.w9 + "
         "excluded.w9",
         .mysql = "INSERT INTO jobq_tally(at_minute, session, queue, claimed, empty_claims, "
         "done, failed, retried, dead, cancelled, wait_ms, w0, w1, w2, w3, w4, w5, "
         "w6, w7, w8, w9) VALUES (CASE WHEN ?1 < 0 THEN {now} DIV 60000 ELSE ?1 "
         "END, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
         "?17, ?18, ?19, ?20, ?21) ON DUPLICATE KEY UPDATE claimed = claimed + "
         "VALUES(claimed), empty_claims = empty_claims + "
         "VALUES(empty_claims), done = done + VALUES(done), failed = failed + "
         "VALUES(failed), retried = retried + VALUES(retried), dead = dead + "
         "VALUES(dead), cancelled = cancelled + VALUES(cancelled), wait_ms = wait_ms"
         " + VALUES(wait_ms), w0 = w0 + VALUES(w0), w1 = w1 + VALUES(w1), w2 = w2 + "
         "VALUES(w2), w3 = w3 + VALUES(w3), w4 = w4 + VALUES(w4), w5 = w5 + "
         "VALUES(w5), w6 = w6 + VALUES(w6), w7 = w7 + VALUES(w7), w8 = w8 + "
         "VALUES(w8), w9 = w9 + VALUES(w9)"},
    /* The rows of the minutes before ?1, locked until they are deleted:
     * two folds at once must not add them twice. */
    [JOBQ_Q_TALLY_OLD] = {.what = "reading old figures to fold them",
         .common = "SELECT queue, " TALLY_SUMS " FROM (SELECT * FROM "
                          "jobq_tally WHERE at_minute > 0 AND at_minute < ?1{for_update}) "
                          "AS t GROUP BY queue"},
    [JOBQ_Q_TALLY_DROP] = {.what = "deleting figures that were folded",
         .common = "DELETE FROM jobq_tally WHERE at_minute > 0 AND "
                           "at_minute < ?1"},
    /* Per minute and queue, from minute ?1 on. */
    [JOBQ_Q_TALLY_READ] = {.what = "reading the figures per minute",
         .common = "SELECT at_minute, queue, " TALLY_SUMS " FROM jobq_tally "
                           "WHERE at_minute >= ?1 GROUP BY at_minute, queue ORDER BY "
                           "at_minute, queue"},
    /* Per queue, everything since the database was made. */
    [JOBQ_Q_TALLY_TOTALS] = {.what = "reading the figures since the start",
         .common = "SELECT 0, queue, " TALLY_SUMS " FROM jobq_tally "
                             "GROUP BY queue ORDER BY queue"},
    /* An attempt that ended without finishing its job: ?1 job, ?2
     * attempt, ?3 outcome, ?4 error, ?5 session, ?6 claimed_at. */
    [JOBQ_Q_ATTEMPT_ADD] =
        {.what = "recording an attempt",
         .common = "INSERT INTO jobq_attempts(job_id, attempt, outcome, error, session, "
         "host, claimed_at, ended_at) VALUES (?1, ?2, ?3, ?4, ?5, (SELECT host FROM "
         "jobq_sessions WHERE id = ?5), ?6, {now})"},
    /* The running attempts of session ?1 that its loss ends (?2 the error
     * of a started one), before SESSION_REQUEUE_LOST sends them back. */
    [JOBQ_Q_ATTEMPTS_LOST] =
        {.what = "recording the attempts of a lost session",
         .common = "INSERT INTO jobq_attempts(job_id, attempt, outcome, error, session, host, "
         "claimed_at, ended_at) SELECT j.id, j.attempts, 'lost', ?2, ?1, s.host, "
         "j.claimed_at, {now} FROM jobq_jobs j LEFT JOIN jobq_sessions s ON s.id = "
         "?1 WHERE j.session = ?1 AND j.started = 1 AND j.cancel_requested = 0 AND "
         "j.attempts < j.max_attempts"},
    [JOBQ_Q_ATTEMPTS_OF] =
        {.what = "reading the job's attempts",
         .common = "SELECT attempt, outcome, error, session, host, claimed_at, ended_at FROM "
         "jobq_attempts WHERE job_id = ?1 ORDER BY id"},
    [JOBQ_Q_ATTEMPTS_PRUNE] = {.what = "pruning old attempts",
         .common = "DELETE FROM jobq_attempts WHERE ended_at < ?1"},
    /* Periodic jobs (lib/cron.c): ?1 the schedule's name, then what its
     * job is, in jobq_cron's order; ?14 its next slot. */
    [JOBQ_Q_CRON_ADD] =
        {.what = "adding the schedule",
         .common = "INSERT INTO jobq_cron(name, queue, spec, tz, payload, priority, "
                   "order_key, barrier, unique_key, max_attempts, timeout_ms, backoff_ms, "
                   "skip_missed, paused, next_at, created_at, updated_at) VALUES (?1, ?2, "
                   "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0, ?14, {now}, {now}) "
                   "ON CONFLICT (name) DO NOTHING",
         .mysql = "INSERT IGNORE INTO jobq_cron(name, queue, spec, tz, payload, priority, "
                  "order_key, barrier, unique_key, max_attempts, timeout_ms, backoff_ms, "
                  "skip_missed, paused, next_at, created_at, updated_at) VALUES (?1, ?2, "
                  "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0, ?14, {now}, {now})"},
    [JOBQ_Q_CRON_REPLACE] =
        {.what = "changing the schedule",
         .common = "UPDATE jobq_cron SET queue = ?2, spec = ?3, tz = ?4, payload = ?5, "
                   "priority = ?6, order_key = ?7, barrier = ?8, unique_key = ?9, "
                   "max_attempts = ?10, timeout_ms = ?11, backoff_ms = ?12, skip_missed = "
                   "?13, next_at = ?14, last_error = NULL, updated_at = {now} WHERE name = ?1"},
    [JOBQ_Q_CRON_GET] = {.what = "reading the schedule",
                         .common = "SELECT spec, tz, paused FROM jobq_cron WHERE name = ?1"
                                   "{for_update}"},
    [JOBQ_Q_CRON_DELETE] = {.what = "deleting the schedule",
                            .common = "DELETE FROM jobq_cron WHERE name = ?1"},
    [JOBQ_Q_CRON_PAUSE] = {.what = "pausing the schedule",
                           .common = "UPDATE jobq_cron SET paused = 1, updated_at = {now} "
                                     "WHERE name = ?1"},
    [JOBQ_Q_CRON_RESUME] = {.what = "resuming the schedule",
                            .common = "UPDATE jobq_cron SET paused = 0, next_at = ?2, "
                                      "updated_at = {now} WHERE name = ?1"},
    [JOBQ_Q_CRON_LIST] =
        {.what = "listing the schedules",
         .common = "SELECT name, spec, tz, skip_missed, paused, next_at, last_at, last_error, "
                   "created_at, updated_at, queue, payload, priority, order_key, barrier, "
                   "unique_key, max_attempts, timeout_ms, backoff_ms FROM jobq_cron ORDER BY name"},
    /* The next slot of any schedule and the database clock: the one read
     * of a run that finds nothing due. */
    [JOBQ_Q_CRON_WAIT] = {.what = "looking for schedules due",
                          .common = "SELECT min(next_at), {now} FROM jobq_cron WHERE paused = 0"},
    /* The schedules due at ?1, held: another run passes them over. */
    [JOBQ_Q_CRON_DUE] =
        {.what = "reading the schedules due",
         .common = "SELECT name, spec, tz, skip_missed, next_at, queue, payload, priority, "
                   "order_key, barrier, unique_key, max_attempts, timeout_ms, backoff_ms "
                   "FROM jobq_cron WHERE paused = 0 AND next_at <= ?1 ORDER BY next_at, name "
                   "LIMIT 100{skip_locked}"},
    /* Moves the schedule ?1 from slot ?2 to ?3, unless another run did:
     * ?4 the slot put (NULL: none), ?5 why nothing was put. */
    [JOBQ_Q_CRON_ADVANCE] =
        {.what = "moving the schedule to its next slot",
         .common = "UPDATE jobq_cron SET next_at = ?3, last_at = coalesce(?4, last_at), "
                   "last_error = ?5, updated_at = {now} WHERE name = ?1 AND next_at = ?2 "
                   "AND paused = 0"},
    /* ---- limits (lib/limit.c) ---- */
    /* Every queue that is not paused, with its limits (-1: none), in
     * name order: what a claim may take of each. */
    [JOBQ_Q_LIMITS_CLAIM] =
        {.what = "reading the queues' limits",
         .common = "SELECT name, coalesce(max_running, -1), coalesce(rate_n, -1), "
                   "coalesce(rate_ms, 0), coalesce(max_per_key, -1), coalesce(key_rate_n, -1), "
                   "coalesce(key_rate_ms, 0) FROM jobq_queues WHERE paused = 0 ORDER BY name"},
    /* CLAIM with a cap on each queue: ?1 the queues, ?6 how many of
     * each may be claimed, ?7 how many of one ordering key may run and
     * ?8 how many of one key may be claimed in ?9 ms (0: no limit),
     * columns of the same length; the others as in CLAIM.  A queue whose
     * cap is 0 is not read.  With a limit per key, the keys that have as
     * many running or claimed are passed over, and of the jobs locked
     * (with a limit running per key, four times the cap, for keys that
     * come many in a row; without it, a key's jobs order, and one of a
     * key at most is ready) only as many of a key as it has room for,
     * and no more than the cap, are taken (k, then m); the others stay
     * ready. */
    [JOBQ_Q_CLAIM_CAPPED] =
        {.what = "claiming jobs",
         .common = "",
         .pg = "WITH q AS (SELECT w.name, w.cap, w.per_key, w.key_n, w.key_ms FROM "
               "unnest(?1::text[], ?6::bigint[], ?7::bigint[], ?8::bigint[], ?9::bigint[]) AS "
               "w(name, cap, per_key, key_n, key_ms) JOIN jobq_queues p ON p.name = w.name AND "
               "p.paused = 0 WHERE w.cap > 0), "
               "k AS (SELECT j.ctid AS t, j.id, j.priority, j.run_at, q.name, q.cap, "
               "j.order_key IS NULL OR ((q.per_key = 0 OR j.rank + j.busy <= q.per_key) AND "
               "(q.key_n = 0 OR j.rank + j.started <= q.key_n)) AS fits FROM q CROSS JOIN "
               "LATERAL (SELECT y.*, row_number() OVER (PARTITION BY y.order_key ORDER BY "
               "y.priority DESC, y.run_at, y.id) AS rank FROM (SELECT x.ctid, x.id, "
               "x.priority, x.run_at, x.order_key, CASE WHEN q.per_key = 0 OR x.order_key IS "
               "NULL THEN 0 ELSE " KEY_BUSY("q.name", "x") " END AS busy, CASE WHEN q.key_n = "
               "0 OR x.order_key IS NULL THEN 0 ELSE " KEY_STARTED("q.name", "x", "q.key_ms")
               " END AS started FROM jobq_jobs x WHERE x.queue = q.name AND x.state = 'ready' "
               "AND x.run_at <= {now} AND (x.order_key IS NULL OR ((q.per_key = 0 OR "
               KEY_BUSY("q.name", "x") " < q.per_key) AND (q.key_n = 0 OR "
               KEY_STARTED("q.name", "x", "q.key_ms") " < q.key_n))) ORDER BY x.priority DESC, "
               "x.run_at, x.id LIMIT least(?2, q.cap) * CASE WHEN q.per_key = 0 THEN 1 ELSE 4 "
               "END FOR UPDATE OF x SKIP LOCKED) y) j), "
               "m AS (SELECT t, id, priority, run_at, cap, row_number() OVER (PARTITION BY name "
               "ORDER BY priority DESC, run_at, id) AS qn FROM k WHERE fits), "
               "c AS (SELECT t, row_number() OVER (ORDER BY priority DESC, run_at, id) AS rn "
               "FROM m WHERE qn <= cap ORDER BY priority DESC, run_at, id LIMIT ?2) "
               CLAIM_MARKED},
    /* Queue ?1's claimed jobs, by the index of held jobs (a few per
     * worker), never by the queue's backlog. */
    [JOBQ_Q_RUNNING_COUNT] =
        {.what = "counting the queue's running jobs",
         .common = "SELECT count(*) FROM jobq_jobs INDEXED BY jobq_jobs_session WHERE "
                   "session IS NOT NULL AND queue = ?1 AND state = 'running'",
         .pg = "SELECT count(*) FROM (SELECT 1 FROM jobq_jobs WHERE session IS NOT NULL "
               "AND queue = ?1 AND state = 'running' ORDER BY session) f",
         .mysql = "SELECT count(*) FROM jobq_jobs FORCE INDEX (jobq_jobs_session) WHERE "
                  "session IS NOT NULL AND queue = ?1 AND state = 'running'"},
    /* Queue ?1's claims older than its rate period ?2 forgotten. */
    [JOBQ_Q_STARTS_PRUNE] = {.what = "forgetting the queue's old claims",
                             .common = "DELETE FROM jobq_starts WHERE queue = ?1 AND at <= "
                                       "{now} - ?2"},
    /* How many of queue ?1's jobs were claimed in the last ?2 ms. */
    [JOBQ_Q_STARTS_SUM] = {.what = "counting the queue's claims",
                           .common = "SELECT CAST(coalesce(sum(n), 0) AS {bigint}) FROM "
                                     "jobq_starts WHERE queue = ?1 AND at > {now} - ?2"},
    /* Queue ?1's claims of each key older than its rate period ?2
     * forgotten. */
    [JOBQ_Q_KEY_STARTS_PRUNE] = {.what = "forgetting the keys' old claims",
                                 .common = "DELETE FROM jobq_key_starts WHERE queue = ?1 AND "
                                           "at <= {now} - ?2"},
    /* ?3 jobs of key ?2 of queue ?1 claimed now (columns of one length;
     * ?1 the same queue in each row). */
    [JOBQ_Q_KEY_STARTS_ADD] =
        {.what = "counting the keys' claims",
         .exact = 1,
         .common = "",
         .sqlite = "INSERT INTO jobq_key_starts(queue, order_key, at, n) SELECT column1, "
                   "column2, {now}, column3 FROM jobq_rows(?1, ?2, ?3) WHERE true ON CONFLICT "
                   "(queue, order_key, at) DO UPDATE SET n = jobq_key_starts.n + excluded.n",
         .pg = "INSERT INTO jobq_key_starts(queue, order_key, at, n) SELECT a.q, a.k, {now}, "
               "a.n FROM unnest(?1::text[], ?2::text[], ?3::bigint[]) AS a(q, k, n) ON "
               "CONFLICT (queue, order_key, at) DO UPDATE SET n = jobq_key_starts.n + "
               "excluded.n",
         .mysql = "INSERT INTO jobq_key_starts(queue, order_key, at, n) VALUES "
                  "{each:(?1, ?2, {now}, ?3)} ON DUPLICATE KEY UPDATE n = n + VALUES(n)"},
    /* ?2 jobs of queue ?1 claimed now. */
    [JOBQ_Q_STARTS_ADD] =
        {.what = "counting the queue's claims",
         .common = "INSERT INTO jobq_starts(queue, at, n) VALUES (?1, {now}, ?2) ON CONFLICT "
                   "(queue, at) DO UPDATE SET n = jobq_starts.n + excluded.n",
         .mysql = "INSERT INTO jobq_starts(queue, at, n) VALUES (?1, {now}, ?2) ON DUPLICATE "
                  "KEY UPDATE n = n + VALUES(n)"},
    /* Queue ?1's limits: ?2 running, ?3 claims per ?4 ms, ?5 running
     * per key, ?6 claims of one key per ?7 ms (NULL: none). */
    [JOBQ_Q_LIMITS_SET] = {.what = "setting the queue's limits",
                           .common = "UPDATE jobq_queues SET max_running = ?2, rate_n = ?3, "
                                     "rate_ms = ?4, max_per_key = ?5, key_rate_n = ?6, "
                                     "key_rate_ms = ?7 WHERE name = ?1"},
    /* The queues with a limit (?1 NULL) or queue ?1: its limits (NULL:
     * none), its running jobs, its claims in the last rate period,
     * whether a job is ready to run, and under a rate per key, how many
     * keys used all of it in the last period and whether a ready job is
     * of one of them (read from the keys' claims, never the backlog). */
    [JOBQ_Q_LIMITS_LIST] =
        {.what = "reading the queues' limits",
         .common = "SELECT q.name, q.max_running, q.rate_n, q.rate_ms, (SELECT count(*) FROM "
                   "jobq_jobs j WHERE j.queue = q.name AND j.state = 'running'), (SELECT "
                   "CAST(coalesce(sum(s.n), 0) AS {bigint}) FROM jobq_starts s WHERE s.queue "
                   "= q.name AND s.at > {now} - coalesce(q.rate_ms, 0)), CASE WHEN EXISTS "
                   "(SELECT 1 FROM jobq_jobs r WHERE r.queue = q.name AND r.state = 'ready' "
                   "AND r.run_at <= {now}) THEN 1 ELSE 0 END, q.max_per_key, q.key_rate_n, "
                   "q.key_rate_ms, (SELECT count(DISTINCT f.order_key) FROM jobq_key_starts f "
                   "WHERE f.queue = q.name AND f.at > {now} - q.key_rate_ms AND "
                   KEY_STARTED("q.name", "f", "q.key_rate_ms") " >= q.key_rate_n), CASE WHEN "
                   "EXISTS (SELECT 1 FROM jobq_key_starts f WHERE f.queue = q.name AND f.at > "
                   "{now} - q.key_rate_ms AND " KEY_STARTED("q.name", "f", "q.key_rate_ms")
                   " >= q.key_rate_n AND EXISTS (SELECT 1 FROM jobq_jobs r WHERE r.queue = "
                   "q.name AND r.order_key = f.order_key AND r.state = 'ready' AND r.run_at <= "
                   "{now})) THEN 1 ELSE 0 END FROM jobq_queues q WHERE q.name = coalesce(?1, "
                   "q.name) AND (?1 IS NOT NULL OR q.max_running IS NOT NULL OR q.rate_n IS NOT "
                   "NULL OR q.max_per_key IS NOT NULL OR q.key_rate_n IS NOT NULL) ORDER BY "
                   "q.name"},
    /* Whether queue ?1's ordering keys limit and do not order (a limit
     * per key). */
    [JOBQ_Q_KEY_FREE] = {.what = "reading the queue's limits",
                         .common = "SELECT 1 FROM jobq_queues WHERE name = ?1 AND max_per_key "
                                   "IS NOT NULL"},
    /* CLAIM_PICK for a queue with a limit ?3 of one key running or ?4
     * of one key claimed in ?5 ms (0: none): the jobs of keys with as
     * many running or claimed passed over, and as the last columns, how
     * many of each job's key run and were claimed (the library takes no
     * more than fit). */
    [JOBQ_Q_CLAIM_PICK_KEYED] =
        {.what = "claiming jobs",
         .common = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                   "timeout_ms, prev_lost, NULL, run_at, NULL, " KEY_LOOKS FROM_KEYED(
                       "") " AND " KEY_ROOM " ORDER BY priority DESC, run_at, id LIMIT ?2",
         .pg = "",
         .mysql = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                  "timeout_ms, prev_lost, NULL, run_at, NULL, " KEY_LOOKS FROM_KEYED(
                      " FORCE INDEX (jobq_jobs_claim)") " AND " KEY_ROOM " ORDER BY priority "
                  "DESC, run_at, id LIMIT ?2{skip_locked}"},
    /* Dependencies (lib/after.c).  The parents ?1 (a column, ids
     * ascending) a put names, marked as having children: the UPDATE also
     * locks their rows until commit, as an acknowledgement locks a job's
     * row before anything else, so that a parent's completion and a put
     * naming it each see what the other did. */
    [JOBQ_Q_AFTER_MARK] =
        {.what = "marking the jobs named by --after",
         .common = "",
         .sqlite = "UPDATE jobq_jobs SET children = 1 WHERE id IN (SELECT column1 FROM "
                   "jobq_rows(?1))",
         .pg = "UPDATE jobq_jobs SET children = 1 WHERE id = ANY(?1::bigint[])",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (PRIMARY) SET children = 1 WHERE id IN "
                  "({each:?1})"},
    /* The states of the jobs ?1 (a column): unfinished, or archived. */
    [JOBQ_Q_AFTER_STATES] =
        {.what = "reading the states of the jobs named by --after",
         .common = "",
         .sqlite = "SELECT id, state FROM jobq_jobs WHERE id IN (SELECT column1 FROM "
                   "jobq_rows(?1)) UNION ALL SELECT id, outcome FROM jobq_done WHERE id IN "
                   "(SELECT column1 FROM jobq_rows(?1))",
         .mysql = "SELECT id, state FROM jobq_jobs WHERE id IN ({each:?1}) UNION ALL SELECT "
                  "id, outcome FROM jobq_done WHERE id IN ({each:?1})",
         .pg = "SELECT id, state FROM jobq_jobs WHERE id = ANY(?1::bigint[]) UNION ALL SELECT "
               "id, outcome FROM jobq_done WHERE id = ANY(?1::bigint[])"},
    /* The edges (parent ?1, child ?2, any outcome ?3), all columns. */
    [JOBQ_Q_AFTER_EDGES] =
        {.what = "recording the jobs' dependencies",
         .exact = 1,
         .common = "",
         .sqlite = "INSERT INTO jobq_after(parent, child, any_outcome) SELECT column1, column2, "
                   "column3 FROM jobq_rows(?1, ?2, ?3)",
         .mysql = "INSERT INTO jobq_after(parent, child, any_outcome) VALUES {each:(?1, ?2, ?3)}",
         .pg = "INSERT INTO jobq_after(parent, child, any_outcome) SELECT p, c, a FROM "
               "unnest(?1::bigint[], ?2::bigint[], ?3::bigint[]) AS u(p, c, a)"},
    /* The jobs ?1, just put, each waiting for ?2 parents, both columns.
     * MariaDB names the index of a list of ids (see REQUEUE_ROWS). */
    [JOBQ_Q_AFTER_PENDING] =
        {.what = "counting the jobs' parents",
         .common = "",
         .sqlite = "UPDATE jobq_jobs SET state = 'pending', parents_left = v.column2 FROM "
                   "jobq_rows(?1, ?2) AS v WHERE jobq_jobs.id = v.column1",
         .pg = "UPDATE jobq_jobs j SET state = 'pending', parents_left = a.l FROM "
               "unnest(?1::bigint[], ?2::bigint[]) AS a(id, l) WHERE j.id = a.id",
         .mysql = "UPDATE jobq_jobs FORCE INDEX (PRIMARY) SET state = 'pending', parents_left "
                  "= CAST(" BY_ID("?1", "?2") " AS SIGNED) WHERE id IN ({each:?1})"},
    /* The pending children of the jobs ?1 (a column), each edge a row:
     * parent, child, any outcome, and the child's queue, parents left,
     * whether it has children, its ordering key and whether it is a
     * barrier; the children's rows locked. */
    [JOBQ_Q_AFTER_CHILDREN] =
        {.what = "finding the jobs put after the finished jobs",
         .common = "",
         .sqlite = "SELECT e.parent, e.child, e.any_outcome, j.queue, j.parents_left, "
                   "j.children, j.order_key, j.barrier FROM jobq_after e JOIN jobq_jobs j ON "
                   "j.id = e.child WHERE e.parent IN (SELECT column1 FROM jobq_rows(?1)) AND "
                   "j.state = 'pending' ORDER BY e.child, e.parent",
         .mysql = "SELECT e.parent, e.child, e.any_outcome, j.queue, j.parents_left, "
                  "j.children, j.order_key, j.barrier FROM jobq_after e JOIN jobq_jobs j ON "
                  "j.id = e.child WHERE e.parent IN ({each:?1}) AND j.state = 'pending' ORDER "
                  "BY e.child, e.parent FOR UPDATE",
         .pg = "SELECT e.parent, e.child, e.any_outcome, j.queue, j.parents_left, j.children, "
               "j.order_key, j.barrier FROM jobq_after e JOIN jobq_jobs j ON j.id = e.child "
               "WHERE e.parent = ANY(?1::bigint[]) AND j.state = 'pending' ORDER BY e.child, "
               "e.parent FOR UPDATE OF j"},
    /* Pending job ?1 with ?2 parents fewer, in state ?3 once none is
     * left.  Relative, so that two finishes of its parents in one
     * transaction (a cancel's cascade beside) add up; the state first,
     * from the count before, as MySQL assigns in order. */
    [JOBQ_Q_AFTER_SET] = {.what = "counting down the job's parents",
                          .common = "UPDATE jobq_jobs SET state = CASE WHEN parents_left - ?2 "
                                    "<= 0 THEN ?3 ELSE state END, parents_left = parents_left "
                                    "- ?2 WHERE id = ?1 AND state = 'pending'"},
    /* Job ?1's parents (0) and children (1): id, which, state (NULL:
     * pruned), any outcome. */
    [JOBQ_Q_AFTER_LINKS] =
        {.what = "reading the job's dependencies",
         .common = "SELECT e.parent, 0, coalesce(j.state, d.outcome), e.any_outcome FROM "
                   "jobq_after e LEFT JOIN jobq_jobs j ON j.id = e.parent LEFT JOIN jobq_done "
                   "d ON d.id = e.parent WHERE e.child = ?1 UNION ALL SELECT e.child, 1, "
                   "coalesce(j.state, d.outcome), e.any_outcome FROM jobq_after e LEFT JOIN "
                   "jobq_jobs j ON j.id = e.child LEFT JOIN jobq_done d ON d.id = e.child WHERE "
                   "e.parent = ?1 ORDER BY 2, 1"},
    /* The edges of the jobs PRUNE deletes as children (same arguments):
     * an edge stays while its child is kept, its parent shown as pruned. */
    [JOBQ_Q_AFTER_PRUNE] = {.what = "pruning the finished jobs' dependencies",
                            .common = "DELETE FROM jobq_after WHERE EXISTS (SELECT 1 FROM "
                                      "jobq_done d WHERE d.id = jobq_after.child AND "
                                      "d.finished_at < ?1 AND d.queue = coalesce(?2, d.queue) "
                                      "AND d.id NOT IN (SELECT job_id FROM jobq_blocked))"},
    /* The jobs with children among those PURGE_JOBS deletes (same
     * arguments). */
    [JOBQ_Q_AFTER_PURGED] = {.what = "finding the purged jobs' children",
                             .common = "SELECT id FROM jobq_jobs WHERE queue = ?1 AND "
                                       "children = 1 AND state <> 'running' AND session IS "
                                       "NULL AND id <= ?2 ORDER BY id"},
    /* ---- parts (lib/part.c) */
    [JOBQ_Q_PARTS_GET] = {.what = "reading the queue's parts",
                          .common = "SELECT parts FROM jobq_queues WHERE name = ?1"},
    [JOBQ_Q_PARTS_SET] = {.what = "setting the queue's parts",
                          .common = "UPDATE jobq_queues SET parts = ?2 WHERE name = ?1"},
    [JOBQ_Q_PARTS_DROP] = {.what = "resetting the queue's parts",
                           .common = "DELETE FROM jobq_parts WHERE queue = ?1"},
    /* The parts ?2 (a column) of the queues ?1 (a column), owned by no one. */
    [JOBQ_Q_PARTS_ADD] =
        {.what = "making the queue's parts",
         .exact = 1,
         .common = "",
         .sqlite = "INSERT INTO jobq_parts(queue, part, session, since) SELECT column1, "
                   "column2, NULL, {now} FROM jobq_rows(?1, ?2)",
         .mysql = "INSERT INTO jobq_parts(queue, part, session, since) VALUES "
                  "{each:(?1, ?2, NULL, {now})}",
         .pg = "INSERT INTO jobq_parts(queue, part, session, since) SELECT q, p, NULL, {now} "
               "FROM unnest(?1::text[], ?2::bigint[]) AS u(q, p)"},
    /* The ordering keys of queue ?1's unfinished jobs. */
    [JOBQ_Q_PARTS_KEYS] = {.what = "reading the queue's keys",
                           .common = "SELECT DISTINCT order_key FROM jobq_jobs WHERE queue = ?1 "
                                     "AND order_key IS NOT NULL"},
    /* Queue ?1's jobs of key ?2 into part ?3. */
    [JOBQ_Q_PARTS_REKEY] = {.what = "moving the key's jobs to their part",
                            .common = "UPDATE jobq_jobs SET part = ?3 WHERE queue = ?1 AND "
                                      "order_key = ?2"},
    /* Queue ?1's jobs (?3 = 0: those without a key) into ?2 parts: each
     * its id's part (NULL for one part). */
    [JOBQ_Q_PARTS_UNKEYED] = {.what = "moving the jobs to their parts",
                              .common = "UPDATE jobq_jobs SET part = CASE WHEN ?2 > 1 THEN id % "
                                        "?2 END WHERE queue = ?1 AND (?3 = 1 OR order_key IS "
                                        "NULL)"},
    /* Queue ?1's parts and their owners, locked: one balance at a time. */
    [JOBQ_Q_PARTS_LOCK] = {.what = "reading the queue's parts",
                           .common = "SELECT session FROM jobq_parts WHERE queue = ?1 "
                                     "ORDER BY part{for_update}"},
    [JOBQ_Q_CLAIMERS_JOIN] = {.what = "joining the queue's claimers",
                              .common = "INSERT INTO jobq_claimers(queue, session, since) VALUES "
                                        "(?1, ?2, {now}) ON CONFLICT (queue, session) DO NOTHING",
                              .mysql = "INSERT IGNORE INTO jobq_claimers(queue, session, since) "
                                       "VALUES (?1, ?2, {now})"},
    /* The live sessions that claim from queue ?1, the oldest first. */
    [JOBQ_Q_CLAIMERS_LIVE] = {.what = "reading the queue's claimers",
                              .common = "SELECT c.session FROM jobq_claimers c JOIN "
                                        "jobq_sessions s ON s.id = c.session WHERE c.queue = ?1 "
                                        "AND s.expires_at >= {now} ORDER BY c.since, c.session"},
    /* How many jobs of each part of queue ?2 session ?1 runs, by the
     * session's index: SQLite and MariaDB otherwise read every job of the
     * queue (6 ms at 30,000 jobs, with the file or the parts locked). */
    [JOBQ_Q_PARTS_RUNNING] = {.what = "counting the session's jobs by part",
                              .common = "SELECT part, count(*) FROM jobq_jobs WHERE session = ?1 "
                                        "AND queue = ?2 AND state = 'running' AND part IS NOT "
                                        "NULL GROUP BY part",
                              .sqlite = "SELECT part, count(*) FROM jobq_jobs INDEXED BY "
                                        "jobq_jobs_session WHERE session = ?1 AND queue = ?2 AND "
                                        "state = 'running' AND part IS NOT NULL GROUP BY part",
                              .mysql = "SELECT part, count(*) FROM jobq_jobs FORCE INDEX "
                                       "(jobq_jobs_session) WHERE session = ?1 AND queue = ?2 "
                                       "AND state = 'running' AND part IS NOT NULL GROUP BY "
                                       "part"},
    [JOBQ_Q_PART_OWN] = {.what = "handing the part over",
                         .common = "UPDATE jobq_parts SET session = ?3, since = {now} WHERE "
                                   "queue = ?1 AND part = ?2"},
    /* The queues in parts that session ?1 claims from. */
    [JOBQ_Q_PARTS_JOINED] = {.what = "reading the session's queues",
                             .common = "SELECT c.queue FROM jobq_claimers c JOIN jobq_queues q "
                                       "ON q.name = c.queue WHERE c.session = ?1 AND q.parts > 1 "
                                       "ORDER BY c.queue"},
    /* Session ?2's parts of queue ?1, kept from a balance until the claim
     * commits. */
    [JOBQ_Q_PARTS_MINE] = {.what = "reading the session's parts",
                           .common = "SELECT part FROM jobq_parts WHERE queue = ?1 AND session "
                                     "= ?2 ORDER BY part",
                           .pg = "SELECT part FROM jobq_parts WHERE queue = ?1 AND session = "
                                 "?2 ORDER BY part FOR SHARE",
                           .mysql = "SELECT part FROM jobq_parts WHERE queue = ?1 AND session "
                                    "= ?2 ORDER BY part LOCK IN SHARE MODE"},
    /* CLAIM_PICK within part ?3, by the parts' claim index. */
    [JOBQ_Q_PART_PICK] =
        {.what = "claiming jobs",
         .common = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                   "timeout_ms, prev_lost, NULL, run_at, NULL FROM jobq_jobs WHERE queue = ?1 "
                   "AND part = ?3 AND part IS NOT NULL AND state = 'ready' AND run_at <= {now} "
                   "ORDER BY priority DESC, run_at, id LIMIT ?2{skip_locked}",
         .mysql = "SELECT id, queue, payload, attempts + 1, max_attempts, priority, order_key, "
                  "timeout_ms, prev_lost, NULL, run_at, NULL FROM jobq_jobs FORCE INDEX "
                  "(jobq_jobs_part) WHERE queue = ?1 AND part = ?3 AND state = 'ready' AND "
                  "run_at <= {now} ORDER BY priority DESC, run_at, id LIMIT ?2{skip_locked}"},
    [JOBQ_Q_PARTS_LEAVE] = {.what = "giving the session's parts up",
                            .common = "UPDATE jobq_parts SET session = NULL, since = {now} "
                                      "WHERE queue = ?1 AND session = ?2"},
    [JOBQ_Q_CLAIMERS_LEAVE] = {.what = "leaving the queues' claimers",
                               .common = "DELETE FROM jobq_claimers WHERE session = ?1"},
    /* Queue ?1's parts: the owner, since when, whether its lease holds,
     * and the ready jobs. */
    [JOBQ_Q_PARTS_SHOW] =
        {.what = "reading the queue's parts",
         .common = "SELECT p.part, p.session, p.since, CASE WHEN s.expires_at >= {now} THEN 1 "
                   "ELSE 0 END, (SELECT count(*) FROM jobq_jobs j WHERE j.queue = p.queue AND "
                   "j.part = p.part AND j.state = 'ready') FROM jobq_parts p LEFT JOIN "
                   "jobq_sessions s ON s.id = p.session WHERE p.queue = ?1 ORDER BY p.part"},
    /* CLAIM where some queue is in parts: the queues in one part as
     * CLAIM, and of those in parts, session ?3's own parts only, each
     * walked in the parts' claim index.  The parts' rows are not locked
     * (a lock writes the row: every claimer would write one page): the
     * session's part lock, taken before, keeps a balance off them
     * (lib/part.c). */
    [JOBQ_Q_CLAIM_PARTS] =
        {.what = "claiming jobs",
         .common = "",
         .pg = "WITH q AS (SELECT name FROM jobq_queues WHERE paused = 0 AND parts = 1 AND "
               "(?1::text[] IS NULL OR name = ANY(?1::text[]))), "
               "p AS (SELECT p.queue, p.part FROM jobq_parts p JOIN jobq_queues pq ON pq.name = "
               "p.queue WHERE p.session = ?3 AND pq.paused = 0 AND pq.parts > 1 AND (?1::text[] "
               "IS NULL OR p.queue = ANY(?1::text[]))), "
               "c AS (SELECT j.t, row_number() OVER (ORDER BY j.priority DESC, j.run_at, j.id) "
               "AS rn FROM (SELECT a.ctid AS t, a.id, a.priority, a.run_at FROM q CROSS JOIN "
               "LATERAL (SELECT ctid, id, priority, run_at FROM jobq_jobs WHERE queue = q.name "
               "AND state = 'ready' AND run_at <= {now} ORDER BY priority DESC, run_at, id "
               "LIMIT ?2 FOR UPDATE SKIP LOCKED) a UNION ALL SELECT b.ctid, b.id, b.priority, "
               "b.run_at FROM p CROSS JOIN LATERAL (SELECT ctid, id, priority, run_at FROM "
               "jobq_jobs WHERE queue = p.queue AND part = p.part AND part IS NOT NULL AND "
               "state = 'ready' AND run_at <= {now} ORDER BY priority DESC, run_at, id LIMIT ?2 "
               "FOR UPDATE SKIP LOCKED) b) j ORDER BY j.priority DESC, j.run_at, j.id LIMIT ?2) "
               CLAIM_MARKED},
    [JOBQ_Q_SESSIONS_PARTS] = {.what = "reading the sessions' parts",
                               .common = "SELECT session, queue, part FROM jobq_parts WHERE "
                                         "session IS NOT NULL ORDER BY session, queue, part"},
};

const char *jobq__sql_what(int stmt) {
  int id = stmt % JOBQ_Q__COUNT;
  return stmt >= 0 && stmt < JOBQ_STMT_COUNT && texts[id].what != NULL ? texts[id].what
                                                                       : "running a statement";
}

/* ---------------------------------------------------------------- spelling */

typedef struct token {
  const char *name;
  const char *spelled[3];  /* sqlite, pg, mysql */
} token;

static const token tokens[] = {
    {"{now}",
     {"jobq_now()",
      "CAST(floor(extract(epoch FROM statement_timestamp()) * 1000) AS BIGINT)",
      "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', "
      "UTC_TIMESTAMP(6)) DIV 1000 AS SIGNED)"}},
    {"{greatest}", {"max", "GREATEST", "GREATEST"}},
    {"{bigint}", {"INTEGER", "BIGINT", "SIGNED"}},
    {"{for_update}", {"", " FOR UPDATE", " FOR UPDATE"}},
    {"{skip_locked}", {"", " FOR UPDATE SKIP LOCKED", " FOR UPDATE SKIP LOCKED"}},
};

/* A growing string; on ENOMEM it turns NULL and stays so. */
typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->p == NULL) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      free(b->p);
      b->p = NULL;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

char *jobq__sql_spell(int dialect, const char *t, int **order,
                      size_t *norder) {
  buf b = {malloc(256), 0, 256};
  if (b.p == NULL) return NULL;
  b.p[0] = '\0';
  /* SQLite makes a statement that may fail halfway undoable on its own
   * (a statement journal, costly on every run).  The library undoes the
   * whole transaction or savepoint on any failure anyway, so jobq's writes
   * fail without that: OR FAIL. */
  if (dialect == JOBQ_DIALECT_SQLITE) {
    if (strncmp(t, "INSERT INTO ", 12) == 0) {
      put(&b, "INSERT OR FAIL INTO ", 20);
      t += 12;
    } else if (strncmp(t, "UPDATE ", 7) == 0) {
      put(&b, "UPDATE OR FAIL ", 15);
      t += 7;
    }
  }
  int *ord = NULL;
  size_t nord = 0;
  if (order != NULL) *order = NULL;
  if (norder != NULL) *norder = 0;
  while (*t != '\0' && b.p != NULL) {
    if (*t == '\'') {
      /* A literal is copied as it is. */
      const char *end = strchr(t + 1, '\'');
      size_t n = end ? (size_t)(end - t) + 1 : strlen(t);
      put(&b, t, n);
      t += n;
    } else if (*t == '?' && t[1] >= '0' && t[1] <= '9') {
      char *end;
      long num = strtol(t + 1, &end, 10);
      char p[16];
      if (dialect == JOBQ_DIALECT_MYSQL) {
        int *o = realloc(ord, (nord + 1) * sizeof *o);
        if (o == NULL) {
          free(b.p);
          b.p = NULL;
          break;
        }
        ord = o;
        ord[nord++] = (int)num - 1;
        put(&b, "?", 1);
      } else {
        int n = snprintf(p, sizeof p, "%c%ld",
                         dialect == JOBQ_DIALECT_PG ? '$' : '?', num);
        put(&b, p, (size_t)n);
      }
      t = end;
    } else if (*t == '{') {
      size_t i;
      for (i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        size_t n = strlen(tokens[i].name);
        if (strncmp(t, tokens[i].name, n) == 0) {
          const char *s = tokens[i].spelled[dialect];
          put(&b, s, strlen(s));
          t += n;
          break;
        }
      }
      if (i == sizeof tokens / sizeof tokens[0]) put(&b, t++, 1);
    } else {
      size_t n = strcspn(t, "'?{");
      if (n == 0) n = 1;
      put(&b, t, n);
      t += n;
    }
  }
  if (b.p == NULL || order == NULL) {
    free(ord);
    return b.p;
  }
  *order = ord;
  *norder = nord;
  return b.p;
}

/* ---------------------------------------------------------------- sets */

/* The rows a statement of variant v (1 to 7) spells out: 64, 32 ... 1. */
#define MOST_ROWS 64
static size_t variant_rows(int v) { return (size_t)MOST_ROWS >> (v - 1); }

/* The text statement id has for dialect, before spelling. */
static const char *own_text(int dialect, int id) {
  const text *t = &texts[id];
  const char *own = dialect == JOBQ_DIALECT_SQLITE ? t->sqlite
                    : dialect == JOBQ_DIALECT_PG   ? t->pg
                                                   : t->mysql;
  return own ? own : t->common;
}

int jobq__sql_none(int dialect, int id) {
  const char *t = own_text(dialect, id);
  return t == NULL || *t == '\0';
}

/* Whether dialect spells statement id's rows out ({each:...}). */
static int spelled_rows(int dialect, int id) {
  const char *t = own_text(dialect, id);
  return t != NULL && (strstr(t, "{each:") != NULL || strstr(t, "{each_union:") != NULL);
}

/* The end of the template that starts at t (just past "{each:"): its
 * closing brace, braces of tokens within counted. */
static const char *template_end(const char *t) {
  int depth = 0;
  for (; *t != '\0'; t++) {
    if (*t == '{') depth++;
    if (*t == '}' && depth-- == 0) return t;
  }
  return t;
}

/* The number ?N at p, or 0. */
static long param_at(const char *p, const char **end) {
  if (p[0] != '?' || p[1] < '0' || p[1] > '9') return 0;
  char *e;
  long n = strtol(p + 1, &e, 10);
  *end = e;
  return n;
}

/* The highest ?N of text t: the statement's arguments. */
static size_t text_args(const char *t) {
  long n = 0;
  for (const char *p = t, *end; *p != '\0'; p++) {
    long k = param_at(p, &end);
    if (k > n) n = k;
  }
  return (size_t)n;
}

/* The templates of set statements: {each:T} repeats T separated by ", ",
 * {each_union:T} by " UNION ALL ". */
static const char *next_each(const char *t, size_t *head, const char **sep) {
  const char *a = strstr(t, "{each:"), *u = strstr(t, "{each_union:");
  if (u != NULL && (a == NULL || u < a)) {
    *head = 12;
    *sep = " UNION ALL ";
    return u;
  }
  *head = 6;
  *sep = ", ";
  return a;
}

/*
 * A set statement's text with its rows spelled out: each {each:TEMPLATE}
 * becomes rows copies of TEMPLATE, in which every ?N names row i of
 * column N.  The values are then, in order: the n arguments as the
 * caller gave them (n, the highest ?N of the text; a column's own place
 * unused), then rows places for each of them in turn, a column's rows in
 * its places.  A new string, or NULL when out of memory.
 */
static char *spell_rows(const char *t, size_t rows) {
  const size_t n = text_args(t);
  buf b = {malloc(256), 0, 256};
  if (b.p == NULL) return NULL;
  b.p[0] = '\0';
  while (*t != '\0' && b.p != NULL) {
    size_t head;
    const char *sep, *at = next_each(t, &head, &sep);
    if (at == NULL) {
      put(&b, t, strlen(t));
      break;
    }
    put(&b, t, (size_t)(at - t));
    const char *from = at + head, *stop = template_end(from);
    for (size_t r = 0; r < rows; r++) {
      if (r > 0) put(&b, sep, strlen(sep));
      for (const char *p = from, *end; p < stop;) {
        long k = param_at(p, &end);
        if (k == 0) {
          put(&b, p++, 1);
          continue;
        }
        char num[24];
        int len = snprintf(num, sizeof num, "?%zu", n + ((size_t)k - 1) * rows + r + 1);
        put(&b, num, (size_t)len);
        p = end;
      }
    }
    t = *stop ? stop + 1 : stop;
  }
  return b.p;
}

char *jobq__sql_text(int dialect, int stmt, int **order, size_t *norder) {
  int id = stmt % JOBQ_Q__COUNT, v = stmt / JOBQ_Q__COUNT;
  const char *t = own_text(dialect, id);
  if (!spelled_rows(dialect, id)) return jobq__sql_spell(dialect, t, order, norder);
  /* Variant 0, which jobq__sql_set() never runs, is one row. */
  char *rows = spell_rows(t, v == 0 ? 1 : variant_rows(v));
  char *spelled = rows ? jobq__sql_spell(dialect, rows, order, norder) : NULL;
  free(rows);
  return spelled;
}

int jobq__sql_returns(int dialect, int id) {
  const char *t = own_text(dialect, id);
  return t != NULL && strstr(t, "RETURNING") != NULL;
}

/* ---------------------------------------------------------------- running */

int jobq__sql_query(jobq *db, int id, jobq_rows **rows, const jobq_val *args,
                    size_t n) {
  *rows = NULL;
  return db->store->query(db, id, args, n, rows, NULL);
}

int jobq__rows_next(jobq *db, jobq_rows *r) { return db->store->next(db, r); }

void jobq__rows_done(jobq *db, jobq_rows *r) {
  if (r != NULL) db->store->done(db, r);
}

int jobq__sql_run(jobq *db, int id, const jobq_val *args, size_t n) {
  return db->store->query(db, id, args, n, NULL, NULL);
}

int jobq__sql_defer(jobq *db, int id, const jobq_val *args, size_t n) {
  static const jobq_how defer = {.defer = 1};
  return db->store->query(db, id, args, n, NULL, &defer);
}

int jobq__sql_change(jobq *db, int id, int64_t *changed, const jobq_val *args,
                     size_t n) {
  int rc = db->store->query(db, id, args, n, NULL, NULL);
  if (rc == JOBQ_OK && changed != NULL) *changed = db->store->changes(db);
  return rc;
}

int jobq__sql_row(jobq *db, int id, jobq_rows **rows, const jobq_val *args,
                  size_t n) {
  int rc = jobq__sql_query(db, id, rows, args, n);
  if (rc != JOBQ_OK) return rc;
  int r = jobq__rows_next(db, *rows);
  if (r != 1) {
    jobq__rows_done(db, *rows);
    *rows = NULL;
  }
  return r;
}

int jobq__sql_int(jobq *db, int id, int64_t dflt, int64_t *out,
                  const jobq_val *args, size_t n) {
  jobq_rows *r;
  int got = jobq__sql_row(db, id, &r, args, n);
  if (got < 0) return got;
  *out = got && !jobq__col_null(db, r, 0) ? jobq__col_int(db, r, 0) : dflt;
  jobq__rows_done(db, r);
  return JOBQ_OK;
}

int jobq__sql_exists(jobq *db, int id, int *yes, const jobq_val *args,
                     size_t n) {
  jobq_rows *r;
  int got = jobq__sql_row(db, id, &r, args, n);
  if (got < 0) return got;
  jobq__rows_done(db, r);
  *yes = got;
  return JOBQ_OK;
}

void jobq__texts_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

int jobq__sql_texts(jobq *db, int id, char ***out, size_t *nout, const jobq_val *args,
                    size_t n) {
  *out = NULL;
  *nout = 0;
  jobq_rows *r;
  int rc = jobq__sql_query(db, id, &r, args, n);
  if (rc != JOBQ_OK) return rc;
  char **v = NULL;
  size_t count = 0, cap = 0;
  int got, failed = 0;
  while (!failed && (got = jobq__rows_next(db, r)) == 1) {
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      char **w = realloc(v, cap * sizeof *w);
      if (w == NULL) {
        failed = 1;
        break;
      }
      v = w;
    }
    v[count++] = jobq__col_text(db, r, 0, &failed);
  }
  jobq__rows_done(db, r);
  rc = got < 0 ? got : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc != JOBQ_OK) {
    jobq__texts_free(v, count);
    return rc;
  }
  *out = v;
  *nout = count;
  return JOBQ_OK;
}

int jobq__sql_ids(jobq *db, int id, size_t max, int64_t **ids, size_t *nids,
                  const jobq_val *args, size_t n) {
  *ids = NULL;
  *nids = 0;
  jobq_rows *r;
  int rc = jobq__sql_query(db, id, &r, args, n);
  if (rc != JOBQ_OK) return rc;
  size_t cap = 0;
  int got = 0;
  while (*nids < max && (got = jobq__rows_next(db, r)) == 1) {
    if (*nids == cap) {
      cap = cap ? cap * 2 : 16;
      int64_t *v = realloc(*ids, cap * sizeof *v);
      if (v == NULL) {
        got = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
        break;
      }
      *ids = v;
    }
    (*ids)[(*nids)++] = jobq__col_int(db, r, 0);
  }
  jobq__rows_done(db, r);
  if (*nids < max && got < 0) {
    free(*ids);
    *ids = NULL;
    *nids = 0;
    return got;
  }
  return JOBQ_OK;
}

int jobq__sql_insert(jobq *db, int id, int64_t *new_id, int *inserted,
                     const jobq_val *args, size_t n) {
  *inserted = 0;
  if (!jobq__sql_returns(db->store->dialect, id)) {
    int64_t changed = 0;
    int rc = jobq__sql_change(db, id, &changed, args, n);
    if (rc != JOBQ_OK) return rc;
    /* An upsert that found its unique key taken changed nothing. */
    if (changed == 1) {
      *new_id = db->store->insert_id(db);
      *inserted = 1;
    }
    return JOBQ_OK;
  }
  jobq_rows *r;
  int got = jobq__sql_row(db, id, &r, args, n);
  if (got < 0) return got;
  if (got == 1) {
    *new_id = jobq__col_int(db, r, 0);
    *inserted = 1;
    jobq__rows_done(db, r);
  }
  return JOBQ_OK;
}

/* The bytes of row i of the columns of args[0..n). */
static size_t row_bytes(const jobq_val *args, size_t n, size_t i) {
  size_t bytes = 0;
  for (size_t a = 0; a < n; a++)
    if (args[a].type == 'c') bytes += ((const jobq_val *)args[a].p)[i].len;
  return bytes;
}

int jobq__sql_set(jobq *db, int id, const jobq_val *args, size_t n, size_t most,
                  const jobq_how *how, jobq_set_fn each, void *ctx, int64_t *changed) {
  size_t m = 0;
  for (size_t a = 0; a < n; a++)
    if (args[a].type == 'c') m = args[a].len;
  if (changed != NULL) *changed = 0;
  if (m == 0) return JOBQ_OK;
  jobq_rows *r = NULL;
  if (!spelled_rows(db->store->dialect, id)) {
    /* The store binds each column whole (PostgreSQL: an array). */
    int rc = db->store->query(db, id, args, n, each ? &r : NULL, how);
    if (rc != JOBQ_OK) return rc;
    if (changed != NULL) *changed = db->store->changes(db);
    if (each == NULL) return JOBQ_OK;
    rc = each(db, r, 0, m, ctx);
    jobq__rows_done(db, r);
    return rc;
  }
  /* A short chunk's statement filled with its last row again, since a
   * statement costs a round trip; an INSERT's cut into statements of 64,
   * 32 ... 1 rows, none repeated. */
  const int fill = !texts[id].exact;
  const size_t budget = db->stmt_bytes;
  /* The values as spell_rows() places them. */
  const size_t base = text_args(own_text(db->store->dialect, id));
  if (n > base) n = base;
  jobq_val *flat = malloc((base + base * MOST_ROWS) * sizeof *flat);
  if (flat == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int rc = JOBQ_OK;
  for (size_t at = 0; at < m && rc == JOBQ_OK;) {
    /* The rows of this statement: as many as there are room for, and
     * as fit in a statement; at least one.  Its variant: the fewest rows
     * that hold them, or for an INSERT the most that they fill. */
    size_t k = m - at < MOST_ROWS ? m - at : MOST_ROWS;
    if (most > 0 && k > most) k = most;
    if (budget > 0) {
      size_t bytes = row_bytes(args, n, at), fit = 1;
      while (fit < k && (bytes += row_bytes(args, n, at + fit)) <= budget) fit++;
      k = fit;
    }
    int v = 1;
    if (fill)
      while (v < JOBQ_SQL_VARIANTS - 1 && variant_rows(v + 1) >= k) v++;
    else
      while (variant_rows(v) > k) v++;
    size_t rows = variant_rows(v);
    if (!fill) k = rows;
    for (size_t a = 0; a < base; a++) {
      flat[a] = a < n && args[a].type != 'c' ? args[a] : V_NULL;
      const jobq_val *col = a < n && args[a].type == 'c' ? args[a].p : NULL;
      /* A statement's rows after the chunk's last are that row again:
       * a set statement is the same with a row twice. */
      for (size_t i = 0; i < rows; i++)
        flat[base + a * rows + i] = col ? col[at + (i < k ? i : k - 1)] : V_NULL;
    }
    rc = db->store->query(db, jobq__stmt(id, (int)v), flat, base + base * rows, each ? &r : NULL,
                          how);
    if (rc == JOBQ_OK && changed != NULL) *changed += db->store->changes(db);
    if (rc == JOBQ_OK && each != NULL) {
      rc = each(db, r, at, k, ctx);
      jobq__rows_done(db, r);
    }
    at += k;
  }
  free(flat);
  return rc;
}

int64_t jobq__col_int(jobq *db, jobq_rows *r, int col) {
  return db->store->col_int(r, col);
}

int jobq__col_null(jobq *db, jobq_rows *r, int col) {
  return db->store->is_null(r, col);
}

char *jobq__col_text(jobq *db, jobq_rows *r, int col, int *failed) {
  if (db->store->is_null(r, col)) return NULL;
  size_t len;
  const void *p = db->store->col_bytes(r, col, &len);
  return jobq__memdup(p, len, failed);
}

void *jobq__col_bytes(jobq *db, jobq_rows *r, int col, size_t *len,
                      int *failed) {
  *len = 0;
  if (db->store->is_null(r, col)) return NULL;
  const void *p = db->store->col_bytes(r, col, len);
  return jobq__memdup(p, *len, failed);
}

int jobq__col_is(jobq *db, jobq_rows *r, int col, const char *s) {
  if (db->store->is_null(r, col)) return 0;
  size_t len;
  const char *p = db->store->col_bytes(r, col, &len);
  return len == strlen(s) && memcmp(p, s, len) == 0;
}
