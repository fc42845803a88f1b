/*
 * bulk.c - the operator's calls over many jobs: prune (archived jobs past
 * an age), purge (every job of a queue) and cancel (a queue's unfinished
 * jobs by state and key).  Each works in parts, a transaction each, so
 * that none holds SQLite's other writers or PostgreSQL's vacuum for long,
 * reports its progress after each part, and can count instead (a dry
 * run).  A part counts what it takes off the finished-job counters under
 * the locks of the rows it deletes, so the counters stay right whatever
 * runs meanwhile.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Jobs a prune or purge deletes per transaction, about: short
 * transactions keep SQLite's other writers going, and PostgreSQL's vacuum
 * of the hot table, which cannot pass an open transaction. */
#define PRUNE_CHUNK 10000
/* Jobs a cancel looks at per transaction: each may take a few statements. */
#define CANCEL_CHUNK 1000

void jobq_bulk_opts_init(jobq_bulk_opts *o) { memset(o, 0, sizeof *o); }

static void progress(const jobq_bulk_opts *o, int64_t done) {
  if (o != NULL && o->progress != NULL) o->progress(o->progress_arg, done);
}

/* Runs part(db, arg) in a transaction of its own, again after a deadlock. */
static int txn(jobq *db, int (*part)(jobq *, void *), void *arg) {
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    rc = jobq__txn_end(db, part(db, arg));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

/* The start of every bulk call: the handle, the role, the queue. */
static int start(jobq *db, const jobq_bulk_opts *o, int need_queue) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  const char *queue = o != NULL ? o->queue : NULL;
  if (queue == NULL && need_queue)
    return jobq__fail(db, JOBQ_EINVAL, "missing queue: expected the queue to act on");
  if (queue != NULL && jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  return jobq__ready(db);
}

/* ---------------------------------------------------------------- prune */

typedef struct prune_part {
  int64_t before;
  const char *queue;
  int64_t count;  /* out: how many went */
  int last;       /* out: no older job is left */
} prune_part;

/* The oldest PRUNE_CHUNK prunable jobs that finished before p->before
 * (more when several finished in the same millisecond), counted under
 * their locks, taken off the counters and deleted. */
static int prune_chunk(jobq *db, void *arg) {
  prune_part *p = arg;
  int64_t bound = -1;
  int rc = jobq__sql_int(db, JOBQ_Q_PRUNE_BOUND, -1, &bound,
                         SQL_ARGS(V_INT(p->before), V_INT(PRUNE_CHUNK - 1), V_TEXT(p->queue)));
  if (rc != JOBQ_OK) return rc;
  p->last = bound < 0;
  int64_t cutoff = p->last ? p->before : bound + 1;
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_PRUNE_COUNT, &r,
                            SQL_ARGS(V_INT(cutoff), V_TEXT(p->queue)))) != JOBQ_OK)
    return rc;
  typedef struct {
    char *queue;
    int64_t done, dead, cancelled;
  } qc;
  qc *v = NULL;
  size_t n = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    qc *w = realloc(v, (n + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    v[n].queue = jobq__col_text(db, r, 0, &failed);
    v[n].done = jobq__col_int(db, r, 1);
    v[n].dead = jobq__col_int(db, r, 2);
    v[n].cancelled = jobq__col_int(db, r, 3);
    n++;
  }
  jobq__rows_done(db, r);
  rc = got < 0 ? got : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  p->count = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    rc = jobq__count_add(db, v[i].queue, -v[i].done, -v[i].dead, -v[i].cancelled);
    p->count += v[i].done + v[i].dead + v[i].cancelled;
  }
  for (size_t i = 0; i < n; i++) free(v[i].queue);
  free(v);
  if (rc == JOBQ_OK) rc = jobq__failpoint(db, "prune.counted");
  if (rc == JOBQ_OK)
    rc = jobq__sql_run(db, JOBQ_Q_AFTER_PRUNE, SQL_ARGS(V_INT(cutoff), V_TEXT(p->queue)));
  if (rc == JOBQ_OK)
    rc = jobq__sql_run(db, JOBQ_Q_PRUNE, SQL_ARGS(V_INT(cutoff), V_TEXT(p->queue)));
  /* A completion that finished before the cut-off may be gone now: the
   * check of acknowledged writes (lib/mark.c) must not call it lost. */
  if (rc == JOBQ_OK && p->count > 0)
    rc = jobq__sql_run(db, JOBQ_Q_PRUNED, SQL_ARGS(V_INT(cutoff)));
  return rc;
}

