/*
 * sqlite.c - the embedded store: one SQLite file shared by many processes
 * on one machine.
 *
 * The file runs in WAL mode with synchronous=FULL, so an acknowledged put
 * or ack survives a power cut.  Every write transaction is BEGIN IMMEDIATE:
 * one writer holds the whole file, so transactions never interleave, never
 * deadlock, and need none of the named locks of lib/order.c.  A locked file
 * is waited for with a jittered busy handler up to busy_timeout.  "The
 * database clock" is this machine's clock, the only one every process on
 * the file shares: SQL reads it through jobq_now(), a function registered
 * on each connection.  Times are stored as Unix milliseconds.
 *
 * Statements are prepared once per connection and kept; the cursor the
 * executor hands out is the statement itself.  All values are bound; the
 * SQL text never changes with input.  A set statement's columns are bound
 * whole, each as a pointer that jobq_rows() reads (sq_rows.c), so that
 * one statement takes any number of rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "store/sq.h"

/* ---------------------------------------------------------------- schema */

/* The schema's steps (lib/migrate.c), a version a step, run while the
 * migration holds the file: a failed one leaves nothing.  CHECKs are
 * written with OR, not IN: SQLite builds a temporary table for an IN list
 * on every statement that checks it. */

/* version 1 */
static const jobq_step v1_steps[] = {{"CREATE TABLE jobq_queues ("
    "  name TEXT PRIMARY KEY,"
    "  paused INTEGER NOT NULL DEFAULT 0,"
    "  key_policy TEXT NOT NULL DEFAULT 'block' CHECK (key_policy = 'block' OR key_policy = 'skip'),"
    "  created_at INTEGER NOT NULL"
    ");"
    "CREATE TABLE jobq_counts ("
    "  queue TEXT NOT NULL,"
    "  shard INTEGER NOT NULL,"
    "  n_done INTEGER NOT NULL DEFAULT 0,"
    "  n_dead INTEGER NOT NULL DEFAULT 0,"
    "  n_cancelled INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (queue, shard)"
    ");"
    "CREATE TABLE jobq_sessions ("
    "  id TEXT PRIMARY KEY,"
    "  epoch INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  host TEXT NOT NULL,"
    "  pid INTEGER NOT NULL,"
    "  started_at INTEGER NOT NULL,"
    "  heartbeat_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  lease_ms INTEGER NOT NULL,"
    "  in_flight INTEGER NOT NULL DEFAULT 0,"
    "  done INTEGER NOT NULL DEFAULT 0,"
    "  failed INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX jobq_sessions_expires ON jobq_sessions(expires_at);"
    "CREATE TABLE jobq_jobs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  queue TEXT NOT NULL,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  run_at INTEGER NOT NULL,"
    "  state TEXT NOT NULL CHECK (state = 'ready' OR state = 'running' OR state = 'waiting'),"
    "  order_key TEXT,"
    "  barrier INTEGER NOT NULL DEFAULT 0,"
    "  unique_key TEXT,"
    "  payload BLOB NOT NULL,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  max_attempts INTEGER NOT NULL,"
    "  timeout_ms INTEGER NOT NULL DEFAULT 0,"
    "  backoff_ms INTEGER NOT NULL,"
    "  session TEXT,"
    "  claim TEXT,"
    "  claimed_at INTEGER,"
    "  deadline_at INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  last_error TEXT,"
    "  cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  prev_lost INTEGER NOT NULL DEFAULT 0,"
    "  started INTEGER NOT NULL DEFAULT 1"
    ");"
    /* The claim index: exactly the claim query's WHERE and ORDER BY. */
    "CREATE INDEX jobq_jobs_claim ON jobq_jobs(queue, priority DESC, run_at, id)"
    "  WHERE state = 'ready';"
    "CREATE INDEX jobq_jobs_session ON jobq_jobs(session) WHERE session IS NOT NULL;"
    "CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, order_key, state, id)"
    "  WHERE order_key IS NOT NULL;"
    "CREATE INDEX jobq_jobs_barrier ON jobq_jobs(queue, id) WHERE barrier = 1;"
    "CREATE INDEX jobq_jobs_queue ON jobq_jobs(queue, id);"
    "CREATE UNIQUE INDEX jobq_jobs_unique ON jobq_jobs(queue, unique_key)"
    "  WHERE unique_key IS NOT NULL;"
    "CREATE TABLE jobq_done ("
    "  id INTEGER PRIMARY KEY,"
    "  queue TEXT NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  run_at INTEGER NOT NULL,"
    "  outcome TEXT NOT NULL CHECK (outcome = 'done' OR outcome = 'dead' OR outcome = 'cancelled'),"
    "  order_key TEXT,"
    "  barrier INTEGER NOT NULL,"
    "  unique_key TEXT,"
    "  payload BLOB NOT NULL,"
    "  result BLOB,"
    "  attempts INTEGER NOT NULL,"
    "  max_attempts INTEGER NOT NULL,"
    "  timeout_ms INTEGER NOT NULL,"
    "  backoff_ms INTEGER NOT NULL,"
    "  session TEXT,"
    "  claim TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  claimed_at INTEGER,"
    "  finished_at INTEGER NOT NULL,"
    "  last_error TEXT,"
    "  prev_lost INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX jobq_done_finished ON jobq_done(finished_at);"
    "CREATE INDEX jobq_done_outcome ON jobq_done(outcome, queue, id)"
    "  WHERE outcome <> 'done';"
    /* Ordering keys held by a dead head under the 'block' policy. */
    "CREATE TABLE jobq_blocked ("
    "  queue TEXT NOT NULL,"
    "  order_key TEXT NOT NULL,"
    "  job_id INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, order_key)"
    ");"
    "CREATE INDEX jobq_blocked_job ON jobq_blocked(job_id);", NULL}, {NULL, NULL}};

/* version 2: the sessions' figures per minute (lib/tally.c) and the
     * attempts that ended without finishing their job. */
