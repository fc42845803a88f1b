/*
 * my.h - what the files of the MariaDB / MySQL store share: its
 * connection's state, its own statements (the rows of named locks) and
 * the calls between its parts.  Nothing outside lib/store/my_*.c and
 * mysql.c includes it.
 */
#ifndef JOBQ_MY_H
#define JOBQ_MY_H

#include <stdint.h>

#include "internal.h"
#include "store/libmariadb.h"

#define MARIADB_MIN 100600L /* 10.6: SKIP LOCKED */
#define MYSQL_MIN 80001L    /* 8.0.1: SKIP LOCKED */
#define DEFAULT_PORT 3306
#define CHUNK 32            /* keys' locks per statement (my_txn.c) */

/* This store's own statements, numbered after lib/sql.h's. */
enum {
  MY_LOCK_S = JOBQ_STMT_COUNT,
  MY_LOCK_X,
  MY_LOCK_ADD,
  MY_LOCK_KEYS,
  MY_LOCK_ADD_KEYS,
  MY__END
};

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
  jobq_host *hosts;            /* the URL's host list (none: the default) */
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

static inline my *my_conn(jobq *db) { return db->conn; }

/* The options of its URLs (my_connect.c). */
extern const jobq_option my_options[];

/* The schema's steps (my_schema.c). */
extern const jobq_step *const my_versions[JOBQ_SCHEMA_VERSION + 1];

/* The calls between the store's files. */
MYSQL *my_connect_any(jobq *db);
int my_is_denied(unsigned err);
int my_is_off(const char *v);
int my_begin(jobq *db, int depth, int lazy);
int64_t my_changes(jobq *db);
void my_close(jobq *db);
const void *my_col_bytes(jobq_rows *r, int col, size_t *len);
int64_t my_col_int(jobq_rows *r, int col);
int my_commit(jobq *db, int depth);
int my_doctor(jobq *db, jobq__checks *k);
void my_done(jobq *db, jobq_rows *r);
int my_error(jobq *db, unsigned err, const char *msg, const char *what);
int64_t my_insert_id(jobq *db);
int my_is_null(jobq_rows *r, int col);
int my_lock(jobq *db, const jobq_lock *l, size_t n);
void *my_native(jobq *db);
int my_next(jobq *db, jobq_rows *r);
int my_open(jobq *db, const jobq_url *u);
int my_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how);
int my_roles(jobq *db, char **out);
int my_rollback(jobq *db, int depth);
int my_schema_begin(jobq *db);
int my_schema_end(jobq *db, int ok);
int my_schema_run(jobq *db, const char *sql, int64_t *first);
MYSQL_ROW my_query_row(jobq *db, MYSQL *m, const char *sql, MYSQL_RES **res,
                           const char *what);
int my_run_plain(jobq *db, const char *sql, const char *what);
void my_stmts_release(my *c);

#endif
