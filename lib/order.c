/*
 * order.c - ordering keys, barriers and the archive: when a job must wait
 * for its turn, who may run once a job has left the hot table, and the
 * move of a finished job into jobq_done.
 *
 * A job leaves `waiting` when its turn comes: it is the oldest unfinished
 * job of its ordering key (and the key is not blocked by a dead head), and
 * no unfinished barrier of its queue is older than it; a barrier also
 * needs every older job of its queue finished.  Completing the head makes
 * the next one ready in the same transaction, so claims never scan a
 * backlog of one key.
 *
 * On engines where transactions run side by side (PostgreSQL, MariaDB),
 * two of them could each decide from what the other has not committed
 * yet: a put that sees the key's head still running while the head's
 * completion does not see the new job.  Named locks keep those decisions
 * apart (SQLite needs none: one writer holds the whole file):
 *
 *   Q(queue)        every put and finish takes it shared; a barrier's put
 *                   and finish take it exclusive, so nothing of the queue
 *                   is put or finished while a barrier comes or goes
 *   B(queue)        exclusive, for finishes while a barrier waits, so that
 *                   the last job before it is seen to be the last
 *   K(queue, key)   exclusive, around every put and finish of the key
 *   L(queue)        exclusive, around a claim of a queue with a limit,
 *                   after every other lock (lib/limit.c)
 *
 * Locks are held to the end of the transaction.  A deadlock between them
 * is reported by the engine and the transaction runs again (txn_retry).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- locks */

static int lock(jobq *db, char kind, const char *queue, const char *key, int exclusive) {
  const jobq_lock l = {kind, exclusive, queue, key};
  return db->store->lock(db, &l, 1);
}

int jobq__lock_job(jobq *db, const jobq_jobref *job, int finishing) {
  int rc = lock(db, 'q', job->queue, NULL, job->barrier);
  if (rc == JOBQ_OK && finishing && !job->barrier) {
    /* Finishing next to a waiting barrier: one finisher at a time, so
     * that whoever finishes the barrier's last predecessor sees it so. */
    int yes;
    rc = jobq__barrier_pending(db, job->queue, &yes);
    if (rc == JOBQ_OK && yes) rc = lock(db, 'b', job->queue, NULL, 1);
  }
  if (rc == JOBQ_OK && job->key != NULL) rc = lock(db, 'k', job->queue, job->key, 1);
  return rc;
}

