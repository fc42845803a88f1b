/*
 * admin.c - the calls behind the operator's commands that change one job
 * or queue: retry, cancel, pause, resume, the key policy and the epoch
 * bump (those over many jobs are lib/bulk.c's).  Each validates its input
 * and runs in one transaction of its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int check_id(jobq *db, int64_t id) {
  if (id <= 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid job id '%lld': expected a positive integer",
                      (long long)id);
  return JOBQ_OK;
}

static int not_found(jobq *db, int64_t id) {
  return jobq__fail(db, JOBQ_ENOTFOUND, "no job with id %lld: never put, or pruned",
                    (long long)id);
}

/* An archived job's row (DONE_ROW), locked; 0 when there is none. */
typedef struct archived {
  int outcome;
  char *queue, *key, *unique;
  int barrier;
} archived;

static int read_archived(jobq *db, int64_t id, archived *a) {
  memset(a, 0, sizeof *a);
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_DONE_ROW, &r, SQL_ARGS(V_INT(id)));
  if (got <= 0) return got;
  int failed = 0;
  size_t len;
  a->outcome = jobq_state_parse(db->store->col_bytes(r, 0, &len));
  a->queue = jobq__col_text(db, r, 1, &failed);
  a->key = jobq__col_text(db, r, 2, &failed);
  a->unique = jobq__col_text(db, r, 3, &failed);
  a->barrier = (int)jobq__col_int(db, r, 4);
  jobq__rows_done(db, r);
  return failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : 1;
}

static void archived_release(archived *a) {
  free(a->queue);
  free(a->key);
  free(a->unique);
}

/* ---------------------------------------------------------------- retry */

static int retry(jobq *db, int64_t id) {
  archived a;
  int got = read_archived(db, id, &a);
  if (got < 0) return got;
  if (got == 0) {
    jobq_jobref ref;
    int state;
    got = jobq__job_ref(db, id, &ref, &state);
    if (got < 0) return got;
    if (got == 0) return not_found(db, id);
    jobq__job_ref_release(&ref);
    return jobq__fail(db, JOBQ_ESTATE,
                      "job %lld is %s: only dead or cancelled jobs can be retried",
                      (long long)id, jobq_state_name(state));
  }
  int rc = JOBQ_OK;
  if (a.outcome == JOBQ_STATE_DONE)
    rc = jobq__fail(db, JOBQ_ESTATE,
                    "job %lld is done: only dead or cancelled jobs can be retried",
                    (long long)id);
  if (rc == JOBQ_OK && a.unique != NULL) {
    int64_t holder;
    rc = jobq__sql_int(db, JOBQ_Q_UNIQUE_FIND, 0, &holder,
                       SQL_ARGS(V_TEXT(a.queue), V_TEXT(a.unique)));
    if (rc == JOBQ_OK && holder != 0)
      rc = jobq__fail(db, JOBQ_ESTATE,
                      "job %lld cannot be retried: its unique key '%s' is held by "
                      "unfinished job %lld",
                      (long long)id, a.unique, (long long)holder);
  }
  jobq_jobref ref = {id, a.queue, a.key, a.barrier, 0};
  if (rc == JOBQ_OK) rc = jobq__lock_job(db, &ref, 0);
  /* A dead head that blocks its key becomes the key's head again. */
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_UNBLOCK, SQL_ARGS(V_INT(id)));
  int wait = 0, orders = 1;
  /* A key of a queue with a limit per key does not order (lib/limit.c). */
  if (rc == JOBQ_OK && a.key != NULL) rc = jobq__key_orders(db, a.queue, &orders);
  if (!orders) ref.key = NULL;
  if (rc == JOBQ_OK) rc = jobq__must_wait(db, &ref, -1, &wait);
  if (rc == JOBQ_OK)
    rc = jobq__sql_run(db, JOBQ_Q_UNARCHIVE,
                       SQL_ARGS(V_INT(id), V_TEXT(wait ? "waiting" : "ready")));
  /* Back in its key's part (UNARCHIVE gives its id's). */
  if (rc == JOBQ_OK && a.key != NULL) rc = jobq__parts_rekey(db, a.queue, a.key);
  if (rc == JOBQ_OK && !wait) jobq__wake(db, a.queue);
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_DELETE_DONE, SQL_ARGS(V_INT(id)));
  if (rc == JOBQ_OK)
    rc = jobq__count_add(db, a.queue, 0, a.outcome == JOBQ_STATE_DEAD ? -1 : 0,
                         a.outcome == JOBQ_STATE_CANCELLED ? -1 : 0);
  archived_release(&a);
  return rc;
}

