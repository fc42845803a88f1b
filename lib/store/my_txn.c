/*
 * my_txn.c - the MariaDB / MySQL store's transactions and named locks:
 * a connection made again before a transaction begins, and the rows of
 * jobq_locks that named locks are, many keys' a few statements for all.
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- transactions */

/* A connection that broke since the last transaction is made again (its
 * prepared statements with it) before the next one begins. */
static int reconnect(jobq *db) {
  my *c = my_conn(db);
  MYSQL *m = my_connect_any(db);
  if (m == NULL) return db->err;
  my_stmts_release(c);
  mysql_close(c->conn);
  c->conn = m;
  db->connects++; /* for the check of acknowledged writes (lib/mark.c) */
  c->broken = 0;
  c->aborted = 0;
  return JOBQ_OK;
}

int my_begin(jobq *db, int depth, int lazy) {
  (void)lazy;
  my *c = my_conn(db);
  if (depth > 0) {
    if (c->aborted)
      return jobq__fail(db, JOBQ_EBUSY,
                        "the transaction was rolled back after a deadlock or lock wait "
                        "timeout: roll back, then run it again");
    return my_run_plain(db, "SAVEPOINT jobq", "starting a savepoint");
  }
  c->aborted = 0;
  if (c->broken) {
    int rc = reconnect(db);
    if (rc != JOBQ_OK) return rc;
  }
  int rc = my_run_plain(db, "START TRANSACTION", "starting a transaction");
  /* Nothing was done yet: a connection that turns out broken is made
   * again, once. */
  if (rc == JOBQ_ECONN && reconnect(db) == JOBQ_OK)
    rc = my_run_plain(db, "START TRANSACTION", "starting a transaction");
  return rc;
}

int my_commit(jobq *db, int depth) {
  my *c = my_conn(db);
  if (c->aborted)
    return jobq__fail(db, JOBQ_EBUSY,
                      "the transaction was rolled back after a deadlock or lock wait "
                      "timeout: roll back, then run it again");
  if (depth > 0) return my_run_plain(db, "RELEASE SAVEPOINT jobq", "releasing a savepoint");
  return my_run_plain(db, "COMMIT", "committing");
}

int my_rollback(jobq *db, int depth) {
  my *c = my_conn(db);
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
int my_lock(jobq *db, const jobq_lock *l, size_t n) {
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