int jobq__lock_finishing(jobq *db, const jobq_jobref *const *jobs, size_t n) {
  if (n == 0) return JOBQ_OK;
  const char **keys = malloc(n * sizeof *keys);
  if (keys == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int rc = JOBQ_OK;
  for (size_t i = 0, end; i < n && rc == JOBQ_OK; i = end) {
    /* With a barrier among them, the queue's lock is exclusive: no one
     * else finishes beside them, and the barrier's lock adds nothing. */
    jobq_jobref queue = {0, jobs[i]->queue, NULL, 0, 0};
    size_t nkeys = 0;
    for (end = i; end < n && strcmp(jobs[end]->queue, queue.queue) == 0; end++) {
      queue.barrier = queue.barrier || jobs[end]->barrier;
      const char *key = jobs[end]->key;
      if (key != NULL && (nkeys == 0 || strcmp(keys[nkeys - 1], key) != 0)) keys[nkeys++] = key;
    }
    rc = jobq__lock_job(db, &queue, 1);
    if (rc == JOBQ_OK) rc = jobq__lock_keys(db, queue.queue, keys, nkeys);
  }
  free(keys);
  return rc;
}

int jobq__lock_keys(jobq *db, const char *queue, const char *const *keys, size_t n) {
  if (n == 0) return JOBQ_OK;
  jobq_lock *l = malloc(n * sizeof *l);
  if (l == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) l[i] = (jobq_lock){'k', 1, queue, keys[i]};
  int rc = db->store->lock(db, l, n);
  free(l);
  return rc;
}

/* Queues' locks first (a queue's, then its barrier's), then keys'; each
 * by jobq__lock_cmp(). */
static int lock_rank(const void *x, const void *y) {
  const jobq_lock *a = x, *b = y;
  if ((a->kind == 'k') != (b->kind == 'k')) return a->kind == 'k' ? 1 : -1;
  int c = jobq__lock_cmp(a->queue, a->key, b->queue, b->key);
  return c != 0 ? c : (a->kind > b->kind) - (a->kind < b->kind);
}

/* Of each run of one lock, the first: a batch's jobs of one queue ask for
 * its lock a thousand times in a row. */
static size_t locks_distinct(jobq_lock *locks, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (d == 0 || lock_rank(&locks[d - 1], &locks[i]) != 0) locks[d++] = locks[i];
  return d;
}

size_t jobq__locks_sort(jobq_lock *locks, size_t n) {
  n = locks_distinct(locks, n);
  qsort(locks, n, sizeof *locks, lock_rank);
  return locks_distinct(locks, n);
}

int jobq__lock_cmp(const char *queue_a, const char *key_a, const char *queue_b,
                   const char *key_b) {
  int c = strcmp(queue_a, queue_b);
  if (c != 0) return c;
  if (key_a == NULL || key_b == NULL) return (key_a != NULL) - (key_b != NULL);
  return strcmp(key_a, key_b);
}

/* ---------------------------------------------------------------- decisions */

/* Whether look (a statement of queue ?1 and key ?2) finds a row. */
static int key_has(jobq *db, int look, const char *queue, const char *key, int *yes) {
  return jobq__sql_exists(db, look, yes, SQL_ARGS(V_TEXT(queue), V_TEXT(key)));
}

/* Whether look (a statement of queue ?1 and the jobs before id ?2) finds
 * a row. */
static int queue_has_before(jobq *db, int look, const char *queue, int64_t id, int *yes) {
  return jobq__sql_exists(db, look, yes, SQL_ARGS(V_TEXT(queue), V_INT(id)));
}

static int text_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* KEYS_TAKEN's rows, each a key found: its place in the keys set. */
typedef struct taken_ctx {
  const char *const *keys;
  size_t n;
  unsigned char *taken;
} taken_ctx;

static int key_taken_row(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  taken_ctx *t = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    int failed = 0;
    char *key = jobq__col_text(db, r, 0, &failed);
    if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    const char *const *hit = key ? bsearch(&key, t->keys, t->n, sizeof *t->keys, text_cmp) : NULL;
    if (hit != NULL) t->taken[hit - t->keys] = 1;
    free(key);
  }
  return got < 0 ? got : JOBQ_OK;
}

int jobq__keys_taken(jobq *db, const char *queue, const char *const *keys, size_t n,
                     unsigned char *taken) {
  memset(taken, 0, n);
  if (n == 0) return JOBQ_OK;
  jobq_val *v = malloc(n * sizeof *v);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) v[i] = V_TEXT(keys[i]);
  taken_ctx t = {keys, n, taken};
  int rc = jobq__sql_set(db, JOBQ_Q_KEYS_TAKEN, SQL_ARGS(V_TEXT(queue), V_COL('t', v, n)), 0,
                         NULL, key_taken_row, &t, NULL);
  free(v);
  return rc;
}

int jobq__barrier_pending(jobq *db, const char *queue, int *yes) {
  return queue_has_before(db, JOBQ_Q_BARRIER_BEFORE, queue, INT64_MAX, yes);
}

int jobq__must_wait(jobq *db, const jobq_jobref *j, int barrier_known, int *wait) {
  int yes = barrier_known, rc = JOBQ_OK;
  *wait = 1;
  if (j->barrier) {
    rc = queue_has_before(db, JOBQ_Q_ANY_BEFORE, j->queue, j->id ? j->id : INT64_MAX, &yes);
  } else if (j->id != 0 || barrier_known < 0) {
    rc = queue_has_before(db, JOBQ_Q_BARRIER_BEFORE, j->queue, j->id ? j->id : INT64_MAX,
                   &yes);
  }
  if (rc != JOBQ_OK || yes) return rc;
  if (j->key != NULL) {
    /* A new job waits behind any unfinished job of its key, or a dead
     * one that blocks it (one look for both); a retried one is older than
     * the key's waiting jobs and waits only for a running (or ready) one,
     * or a blocking dead one. */
    rc = key_has(db, j->id ? JOBQ_Q_KEY_ACTIVE : JOBQ_Q_KEY_TAKEN, j->queue, j->key,
                   &yes);
    if (rc != JOBQ_OK || yes) return rc;
    if (j->id != 0 &&
        ((rc = key_has(db, JOBQ_Q_BLOCKED, j->queue, j->key, &yes)) != JOBQ_OK || yes))
      return rc;
  }
  *wait = 0;
  return JOBQ_OK;
}

