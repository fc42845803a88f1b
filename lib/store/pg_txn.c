/*
 * pg_txn.c - the PostgreSQL store's transactions and named locks: a
 * connection made again before a transaction begins, a lazy BEGIN, the
 * commit that sends what waits, and advisory locks named as the
 * jobq_put() SQL function names them.
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

/* The store's own statements held like the library's deferred ones: the
 * locks, and the wake-ups, which go with the commit. */
static const jobq_how held = {.defer = 1}, with_commit = {.defer = 1, .late = 1};

void pg_names_clear(names *n) {
  for (size_t i = 0; i < n->n; i++) free(n->v[i]);
  n->n = 0;
}

/* Adds s unless the list has it: 0, or -1 when out of memory. */
int pg_names_add(names *n, const char *s) {
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

/* ---------------------------------------------------------------- transactions */

/* A connection that broke since the last transaction is made again (its
 * prepared statements with it) before the next one begins. */
int pg_reconnect(jobq *db) {
  pg *c = pg_conn(db);
  PGconn *pc = pg_connect_to(db);
  if (pc == NULL) return db->err;
  PQfinish(c->conn);
  c->conn = pc;
  db->connects++; /* for the check of acknowledged writes (lib/mark.c) */
  c->vacuum_lock = 0; /* it ended with the session that held it */
  memset(c->prepared, 0, sizeof c->prepared);
  /* The wake-up connection may be on a server that is gone without a
   * word (a failover): it is opened again too, by the next look. */
  pg_listener_drop(c);
  c->listen_failures = 0;
  c->listen_retry_ms = 0;
  return JOBQ_OK;
}

/* A connection known to be broken is made again before a transaction. */
static int connected(jobq *db) {
  return PQstatus(pg_conn(db)->conn) == CONNECTION_OK ? JOBQ_OK : pg_reconnect(db);
}

/* BEGIN, at once. */
int pg_begin_now(jobq *db) {
  pg_conn(db)->begin_pending = 0;
  int rc = connected(db);
  if (rc != JOBQ_OK) return rc;
  rc = pg_run_begin(db, "starting a transaction");
  /* Nothing was done yet: a connection that turns out broken is made
   * again, once. */
  if (rc == JOBQ_ECONN && pg_reconnect(db) == JOBQ_OK)
    rc = pg_run_begin(db, "starting a transaction");
  return rc;
}

/* The end of a transaction: nothing waits to be sent any more. */
static void txn_over(pg *c) {
  pg_later_clear(c);
  pg_names_clear(&c->wake);
  c->begin_pending = 0;
  c->commit_with = 0;
  c->committed = 0;
  c->lazy = 0;
}

/* A lazy BEGIN waits for the first statement (exec_pending), which
 * saves a round trip on every transaction of the library's own; so do
 * the statements that may wait (jobq_how).  In a caller's transaction
 * (jobq_begin) every statement runs at once: the caller's own statements
 * on the connection come next. */
int pg_begin(jobq *db, int depth, int lazy) {
  pg *c = pg_conn(db);
  if (depth > 0) {
    int rc = c->begin_pending ? pg_begin_now(db) : JOBQ_OK;
    return rc == JOBQ_OK ? pg_run_after(db, "SAVEPOINT jobq", "starting a savepoint") : rc;
  }
  txn_over(c);
  c->lazy = lazy;
  if (!lazy) return pg_begin_now(db);
  int rc = connected(db);
  if (rc == JOBQ_OK) c->begin_pending = 1;
  return rc;
}

/* The transaction's wake-ups, if any (and the URL allows them), held to
 * go with its commit (or sent now, after what is held, when the list is
 * full). */
int pg_notify_later(jobq *db) {
  pg *c = pg_conn(db);
  if (!c->notify || c->wake.n == 0) return JOBQ_OK;
  array a;
  pg_arr_begin(&a, OID_TEXT, c->wake.n);
  for (size_t i = 0; i < c->wake.n; i++) pg_arr_bytes(&a, c->wake.v[i], strlen(c->wake.v[i]));
  int rc = a.failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : pg_prepare(db, PG_NOTIFY);
  const char *values[] = {a.p};
  const int lengths[] = {(int)a.len}, formats[] = {1};
  if (rc == JOBQ_OK && !pg_later_add(c, PG_NOTIFY, 1, values, lengths, formats, &with_commit))
    rc = pg_query(db, PG_NOTIFY, SQL_ARGS(pg_arr_val(&a)), NULL, NULL);
  free(a.p);
  return rc;
}




/* What waits for the end of a transaction: a vacuum (refresh_stats), or
 * the vacuums' lock given back once this handle's vacuum has ended or
 * could not start. */
static void txn_ended(jobq *db) {
  pg *c = pg_conn(db);
  pg_vacuum_reap(c);
  if (c->vacuum_wanted) {
    c->vacuum_wanted = 0;
    pg_vacuum_start(db);
  }
  if (c->vacuum_lock && c->vacuum == NULL) pg_vacuum_unlock(c);
}

int pg_commit(jobq *db, int depth) {
  if (depth > 0) return pg_run_after(db, "RELEASE SAVEPOINT jobq", "releasing a savepoint");
  pg *c = pg_conn(db);
  int rc = JOBQ_OK;
  /* When no statement ran (nothing was sent, nothing waits), there is
   * nothing to commit; nor when the claim took the COMMIT with it. */
  if (!c->committed && (!c->begin_pending || c->nlater > 0)) {
    rc = pg_notify_later(db);
    if (rc == JOBQ_OK) rc = pg_run_after(db, "COMMIT", "committing");
  }
  txn_over(c);
  txn_ended(db);
  return rc;
}

int pg_rollback(jobq *db, int depth) {
  pg *c = pg_conn(db);
  /* What waited to be sent was never sent; with a BEGIN still waiting,
   * neither was anything else.  A transaction committed with its claim
   * has nothing to undo. */
  int sent = depth > 0 || (!c->begin_pending && !c->committed);
  if (depth > 0)
    pg_later_clear(c);
  else
    txn_over(c);
  if (sent && PQstatus(c->conn) == CONNECTION_OK)
    PQclear(PQexec(c->conn, depth > 0 ? "ROLLBACK TO SAVEPOINT jobq; RELEASE SAVEPOINT jobq"
                                      : "ROLLBACK"));
  if (depth == 0) txn_ended(db);
  return JOBQ_OK;
}

/* A wake-up lost for want of memory is no harm: watchers poll as well. */
void pg_wake(jobq *db, const char *queue) { (void)pg_names_add(&pg_conn(db)->wake, queue); }

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
int pg_lock(jobq *db, const jobq_lock *l, size_t n) {
  if (n == 1) {
    char *name = lock_name(l);
    if (name == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    int rc = pg_query(db, l->exclusive ? PG_LOCK : PG_LOCK_SHARED, SQL_ARGS(V_TEXT(name)), NULL,
                      &held);
    free(name);
    return rc;
  }
  array lnames, modes;
  pg_arr_begin(&lnames, OID_TEXT, n);
  pg_arr_begin(&modes, OID_INT8, n);
  for (size_t i = 0; i < n; i++) {
    char *name = lock_name(&l[i]);
    if (name == NULL) lnames.failed = 1;
    else pg_arr_bytes(&lnames, name, strlen(name));
    free(name);
    pg_arr_int8(&modes, l[i].exclusive);
  }
  int rc = lnames.failed || modes.failed
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : pg_query(db, PG_LOCKS, SQL_ARGS(pg_arr_val(&lnames), pg_arr_val(&modes)), NULL, &held);
  free(lnames.p);
  free(modes.p);
  return rc;
}