static int prune_attempts(jobq *db, void *arg) {
  return jobq__sql_run(db, JOBQ_Q_ATTEMPTS_PRUNE, SQL_ARGS(V_INT(*(int64_t *)arg)));
}

int jobq_prune_jobs(jobq *db, int64_t older_than_ms, const jobq_bulk_opts *o,
                    int64_t *count) {
  if (count != NULL) *count = 0;
  int rc = start(db, o, 0);
  if (rc != JOBQ_OK) return rc;
  if (older_than_ms < 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid age '%lldms': expected zero or more",
                      (long long)older_than_ms);
  const char *queue = o != NULL ? o->queue : NULL;
  int64_t now;
  if ((rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS())) != JOBQ_OK) return rc;
  prune_part p = {now - older_than_ms, queue, 0, 0};
  if (o != NULL && o->dry_run)
    return jobq__sql_int(db, JOBQ_Q_PRUNE_TOTAL, 0, count,
                         SQL_ARGS(V_INT(p.before), V_TEXT(queue)));
  int64_t total = 0;
  while (!p.last) {
    if ((rc = txn(db, prune_chunk, &p)) != JOBQ_OK) return rc;
    total += p.count;
    if (count != NULL) *count = total;
    progress(o, total);
  }
  /* The records of attempts as old go too; they name no queue. */
  return queue == NULL ? txn(db, prune_attempts, &p.before) : JOBQ_OK;
}

int jobq_prune(jobq *db, int64_t older_than_ms, int64_t *count) {
  return jobq_prune_jobs(db, older_than_ms, NULL, count);
}

/* ---------------------------------------------------------------- purge */

typedef struct purge_part {
  const char *queue;
  int64_t last_id;   /* the highest job id when the purge began */
  int first;         /* the first part: a running job refuses it */
  int64_t after;     /* the archive: where the part starts */
  int64_t count;     /* out: how many went */
  int last;          /* out: nothing is left */
} purge_part;

/* The keys of the queue that a dead head blocked (it goes with the
 * archive): they go on, for the jobs put since the purge began. */
static int purge_unblock(jobq *db, purge_part *p) {
  char **keys = NULL;
  size_t n = 0;
  int rc = jobq__sql_texts(db, JOBQ_Q_PURGE_BLOCKED, &keys, &n,
                           SQL_ARGS(V_TEXT(p->queue), V_INT(p->last_id)));
  if (rc != JOBQ_OK || n == 0) return rc;
  rc = jobq__sql_run(db, JOBQ_Q_PURGE_UNBLOCK, SQL_ARGS(V_TEXT(p->queue), V_INT(p->last_id)));
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    rc = jobq__promote_key(db, p->queue, keys[i], 0);
  jobq__texts_free(keys, n);
  return rc;
}

/* A part of the unfinished jobs: the oldest PRUNE_CHUNK that no session
 * holds, under the queue's exclusive lock (puts to it wait). */
static int purge_jobs(jobq *db, void *arg) {
  purge_part *p = arg;
  jobq_jobref ref = {0, p->queue, NULL, 1, 0};
  int rc = jobq__lock_job(db, &ref, 0);
  int running = 0;
  if (rc == JOBQ_OK && p->first)
    rc = jobq__sql_exists(db, JOBQ_Q_PURGE_RUNNING, &running, SQL_ARGS(V_TEXT(p->queue)));
  if (rc == JOBQ_OK && running)
    return jobq__fail(db, JOBQ_EBUSY,
                      "queue '%s' has running jobs: purge it once they have finished",
                      p->queue);
  int64_t bound = -1;
  if (rc == JOBQ_OK)
    rc = jobq__sql_int(db, JOBQ_Q_PURGE_BOUND, -1, &bound,
                       SQL_ARGS(V_TEXT(p->queue), V_INT(p->last_id), V_INT(PRUNE_CHUNK)));
  p->last = bound < 0;
  int64_t upto = p->last ? p->last_id : bound - 1, *parents = NULL;
  size_t np = 0;
  if (rc == JOBQ_OK)
    rc = jobq__sql_ids(db, JOBQ_Q_AFTER_PURGED, PRUNE_CHUNK, &parents, &np,
                       SQL_ARGS(V_TEXT(p->queue), V_INT(upto)));
  if (rc == JOBQ_OK)
    rc = jobq__sql_change(db, JOBQ_Q_PURGE_JOBS, &p->count,
                          SQL_ARGS(V_TEXT(p->queue), V_INT(upto)));
  /* The pending jobs of other queues put after them are cancelled, as
   * after a cancel (lib/after.c). */
  int *outcomes = np > 0 ? malloc(np * sizeof *outcomes) : NULL;
  if (rc == JOBQ_OK && np > 0 && outcomes == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < np && rc == JOBQ_OK; i++) outcomes[i] = JOBQ_STATE_CANCELLED;
  if (rc == JOBQ_OK && np > 0) rc = jobq__after_finished(db, parents, outcomes, np);
  free(outcomes);
  free(parents);
  if (rc == JOBQ_OK && p->last) rc = purge_unblock(db, p);
  return rc;
}

