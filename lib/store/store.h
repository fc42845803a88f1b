/*
 * store.h - the table of functions behind which each database engine
 * lives, chosen by the URL's scheme (like SQLite's sqlite3_vfs): an
 * engine, not a policy.  A store knows SQL and its engine, nothing about
 * jobs, processes or terminals.
 *
 * The library (lib/) owns every rule and plans every statement: it names
 * a statement of lib/sql.h, whose text lib/sql.c holds for each dialect,
 * and binds values, single ones or columns of a set statement; the store
 * prepares the text, runs it and hands back rows.  Beside that executor a
 * store brings what is its engine's own: the connection (made again when
 * it breaks), transactions, named locks, wake-ups, the schema's text,
 * the roles' SQL and its doctor's checks.  Every member is required.
 *
 * A store that makes its connection again (a restart, a failover) adds 1
 * to db->connects, and does so only where the library sees it before the
 * statements of a transaction: in begin(), or, for a lazy transaction
 * whose first round trip found the connection broken, by failing that
 * statement with JOBQ_ECONN and db->retry set, so that the library runs
 * the transaction again and its checks first (lib/mark.c, lib/session.c).
 *
 * Transactions belong to the library: every statement but those of open,
 * close, native, the schema's members, roles, doctor, watch and changed
 * runs inside a transaction (or savepoint) that the library began with
 * begin() and ends with commit() or rollback().  A store function that
 * fails records its message with jobq__fail() and leaves the rollback to
 * the library.
 *
 * To add a store, see docs/internals/new-store.md.
 */
#ifndef JOBQ_STORE_H
#define JOBQ_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "jobq.h"

/* A parsed database URL (lib/url.c).  All strings are owned by the
 * struct. */
typedef struct jobq_url {
  char *scheme;       /* "sqlite", "postgres", ... */
  char *path;         /* sqlite: the file path */
  /* Network stores: the parts, percent-decoded; host is the host list as
   * written ("a:1,[::1]:2"), NULL when the URL names none. */
  char *user, *password, *host, *port, *dbname;
  /* Network stores: the URL up to its options, as written but for its
   * scheme in lower case, for a client library that parses URLs itself. */
  char *base;
  /* PostgreSQL's keyword/value form ("host=/run/postgresql dbname=app"):
   * no parts, every pair an option. */
  int conninfo;
  /* Query options (or the pairs of the keyword/value form), in order,
   * each key once. */
  size_t nopts;
  char **keys;
  char **values;
} jobq_url;

int jobq__url_parse(jobq *db, const char *text, jobq_url *out);
void jobq__url_release(jobq_url *url);
/* The value of query option key, or NULL. */
const char *jobq__url_opt(const jobq_url *url, const char *key);
/* Whether option i comes after a password option: then it may be a piece
 * of a password that held an unescaped '&', and a message must not name
 * it nor its value. */
int jobq__url_after_secret(const jobq_url *url, size_t i);
/* value (of key, a part of a URL such as a port) as an integer from min
 * to max, into *out; JOBQ_EURL with a message naming key otherwise. */
int jobq__url_int(jobq *db, const char *key, const char *value, int64_t min, int64_t max,
                  int64_t *out);

/* SQL dialects: which text of a statement a store prepares. */
enum { JOBQ_DIALECT_SQLITE, JOBQ_DIALECT_PG, JOBQ_DIALECT_MYSQL };

/* A value bound to a statement parameter.  Text is NUL-terminated; bytes
 * may hold anything.  The library keeps p alive until the statement has
 * run. */
typedef struct jobq_val {
  char type;          /* 'i' integer, 't' text, 'b' bytes, 'n' NULL;
                         a store may add kinds of its own */
  int64_t i;
  const void *p;
  size_t len;
} jobq_val;

/* How a statement may run, beside at once (query's how; NULL: at once,
 * as every statement may).  defer: its result is not read (rows NULL),
 * so a store may hold it and send it with the next statement, reporting
 * its failure then; late: as late as the commit, after the statement
 * that ends the transaction; ids (with defer): the first column of its
 * nids rows, ascending, goes there by the commit at the latest.  ends:
 * the last statement of a transaction of the library's own (a claim): a
 * store may send the COMMIT with it, what waits for the commit between
 * them, and then sets db->txn_committed. */
typedef struct jobq_how {
  int defer, late, ends;
  int64_t *ids;
  size_t nids;
  /* What the statement does to the hot table, for a store that keeps
   * its engine's statistics (PostgreSQL): claim, it claims up to that
   * many jobs; adds, it adds jobs. */
  size_t claim;
  int adds;
} jobq_how;