int jobq__must_wait_after(jobq *db, const jobq_jobref *j, int *wait) {
  int yes = 0;
  int rc = queue_has_before(db, j->barrier ? JOBQ_Q_ANY_BEFORE : JOBQ_Q_BARRIER_BEFORE,
                            j->queue, j->id, &yes);
  if (rc == JOBQ_OK && !yes && j->key != NULL && !j->barrier)
    rc = jobq__sql_exists(db, JOBQ_Q_KEY_BEFORE, &yes,
                          SQL_ARGS(V_TEXT(j->queue), V_TEXT(j->key), V_INT(j->id)));
  *wait = yes;
  return rc;
}

static int make_ready(jobq *db, const char *queue, int64_t id) {
  jobq__wake(db, queue);
  return jobq__sql_run(db, JOBQ_Q_MAKE_READY, SQL_ARGS(V_INT(id)));
}

int jobq__promote_key(jobq *db, const char *queue, const char *key, int head_left) {
  int yes, rc;
  if ((rc = key_has(db, JOBQ_Q_BLOCKED, queue, key, &yes)) != JOBQ_OK || yes) return rc;
  if (!head_left &&
      ((rc = key_has(db, JOBQ_Q_KEY_ACTIVE, queue, key, &yes)) != JOBQ_OK || yes))
    return rc;
  /* The key's first job that waits; none when it is pending: the key's
   * later jobs stay behind it until its parents are done (lib/after.c). */
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_KEY_NEXT, &r, SQL_ARGS(V_TEXT(queue), V_TEXT(key)));
  if (got <= 0) return got;
  int64_t next = jobq__col_is(db, r, 1, "waiting") ? jobq__col_int(db, r, 0) : 0;
  jobq__rows_done(db, r);
  if (next == 0) return JOBQ_OK;
  if ((rc = queue_has_before(db, JOBQ_Q_BARRIER_BEFORE, queue, next, &yes)) != JOBQ_OK || yes)
    return rc;
  return make_ready(db, queue, next);
}

/* The first unfinished barrier of queue: *id (0: none) and whether it
 * waits. */
static int first_barrier(jobq *db, const char *queue, int64_t *id, int *waiting) {
  jobq_rows *r;
  *id = 0;
  *waiting = 0;
  int got = jobq__sql_row(db, JOBQ_Q_BARRIER_FIRST, &r, SQL_ARGS(V_TEXT(queue)));
  if (got <= 0) return got;
  *id = jobq__col_int(db, r, 0);
  *waiting = jobq__col_is(db, r, 1, "waiting");
  jobq__rows_done(db, r);
  return JOBQ_OK;
}

static int promote_barrier(jobq *db, const char *queue) {
  int64_t id;
  int waiting, yes;
  int rc = first_barrier(db, queue, &id, &waiting);
  if (rc != JOBQ_OK || !waiting) return rc;
  if ((rc = queue_has_before(db, JOBQ_Q_ANY_BEFORE, queue, id, &yes)) != JOBQ_OK || yes) return rc;
  return make_ready(db, queue, id);
}