static const jobq_step v2_steps[] = {{"CREATE TABLE jobq_tally ("
    "  at_minute INTEGER NOT NULL,"
    "  session TEXT NOT NULL,"
    "  queue TEXT NOT NULL,"
    "  claimed INTEGER NOT NULL DEFAULT 0,"
    "  empty_claims INTEGER NOT NULL DEFAULT 0,"
    "  done INTEGER NOT NULL DEFAULT 0,"
    "  failed INTEGER NOT NULL DEFAULT 0,"
    "  retried INTEGER NOT NULL DEFAULT 0,"
    "  dead INTEGER NOT NULL DEFAULT 0,"
    "  cancelled INTEGER NOT NULL DEFAULT 0,"
    "  wait_ms INTEGER NOT NULL DEFAULT 0,"
    "  w0 INTEGER NOT NULL DEFAULT 0,"
    "  w1 INTEGER NOT NULL DEFAULT 0,"
    "  w2 INTEGER NOT NULL DEFAULT 0,"
    "  w3 INTEGER NOT NULL DEFAULT 0,"
    "  w4 INTEGER NOT NULL DEFAULT 0,"
    "  w5 INTEGER NOT NULL DEFAULT 0,"
    "  w6 INTEGER NOT NULL DEFAULT 0,"
    "  w7 INTEGER NOT NULL DEFAULT 0,"
    "  w8 INTEGER NOT NULL DEFAULT 0,"
    "  w9 INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (at_minute, session, queue)"
    ");"
    "CREATE TABLE jobq_attempts ("
    "  id INTEGER PRIMARY KEY,"
    "  job_id INTEGER NOT NULL,"
    "  attempt INTEGER NOT NULL,"
    "  outcome TEXT NOT NULL,"
    "  error TEXT,"
    "  session TEXT,"
    "  host TEXT,"
    "  claimed_at INTEGER,"
    "  ended_at INTEGER NOT NULL"
    ");"
    "CREATE INDEX jobq_attempts_job ON jobq_attempts(job_id);"
    "CREATE INDEX jobq_attempts_ended ON jobq_attempts(ended_at);", NULL}, {NULL, NULL}};

/* version 3: nothing.  Its checks are for the roles of the servers,
     * and a file has none: whoever may write it may do anything. */
static const jobq_step v3_steps[] = {{"", NULL}, {NULL, NULL}};

/* version 4: the stall guard's look (lib/session.c) and the horizon
     * of pruned jobs (lib/mark.c). */
static const jobq_step v4_steps[] = {{"ALTER TABLE jobq_meta ADD COLUMN guard_at INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobq_meta ADD COLUMN pruned_before INTEGER NOT NULL DEFAULT 0;", NULL}, {NULL, NULL}};

/* version 5: the schedules of periodic jobs (lib/cron.c). */
static const jobq_step v5_steps[] = {{"CREATE TABLE jobq_cron ("
    "  name TEXT PRIMARY KEY,"
    "  queue TEXT NOT NULL,"
    "  spec TEXT NOT NULL,"
    "  tz TEXT NOT NULL,"
    "  payload BLOB NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  order_key TEXT,"
    "  barrier INTEGER NOT NULL,"
    "  unique_key TEXT,"
    "  max_attempts INTEGER NOT NULL,"
    "  timeout_ms INTEGER NOT NULL,"
    "  backoff_ms INTEGER NOT NULL,"
    "  skip_missed INTEGER NOT NULL,"
    "  paused INTEGER NOT NULL,"
    "  next_at INTEGER NOT NULL,"
    "  last_at INTEGER,"
    "  last_error TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL"
    ");"
    "CREATE INDEX jobq_cron_next ON jobq_cron(next_at);", NULL}, {NULL, NULL}};

/* version 6: the queues' limits and the claims of the last rate period
 * (lib/limit.c). */
static const jobq_step v6_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN max_running INTEGER;"
    "ALTER TABLE jobq_queues ADD COLUMN max_per_key INTEGER;"
    "ALTER TABLE jobq_queues ADD COLUMN rate_n INTEGER;"
    "ALTER TABLE jobq_queues ADD COLUMN rate_ms INTEGER;"
    "CREATE TABLE jobq_starts ("
    "  queue TEXT NOT NULL,"
    "  at INTEGER NOT NULL,"
    "  n INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, at)"
    ");", NULL}, {NULL, NULL}};

/* version 7: the finished-job counters by session (lib/counts.c), a
     * key SQLite cannot change in place: the table made again. */
static const jobq_step v7_steps[] = {{"CREATE TABLE jobq_counts_7 ("
    "  session TEXT NOT NULL DEFAULT '',"
    "  queue TEXT NOT NULL,"
    "  shard INTEGER NOT NULL,"
    "  n_done INTEGER NOT NULL DEFAULT 0,"
    "  n_dead INTEGER NOT NULL DEFAULT 0,"
    "  n_cancelled INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (session, queue, shard)"
    ");"
    "INSERT INTO jobq_counts_7(queue, shard, n_done, n_dead, n_cancelled)"
    "  SELECT queue, shard, n_done, n_dead, n_cancelled FROM jobq_counts;"
    "DROP TABLE jobq_counts;"
    "ALTER TABLE jobq_counts_7 RENAME TO jobq_counts;", NULL}, {NULL, NULL}};

/* version 8: dependencies (lib/after.c): the state 'pending' of a job
 * put after others, with the number of its parents not yet done and
 * whether others were put after it, and the edges between them.  A CHECK
 * SQLite cannot change in place: the table made again, its sequence
 * kept (ids are never used twice: the archive has them). */