/* A part of the archive: the oldest PRUNE_CHUNK after p->after, counted
 * under the queue's exclusive lock (a retry of one of them waits for it)
 * and taken off the queue's counters. */
static int purge_done(jobq *db, void *arg) {
  purge_part *p = arg;
  jobq_jobref ref = {0, p->queue, NULL, 1, 0};
  int64_t bound = -1;
  int rc = jobq__lock_job(db, &ref, 0);
  if (rc == JOBQ_OK)
    rc = jobq__sql_int(db, JOBQ_Q_PURGE_DONE_BOUND, -1, &bound,
                         SQL_ARGS(V_TEXT(p->queue), V_INT(p->after), V_INT(p->last_id),
                                  V_INT(PRUNE_CHUNK)));
  p->last = bound < 0;
  int64_t upto = p->last ? p->last_id : bound - 1;
  jobq_rows *r;
  if (rc == JOBQ_OK)
    rc = jobq__sql_query(db, JOBQ_Q_PURGE_DONE_COUNT, &r,
                         SQL_ARGS(V_TEXT(p->queue), V_INT(p->after), V_INT(upto)));
  if (rc != JOBQ_OK) return rc;
  int64_t c[3] = {0, 0, 0};
  int got = jobq__rows_next(db, r);
  for (int i = 0; got == 1 && i < 3; i++) c[i] = jobq__col_int(db, r, i);
  jobq__rows_done(db, r);
  if (got < 0) return got;
  rc = jobq__count_add(db, p->queue, -c[0], -c[1], -c[2]);
  if (rc == JOBQ_OK)
    rc = jobq__sql_change(db, JOBQ_Q_PURGE_DONE, &p->count,
                          SQL_ARGS(V_TEXT(p->queue), V_INT(p->after), V_INT(upto)));
  if (rc == JOBQ_OK && p->count != c[0] + c[1] + c[2])
    rc = jobq__fail(db, JOBQ_EDB, "the purge counted %lld finished jobs but deleted %lld",
                    (long long)(c[0] + c[1] + c[2]), (long long)p->count);
  /* Completions of up to now may be gone, as after a prune (lib/mark.c). */
  int64_t now = 0;
  if (rc == JOBQ_OK && p->count > 0) rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  if (rc == JOBQ_OK && p->count > 0)
    rc = jobq__sql_run(db, JOBQ_Q_PRUNED, SQL_ARGS(V_INT(now + 1)));
  p->after = upto;
  return rc;
}

int jobq_purge_jobs(jobq *db, const jobq_bulk_opts *o, int64_t *count) {
  if (count != NULL) *count = 0;
  int rc = start(db, o, 1);
  if (rc != JOBQ_OK) return rc;
  if (o->dry_run)
    return jobq__sql_int(db, JOBQ_Q_PURGE_TOTAL, 0, count, SQL_ARGS(V_TEXT(o->queue)));
  jobq_identity id;
  if ((rc = jobq_identity_get(db, &id)) != JOBQ_OK) return rc;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  purge_part p = {o->queue, id.seq, 1, 0, 0, 0};
  int64_t total = 0;
  for (int archive = 0; archive < 2; archive++) {
    p.last = 0;
    while (!p.last) {
      if ((rc = txn(db, archive ? purge_done : purge_jobs, &p)) != JOBQ_OK) return rc;
      p.first = 0;
      total += p.count;
      if (count != NULL) *count = total;
      progress(o, total);
    }
  }
  return JOBQ_OK;
}