/* An option of a store's URLs, checked by the library before open()
 * (jobq__url_check): kind 'd' a duration in milliseconds, 's' seconds (a
 * number, or a duration rounded up), 'i' an integer, 'z' a size in bytes,
 * each from min to max; 'n' a name of ours ([a-z_][a-z0-9_]{0,62}); 'c'
 * one of the words of expected ("on or off"); 't' any text; 'x' refused,
 * expected saying why; '*' (its key NULL) any other key, the store's to
 * check (its client library's), expected naming them.  expected: what a
 * message says was expected.  A table ends with an entry of kind 0;
 * max_payload, the library's, is in none. */
typedef struct jobq_option {
  const char *key;
  char kind;
  int64_t min, max;
  const char *expected;
} jobq_option;

/* The hosts of a URL's host list ("a:1,[::1]:2,b"), each with its port
 * (the default when it names none), as jobq__url_hosts() splits them. */
typedef struct jobq_host {
  char *name;
  unsigned port;
} jobq_host;

/* The library's checks of a URL for a store (lib/url.c): its options
 * against the store's table, with one message for each way one is bad
 * (an option after a password hidden); the value of an option of a
 * numeric kind as its kind reads it (dflt when it is not given, or not
 * numeric); and the host list split
 * (*hosts freed with jobq__url_hosts_free; none: *n 0). */
int jobq__url_check(jobq *db, const jobq_url *url, const jobq_option *table);
int64_t jobq__url_number(const jobq_url *url, const jobq_option *table, const char *key,
                         int64_t dflt);
int jobq__url_unknown(jobq *db, const jobq_url *url, const jobq_option *table, size_t i);
int jobq__url_hosts(jobq *db, const jobq_url *url, unsigned dflt, jobq_host **hosts,
                    size_t *n);
void jobq__url_hosts_free(jobq_host *hosts, size_t n);

/* One step of a migration: sql, a schema statement (or several, where
 * the engine takes them in one call); unless (may be NULL), a query whose
 * first column is not 0 when the step was made already: an engine whose
 * schema changes commit one by one has every step made so, that an
 * interrupted jobq init can run again. */
typedef struct jobq_step {
  const char *sql, *unless;
} jobq_step;

/* A named lock: kind ('q' a queue's, 'b' its barrier's, 'k' a key's, 'l'
 * its limits', 'p' a session's parts of it) and the queue, and the key
 * for 'k' (for 'p', the session); shared or exclusive. */
typedef struct jobq_lock {
  char kind;
  int exclusive;
  const char *queue, *key;
} jobq_lock;

/* The checks jobq_doctor() collects (lib/doctor.c). */
typedef struct jobq__checks jobq__checks;

/* A store's cursor over the rows of one statement; opaque to the logic. */
typedef struct jobq_rows jobq_rows;