int jobq_retry(jobq *db, int64_t id) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (check_id(db, id) != JOBQ_OK) return JOBQ_EINVAL;
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__txn_end(db, retry(db, id));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

/* Dead jobs a retry of them all takes per transaction, so that it never
 * holds a long one (see PRUNE_CHUNK in lib/bulk.c). */
#define RETRY_CHUNK 1000

/* retry() for queue's dead jobs after id after up to id last (locked)
 * that have no ordering key, no unique key and are no barrier, in two
 * statements for them all: none of them waits.  Unless the queue has an
 * unfinished barrier; and a dead barrier among them, retried, waits for
 * the ones before it and they after it wait for it, so those after it
 * are left to retry(), one by one in id order.  *moved gets how many. */
static int retry_dead_plain(jobq *db, const char *queue, int64_t after, int64_t last,
                            int64_t *moved) {
  *moved = 0;
  jobq_jobref ref = {0, queue, NULL, 0, 0};
  int pending = 0;
  int64_t barrier = 0;
  int rc = jobq__lock_job(db, &ref, 0);
  if (rc == JOBQ_OK) rc = jobq__barrier_pending(db, queue, &pending);
  if (rc != JOBQ_OK || pending) return rc;
  rc = jobq__sql_int(db, JOBQ_Q_DEAD_BARRIER, 0, &barrier,
                     SQL_ARGS(V_TEXT(queue), V_INT(after), V_INT(last)));
  if (rc != JOBQ_OK) return rc;
  if (barrier != 0) last = barrier - 1;
  rc = jobq__sql_change(db, JOBQ_Q_UNARCHIVE_DEAD, moved,
                        SQL_ARGS(V_TEXT(queue), V_INT(after), V_INT(last)));
  if (rc != JOBQ_OK || *moved == 0) return rc;
  int64_t deleted = 0;
  rc = jobq__sql_change(db, JOBQ_Q_DELETE_DEAD, &deleted,
                        SQL_ARGS(V_TEXT(queue), V_INT(after), V_INT(last)));
  if (rc == JOBQ_OK && deleted != *moved)
    rc = jobq__fail(db, JOBQ_EDB, "retrying %lld dead jobs removed %lld from the archive",
                    (long long)*moved, (long long)deleted);
  if (rc == JOBQ_OK) rc = jobq__count_add(db, queue, 0, -*moved, 0);
  if (rc == JOBQ_OK) jobq__wake(db, queue);
  return rc;
}

/* One transaction of a retry of queue's dead jobs: the next RETRY_CHUNK
 * of them after id *after, in id order, locked; the plain ones at once,
 * the rest one by one.  *n gets how many; *after the last one's id. */
