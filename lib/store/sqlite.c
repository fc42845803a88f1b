/*
 * sqlite.c - the embedded store: one SQLite file shared by many processes
 * on one machine.
 *
 * The file runs in WAL mode with synchronous=FULL, so an acknowledged put
 * or ack survives a power cut.  Every write transaction is BEGIN IMMEDIATE
 * (no lock upgrades, so no deadlocks); a locked file is waited for with a
 * jittered busy handler up to busy_timeout.  "The database clock" is this
 * machine's clock, the only one every process on the file shares.  Times
 * are stored as Unix milliseconds.
 *
 * Statements are prepared once per connection and kept (see stmt()).  All
 * values are bound; the SQL text never changes with input.
 */
#include <errno.h>
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

/* ---------------------------------------------------------------- schema */

static const char *const migrations[] = {
    /* version 1 */
    "CREATE TABLE jobq_queues ("
    "  name TEXT PRIMARY KEY,"
    "  paused INTEGER NOT NULL DEFAULT 0,"
    "  key_policy TEXT NOT NULL DEFAULT 'block' CHECK (key_policy IN ('block','skip')),"
    "  created_at INTEGER NOT NULL,"
    "  n_done INTEGER NOT NULL DEFAULT 0,"
    "  n_dead INTEGER NOT NULL DEFAULT 0,"
    "  n_cancelled INTEGER NOT NULL DEFAULT 0"
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
    "  state TEXT NOT NULL CHECK (state IN ('ready','running','waiting')),"
    "  key TEXT,"
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
    "  prev_lost INTEGER NOT NULL DEFAULT 0"
    ");"
    /* The claim index: exactly the claim query's WHERE and ORDER BY. */
    "CREATE INDEX jobq_jobs_claim ON jobq_jobs(queue, priority DESC, run_at, id)"
    "  WHERE state = 'ready';"
    "CREATE INDEX jobq_jobs_session ON jobq_jobs(session) WHERE session IS NOT NULL;"
    "CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, key, id) WHERE key IS NOT NULL;"
    "CREATE INDEX jobq_jobs_barrier ON jobq_jobs(queue, id) WHERE barrier = 1;"
    "CREATE INDEX jobq_jobs_queue ON jobq_jobs(queue, id);"
    "CREATE UNIQUE INDEX jobq_jobs_unique ON jobq_jobs(queue, unique_key)"
    "  WHERE unique_key IS NOT NULL;"
    "CREATE TABLE jobq_done ("
    "  id INTEGER PRIMARY KEY,"
    "  queue TEXT NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  run_at INTEGER NOT NULL,"
    "  outcome TEXT NOT NULL CHECK (outcome IN ('done','dead','cancelled')),"
    "  key TEXT,"
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
    "CREATE INDEX jobq_done_outcome ON jobq_done(outcome, queue, id);"
    /* Ordering keys held by a dead head under the 'block' policy. */
    "CREATE TABLE jobq_blocked ("
    "  queue TEXT NOT NULL,"
    "  key TEXT NOT NULL,"
    "  job_id INTEGER NOT NULL,"
    "  PRIMARY KEY (queue, key)"
    ");",
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(NMIGRATIONS == JOBQ_SCHEMA_VERSION, "one migration per version");

/* ---------------------------------------------------------------- statements */

/* The columns every job listing reads, from either table. */
#define INFO_COLS                                                          \
  "id, queue, state, priority, run_at, key, barrier, unique_key, "         \
  "length(payload), length(result), attempts, max_attempts, timeout_ms, "  \
  "backoff_ms, session, claim, created_at, claimed_at, finished_at, "      \
  "last_error, cancel_requested, prev_lost"
#define HOT_INFO                                                            \
  "SELECT id, queue, state, priority, run_at, key, barrier, unique_key, "   \
  "length(payload), NULL, attempts, max_attempts, timeout_ms, backoff_ms, " \
  "session, claim, created_at, claimed_at, NULL, last_error, "              \
  "cancel_requested, prev_lost"
#define DONE_INFO                                                            \
  "SELECT id, queue, outcome, priority, run_at, key, barrier, unique_key, "  \
  "length(payload), length(result), attempts, max_attempts, timeout_ms, "    \
  "backoff_ms, session, claim, created_at, claimed_at, finished_at, "        \
  "last_error, 0, prev_lost"

#define STMTS(X)                                                               \
  X(IDENT, "SELECT queue_id, epoch, version FROM jobq_meta WHERE id = 1")      \
  X(SEQ, "SELECT seq FROM sqlite_sequence WHERE name = 'jobq_jobs'")           \
  X(QUEUE_ENSURE,                                                              \
    "INSERT INTO jobq_queues(name, created_at) VALUES (?1, ?2) "               \
    "ON CONFLICT(name) DO NOTHING")                                            \
  X(UNIQUE_FIND,                                                               \
    "SELECT id FROM jobq_jobs WHERE queue = ?1 AND unique_key = ?2")           \
  X(ANY_IN_QUEUE, "SELECT 1 FROM jobq_jobs WHERE queue = ?1 LIMIT 1")          \
  X(ANY_BEFORE, "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND id < ?2 LIMIT 1") \
  X(BARRIER_FIRST,                                                             \
    "SELECT id, state FROM jobq_jobs INDEXED BY jobq_jobs_barrier "            \
    "WHERE queue = ?1 AND barrier = 1 ORDER BY id LIMIT 1")                                                     \
  X(BARRIER_BEFORE,                                                            \
    "SELECT 1 FROM jobq_jobs INDEXED BY jobq_jobs_barrier "                    \
    "WHERE queue = ?1 AND barrier = 1 AND id < ?2 LIMIT 1")                                                                 \
  X(KEY_ANY, "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND key = ?2 LIMIT 1")  \
  X(KEY_ACTIVE,                                                                \
    "SELECT 1 FROM jobq_jobs WHERE queue = ?1 AND key = ?2 "                   \
    "AND state IN ('ready','running') LIMIT 1")                                \
  X(KEY_NEXT,                                                                  \
    "SELECT id FROM jobq_jobs WHERE queue = ?1 AND key = ?2 "                  \
    "AND state = 'waiting' ORDER BY id LIMIT 1")                               \
  X(BLOCKED, "SELECT job_id FROM jobq_blocked WHERE queue = ?1 AND key = ?2")  \
  X(BLOCK,                                                                     \
    "INSERT INTO jobq_blocked(queue, key, job_id) VALUES (?1, ?2, ?3) "        \
    "ON CONFLICT(queue, key) DO NOTHING")                                      \
  X(UNBLOCK, "DELETE FROM jobq_blocked WHERE job_id = ?1")                     \
  X(BLOCKED_BY, "SELECT 1 FROM jobq_blocked WHERE job_id = ?1")                \
  X(MAKE_READY, "UPDATE jobq_jobs SET state = 'ready' WHERE id = ?1")          \
  X(INSERT_JOB,                                                                \
    "INSERT INTO jobq_jobs(queue, priority, run_at, state, key, barrier, "     \
    "unique_key, payload, max_attempts, timeout_ms, backoff_ms, created_at) "  \
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")              \
  X(SESSION_INSERT,                                                            \
    "INSERT INTO jobq_sessions(id, epoch, name, host, pid, started_at, "       \
    "heartbeat_at, expires_at, lease_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, " \
    "?6 + ?7, ?7)")                                                            \
  X(SESSION_CHECK, "SELECT epoch, expires_at FROM jobq_sessions WHERE id = ?1") \
  X(SESSION_DELETE, "DELETE FROM jobq_sessions WHERE id = ?1")                 \
  X(SESSION_JOBS,                                                              \
    "SELECT id, attempts, max_attempts, cancel_requested FROM jobq_jobs "      \
    "WHERE session = ?1")                                                      \
  X(HEARTBEAT,                                                                 \
    "UPDATE jobq_sessions SET heartbeat_at = ?2, expires_at = ?2 + lease_ms, " \
    "in_flight = ?3, done = ?4, failed = ?5 WHERE id = ?1 AND epoch = ?6")     \
  X(LAST_BEAT, "SELECT last_beat FROM jobq_meta WHERE id = 1")                 \
  X(LONGEST_LEASE, "SELECT max(lease_ms) FROM jobq_sessions")                 \
  X(DATA_VERSION, "PRAGMA data_version")                                       \
  X(SET_LAST_BEAT, "UPDATE jobq_meta SET last_beat = ?1 WHERE id = 1")         \
  X(RENEW_ALL,                                                                 \
    "UPDATE jobq_sessions SET expires_at = max(expires_at, ?1 + lease_ms)")    \
  X(EXPIRED, "SELECT id FROM jobq_sessions WHERE expires_at < ?1")             \
  X(REQUEUE_LOST,                                                              \
    "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "     \
    "deadline_at = NULL, prev_lost = 1, last_error = ?2 WHERE id = ?1")                            \
  X(REQUEUE_GIVEN_BACK,                                                        \
    "UPDATE jobq_jobs SET state = 'ready', session = NULL, claim = NULL, "     \
    "deadline_at = NULL, attempts = attempts - 1 WHERE id = ?1")                                   \
  X(CANCEL_LIST,                                                               \
    "SELECT id FROM jobq_jobs WHERE session = ?1 AND cancel_requested = 1 "    \
    "ORDER BY id")                                                             \
  X(QUEUE_PAUSED, "SELECT paused FROM jobq_queues WHERE name = ?1")            \
  X(QUEUES_ACTIVE, "SELECT name FROM jobq_queues WHERE paused = 0 ORDER BY name") \
  X(CANDIDATES,                                                                \
    "SELECT id, priority, run_at FROM jobq_jobs WHERE queue = ?1 "             \
    "AND state = 'ready' AND run_at <= ?2 "                                    \
    "ORDER BY priority DESC, run_at, id LIMIT ?3")                             \
  X(CLAIM_ONE,                                                                 \
    "UPDATE jobq_jobs SET state = 'running', session = ?2, "                   \
    "claim = lower(hex(randomblob(16))), claimed_at = ?3, "                    \
    "attempts = attempts + 1, cancel_requested = 0, "                          \
    "deadline_at = CASE WHEN timeout_ms > 0 THEN ?3 + timeout_ms END "         \
    "WHERE id = ?1 AND state = 'ready' "                                       \
    "RETURNING queue, payload, attempts, max_attempts, priority, key, "        \
    "timeout_ms, prev_lost, claim")                                            \
  X(ACK_ROW,                                                                   \
    "SELECT attempts, max_attempts, backoff_ms, cancel_requested FROM "        \
    "jobq_jobs WHERE id = ?1 AND session = ?2 AND claim = ?3 "                 \
    "AND state = 'running'")                                                   \
  X(ACK_DONE_BEFORE,                                                           \
    "SELECT outcome FROM jobq_done WHERE id = ?1 AND claim = ?2")              \
  X(ACK_READY_BEFORE,                                                          \
    "SELECT 1 FROM jobq_jobs WHERE id = ?1 AND claim = ?2 AND session IS NULL") \
  X(ACK_REQUEUE,                                                               \
    "UPDATE jobq_jobs SET state = 'ready', session = NULL, deadline_at = NULL, " \
    "run_at = ?2 + ?3, attempts = attempts - ?4, "                             \
    "claim = CASE WHEN ?4 = 1 THEN NULL ELSE claim END, "                       \
    "last_error = coalesce(?5, last_error), prev_lost = 0 WHERE id = ?1")      \
  X(ARCHIVE,                                                                   \
    "INSERT INTO jobq_done(id, queue, priority, run_at, outcome, key, "        \
    "barrier, unique_key, payload, result, attempts, max_attempts, "           \
    "timeout_ms, backoff_ms, session, claim, created_at, claimed_at, "         \
    "finished_at, last_error, prev_lost) "                                     \
    "SELECT id, queue, priority, run_at, ?2, key, barrier, unique_key, "       \
    "payload, ?3, attempts, max_attempts, timeout_ms, backoff_ms, session, "   \
    "claim, created_at, claimed_at, ?4, coalesce(?5, last_error), prev_lost "  \
    "FROM jobq_jobs WHERE id = ?1 RETURNING queue, key, barrier")              \
  X(DELETE_JOB, "DELETE FROM jobq_jobs WHERE id = ?1")                         \
  X(COUNT_ADD,                                                                 \
    "UPDATE jobq_queues SET n_done = n_done + ?2, n_dead = n_dead + ?3, "      \
    "n_cancelled = n_cancelled + ?4 WHERE name = ?1")                          \
  X(POLICY, "SELECT key_policy FROM jobq_queues WHERE name = ?1")              \
  X(WAITING_UNKEYED,                                                           \
    "UPDATE jobq_jobs SET state = 'ready' WHERE queue = ?1 "                   \
    "AND state = 'waiting' AND barrier = 0 AND key IS NULL AND id < ?2")       \
  X(WAITING_KEYS,                                                              \
    "SELECT DISTINCT key FROM jobq_jobs WHERE queue = ?1 AND state = 'waiting' " \
    "AND key IS NOT NULL AND id < ?2")                                         \
  X(EXTEND,                                                                    \
    "UPDATE jobq_jobs SET deadline_at = ?4 + ?5 WHERE id = ?1 AND "            \
    "session = ?2 AND claim = ?3 AND state = 'running' "                       \
    "RETURNING cancel_requested")                                              \
  X(SHOW_HOT, HOT_INFO ", payload, NULL FROM jobq_jobs WHERE id = ?1")         \
  X(SHOW_DONE, DONE_INFO ", payload, result FROM jobq_done WHERE id = ?1")     \
  X(LIST_ALL,                                                                  \
    "SELECT * FROM (" HOT_INFO " FROM jobq_jobs UNION ALL " DONE_INFO          \
    " FROM jobq_done) WHERE id > ?1 AND (?2 IS NULL OR queue = ?2) "           \
    "ORDER BY id LIMIT ?3")                                                    \
  X(LIST_HOT,                                                                  \
    HOT_INFO " FROM jobq_jobs WHERE id > ?1 AND (?2 IS NULL OR queue = ?2) "   \
    "AND state = ?4 AND (?5 = 0 OR run_at > ?6) ORDER BY id LIMIT ?3")         \
  X(LIST_DONE,                                                                 \
    DONE_INFO " FROM jobq_done WHERE outcome = ?4 AND id > ?1 "                \
    "AND (?2 IS NULL OR queue = ?2) ORDER BY id LIMIT ?3")                     \
  X(STATS_QUEUES,                                                              \
    "SELECT name, paused, key_policy, n_done, n_dead, n_cancelled "            \
    "FROM jobq_queues ORDER BY name")                                          \
  X(STATS_HOT,                                                                 \
    "SELECT queue, state, run_at <= ?1, count(*), min(run_at) FROM jobq_jobs " \
    "GROUP BY queue, state, run_at <= ?1")                                     \
  X(SESSIONS,                                                                  \
    "SELECT s.id, s.name, s.host, s.pid, s.epoch, s.started_at, "              \
    "s.heartbeat_at, s.expires_at, s.lease_ms, s.in_flight, s.done, "          \
    "s.failed, (SELECT count(*) FROM jobq_jobs j WHERE j.session = s.id), "    \
    "s.expires_at < ?1 FROM jobq_sessions s ORDER BY s.started_at, s.id")      \
  X(DONE_ROW,                                                                  \
    "SELECT outcome, queue, key, unique_key, barrier FROM jobq_done "          \
    "WHERE id = ?1")                                                           \
  X(HOT_STATE, "SELECT state FROM jobq_jobs WHERE id = ?1")                    \
  X(UNARCHIVE,                                                                 \
    "INSERT INTO jobq_jobs(id, queue, priority, run_at, state, key, barrier, " \
    "unique_key, payload, attempts, max_attempts, timeout_ms, backoff_ms, "    \
    "created_at, last_error) SELECT id, queue, priority, ?2, ?3, key, "        \
    "barrier, unique_key, payload, 0, max_attempts, timeout_ms, backoff_ms, "  \
    "created_at, last_error FROM jobq_done WHERE id = ?1")                     \
  X(DELETE_DONE, "DELETE FROM jobq_done WHERE id = ?1")                        \
  X(DEAD_IDS,                                                                  \
    "SELECT id FROM jobq_done WHERE outcome = 'dead' "                         \
    "AND (?1 IS NULL OR queue = ?1) ORDER BY id")                              \
  X(MARK_CANCELLED,                                                            \
    "UPDATE jobq_done SET outcome = 'cancelled', finished_at = ?2 "            \
    "WHERE id = ?1")                                                           \
  X(REQUEST_CANCEL, "UPDATE jobq_jobs SET cancel_requested = 1 WHERE id = ?1") \
  X(SET_PAUSED, "UPDATE jobq_queues SET paused = ?2 WHERE name = ?1")          \
  X(SET_POLICY, "UPDATE jobq_queues SET key_policy = ?2 WHERE name = ?1")      \
  X(PRUNE_COUNT,                                                               \
    "SELECT queue, sum(outcome = 'done'), sum(outcome = 'dead'), "             \
    "sum(outcome = 'cancelled') FROM jobq_done WHERE finished_at < ?1 "        \
    "AND id NOT IN (SELECT job_id FROM jobq_blocked) GROUP BY queue")          \
  X(PRUNE,                                                                     \
    "DELETE FROM jobq_done WHERE finished_at < ?1 "                            \
    "AND id NOT IN (SELECT job_id FROM jobq_blocked)")                         \
  X(ALL_SESSIONS, "SELECT id FROM jobq_sessions")                              \
  X(BUMP,                                                                      \
    "UPDATE jobq_meta SET epoch = max(epoch + 1, ?1), last_beat = 0 "          \
    "WHERE id = 1 RETURNING epoch")

enum {
#define STMT_ENUM(name, sql) ST_##name,
  STMTS(STMT_ENUM)
#undef STMT_ENUM
      ST__COUNT
};

static const char *const stmt_sql[] = {
#define STMT_SQL(name, sql) sql,
    STMTS(STMT_SQL)
#undef STMT_SQL
};

typedef struct sq {
  sqlite3 *db;
  sqlite3_stmt *stmts[ST__COUNT];
  int64_t busy_timeout_ms;
  int64_t busy_start_ms;
  char *path;
  int watch_fd;          /* inotify on the write-ahead log, or -1 */
  int64_t data_version;  /* PRAGMA data_version at the last changed() */
} sq;

static sq *conn(jobq *db) { return db->conn; }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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
      return jobq__fail(db, JOBQ_EREADONLY, "%s: '%s' is read-only: %s", what,
                        c->path, msg);
    case SQLITE_NOTADB:
      return jobq__fail(db, JOBQ_EURL,
                        "'%s' is not an SQLite database: expected a jobq "
                        "database file or a new path",
                        c->path);
    case SQLITE_CANTOPEN:
      return jobq__fail(db, JOBQ_EURL, "cannot open '%s': %s", c->path, msg);
    case SQLITE_FULL:
      return jobq__fail(db, JOBQ_EDB, "%s: the disk holding '%s' is full", what,
                        c->path);
    default:
      return jobq__fail(db, JOBQ_EDB, "%s: %s", what, msg);
  }
}

