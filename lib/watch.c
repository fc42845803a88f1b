/*
 * watch.c - wake-ups: a worker sleeps on a descriptor that the store makes
 * readable when another connection commits (inotify on SQLite's write-ahead
 * log, LISTEN on PostgreSQL), and asks jobq_changed() whether anything
 * changed, instead of polling the queue with claims.
 */
#include "internal.h"

int jobq_watch(jobq *db, int *fd) {
  *fd = -1;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  if (db->store->watch == NULL)
    return jobq__fail(db, JOBQ_ENOTSUP, "the %s store cannot watch for new work: poll instead",
                      db->store->scheme);
  return db->store->watch(db, fd);
}

int jobq_changed(jobq *db) {
  if (db == NULL || db->store == NULL || db->conn == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  if (db->store->changed == NULL) return 1;
  return db->store->changed(db);
}

void jobq__wake(jobq *db, const char *queue) {
  if (db->store->wake != NULL) db->store->wake(db, queue);
}