static const jobq_step v8_steps[] = {{"CREATE TABLE jobq_jobs_8 ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  queue TEXT NOT NULL,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  run_at INTEGER NOT NULL,"
    "  state TEXT NOT NULL CHECK (state = 'ready' OR state = 'running' OR state = 'waiting' OR state = 'pending'),"
    "  order_key TEXT,"
    "  barrier INTEGER NOT NULL DEFAULT 0,"
    "  unique_key TEXT,"
    "  payload BLOB NOT NULL,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  max_attempts INTEGER NOT NULL,"
    "  timeout_ms INTEGER NOT NULL DEFAULT 0,"
    "  backoff_ms INTEGER NOT NULL,"
    "  session TEXT,"
    "  claim TEXT,"
    "  claimed_at INTEGER,"
    "  deadline_at INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  last_error TEXT,"
    "  cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  prev_lost INTEGER NOT NULL DEFAULT 0,"
    "  started INTEGER NOT NULL DEFAULT 1,"
    "  parents_left INTEGER NOT NULL DEFAULT 0,"
    "  children INTEGER NOT NULL DEFAULT 0"
    ");"
    "INSERT INTO jobq_jobs_8(id, queue, priority, run_at, state, order_key, barrier, unique_key,"
    "  payload, attempts, max_attempts, timeout_ms, backoff_ms, session, claim, claimed_at,"
    "  deadline_at, created_at, last_error, cancel_requested, prev_lost, started)"
    "  SELECT id, queue, priority, run_at, state, order_key, barrier, unique_key, payload,"
    "  attempts, max_attempts, timeout_ms, backoff_ms, session, claim, claimed_at,"
    "  deadline_at, created_at, last_error, cancel_requested, prev_lost, started FROM jobq_jobs;"
    "DELETE FROM sqlite_sequence WHERE name = 'jobq_jobs_8';"
    "INSERT INTO sqlite_sequence(name, seq) SELECT 'jobq_jobs_8', seq FROM sqlite_sequence"
    "  WHERE name = 'jobq_jobs';"
    "DROP TABLE jobq_jobs;"
    "ALTER TABLE jobq_jobs_8 RENAME TO jobq_jobs;"
    /* The claim index: exactly the claim query's WHERE and ORDER BY. */
    "CREATE INDEX jobq_jobs_claim ON jobq_jobs(queue, priority DESC, run_at, id)"
    "  WHERE state = 'ready';"
    "CREATE INDEX jobq_jobs_session ON jobq_jobs(session) WHERE session IS NOT NULL;"
    "CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, order_key, state, id)"
    "  WHERE order_key IS NOT NULL;"
    "CREATE INDEX jobq_jobs_barrier ON jobq_jobs(queue, id) WHERE barrier = 1;"
    "CREATE INDEX jobq_jobs_queue ON jobq_jobs(queue, id);"
    "CREATE UNIQUE INDEX jobq_jobs_unique ON jobq_jobs(queue, unique_key)"
    "  WHERE unique_key IS NOT NULL;"
    "CREATE TABLE jobq_after ("
    "  parent INTEGER NOT NULL,"
    "  child INTEGER NOT NULL,"
    "  any_outcome INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (parent, child)"
    ") WITHOUT ROWID;"
    "CREATE INDEX jobq_after_child ON jobq_after(child, parent);",
    /* Unless it was made already (a database set back to an older
     * version by hand). */
    "SELECT count(*) FROM pragma_table_info('jobq_jobs') WHERE name = 'parents_left'"},
    {NULL, NULL}};

/* version 9: parts (lib/part.c): a queue's count of parts, a job's part
 * (NULL while its queue has one), the parts' owners and the sessions
 * that claim from each partitioned queue.  The claim index of parts
 * holds only the jobs of partitioned queues, so that the others' claims
 * and puts do not pay for it. */
static const jobq_step v9_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN parts INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobq_jobs ADD COLUMN part INTEGER;"
    "CREATE INDEX jobq_jobs_part ON jobq_jobs(queue, part, priority DESC, run_at, id)"
    "  WHERE state = 'ready' AND part IS NOT NULL;"
    "CREATE TABLE jobq_parts ("
    "  queue TEXT NOT NULL,"
    "  part INTEGER NOT NULL,"
    "  session TEXT,"
    "  since INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, part)"
    ");"
    "CREATE INDEX jobq_parts_session ON jobq_parts(session) WHERE session IS NOT NULL;"
    "CREATE TABLE jobq_claimers ("
    "  queue TEXT NOT NULL,"
    "  session TEXT NOT NULL,"
    "  since INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, session)"
    ");"
    "CREATE INDEX jobq_claimers_session ON jobq_claimers(session);",
    "SELECT count(*) FROM pragma_table_info('jobq_jobs') WHERE name = 'part'"},
    {NULL, NULL}};

/* version 10: the rate limit per ordering key and the claims of each
 * key in the last period (lib/limit.c). */
static const jobq_step v10_steps[] = {{"ALTER TABLE jobq_queues ADD COLUMN key_rate_n INTEGER;"
    "ALTER TABLE jobq_queues ADD COLUMN key_rate_ms INTEGER;"
    "CREATE TABLE jobq_key_starts ("
    "  queue TEXT NOT NULL,"
    "  order_key TEXT NOT NULL,"
    "  at INTEGER NOT NULL,"
    "  n INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, order_key, at)"
    ") WITHOUT ROWID;"
    "CREATE INDEX jobq_key_starts_at ON jobq_key_starts(queue, at);",
    "SELECT count(*) FROM pragma_table_info('jobq_queues') WHERE name = 'key_rate_n'"},
    {NULL, NULL}};

static const jobq_step meta_steps[] = {{"CREATE TABLE jobq_meta ("
                                        "  id INTEGER PRIMARY KEY CHECK (id = 1),"
                                        "  version INTEGER NOT NULL,"
                                        "  queue_id TEXT NOT NULL,"
                                        "  epoch INTEGER NOT NULL,"
                                        "  created_at INTEGER NOT NULL)",
                                        NULL},
                                       {NULL, NULL}};
static const jobq_step *const versions[] = {meta_steps, v1_steps, v2_steps, v3_steps, v4_steps,
                                          v5_steps, v6_steps, v7_steps, v8_steps, v9_steps,
                                          v10_steps};
_Static_assert(sizeof versions / sizeof versions[0] == JOBQ_SCHEMA_VERSION + 1,
               "one migration per version");

/* ---------------------------------------------------------------- statements */

/* This store's own statements, numbered after lib/sql.h's. */
enum {
  SQ_DATA_VERSION = JOBQ_STMT_COUNT,
  SQ__END
};

static const char *const own_sql[SQ__END - JOBQ_STMT_COUNT] = {
    [SQ_DATA_VERSION - JOBQ_STMT_COUNT] = "PRAGMA data_version",
};

/* What a statement does, in words, for messages. */
static const char *sq_what(int id) {
  switch (id) {
    case SQ_DATA_VERSION: return "looking for changes";
    default: return jobq__sql_what(id);
  }
}

