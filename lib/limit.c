/*
 * limit.c - a queue's limits: at most N of its jobs claimed at once, at
 * most N of one ordering key, and at most N claimed in any period of the
 * database clock.  They are kept in jobq_queues and enforced inside the
 * claim's transaction, so that no process holds a count it could die
 * with: the jobs claimed now are the rows in state running (a dead
 * worker's go back to ready with its session), and the claims of the
 * last period are rows of jobq_starts, one per claim and queue, written
 * in the claim's transaction; those of each key, under a rate per key,
 * rows of jobq_key_starts, one per claim and key (each pruned by the
 * claims as it ages out of its period).  In a queue with a limit per key, keys
 * limit and do not order: the put's statements see the limit and put a
 * keyed job ready (lib/sql.c, KEYS_ORDER).
 *
 * A claim that may take jobs of a limited queue takes that queue's
 * limit lock ('l') first, so that two claims never both see the last
 * free slot; only claims take it, after every other lock of their
 * transaction, in name order.  Then it counts, and claims no more than
 * what is left of each queue (lib/claim.c).  A claim none of whose
 * queues has a limit (the claim's look names those that have one:
 * CLAIM_ENTER) does nothing of this.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- setting */

static int check_limits(jobq *db, const jobq_limits *l) {
  if (l == NULL) return jobq__fail(db, JOBQ_EINVAL, "invalid limits: NULL");
  if (l->running < 0 || l->running > JOBQ_LIMIT_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid running limit '%lld': expected 0 (none) to %d",
                      (long long)l->running, JOBQ_LIMIT_MAX);
  if (l->running_per_key < 0 || l->running_per_key > JOBQ_LIMIT_MAX)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid running limit per key '%lld': expected 0 (none) to %d",
                      (long long)l->running_per_key, JOBQ_LIMIT_MAX);
  if (l->rate < 0 || l->rate > JOBQ_LIMIT_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid rate '%lld': expected 0 (none) to %d",
                      (long long)l->rate, JOBQ_LIMIT_MAX);
  if (l->rate > 0 && (l->rate_period_ms < 1 || l->rate_period_ms > JOBQ_LIMIT_PERIOD_MAX))
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid rate period '%lldms': expected 1ms to 1d",
                      (long long)l->rate_period_ms);
  if (l->rate == 0 && l->rate_period_ms != 0)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid rate period '%lldms' without a rate: expected 0",
                      (long long)l->rate_period_ms);
  if (l->rate_per_key < 0 || l->rate_per_key > JOBQ_LIMIT_MAX)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid rate per key '%lld': expected 0 (none) to %d",
                      (long long)l->rate_per_key, JOBQ_LIMIT_MAX);
  if (l->rate_per_key > 0 && (l->rate_per_key_period_ms < 1 ||
                              l->rate_per_key_period_ms > JOBQ_LIMIT_PERIOD_MAX))
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid rate period per key '%lldms': expected 1ms to 1d",
                      (long long)l->rate_per_key_period_ms);
  if (l->rate_per_key == 0 && l->rate_per_key_period_ms != 0)
    return jobq__fail(
        db, JOBQ_EINVAL,
        "invalid rate period per key '%lldms' without a rate per key: expected 0",
        (long long)l->rate_per_key_period_ms);
  return JOBQ_OK;
}

/* v: the value, or NULL for 0 (no limit). */
static jobq_val or_null(int64_t v) { return v > 0 ? V_INT(v) : V_NULL; }

