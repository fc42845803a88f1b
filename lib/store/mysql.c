/*
 * mysql.c - the MariaDB / MySQL store (InnoDB): one database shared by
 * workers on many machines, through libmariadb, which speaks to MariaDB
 * (10.6 or newer) and MySQL (8.0.1 or newer) alike.  Older servers have no
 * SKIP LOCKED and are refused by version.
 *
 * Isolation.  jobq's connections run READ COMMITTED (set per session):
 * every statement sees what committed before it began, as on PostgreSQL,
 * which the named locks of lib/order.c rely on: a statement run after
 * taking a lock sees the work of whoever held it before.  Under InnoDB's
 * default REPEATABLE READ, reads would come from the transaction's first
 * snapshot and miss exactly that work; READ COMMITTED also takes no gap
 * locks on searches, so claimers and acknowledgers lock the rows they touch
 * and nothing between them.
 *
 * Named locks.  InnoDB has no shared advisory locks that end with the
 * transaction (GET_LOCK() is exclusive, held by the connection, and its
 * deadlocks with row locks go undetected), so a named lock is a row of
 * jobq_locks, keyed by the lock's name ("q:QUEUE", "b:QUEUE",
 * "k:QUEUE/KEY"): SELECT ... LOCK IN SHARE MODE takes it shared, FOR UPDATE
 * exclusive, both held to the end of the transaction, with InnoDB's
 * deadlock detection over them and the job rows alike.  A missing row is
 * inserted first (the insert holds it exclusively until commit).  Rows of
 * ordering keys stay; deleting any of them at any time is safe (docs/sql.md).
 *
 * The clock is UTC_TIMESTAMP(6), fixed for the duration of each statement,
 * in Unix milliseconds; sessions also run with time_zone '+00:00' and a
 * strict sql_mode.  Queue names, keys, sessions and claims are utf8mb4 with
 * a binary NO PAD collation (utf8mb4_nopad_bin on MariaDB,
 * utf8mb4_0900_bin on MySQL): compared byte for byte, trailing spaces
 * included.  Payloads and results are LONGBLOBs.
 *
 * A claim is one short transaction: per queue, SELECT ... ORDER BY
 * priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED over the claim
 * index (queue, state, priority DESC, run_at, id), which serves the ORDER BY
 * without a sort on MariaDB 10.8+ and MySQL 8 (descending index keys), then
 * one UPDATE for up to 32 claimed rows, each with its own claim token made
 * here from random bytes.  Batches of plain jobs go in as multi-row INSERTs
 * when the server hands out consecutive ids (innodb_autoinc_lock_mode 0 or
 * 1), keyed ones too, their keys locked and looked at 32 to a statement;
 * batches of completions move to the archive 32 at a time, keyed ones
 * too when the batch has nothing else, each key then handed on.
 *
 * Errors: a deadlock (1213) has rolled the whole transaction back; a lock
 * wait timeout (1205) only the statement, so the store rolls back the rest
 * at once.  Both set db->retry, and the library runs its transaction again
 * after a jittered pause; inside a caller's transaction (jobq_begin) the
 * handle refuses everything but a rollback until the caller starts again.
 * A lost connection is made again (with its prepared statements) before
 * the next transaction.
 *
 * Every value is bound (prepared statements, made once per connection).
 * Connections use CLIENT_FOUND_ROWS, so that an UPDATE counts the rows it
 * matched, not only those it changed: the heartbeat and extend fences
 * depend on it.  There is no NOTIFY: workers poll.
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store/libmariadb.h"

#define MARIADB_MIN 100600L /* 10.6: SKIP LOCKED */
#define MYSQL_MIN 80001L    /* 8.0.1: SKIP LOCKED */
#define DEFAULT_PORT 3306
#define CHUNK 32            /* rows per claim-marking and archiving statement */

/* ---------------------------------------------------------------- schema */