typedef struct sq {
  sqlite3 *db;
  sqlite3_stmt *stmts[SQ__END];
  int64_t busy_timeout_ms;
  int64_t busy_start_ms;
  int backed_off;        /* the busy handler went past its quick waits
                            since the last BEGIN */
  int contended;         /* ... before the last BEGIN got the lock */
  int checkpointing;     /* wal_hook's checkpoint is waiting for locks */
  char *path;
  int64_t max_size;      /* the url's max_size in bytes, or 0 */
  int watch_fd;          /* inotify on the write-ahead log, or -1 */
  int64_t data_version;  /* PRAGMA data_version at the last changed() */
  int prepared;          /* prepare_file() ran */
} sq;

static sq *conn(jobq *db) { return db->conn; }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Records an SQLite failure as a jobq error; returns the jobq code. */
static int sq_fail(jobq *db, int rc, const char *what) {
  sq *c = conn(db);
  const char *msg = c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return jobq__fail(db, JOBQ_EBUSY,
                        "%s: the database '%s' stayed locked for the whole busy "
                        "timeout (%lldms): try again",
                        what, c->path, (long long)c->busy_timeout_ms);
    case SQLITE_NOMEM:
      return jobq__fail(db, JOBQ_ENOMEM, "%s: out of memory", what);
    case SQLITE_READONLY:
      return jobq__fail(db, JOBQ_EREADONLY,
                        "%s: '%s' is read-only to this process (%s): writing needs "
                        "write access to the file and to its folder; the commands "
                        "that only read work without",
                        what, c->path, msg);
    case SQLITE_NOTADB:
      return jobq__fail(db, JOBQ_EURL,
                        "'%s' is not an SQLite database: expected a jobq "
                        "database file or a new path",
                        c->path);
    case SQLITE_CANTOPEN: {
      /* A file or folder this process may not open is a refusal; one
       * that is not there, a path that cannot work. */
      int e = c->db ? sqlite3_system_errno(c->db) : 0;
      if (e == EACCES || e == EPERM)
        return jobq__fail(db, JOBQ_EDENIED, "cannot open '%s': %s: %s", c->path, msg,
                          strerror(e));
      return jobq__fail(db, JOBQ_EURL, "cannot open '%s': %s", c->path, msg);
    }
    case SQLITE_FULL:
      if (c->max_size > 0)
        return jobq__fail(db, JOBQ_EDB,
                          "%s: '%s' is full: it reached the url's max_size of "
                          "%lld bytes, or its disk is full; nothing of this "
                          "call was written (raise max_size or free space)",
                          what, c->path, (long long)c->max_size);
      return jobq__fail(db, JOBQ_EDB,
                        "%s: the disk holding '%s' is full; nothing of this "
                        "call was written (free space)",
                        what, c->path);
    default:
      return jobq__fail(db, JOBQ_EDB, "%s: %s", what, msg);
  }
}