/* The cached statement id, reset and unbound; NULL with the error set. */
static sqlite3_stmt *stmt(jobq *db, int id) {
  sq *c = conn(db);
  sqlite3_stmt *st = c->stmts[id];
  if (st == NULL) {
    int rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1,
                                SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
      sq_fail(db, rc, "preparing a statement");
      return NULL;
    }
    c->stmts[id] = st;
  } else {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
  return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s == NULL)
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static void bind_blob(sqlite3_stmt *st, int i, const void *p, size_t len) {
  /* An empty payload is an empty blob, never NULL. */
  sqlite3_bind_blob64(st, i, p ? p : "", len, SQLITE_STATIC);
}

/* Steps a statement expected to finish; resets it. */
static int run(jobq *db, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return sq_fail(db, rc, what);
  return JOBQ_OK;
}

/* Steps for one row: 1 when a row is there, 0 when none, <0 on error. */
static int row(jobq *db, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) return 1;
  sqlite3_reset(st);
  if (rc == SQLITE_DONE) return 0;
  return sq_fail(db, rc, what);
}

/* Runs a one-row, one-integer query: *out gets the value (or dflt). */
static int query_int(jobq *db, sqlite3_stmt *st, int64_t dflt, int64_t *out,
                     const char *what) {
  int r = row(db, st, what);
  if (r < 0) return r;
  *out = r ? sqlite3_column_int64(st, 0) : dflt;
  sqlite3_reset(st);
  return JOBQ_OK;
}

