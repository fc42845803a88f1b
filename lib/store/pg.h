/*
 * pg.h - what the files of the PostgreSQL store share: its connection's
 * state, its own statements (named locks, wake-ups, statistics) and the
 * calls between its parts.  Nothing outside lib/store/pg_*.c and
 * postgres.c includes it.
 */
#ifndef JOBQ_PG_H
#define JOBQ_PG_H

#include <stdint.h>

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
  PG_TABLE_STATS_XACT,
  PG_SETTINGS,
  PG__END
};

/* A one-dimensional array in PostgreSQL's binary format. */
typedef struct array {
  char *p;
  size_t len, cap;
  int failed;
} array;

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
  /* pooler=transaction: each transaction may run on another server
   * connection, so nothing may outlive one there.  Statements go
   * unnamed, with their text (text), the settings go with every
   * transaction (PG_SETTINGS, after its BEGIN, or before a statement
   * that runs alone, in its round trip), there are no wake-ups to
   * listen for, and the vacuums' lock is the look's transaction's. */
  int pooled;
  char *text[PG__END];         /* pooled: each statement's text, once spelled */
  char set_path[80], set_timeout[32]; /* PG_SETTINGS' values */
  const char *set_values[3];
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

static inline pg *pg_conn(jobq *db) { return db->conn; }



/* One statement to send: prepared statement id with its values, or, with
 * id -1, sql without parameters. */
typedef struct sendable {
  int id;
  const char *sql;
  int n;
  const char *const *values;
  const int *lengths, *formats;
} sendable;

/* The options of its URLs (pg_options.c). */
extern const jobq_option pg_options[];

/* The schema's steps (pg_schema.c). */
extern const jobq_step *const pg_versions[JOBQ_SCHEMA_VERSION + 1];

/* The calls between the store's files. */
/* The connection's parameters from the URL (pg_options.c); a password
 * wiped; a NULL-terminated list of strings freed. */
int pg_params(jobq *db, const jobq_url *u);
void pg_wipe(char *s);
void pg_strings_free(char **v);
void pg_arr_begin(array *a, uint32_t oid, size_t n);
void pg_arr_bytes(array *a, const void *p, size_t n);
void pg_arr_int8(array *a, int64_t v);
jobq_val pg_arr_val(const array *a);
int pg_begin_now(jobq *db);
PGconn *pg_connect_to(jobq *db);
int pg_exec_pending(jobq *db, const sendable *q, PGresult **res);
const char *pg_first_line(const char *msg, char *buf, size_t len);
int pg_later_add(pg *c, int id, int n, const char *const *values, const int *lengths,
                     const int *formats, const jobq_how *how);
void pg_later_clear(pg *c);
void pg_listener_drop(pg *c);
int pg_names_add(names *n, const char *s);
void pg_names_clear(names *n);
int pg_notify_later(jobq *db);
int pg_begin(jobq *db, int depth, int lazy);
int pg_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue));
int64_t pg_changes(jobq *db);
void pg_close(jobq *db);
const void *pg_col_bytes(jobq_rows *r, int col, size_t *len);
int64_t pg_col_int(jobq_rows *r, int col);
int pg_commit(jobq *db, int depth);
int pg_doctor(jobq *db, jobq__checks *c);
void pg_done(jobq *db, jobq_rows *r);
int pg_fail(jobq *db, PGresult *res, const char *what);
int64_t pg_insert_id(jobq *db);
int pg_is_null(jobq_rows *r, int col);
int pg_lock(jobq *db, const jobq_lock *l, size_t n);
void *pg_native(jobq *db);
int pg_next(jobq *db, jobq_rows *r);
int pg_open(jobq *db, const jobq_url *u);
int pg_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how);
int pg_roles(jobq *db, char **out);
int pg_rollback(jobq *db, int depth);
int pg_schema_begin(jobq *db);
int pg_schema_end(jobq *db, int ok);
int pg_schema_run(jobq *db, const char *sql, int64_t *first);
void pg_wake(jobq *db, const char *queue);
int pg_watch(jobq *db, int *fd);
int pg_prepare(jobq *db, int id);
int pg_reconnect(jobq *db);
int pg_refresh_stats(jobq *db, int64_t rows, int may_vacuum);
const char *pg_role_prefix(const pg *c, char *buf, size_t len);
int pg_run_after(jobq *db, const char *sql, const char *what);
int pg_run_begin(jobq *db, const char *what);
int pg_run_plain(jobq *db, const char *sql, const char *what);
void pg_vacuum_reap(pg *c);
void pg_vacuum_start(jobq *db);
void pg_vacuum_unlock(pg *c);

#endif