/* After a barrier finished: the jobs up to the next barrier may run. */
static int promote_after_barrier(jobq *db, const char *queue) {
  int64_t next;
  int waiting;
  int rc = first_barrier(db, queue, &next, &waiting);
  if (rc != JOBQ_OK) return rc;
  int64_t limit = next ? next : INT64_MAX;
  int64_t freed = 0;
  rc = jobq__sql_change(db, JOBQ_Q_WAITING_UNKEYED, &freed,
                        SQL_ARGS(V_TEXT(queue), V_INT(limit)));
  if (rc != JOBQ_OK) return rc;
  if (freed > 0) jobq__wake(db, queue);
  /* Keys are collected first: promoting changes the rows being read. */
  char **keys;
  size_t n;
  rc = jobq__sql_texts(db, JOBQ_Q_WAITING_KEYS, &keys, &n,
                       SQL_ARGS(V_TEXT(queue), V_INT(limit)));
  if (rc != JOBQ_OK) return rc;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    jobq_jobref k = {0, queue, keys[i], 0, 0};
    rc = lock(db, 'k', queue, keys[i], 1);
    if (rc == JOBQ_OK) rc = jobq__promote_key(db, k.queue, k.key, 0);
  }
  jobq__texts_free(keys, n);
  if (rc != JOBQ_OK) return rc;
  return promote_barrier(db, queue);
}

/* ---------------------------------------------------------------- archive */

/* Whether queue's key policy is 'block': *yes. */
static int policy_blocks(jobq *db, const char *queue, int *yes) {
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_POLICY, &r, SQL_ARGS(V_TEXT(queue)));
  if (got < 0) return got;
  *yes = got == 1 && jobq__col_is(db, r, 0, "block");
  if (got == 1) jobq__rows_done(db, r);
  return JOBQ_OK;
}

/* What follows job j's move from state from into the archive with its
 * outcome state: the counters, a dead head's hold on its key under the
 * 'block' policy (blocks: whether its queue's policy is, or -1 to look),
 * its key's next job (unless key_left is 0: the key had no job left and
 * no hold, so no next job to look for), and (barrier_look) the barrier
 * behind it or, for a barrier, the jobs after it, and the jobs put after
 * it (barrier_look too: a batch looks for all of its jobs' at once). */
static int archived(jobq *db, const jobq_jobref *j, int from, int state, int barrier_look,
                    int blocks, int key_left) {
  int rc = jobq__count_add(db, j->queue, state == JOBQ_STATE_DONE, state == JOBQ_STATE_DEAD,
                           state == JOBQ_STATE_CANCELLED);
  /* A dead head under the 'block' policy holds its key for an operator. */
  int blocked = 0;
  if (rc == JOBQ_OK && state == JOBQ_STATE_DEAD && j->key != NULL) {
    if (blocks < 0 && (rc = policy_blocks(db, j->queue, &blocks)) != JOBQ_OK) return rc;
    blocked = blocks;
    if (blocked)
      rc = jobq__sql_run(db, JOBQ_Q_BLOCK,
                         SQL_ARGS(V_TEXT(j->queue), V_TEXT(j->key), V_INT(j->id)));
  }
  /* A key has one active job at a time: a ready or running one that
   * leaves was it.  Its next job is found before its children leave
   * pending: a child of its key is the key's next, which then takes its
   * turn itself. */
  if (rc == JOBQ_OK && j->key != NULL && !blocked && key_left)
    rc = jobq__promote_key(db, j->queue, j->key,
                           from == JOBQ_STATE_READY || from == JOBQ_STATE_RUNNING);
  /* The jobs put after it: counted down, or cancelled. */
  if (rc == JOBQ_OK && j->children && barrier_look)
    rc = jobq__after_finished(db, &j->id, &state, 1);
  if (rc != JOBQ_OK || !barrier_look) return rc;
  return j->barrier ? promote_after_barrier(db, j->queue) : promote_barrier(db, j->queue);
}

int jobq__archive(jobq *db, const jobq_jobref *j, int from, int state, const void *result,
                  size_t result_len, const char *error, size_t error_len) {
  jobq_val res = state == JOBQ_STATE_DONE ? V_BYTES(result, result_len) : V_NULL;
  int rc = jobq__sql_run(db, JOBQ_Q_ARCHIVE,
                         SQL_ARGS(V_INT(j->id), V_TEXT(jobq_state_name(state)), res,
                                  V_TEXTN(error, error_len)));
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_DELETE_JOB, SQL_ARGS(V_INT(j->id)));
  return rc == JOBQ_OK ? archived(db, j, from, state, 1, -1, 1) : rc;
}

