/*
 * counts.c - the queues' counters of finished jobs (jobq_counts), kept
 * beside the archive so that stats and metrics need not count it.
 *
 * What a transaction adds to them is written at its end, once per queue,
 * just before the commit: a counter's row is the one lock that every
 * finishing transaction of a queue may share with another, and taken
 * last it is held only for the commit, not for the claims, the key
 * hand-overs and the round trips that came before (many claimers on
 * PostgreSQL waited on it, most of their time, when it was taken with
 * the acknowledgement).  Taken last, it also comes after every lock of
 * the order in lib/order.c, so it closes no cycle with them.
 *
 * And no two sessions share one: a transaction of a session (its claims,
 * acknowledgements and heartbeats) adds to the session's own rows, so
 * that many foremen never wait on one another's commits.  Writers
 * without a session (admin calls, a session's close) add to 16 shared
 * rows per queue, one drawn at random, for all their queues in byte
 * order.  When a session ends (closed, reaped, ended by an epoch bump),
 * its rows are folded into its ender's in the same transaction, after
 * its row is gone: the acknowledgements that locked that row have
 * committed by then, and none can count for it afterwards.  A queue's
 * count is the sum of its rows, always exact.
 *
 * Inside a caller's transaction a library call is a savepoint: what it
 * added is dropped if the savepoint is rolled back and kept for the
 * caller's commit if it is released.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { SHARDS = 16 };

int jobq__count_add(jobq *db, const char *queue, int64_t done, int64_t dead,
                    int64_t cancelled) {
  struct jobq_count *c = NULL;
  for (size_t i = 0; i < db->ncounts && c == NULL; i++)
    if (db->counts[i].depth == db->txn_depth && strcmp(db->counts[i].queue, queue) == 0)
      c = &db->counts[i];
  if (c == NULL) {
    if (db->ncounts == db->capcounts) {
      size_t cap = db->capcounts ? 2 * db->capcounts : 4;
      struct jobq_count *v = realloc(db->counts, cap * sizeof *v);
      if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      db->counts = v;
      db->capcounts = cap;
    }
    char *name = strdup(queue);
    if (name == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    c = &db->counts[db->ncounts++];
    *c = (struct jobq_count){name, db->txn_depth, 0, 0, 0};
  }
  c->done += done;
  c->dead += dead;
  c->cancelled += cancelled;
  return JOBQ_OK;
}

static int by_queue(const void *a, const void *b) {
  return strcmp(((const struct jobq_count *)a)->queue, ((const struct jobq_count *)b)->queue);
}

void jobq__counts_owner(jobq *db, const jobq_session *s) {
  snprintf(db->counts_owner, sizeof db->counts_owner, "%s", s->id);
  db->counts_shard = s->view;
}

int jobq__counts_fold(jobq *db, const char *session) {
  /* A session that ends itself counts in the shared rows. */
  if (strcmp(db->counts_owner, session) == 0) db->counts_owner[0] = '\0';
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_COUNTS_OF, &r, SQL_ARGS(V_TEXT(session)));
  if (rc != JOBQ_OK) return rc;
  int got = 0, failed = 0;
  while (rc == JOBQ_OK && (got = jobq__rows_next(db, r)) == 1) {
    char *queue = jobq__col_text(db, r, 0, &failed);
    rc = failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
                : jobq__count_add(db, queue, jobq__col_int(db, r, 1), jobq__col_int(db, r, 2),
                                  jobq__col_int(db, r, 3));
    free(queue);
  }
  jobq__rows_done(db, r);
  if (rc != JOBQ_OK || got < 0) return rc != JOBQ_OK ? rc : got;
  return jobq__sql_run(db, JOBQ_Q_COUNTS_DROP, SQL_ARGS(V_TEXT(session)));
}

int jobq__counts_write(jobq *db) {
  if (db->ncounts == 0) return JOBQ_OK;
  qsort(db->counts, db->ncounts, sizeof *db->counts, by_queue);
  /* A session's own row (its view's), or one of the shared ones. */
  int64_t shard =
      db->counts_owner[0] != '\0' ? db->counts_shard : (int64_t)(jobq__rand(db) % SHARDS);
  /* Nothing reads them, and they may go with the commit. */
  static const jobq_how late = {.defer = 1, .late = 1};
  int rc = JOBQ_OK;
  for (size_t i = 0; i < db->ncounts && rc == JOBQ_OK;) {
    /* Savepoints released leave a queue in more than one entry. */
    struct jobq_count sum = db->counts[i];
    for (i++; i < db->ncounts && strcmp(db->counts[i].queue, sum.queue) == 0; i++) {
      sum.done += db->counts[i].done;
      sum.dead += db->counts[i].dead;
      sum.cancelled += db->counts[i].cancelled;
    }
    if (sum.done != 0 || sum.dead != 0 || sum.cancelled != 0)
      rc = db->store->query(db, JOBQ_Q_COUNT_ADD,
                            SQL_ARGS(V_TEXT(sum.queue), V_TEXT(db->counts_owner), V_INT(shard),
                                     V_INT(sum.done), V_INT(sum.dead), V_INT(sum.cancelled)),
                            NULL, &late);
  }
  /* Written: a store that commits with the claim (store.h) writes them
   * before the commit would, which then finds nothing to add. */
  for (size_t i = 0; i < db->ncounts && rc == JOBQ_OK; i++)
    db->counts[i].done = db->counts[i].dead = db->counts[i].cancelled = 0;
  return rc;
}

void jobq__counts_settle(jobq *db, int kept) {
  if (db->txn_depth == 0) db->counts_owner[0] = '\0';
  size_t k = 0;
  for (size_t i = 0; i < db->ncounts; i++) {
    struct jobq_count *c = &db->counts[i];
    if (c->depth <= db->txn_depth || (kept && db->txn_depth > 0)) {
      if (c->depth > db->txn_depth) c->depth = db->txn_depth;
      db->counts[k++] = *c;
    } else {
      free(c->queue);
    }
  }
  db->ncounts = k;
}
