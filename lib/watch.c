/*
 * watch.c - wake-ups: a worker sleeps on a descriptor that the store makes
 * readable when another connection commits (inotify on SQLite's write-ahead
 * log, LISTEN on PostgreSQL), and asks jobq_changed() whether anything
 * changed, instead of polling the queue with claims; and which queues'
 * wake-ups a worker cares for (jobq_watch_queues).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int jobq_watch(jobq *db, int *fd) {
  *fd = -1;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  return db->store->watch(db, fd);
}

int jobq_changed(jobq *db) {
  if (db == NULL || db->store == NULL || db->conn == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  int rc = db->store->changed(db, jobq__watching);
  if (rc == 0 && db->woke) rc = 1;
  db->woke = 0;
  return rc;
}

static void watched_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

int jobq_watch_queues(jobq *db, const char *const *queues, size_t nq) {
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  /* Only a store whose wake-ups name their queue can keep a watcher to
   * its queues: the others wake every watcher on every commit. */
  if (!db->store->named_wakes)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "the %s store's wake-ups do not name their queue: every commit wakes",
                      db->store->scheme);
  if (nq > 0 && queues == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid queues: NULL with a count of %zu", nq);
  for (size_t i = 0; i < nq; i++)
    if ((rc = jobq_check_queue(db, queues[i])) != JOBQ_OK) return rc;
  char **v = nq ? calloc(nq, sizeof *v) : NULL;
  if (nq && v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < nq; i++) {
    if ((v[i] = strdup(queues[i])) == NULL) {
      watched_free(v, i);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
  }
  watched_free(db->watched, db->nwatched);
  db->watched = v;
  db->nwatched = nq;
  return JOBQ_OK;
}

int jobq__watching(const jobq *db, const char *queue) {
  if (db->nwatched == 0) return 1;
  for (size_t i = 0; i < db->nwatched; i++)
    if (strcmp(db->watched[i], queue) == 0) return 1;
  return 0;
}

void jobq__watch_release(jobq *db) {
  watched_free(db->watched, db->nwatched);
  db->watched = NULL;
  db->nwatched = 0;
}

void jobq__wake(jobq *db, const char *queue) {
  db->store->wake(db, queue);
  if (!jobq__watching(db, queue)) return;
  if (db->txn_depth > 0)
    db->wake_pending = 1;
  else
    db->woke = 1;
}

/* A store does not tell a handle of its own commits (SQLite's
 * data_version and PostgreSQL's notifier both leave them out), but a
 * commit of its own that made a job ready (the next of an ordering key, a
 * barrier's turn, an immediate retry) is work for it all the same. */
void jobq__wake_settle(jobq *db, int committed) {
  if (db->txn_depth > 0) return;
  if (committed && db->wake_pending) db->woke = 1;
  db->wake_pending = 0;
}