typedef struct jobq_store {
  const char *scheme;
  int dialect;                 /* which texts of lib/sql.c it runs */
  int named_wakes;             /* 1: a wake-up names its queue (watchers may
                                  keep to theirs); 0: every commit wakes */
  const jobq_option *options;  /* its URLs' options, checked before open */

  /* --- connection --- */
  /* Connects, with the URL's options (checked against options); db->conn
   * holds the store's state.  Sets db->warning,
   * db->stmt_bytes and db->id_step as its engine says. */
  int (*open)(jobq *db, const jobq_url *url);
  void (*close)(jobq *db);
  void *(*native)(jobq *db);
  /* --- the schema --- */
  /* The steps of each version: schema[0] makes jobq_meta, schema[v]
   * (1 to JOBQ_SCHEMA_VERSION) takes the schema from version v - 1 to v;
   * each list ends with a step whose sql is NULL.  lib/migrate.c runs
   * them, and keeps the version. */
  const jobq_step *const *schema;
  /* 1: an embedded database, whose schema the first open that may write
   * makes (jobq_init() on the others). */
  int init_on_open;
  /* Around a migration, outside any transaction: schema_begin takes the
   * lock that keeps initialisers one at a time and begins what the
   * engine can undo; schema_end ends it (ok: commits) and gives the lock
   * back, leaving the connection as it was for the next transaction. */
  int (*schema_begin)(jobq *db);
  int (*schema_end)(jobq *db, int ok);
  /* Runs a step's text as it is but for the engine's own spellings; with
   * first, *first gets the first column of its first row (0 when there
   * is none). */
  int (*schema_run)(jobq *db, const char *sql, int64_t *first);
  /* SQL for least-privilege roles (jobq_roles_sql), a new string; or
   * JOBQ_ENOTSUP, saying why, for an engine without roles. */
  int (*roles)(jobq *db, char **sql);
  /* The engine's own checks for jobq_doctor(), added with
   * jobq__check_add() (lib/doctor.c). */
  int (*doctor)(jobq *db, jobq__checks *checks);

  /* --- transactions --- */
  /* depth 0: a real transaction that may write; depth > 0: a savepoint.
   * lazy (the library's own transactions, never jobq_begin()'s): the
   * store may send the BEGIN with the transaction's first statement, as
   * no one else uses the connection before it, and hold the statements
   * jobq_how lets it hold.  A connection found broken is made again here
   * (see above). */
  int (*begin)(jobq *db, int depth, int lazy);
  int (*commit)(jobq *db, int depth);
  int (*rollback)(jobq *db, int depth);

  /* --- the executor --- */
  /* Runs stmt (a statement of lib/sql.h or a variant, jobq__stmt), its
   * text jobq__sql_text(dialect, stmt), with values args[0..n): single
   * ones, and on a dialect whose set statements take columns whole
   * (PostgreSQL), columns (V_COL; an array each).  Values past the text's
   * highest parameter are not bound.  *rows (when rows is not NULL) gets
   * a cursor before the first row, to be stepped with next() and given
   * back with done(); without rows, the result is dropped.  how (may be
   * NULL) says what else may be done (store.h's jobq_how).  Cursors of
   * different statements may be open together. */
  int (*query)(jobq *db, int stmt, const jobq_val *args, size_t n, jobq_rows **rows,
               const jobq_how *how);
  /* 1: a row is there; 0: no more (the cursor stays to be given back);
   * < 0: an error, recorded on db. */
  int (*next)(jobq *db, jobq_rows *r);
  void (*done)(jobq *db, jobq_rows *r);
  int (*is_null)(jobq_rows *r, int col);
  int64_t (*col_int)(jobq_rows *r, int col);
  /* Text or bytes, followed by a NUL that len does not count; "" for
   * NULL.  Valid until the next next() or done(). */
  const void *(*col_bytes)(jobq_rows *r, int col, size_t *len);
  /* Rows changed by the last statement run. */
  int64_t (*changes)(jobq *db);
  /* The id of the first row the last INSERT into jobq_jobs put (the
   * others' follow it, db->id_step apart); 0 on a dialect whose INSERT
   * returns its ids as rows. */
  int64_t (*insert_id)(jobq *db);

  /* --- locks --- */
  /* Takes the named locks locks[0..n), one after the other in that
   * order, until the transaction ends; lib/order.c says which and why.
   * A store whose writers take turns (one holds the whole database)
   * takes none and returns JOBQ_OK. */
  int (*lock)(jobq *db, const jobq_lock *locks, size_t n);

  /* --- wake-ups --- */
  /* Notes that queue got a job that is ready now, for the store to tell
   * watchers when the transaction commits (nothing to do where watchers
   * see every commit, or there are no wake-ups). */
  void (*wake)(jobq *db, const char *queue);
  /* Outside transactions: watch() sets *fd to a descriptor that turns
   * readable on another connection's commit (JOBQ_ENOTSUP, saying so,
   * where the engine has no wake-ups); changed() drains it and returns 1
   * when something changed since its last call that concerns the handle:
   * a wake-up of a queue that wanted(db, queue) says it watches (every
   * one where wake-ups do not name their queue; always 1 without
   * wake-ups), or < 0 on an error. */
  int (*watch)(jobq *db, int *fd);
  int (*changed)(jobq *db, int (*wanted)(const jobq *db, const char *queue));
} jobq_store;

extern const jobq_store jobq__store_sqlite;
extern const jobq_store jobq__store_postgres;
extern const jobq_store jobq__store_mysql;

/* MariaDB / MySQL: reads the server's version string (info, as
 * mysql_get_server_info() gives it) into *mariadb (1 for MariaDB) and
 * *version (major * 10000 + minor * 100 + patch).  0 when the server has
 * SKIP LOCKED (MariaDB 10.6, MySQL 8.0.1 or newer); -1, with why it is
 * refused in why, otherwise. */
int jobq__mysql_version_check(const char *info, int *mariadb, long *version,
                              char *why, size_t len);
#endif