static int retry_dead_part(jobq *db, const char *queue, int64_t *after, size_t *n) {
  int64_t *ids = NULL, moved = 0;
  int rc = jobq__sql_ids(db, JOBQ_Q_DEAD_IDS, RETRY_CHUNK, &ids, n,
                         SQL_ARGS(V_TEXT(queue), V_INT(*after), V_INT(RETRY_CHUNK)));
  if (rc == JOBQ_OK && *n > 0) rc = retry_dead_plain(db, queue, *after, ids[*n - 1], &moved);
  /* What is left of the part (the jobs that went are no longer dead),
   * read again when some went. */
  size_t left = *n;
  int64_t *rest = ids;
  if (rc == JOBQ_OK && moved > 0)
    rc = jobq__sql_ids(db, JOBQ_Q_DEAD_IDS, RETRY_CHUNK, &rest, &left,
                       SQL_ARGS(V_TEXT(queue), V_INT(*after), V_INT(RETRY_CHUNK)));
  for (size_t i = 0; rc == JOBQ_OK && i < left && rest[i] <= ids[*n - 1]; i++)
    rc = retry(db, rest[i]);
  if (rc == JOBQ_OK && *n > 0) *after = ids[*n - 1];
  if (rest != ids) free(rest);
  free(ids);
  return rc;
}

int jobq_retry_dead(jobq *db, const char *queue, int64_t *count) {
  if (count != NULL) *count = 0;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (queue != NULL && jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  char **names = NULL;
  size_t nq = 1;
  int rc = queue != NULL ? JOBQ_OK
                         : jobq__sql_texts(db, JOBQ_Q_QUEUE_NAMES, &names, &nq, SQL_ARGS());
  int64_t total = 0;
  for (size_t q = 0; rc == JOBQ_OK && q < nq; q++) {
    const char *name = queue != NULL ? queue : names[q];
    int64_t after = 0;
    for (size_t got = RETRY_CHUNK; got == RETRY_CHUNK;) {
      int64_t next;
      int attempt = 0;
      do {
        next = after;
        if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
        rc = jobq__txn_end(db, retry_dead_part(db, name, &next, &got));
      } while (jobq__txn_retry(db, rc, &attempt));
      if (rc != JOBQ_OK) break;
      after = next;
      total += (int64_t)got;
      if (count != NULL) *count = total;
    }
  }
  if (names != NULL) jobq__texts_free(names, nq);
  return rc;
}

/* ---------------------------------------------------------------- cancel */

/* A dead head that blocks its key: marked cancelled, and the key goes on. */
static int cancel_blocking(jobq *db, int64_t id, int *now) {
  archived a;
  int got = read_archived(db, id, &a);
  if (got < 0) return got;
  if (got == 0) return not_found(db, id);
  int blocking = 0;
  int rc = jobq__sql_exists(db, JOBQ_Q_BLOCKED_BY, &blocking, SQL_ARGS(V_INT(id)));
  if (rc == JOBQ_OK && !blocking)
    rc = jobq__fail(db, JOBQ_ESTATE, "job %lld is already %s: nothing to cancel",
                    (long long)id, jobq_state_name(a.outcome));
  jobq_jobref ref = {id, a.queue, a.key, 0, 0};
  if (rc == JOBQ_OK) rc = jobq__lock_job(db, &ref, 0);
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_UNBLOCK, SQL_ARGS(V_INT(id)));
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_MARK_CANCELLED, SQL_ARGS(V_INT(id)));
  if (rc == JOBQ_OK) rc = jobq__count_add(db, a.queue, 0, -1, 1);
  if (rc == JOBQ_OK) rc = jobq__promote_key(db, a.queue, a.key, 0);
  if (rc == JOBQ_OK) *now = 1;
  archived_release(&a);
  return rc;
}

int jobq__cancel(jobq *db, int64_t id, int *now) {
  jobq_jobref ref;
  int state;
  int got = jobq__job_ref(db, id, &ref, &state);
  if (got < 0) return got;
  if (got == 0) return cancel_blocking(db, id, now);
  int rc;
  if (state == JOBQ_STATE_RUNNING) {
    /* Its worker hears of it on its next heartbeat or extend. */
    *now = 0;
    rc = jobq__sql_run(db, JOBQ_Q_REQUEST_CANCEL, SQL_ARGS(V_INT(id)));
  } else {
    *now = 1;
    const char *e = "cancelled by an operator";
    rc = jobq__lock_job(db, &ref, 1);
    if (rc == JOBQ_OK)
      rc = jobq__archive(db, &ref, state, JOBQ_STATE_CANCELLED, NULL, 0, e, strlen(e));
  }
  jobq__job_ref_release(&ref);
  return rc;
}