int jobq_purge(jobq *db, const char *queue, int64_t *count) {
  jobq_bulk_opts o;
  jobq_bulk_opts_init(&o);
  o.queue = queue;
  return jobq_purge_jobs(db, &o, count);
}

/* ---------------------------------------------------------------- cancel */

typedef struct cancel_part {
  const jobq_bulk_opts *o;
  int64_t after;               /* where the part starts */
  size_t seen;                 /* out: jobs looked at */
  int64_t cancelled, requested; /* out */
} cancel_part;

/* Whether the job of a row of CANCEL_SCAN is one the options choose. */
static int chosen(jobq *db, jobq_rows *r, const jobq_bulk_opts *o) {
  size_t len;
  int state = jobq_state_parse(db->store->col_bytes(r, 1, &len));
  if (o->state != 0 && state != o->state) return 0;
  int64_t run_at = jobq__col_int(db, r, 2), now = jobq__col_int(db, r, 4);
  if (state == JOBQ_STATE_READY && o->scheduled != 0 && (run_at > now) != (o->scheduled > 0))
    return 0;
  return o->key == NULL || jobq__col_is(db, r, 3, o->key);
}

/* The next CANCEL_CHUNK jobs of the queue, held: those chosen cancelled
 * one by one (or counted). */
static int cancel_part_run(jobq *db, void *arg) {
  cancel_part *p = arg;
  const jobq_bulk_opts *o = p->o;
  jobq_rows *r;
  p->seen = 0;
  p->cancelled = p->requested = 0;
  int rc = jobq__sql_query(db, JOBQ_Q_CANCEL_SCAN, &r,
                           SQL_ARGS(V_TEXT(o->queue), V_INT(p->after), V_INT(CANCEL_CHUNK)));
  if (rc != JOBQ_OK) return rc;
  int64_t *ids = malloc(CANCEL_CHUNK * sizeof *ids);
  unsigned char *running = malloc(CANCEL_CHUNK), *pending = malloc(CANCEL_CHUNK);
  size_t n = 0;
  int got = 0;
  if (ids == NULL || running == NULL || pending == NULL)
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  while (rc == JOBQ_OK && (got = jobq__rows_next(db, r)) == 1) {
    p->seen++;
    p->after = jobq__col_int(db, r, 0);
    if (!chosen(db, r, o)) continue;
    running[n] = jobq__col_is(db, r, 1, "running");
    pending[n] = jobq__col_is(db, r, 1, "pending");
    ids[n++] = p->after;
  }
  jobq__rows_done(db, r);
  if (rc == JOBQ_OK && got < 0) rc = got;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    int now = !running[i];
    if (!o->dry_run) rc = jobq__cancel(db, ids[i], &now);
    /* A pending job that the cancel of one of its parents has
     * cancelled already (lib/after.c). */
    if (rc == JOBQ_ESTATE && pending[i]) rc = jobq__ok(db);
    if (now)
      p->cancelled++;
    else
      p->requested++;
  }
  free(ids);
  free(running);
  free(pending);
  return rc;
}

int jobq_cancel_jobs(jobq *db, const jobq_bulk_opts *o, int64_t *cancelled,
                     int64_t *requested) {
  int64_t c = 0, q = 0;
  if (cancelled != NULL) *cancelled = 0;
  if (requested != NULL) *requested = 0;
  int rc = start(db, o, 1);
  if (rc != JOBQ_OK) return rc;
  if (o->state != 0 && o->state != JOBQ_STATE_READY && o->state != JOBQ_STATE_RUNNING &&
      o->state != JOBQ_STATE_WAITING && o->state != JOBQ_STATE_PENDING)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid state '%s' to cancel: expected ready, scheduled, running, "
                      "waiting or pending",
                      jobq_state_name(o->state) ? jobq_state_name(o->state) : "?");
  if (o->key != NULL && (rc = jobq__check_key(db, "key", o->key, -1)) != JOBQ_OK) return rc;
  cancel_part p = {o, 0, CANCEL_CHUNK, 0, 0};
  while (p.seen == CANCEL_CHUNK) {
    if ((rc = txn(db, cancel_part_run, &p)) != JOBQ_OK) break;
    c += p.cancelled;
    q += p.requested;
    if (cancelled != NULL) *cancelled = c;
    if (requested != NULL) *requested = q;
    progress(o, c + q);
  }
  return rc;
}
