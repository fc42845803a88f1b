/*
 * sql.h - the statements the job logic runs, named once for every store,
 * and the small calls through which the logic runs them.
 *
 * Each statement has one text in a common SQL with numbered parameters
 * (?1, ?2 ...) and a few tokens, and where an engine needs its own words,
 * a text of that dialect (lib/sql.c).  jobq__sql_text() gives a store the
 * text to prepare, with the parameters and tokens spelled its way:
 *
 *   {now}          the database clock in Unix milliseconds
 *   {greatest}     the larger of two values (max / GREATEST)
 *   {bigint}       the integer type of CAST (INTEGER / BIGINT / SIGNED)
 *   {for_update}   lock the rows read until commit (nothing on SQLite,
 *                  where a writer holds the whole file)
 *   {skip_locked}  the same, skipping rows another transaction holds
 *
 * Times are BIGINT Unix milliseconds on every engine, so that the same
 * arithmetic works everywhere; flags are 0/1 integers.
 */
#ifndef JOBQ_SQL_H
#define JOBQ_SQL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/store.h"

/* Every statement the logic runs, by name; lib/sql.c has their texts. */
#define JOBQ_SQL_STATEMENTS(X)                                              \
  X(NOW) X(IDENT) X(SCHEMA_HAS_META) X(SCHEMA_VERSION) X(SCHEMA_OBJECTS) X(META_INSERT)     \
  X(META_VERSION_SET) X(QUEUE_ENSURE) X(UNIQUE_FIND) X(ANY_BEFORE)             \
  X(UNIQUES_FIND)                                                           \
  X(BARRIER_FIRST) X(BARRIER_BEFORE) X(KEY_TAKEN) X(KEYS_TAKEN)                           \
  X(KEY_ACTIVE) X(KEY_NEXT) X(KEY_BEFORE) X(BLOCKED) X(BLOCK) X(BLOCK_8) X(UNBLOCK)        \
  X(BLOCKED_BY)                                                             \
  X(MAKE_READY) X(INSERT_JOB) X(QUEUES_ENSURE) X(PUT_WAITS) X(PUT_WAITS_KEYS) X(PUT_ROWS) X(PUT_KEYED_ROWS) X(SESSION_INSERT) X(SESSION_LOCK)             \
  X(CLAIM_ENTER) X(CLAIM) X(CLAIM_PICK) X(CLAIM_MARK) X(CLAIM_HELD)                                              \
  X(SESSION_DELETE) X(SESSION_JOBS) X(STARTED) X(HEARTBEAT) X(STALL) X(RENEW_ALL)      \
  X(GUARD_SET)                                                              \
  X(EXPIRED) X(ORPHANS) X(REQUEUE_LOST) X(REQUEUE_GIVEN_BACK)               \
  X(SESSION_GIVE_BACK) X(SESSION_REQUEUE_LOST)                              \
  X(CANCEL_LIST) X(COMPLETE) X(COMPLETE_UNKEYED) X(ACK_ROW) X(ACK_ROWS) X(ACK_DONE_BEFORE) X(ACK_READY_BEFORE) \
  X(ACK_REQUEUE) X(REQUEUE_ROWS) X(JOB_ORDER) X(ARCHIVE) X(ARCHIVE_ROWS) X(DELETE_JOB)   \
  X(DELETE_ROWS) X(COUNT_ADD) X(COUNTS_OF) X(COUNTS_DROP) X(NEXT_DUE) X(NEXT_DUE_ALL)  \
  X(NEXT_DUE_PARTS) X(NEXT_DUE_MINE)       \
  X(POLICY) X(WAITING_UNKEYED) X(WAITING_KEYS) X(EXTEND) X(EXTEND_CANCEL)   \
  X(SHOW_HOT) X(SHOW_DONE) X(LIST_ALL) X(LIST_HOT) X(LIST_DONE)             \
  X(STATS_QUEUES) X(STATS_HOT) X(SESSIONS) X(DONE_ROW) X(HOT_STATE)         \
  X(UNARCHIVE) X(DELETE_DONE) X(DEAD_IDS) X(DEAD_BARRIER) X(UNARCHIVE_DEAD) X(DELETE_DEAD) X(MARK_CANCELLED)                 \
  X(REQUEST_CANCEL) X(SET_PAUSED) X(SET_POLICY) X(PRUNE_BOUND)              \
  X(PRUNE_COUNT) X(PRUNE)                                                   \
  X(ALL_SESSIONS) X(BUMP) X(EPOCH) X(QUEUE_PAUSED) X(QUEUES_ACTIVE)          \
  X(PRUNE_TOTAL) X(PURGE_RUNNING) X(PURGE_BOUND) X(PURGE_JOBS)             \
  X(PURGE_BLOCKED) X(PURGE_UNBLOCK) X(PURGE_DONE_BOUND) X(PURGE_DONE_COUNT) \
  X(PURGE_DONE) X(PURGE_TOTAL) X(CANCEL_SCAN) X(QUEUE_NAMES)                \
  X(TALLY_ADD) X(TALLY_OLD) X(TALLY_DROP) X(TALLY_READ) X(TALLY_TOTALS)     \
  X(ATTEMPT_ADD) X(ATTEMPTS_LOST) X(ATTEMPTS_OF) X(ATTEMPTS_PRUNE)          \
  X(MARK_DONE) X(MARK_PUT) X(MARK_PUT_QUEUE) X(MARK_META) X(PRUNED)         \
  X(CRON_ADD) X(CRON_REPLACE) X(CRON_GET) X(CRON_DELETE) X(CRON_PAUSE)      \
  X(CRON_RESUME) X(CRON_LIST) X(CRON_WAIT) X(CRON_DUE) X(CRON_ADVANCE)       \
  X(LIMITS_CLAIM) X(CLAIM_CAPPED) X(RUNNING_COUNT) X(STARTS_PRUNE)          \
  X(STARTS_SUM) X(STARTS_ADD) X(LIMITS_SET) X(LIMITS_LIST) X(KEY_FREE)     \
  X(CLAIM_PICK_KEYED) X(KEY_STARTS_PRUNE) X(KEY_STARTS_ADD)                 \
  X(AFTER_MARK) X(AFTER_STATES) X(AFTER_EDGES) X(AFTER_PENDING) X(AFTER_CHILDREN) \
  X(AFTER_SET) X(AFTER_LINKS) X(AFTER_PURGED) X(AFTER_PRUNE)                     \
  X(PARTS_GET) X(PARTS_SET) X(PARTS_DROP) X(PARTS_ADD) X(PARTS_KEYS) X(PARTS_REKEY)     \
  X(PARTS_UNKEYED) X(PARTS_LOCK) X(CLAIMERS_JOIN) X(CLAIMERS_LIVE) X(PARTS_RUNNING)     \
  X(PART_OWN) X(PARTS_JOINED) X(PARTS_MINE) X(PART_PICK) X(PARTS_LEAVE)                \
  X(CLAIMERS_LEAVE) X(PARTS_SHOW) X(SESSIONS_PARTS) X(CLAIM_PARTS)