int jobq_cancel(jobq *db, int64_t id, int *now) {
  int dummy;
  if (now == NULL) now = &dummy;
  *now = 0;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (check_id(db, id) != JOBQ_OK) return JOBQ_EINVAL;
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__txn_end(db, jobq__cancel(db, id, now));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

/* ---------------------------------------------------------------- queues */

/* paused: 0/1, or -1 to leave it; policy: "block"/"skip" or NULL. */
static int set_queue(jobq *db, const char *queue, int paused, const char *policy) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__sql_defer(db, JOBQ_Q_QUEUE_ENSURE, SQL_ARGS(V_TEXT(queue)));
    if (rc == JOBQ_OK && paused >= 0)
      rc = jobq__sql_run(db, JOBQ_Q_SET_PAUSED, SQL_ARGS(V_TEXT(queue), V_INT(paused)));
    /* A resumed queue's ready jobs are work again: watchers hear of it. */
    if (rc == JOBQ_OK && paused == 0) jobq__wake(db, queue);
    if (rc == JOBQ_OK && policy != NULL)
      rc = jobq__sql_run(db, JOBQ_Q_SET_POLICY, SQL_ARGS(V_TEXT(queue), V_TEXT(policy)));
    rc = jobq__txn_end(db, rc);
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

int jobq_pause(jobq *db, const char *queue) { return set_queue(db, queue, 1, NULL); }
int jobq_resume(jobq *db, const char *queue) { return set_queue(db, queue, 0, NULL); }

int jobq_set_key_policy(jobq *db, const char *queue, const char *policy) {
  if (db == NULL) return JOBQ_EINVAL;
  if (policy == NULL || (strcmp(policy, "block") != 0 && strcmp(policy, "skip") != 0))
    return jobq__fail(db, JOBQ_EINVAL, "invalid key policy '%s': expected block or skip",
                      policy ? policy : "");
  return set_queue(db, queue, -1, policy);
}

/* ---------------------------------------------------------------- epoch */

/* Ends every session as lost (their jobs go back to ready) and raises the
 * epoch to at least the current Unix time in seconds, so that it only
 * rises even across restores of older backups. */
static int epoch_bump(jobq *db, int64_t *epoch) {
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_ALL_SESSIONS, &r, SQL_ARGS());
  if (rc != JOBQ_OK) return rc;
  char (*ids)[JOBQ_SESSION_ID_LEN + 1] = NULL;
  size_t n = 0;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    void *v = realloc(ids, (n + 1) * sizeof *ids);
    if (v == NULL) {
      got = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      break;
    }
    ids = v;
    size_t len;
    const char *t = db->store->col_bytes(r, 0, &len);
    snprintf(ids[n++], sizeof ids[0], "%.*s", (int)len, t);
  }
  jobq__rows_done(db, r);
  rc = got < 0 ? got : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = jobq__end_session(db, ids[i], 1);
  free(ids);
  int64_t now = 0;
  if (rc == JOBQ_OK) rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_BUMP, SQL_ARGS(V_INT(now / 1000)));
  if (rc == JOBQ_OK) rc = jobq__sql_int(db, JOBQ_Q_EPOCH, 0, epoch, SQL_ARGS());
  return rc;
}

int jobq_epoch_bump(jobq *db, int64_t *epoch) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  int64_t e = 0;
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__txn_end(db, epoch_bump(db, &e));
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc == JOBQ_OK) {
    /* This handle accepts the new epoch as the truth from now on, and
     * gives up the writes of the old one. */
    db->identity_known = 0;
    jobq__marks_forget(db);
    if (epoch != NULL) *epoch = e;
  }
  return rc;
}