static int exec(jobq *db, const char *sql, const char *what) {
  int rc = sqlite3_exec(conn(db)->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? JOBQ_OK : sq_fail(db, rc, what);
}

/* ---------------------------------------------------------------- executor */

/* The cached statement id, reset and unbound; NULL with the error set. */
static sqlite3_stmt *stmt(jobq *db, int id) {
  sq *c = conn(db);
  sqlite3_stmt *st = c->stmts[id];
  if (st != NULL) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
  }
  char *text = NULL;
  if (id < JOBQ_STMT_COUNT) {
    text = jobq__sql_text(JOBQ_DIALECT_SQLITE, id, NULL, NULL);
  } else {
    text = strdup(own_sql[id - JOBQ_STMT_COUNT]);
  }
  if (text == NULL) {
    jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    return NULL;
  }
  int rc = sqlite3_prepare_v3(c->db, text, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
  free(text);
  if (rc != SQLITE_OK) {
    sq_fail(db, rc, sq_what(id));
    return NULL;
  }
  c->stmts[id] = st;
  return st;
}

static int bind(jobq *db, sqlite3_stmt *st, const jobq_val *a, size_t n) {
  /* A set statement may leave a value of its other dialects unused. */
  size_t most = (size_t)sqlite3_bind_parameter_count(st);
  if (n > most) n = most;
  for (size_t i = 0; i < n; i++) {
    int col = (int)i + 1, rc;
    switch (a[i].type) {
      case 'i': rc = sqlite3_bind_int64(st, col, a[i].i); break;
      case 't':
        rc = sqlite3_bind_text64(st, col, a[i].p, a[i].len, SQLITE_STATIC, SQLITE_UTF8);
        break;
      case 'b': rc = sqlite3_bind_blob64(st, col, a[i].p, a[i].len, SQLITE_STATIC); break;
      case 'c': rc = jobq__sq_rows_bind(st, col, &a[i]); break;
      default: rc = sqlite3_bind_null(st, col); break;
    }
    if (rc != SQLITE_OK) return sq_fail(db, rc, "binding a value");
  }
  return JOBQ_OK;
}

static int int64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Every statement runs at once: a commit waits for the disk, a statement
 * for nothing. */
static int sq_query(jobq *db, int id, const jobq_val *args, size_t n, jobq_rows **rows,
                    const jobq_how *how) {
  sqlite3_stmt *st = stmt(db, id);
  if (st == NULL) return db->err;
  int rc = bind(db, st, args, n);
  if (rc != JOBQ_OK) return rc;
  if (rows != NULL) {
    *rows = (jobq_rows *)st;
    return JOBQ_OK;
  }
  int s;
  size_t got = 0;
  while ((s = sqlite3_step(st)) == SQLITE_ROW)
    if (how != NULL && how->ids != NULL && got < how->nids)
      how->ids[got++] = sqlite3_column_int64(st, 0);
  if (how != NULL && how->ids != NULL) qsort(how->ids, got, sizeof *how->ids, int64_cmp);
  sqlite3_reset(st);
  if (s != SQLITE_DONE) return sq_fail(db, s, sq_what(id));
  return JOBQ_OK;
}

static int sq_next(jobq *db, jobq_rows *r) {
  sqlite3_stmt *st = (sqlite3_stmt *)r;
  int s = sqlite3_step(st);
  if (s == SQLITE_ROW) return 1;
  if (s == SQLITE_DONE) return 0;
  sqlite3_reset(st);
  return sq_fail(db, s, "reading rows");
}

static void sq_done(jobq *db, jobq_rows *r) { sqlite3_reset((sqlite3_stmt *)r); }

static int sq_is_null(jobq_rows *r, int col) {
  return sqlite3_column_type((sqlite3_stmt *)r, col) == SQLITE_NULL;
}

static int64_t sq_col_int(jobq_rows *r, int col) {
  return sqlite3_column_int64((sqlite3_stmt *)r, col);
}

static const void *sq_col_bytes(jobq_rows *r, int col, size_t *len) {
  sqlite3_stmt *st = (sqlite3_stmt *)r;
  /* Text and blobs alike come with a NUL after them. */
  const unsigned char *p = sqlite3_column_text(st, col);
  *len = (size_t)sqlite3_column_bytes(st, col);
  return p ? (const void *)p : "";
}

static int64_t sq_changes(jobq *db) { return sqlite3_changes64(conn(db)->db); }

/* The rows of one INSERT take consecutive ids, as AUTOINCREMENT gives
 * each one more than the largest yet, and the file is this
 * transaction's alone: the first is the last less the others. */
static int64_t sq_insert_id(jobq *db) {
  sqlite3 *h = conn(db)->db;
  return sqlite3_last_insert_rowid(h) - sqlite3_changes64(h) + 1;
}

/* ---------------------------------------------------------------- connection */

/* jobq_now(): this machine's clock in Unix milliseconds, the database
 * clock of every process on the file. */
static void fn_now(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int64(ctx, now_ms());
}

/* How long a checkpoint after a commit waits, in all, for the write lock
 * and then for readers to leave the log: a few transactions' time. */
#define CHECKPOINT_WAIT_MS 10

/* Waits of 0.1 ms before the backoff: 2 ms in all, about the longest a
 * commit's flush takes after the disk sat idle. */
#define QUICK_TRIES 20

static int busy_handler(void *arg, int count) {
  jobq *db = arg;
  sq *c = conn(db);
  int64_t t = jobq__mono_ms();
  if (count == 0) c->busy_start_ms = t;
  if (t - c->busy_start_ms >= c->busy_timeout_ms) return 0;
  if (c->checkpointing) {
    /* A checkpoint that holds the write lock while it waits holds up
     * every writer: short waits, soon given up (see wal_hook). */
    if (t - c->busy_start_ms >= CHECKPOINT_WAIT_MS) return 0;
    struct timespec ts = {0, 100000 + (long)(jobq__rand(db) % 100000)};
    nanosleep(&ts, NULL);
    return 1;
  }
  /* 1, 2, 4 ... up to 32 ms, each with jitter in [0.5, 1.5), after
   * QUICK_TRIES waits of 0.1 ms unless the last transaction's wait went
   * past them.  A lone holder is usually a transaction flushing its
   * commit: a foreman woken by another process's put tries while it does,
   * every time, and should have the lock within 0.1 ms of that flush's
   * end however long the flush took (a millisecond and more on a disk
   * gone idle).  Under contention the waits grow at once, so that many
   * waiters do not crowd out the holder. */
  int quick = c->contended ? 0 : QUICK_TRIES;
  if (count >= quick) c->backed_off = 1;
  int64_t base_us = count < quick ? 100
                                  : 1000LL << (count - quick < 5 ? count - quick : 5);
  int64_t us = base_us / 2 + (int64_t)(jobq__rand(db) % (uint64_t)base_us);
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
  return 1;
}

/* Pages of write-ahead log after which a commit checkpoints: SQLite's
 * own default. */
#define CHECKPOINT_PAGES 1000

/*
 * Checkpoints after a commit, in place of SQLite's automatic checkpoint.
 * That one copies the log into the file without waiting for anyone
 * (PASSIVE), and the log starts again from its beginning only when the
 * next writer began reading after the copy had caught up.  With many
 * processes taking turns to write, another writer has nearly always
 * begun in between: the log then grew without end (16 to 21 MiB in a
 * drain of 40000 jobs by 64 claimers), every commit past the mark copied
 * again and flushed the file, and every flush of the growing log had to
 * write the file's new size too.  So once the PASSIVE copy has caught
 * up (no reader holds an older snapshot), a RESTART checkpoint takes the
 * write lock, copies what was committed meanwhile and waits for the
 * readers to leave the log, and the next writer starts it again from the
 * top.  Its waits are short (CHECKPOINT_WAIT_MS, in busy_handler), as it
 * holds every writer up while it waits for readers.  The commit has
 * happened whatever the checkpoint does, so nothing is reported: a
 * checkpoint that did not finish is tried again at the next commit past
 * the mark.
 */
static int wal_hook(void *arg, sqlite3 *h, const char *schema, int pages) {
  if (pages < CHECKPOINT_PAGES) return SQLITE_OK;
  int log = 0, copied = 0;
  int rc = sqlite3_wal_checkpoint_v2(h, schema, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
  if (rc == SQLITE_OK && log == copied) {
    sq *c = conn(arg);
    c->checkpointing = 1;
    sqlite3_wal_checkpoint_v2(h, schema, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
    c->checkpointing = 0;
  }
  return SQLITE_OK;
}

/* Filesystems on which SQLite's locks are not reliable. */
static const char *network_fs(const char *dir) {
  struct statfs fs;
  if (statfs(dir, &fs) != 0) return NULL;
  switch ((unsigned long)fs.f_type) {
    case 0x6969UL: return "nfs";
    case 0x517BUL: return "smb";
    case 0xFF534D42UL: return "cifs";
    case 0xFE534D42UL: return "smb2";
    case 0x01021997UL: return "9p";
    case 0x65735546UL: return "fuse";
    case 0x564cUL: return "ncp";
    default: return NULL;
  }
}

static int check_path(jobq *db, const char *path) {
  if (strcmp(path, ":memory:") == 0 || strncmp(path, "file::memory:", 13) == 0 ||
      strstr(path, "mode=memory") != NULL)
    return jobq__fail(db, JOBQ_EURL,
                      "'%s' cannot be shared between processes: expected a file "
                      "path like sqlite:jobq.db",
                      path);
  struct stat stt;
  if (stat(path, &stt) == 0) {
    if (S_ISDIR(stt.st_mode))
      return jobq__fail(db, JOBQ_EURL,
                        "'%s' is a directory: expected a database file path",
                        path);
    if (!S_ISREG(stt.st_mode))
      return jobq__fail(db, JOBQ_EURL,
                        "'%s' is not a regular file: expected a database file path",
                        path);
  }
  char *copy = strdup(path);
  if (copy == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  const char *dir = dirname(copy);
  int rc = JOBQ_OK;
  if (stat(dir, &stt) != 0 && (errno == EACCES || errno == EPERM)) {
    rc = jobq__fail(db, JOBQ_EDENIED, "cannot reach the folder '%s' of database '%s': %s",
                    dir, path, strerror(errno));
  } else if (stat(dir, &stt) != 0 || !S_ISDIR(stt.st_mode)) {
    rc = jobq__fail(db, JOBQ_EURL,
                    "folder '%s' of database '%s' does not exist: create it "
                    "first or choose another path",
                    dir, path);
  } else {
    const char *fs = network_fs(dir);
    if (fs != NULL)
      rc = jobq__fail(db, JOBQ_EURL,
                      "'%s' is on a network filesystem (%s), where SQLite's locks "
                      "are not reliable: expected a local disk (or use PostgreSQL "
                      "for many machines)",
                      path, fs);
  }
  free(copy);
  return rc;
}


/* The smallest max_size: a schema and a few jobs; and the largest, about
 * what SQLite's page count allows with its default 4 KiB pages. */
#define MIN_SIZE (64 * 1024)
#define MAX_SIZE (4096LL << 30)

/* The options of its URLs (lib/url.c checks them). */
static const jobq_option options[] = {
    {"busy_timeout", 'd', 0, 86400000, "a duration from 0 to 1d, like 10s"},
    {"max_size", 'z', MIN_SIZE, MAX_SIZE, "a size from 64KiB to 4096GiB, like 1GiB"},
    {NULL, 0, 0, 0, NULL},
};

/* Caps the file at bytes (whole pages; never below what it holds now). */
static int limit_size(jobq *db, int64_t bytes) {
  sqlite3_stmt *st;
  int src = sqlite3_prepare_v2(conn(db)->db, "PRAGMA page_size", -1, &st, NULL);
  if (src != SQLITE_OK) return sq_fail(db, src, "reading the page size");
  src = sqlite3_step(st);
  int64_t page = src == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (page <= 0) return sq_fail(db, src == SQLITE_ROW ? SQLITE_ERROR : src,
                                "reading the page size");
  /* A pragma takes no parameters; the count is a number formatted here. */
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)(bytes / page));
  return exec(db, sql, "setting max_size");
}

/* The path as an SQLite URI that reads the file as it is, without locks
 * or shared memory (file:PATH?immutable=1), its '%', '?' and '#'
 * escaped; a new string, or NULL when out of memory. */
static char *immutable_uri(const char *path) {
  size_t n = strlen(path), o = 5;
  char *uri = malloc(3 * n + 32);
  if (uri == NULL) return NULL;
  memcpy(uri, "file:", 5);
  for (size_t i = 0; i < n; i++) {
    if (path[i] == '%' || path[i] == '?' || path[i] == '#')
      o += (size_t)snprintf(uri + o, 4, "%%%02X", (unsigned char)path[i]);
    else
      uri[o++] = path[i];
  }
  memcpy(uri + o, "?immutable=1", 13);
  return uri;
}

/* How many tables, indexes, views and triggers the file holds when
 * jobq's are not there (another application's); reading it makes sure
 * the file is a database before anything is written. */
static int count_objects(jobq *db, int64_t *n) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(conn(db)->db,
                              "SELECT count(*), coalesce(sum(name = 'jobq_meta'), 0) FROM "
                              "sqlite_schema",
                              -1, &st, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    /* jobq's file, or a new one: none of another application's. */
    *n = rc == SQLITE_ROW && sqlite3_column_int64(st, 1) == 0 ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
  }
  return rc == SQLITE_ROW ? JOBQ_OK : sq_fail(db, rc, "reading the database");
}

/* Opens the file (a handle that only reads: without creating it or
 * writing to it; as_is: without locks, as immutable_uri() says) and
 * counts what it holds into *objects. */
static int connect_file(jobq *db, int as_is, int64_t *objects) {
  sq *c = conn(db);
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
              (db->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  char *uri = NULL;
  if (as_is) {
    if ((uri = immutable_uri(c->path)) == NULL)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    flags |= SQLITE_OPEN_URI;
  }
  /* A new file is private to its owner: jobs may carry secrets. */
  mode_t old = umask(077);
  int src = sqlite3_open_v2(uri ? uri : c->path, &c->db, flags, NULL);
  umask(old);
  free(uri);
  if (src != SQLITE_OK) return sq_fail(db, src, "opening the database");
  sqlite3_busy_handler(c->db, busy_handler, db);
  sqlite3_wal_hook(c->db, wal_hook, db);
  sqlite3_extended_result_codes(c->db, 1);
  src = sqlite3_create_function(c->db, "jobq_now", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                NULL, fn_now, NULL, NULL);
  if (src != SQLITE_OK) return sq_fail(db, src, "registering jobq_now");
  src = jobq__sq_rows_register(c->db);
  if (src != SQLITE_OK) return sq_fail(db, src, "registering jobq_rows");
  return count_objects(db, objects);
}

/* What a handle that writes sets on the file (WAL, which stays) and on
 * its connection, once, before jobq's tables are made or used. */
static int prepare_file(jobq *db) {
  sq *c = conn(db);
  if (c->prepared) return JOBQ_OK;
  sqlite3_stmt *st;
  int src = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
  if (src != SQLITE_OK) return sq_fail(db, src, "setting WAL mode");
  src = sqlite3_step(st);
  int wal = src == SQLITE_ROW &&
            strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
  sqlite3_finalize(st);
  if (src != SQLITE_ROW) return sq_fail(db, src, "setting WAL mode");
  if (!wal)
    return jobq__fail(db, JOBQ_EDB,
                      "'%s' could not be switched to WAL mode: expected a "
                      "writable file on a local disk",
                      c->path);
  /* No memory map: pages read through one count in every process's
   * resident memory, and the backlog and drain benchmarks ran no faster
   * with one.  A 16 MiB page cache holds the hot
   * pages of a million-job file. */
  int rc = exec(db,
                "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF; "
                "PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY;",
                "setting durability");
  if (rc == JOBQ_OK && c->max_size > 0) rc = limit_size(db, c->max_size);
  if (rc == JOBQ_OK) c->prepared = 1;
  return rc;
}

static int sq_open(jobq *db, const jobq_url *u) {
  /* A cap on the file, as a full disk would set one; and how long a
   * locked file is waited for. */
  int64_t max_size = jobq__url_number(u, options, "max_size", 0);
  int64_t busy = jobq__url_number(u, options, "busy_timeout", 10000);
  /* RETURNING and the ->> operator. */
  if (sqlite3_libversion_number() < 3038000)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "this program runs SQLite %s: expected 3.38 or newer",
                      sqlite3_libversion());
  int rc = check_path(db, u->path);
  if (rc != JOBQ_OK) return rc;
  struct stat st;
  if (db->readonly && stat(u->path, &st) != 0)
    return jobq__fail(db, JOBQ_ESCHEMA,
                      "there is no jobq database at '%s': expected the path of one "
                      "(a first put, or 'jobq init', makes it)",
                      u->path);
  sq *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->busy_timeout_ms = busy;
  db->id_step = 1;
  c->max_size = max_size;
  c->watch_fd = -1;
  c->path = strdup(u->path);
  if (c->path == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int64_t objects = 0;
  rc = connect_file(db, 0, &objects);
  /* A file in WAL mode that we may not write, in a folder that we may
   * not write either, with no process on it (none left its shared
   * memory file behind): SQLite cannot make the shared memory a reader
   * needs, so the file is read as it is, without locks. */
  if (rc == JOBQ_EREADONLY && db->readonly) {
    sqlite3_close_v2(c->db);
    c->db = NULL;
    rc = connect_file(db, 1, &objects);
  }
  if (rc != JOBQ_OK) return rc;
  /* A handle that only reads writes nothing; a file of another
   * application is left as it is, journal mode included, until
   * jobq_init() is asked to add jobq's tables to it (sq_schema_begin). */
  return db->readonly || objects > 0 ? JOBQ_OK : prepare_file(db);
}

static void sq_close(jobq *db) {
  sq *c = conn(db);
  if (c == NULL) return;
  for (int i = 0; i < SQ__END; i++) sqlite3_finalize(c->stmts[i]);
  if (c->db != NULL) {
    if (!sqlite3_get_autocommit(c->db))
      sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(c->db);
  }
  if (c->watch_fd >= 0) close(c->watch_fd);
  free(c->path);
  free(c);
  db->conn = NULL;
}

static void *sq_native(jobq *db) { return conn(db)->db; }

/* ---------------------------------------------------------------- schema steps */

/* A migration holds the whole file (BEGIN IMMEDIATE): another process
 * initialising meanwhile finds it done.  A file of another application
 * gets WAL and the rest now, when jobq is asked to add its tables. */
static int sq_schema_begin(jobq *db) {
  int rc = prepare_file(db);
  return rc == JOBQ_OK ? exec(db, "BEGIN IMMEDIATE", "initialising the schema") : rc;
}

static int sq_schema_end(jobq *db, int ok) {
  if (ok) return exec(db, "COMMIT", "initialising the schema");
  sqlite3_exec(conn(db)->db, "ROLLBACK", NULL, NULL, NULL);
  return JOBQ_OK;
}

static int sq_schema_run(jobq *db, const char *sql, int64_t *first) {
  if (first == NULL) return exec(db, sql, "migrating the schema");
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(conn(db)->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(db, rc, "migrating the schema");
  rc = sqlite3_step(st);
  *first = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? JOBQ_OK : sq_fail(db, rc, "migrating the schema");
}

/* ---------------------------------------------------------------- doctor */

/* The first column of a query of the doctor's as an integer. */
static int64_t pragma_int(jobq *db, const char *sql) {
  sqlite3_stmt *st;
  int64_t v = -1;
  if (sqlite3_prepare_v2(conn(db)->db, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  return v;
}

static int sq_doctor(jobq *db, jobq__checks *c) {
  sq *k = conn(db);
  jobq__check_add(c, JOBQ_CHECK_OK, "server", NULL, "SQLite %s, file '%s'",
                  sqlite3_libversion(), k->path);
  sqlite3_stmt *st;
  char mode[16] = "?";
  if (sqlite3_prepare_v2(k->db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  int64_t sync = pragma_int(db, "PRAGMA synchronous");
  if (db->readonly) {
    /* This connection writes nothing: what counts is the file's own mode
     * (bytes 18 and 19 of its header are 2 in WAL mode), which a file
     * read as it is does not report; jobq's writers set FULL. */
    unsigned char head[20] = {0};
    int fd = open(k->path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head)
        snprintf(mode, sizeof mode, "%s", head[18] == 2 && head[19] == 2 ? "wal" : "delete");
      close(fd);
    }
    sync = 2;
  }
  if (strcmp(mode, "wal") != 0 || sync != 2)
    jobq__check_add(c, JOBQ_CHECK_FAIL, "durability",
                    "jobq sets WAL and synchronous=FULL on its own connections; "
                    "something changed them on this one",
                    "journal mode %s, synchronous %lld", mode, (long long)sync);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "durability", NULL,
                    "WAL journal, synchronous=FULL: every commit waits for the disk");
  int64_t pages = pragma_int(db, "PRAGMA page_count");
  int64_t size = pragma_int(db, "PRAGMA page_size");
  int64_t free_pages = pragma_int(db, "PRAGMA freelist_count");
  size_t len = strlen(k->path) + 5;
  char *wal = malloc(len);
  struct stat stt;
  long long wal_bytes = 0;
  if (wal != NULL) {
    snprintf(wal, len, "%s-wal", k->path);
    if (stat(wal, &stt) == 0) wal_bytes = (long long)stt.st_size;
    free(wal);
  }
  if (wal_bytes > (256LL << 20))
    jobq__check_add(c, JOBQ_CHECK_WARN, "checkpoint",
                    "a reader that keeps a transaction open holds the checkpoint "
                    "back: find it (lsof on the file) and keep read transactions short",
                    "the write-ahead log is %lld MiB", wal_bytes >> 20);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "checkpoint", NULL, "the write-ahead log is %lld KiB",
                    wal_bytes >> 10);
  if (pages > 0 && free_pages * 2 > pages && pages * size > (64LL << 20))
    jobq__check_add(c, JOBQ_CHECK_WARN, "bloat",
                    "the file keeps its size after pruning; run 'sqlite3 FILE VACUUM' at "
                    "a quiet time to give the space back",
                    "%lld of %lld pages are free (%lld MiB)", (long long)free_pages,
                    (long long)pages, (long long)(free_pages * size) >> 20);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "bloat", NULL, "%lld MiB, %lld%% of it free",
                    (long long)(pages * size) >> 20,
                    pages > 0 ? (long long)(free_pages * 100 / pages) : 0LL);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- transactions */

static int sq_begin(jobq *db, int depth, int lazy) {
  (void)lazy;
  if (depth == 0) {
    sq *c = conn(db);
    c->backed_off = 0;
    int rc = exec(db, "BEGIN IMMEDIATE", "starting a transaction");
    c->contended = c->backed_off;
    return rc;
  }
  return exec(db, "SAVEPOINT jobq", "starting a savepoint");
}

static int sq_commit(jobq *db, int depth) {
  if (depth == 0) return exec(db, "COMMIT", "committing");
  return exec(db, "RELEASE jobq", "releasing a savepoint");
}

static int sq_rollback(jobq *db, int depth) {
  sqlite3 *h = conn(db)->db;
  if (depth == 0) {
    if (!sqlite3_get_autocommit(h)) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return JOBQ_OK;
  }
  sqlite3_exec(h, "ROLLBACK TO jobq; RELEASE jobq", NULL, NULL, NULL);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- locks */

/* A writer holds the whole file from BEGIN IMMEDIATE to its end: no
 * other transaction reads or writes meanwhile, so named locks keep
 * nothing apart. */
static int sq_lock(jobq *db, const jobq_lock *locks, size_t n) {
  (void)db;
  (void)locks;
  (void)n;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- wake-ups */

/* PRAGMA data_version: changes when another connection commits. */
static int data_version(jobq *db, int64_t *v) {
  jobq_rows *r;
  int rc = sq_query(db, SQ_DATA_VERSION, SQL_ARGS(), &r, NULL);
  if (rc != JOBQ_OK) return rc;
  int got = sq_next(db, r);
  *v = got == 1 ? sq_col_int(r, 0) : 0;
  sq_done(db, r);
  return got < 0 ? got : JOBQ_OK;
}

/* Every commit appends to the write-ahead log, so a watch on it wakes the
 * worker at once and costs nothing while the queue is idle. */
static int sq_watch(jobq *db, int *fd) {
  sq *c = conn(db);
  if (c->watch_fd < 0) {
    size_t len = strlen(c->path) + 5;
    char *wal = malloc(len);
    if (wal == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    snprintf(wal, len, "%s-wal", c->path);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    int err = errno;
    if (in >= 0 && inotify_add_watch(in, wal, IN_MODIFY) < 0) {
      err = errno;
      close(in);
      in = -1;
    }
    int rc = in < 0 ? jobq__fail(db, JOBQ_EDB, "cannot watch '%s': %s", wal, strerror(err))
                    : JOBQ_OK;
    free(wal);
    if (rc != JOBQ_OK) return rc;
    c->watch_fd = in;
    if ((rc = data_version(db, &c->data_version)) != JOBQ_OK) return rc;
  }
  *fd = c->watch_fd;
  return JOBQ_OK;
}

/* Waits for a writer that is in the middle of its commit: the write lock
 * is free once the commit counts.  A taken lock is let go at once, having
 * written nothing.  The quick waits always (busy_handler): a commit ends
 * within its flush, and a wait that grows would delay the claim that
 * follows; nor does this wait count as contention for the next BEGIN.
 * 0, or -1 when the lock stayed taken (busy_timeout). */
static int writer_done(jobq *db) {
  sq *c = conn(db);
  int contended = c->contended;
  c->contended = 0;
  int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  c->contended = contended;
  if (rc != SQLITE_OK) return -1;
  sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
  return 0;
}

/* Any commit of another connection counts: the log does not say whose
 * queue it was for.  The log grows before the commit that grows it
 * counts (its flush, then the shared index), so a wake-up with no change
 * yet may be a commit on its way, or only one of this connection's own:
 * waiting for the write lock tells them apart, for the price of taking
 * and dropping it, where a claim would also run its statements and
 * commit. */
static int sq_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue)) {
  (void)wanted;
  sq *c = conn(db);
  int woken = 0;
  if (c->watch_fd >= 0) {
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(c->watch_fd, buf, sizeof buf) > 0) woken = 1;
  }
  int64_t v = 0;
  int rc = data_version(db, &v);
  if (rc == JOBQ_OK && v == c->data_version && woken) {
    /* A lock that stays taken is a writer at work: news, most likely. */
    if (writer_done(db) != 0) return 1;
    rc = data_version(db, &v);
  }
  if (rc != JOBQ_OK) return rc;
  int changed = v != c->data_version;
  c->data_version = v;
  return changed;
}

/* Watchers see every commit anyway. */
static void sq_wake(jobq *db, const char *queue) {
  (void)db;
  (void)queue;
}

static int sq_roles(jobq *db, char **sql) {
  *sql = NULL;
  return jobq__fail(db, JOBQ_ENOTSUP,
                    "the sqlite store has no roles: protect the database file with its "
                    "permissions instead");
}

const jobq_store jobq__store_sqlite = {
    .scheme = "sqlite",
    .dialect = JOBQ_DIALECT_SQLITE,
    .options = options,
    .open = sq_open,
    .close = sq_close,
    .native = sq_native,
    .schema = versions,
    .init_on_open = 1,
    .schema_begin = sq_schema_begin,
    .schema_end = sq_schema_end,
    .schema_run = sq_schema_run,
    .roles = sq_roles,
    .doctor = sq_doctor,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .query = sq_query,
    .next = sq_next,
    .done = sq_done,
    .is_null = sq_is_null,
    .col_int = sq_col_int,
    .col_bytes = sq_col_bytes,
    .changes = sq_changes,
    .insert_id = sq_insert_id,
    .lock = sq_lock,
    .wake = sq_wake,
    .watch = sq_watch,
    .changed = sq_changed,
};