enum {
#define JOBQ_SQL_ENUM(name) JOBQ_Q_##name,
  JOBQ_SQL_STATEMENTS(JOBQ_SQL_ENUM)
#undef JOBQ_SQL_ENUM
      JOBQ_Q__COUNT
};

/* A statement's variants: 0, the statement as written; 1 to 7, a set
 * statement with 64, 32 ... 1 rows spelled out (jobq__sql_set).  A store keeps a
 * prepared statement for each stmt from 0 to JOBQ_STMT_COUNT. */
#define JOBQ_SQL_VARIANTS 8
#define JOBQ_STMT_COUNT (JOBQ_Q__COUNT * JOBQ_SQL_VARIANTS)
static inline int jobq__stmt(int id, int variant) { return id + variant * JOBQ_Q__COUNT; }

/*
 * text (in the common notation above) spelled for dialect: a new string
 * the caller frees, or NULL when out of memory.  For MySQL, whose
 * parameters are unnumbered, *order (when order is not NULL) gets a new
 * array of *norder 0-based argument indexes, one per '?' of the result
 * (caller frees); other dialects set *order to NULL.
 */
char *jobq__sql_spell(int dialect, const char *text, int **order,
                      size_t *norder);
/* Whether dialect has no statement id: another statement does its work
 * there (PostgreSQL's ARCHIVE_ROWS deletes the rows it archives). */