/* For each job of jobs[0..n) (grouped by queue, as the lock order has
 * them) that left with the outcome of r[i]: blocks[i], whether its queue's
 * key policy is 'block' (looked at once a queue, when a keyed job of it
 * died), and left[i], whether its key, unless a dead head now holds it,
 * still has a job or a hold, as KEY_TAKEN finds (one look a queue,
 * KEYS_TAKEN); 0 for a job without a key. */
static int follow_ups(jobq *db, const jobq_archive_row *r, const jobq_jobref *const *jobs,
                      size_t n, unsigned char *blocks, unsigned char *left) {
  const char **keys = malloc(n * sizeof *keys);
  size_t *at = malloc(n * sizeof *at);
  unsigned char *taken = malloc(n);
  int rc = keys == NULL || at == NULL || taken == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  memset(blocks, 0, n);
  memset(left, 0, n);
  for (size_t i = 0, end; i < n && rc == JOBQ_OK; i = end) {
    int dead_key = 0, block = 0;
    for (end = i; end < n && strcmp(jobs[end]->queue, jobs[i]->queue) == 0; end++)
      dead_key |= jobs[end]->key != NULL && r[end].state == JOBQ_STATE_DEAD;
    if (dead_key && (rc = policy_blocks(db, jobs[i]->queue, &block)) != JOBQ_OK) break;
    size_t nk = 0;
    for (size_t k = i; k < end; k++) {
      blocks[k] = (unsigned char)block;
      if (jobs[k]->key == NULL || (block && r[k].state == JOBQ_STATE_DEAD)) continue;
      keys[nk] = jobs[k]->key;
      at[nk++] = k;
    }
    if (nk > 0) rc = jobq__keys_taken(db, jobs[i]->queue, keys, nk, taken);
    for (size_t k = 0; k < nk && rc == JOBQ_OK; k++) left[at[k]] = taken[k];
  }
  free(keys);
  free(at);
  free(taken);
  return rc;
}

/* The holds of the dead heads among jobs[0..n) whose queue's policy is
 * 'block' (blocks[i]), written eight to a statement (the rest one at a
 * time) in the batch's order, which is the lock order. */
static int hold_keys(jobq *db, const jobq_archive_row *r, const jobq_jobref *const *jobs,
                     size_t n, const unsigned char *blocks) {
  enum { ROWS = 8 };
  jobq_val v[ROWS * 3];
  size_t k = 0;
  int rc = JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (!blocks[i] || r[i].state != JOBQ_STATE_DEAD || jobs[i]->key == NULL) continue;
    v[3 * k] = V_TEXT(jobs[i]->queue);
    v[3 * k + 1] = V_TEXT(jobs[i]->key);
    v[3 * k + 2] = V_INT(jobs[i]->id);
    if (++k == ROWS) {
      rc = jobq__sql_run(db, JOBQ_Q_BLOCK_8, v, 3 * ROWS);
      k = 0;
    }
  }
  for (size_t i = 0; i < k && rc == JOBQ_OK; i++)
    rc = jobq__sql_run(db, JOBQ_Q_BLOCK, &v[3 * i], 3);
  return rc;
}

/* ARCHIVE_ROWS for r[0..n), then DELETE_ROWS where the dialect's
 * ARCHIVE_ROWS leaves the rows. */