int jobq_set_limits(jobq *db, const char *queue, const jobq_limits *limits) {
  if (db == NULL) return JOBQ_EINVAL;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (jobq_check_queue(db, queue) != JOBQ_OK || check_limits(db, limits) != JOBQ_OK)
    return JOBQ_EINVAL;
  int attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__sql_defer(db, JOBQ_Q_QUEUE_ENSURE, SQL_ARGS(V_TEXT(queue)));
    if (rc == JOBQ_OK)
      rc = jobq__sql_run(
          db, JOBQ_Q_LIMITS_SET,
          SQL_ARGS(
              V_TEXT(queue), or_null(limits->running), or_null(limits->rate),
              or_null(limits->rate > 0 ? limits->rate_period_ms : 0),
              or_null(limits->running_per_key), or_null(limits->rate_per_key),
              or_null(limits->rate_per_key > 0 ? limits->rate_per_key_period_ms : 0)));
    /* A higher limit may free jobs that waited for it. */
    if (rc == JOBQ_OK) jobq__wake(db, queue);
    rc = jobq__txn_end(db, rc);
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

/* ---------------------------------------------------------------- reading */

void jobq_limits_free(jobq_limits *limits, size_t n) {
  if (limits == NULL) return;
  for (size_t i = 0; i < n; i++) free(limits[i].queue);
  free(limits);
}

int jobq_limits_list(jobq *db, const char *queue, jobq_limits **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (db == NULL) return JOBQ_EINVAL;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  if (queue != NULL && jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_LIMITS_LIST, &r, SQL_ARGS(V_TEXT(queue)))) != JOBQ_OK)
    return rc;
  jobq_limits *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_limits *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_limits *l = &v[nv++];
    memset(l, 0, sizeof *l);
    l->queue = jobq__col_text(db, r, 0, &failed);
    l->running = jobq__col_int(db, r, 1);
    l->rate = jobq__col_int(db, r, 2);
    l->rate_period_ms = l->rate > 0 ? jobq__col_int(db, r, 3) : 0;
    l->running_now = jobq__col_int(db, r, 4);
    l->claimed_now = l->rate > 0 ? jobq__col_int(db, r, 5) : 0;
    l->running_per_key = jobq__col_int(db, r, 7);
    l->rate_per_key = jobq__col_int(db, r, 8);
    l->rate_per_key_period_ms = l->rate_per_key > 0 ? jobq__col_int(db, r, 9) : 0;
    l->keys_full_now = l->rate_per_key > 0 ? jobq__col_int(db, r, 10) : 0;
    l->held = (jobq__col_int(db, r, 6) != 0 &&
               ((l->running > 0 && l->running_now >= l->running) ||
                (l->rate > 0 && l->claimed_now >= l->rate))) ||
              jobq__col_int(db, r, 11) != 0;
  }
  jobq__rows_done(db, r);
  if (got < 0 || failed) {
    jobq_limits_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- keys */

int jobq__key_orders(jobq *db, const char *queue, int *orders) {
  int free_key = 0;
  int rc = jobq__sql_exists(db, JOBQ_Q_KEY_FREE, &free_key, SQL_ARGS(V_TEXT(queue)));
  *orders = !free_key;
  return rc;
}

/* ---------------------------------------------------------------- claiming */

int jobq__limited_keep(jobq *db, jobq_rows *r, int col) {
  return jobq__names_keep(db, r, col, &db->limited, &db->limited_cap);
}

int jobq__limited(const jobq *db, const char *const *queues, size_t nq) {
  return jobq__names_has(db->limited, queues, nq);
}

void jobq__limit_plan_release(jobq__limit_plan *p) {
  jobq__texts_free(p->names, p->n);
  free(p->caps);
  free(p->rate_ms);
  free(p->per_key);
  free(p->key_n);
  free(p->key_ms);
  memset(p, 0, sizeof *p);
}

/* Whether queue is one of queues[0..nq) (every queue when nq is 0). */
static int wanted(const char *const *queues, size_t nq, const char *queue) {
  for (size_t k = 0; k < nq; k++)
    if (strcmp(queues[k], queue) == 0) return 1;
  return nq == 0;
}

/* Whether a row of LIMITS_CLAIM's limits (-1: none) has one. */
static int limited_row(const int64_t *lim) {
  return lim[0] >= 0 || lim[1] >= 0 || lim[3] >= 0 || lim[4] >= 0;
}

/* What is left of limit, having used used of it; 0 when none is. */
static int64_t left(int64_t limit, int64_t used) { return used < limit ? limit - used : 0; }

int jobq__limits_plan(jobq *db, const char *const *queues, size_t nq, size_t max,
                     jobq__limit_plan *p) {
  memset(p, 0, sizeof *p);
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_LIMITS_CLAIM, &r, SQL_ARGS());
  if (rc != JOBQ_OK) return rc;
  /* The wanted queues, and their limits: running, rate, its period,
   * running per key, rate per key and its period (-1, or 0 for a
   * period: none). */
  int64_t (*lim)[6] = NULL;
  size_t cap = 0, nl = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    size_t len;
    const char *name = db->store->col_bytes(r, 0, &len);
    if (!wanted(queues, nq, name)) continue;
    if (p->n == cap) {
      cap = cap ? cap * 2 : 8;
      char **names = realloc(p->names, cap * sizeof *names);
      if (names != NULL) p->names = names;
      void *l = realloc(lim, cap * sizeof *lim);
      if (l != NULL) lim = l;
      if (names == NULL || l == NULL) {
        failed = 1;
        break;
      }
    }
    p->names[p->n] = jobq__col_text(db, r, 0, &failed);
    lim[p->n][0] = jobq__col_int(db, r, 1);
    lim[p->n][1] = jobq__col_int(db, r, 2);
    lim[p->n][2] = jobq__col_int(db, r, 3);
    lim[p->n][3] = jobq__col_int(db, r, 4);
    lim[p->n][4] = jobq__col_int(db, r, 5);
    lim[p->n][5] = jobq__col_int(db, r, 6);
    nl += limited_row(lim[p->n]);
    p->n++;
  }
  jobq__rows_done(db, r);
  if (got >= 0 && !failed && p->n > 0) {
    p->caps = malloc(p->n * sizeof *p->caps);
    p->rate_ms = calloc(p->n, sizeof *p->rate_ms);
    p->per_key = calloc(p->n, sizeof *p->per_key);
    p->key_n = calloc(p->n, sizeof *p->key_n);
    p->key_ms = calloc(p->n, sizeof *p->key_ms);
    failed = p->caps == NULL || p->rate_ms == NULL || p->per_key == NULL ||
             p->key_n == NULL || p->key_ms == NULL;
  }
  rc = got < 0 ? got : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  /* The limit locks, in name order (the rows came so), all at once. */
  jobq_lock *locks = rc == JOBQ_OK && nl > 0 ? malloc(nl * sizeof *locks) : NULL;
  if (rc == JOBQ_OK && nl > 0 && locks == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; rc == JOBQ_OK && i < p->n; i++)
    if (limited_row(lim[i])) locks[k++] = (jobq_lock){'l', 1, p->names[i], NULL};
  if (rc == JOBQ_OK && nl > 0) rc = db->store->lock(db, locks, jobq__locks_sort(locks, nl));
  free(locks);
  /* Under them, what is left of each. */
  for (size_t i = 0; rc == JOBQ_OK && i < p->n; i++) {
    int64_t c = (int64_t)max, used = 0;
    if (lim[i][0] >= 0) {
      rc = jobq__sql_int(db, JOBQ_Q_RUNNING_COUNT, 0, &used, SQL_ARGS(V_TEXT(p->names[i])));
      if (left(lim[i][0], used) < c) c = left(lim[i][0], used);
    }
    if (rc == JOBQ_OK && lim[i][1] >= 0) {
      const jobq_val args[] = {V_TEXT(p->names[i]), V_INT(lim[i][2])};
      rc = jobq__sql_run(db, JOBQ_Q_STARTS_PRUNE, args, 2);
      if (rc == JOBQ_OK) rc = jobq__sql_int(db, JOBQ_Q_STARTS_SUM, 0, &used, args, 2);
      if (left(lim[i][1], used) < c) c = left(lim[i][1], used);
      p->rate_ms[i] = lim[i][2];
    }
    /* A key's old claims forgotten, as the queue's are: what is left
     * is read by the claim's statements, key by key. */
    if (rc == JOBQ_OK && lim[i][4] >= 0) {
      rc = jobq__sql_run(db, JOBQ_Q_KEY_STARTS_PRUNE,
                         SQL_ARGS(V_TEXT(p->names[i]), V_INT(lim[i][5])));
      p->key_n[i] = lim[i][4];
      p->key_ms[i] = lim[i][5];
    }
    p->caps[i] = c;
    if (lim[i][3] > 0) p->per_key[i] = lim[i][3];
  }
  free(lim);
  if (rc != JOBQ_OK) jobq__limit_plan_release(p);
  return rc;
}