int jobq__sql_none(int dialect, int id);
/* The text of stmt (a statement of lib/sql.h, or one of its variants:
 * jobq__stmt) for dialect, spelled as above. */
char *jobq__sql_text(int dialect, int stmt, int **order, size_t *norder);
/* What the statement (or a variant of it) does, in words ("finding the
 * ordering key's next job"), for messages: they never name a
 * statement. */
const char *jobq__sql_what(int stmt);
/* Whether statement id returns rows for dialect (an INSERT its new ids,
 * RETURNING), where others read them with insert_id. */
int jobq__sql_returns(int dialect, int id);

/* ---------------------------------------------------------------- values */

static inline jobq_val jobq__v_int(int64_t i) {
  return (jobq_val){.type = 'i', .i = i};
}
/* Text, or SQL NULL when s is NULL. */
static inline jobq_val jobq__v_text(const char *s) {
  return s ? (jobq_val){.type = 't', .p = s, .len = strlen(s)}
           : (jobq_val){.type = 'n'};
}
/* len bytes of text, or SQL NULL when s is NULL. */
static inline jobq_val jobq__v_textn(const char *s, size_t len) {
  return s ? (jobq_val){.type = 't', .p = s, .len = len}
           : (jobq_val){.type = 'n'};
}
/* Bytes (never NULL: no bytes is an empty value). */
static inline jobq_val jobq__v_bytes(const void *p, size_t len) {
  return (jobq_val){.type = 'b', .p = p ? p : "", .len = len};
}
static inline jobq_val jobq__v_null(void) { return (jobq_val){.type = 'n'}; }
/* A column of n values of a set statement (jobq__sql_set), each of kind
 * 'i', 't', 'b' or 'r' (where a row is, as a statement read it), or NULL
 * ('n').  The values stay the caller's until the statement has run. */
static inline jobq_val jobq__v_col(char kind, const jobq_val *v, size_t n) {
  return (jobq_val){.type = 'c', .i = kind, .p = v, .len = n};
}

#define V_INT(x) jobq__v_int(x)
#define V_TEXT(s) jobq__v_text(s)
#define V_TEXTN(s, n) jobq__v_textn((s), (n))
#define V_BYTES(p, n) jobq__v_bytes((p), (n))
#define V_NULL jobq__v_null()
#define V_COL(kind, v, n) jobq__v_col((kind), (v), (n))

/* The arguments of a statement as (array, count): SQL_ARGS(V_INT(1),
 * V_TEXT(q)).  The leading element keeps the array non-empty. */
#define SQL_ARGS(...)                                                   \
  ((const jobq_val[]){{0}, __VA_ARGS__}) + 1,                           \
      sizeof((const jobq_val[]){{0}, __VA_ARGS__}) / sizeof(jobq_val) - 1

/* ---------------------------------------------------------------- running */

/* Runs statement id and drops its rows. */
int jobq__sql_run(jobq *db, int id, const jobq_val *args, size_t n);
/* The same, but the library never asks what it did: a store may send
 * it with the next statement and report its failure then (jobq_how). */
int jobq__sql_defer(jobq *db, int id, const jobq_val *args, size_t n);
/* Runs it; *changed (may be NULL) gets how many rows it changed. */
int jobq__sql_change(jobq *db, int id, int64_t *changed, const jobq_val *args,
                     size_t n);