/* {bin} is the binary NO PAD collation of the server. */
static const jobq_step v1_steps[] = {
    {"CREATE TABLE IF NOT EXISTS jobq_queues ("
    "  name VARCHAR(63) NOT NULL PRIMARY KEY,"
    "  paused SMALLINT NOT NULL DEFAULT 0,"
    "  key_policy VARCHAR(8) NOT NULL DEFAULT 'block' CHECK (key_policy IN ('block','skip')),"
    "  created_at BIGINT NOT NULL"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_counts ("
    "  queue VARCHAR(63) NOT NULL,"
    "  shard SMALLINT NOT NULL,"
    "  n_done BIGINT NOT NULL DEFAULT 0,"
    "  n_dead BIGINT NOT NULL DEFAULT 0,"
    "  n_cancelled BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (queue, shard)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_sessions ("
    "  id VARCHAR(32) NOT NULL PRIMARY KEY,"
    "  epoch BIGINT NOT NULL,"
    "  name VARCHAR(255) NOT NULL,"
    "  host VARCHAR(255) NOT NULL,"
    "  pid BIGINT NOT NULL,"
    "  started_at BIGINT NOT NULL,"
    "  heartbeat_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  lease_ms BIGINT NOT NULL,"
    "  in_flight BIGINT NOT NULL DEFAULT 0,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  failed BIGINT NOT NULL DEFAULT 0,"
    "  INDEX jobq_sessions_expires (expires_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {/* The claim index: the claim's WHERE (queue, state) and its ORDER BY. */
    "CREATE TABLE IF NOT EXISTS jobq_jobs ("
    "  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  priority INT NOT NULL DEFAULT 0,"
    "  run_at BIGINT NOT NULL,"
    "  state VARCHAR(8) NOT NULL CHECK (state IN ('ready','running','waiting')),"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL DEFAULT 0,"
    "  unique_key VARCHAR(255),"
    "  payload LONGBLOB NOT NULL,"
    "  attempts INT NOT NULL DEFAULT 0,"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL DEFAULT 0,"
    "  backoff_ms BIGINT NOT NULL,"
    "  session VARCHAR(32),"
    "  claim VARCHAR(32),"
    "  claimed_at BIGINT,"
    "  deadline_at BIGINT,"
    "  created_at BIGINT NOT NULL,"
    "  last_error MEDIUMTEXT,"
    "  cancel_requested SMALLINT NOT NULL DEFAULT 0,"
    "  prev_lost SMALLINT NOT NULL DEFAULT 0,"
    "  started SMALLINT NOT NULL DEFAULT 1,"
    "  INDEX jobq_jobs_claim (queue, state, priority DESC, run_at, id),"
    "  INDEX jobq_jobs_session (session),"
    "  INDEX jobq_jobs_key (queue, order_key, state, id),"
    "  INDEX jobq_jobs_barrier (queue, barrier, id),"
    "  INDEX jobq_jobs_queue (queue, id),"
    "  UNIQUE INDEX jobq_jobs_unique (queue, unique_key)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_done ("
    "  id BIGINT NOT NULL PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  priority INT NOT NULL,"
    "  run_at BIGINT NOT NULL,"
    "  outcome VARCHAR(9) NOT NULL CHECK (outcome IN ('done','dead','cancelled')),"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL,"
    "  unique_key VARCHAR(255),"
    "  payload LONGBLOB NOT NULL,"
    "  result LONGBLOB,"
    "  attempts INT NOT NULL,"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL,"
    "  backoff_ms BIGINT NOT NULL,"
    "  session VARCHAR(32),"
    "  claim VARCHAR(32),"
    "  created_at BIGINT NOT NULL,"
    "  claimed_at BIGINT,"
    "  finished_at BIGINT NOT NULL,"
    "  last_error MEDIUMTEXT,"
    "  prev_lost SMALLINT NOT NULL DEFAULT 0,"
    "  INDEX jobq_done_finished (finished_at),"
    "  INDEX jobq_done_outcome (outcome, queue, id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_blocked ("
    "  queue VARCHAR(63) NOT NULL,"
    "  order_key VARCHAR(255) NOT NULL,"
    "  job_id BIGINT NOT NULL,"
    "  PRIMARY KEY (queue, order_key),"
    "  INDEX jobq_blocked_job (job_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {/* The named locks of lib/order.c, one row each. */
    "CREATE TABLE IF NOT EXISTS jobq_locks ("
    "  name VARBINARY(330) NOT NULL PRIMARY KEY"
    ") ENGINE=InnoDB", NULL},
    {NULL, NULL},
};

/* Version 2: the sessions' figures per minute (lib/tally.c) and the
 * attempts that ended without finishing their job. */
static const jobq_step v2_steps[] = {
    {"CREATE TABLE IF NOT EXISTS jobq_tally ("
    "  at_minute BIGINT NOT NULL,"
    "  session VARCHAR(32) NOT NULL,"
    "  queue VARCHAR(63) NOT NULL,"
    "  claimed BIGINT NOT NULL DEFAULT 0,"
    "  empty_claims BIGINT NOT NULL DEFAULT 0,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  failed BIGINT NOT NULL DEFAULT 0,"
    "  retried BIGINT NOT NULL DEFAULT 0,"
    "  dead BIGINT NOT NULL DEFAULT 0,"
    "  cancelled BIGINT NOT NULL DEFAULT 0,"
    "  wait_ms BIGINT NOT NULL DEFAULT 0,"
    "  w0 BIGINT NOT NULL DEFAULT 0,"
    "  w1 BIGINT NOT NULL DEFAULT 0,"
    "  w2 BIGINT NOT NULL DEFAULT 0,"
    "  w3 BIGINT NOT NULL DEFAULT 0,"
    "  w4 BIGINT NOT NULL DEFAULT 0,"
    "  w5 BIGINT NOT NULL DEFAULT 0,"
    "  w6 BIGINT NOT NULL DEFAULT 0,"
    "  w7 BIGINT NOT NULL DEFAULT 0,"
    "  w8 BIGINT NOT NULL DEFAULT 0,"
    "  w9 BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (at_minute, session, queue)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_attempts ("
    "  id BIGINT AUTO_INCREMENT PRIMARY KEY,"
    "  job_id BIGINT NOT NULL,"
    "  attempt INTEGER NOT NULL,"
    "  outcome VARCHAR(255) NOT NULL,"
    "  error TEXT,"
    "  session VARCHAR(255),"
    "  host VARCHAR(255),"
    "  claimed_at BIGINT,"
    "  ended_at BIGINT NOT NULL,"
    "  INDEX jobq_attempts_job (job_id),"
    "  INDEX jobq_attempts_ended (ended_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};

/* Version 3: the checks that no writer may pass, whatever its rights: a
 * running job has a session, and times are in the one range of jobq.h. */
#define CHECK_MADE(NAME)                                                          \
  "SELECT count(*) FROM information_schema.TABLE_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = " \
  "DATABASE() AND TABLE_NAME = 'jobq_jobs' AND CONSTRAINT_NAME = '" NAME "'"
static const jobq_step v3_steps[] = {
    {"ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_claimed CHECK (state <> 'running' OR "
     "session IS NOT NULL)",
     CHECK_MADE("jobq_jobs_claimed")},
    {"ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_times CHECK (run_at BETWEEN 0 AND "
     "253402300799999 AND timeout_ms BETWEEN 0 AND 3153600000000)",
     CHECK_MADE("jobq_jobs_times")},
    {NULL, NULL},
};

/* Version 4: the stall guard's look (lib/session.c) and the horizon of
 * pruned jobs (lib/mark.c), in one change. */
static const jobq_step v4_steps[] = {
    {"ALTER TABLE jobq_meta ADD COLUMN guard_at BIGINT NOT NULL DEFAULT 0, ADD COLUMN "
     "pruned_before BIGINT NOT NULL DEFAULT 0",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_meta' AND COLUMN_NAME = 'guard_at'"},
    {NULL, NULL},
};

/* Version 5: the schedules of periodic jobs (lib/cron.c). */
static const jobq_step v5_steps[] = {{
    "CREATE TABLE IF NOT EXISTS jobq_cron ("
    "  name VARCHAR(63) NOT NULL PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  spec VARCHAR(255) NOT NULL,"
    "  tz VARCHAR(255) NOT NULL,"
    "  payload LONGBLOB NOT NULL,"
    "  priority INT NOT NULL,"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL,"
    "  unique_key VARCHAR(255),"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL,"
    "  backoff_ms BIGINT NOT NULL,"
    "  skip_missed SMALLINT NOT NULL,"
    "  paused SMALLINT NOT NULL,"
    "  next_at BIGINT NOT NULL,"
    "  last_at BIGINT,"
    "  last_error TEXT,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  INDEX jobq_cron_next (next_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL}, {NULL, NULL}};
static const jobq_step meta_steps[] = {{"CREATE TABLE IF NOT EXISTS jobq_meta ("
                                        "  id INT NOT NULL PRIMARY KEY CHECK (id = 1),"
                                        "  version INT NOT NULL,"
                                        "  queue_id VARCHAR(36) NOT NULL,"
                                        "  epoch BIGINT NOT NULL,"
                                        "  created_at BIGINT NOT NULL"
                                        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}",
                                        NULL},
                                       {NULL, NULL}};
/* The steps of lib/migrate.c.  Every change of a table commits at once:
 * each step may run again after an interrupted init (IF NOT EXISTS, or
 * its check), and the version moves after each version's steps. */
static const jobq_step *const versions[] = {meta_steps, v1_steps, v2_steps, v3_steps, v4_steps,
                                          v5_steps};
_Static_assert(sizeof versions / sizeof versions[0] == JOBQ_SCHEMA_VERSION + 1,
               "one migration per version");

/* ---------------------------------------------------------------- statements */

/* This store's own statements, numbered after lib/sql.h's. */
enum {
  MY_LOCK_S = JOBQ_STMT_COUNT,
  MY_LOCK_X,
  MY_LOCK_ADD,
  MY_LOCK_KEYS,
  MY_LOCK_ADD_KEYS,
  MY__END
};

/* What each statement does, in words, for messages. */
static const char *const own_whats[] = {
    "taking a queue's lock", "taking a queue's lock", "taking a queue's lock",
    "taking the keys' locks", "taking the keys' locks"};
_Static_assert(sizeof own_whats / sizeof own_whats[0] == MY__END - JOBQ_STMT_COUNT,
               "words for each statement");

static const char *stmt_what(int id) {
  return id < JOBQ_STMT_COUNT ? jobq__sql_what(id) : own_whats[id - JOBQ_STMT_COUNT];
}

/* A growing string; on ENOMEM it turns NULL and stays so. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s) {
  if (b->p == NULL && b->cap != 0) return;
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2 + 64;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      free(b->p);
      *b = (sbuf){NULL, 0, 1};
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
}

/* Appends count parameters from ?from on, each as "PRE?N", separated by
 * sep. */
static void sb_each(sbuf *b, int from, int count, const char *sep, const char *pre) {
  char p[16];
  for (int i = 0; i < count; i++) {
    if (i > 0) sb_add(b, sep);
    sb_add(b, pre);
    snprintf(p, sizeof p, "?%d", from + i);
    sb_add(b, p);
  }
}

/* Appends "?from, ?from+1, ..." (count of them). */
static void sb_params(sbuf *b, int from, int count) { sb_each(b, from, count, ", ", ""); }

/* The text of own statement id in the common notation of lib/sql.h: a
 * new string, or NULL when out of memory. */
static char *own_text(int id) {
  sbuf b = {0};
  switch (id) {
    case MY_LOCK_S:
      sb_add(&b, "SELECT 1 FROM jobq_locks WHERE name = ?1 LOCK IN SHARE MODE");
      break;
    case MY_LOCK_X:
      sb_add(&b, "SELECT 1 FROM jobq_locks WHERE name = ?1 FOR UPDATE");
      break;
    case MY_LOCK_ADD:
      sb_add(&b, "INSERT IGNORE INTO jobq_locks(name) VALUES (?1)");
      break;
    case MY_LOCK_KEYS:
      /* ?1..?32 the locks' names, in name order (NULL: none). */
      sb_add(&b, "SELECT name FROM jobq_locks FORCE INDEX (PRIMARY) WHERE name IN (");
      sb_params(&b, 1, CHUNK);
      sb_add(&b, ") ORDER BY name FOR UPDATE");
      break;
    case MY_LOCK_ADD_KEYS:
      /* ?1..?32 the names, in name order (the last repeated to fill). */
      sb_add(&b, "INSERT IGNORE INTO jobq_locks(name) VALUES ");
      sb_each(&b, 1, CHUNK, "), ", "(");
      sb_add(&b, ")");
      break;
    default:
      free(b.p);
      return NULL;
  }
  return b.p;
}


/* ---------------------------------------------------------------- state */

typedef struct stmt {
  MYSQL_STMT *st;
  int *order;     /* the argument index of each '?' */
  size_t norder;
  int busy;       /* a cursor over its rows is open */
} stmt;

typedef struct my {
  MYSQL *conn;
  const char *redacted;        /* the URL for messages (db's) */
  /* What connecting needs, kept for reconnecting. */
  char *user, *password, *dbname, *socket;
  char *sslca, *sslcert, *sslkey;
  int sslmode;                 /* 0 disable, 1 require, 2 verify */
  char **hosts;
  unsigned *ports;
  size_t nhosts;
  unsigned connect_timeout_s;
  unsigned lock_wait_s;
  int64_t statement_timeout_ms;
  /* What the server is. */
  int mariadb;
  long version;                /* major * 10000 + minor * 100 + patch */
  const char *collation;
  unsigned long max_packet;    /* max_allowed_packet */
  int broken;                  /* the connection is lost: make it again */
  int aborted;                 /* the server ended the caller's transaction */
  stmt stmts[MY__END];
  int64_t changes;
  int64_t insert_id;
} my;

struct jobq_rows {
  stmt *s;                     /* its cached statement; NULL: st is its own */
  MYSQL_STMT *st;
  unsigned ncols;
  MYSQL_BIND *bind;
  unsigned long *len, *cap;
  my_bool *null, *err;
  char **buf;
};

static my *conn(jobq *db) { return db->conn; }

/* ---------------------------------------------------------------- errors */

static int is_conn_error(unsigned err) {
  switch (err) {
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_COMMANDS_OUT_OF_SYNC:
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
    case ER_NET_PACKET_TOO_LARGE:
    case 4031: /* MySQL: disconnected for inactivity */
      return 1;
  }
  return 0;
}

/* After the server ended the transaction (a deadlock), or before we end it
 * (explicit: a lock wait timeout, which undid only the statement).  Inside
 * a caller's transaction, a new one takes its place, so that the caller's
 * further statements are not committed one by one: the handle refuses
 * everything but a rollback until then. */
static void transaction_lost(jobq *db, int explicit) {
  my *c = conn(db);
  if (explicit) mysql_real_query(c->conn, "ROLLBACK", 8);
  if (db->txn_depth > 1) {
    mysql_real_query(c->conn, "START TRANSACTION", 17);
    c->aborted = 1;
  }
}

/* Refusals that will not heal by trying again: a wrong password or user,
 * a database that does not exist, a missing privilege. */
static int is_denied(unsigned err) {
  switch (err) {
    case ER_DBACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_ERROR:
    case ER_BAD_DB_ERROR:
    case ER_HOST_NOT_PRIVILEGED:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case ER_PROCACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_NO_PASSWORD_ERROR:
    case 1820: /* ER_MUST_CHANGE_PASSWORD */
    case 3118: /* MySQL: ER_ACCOUNT_HAS_BEEN_LOCKED */
    case 4151: /* MariaDB: ER_ACCOUNT_HAS_BEEN_LOCKED */
      return 1;
  }
  return 0;
}

/* Records a failed statement as a jobq error, with retry set where running
 * the whole transaction again may succeed. */
static int my_error(jobq *db, unsigned err, const char *msg, const char *what) {
  my *c = conn(db);
  if (msg == NULL || *msg == '\0') msg = "no message";
  if (is_conn_error(err)) {
    c->broken = 1;
    if (err == ER_NET_PACKET_TOO_LARGE)
      return jobq__fail(db, JOBQ_ETOOBIG,
                        "%s: a value is larger than max_allowed_packet of '%s' "
                        "(%lu bytes): expected a smaller payload, or a larger "
                        "max_allowed_packet on the server",
                        what, c->redacted, c->max_packet);
    return jobq__fail(db, JOBQ_ECONN, "%s: lost the connection to '%s': %s", what,
                      c->redacted, msg);
  }
  switch (err) {
    case ER_LOCK_DEADLOCK:
      db->retry = 1;
      transaction_lost(db, 0);
      return jobq__fail(db, JOBQ_EBUSY,
                        "%s: deadlock with another transaction, which the server "
                        "ended by rolling this one back: try again",
                        what);
    case ER_LOCK_WAIT_TIMEOUT:
      db->retry = 1;
      transaction_lost(db, 1);
      return jobq__fail(db, JOBQ_EBUSY,
                        "%s: waited longer than lock_wait_timeout (%us) for a lock "
                        "that another transaction holds: try again",
                        what, c->lock_wait_s);
    case 1969: /* MariaDB: max_statement_time exceeded */
    case 3024: /* MySQL: max_execution_time exceeded */
    case ER_QUERY_INTERRUPTED:
      return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
    case ER_OPTION_PREVENTS_STATEMENT:
    case ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION:
    case 1836: /* ER_READ_ONLY_MODE */
      /* A primary turned read-only for a switchover: with a host list,
       * the next transaction connects again to the host that now takes
       * writes (connect_any() skips read-only ones). */
      if (c->nhosts > 1) c->broken = 1;
      return jobq__fail(db, JOBQ_EREADONLY, "%s: '%s' is read-only: %s", what,
                        c->redacted, msg);
    case ER_CON_COUNT_ERROR:
      return jobq__fail(db, JOBQ_ECONN, "%s: '%s' has too many connections: %s", what,
                        c->redacted, msg);
    case ER_DISK_FULL:
    case ER_RECORD_FILE_FULL:
      return jobq__fail(db, JOBQ_EDB, "%s: the disk of '%s' is full: %s", what,
                        c->redacted, msg);
    case ER_DBACCESS_DENIED_ERROR:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case ER_PROCACCESS_DENIED_ERROR: {
      /* The roles of my_roles(): jobq_DATABASE_reader and so on. */
      char prefix[96];
      snprintf(prefix, sizeof prefix, "jobq_%s_", c->dbname);
      return jobq__denied(db, what, msg, prefix);
    }
  }
  if (is_denied(err)) return jobq__fail(db, JOBQ_EDENIED, "%s: %s (error %u)", what, msg, err);
  return jobq__fail(db, JOBQ_EDB, "%s: %s (error %u)", what, msg, err);
}

static int conn_fail(jobq *db, const char *what) {
  my *c = conn(db);
  return my_error(db, mysql_errno(c->conn), mysql_error(c->conn), what);
}

static int stmt_fail(jobq *db, MYSQL_STMT *st, const char *what) {
  return my_error(db, mysql_stmt_errno(st), mysql_stmt_error(st), what);
}

/* Runs SQL without parameters or rows (transaction control, settings). */
static int run_plain(jobq *db, const char *sql, const char *what) {
  my *c = conn(db);
  if (mysql_real_query(c->conn, sql, strlen(sql)) != 0) return conn_fail(db, what);
  MYSQL_RES *res = mysql_store_result(c->conn);
  if (res != NULL) mysql_free_result(res);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- executor */

static void stmt_release(stmt *s) {
  if (s->st != NULL) mysql_stmt_close(s->st);
  free(s->order);
  memset(s, 0, sizeof *s);
}

static void stmts_release(my *c) {
  for (int i = 0; i < MY__END; i++) stmt_release(&c->stmts[i]);
}

/* Prepares statement id into *s. */
static int prepare(jobq *db, int id, stmt *s) {
  my *c = conn(db);
  char *text;
  if (id < JOBQ_STMT_COUNT) {
    text = jobq__sql_text(JOBQ_DIALECT_MYSQL, id, &s->order, &s->norder);
  } else {
    char *common = own_text(id);
    text = common ? jobq__sql_spell(JOBQ_DIALECT_MYSQL, common, &s->order, &s->norder)
                  : NULL;
    free(common);
  }
  if (text == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  /* MariaDB checks privileges here: the message says what it was for. */
  const char *what = stmt_what(id);
  s->st = mysql_stmt_init(c->conn);
  int rc = JOBQ_OK;
  if (s->st == NULL) {
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  } else if (mysql_stmt_prepare(s->st, text, strlen(text)) != 0) {
    rc = stmt_fail(db, s->st, what);
  } else if (mysql_stmt_param_count(s->st) != s->norder) {
    rc = jobq__fail(db, JOBQ_EDB, "%s: the server counts %lu parameters, expected %zu",
                    what, mysql_stmt_param_count(s->st), s->norder);
  }
  free(text);
  if (rc != JOBQ_OK) stmt_release(s);
  return rc;
}

static void rows_free(jobq_rows *r) {
  if (r == NULL) return;
  for (unsigned i = 0; i < r->ncols; i++) free(r->buf[i]);
  free(r->bind);
  free(r->len);
  free(r->cap);
  free(r->null);
  free(r->err);
  free(r->buf);
  free(r);
}

/* A cursor over the stored rows of st, every column read as bytes. */
static jobq_rows *rows_new(stmt *s, MYSQL_STMT *st) {
  jobq_rows *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->s = s;
  r->st = st;
  r->ncols = mysql_stmt_field_count(st);
  size_t n = r->ncols ? r->ncols : 1;
  r->bind = calloc(n, sizeof *r->bind);
  r->len = calloc(n, sizeof *r->len);
  r->cap = calloc(n, sizeof *r->cap);
  r->null = calloc(n, sizeof *r->null);
  r->err = calloc(n, sizeof *r->err);
  r->buf = calloc(n, sizeof *r->buf);
  int failed = !r->bind || !r->len || !r->cap || !r->null || !r->err || !r->buf;
  for (unsigned i = 0; !failed && i < r->ncols; i++) {
    r->cap[i] = 64;
    if ((r->buf[i] = malloc(r->cap[i])) == NULL) failed = 1;
    r->bind[i].buffer_type = MYSQL_TYPE_STRING;
    r->bind[i].buffer = r->buf[i];
    r->bind[i].buffer_length = r->cap[i];
    r->bind[i].length = &r->len[i];
    r->bind[i].is_null = &r->null[i];
    r->bind[i].error = &r->err[i];
  }
  if (failed || (r->ncols > 0 && mysql_stmt_bind_result(st, r->bind) != 0)) {
    rows_free(r);
    return NULL;
  }
  return r;
}

#define MAX_INLINE_PARAMS 80

static int my_next(jobq *db, jobq_rows *r);
static int64_t my_col_int(jobq_rows *r, int col);

static int my_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how) {
  my *c = conn(db);
  if (rows != NULL) *rows = NULL;
  if (c->aborted)
    return jobq__fail(db, JOBQ_EBUSY,
                      "the transaction was rolled back after a deadlock or lock wait "
                      "timeout: roll back, then run it again");
  stmt *s = &c->stmts[id], own = {0};
  int rc;
  if (s->st == NULL && (rc = prepare(db, id, s)) != JOBQ_OK) return rc;
  if (s->busy) {
    /* Its rows are still being read: run a copy of its own. */
    if ((rc = prepare(db, id, &own)) != JOBQ_OK) return rc;
    s = &own;
  }
  MYSQL_BIND inline_bind[MAX_INLINE_PARAMS];
  MYSQL_BIND *bind = s->norder <= MAX_INLINE_PARAMS ? inline_bind
                                                     : calloc(s->norder, sizeof *bind);
  if (bind == NULL) {
    stmt_release(&own);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  memset(bind, 0, (s->norder ? s->norder : 1) * sizeof *bind);
  rc = JOBQ_OK;
  for (size_t k = 0; k < s->norder && rc == JOBQ_OK; k++) {
    size_t i = (size_t)s->order[k];
    if (i >= n) {
      rc = jobq__fail(db, JOBQ_EINVAL, "%s: parameter %zu of %zu is missing",
                      stmt_what(id), i + 1, n);
      break;
    }
    MYSQL_BIND *b = &bind[k];
    switch (a[i].type) {
      case 'i':
        b->buffer_type = MYSQL_TYPE_LONGLONG;
        b->buffer = (void *)&a[i].i;
        break;
      case 'n': b->buffer_type = MYSQL_TYPE_NULL; break;
      case 't':
        b->buffer_type = MYSQL_TYPE_STRING;
        b->buffer = (void *)a[i].p;
        b->buffer_length = a[i].len;
        break;
      default:
        b->buffer_type = MYSQL_TYPE_BLOB;
        b->buffer = (void *)a[i].p;
        b->buffer_length = a[i].len;
        break;
    }
  }
  MYSQL_STMT *st = s->st;
  if (rc == JOBQ_OK && s->norder > 0 && mysql_stmt_bind_param(st, bind) != 0)
    rc = stmt_fail(db, st, stmt_what(id));
  int dup = 0;
  if (rc == JOBQ_OK && mysql_stmt_execute(st) != 0) {
    /* A job whose unique key is taken inserts nothing: the server undid
     * just this statement, and the transaction goes on. */
    if (id == JOBQ_Q_INSERT_JOB && mysql_stmt_errno(st) == ER_DUP_ENTRY)
      dup = 1;
    else
      rc = stmt_fail(db, st, stmt_what(id));
  }
  if (bind != inline_bind) free(bind);
  if (rc != JOBQ_OK) {
    stmt_release(&own);
    return rc;
  }
  c->changes = dup ? 0 : (int64_t)mysql_stmt_affected_rows(st);
  c->insert_id = dup ? 0 : (int64_t)mysql_stmt_insert_id(st);
  if (mysql_stmt_field_count(st) > 0 && mysql_stmt_store_result(st) != 0) {
    rc = stmt_fail(db, st, stmt_what(id));
    stmt_release(&own);
    return rc;
  }
  if (rows == NULL && how != NULL && how->ids != NULL) {
    /* Statements run at once: the ids are there now. */
    jobq_rows *r = rows_new(NULL, st);
    size_t got = 0;
    while (r != NULL && got < how->nids && my_next(db, r) == 1) how->ids[got++] = my_col_int(r, 0);
    if (r != NULL) rows_free(r);
  }
  if (rows == NULL) {
    mysql_stmt_free_result(st);
    stmt_release(&own);
    return JOBQ_OK;
  }
  jobq_rows *r = rows_new(s == &own ? NULL : s, st);
  if (r == NULL) {
    mysql_stmt_free_result(st);
    stmt_release(&own);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  if (s == &own) {
    /* The cursor owns the copy now. */
    free(own.order);
  } else {
    s->busy = 1;
  }
  *rows = r;
  return JOBQ_OK;
}

static int my_next(jobq *db, jobq_rows *r) {
  if (r->ncols == 0) return 0;
  int got = mysql_stmt_fetch(r->st);
  if (got == MYSQL_NO_DATA) return 0;
  if (got == 1) return stmt_fail(db, r->st, "reading rows");
  if (got == MYSQL_DATA_TRUNCATED) {
    for (unsigned i = 0; i < r->ncols; i++) {
      if (!r->err[i] || r->null[i]) continue;
      char *p = realloc(r->buf[i], r->len[i] + 1);
      if (p == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      r->buf[i] = p;
      r->cap[i] = r->len[i] + 1;
      r->bind[i].buffer = p;
      r->bind[i].buffer_length = r->cap[i];
      if (mysql_stmt_fetch_column(r->st, &r->bind[i], i, 0) != 0)
        return stmt_fail(db, r->st, "reading a long value");
    }
    /* The new buffers serve the next rows.  Some versions of the client
     * library (Debian 12's libmariadb3 10.11.18) reset every column's
     * length and null flag here: this row's are kept. */
    unsigned long *keep_len = malloc(r->ncols * sizeof *keep_len);
    my_bool *keep_null = malloc(r->ncols * sizeof *keep_null);
    int ok = keep_len != NULL && keep_null != NULL;
    if (ok) {
      memcpy(keep_len, r->len, r->ncols * sizeof *keep_len);
      memcpy(keep_null, r->null, r->ncols * sizeof *keep_null);
    }
    int bound = ok && mysql_stmt_bind_result(r->st, r->bind) == 0;
    if (bound) {
      memcpy(r->len, keep_len, r->ncols * sizeof *keep_len);
      memcpy(r->null, keep_null, r->ncols * sizeof *keep_null);
    }
    free(keep_len);
    free(keep_null);
    if (!ok) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    if (!bound) return stmt_fail(db, r->st, "reading rows");
  }
  for (unsigned i = 0; i < r->ncols; i++) {
    if (r->null[i]) r->len[i] = 0;
    if (r->len[i] >= r->cap[i]) r->len[i] = r->cap[i] - 1;
    r->buf[i][r->len[i]] = '\0';
  }
  return 1;
}

static void my_done(jobq *db, jobq_rows *r) {
  (void)db;
  mysql_stmt_free_result(r->st);
  if (r->s != NULL)
    r->s->busy = 0;
  else
    mysql_stmt_close(r->st);
  rows_free(r);
}

static int my_is_null(jobq_rows *r, int col) { return r->null[col] != 0; }

static int64_t my_col_int(jobq_rows *r, int col) {
  if (r->null[col]) return 0;
  return strtoll(r->buf[col], NULL, 10);
}

static const void *my_col_bytes(jobq_rows *r, int col, size_t *len) {
  *len = r->null[col] ? 0 : r->len[col];
  return r->null[col] ? "" : r->buf[col];
}

static int64_t my_changes(jobq *db) { return conn(db)->changes; }
static int64_t my_insert_id(jobq *db) { return conn(db)->insert_id; }

/* ---------------------------------------------------------------- versions */

int jobq__mysql_version_check(const char *info, int *mariadb, long *version,
                              char *why, size_t len) {
  *mariadb = info != NULL && strstr(info, "MariaDB") != NULL;
  *version = 0;
  if (info == NULL) info = "";
  const char *p = info;
  /* MariaDB before 11 announces itself as "5.5.5-10.x.y-MariaDB". */
  if (*mariadb && strncmp(p, "5.5.5-", 6) == 0) p += 6;
  long part[3] = {0, 0, 0};
  int i = 0;
  while (i < 3 && isdigit((unsigned char)*p)) {
    char *end;
    part[i++] = strtol(p, &end, 10);
    p = end;
    if (*p != '.') break;
    p++;
  }
  if (i < 2) {
    snprintf(why, len, "cannot read the server version '%.60s': expected MariaDB 10.6 or "
             "MySQL 8.0.1 or newer", info);
    return -1;
  }
  *version = part[0] * 10000 + part[1] * 100 + part[2];
  long min = *mariadb ? MARIADB_MIN : MYSQL_MIN;
  if (*version < min) {
    snprintf(why, len, "runs %s %ld.%ld.%ld, which has no SKIP LOCKED: expected %s or newer",
             *mariadb ? "MariaDB" : "MySQL", part[0], part[1], part[2],
             *mariadb ? "MariaDB 10.6" : "MySQL 8.0.1");
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- connection */

/* The first row of a plain query, as text: *res to be freed. */
static MYSQL_ROW query_row(jobq *db, MYSQL *m, const char *sql, MYSQL_RES **res,
                           const char *what) {
  *res = NULL;
  if (mysql_real_query(m, sql, strlen(sql)) != 0) {
    my_error(db, mysql_errno(m), mysql_error(m), what);
    return NULL;
  }
  *res = mysql_store_result(m);
  MYSQL_ROW row = *res ? mysql_fetch_row(*res) : NULL;
  if (row == NULL) {
    jobq__fail(db, JOBQ_EDB, "%s: no row", what);
    if (*res) mysql_free_result(*res);
    *res = NULL;
  }
  return row;
}

static int is_off(const char *v) {
  return v == NULL || strcmp(v, "0") == 0 || strcmp(v, "OFF") == 0;
}

/* What a new connection needs before jobq uses it: a server with SKIP
 * LOCKED, the session's settings, and a primary that accepts writes. */
static int setup(jobq *db, MYSQL *m, const char *host) {
  my *c = conn(db);
  char why[200];
  if (jobq__mysql_version_check(mysql_get_server_info(m), &c->mariadb, &c->version, why,
                                sizeof why) != 0)
    return jobq__fail(db, JOBQ_ENOTSUP, "'%s' (%s) %s", c->redacted, host, why);
  c->collation = c->mariadb ? "utf8mb4_nopad_bin"
                 : c->version >= 80017 ? "utf8mb4_0900_bin"
                                       : "utf8mb4_bin";
  char sql[512];
  if (mysql_real_query(m, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", 54) != 0)
    return my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  long long stmt_ms = (long long)c->statement_timeout_ms;
  if (c->mariadb)
    snprintf(sql, sizeof sql,
             "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,"
             "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', "
             "autocommit = 1, innodb_lock_wait_timeout = %u, max_statement_time = "
             "%lld.%03lld, idle_transaction_timeout = 60",
             c->lock_wait_s, stmt_ms / 1000, stmt_ms % 1000);
  else
    snprintf(sql, sizeof sql,
             "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,"
             "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', "
             "autocommit = 1, innodb_lock_wait_timeout = %u, max_execution_time = %lld, "
             "information_schema_stats_expiry = 0",
             c->lock_wait_s, stmt_ms);
  if (mysql_real_query(m, sql, strlen(sql)) != 0)
    return my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  MYSQL_RES *res;
  MYSQL_ROW row = query_row(
      db, m,
      c->mariadb ? "SELECT @@read_only, @@innodb_read_only, @@tx_read_only, "
                   "@@innodb_flush_log_at_trx_commit, @@innodb_autoinc_lock_mode, "
                   "@@auto_increment_increment, @@max_allowed_packet"
                 : "SELECT @@read_only, @@innodb_read_only, @@transaction_read_only, "
                   "@@innodb_flush_log_at_trx_commit, @@innodb_autoinc_lock_mode, "
                   "@@auto_increment_increment, @@max_allowed_packet, @@super_read_only",
      &res, "reading the server's settings");
  if (row == NULL) return db->err;
  int rc = JOBQ_OK;
  if (db->readonly) {
    /* A handle that only reads takes a read-only server or replica, and
     * makes sure of writing nothing. */
    if (mysql_real_query(m, "SET SESSION TRANSACTION READ ONLY", 33) != 0)
      rc = my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  } else if (!is_off(row[0]) || !is_off(row[1]) || (!c->mariadb && !is_off(row[7])))
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' (%s) is read-only (read_only is %s): expected a primary that "
                    "accepts writes",
                    c->redacted, host, row[0] ? row[0] : "NULL");
  else if (!is_off(row[2]))
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' (%s) starts read-only transactions (transaction_read_only is "
                    "on): expected a database that accepts writes",
                    c->redacted, host);
  if (rc == JOBQ_OK) {
    const char *flush = row[3] ? row[3] : "NULL";
    if (strcmp(flush, "1") != 0)
      snprintf(db->warning, sizeof db->warning,
               "'%s' has innodb_flush_log_at_trx_commit = %s: a put or ack that jobq "
               "reported done can be lost when the server or its machine crashes; "
               "expected 1",
               c->redacted, flush);
    else
      db->warning[0] = '\0';
    /* The rows of one INSERT take consecutive ids, auto_increment_increment
     * apart, where the server hands them out so (innodb_autoinc_lock_mode 0
     * or 1); otherwise one row a statement. */
    int lock_mode = row[4] ? (int)strtol(row[4], NULL, 10) : 2;
    int64_t step = row[5] ? strtoll(row[5], NULL, 10) : 1;
    db->id_step = lock_mode <= 1 ? (step < 1 ? 1 : step) : 0;
    c->max_packet = row[6] ? strtoul(row[6], NULL, 10) : 4 << 20;
    /* What one statement may carry: well within max_allowed_packet. */
    db->stmt_bytes = c->max_packet > (1 << 20) ? c->max_packet / 2 : 1 << 19;
  }
  mysql_free_result(res);
  return rc;
}

/* Connects to one host. */
static MYSQL *connect_host(jobq *db, const char *host, unsigned port) {
  my *c = conn(db);
  MYSQL *m = mysql_init(NULL);
  if (m == NULL) {
    jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    return NULL;
  }
  unsigned timeout = c->connect_timeout_s;
  /* Reads may wait for a lock or a long statement. */
  unsigned io = (unsigned)(c->statement_timeout_ms / 1000) + c->lock_wait_s + 30;
  my_bool on = 1;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  if (c->sslmode > 0) mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &on);
  if (c->sslmode > 1) mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
  if (c->sslca) mysql_options(m, MYSQL_OPT_SSL_CA, c->sslca);
  if (c->sslcert) mysql_options(m, MYSQL_OPT_SSL_CERT, c->sslcert);
  if (c->sslkey) mysql_options(m, MYSQL_OPT_SSL_KEY, c->sslkey);
  if (mysql_real_connect(m, host, c->user, c->password, c->dbname, port, c->socket,
                         CLIENT_FOUND_ROWS) == NULL) {
    int code = is_denied(mysql_errno(m)) ? JOBQ_EDENIED : JOBQ_ECONN;
    jobq__fail(db, code, "cannot connect to '%s': %s", c->redacted, mysql_error(m));
    mysql_close(m);
    return NULL;
  }
  if (setup(db, m, host) != JOBQ_OK) {
    mysql_close(m);
    return NULL;
  }
  return m;
}

/* Connects to the first host that answers and accepts writes.  When
 * none does, a host that refused us for good (JOBQ_EDENIED) is the
 * answer: its error is kept, whatever the hosts after it said. */
static MYSQL *connect_any(jobq *db) {
  my *c = conn(db);
  MYSQL *m = NULL;
  if (jobq__libmariadb_load(db) != JOBQ_OK) return NULL;
  jobq__error denied = {JOBQ_OK, ""};
  for (size_t i = 0; i < c->nhosts && m == NULL; i++) {
    m = connect_host(db, c->hosts[i], c->ports[i]);
    if (m == NULL && db->err == JOBQ_EDENIED && denied.err == JOBQ_OK)
      jobq__error_keep(db, &denied);
  }
  if (c->nhosts == 0) m = connect_host(db, NULL, 0);
  if (m == NULL && denied.err != JOBQ_OK) jobq__error_restore(db, &denied);
  return m;
}

static int set_string(char **dst, const char *src) {
  free(*dst);
  *dst = src ? strdup(src) : NULL;
  return src && *dst == NULL ? JOBQ_ENOMEM : JOBQ_OK;
}

/* Splits "a:1,[::1]:2,b" into hosts and ports (0: the default). */
static int split_hosts(my *c, const char *list) {
  size_t n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  c->hosts = calloc(n, sizeof *c->hosts);
  c->ports = calloc(n, sizeof *c->ports);
  if (c->hosts == NULL || c->ports == NULL) return JOBQ_ENOMEM;
  const char *s = list;
  while (c->nhosts < n) {
    size_t len = strcspn(s, ","), hl = len;
    const char *host = s, *port = NULL;
    if (s[0] == '[') {
      const char *close = memchr(s, ']', len);
      host = s + 1;
      hl = close ? (size_t)(close - s) - 1 : len - 1;
      if (close && (size_t)(close - s) + 1 < len) port = close + 2;
    } else {
      const char *colon = memchr(s, ':', len);
      if (colon != NULL) hl = (size_t)(colon - s), port = colon + 1;
    }
    char *h = malloc(hl + 1);
    if (h == NULL) return JOBQ_ENOMEM;
    memcpy(h, host, hl);
    h[hl] = '\0';
    c->hosts[c->nhosts] = h;
    c->ports[c->nhosts] = port ? (unsigned)strtoul(port, NULL, 10) : DEFAULT_PORT;
    c->nhosts++;
    s += len;
    if (*s != ',') break;
    s++;
  }
  return JOBQ_OK;
}

/* A duration option in whole seconds, 1 s to a day. */
static int seconds_opt(jobq *db, const char *k, const char *v, unsigned *out) {
  int64_t s;
  int rc = jobq__url_seconds(db, k, v, 1, 86400, &s);
  if (rc == JOBQ_OK) *out = (unsigned)s;
  return rc;
}

static int my_open(jobq *db, const jobq_url *u) {
  my *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->redacted = db->url_redacted;
  c->connect_timeout_s = 10;
  /* A lock wait times out (and the transaction runs again) before the
   * statement does. */
  c->lock_wait_s = 20;
  c->statement_timeout_ms = 30000;
  int rc = JOBQ_OK;
  for (size_t i = 0; i < u->nopts && rc == JOBQ_OK; i++) {
    const char *k = u->keys[i], *v = u->values[i];
    if (strcmp(k, "max_payload") == 0) {
      /* the library's */
    } else if (strcmp(k, "connect_timeout") == 0) {
      rc = seconds_opt(db, k, v, &c->connect_timeout_s);
    } else if (strcmp(k, "lock_wait_timeout") == 0) {
      rc = seconds_opt(db, k, v, &c->lock_wait_s);
    } else if (strcmp(k, "statement_timeout") == 0) {
      if (jobq_parse_duration(v, &c->statement_timeout_ms) != JOBQ_OK ||
          c->statement_timeout_ms < 1 || c->statement_timeout_ms > 86400000LL)
        rc = jobq__fail(db, JOBQ_EURL,
                        "invalid statement_timeout '%s' in the database url: expected a "
                        "duration from 1ms to 1d, like 30s",
                        v);
    } else if (strcmp(k, "sslmode") == 0) {
      if (strcmp(v, "disable") == 0) c->sslmode = 0;
      else if (strcmp(v, "require") == 0) c->sslmode = 1;
      else if (strcmp(v, "verify-ca") == 0 || strcmp(v, "verify-full") == 0) c->sslmode = 2;
      else
        rc = jobq__fail(db, JOBQ_EURL,
                        "invalid sslmode '%s' in the database url: expected disable, "
                        "require, verify-ca or verify-full",
                        v);
    } else if (strcmp(k, "sslca") == 0 || strcmp(k, "sslcert") == 0 ||
               strcmp(k, "sslkey") == 0 || strcmp(k, "socket") == 0) {
      char **dst = strcmp(k, "sslca") == 0     ? &c->sslca
                   : strcmp(k, "sslcert") == 0 ? &c->sslcert
                   : strcmp(k, "sslkey") == 0  ? &c->sslkey
                                               : &c->socket;
      if (set_string(dst, v) != JOBQ_OK) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    } else {
      rc = jobq__fail(db, JOBQ_EURL,
                      "unknown option '%s' in the database url: expected connect_timeout, "
                      "lock_wait_timeout, statement_timeout, sslmode, sslca, sslcert, "
                      "sslkey, socket or max_payload",
                      k);
    }
  }
  if (rc != JOBQ_OK) return rc;
  if (u->dbname == NULL || *u->dbname == '\0')
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' names no database: expected "
                      "%s://USER:PASSWORD@HOST[:PORT]/DATABASE",
                      c->redacted, u->scheme);
  if (strlen(u->dbname) > 64)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid database name in '%s': expected at most 64 characters",
                      c->redacted);
  if (set_string(&c->user, u->user) != JOBQ_OK ||
      set_string(&c->password, u->password) != JOBQ_OK ||
      set_string(&c->dbname, u->dbname) != JOBQ_OK ||
      (u->host != NULL && *u->host != '\0' && split_hosts(c, u->host) != JOBQ_OK))
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if ((c->conn = connect_any(db)) == NULL) return db->err;
  if (db->max_payload + 65536 > c->max_packet)
    return jobq__fail(db, JOBQ_EURL,
                      "max_payload %zu bytes is too large for '%s', whose "
                      "max_allowed_packet is %lu bytes: expected at most %lu bytes, or a "
                      "larger max_allowed_packet on the server",
                      db->max_payload, c->redacted, c->max_packet,
                      c->max_packet > 65536 ? c->max_packet - 65536 : 0);
  return JOBQ_OK;
}

static void my_close(jobq *db) {
  my *c = conn(db);
  if (c == NULL) return;
  stmts_release(c);
  if (c->conn != NULL) mysql_close(c->conn);
  for (size_t i = 0; i < c->nhosts; i++) free(c->hosts[i]);
  free(c->hosts);
  free(c->ports);
  if (c->password != NULL) memset(c->password, 0, strlen(c->password));
  free(c->user);
  free(c->password);
  free(c->dbname);
  free(c->socket);
  free(c->sslca);
  free(c->sslcert);
  free(c->sslkey);
  free(c);
  db->conn = NULL;
}

static void *my_native(jobq *db) { return conn(db)->conn; }

/* ---------------------------------------------------------------- schema */

/* One initialiser at a time (tables are made outside transactions, each
 * change committed at once); the others then find it done.  No limit on
 * a statement's time meanwhile. */
static int my_schema_begin(jobq *db) {
  my *c = conn(db);
  MYSQL_RES *res;
  MYSQL_ROW row = query_row(db, c->conn,
                            "SELECT GET_LOCK(CONCAT('jobq_init.', DATABASE()), 60)", &res,
                            "initialising the schema");
  if (row == NULL) return db->err;
  int locked = row[0] && strcmp(row[0], "1") == 0;
  mysql_free_result(res);
  if (!locked)
    return jobq__fail(db, JOBQ_EBUSY,
                      "initialising the schema of '%s': another jobq init held its lock "
                      "for a minute: try again",
                      c->redacted);
  return run_plain(db, c->mariadb ? "SET SESSION max_statement_time = 0"
                                  : "SET SESSION max_execution_time = 0",
                   "initialising the schema");
}

/* Back to the connection's own limit, and the lock given back. */
static int my_schema_end(jobq *db, int ok) {
  (void)ok;
  my *c = conn(db);
  char sql[96];
  long long ms = (long long)c->statement_timeout_ms;
  if (c->mariadb)
    snprintf(sql, sizeof sql, "SET SESSION max_statement_time = %lld.%03lld", ms / 1000,
             ms % 1000);
  else
    snprintf(sql, sizeof sql, "SET SESSION max_execution_time = %lld", ms);
  if (!c->broken) mysql_real_query(c->conn, sql, strlen(sql));
  if (!c->broken) run_plain(db, "DO RELEASE_LOCK(CONCAT('jobq_init.', DATABASE()))", "");
  return JOBQ_OK;
}

/* Runs a schema statement with {bin} spelled as the server's collation. */
static int run_ddl(jobq *db, const char *ddl) {
  my *c = conn(db);
  const char *tok = strstr(ddl, "{bin}");
  if (tok == NULL) return run_plain(db, ddl, "creating the schema");
  size_t len = strlen(ddl) + strlen(c->collation) + 1;
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, "%.*s%s%s", (int)(tok - ddl), ddl, c->collation, tok + 5);
  int rc = run_plain(db, sql, "creating the schema");
  free(sql);
  return rc;
}

static int my_schema_run(jobq *db, const char *sql, int64_t *first) {
  if (first == NULL) return run_ddl(db, sql);
  MYSQL_RES *res;
  MYSQL_ROW row = query_row(db, conn(db)->conn, sql, &res, "migrating the schema");
  if (row == NULL) return db->err;
  *first = row[0] ? strtoll(row[0], NULL, 10) : 0;
  mysql_free_result(res);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- roles */

/* %1$s the database, quoted; %2$s, %3$s ... the roles, quoted; %7$s how a
 * login's default role is set. */
static const char roles_sql[] =
    "-- Least-privilege roles for the jobq database %1$s.  Run as a user that may\n"
    "-- create roles and grant on it, then give a role to each login:\n"
    "--   CREATE USER 'app'@'%%' IDENTIFIED BY '...';\n"
    "--   GRANT %4$s TO 'app'@'%%';\n"
    "--   %7$s\n"
    "-- None of them may create, drop or alter tables.  What each may do, and\n"
    "-- what no grant can keep it from, is in jobq's docs/security.md.\n"
    "-- Running this again sets the roles' rights anew.\n"
    "CREATE ROLE IF NOT EXISTS %2$s;\n"
    "CREATE ROLE IF NOT EXISTS %3$s;\n"
    "CREATE ROLE IF NOT EXISTS %4$s;\n"
    "CREATE ROLE IF NOT EXISTS %5$s;\n"
    "REVOKE ALL PRIVILEGES, GRANT OPTION FROM %2$s, %3$s, %4$s, %5$s;\n"
    "\n"
    "-- reader: jobq stats, ls, show, sessions, doctor, and dashboards.  It\n"
    "-- reads everything, payloads and results included, and writes nothing.\n"
    "GRANT SELECT ON %1$s.jobq_meta TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_queues TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_counts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_sessions TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_jobs TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_done TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_blocked TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_tally TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_attempts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_cron TO %2$s;\n"
    "\n"
    "-- producer: jobq put and jobq_put().  It sees the unfinished jobs'\n"
    "-- queues, keys and states, to put its own in order, not their payloads;\n"
    "-- it writes what a new job is (not how its work stands: session,\n"
    "-- claim, attempts) and new queues (not their settings).\n"
    "GRANT SELECT ON %1$s.jobq_meta TO %3$s;\n"
    "GRANT SELECT, INSERT (name, created_at) ON %1$s.jobq_queues TO %3$s;\n"
    "GRANT SELECT (id, queue, state, order_key, barrier, unique_key, session),\n"
    "  INSERT (queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n"
    "  max_attempts, timeout_ms, backoff_ms, created_at) ON %1$s.jobq_jobs TO %3$s;\n"
    "GRANT SELECT ON %1$s.jobq_blocked TO %3$s;\n"
    "GRANT SELECT, INSERT, UPDATE ON %1$s.jobq_locks TO %3$s;\n"
    "-- the id and queue of finished jobs: a producer's put, read back after\n"
    "-- a reconnection, proves the database still has it.\n"
    "GRANT SELECT (id, queue) ON %1$s.jobq_done TO %3$s;\n"
    "-- And jobq cron run: the jobs of the schedules' slots (a foreman puts\n"
    "-- them when its login is a producer too).\n"
    "GRANT SELECT, UPDATE (next_at, last_at, last_error, updated_at) ON %1$s.jobq_cron\n"
    "  TO %3$s;\n"
    "\n"
    "-- worker: sessions, claims, acknowledgements, reaping (jobq work).  It\n"
    "-- changes how a job's work stands, not what the job is, and cannot ask\n"
    "-- to cancel one.\n"
    "GRANT %2$s TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_sessions TO %4$s;\n"
    "GRANT UPDATE (state, session, claim, claimed_at, deadline_at, attempts, run_at,\n"
    "  last_error, prev_lost, started), DELETE ON %1$s.jobq_jobs TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_done TO %4$s;\n"
    "GRANT INSERT, UPDATE ON %1$s.jobq_counts TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_blocked TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_tally TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_attempts TO %4$s;\n"
    "GRANT SELECT, INSERT, UPDATE ON %1$s.jobq_locks TO %4$s;\n"
    "-- the stall guard's look, which any reaper records\n"
    "GRANT UPDATE (guard_at) ON %1$s.jobq_meta TO %4$s;\n"
    "\n"
    "-- admin: retry, cancel, pause, prune, purge, epoch bump, and the others'\n"
    "-- rights.\n"
    "GRANT %3$s TO %5$s;\n"
    "GRANT %4$s TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_jobs TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_queues TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_done TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_blocked TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_counts TO %5$s;\n"
    "GRANT DELETE ON %1$s.jobq_attempts TO %5$s;\n"
    "GRANT DELETE ON %1$s.jobq_locks TO %5$s;\n"
    "GRANT UPDATE ON %1$s.jobq_meta TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_cron TO %5$s;\n"
    "%6$s";

/* `name` with backticks doubled, into out. */
static void quote_ident(char *out, size_t size, const char *prefix, const char *name,
                        const char *suffix) {
  size_t o = 0;
  const char *parts[3] = {prefix, name, suffix};
  if (o + 1 < size) out[o++] = '`';
  for (int k = 0; k < 3; k++)
    for (const char *p = parts[k]; *p && o + 3 < size; p++) {
      if (*p == '`') out[o++] = '`';
      out[o++] = *p;
    }
  if (o + 1 < size) out[o++] = '`';
  out[o] = '\0';
}

/* ---------------------------------------------------------------- doctor */

static int my_doctor(jobq *db, jobq__checks *k) {
  my *c = conn(db);
  MYSQL_RES *res;
  MYSQL_ROW row = query_row(db, c->conn,
                            "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, "
                            "@@sync_binlog, @@log_bin, @@innodb_history_list_length",
                            &res, "checking the server");
  if (row == NULL) {
    /* innodb_history_list_length is MariaDB's; MySQL reads it elsewhere. */
    row = query_row(db, c->conn,
                    "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
                    "@@log_bin, -1",
                    &res, "checking the server");
    if (row == NULL) return db->err;
  }
  jobq__check_add(k, JOBQ_CHECK_OK, "server", NULL, "%s %s",
                  c->mariadb ? "MariaDB" : "MySQL", row[0] ? row[0] : "?");
  int flush_ok = row[1] != NULL && strcmp(row[1], "1") == 0;
  int binlog = row[3] != NULL && !is_off(row[3]);
  int sync_ok = !binlog || (row[2] != NULL && strcmp(row[2], "1") == 0);
  if (!flush_ok || !sync_ok)
    jobq__check_add(k, JOBQ_CHECK_FAIL, "durability",
                    "set innodb_flush_log_at_trx_commit = 1 (and sync_binlog = 1 with "
                    "the binary log on): otherwise a crash of the server or the machine "
                    "loses puts and acknowledgements jobq already confirmed",
                    "innodb_flush_log_at_trx_commit = %s, sync_binlog = %s, binary log %s",
                    row[1] ? row[1] : "?", row[2] ? row[2] : "?", binlog ? "on" : "off");
  else
    jobq__check_add(k, JOBQ_CHECK_OK, "durability", NULL,
                    "innodb_flush_log_at_trx_commit = 1%s: every commit waits for the log",
                    binlog ? ", sync_binlog = 1" : "");
  long long history = row[4] ? strtoll(row[4], NULL, 10) : -1;
  mysql_free_result(res);
  /* The oldest transaction holds back the purge of old row versions,
   * which the hot table's churn piles up. */
  static const char oldest[] =
      "SELECT trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, trx_started, NOW()), "
      "trx_state, LEFT(REPLACE(coalesce(trx_query, ''), '\n', ' '), 60) FROM "
      "information_schema.INNODB_TRX ORDER BY trx_started LIMIT 1";
  if (mysql_real_query(c->conn, oldest, sizeof oldest - 1) != 0) {
    unsigned err = mysql_errno(c->conn);
    if (err != ER_SPECIFIC_ACCESS_DENIED_ERROR && err != ER_TABLEACCESS_DENIED_ERROR)
      return my_error(db, err, mysql_error(c->conn), "checking transactions");
    /* The other logins' transactions are for the PROCESS privilege. */
    jobq__check_add(k, JOBQ_CHECK_WARN, "purge",
                    "grant the login PROCESS (GRANT PROCESS ON *.* TO ...) for this check",
                    "cannot see other transactions: the login lacks the PROCESS "
                    "privilege");
    return JOBQ_OK;
  }
  res = mysql_store_result(c->conn);
  row = res ? mysql_fetch_row(res) : NULL;
  long long age = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
  if (row != NULL && age >= 60)
    jobq__check_add(k, age >= 600 ? JOBQ_CHECK_FAIL : JOBQ_CHECK_WARN, "purge",
                    "a long transaction keeps InnoDB from purging old row versions, so "
                    "the hot table's indexes fill with them and claims slow down: end it "
                    "(KILL ID) and keep transactions short",
                    "the oldest transaction has been open for %llds: connection %s, %s: %s",
                    age, row[0] ? row[0] : "?", row[2] ? row[2] : "?", row[3] ? row[3] : "");
  else if (history > 100000)
    jobq__check_add(k, JOBQ_CHECK_WARN, "purge",
                    "purge is behind: look for long transactions and a busy server",
                    "%lld undo records wait for purge", history);
  else
    jobq__check_add(k, JOBQ_CHECK_OK, "purge", NULL,
                    "no transaction older than a minute holds purge back");
  if (res) mysql_free_result(res);
  return JOBQ_OK;
}

static int my_roles(jobq *db, char **out) {
  my *c = conn(db);
  char dbq[160], r[4][200], deflt[300];
  static const char *const kinds[4] = {"_reader", "_producer", "_worker", "_admin"};
  quote_ident(dbq, sizeof dbq, "", c->dbname, "");
  for (int k = 0; k < 4; k++) quote_ident(r[k], sizeof r[k], "jobq_", c->dbname, kinds[k]);
  snprintf(deflt, sizeof deflt,
           c->mariadb ? "SET DEFAULT ROLE %s FOR 'app'@'%%';"
                      : "SET DEFAULT ROLE %s TO 'app'@'%%';",
           r[2]);
  size_t len = sizeof roles_sql + 64 * (strlen(dbq) + strlen(r[1])) + sizeof deflt;
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, roles_sql, dbq, r[0], r[1], r[2], r[3], "", deflt);
  *out = sql;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- transactions */

/* A connection that broke since the last transaction is made again (its
 * prepared statements with it) before the next one begins. */
static int reconnect(jobq *db) {
  my *c = conn(db);
  MYSQL *m = connect_any(db);
  if (m == NULL) return db->err;
  stmts_release(c);
  mysql_close(c->conn);
  c->conn = m;
  db->connects++; /* for the check of acknowledged writes (lib/mark.c) */
  c->broken = 0;
  c->aborted = 0;
  return JOBQ_OK;
}

static int my_begin(jobq *db, int depth, int lazy) {
  (void)lazy;
  my *c = conn(db);
  if (depth > 0) {
    if (c->aborted)
      return jobq__fail(db, JOBQ_EBUSY,
                        "the transaction was rolled back after a deadlock or lock wait "
                        "timeout: roll back, then run it again");
    return run_plain(db, "SAVEPOINT jobq", "starting a savepoint");
  }
  c->aborted = 0;
  if (c->broken) {
    int rc = reconnect(db);
    if (rc != JOBQ_OK) return rc;
  }
  int rc = run_plain(db, "START TRANSACTION", "starting a transaction");
  /* Nothing was done yet: a connection that turns out broken is made
   * again, once. */
  if (rc == JOBQ_ECONN && reconnect(db) == JOBQ_OK)
    rc = run_plain(db, "START TRANSACTION", "starting a transaction");
  return rc;
}

static int my_commit(jobq *db, int depth) {
  my *c = conn(db);
  if (c->aborted)
    return jobq__fail(db, JOBQ_EBUSY,
                      "the transaction was rolled back after a deadlock or lock wait "
                      "timeout: roll back, then run it again");
  if (depth > 0) return run_plain(db, "RELEASE SAVEPOINT jobq", "releasing a savepoint");
  return run_plain(db, "COMMIT", "committing");
}

static int my_rollback(jobq *db, int depth) {
  my *c = conn(db);
  if (c->broken) return JOBQ_OK;
  if (depth > 0) {
    /* The server already ended the whole transaction. */
    if (c->aborted) return JOBQ_OK;
    mysql_real_query(c->conn, "ROLLBACK TO SAVEPOINT jobq", 26);
    mysql_real_query(c->conn, "RELEASE SAVEPOINT jobq", 22);
    return JOBQ_OK;
  }
  c->aborted = 0;
  mysql_real_query(c->conn, "ROLLBACK", 8);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- locks */

/* A named lock's row name: "KIND:QUEUE" or "KIND:QUEUE/KEY". */
typedef char lock_name[JOBQ_QUEUE_MAX + JOBQ_KEY_MAX + 8];

static int lock_row_name(jobq *db, char kind, const char *queue, const char *key,
                         lock_name name, size_t *len) {
  int n = snprintf(name, sizeof(lock_name), "%c:%s%s%s", kind, queue, key ? "/" : "",
                   key ? key : "");
  if (n < 0 || (size_t)n >= sizeof(lock_name))
    return jobq__fail(db, JOBQ_EINVAL, "lock name for queue '%s' is too long", queue);
  *len = (size_t)n;
  return JOBQ_OK;
}

static int lock_row(jobq *db, char kind, const char *queue, const char *key, int exclusive) {
  lock_name name;
  size_t len = 0;
  int rc = lock_row_name(db, kind, queue, key, name, &len);
  if (rc != JOBQ_OK) return rc;
  int take = exclusive ? MY_LOCK_X : MY_LOCK_S;
  for (int tries = 0; tries < 3; tries++) {
    jobq_rows *r;
    if ((rc = my_query(db, take, SQL_ARGS(V_BYTES(name, len)), &r, NULL)) != JOBQ_OK) return rc;
    int got = my_next(db, r);
    my_done(db, r);
    if (got != 0) return got < 0 ? got : JOBQ_OK;
    /* The first use of this name: the new row is ours until commit. */
    rc = my_query(db, MY_LOCK_ADD, SQL_ARGS(V_BYTES(name, len)), NULL, NULL);
    if (rc != JOBQ_OK || my_changes(db) == 1) return rc;
    /* Another transaction added it meanwhile: take it as usual. */
  }
  return jobq__fail(db, JOBQ_EBUSY, "the lock row '%s' keeps vanishing: try again", name);
}

/*
 * Keys' locks of one queue, CHUNK names to a statement rather than one or
 * two a key: the rows there are locked in name order, which within one
 * queue is the keys' order (the library's), and the missing ones inserted
 * in one statement, which holds them as lock_row's insert does.  Only
 * when another transaction inserted one of them meanwhile does each
 * missing one go through lock_row.
 */
static int lock_key_rows(jobq *db, const char *queue, const char *const *keys, size_t n) {
  lock_name names[CHUNK];
  jobq_val v[CHUNK];
  int rc = JOBQ_OK;
  for (size_t at = 0; at < n && rc == JOBQ_OK; at += CHUNK) {
    size_t k = n - at > CHUNK ? CHUNK : n - at;
    for (size_t i = 0; i < k && rc == JOBQ_OK; i++) {
      size_t len = 0;
      rc = lock_row_name(db, 'k', queue, keys[at + i], names[i], &len);
      v[i] = V_BYTES(names[i], len);
    }
    if (rc != JOBQ_OK) break;
    for (size_t i = k; i < CHUNK; i++) v[i] = V_NULL;
    unsigned char found[CHUNK] = {0};
    jobq_rows *r;
    if ((rc = my_query(db, MY_LOCK_KEYS, v, CHUNK, &r, NULL)) != JOBQ_OK) break;
    int got;
    size_t i = 0;
    while ((got = my_next(db, r)) == 1) {
      size_t len;
      const char *name = my_col_bytes(r, 0, &len);
      while (i < k && !(v[i].len == len && memcmp(names[i], name, len) == 0)) i++;
      if (i < k) found[i++] = 1;
    }
    my_done(db, r);
    if (got < 0) {
      rc = got;
      break;
    }
    size_t missing = 0;
    for (i = 0; i < k; i++)
      if (!found[i]) v[missing++] = v[i];
    if (missing == 0) continue;
    if ((rc = jobq__failpoint(db, "put.keys-missing")) != JOBQ_OK) break;
    for (i = missing; i < CHUNK; i++) v[i] = v[missing - 1];
    rc = my_query(db, MY_LOCK_ADD_KEYS, v, CHUNK, NULL, NULL);
    int64_t added = rc == JOBQ_OK ? my_changes(db) : 0;
    for (i = 0; rc == JOBQ_OK && added != (int64_t)missing && i < k; i++)
      if (!found[i]) rc = lock_row(db, 'k', queue, keys[at + i], 1);
  }
  return rc;
}

/* The locks in order: a run of one queue's keys' locks a few statements
 * for all of them (lock_key_rows), every other lock on its own. */
static int my_lock(jobq *db, const jobq_lock *l, size_t n) {
  int rc = JOBQ_OK;
  for (size_t i = 0, end; i < n && rc == JOBQ_OK; i = end) {
    end = i + 1;
    if (l[i].kind != 'k' || !l[i].exclusive) {
      rc = lock_row(db, l[i].kind, l[i].queue, l[i].key, l[i].exclusive);
      continue;
    }
    while (end < n && l[end].kind == 'k' && l[end].exclusive &&
           strcmp(l[end].queue, l[i].queue) == 0)
      end++;
    const char **keys = malloc((end - i) * sizeof *keys);
    if (keys == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    for (size_t k = i; k < end; k++) keys[k - i] = l[k].key;
    rc = end - i == 1 ? lock_row(db, 'k', l[i].queue, l[i].key, 1)
                      : lock_key_rows(db, l[i].queue, keys, end - i);
    free(keys);
  }
  return rc;
}

/* ---------------------------------------------------------------- wake-ups */

/* There is no NOTIFY: workers poll, and every look may have news. */
static void my_wake(jobq *db, const char *queue) {
  (void)db;
  (void)queue;
}

static int my_watch(jobq *db, int *fd) {
  *fd = -1;
  return jobq__fail(db, JOBQ_ENOTSUP, "the mysql store cannot watch for new work: poll instead");
}

static int my_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue)) {
  (void)db;
  (void)wanted;
  return 1;
}

const jobq_store jobq__store_mysql = {
    .scheme = "mysql",
    .dialect = JOBQ_DIALECT_MYSQL,
    .open = my_open,
    .close = my_close,
    .native = my_native,
    .schema = versions,
    .schema_begin = my_schema_begin,
    .schema_end = my_schema_end,
    .schema_run = my_schema_run,
    .roles = my_roles,
    .doctor = my_doctor,
    .begin = my_begin,
    .commit = my_commit,
    .rollback = my_rollback,
    .query = my_query,
    .next = my_next,
    .done = my_done,
    .is_null = my_is_null,
    .col_int = my_col_int,
    .col_bytes = my_col_bytes,
    .changes = my_changes,
    .insert_id = my_insert_id,
    .lock = my_lock,
    .wake = my_wake,
    .watch = my_watch,
    .changed = my_changed,
};