/* Sorts places in jobs (a jobq_job array) by the jobs' keys. */
static int key_cmp(const void *x, const void *y, void *jobs) {
  const jobq_job *v = jobs;
  return strcmp(v[*(const size_t *)x].key, v[*(const size_t *)y].key);
}

/* The claims of each key of queue's jobs among jobs[0..n) (place[0..n),
 * room for the places), one row a key (KEY_STARTS_ADD). */
static int keys_claimed(jobq *db, const char *queue, const jobq_job *jobs, size_t n,
                        size_t *place) {
  size_t nk = 0;
  for (size_t j = 0; j < n; j++)
    if (jobs[j].key != NULL && strcmp(jobs[j].queue, queue) == 0) place[nk++] = j;
  if (nk == 0) return JOBQ_OK;
  qsort_r(place, nk, sizeof *place, key_cmp, (void *)jobs);
  jobq_val *v = malloc(3 * nk * sizeof *v);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  size_t rows = 0;
  for (size_t i = 0; i < nk; i++) {
    const char *key = jobs[place[i]].key;
    if (rows > 0 && strcmp(v[nk + rows - 1].p, key) == 0) {
      v[2 * nk + rows - 1].i++;
      continue;
    }
    v[rows] = V_TEXT(queue);
    v[nk + rows] = V_TEXT(key);
    v[2 * nk + rows] = V_INT(1);
    rows++;
  }
  int rc = jobq__sql_set(db, JOBQ_Q_KEY_STARTS_ADD,
                         SQL_ARGS(V_COL('t', v, rows), V_COL('t', v + nk, rows),
                                  V_COL('i', v + 2 * nk, rows)),
                         0, NULL, NULL, NULL, NULL);
  free(v);
  return rc;
}

int jobq__limit_claimed(jobq *db, const jobq__limit_plan *p, const jobq_job *jobs, size_t n) {
  size_t *place = NULL;
  int rc = JOBQ_OK;
  for (size_t i = 0; rc == JOBQ_OK && i < p->n; i++) {
    if (p->rate_ms[i] != 0) {
      int64_t k = 0;
      for (size_t j = 0; j < n; j++) k += strcmp(jobs[j].queue, p->names[i]) == 0;
      if (k > 0)
        rc = jobq__sql_run(db, JOBQ_Q_STARTS_ADD,
                           SQL_ARGS(V_TEXT(p->names[i]), V_INT(k)));
    }
    if (rc != JOBQ_OK || p->key_n[i] == 0 || n == 0) continue;
    if (place == NULL && (place = malloc(n * sizeof *place)) == NULL)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    else
      rc = keys_claimed(db, p->names[i], jobs, n, place);
  }
  free(place);
  return rc;
}