static int archive_rows(jobq *db, const jobq_archive_row *r, size_t n) {
  jobq_val *v = malloc(5 * n * sizeof *v);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  jobq_val *at = v, *outcome = v + n, *result = v + 2 * n, *error = v + 3 * n, *id = v + 4 * n;
  for (size_t i = 0; i < n; i++) {
    at[i] = r[i].at_len ? V_BYTES(r[i].at, r[i].at_len) : V_NULL;
    outcome[i] = V_TEXT(jobq_state_name(r[i].state));
    result[i] = r[i].state == JOBQ_STATE_DONE ? V_BYTES(r[i].result, r[i].result_len) : V_NULL;
    error[i] = V_TEXTN(r[i].error, r[i].error_len);
    id[i] = V_INT(r[i].id);
  }
  int64_t moved = 0;
  int rc = jobq__sql_set(db, JOBQ_Q_ARCHIVE_ROWS,
                         SQL_ARGS(V_COL('r', at, n), V_COL('t', outcome, n), V_COL('b', result, n),
                                  V_COL('t', error, n), V_COL('i', id, n)),
                         0, NULL, NULL, NULL, &moved);
  /* Every row was locked by this transaction: each is there to move. */
  if (rc == JOBQ_OK && moved != (int64_t)n)
    rc = jobq__fail(db, JOBQ_EDB, "archiving %zu jobs moved %lld", n, (long long)moved);
  if (rc == JOBQ_OK && !jobq__sql_none(db->store->dialect, JOBQ_Q_DELETE_ROWS))
    rc = jobq__sql_set(db, JOBQ_Q_DELETE_ROWS, SQL_ARGS(V_COL('i', id, n)), 0, NULL, NULL, NULL,
                       NULL);
  free(v);
  return rc;
}

int jobq__archive_many(jobq *db, const jobq_archive_row *r, const jobq_jobref *const *jobs,
                       size_t n) {
  if (n == 0) return JOBQ_OK;
  unsigned char *blocks = malloc(n), *left = malloc(n);
  int rc = blocks == NULL || left == NULL ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
                                          : archive_rows(db, r, n);
  /* Each key has one running job: the keys of the batch are distinct,
   * and each one's next job goes after all of them left.  Most keys
   * often have none: those are found at once.  A key that a dead head
   * now holds is not looked at (left[i] is 0), and all the holds are
   * written here, so archived() writes none (blocks 0). */
  if (rc == JOBQ_OK) rc = follow_ups(db, r, jobs, n, blocks, left);
  if (rc == JOBQ_OK) rc = hold_keys(db, r, jobs, n, blocks);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    rc = archived(db, jobs[i], JOBQ_STATE_RUNNING, r[i].state, 0, 0, left[i]);
  free(blocks);
  free(left);
  /* The jobs put after them, in one look (lib/after.c). */
  int64_t *parents = malloc(n * sizeof *parents);
  int *outcomes = malloc(n * sizeof *outcomes);
  size_t np = 0;
  if (rc == JOBQ_OK && (parents == NULL || outcomes == NULL))
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (!jobs[i]->children) continue;
    parents[np] = jobs[i]->id;
    outcomes[np++] = r[i].state;
  }
  if (rc == JOBQ_OK) rc = jobq__after_finished(db, parents, outcomes, np);
  free(parents);
  free(outcomes);
  /* A barrier waits for the jobs before it: each queue's is looked at
   * once, after all of its jobs left. */
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    if (i + 1 == n || strcmp(jobs[i]->queue, jobs[i + 1]->queue) != 0)
      rc = promote_barrier(db, jobs[i]->queue);
  return rc;
}

int jobq__job_ref(jobq *db, int64_t id, jobq_jobref *ref, int *state) {
  memset(ref, 0, sizeof *ref);
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_HOT_STATE, &r, SQL_ARGS(V_INT(id)));
  if (got <= 0) return got;
  int failed = 0;
  size_t len;
  const char *st = db->store->col_bytes(r, 0, &len);
  *state = jobq_state_parse(st);
  ref->id = id;
  ref->queue = jobq__col_text(db, r, 1, &failed);
  ref->key = jobq__col_text(db, r, 2, &failed);
  ref->barrier = (int)jobq__col_int(db, r, 3);
  ref->children = (int)jobq__col_int(db, r, 4);
  jobq__rows_done(db, r);
  if (failed) {
    jobq__job_ref_release(ref);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  return 1;
}

void jobq__job_ref_release(jobq_jobref *ref) {
  free((char *)ref->queue);
  free((char *)ref->key);
  memset(ref, 0, sizeof *ref);
}