/* Runs it for its first row: 1 with *rows on that row (give it back with
 * jobq__rows_done), 0 when there is none (nothing to give back), < 0 on
 * error. */
int jobq__sql_row(jobq *db, int id, jobq_rows **rows, const jobq_val *args,
                  size_t n);
/* The first column of the first row as an integer; dflt when there is no
 * row or the value is NULL. */
int jobq__sql_int(jobq *db, int id, int64_t dflt, int64_t *out,
                  const jobq_val *args, size_t n);
/* Whether the statement returns a row: *yes gets 1 or 0. */
int jobq__sql_exists(jobq *db, int id, int *yes, const jobq_val *args,
                     size_t n);
/* The first column of every row as integers: *ids (free with free()) and
 * *nids; at most max of them. */
int jobq__sql_ids(jobq *db, int id, size_t max, int64_t **ids, size_t *nids,
                  const jobq_val *args, size_t n);
/* The first column of every row as heap strings (a NULL value stays
 * NULL): *out and *nout, given back with jobq__texts_free().  On error
 * nothing is left to give back. */
int jobq__sql_texts(jobq *db, int id, char ***out, size_t *nout, const jobq_val *args,
                    size_t n);
void jobq__texts_free(char **v, size_t n);
/* Runs it for all its rows: step with jobq__rows_next, then give back. */
int jobq__sql_query(jobq *db, int id, jobq_rows **rows, const jobq_val *args,
                    size_t n);
int jobq__rows_next(jobq *db, jobq_rows *r);
void jobq__rows_done(jobq *db, jobq_rows *r);
/* Runs INSERT_JOB-like statement id: *new_id gets the new row's id and
 * *inserted 1, or *inserted 0 when a unique key was already taken. */
int jobq__sql_insert(jobq *db, int id, int64_t *new_id, int *inserted,
                     const jobq_val *args, size_t n);

/*
 * Set statements: statement id, whose arguments args[0..n) hold columns
 * (V_COL) of the same number of rows, m, beside single values, runs over
 * all of them.  A dialect that takes a column whole (PostgreSQL's arrays,
 * SQLite's jobq_rows() of lib/store/sq_rows.c) runs it once.  One whose
 * text spells its rows out ({each:TEMPLATE} in lib/sql.c: MariaDB) runs it
 * a chunk of up to 64 rows at a time, in one statement of 64, 32 ... or 1
 * rows, the chunk's last row repeated to fill it (a set statement is the
 * same with a row twice); an INSERT (exact), in statements of exactly 64,
 * 32 ... or 1 rows.  At most most rows a
 * statement (0: no limit), and no more bytes of text and bytes than
 * db->stmt_bytes (0: no limit) but for a
 * lone row.  how (may be NULL) goes with each statement (store.h).  each
 * (may be NULL) gets each statement's rows with the first of its rows
 * and their number; *changed (may be NULL) the rows changed in all.
 */
typedef int (*jobq_set_fn)(jobq *db, jobq_rows *r, size_t first, size_t n, void *ctx);
int jobq__sql_set(jobq *db, int id, const jobq_val *args, size_t n, size_t most,
                  const jobq_how *how, jobq_set_fn each, void *ctx, int64_t *changed);

/* Columns of the current row. */
int64_t jobq__col_int(jobq *db, jobq_rows *r, int col);
int jobq__col_null(jobq *db, jobq_rows *r, int col);
/* A heap copy of a text column (NULL for SQL NULL); *failed on ENOMEM. */
char *jobq__col_text(jobq *db, jobq_rows *r, int col, int *failed);
/* A heap copy of a bytes column with a NUL after it (NULL for SQL NULL);
 * *len gets its length. */
void *jobq__col_bytes(jobq *db, jobq_rows *r, int col, size_t *len,
                      int *failed);
/* Whether a text column equals s (an SQL NULL equals nothing). */
int jobq__col_is(jobq *db, jobq_rows *r, int col, const char *s);

#endif