static char *col_text(sqlite3_stmt *st, int i, int *failed) {
  const unsigned char *t = sqlite3_column_text(st, i);
  if (t == NULL) return NULL;
  return jobq__strdup((const char *)t, failed);
}

static void *col_blob(sqlite3_stmt *st, int i, size_t *len, int *failed) {
  const void *p = sqlite3_column_blob(st, i);
  *len = (size_t)sqlite3_column_bytes(st, i);
  if (p == NULL && sqlite3_column_type(st, i) == SQLITE_NULL) return NULL;
  return jobq__memdup(p ? p : "", *len, failed);
}

static int exec(jobq *db, const char *sql, const char *what) {
  int rc = sqlite3_exec(conn(db)->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? JOBQ_OK : sq_fail(db, rc, what);
}

/* ---------------------------------------------------------------- connection */

static int busy_handler(void *arg, int count) {
  jobq *db = arg;
  sq *c = conn(db);
  int64_t t = mono_ms();
  if (count == 0) c->busy_start_ms = t;
  if (t - c->busy_start_ms >= c->busy_timeout_ms) return 0;
  /* 1, 2, 4 ... up to 32 ms, each with jitter in [0.5, 1.5). */
  int64_t base_us = 1000LL << (count < 5 ? count : 5);
  int64_t us = base_us / 2 + (int64_t)(jobq__rand(db) % (uint64_t)base_us);
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
  return 1;
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
  if (stat(dir, &stt) != 0 || !S_ISDIR(stt.st_mode)) {
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

static int sq_migrate(jobq *db);

static int sq_open(jobq *db, const jobq_url *u) {
  for (size_t i = 0; i < u->nopts; i++) {
    if (strcmp(u->keys[i], "busy_timeout") != 0 &&
        strcmp(u->keys[i], "max_payload") != 0)
      return jobq__fail(db, JOBQ_EURL,
                        "unknown option '%s' in the database url: expected "
                        "busy_timeout or max_payload",
                        u->keys[i]);
  }
  int64_t busy = 10000;
  const char *bt = jobq__url_opt(u, "busy_timeout");
  if (bt != NULL && jobq_parse_duration(bt, &busy) != JOBQ_OK)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid busy_timeout '%s' in the database url: expected "
                      "a duration like 10s",
                      bt);
  int rc = check_path(db, u->path);
  if (rc != JOBQ_OK) return rc;
  sq *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->busy_timeout_ms = busy;
  c->watch_fd = -1;
  c->path = strdup(u->path);
  if (c->path == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int src = sqlite3_open_v2(c->path, &c->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                            NULL);
  if (src != SQLITE_OK) return sq_fail(db, src, "opening the database");
  sqlite3_busy_handler(c->db, busy_handler, db);
  sqlite3_extended_result_codes(c->db, 1);
  /* The file must be a database before anything is written to it. */
  rc = exec(db, "SELECT count(*) FROM sqlite_schema", "reading the database");
  if (rc != JOBQ_OK) return rc;
  sqlite3_stmt *st;
  src = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
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
  rc = exec(db,
            "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;"
            "PRAGMA temp_store = MEMORY;",
            "setting durability");
  if (rc != JOBQ_OK) return rc;
  return sq_migrate(db);
}

static void sq_close(jobq *db) {
  sq *c = conn(db);
  if (c == NULL) return;
  for (int i = 0; i < ST__COUNT; i++) sqlite3_finalize(c->stmts[i]);
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

/* The schema version in the file: 0 when jobq never initialised it. */
static int schema_version(jobq *db, int64_t *version) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(conn(db)->db,
                              "SELECT version FROM jobq_meta WHERE id = 1", -1,
                              &st, NULL);
  if (rc != SQLITE_OK) {
    *version = 0;
    /* "no such table" means a fresh file. */
    if (rc == SQLITE_ERROR) return JOBQ_OK;
    return sq_fail(db, rc, "reading the schema version");
  }
  rc = sqlite3_step(st);
  *version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return sq_fail(db, rc, "reading the schema version");
  return JOBQ_OK;
}

static int too_new(jobq *db, int64_t version) {
  return jobq__fail(db, JOBQ_ESCHEMA,
                    "the schema of '%s' is version %lld, newer than this jobq "
                    "understands (%d): expected a newer jobq",
                    conn(db)->path, (long long)version, JOBQ_SCHEMA_VERSION);
}

static int sq_migrate(jobq *db) {
  int64_t version;
  int rc = schema_version(db, &version);
  if (rc != JOBQ_OK) return rc;
  if (version > JOBQ_SCHEMA_VERSION) return too_new(db, version);
  if (version == JOBQ_SCHEMA_VERSION) return JOBQ_OK;
  rc = exec(db, "BEGIN IMMEDIATE", "initialising the schema");
  if (rc != JOBQ_OK) return rc;
  /* Another process may have initialised it meanwhile. */
  rc = schema_version(db, &version);
  if (rc == JOBQ_OK && version > JOBQ_SCHEMA_VERSION) rc = too_new(db, version);
  if (rc == JOBQ_OK && version == 0) {
    rc = exec(db,
              "CREATE TABLE jobq_meta ("
              "  id INTEGER PRIMARY KEY CHECK (id = 1),"
              "  version INTEGER NOT NULL,"
              "  queue_id TEXT NOT NULL,"
              "  epoch INTEGER NOT NULL,"
              "  created_at INTEGER NOT NULL,"
              "  last_beat INTEGER NOT NULL DEFAULT 0)",
              "creating jobq_meta");
    if (rc == JOBQ_OK) {
      unsigned char b[16];
      jobq__random(b, sizeof b);
      b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
      b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
      char uuid[37];
      snprintf(uuid, sizeof uuid,
               "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
               b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
               b[11], b[12], b[13], b[14], b[15]);
      sqlite3_stmt *st;
      int src = sqlite3_prepare_v2(conn(db)->db,
                                   "INSERT INTO jobq_meta(id, version, queue_id, "
                                   "epoch, created_at) VALUES (1, 0, ?1, 1, ?2)",
                                   -1, &st, NULL);
      if (src == SQLITE_OK) {
        bind_text(st, 1, uuid);
        sqlite3_bind_int64(st, 2, now_ms());
        src = sqlite3_step(st);
        sqlite3_finalize(st);
      }
      if (src != SQLITE_DONE) rc = sq_fail(db, src, "writing jobq_meta");
    }
  }
  for (int64_t v = version; rc == JOBQ_OK && v < JOBQ_SCHEMA_VERSION; v++) {
    rc = exec(db, migrations[v], "migrating the schema");
    if (rc == JOBQ_OK) {
      char sql[64];
      snprintf(sql, sizeof sql, "UPDATE jobq_meta SET version = %lld", (long long)v + 1);
      rc = exec(db, sql, "migrating the schema");
    }
  }
  if (rc == JOBQ_OK) return exec(db, "COMMIT", "initialising the schema");
  sqlite3_exec(conn(db)->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* ---------------------------------------------------------------- transactions */

static int sq_begin(jobq *db, int depth) {
  if (depth == 0) return exec(db, "BEGIN IMMEDIATE", "starting a transaction");
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

/* ---------------------------------------------------------------- identity */

static int sq_identity(jobq *db, jobq_identity *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = stmt(db, ST_IDENT);
  if (st == NULL) return db->err;
  int r = row(db, st, "reading the queue identity");
  if (r < 0) return r;
  if (r == 0) return jobq__fail(db, JOBQ_EDB, "jobq_meta has no row: run jobq init");
  snprintf(out->queue_id, sizeof out->queue_id, "%s",
           (const char *)sqlite3_column_text(st, 0));
  out->epoch = sqlite3_column_int64(st, 1);
  out->schema_version = sqlite3_column_int(st, 2);
  sqlite3_reset(st);
  if ((st = stmt(db, ST_SEQ)) == NULL) return db->err;
  out->now_ms = now_ms();
  return query_int(db, st, 0, &out->seq, "reading the job sequence");
}

/* ---------------------------------------------------------------- promotion */

/*
 * A job leaves `waiting` when its turn comes: it is the oldest unfinished
 * job of its ordering key (and the key is not blocked by a dead head), and
 * no unfinished barrier of its queue is older than it; a barrier also
 * needs every older job of its queue finished.
 */

static int exists2(jobq *db, int id, const char *queue, const char *key,
                   int64_t num, int *yes) {
  sqlite3_stmt *st = stmt(db, id);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  if (key != NULL)
    bind_text(st, 2, key);
  else
    sqlite3_bind_int64(st, 2, num);
  int r = row(db, st, "checking the queue order");
  if (r < 0) return r;
  sqlite3_reset(st);
  *yes = r;
  return JOBQ_OK;
}

static int make_ready(jobq *db, int64_t id) {
  sqlite3_stmt *st = stmt(db, ST_MAKE_READY);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, id);
  return run(db, st, "promoting a waiting job");
}

static int promote_key(jobq *db, const char *queue, const char *key) {
  int yes, rc;
  if ((rc = exists2(db, ST_BLOCKED, queue, key, 0, &yes)) != JOBQ_OK || yes) return rc;
  if ((rc = exists2(db, ST_KEY_ACTIVE, queue, key, 0, &yes)) != JOBQ_OK || yes) return rc;
  sqlite3_stmt *st = stmt(db, ST_KEY_NEXT);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  bind_text(st, 2, key);
  int64_t next;
  if ((rc = query_int(db, st, 0, &next, "finding a key's next job")) != JOBQ_OK) return rc;
  if (next == 0) return JOBQ_OK;
  if ((rc = exists2(db, ST_BARRIER_BEFORE, queue, NULL, next, &yes)) != JOBQ_OK || yes)
    return rc;
  return make_ready(db, next);
}

static int promote_barrier(jobq *db, const char *queue) {
  sqlite3_stmt *st = stmt(db, ST_BARRIER_FIRST);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  int r = row(db, st, "finding a barrier");
  if (r <= 0) return r;
  int64_t id = sqlite3_column_int64(st, 0);
  int waiting = strcmp((const char *)sqlite3_column_text(st, 1), "waiting") == 0;
  sqlite3_reset(st);
  if (!waiting) return JOBQ_OK;
  int yes, rc;
  if ((rc = exists2(db, ST_ANY_BEFORE, queue, NULL, id, &yes)) != JOBQ_OK || yes) return rc;
  return make_ready(db, id);
}

/* After a barrier finished: the jobs up to the next barrier may run. */
static int promote_after_barrier(jobq *db, const char *queue) {
  sqlite3_stmt *st = stmt(db, ST_BARRIER_FIRST);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  int r = row(db, st, "finding a barrier");
  if (r < 0) return r;
  int64_t limit = r ? sqlite3_column_int64(st, 0) : INT64_MAX;
  sqlite3_reset(st);
  if ((st = stmt(db, ST_WAITING_UNKEYED)) == NULL) return db->err;
  bind_text(st, 1, queue);
  sqlite3_bind_int64(st, 2, limit);
  int rc = run(db, st, "promoting jobs after a barrier");
  if (rc != JOBQ_OK) return rc;
  /* Keys are collected first: promoting changes the rows being read. */
  if ((st = stmt(db, ST_WAITING_KEYS)) == NULL) return db->err;
  bind_text(st, 1, queue);
  sqlite3_bind_int64(st, 2, limit);
  char **keys = NULL;
  size_t n = 0;
  int failed = 0;
  while ((r = row(db, st, "finding waiting keys")) == 1) {
    char **k = realloc(keys, (n + 1) * sizeof *k);
    if (k == NULL) {
      failed = 1;
      break;
    }
    keys = k;
    keys[n] = col_text(st, 0, &failed);
    n++;
  }
  sqlite3_reset(st);
  rc = r < 0 ? r : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = promote_key(db, queue, keys[i]);
  for (size_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
  if (rc != JOBQ_OK) return rc;
  return promote_barrier(db, queue);
}

/* After a job left the hot table: whoever waited for it may run.
 * blocked: it was a dead head that now blocks its key. */
static int after_finish(jobq *db, const char *queue, const char *key,
                        int barrier, int blocked) {
  int rc = JOBQ_OK;
  if (key != NULL && !blocked) rc = promote_key(db, queue, key);
  if (rc != JOBQ_OK) return rc;
  if (barrier) return promote_after_barrier(db, queue);
  return promote_barrier(db, queue);
}

static const char *outcome_name(int state) { return jobq_state_name(state); }

/* Moves job id to the archive with its outcome, counts it, and lets the
 * jobs that waited for it run.  A dead head under 'block' blocks its key. */
static int archive(jobq *db, int64_t id, int state, const void *result,
                   size_t result_len, const char *error, size_t error_len) {
  int64_t now = now_ms();
  sqlite3_stmt *st = stmt(db, ST_ARCHIVE);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, id);
  bind_text(st, 2, outcome_name(state));
  if (state == JOBQ_STATE_DONE)
    bind_blob(st, 3, result, result_len);
  else
    sqlite3_bind_null(st, 3);
  sqlite3_bind_int64(st, 4, now);
  if (error != NULL)
    sqlite3_bind_text64(st, 5, error, error_len, SQLITE_STATIC, SQLITE_UTF8);
  int r = row(db, st, "archiving a job");
  if (r <= 0) return r < 0 ? r : jobq__fail(db, JOBQ_ENOTFOUND, "job %lld vanished", (long long)id);
  int failed = 0;
  char *queue = col_text(st, 0, &failed);
  char *key = col_text(st, 1, &failed);
  int barrier = sqlite3_column_int(st, 2);
  sqlite3_reset(st);
  int rc = failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc == JOBQ_OK && (st = stmt(db, ST_DELETE_JOB)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    rc = run(db, st, "archiving a job");
  } else if (rc == JOBQ_OK) {
    rc = db->err;
  }
  if (rc == JOBQ_OK && (st = stmt(db, ST_COUNT_ADD)) != NULL) {
    bind_text(st, 1, queue);
    sqlite3_bind_int(st, 2, state == JOBQ_STATE_DONE);
    sqlite3_bind_int(st, 3, state == JOBQ_STATE_DEAD);
    sqlite3_bind_int(st, 4, state == JOBQ_STATE_CANCELLED);
    rc = run(db, st, "counting a finished job");
  } else if (rc == JOBQ_OK) {
    rc = db->err;
  }
  int block = 0;
  if (rc == JOBQ_OK && state == JOBQ_STATE_DEAD && key != NULL) {
    sqlite3_stmt *p = stmt(db, ST_POLICY);
    int pr = p == NULL ? db->err : (bind_text(p, 1, queue), row(db, p, "reading the key policy"));
    block = pr == 1 && strcmp((const char *)sqlite3_column_text(p, 0), "block") == 0;
    if (p != NULL) sqlite3_reset(p);
    if (pr < 0) rc = pr;
    if (rc == JOBQ_OK && block && (st = stmt(db, ST_BLOCK)) != NULL) {
      bind_text(st, 1, queue);
      bind_text(st, 2, key);
      sqlite3_bind_int64(st, 3, id);
      rc = run(db, st, "blocking an ordering key");
    }
  }
  if (rc == JOBQ_OK && db->err != JOBQ_OK) rc = db->err;
  if (rc == JOBQ_OK) rc = after_finish(db, queue, key, barrier, block);
  free(queue);
  free(key);
  return rc;
}

/* ---------------------------------------------------------------- put */

static int ensure_queue(jobq *db, const char *queue) {
  sqlite3_stmt *st = stmt(db, ST_QUEUE_ENSURE);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  sqlite3_bind_int64(st, 2, now_ms());
  return run(db, st, "creating the queue");
}

/* Whether a new job (or one retried with an older id) must wait. */
static int must_wait(jobq *db, const char *queue, const char *key, int barrier,
                     int64_t id, int *wait) {
  int yes, rc;
  *wait = 1;
  if (barrier) {
    rc = id ? exists2(db, ST_ANY_BEFORE, queue, NULL, id, &yes)
            : exists2(db, ST_ANY_IN_QUEUE, queue, NULL, 0, &yes);
    /* ST_ANY_IN_QUEUE binds only ?1; the extra binding is harmless. */
  } else {
    rc = exists2(db, ST_BARRIER_BEFORE, queue, NULL, id ? id : INT64_MAX, &yes);
  }
  if (rc != JOBQ_OK || yes) return rc;
  if (key != NULL) {
    /* A new job waits behind any unfinished job of its key; a retried one
     * is older than the key's waiting jobs and waits only for a running
     * (or ready) one. */
    rc = exists2(db, id ? ST_KEY_ACTIVE : ST_KEY_ANY, queue, key, 0, &yes);
    if (rc != JOBQ_OK || yes) return rc;
    if ((rc = exists2(db, ST_BLOCKED, queue, key, 0, &yes)) != JOBQ_OK || yes) return rc;
  }
  *wait = 0;
  return JOBQ_OK;
}

static int sq_put(jobq *db, const jobq_put_opts *o, int64_t *id, int *existed) {
  *existed = 0;
  sqlite3_stmt *st;
  int rc;
  if (o->unique_key != NULL) {
    if ((st = stmt(db, ST_UNIQUE_FIND)) == NULL) return db->err;
    bind_text(st, 1, o->queue);
    bind_text(st, 2, o->unique_key);
    int64_t found;
    if ((rc = query_int(db, st, 0, &found, "checking the unique key")) != JOBQ_OK) return rc;
    if (found != 0) {
      *id = found;
      *existed = 1;
      return JOBQ_OK;
    }
  }
  if ((rc = ensure_queue(db, o->queue)) != JOBQ_OK) return rc;
  int wait;
  if ((rc = must_wait(db, o->queue, o->key, o->barrier, 0, &wait)) != JOBQ_OK) return rc;
  int64_t now = now_ms();
  int64_t run_at = o->run_at_ms > 0 ? o->run_at_ms : now + o->delay_ms;
  if ((st = stmt(db, ST_INSERT_JOB)) == NULL) return db->err;
  bind_text(st, 1, o->queue);
  sqlite3_bind_int(st, 2, o->priority);
  sqlite3_bind_int64(st, 3, run_at);
  bind_text(st, 4, wait ? "waiting" : "ready");
  bind_text(st, 5, o->key);
  sqlite3_bind_int(st, 6, o->barrier ? 1 : 0);
  bind_text(st, 7, o->unique_key);
  bind_blob(st, 8, o->payload, o->payload_len);
  sqlite3_bind_int(st, 9, o->max_attempts);
  sqlite3_bind_int64(st, 10, o->timeout_ms);
  sqlite3_bind_int64(st, 11, o->backoff_ms);
  sqlite3_bind_int64(st, 12, now);
  if ((rc = run(db, st, "inserting the job")) != JOBQ_OK) return rc;
  *id = sqlite3_last_insert_rowid(conn(db)->db);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- sessions */

static int sq_session_insert(jobq *db, jobq_session *s) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
  sqlite3_stmt *st = stmt(db, ST_SESSION_INSERT);
  if (st == NULL) return db->err;
  bind_text(st, 1, s->id);
  sqlite3_bind_int64(st, 2, s->epoch);
  bind_text(st, 3, s->name);
  bind_text(st, 4, host);
  sqlite3_bind_int64(st, 5, (int64_t)getpid());
  sqlite3_bind_int64(st, 6, now_ms());
  sqlite3_bind_int64(st, 7, s->lease_ms);
  return run(db, st, "registering the session");
}

/* The jobs a session holds, read before any of them is changed. */
typedef struct held {
  int64_t id;
  int attempts, max_attempts, cancel;
} held;

static int session_jobs(jobq *db, const char *sid, held **out, size_t *n) {
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = stmt(db, ST_SESSION_JOBS);
  if (st == NULL) return db->err;
  bind_text(st, 1, sid);
  int r;
  while ((r = row(db, st, "reading a session's jobs")) == 1) {
    held *h = realloc(*out, (*n + 1) * sizeof *h);
    if (h == NULL) {
      sqlite3_reset(st);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    *out = h;
    h[*n] = (held){sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                   sqlite3_column_int(st, 2), sqlite3_column_int(st, 3)};
    (*n)++;
  }
  sqlite3_reset(st);
  return r < 0 ? r : JOBQ_OK;
}

/* Ends session sid.  lost: its worker vanished (the attempt is spent and
 * its outcome unknown); otherwise the worker gave the jobs back. */
static int end_session(jobq *db, const char *sid, int lost) {
  held *h;
  size_t n;
  int rc = session_jobs(db, sid, &h, &n);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    sqlite3_stmt *st;
    if (h[i].cancel) {
      const char *e = "cancelled: its worker ended";
      rc = archive(db, h[i].id, JOBQ_STATE_CANCELLED, NULL, 0, e, strlen(e));
    } else if (lost && h[i].attempts >= h[i].max_attempts) {
      char e[128];
      snprintf(e, sizeof e, "lease expired: the worker was lost on attempt %d of %d",
               h[i].attempts, h[i].max_attempts);
      rc = archive(db, h[i].id, JOBQ_STATE_DEAD, NULL, 0, e, strlen(e));
    } else if ((st = stmt(db, lost ? ST_REQUEUE_LOST : ST_REQUEUE_GIVEN_BACK)) == NULL) {
      rc = db->err;
    } else {
      sqlite3_bind_int64(st, 1, h[i].id);
      if (lost) bind_text(st, 2, "lease expired: the worker was lost");
      rc = run(db, st, "returning a session's job");
    }
  }
  free(h);
  if (rc != JOBQ_OK) return rc;
  sqlite3_stmt *st = stmt(db, ST_SESSION_DELETE);
  if (st == NULL) return db->err;
  bind_text(st, 1, sid);
  return run(db, st, "deleting the session");
}

static int sq_session_delete(jobq *db, const char *sid) {
  return end_session(db, sid, 0);
}

static int sq_heartbeat(jobq *db, jobq_session *s) {
  sqlite3_stmt *st = stmt(db, ST_HEARTBEAT);
  if (st == NULL) return db->err;
  bind_text(st, 1, s->id);
  sqlite3_bind_int64(st, 2, now_ms());
  sqlite3_bind_int64(st, 3, s->in_flight);
  sqlite3_bind_int64(st, 4, s->done);
  sqlite3_bind_int64(st, 5, s->failed);
  sqlite3_bind_int64(st, 6, s->epoch);
  int rc = run(db, st, "renewing the lease");
  if (rc != JOBQ_OK) return rc;
  if (sqlite3_changes(conn(db)->db) == 0)
    return jobq__fail(db, JOBQ_EEXPIRED,
                      "session '%s' has expired and was reaped: stop its jobs "
                      "and open a new session",
                      s->id);
  return JOBQ_OK;
}

static int sq_reap(jobq *db, int64_t guard_ms, int beat, int64_t *count) {
  int64_t now = now_ms(), last;
  if (count != NULL) *count = 0;
  sqlite3_stmt *st = stmt(db, ST_LAST_BEAT);
  if (st == NULL) return db->err;
  int rc = query_int(db, st, 0, &last, "reading the last heartbeat");
  if (rc != JOBQ_OK) return rc;
  if (guard_ms < 0) {
    if ((st = stmt(db, ST_LONGEST_LEASE)) == NULL) return db->err;
    rc = query_int(db, st, 0, &guard_ms, "reading the leases");
    if (rc != JOBQ_OK) return rc;
  }
  if (last > 0 && now - last > guard_ms) {
    /* Nobody heartbeated for a whole lease: the database (or this whole
     * machine) stalled, not every worker at once.  Give every session a
     * fresh lease instead of reaping them all; the renewal counts as a
     * heartbeat, so sessions that stay silent are reaped a lease later. */
    if ((st = stmt(db, ST_RENEW_ALL)) == NULL) return db->err;
    sqlite3_bind_int64(st, 1, now);
    rc = run(db, st, "renewing leases after a stall");
    beat = 1;
  } else {
    if ((st = stmt(db, ST_EXPIRED)) == NULL) return db->err;
    sqlite3_bind_int64(st, 1, now);
    char ids[64][JOBQ_SESSION_ID_LEN + 1];
    size_t n = 0;
    int r;
    /* A bounded share per call: the rest is reaped by the next one. */
    while (n < 64 && (r = row(db, st, "finding expired sessions")) == 1)
      snprintf(ids[n++], sizeof ids[0], "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    if (n < 64 && r < 0) return r;
    for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = end_session(db, ids[i], 1);
    if (count != NULL) *count = (int64_t)n;
  }
  if (rc == JOBQ_OK && beat) {
    if ((st = stmt(db, ST_SET_LAST_BEAT)) == NULL) return db->err;
    sqlite3_bind_int64(st, 1, now);
    rc = run(db, st, "recording the heartbeat");
  }
  return rc;
}

static int sq_cancel_list(jobq *db, const char *sid, int64_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  sqlite3_stmt *st = stmt(db, ST_CANCEL_LIST);
  if (st == NULL) return db->err;
  bind_text(st, 1, sid);
  int r;
  while ((r = row(db, st, "reading cancel requests")) == 1) {
    int64_t *v = realloc(*ids, (*n + 1) * sizeof *v);
    if (v == NULL) {
      sqlite3_reset(st);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    *ids = v;
    v[(*n)++] = sqlite3_column_int64(st, 0);
  }
  sqlite3_reset(st);
  return r < 0 ? r : JOBQ_OK;
}

/* ---------------------------------------------------------------- claims */

typedef struct cand {
  int64_t id, run_at;
  int priority;
} cand;

static int cand_cmp(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->priority != y->priority) return x->priority > y->priority ? -1 : 1;
  if (x->run_at != y->run_at) return x->run_at < y->run_at ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* Appends up to max claimable jobs of queue to *c. */
static int candidates(jobq *db, const char *queue, int64_t now, size_t max,
                      cand **c, size_t *n, size_t *cap) {
  sqlite3_stmt *st = stmt(db, ST_CANDIDATES);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  sqlite3_bind_int64(st, 2, now);
  sqlite3_bind_int64(st, 3, (int64_t)max);
  int r;
  while ((r = row(db, st, "finding ready jobs")) == 1) {
    if (*n == *cap) {
      size_t ncap = *cap ? *cap * 2 : 64;
      cand *v = realloc(*c, ncap * sizeof *v);
      if (v == NULL) {
        sqlite3_reset(st);
        return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      }
      *c = v;
      *cap = ncap;
    }
    (*c)[(*n)++] = (cand){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
                          sqlite3_column_int(st, 1)};
  }
  sqlite3_reset(st);
  return r < 0 ? r : JOBQ_OK;
}

static int check_session(jobq *db, jobq_session *s, int64_t now) {
  sqlite3_stmt *st = stmt(db, ST_SESSION_CHECK);
  if (st == NULL) return db->err;
  bind_text(st, 1, s->id);
  int r = row(db, st, "checking the session");
  if (r < 0) return r;
  int ok = r && sqlite3_column_int64(st, 0) == s->epoch &&
           sqlite3_column_int64(st, 1) >= now;
  sqlite3_reset(st);
  if (!ok)
    return jobq__fail(db, JOBQ_EEXPIRED,
                      "session '%s' has expired: stop its jobs and open a new session",
                      s->id);
  return JOBQ_OK;
}

static int sq_claim(jobq *db, jobq_session *s, const char *const *queues,
                    size_t nq, size_t max, jobq_job **jobs, size_t *n) {
  int64_t now = now_ms();
  int rc = check_session(db, s, now);
  if (rc != JOBQ_OK) return rc;
  cand *c = NULL;
  size_t nc = 0, cap = 0;
  sqlite3_stmt *st;
  if (nq == 0) {
    /* Every queue that is not paused. */
    if ((st = stmt(db, ST_QUEUES_ACTIVE)) == NULL) return db->err;
    char **names = NULL;
    size_t nn = 0;
    int r, failed = 0;
    while ((r = row(db, st, "listing queues")) == 1) {
      char **v = realloc(names, (nn + 1) * sizeof *v);
      if (v == NULL) {
        failed = 1;
        break;
      }
      names = v;
      names[nn++] = col_text(st, 0, &failed);
    }
    sqlite3_reset(st);
    rc = r < 0 ? r : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
    for (size_t i = 0; i < nn && rc == JOBQ_OK; i++)
      rc = candidates(db, names[i], now, max, &c, &nc, &cap);
    for (size_t i = 0; i < nn; i++) free(names[i]);
    free(names);
  } else {
    for (size_t i = 0; i < nq && rc == JOBQ_OK; i++) {
      int dup = 0;
      for (size_t j = 0; j < i; j++) dup |= strcmp(queues[i], queues[j]) == 0;
      if (dup) continue;
      if ((st = stmt(db, ST_QUEUE_PAUSED)) == NULL) {
        rc = db->err;
        break;
      }
      bind_text(st, 1, queues[i]);
      int64_t paused;
      rc = query_int(db, st, 1, &paused, "reading the queue");
      if (rc == JOBQ_OK && !paused) rc = candidates(db, queues[i], now, max, &c, &nc, &cap);
    }
  }
  if (rc != JOBQ_OK) {
    free(c);
    return rc;
  }
  if (nc > 1) qsort(c, nc, sizeof *c, cand_cmp);
  if (nc > max) nc = max;
  jobq_job *out = nc ? calloc(nc, sizeof *out) : NULL;
  if (nc && out == NULL) {
    free(c);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  size_t got = 0;
  int failed = 0;
  for (size_t i = 0; i < nc && rc == JOBQ_OK; i++) {
    if ((st = stmt(db, ST_CLAIM_ONE)) == NULL) {
      rc = db->err;
      break;
    }
    sqlite3_bind_int64(st, 1, c[i].id);
    bind_text(st, 2, s->id);
    sqlite3_bind_int64(st, 3, now);
    int r = row(db, st, "claiming a job");
    if (r < 0) {
      rc = r;
      break;
    }
    if (r == 0) continue;
    jobq_job *j = &out[got++];
    j->id = c[i].id;
    j->queue = col_text(st, 0, &failed);
    j->payload = col_blob(st, 1, &j->payload_len, &failed);
    j->attempt = sqlite3_column_int(st, 2);
    j->max_attempts = sqlite3_column_int(st, 3);
    j->priority = sqlite3_column_int(st, 4);
    j->key = col_text(st, 5, &failed);
    j->timeout_ms = sqlite3_column_int64(st, 6);
    j->prev_lost = sqlite3_column_int(st, 7);
    snprintf(j->claim, sizeof j->claim, "%s", (const char *)sqlite3_column_text(st, 8));
    sqlite3_reset(st);
  }
  free(c);
  if (rc == JOBQ_OK && failed) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (rc != JOBQ_OK) {
    jobq_jobs_free(out, got);
    return rc;
  }
  *jobs = out;
  *n = got;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- acks */

/* Was this exact acknowledgement already committed?  Sets a->already. */
static int ack_before(jobq *db, jobq_ack *a) {
  sqlite3_stmt *st = stmt(db, ST_ACK_DONE_BEFORE);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, a->id);
  bind_text(st, 2, a->claim);
  int r = row(db, st, "checking an earlier acknowledgement");
  if (r < 0) return r;
  if (r == 1) {
    a->outcome = jobq_state_parse((const char *)sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    /* A completion repeats only as done; a failure as dead or cancelled. */
    if ((a->kind == JOBQ_ACK_COMPLETE) == (a->outcome == JOBQ_STATE_DONE)) {
      a->status = JOBQ_OK;
      a->already = 1;
    }
    return JOBQ_OK;
  }
  if (a->kind == JOBQ_ACK_COMPLETE) return JOBQ_OK;
  if ((st = stmt(db, ST_ACK_READY_BEFORE)) == NULL) return db->err;
  sqlite3_bind_int64(st, 1, a->id);
  bind_text(st, 2, a->claim);
  r = row(db, st, "checking an earlier acknowledgement");
  if (r < 0) return r;
  sqlite3_reset(st);
  if (r == 1) {
    a->status = JOBQ_OK;
    a->already = 1;
    a->outcome = JOBQ_STATE_READY;
  }
  return JOBQ_OK;
}

static int sq_ack(jobq *db, jobq_session *s, jobq_ack *a) {
  sqlite3_stmt *st = stmt(db, ST_ACK_ROW);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, a->id);
  bind_text(st, 2, s->id);
  bind_text(st, 3, a->claim);
  int r = row(db, st, "reading the claimed job");
  if (r < 0) return r;
  if (r == 0) return ack_before(db, a);
  jobq_ack_row ar = {sqlite3_column_int(st, 0), sqlite3_column_int(st, 1),
                     sqlite3_column_int64(st, 2), sqlite3_column_int(st, 3)};
  sqlite3_reset(st);
  jobq_ack_plan p;
  jobq__ack_plan(&ar, a, jobq__rand(db), &p);
  int rc;
  if (p.state == JOBQ_STATE_READY) {
    if ((st = stmt(db, ST_ACK_REQUEUE)) == NULL) return db->err;
    sqlite3_bind_int64(st, 1, a->id);
    sqlite3_bind_int64(st, 2, now_ms());
    sqlite3_bind_int64(st, 3, p.delay_ms);
    sqlite3_bind_int(st, 4, p.spend ? 0 : 1);
    if (p.error != NULL)
      sqlite3_bind_text64(st, 5, p.error, p.error_len, SQLITE_STATIC, SQLITE_UTF8);
    rc = run(db, st, "returning the job to ready");
  } else {
    rc = archive(db, a->id, p.state, a->data, a->len, p.error, p.error_len);
  }
  if (rc == JOBQ_OK) {
    a->status = JOBQ_OK;
    a->outcome = p.state;
  }
  return rc;
}

static int sq_extend(jobq *db, jobq_session *s, const jobq_job *job, int64_t ms) {
  sqlite3_stmt *st = stmt(db, ST_EXTEND);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, job->id);
  bind_text(st, 2, s->id);
  bind_text(st, 3, job->claim);
  sqlite3_bind_int64(st, 4, now_ms());
  sqlite3_bind_int64(st, 5, ms);
  int r = row(db, st, "extending the job");
  if (r < 0) return r;
  int cancel = r && sqlite3_column_int(st, 0);
  sqlite3_reset(st);
  if (r == 0)
    return jobq__fail(db, JOBQ_ELOST,
                      "job %lld: claim '%s' is no longer held by this session",
                      (long long)job->id, job->claim);
  return cancel ? JOBQ_ECANCELLED : JOBQ_OK;
}

/* ---------------------------------------------------------------- inspection */

/* Reads one INFO_COLS row; with_data: payload and result follow. */
static void read_info(sqlite3_stmt *st, jobq_job_info *v, int with_data,
                      int64_t now, int *failed) {
  (void)now;
  memset(v, 0, sizeof *v);
  v->id = sqlite3_column_int64(st, 0);
  v->queue = col_text(st, 1, failed);
  v->state = jobq_state_parse((const char *)sqlite3_column_text(st, 2));
  v->priority = sqlite3_column_int(st, 3);
  v->run_at_ms = sqlite3_column_int64(st, 4);
  v->key = col_text(st, 5, failed);
  v->barrier = sqlite3_column_int(st, 6);
  v->unique_key = col_text(st, 7, failed);
  v->payload_len = (size_t)sqlite3_column_int64(st, 8);
  v->result_len = (size_t)sqlite3_column_int64(st, 9);
  v->attempts = sqlite3_column_int(st, 10);
  v->max_attempts = sqlite3_column_int(st, 11);
  v->timeout_ms = sqlite3_column_int64(st, 12);
  v->backoff_ms = sqlite3_column_int64(st, 13);
  v->session = col_text(st, 14, failed);
  v->claim = col_text(st, 15, failed);
  v->created_at_ms = sqlite3_column_int64(st, 16);
  v->claimed_at_ms = sqlite3_column_int64(st, 17);
  v->finished_at_ms = sqlite3_column_int64(st, 18);
  v->last_error = col_text(st, 19, failed);
  v->cancel_requested = sqlite3_column_int(st, 20);
  v->prev_lost = sqlite3_column_int(st, 21);
  if (with_data) {
    size_t len;
    v->payload = col_blob(st, 22, &len, failed);
    v->result = col_blob(st, 23, &len, failed);
  }
}

static int sq_show(jobq *db, int64_t id, jobq_job_info **out) {
  static const int which[] = {ST_SHOW_HOT, ST_SHOW_DONE};
  for (int i = 0; i < 2; i++) {
    sqlite3_stmt *st = stmt(db, which[i]);
    if (st == NULL) return db->err;
    sqlite3_bind_int64(st, 1, id);
    int r = row(db, st, "reading the job");
    if (r < 0) return r;
    if (r == 0) continue;
    jobq_job_info *v = malloc(sizeof *v);
    int failed = v == NULL;
    if (v != NULL) read_info(st, v, 1, 0, &failed);
    sqlite3_reset(st);
    if (failed) {
      jobq_info_free(v, v ? 1 : 0);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    *out = v;
    return JOBQ_OK;
  }
  return jobq__fail(db, JOBQ_ENOTFOUND, "no job with id %lld: never put, or pruned",
                    (long long)id);
}

/* Collects every row of st as job infos. */
static int read_infos(jobq *db, sqlite3_stmt *st, jobq_job_info **out, size_t *n) {
  size_t cap = 0;
  int r, failed = 0;
  while ((r = row(db, st, "listing jobs")) == 1) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 32;
      jobq_job_info *v = realloc(*out, cap * sizeof *v);
      if (v == NULL) {
        failed = 1;
        break;
      }
      *out = v;
    }
    read_info(st, &(*out)[(*n)++], 0, 0, &failed);
  }
  sqlite3_reset(st);
  if (r < 0 || failed) {
    jobq_info_free(*out, *n);
    *out = NULL;
    *n = 0;
    return r < 0 ? r : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  return JOBQ_OK;
}

static int sq_list(jobq *db, const jobq_list_opts *o, jobq_job_info **out, size_t *n) {
  int id = o->state == 0                          ? ST_LIST_ALL
           : o->state <= JOBQ_STATE_WAITING       ? ST_LIST_HOT
                                                  : ST_LIST_DONE;
  sqlite3_stmt *st = stmt(db, id);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, o->after_id);
  bind_text(st, 2, o->queue);
  sqlite3_bind_int64(st, 3, (int64_t)o->limit);
  if (o->state != 0) bind_text(st, 4, jobq_state_name(o->state));
  if (id == ST_LIST_HOT) {
    sqlite3_bind_int(st, 5, o->state == JOBQ_STATE_READY && o->scheduled);
    sqlite3_bind_int64(st, 6, now_ms());
  }
  return read_infos(db, st, out, n);
}

static int sq_stats(jobq *db, jobq_queue_stats **out, size_t *n) {
  sqlite3_stmt *st = stmt(db, ST_STATS_QUEUES);
  if (st == NULL) return db->err;
  jobq_queue_stats *v = NULL;
  size_t nv = 0;
  int r, failed = 0;
  while ((r = row(db, st, "reading queues")) == 1) {
    jobq_queue_stats *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_queue_stats *q = &v[nv++];
    memset(q, 0, sizeof *q);
    q->name = col_text(st, 0, &failed);
    q->paused = sqlite3_column_int(st, 1);
    q->key_policy = col_text(st, 2, &failed);
    q->done = sqlite3_column_int64(st, 3);
    q->dead = sqlite3_column_int64(st, 4);
    q->cancelled = sqlite3_column_int64(st, 5);
  }
  sqlite3_reset(st);
  int64_t now = now_ms();
  if (r >= 0 && !failed && (st = stmt(db, ST_STATS_HOT)) != NULL) {
    sqlite3_bind_int64(st, 1, now);
    while ((r = row(db, st, "counting jobs")) == 1) {
      const char *queue = (const char *)sqlite3_column_text(st, 0);
      const char *state = (const char *)sqlite3_column_text(st, 1);
      int due = sqlite3_column_int(st, 2);
      int64_t count = sqlite3_column_int64(st, 3);
      int64_t oldest = sqlite3_column_int64(st, 4);
      for (size_t i = 0; i < nv; i++) {
        if (strcmp(v[i].name ? v[i].name : "", queue) != 0) continue;
        if (strcmp(state, "running") == 0) v[i].running += count;
        else if (strcmp(state, "waiting") == 0) v[i].waiting += count;
        else if (!due) v[i].scheduled += count;
        else {
          v[i].ready += count;
          v[i].oldest_ready_ms = now - oldest > 0 ? now - oldest : 0;
        }
      }
    }
    sqlite3_reset(st);
  } else if (st == NULL) {
    r = db->err;
  }
  if (r < 0 || failed) {
    jobq_stats_free(v, nv);
    return r < 0 ? r : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

static int sq_sessions(jobq *db, jobq_session_info **out, size_t *n) {
  sqlite3_stmt *st = stmt(db, ST_SESSIONS);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, now_ms());
  jobq_session_info *v = NULL;
  size_t nv = 0;
  int r, failed = 0;
  while ((r = row(db, st, "listing sessions")) == 1) {
    jobq_session_info *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_session_info *x = &v[nv++];
    memset(x, 0, sizeof *x);
    x->id = col_text(st, 0, &failed);
    x->name = col_text(st, 1, &failed);
    x->host = col_text(st, 2, &failed);
    x->pid = sqlite3_column_int64(st, 3);
    x->epoch = sqlite3_column_int64(st, 4);
    x->started_at_ms = sqlite3_column_int64(st, 5);
    x->heartbeat_at_ms = sqlite3_column_int64(st, 6);
    x->expires_at_ms = sqlite3_column_int64(st, 7);
    x->lease_ms = sqlite3_column_int64(st, 8);
    x->in_flight = sqlite3_column_int64(st, 9);
    x->done = sqlite3_column_int64(st, 10);
    x->failed = sqlite3_column_int64(st, 11);
    x->claimed = sqlite3_column_int64(st, 12);
    x->expired = sqlite3_column_int(st, 13);
  }
  sqlite3_reset(st);
  if (r < 0 || failed) {
    jobq_sessions_free(v, nv);
    return r < 0 ? r : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- administration */

static int count_add(jobq *db, const char *queue, int done, int dead, int cancelled) {
  sqlite3_stmt *st = stmt(db, ST_COUNT_ADD);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  sqlite3_bind_int(st, 2, done);
  sqlite3_bind_int(st, 3, dead);
  sqlite3_bind_int(st, 4, cancelled);
  return run(db, st, "counting jobs");
}

static int unfinished_state(jobq *db, int64_t id, char *state, size_t len) {
  sqlite3_stmt *st = stmt(db, ST_HOT_STATE);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, id);
  int r = row(db, st, "reading the job");
  if (r == 1) snprintf(state, len, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_reset(st);
  return r;
}

static int sq_retry(jobq *db, int64_t id) {
  sqlite3_stmt *st = stmt(db, ST_DONE_ROW);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, id);
  int r = row(db, st, "reading the job");
  if (r < 0) return r;
  if (r == 0) {
    char state[16];
    r = unfinished_state(db, id, state, sizeof state);
    if (r < 0) return r;
    if (r == 1)
      return jobq__fail(db, JOBQ_ESTATE,
                        "job %lld is %s: only dead or cancelled jobs can be retried",
                        (long long)id, state);
    return jobq__fail(db, JOBQ_ENOTFOUND, "no job with id %lld: never put, or pruned",
                      (long long)id);
  }
  int failed = 0;
  int outcome = jobq_state_parse((const char *)sqlite3_column_text(st, 0));
  char *queue = col_text(st, 1, &failed);
  char *key = col_text(st, 2, &failed);
  char *unique = col_text(st, 3, &failed);
  int barrier = sqlite3_column_int(st, 4);
  sqlite3_reset(st);
  int rc = failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc == JOBQ_OK && outcome == JOBQ_STATE_DONE)
    rc = jobq__fail(db, JOBQ_ESTATE,
                    "job %lld is done: only dead or cancelled jobs can be retried",
                    (long long)id);
  if (rc == JOBQ_OK && unique != NULL && (st = stmt(db, ST_UNIQUE_FIND)) != NULL) {
    bind_text(st, 1, queue);
    bind_text(st, 2, unique);
    int64_t holder;
    rc = query_int(db, st, 0, &holder, "checking the unique key");
    if (rc == JOBQ_OK && holder != 0)
      rc = jobq__fail(db, JOBQ_ESTATE,
                      "job %lld cannot be retried: its unique key '%s' is held by "
                      "unfinished job %lld",
                      (long long)id, unique, (long long)holder);
  }
  /* A dead head that blocks its key becomes the key's head again. */
  if (rc == JOBQ_OK && (st = stmt(db, ST_UNBLOCK)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    rc = run(db, st, "unblocking the key");
  }
  int wait = 0;
  if (rc == JOBQ_OK) rc = must_wait(db, queue, key, barrier, id, &wait);
  if (rc == JOBQ_OK && (st = stmt(db, ST_UNARCHIVE)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now_ms());
    bind_text(st, 3, wait ? "waiting" : "ready");
    rc = run(db, st, "retrying the job");
  }
  if (rc == JOBQ_OK && (st = stmt(db, ST_DELETE_DONE)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    rc = run(db, st, "retrying the job");
  }
  if (rc == JOBQ_OK)
    rc = count_add(db, queue, 0, outcome == JOBQ_STATE_DEAD ? -1 : 0,
                   outcome == JOBQ_STATE_CANCELLED ? -1 : 0);
  if (rc == JOBQ_OK && db->err != JOBQ_OK) rc = db->err;
  free(queue);
  free(key);
  free(unique);
  return rc;
}

static int sq_retry_dead(jobq *db, const char *queue, int64_t *count) {
  sqlite3_stmt *st = stmt(db, ST_DEAD_IDS);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  int64_t *ids = NULL;
  size_t n = 0;
  int r;
  while ((r = row(db, st, "listing dead jobs")) == 1) {
    int64_t *v = realloc(ids, (n + 1) * sizeof *v);
    if (v == NULL) {
      sqlite3_reset(st);
      free(ids);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    ids = v;
    ids[n++] = sqlite3_column_int64(st, 0);
  }
  sqlite3_reset(st);
  int rc = r < 0 ? r : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = sq_retry(db, ids[i]);
  free(ids);
  if (rc == JOBQ_OK) *count = (int64_t)n;
  return rc;
}

static int sq_cancel(jobq *db, int64_t id, int *now) {
  char state[16];
  int r = unfinished_state(db, id, state, sizeof state);
  if (r < 0) return r;
  sqlite3_stmt *st;
  if (r == 1) {
    if (strcmp(state, "running") == 0) {
      if ((st = stmt(db, ST_REQUEST_CANCEL)) == NULL) return db->err;
      sqlite3_bind_int64(st, 1, id);
      *now = 0;
      return run(db, st, "requesting the cancel");
    }
    *now = 1;
    const char *e = "cancelled by an operator";
    return archive(db, id, JOBQ_STATE_CANCELLED, NULL, 0, e, strlen(e));
  }
  if ((st = stmt(db, ST_DONE_ROW)) == NULL) return db->err;
  sqlite3_bind_int64(st, 1, id);
  r = row(db, st, "reading the job");
  if (r < 0) return r;
  if (r == 0)
    return jobq__fail(db, JOBQ_ENOTFOUND, "no job with id %lld: never put, or pruned",
                      (long long)id);
  int failed = 0;
  int outcome = jobq_state_parse((const char *)sqlite3_column_text(st, 0));
  char *queue = col_text(st, 1, &failed);
  char *key = col_text(st, 2, &failed);
  sqlite3_reset(st);
  int rc = failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  int blocking = 0;
  if (rc == JOBQ_OK && (st = stmt(db, ST_BLOCKED_BY)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    blocking = row(db, st, "reading the key");
    sqlite3_reset(st);
    if (blocking < 0) rc = blocking;
  }
  if (rc == JOBQ_OK && !blocking)
    rc = jobq__fail(db, JOBQ_ESTATE, "job %lld is already %s: nothing to cancel",
                    (long long)id, jobq_state_name(outcome));
  /* A dead head blocking its key: mark it cancelled, let the key proceed. */
  if (rc == JOBQ_OK && (st = stmt(db, ST_UNBLOCK)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    rc = run(db, st, "unblocking the key");
  }
  if (rc == JOBQ_OK && (st = stmt(db, ST_MARK_CANCELLED)) != NULL) {
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now_ms());
    rc = run(db, st, "cancelling the job");
  }
  if (rc == JOBQ_OK) rc = count_add(db, queue, 0, -1, 1);
  if (rc == JOBQ_OK && db->err != JOBQ_OK) rc = db->err;
  if (rc == JOBQ_OK) rc = promote_key(db, queue, key);
  if (rc == JOBQ_OK) *now = 1;
  free(queue);
  free(key);
  return rc;
}

static int sq_set_queue(jobq *db, const char *queue, int paused, const char *policy) {
  int rc = ensure_queue(db, queue);
  if (rc != JOBQ_OK) return rc;
  sqlite3_stmt *st = stmt(db, paused >= 0 ? ST_SET_PAUSED : ST_SET_POLICY);
  if (st == NULL) return db->err;
  bind_text(st, 1, queue);
  if (paused >= 0)
    sqlite3_bind_int(st, 2, paused);
  else
    bind_text(st, 2, policy);
  return run(db, st, "changing the queue");
}

static int sq_prune(jobq *db, int64_t older_than_ms, int64_t *count) {
  int64_t before = now_ms() - older_than_ms;
  sqlite3_stmt *st = stmt(db, ST_PRUNE_COUNT);
  if (st == NULL) return db->err;
  sqlite3_bind_int64(st, 1, before);
  typedef struct {
    char *queue;
    int64_t done, dead, cancelled;
  } qc;
  qc *v = NULL;
  size_t n = 0;
  int r, failed = 0;
  while ((r = row(db, st, "counting prunable jobs")) == 1) {
    qc *w = realloc(v, (n + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    v[n].queue = col_text(st, 0, &failed);
    v[n].done = sqlite3_column_int64(st, 1);
    v[n].dead = sqlite3_column_int64(st, 2);
    v[n].cancelled = sqlite3_column_int64(st, 3);
    n++;
  }
  sqlite3_reset(st);
  int rc = r < 0 ? r : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  *count = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if ((st = stmt(db, ST_COUNT_ADD)) == NULL) {
      rc = db->err;
      break;
    }
    bind_text(st, 1, v[i].queue);
    sqlite3_bind_int64(st, 2, -v[i].done);
    sqlite3_bind_int64(st, 3, -v[i].dead);
    sqlite3_bind_int64(st, 4, -v[i].cancelled);
    rc = run(db, st, "counting pruned jobs");
    *count += v[i].done + v[i].dead + v[i].cancelled;
  }
  for (size_t i = 0; i < n; i++) free(v[i].queue);
  free(v);
  if (rc == JOBQ_OK && (st = stmt(db, ST_PRUNE)) != NULL) {
    sqlite3_bind_int64(st, 1, before);
    rc = run(db, st, "pruning the archive");
  } else if (rc == JOBQ_OK) {
    rc = db->err;
  }
  return rc;
}

static int sq_epoch_bump(jobq *db, int64_t *epoch) {
  sqlite3_stmt *st = stmt(db, ST_ALL_SESSIONS);
  if (st == NULL) return db->err;
  char (*ids)[JOBQ_SESSION_ID_LEN + 1] = NULL;
  size_t n = 0;
  int r;
  while ((r = row(db, st, "listing sessions")) == 1) {
    void *v = realloc(ids, (n + 1) * sizeof *ids);
    if (v == NULL) {
      sqlite3_reset(st);
      free(ids);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    ids = v;
    snprintf(ids[n++], sizeof ids[0], "%s", (const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_reset(st);
  int rc = r < 0 ? r : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = end_session(db, ids[i], 1);
  free(ids);
  if (rc != JOBQ_OK) return rc;
  /* Epochs only rise, even across restores of older backups: the new one
   * is at least the current Unix time in seconds. */
  if ((st = stmt(db, ST_BUMP)) == NULL) return db->err;
  sqlite3_bind_int64(st, 1, now_ms() / 1000);
  return query_int(db, st, 0, epoch, "bumping the epoch");
}

/* ---------------------------------------------------------------- wake-ups */

/* PRAGMA data_version: changes when another connection commits. */
static int data_version(jobq *db, int64_t *v) {
  sqlite3_stmt *st = stmt(db, ST_DATA_VERSION);
  if (st == NULL) return db->err;
  return query_int(db, st, 0, v, "reading the data version");
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

static int sq_changed(jobq *db) {
  sq *c = conn(db);
  if (c->watch_fd >= 0) {
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(c->watch_fd, buf, sizeof buf) > 0) {
    }
  }
  int64_t v = 0;
  int rc = data_version(db, &v);
  if (rc != JOBQ_OK) return rc;
  int changed = v != c->data_version;
  c->data_version = v;
  return changed;
}

const jobq_store jobq__store_sqlite = {
    .scheme = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .native = sq_native,
    .migrate = sq_migrate,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .identity = sq_identity,
    .put = sq_put,
    .session_insert = sq_session_insert,
    .session_delete = sq_session_delete,
    .heartbeat = sq_heartbeat,
    .reap = sq_reap,
    .cancel_list = sq_cancel_list,
    .claim = sq_claim,
    .ack = sq_ack,
    .extend = sq_extend,
    .show = sq_show,
    .list = sq_list,
    .stats = sq_stats,
    .sessions = sq_sessions,
    .retry = sq_retry,
    .retry_dead = sq_retry_dead,
    .cancel = sq_cancel,
    .set_queue = sq_set_queue,
    .prune = sq_prune,
    .epoch_bump = sq_epoch_bump,
    .watch = sq_watch,
    .changed = sq_changed,
};
