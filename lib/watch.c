/*
 * watch.c - wake-ups: a worker sleeps on a descriptor that the store makes
 * readable when another connection commits (inotify on SQLite's write-ahead
 * log, LISTEN on PostgreSQL), and asks jobq_changed() whether anything
 * changed, instead of polling the queue with claims; which queues'
 * wake-ups a worker cares for (jobq_watch_queues); and when the next
 * delayed job or retry comes due, which writes nothing and so wakes no
 * one (jobq_next_due; jobq_session_next_due, of what a session may
 * claim).
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

/* A look reads at most this many ready jobs of a queue: past it, the
 * earliest may be any of them (the index is in priority order first). */
#define DUE_LOOK 100

/* The look at one queue (NULL: every queue): *due_in_ms as in
 * jobq_next_due(), lowered to what it finds.  With a session s, of the
 * jobs s may claim: of a queue in parts that s claims from, only those
 * of its own parts (and all of it once it is back in one part). */
static int next_due(jobq *db, jobq_session *s, const char *queue, int64_t *due_in_ms) {
  jobq_rows *r;
  int mine = s != NULL && s->njoined > 0;
  int got;
  if (queue == NULL && mine)
    got = jobq__sql_row(db, JOBQ_Q_NEXT_DUE_MINE, &r,
                        SQL_ARGS(V_INT(DUE_LOOK + 1), V_TEXT(s->id)));
  else if (queue == NULL)
    got = jobq__sql_row(db, JOBQ_Q_NEXT_DUE_ALL, &r, SQL_ARGS(V_INT(DUE_LOOK + 1)));
  else if (mine && jobq__parts_joined(s, queue))
    got = jobq__sql_row(db, JOBQ_Q_NEXT_DUE_PARTS, &r,
                        SQL_ARGS(V_TEXT(queue), V_INT(DUE_LOOK + 1), V_TEXT(s->id)));
  else
    got = jobq__sql_row(db, JOBQ_Q_NEXT_DUE, &r, SQL_ARGS(V_TEXT(queue), V_INT(DUE_LOOK + 1)));
  if (got < 0) return got;
  if (got == 0) return jobq__fail(db, JOBQ_EDB, "the look at jobs coming due read no row");
  int64_t n = jobq__col_int(db, r, 0), in = jobq__col_int(db, r, 1);
  jobq__rows_done(db, r);
  if (n == 0) return JOBQ_OK;
  if (n > DUE_LOOK || in < 0) in = 0;
  if (*due_in_ms < 0 || in < *due_in_ms) *due_in_ms = in;
  return JOBQ_OK;
}

static int look(jobq *db, jobq_session *s, const char *const *queues, size_t nq,
                int64_t *due_in_ms) {
  if (due_in_ms != NULL) *due_in_ms = -1;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  if (due_in_ms == NULL) return jobq__fail(db, JOBQ_EINVAL, "invalid due_in_ms: NULL");
  if (nq > 0 && queues == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid queues: NULL with a count of %zu", nq);
  for (size_t i = 0; i < nq; i++)
    if ((rc = jobq_check_queue(db, queues[i])) != JOBQ_OK) return rc;
  if (nq == 0) return next_due(db, s, NULL, due_in_ms);
  for (size_t i = 0; i < nq && rc == JOBQ_OK && *due_in_ms != 0; i++)
    rc = next_due(db, s, queues[i], due_in_ms);
  return rc;
}

int jobq_next_due(jobq *db, const char *const *queues, size_t nq, int64_t *due_in_ms) {
  return look(db, NULL, queues, nq, due_in_ms);
}

int jobq_session_next_due(jobq_session *s, const char *const *queues, size_t nq,
                          int64_t *due_in_ms) {
  if (s == NULL) return JOBQ_EINVAL;
  return look(s->db, s, queues, nq, due_in_ms);
}

void jobq__wake_later(jobq *db, const char *queue) { db->store->wake(db, queue); }

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
