/*
 * claim.c - taking ready jobs for a session: one short transaction for a
 * whole batch, refused when the database's identity changed or the
 * session is gone; and a worker's steady rhythm, acknowledging one batch
 * and claiming the next in the same transaction.  Where the dialect can,
 * a claim is one statement that picks, locks, marks and returns the jobs
 * (PostgreSQL); elsewhere each queue's best jobs are picked, then marked.
 * Claim tokens are made here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CLAIM_MAX 10000

static int jobq__claim_check(jobq *db, const char *const *queues, size_t nq, size_t max) {
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE,
                      "a claim inside a caller's transaction: expected it "
                      "outside jobq_begin/jobq_commit, so that it commits at once");
  if (nq > 0 && queues == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid queues: NULL with a count of %zu", nq);
  for (size_t i = 0; i < nq; i++) {
    int rc = jobq_check_queue(db, queues[i]);
    if (rc != JOBQ_OK) return rc;
  }
  if (max > CLAIM_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid claim size '%zu': expected 1 to %d",
                      max, CLAIM_MAX);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- taking jobs */

/* The hex characters a claim's tokens share: by them, the jobs of a
 * claim whose commit's reply was lost can be found. */
#define CLAIM_PREFIX 16

/* Claim order: priority (higher first), then run_at, then id. */
static int claim_order(const void *x, const void *y) {
  const jobq_job *a = x, *b = y;
  if (a->priority != b->priority) return a->priority > b->priority ? -1 : 1;
  if (a->run_at_ms != b->run_at_ms) return a->run_at_ms < b->run_at_ms ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* The jobs a claim's statements return (the columns lib/sql.c gives for
 * CLAIM and CLAIM_PICK), appended to jobs[0..*n). */
typedef struct taken {
  jobq_job *v;
  size_t n, cap;
  /* CLAIM_PICK_KEYED's last columns, for each job: how many of its key
   * run and were claimed in the key's rate period (busy is NULL for the
   * other statements; each job's two are busy[2i] and busy[2i + 1]). */
  int64_t *busy;
  int keyed;
} taken;

static int taken_rows(jobq *db, jobq_rows *r, size_t first, size_t count, void *arg) {
  (void)first;
  (void)count;
  taken *t = arg;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (t->n == t->cap) {
      size_t cap = t->cap ? t->cap * 2 : 16;
      jobq_job *v = realloc(t->v, cap * sizeof *v);
      if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      t->v = v;
      if (t->keyed) {
        int64_t *b = realloc(t->busy, 2 * cap * sizeof *b);
        if (b == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
        t->busy = b;
      }
      t->cap = cap;
    }
    if (t->keyed) {
      t->busy[2 * t->n] = jobq__col_int(db, r, 12);
      t->busy[2 * t->n + 1] = jobq__col_int(db, r, 13);
    }
    jobq_job *j = &t->v[t->n++];
    memset(j, 0, sizeof *j);
    j->id = jobq__col_int(db, r, 0);
    j->queue = jobq__col_text(db, r, 1, &failed);
    j->payload = jobq__col_bytes(db, r, 2, &j->payload_len, &failed);
    if (j->payload == NULL && !failed) j->payload = jobq__memdup("", 0, &failed);
    j->attempt = (int)jobq__col_int(db, r, 3);
    j->max_attempts = (int)jobq__col_int(db, r, 4);
    j->priority = (int)jobq__col_int(db, r, 5);
    j->key = jobq__col_text(db, r, 6, &failed);
    j->timeout_ms = jobq__col_int(db, r, 7);
    j->prev_lost = (int)jobq__col_int(db, r, 8);
    size_t len;
    const char *claim = db->store->col_bytes(r, 9, &len);
    snprintf(j->claim, sizeof j->claim, "%.*s", (int)len, claim);
    j->run_at_ms = jobq__col_int(db, r, 10);
    j->claimed_at_ms = jobq__col_int(db, r, 11);
    if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  return got < 0 ? got : JOBQ_OK;
}

/* max claim tokens in tok[0..max) (each JOBQ_CLAIM_LEN + 1 bytes, in
 * *buf, freed by the caller): a start they share, prefix, so that the
 * claim's jobs can be found when no reply told which they are (the
 * session's tag, then random), and a random rest for each, so that one
 * job's token does not tell another's.  The rests come from one draw. */
static int tokens(jobq *db, const jobq_session *s, size_t max, char prefix[CLAIM_PREFIX + 1],
                  char **buf) {
  enum { REST = JOBQ_CLAIM_LEN - CLAIM_PREFIX, SIZE = JOBQ_CLAIM_LEN + 1 };
  char *rest = malloc(max * REST + 1), *t = malloc(max * SIZE);
  if (rest == NULL || t == NULL) {
    free(rest);
    free(t);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  jobq__random_hex(prefix, CLAIM_PREFIX / 2);
  memcpy(prefix, s->tag, JOBQ__TAG_LEN);
  jobq__random_hex(rest, max * REST / 2);
  for (size_t i = 0; i < max; i++) {
    memcpy(t + i * SIZE, prefix, CLAIM_PREFIX);
    memcpy(t + i * SIZE + CLAIM_PREFIX, rest + i * REST, REST);
    t[i * SIZE + JOBQ_CLAIM_LEN] = '\0';
  }
  free(rest);
  *buf = t;
  return JOBQ_OK;
}

/*
 * The claim in one statement (CLAIM), the transaction's last: the
 * counters go before it, and a store may send them and the COMMIT with
 * it (PostgreSQL: one round trip, so that the rows the claim locks are
 * held for no round trip more, while other claimers step over them).
 * Should the outcome of such a commit be unknown, no job is known: the
 * session's next transaction gives back what it holds under the claim's
 * tokens.
 */
static int claim_at_once(jobq *db, jobq_session *s, const char *const *queues, size_t nq,
                         const jobq__limit_plan *plan, size_t max, taken *t) {
  /* Queues in parts: joined first (once), then claimed from the
   * session's own parts in the same one statement. */
  int parted = plan == NULL && jobq__parted(db, queues, nq);
  /* Under limits: the plan's queues, each with its cap (CLAIM_CAPPED),
   * and the commit waits for the claims' count when a rate needs it. */
  int ends = 1;
  if (plan != NULL) {
    queues = (const char *const *)plan->names;
    nq = plan->n;
    for (size_t i = 0; i < nq; i++)
      ends = ends && plan->rate_ms[i] == 0 && plan->key_n[i] == 0;
  }
  char prefix[CLAIM_PREFIX + 1], *tok;
  int rc = tokens(db, s, max, prefix, &tok);
  jobq_val *v = rc == JOBQ_OK ? malloc((5 * nq + max) * sizeof *v) : NULL;
  if (rc == JOBQ_OK && v == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; rc == JOBQ_OK && i < nq; i++) v[i] = V_TEXT(queues[i]);
  for (size_t i = 0; rc == JOBQ_OK && plan != NULL && i < nq; i++) {
    v[nq + max + i] = V_INT(plan->caps[i]);
    v[2 * nq + max + i] = V_INT(plan->per_key[i]);
    v[3 * nq + max + i] = V_INT(plan->key_n[i]);
    v[4 * nq + max + i] = V_INT(plan->key_ms[i]);
  }
  for (size_t i = 0; rc == JOBQ_OK && i < max; i++)
    v[nq + i] = V_TEXTN(tok + i * (JOBQ_CLAIM_LEN + 1), JOBQ_CLAIM_LEN);
  if (rc == JOBQ_OK && parted) rc = jobq__parts_claim_lock(db, s, queues, nq);
  if (rc == JOBQ_OK) rc = jobq__counts_write(db);
  size_t now = s->start_now < max ? s->start_now : max;
  jobq_rows *r = NULL;
  db->txn_committed = 0;
  if (rc == JOBQ_OK && plan == NULL)
    rc = db->store->query(db, parted ? JOBQ_Q_CLAIM_PARTS : JOBQ_Q_CLAIM,
                          SQL_ARGS(nq ? V_COL('t', v, nq) : V_NULL, V_INT((int64_t)max),
                                   V_TEXT(s->id), V_INT((int64_t)now), V_COL('t', v + nq, max)),
                          &r, &(const jobq_how){.ends = 1, .claim = max});
  else if (rc == JOBQ_OK)
    rc = db->store->query(
        db, JOBQ_Q_CLAIM_CAPPED,
        SQL_ARGS(V_COL('t', v, nq), V_INT((int64_t)max), V_TEXT(s->id),
                 V_INT((int64_t)now), V_COL('t', v + nq, max),
                 V_COL('i', v + nq + max, nq), V_COL('i', v + 2 * nq + max, nq),
                 V_COL('i', v + 3 * nq + max, nq), V_COL('i', v + 4 * nq + max, nq)),
        &r, &(const jobq_how){.ends = ends, .claim = max});
  if (rc == JOBQ_OK) {
    rc = taken_rows(db, r, 0, 0, t);
    jobq__rows_done(db, r);
  }
  if (rc == JOBQ_OK && db->txn_committed == 1) rc = jobq__failpoint(db, "claim.sent-commit");
  /* The connection broke with the commit on its way: it may have gone
   * through with jobs no reply named. */
  if (rc == JOBQ_ECONN && db->txn_committed != 0 && jobq__session_doubt_claim(db, s, prefix) != JOBQ_OK)
    rc = JOBQ_ENOMEM;
  free(v);
  free(tok);
  return rc;
}

/* Sorts places of the jobs of kt by their keys, then by place. */
static int key_place_cmp(const void *x, const void *y, void *kt) {
  const jobq_job *v = ((const taken *)kt)->v;
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  int c = strcmp(v[a].key, v[b].key);
  return c != 0 ? c : (a > b) - (a < b);
}

/* Of kt's jobs (one queue's, in claim order), into t: the first most of
 * those whose key has room, at most per_key of a key running and key_n
 * claimed in the key's rate period (0: no such limit); the others are
 * freed. */
static int keyed_fits(jobq *db, taken *kt, int64_t per_key, int64_t key_n, int64_t most,
                      taken *t) {
  size_t *place = malloc((kt->n ? kt->n : 1) * sizeof *place);
  unsigned char *fits = malloc(kt->n ? kt->n : 1);
  if (place == NULL || fits == NULL) {
    free(place);
    free(fits);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  size_t nk = 0;
  for (size_t i = 0; i < kt->n; i++) {
    fits[i] = kt->v[i].key == NULL;
    if (kt->v[i].key != NULL) place[nk++] = i;
  }
  qsort_r(place, nk, sizeof *place, key_place_cmp, kt);
  for (size_t i = 0, rank = 0; i < nk; i++) {
    rank = i > 0 && strcmp(kt->v[place[i]].key, kt->v[place[i - 1]].key) == 0 ? rank + 1 : 0;
    const int64_t *b = &kt->busy[2 * place[i]];
    fits[place[i]] = (per_key == 0 || (int64_t)rank + b[0] < per_key) &&
                     (key_n == 0 || (int64_t)rank + b[1] < key_n);
  }
  int rc = JOBQ_OK;
  int64_t took = 0;
  for (size_t i = 0; i < kt->n; i++) {
    jobq_job *j = &kt->v[i];
    if (rc == JOBQ_OK && fits[i] && took < most && t->n == t->cap) {
      size_t cap = t->cap ? t->cap * 2 : 16;
      jobq_job *v = realloc(t->v, cap * sizeof *v);
      if (v == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      else t->v = v, t->cap = cap;
    }
    if (rc == JOBQ_OK && fits[i] && took < most) {
      t->v[t->n++] = *j;
      took++;
    } else {
      free(j->queue);
      free(j->payload);
      free(j->key);
    }
  }
  kt->n = 0;
  free(place);
  free(fits);
  return rc;
}

/* Queue name's jobs, up to most, from s's own parts of it (PART_PICK for
 * each), appended to t. */
static int pick_parts(jobq *db, jobq_session *s, const char *name, int64_t most, taken *t) {
  int64_t *parts;
  size_t np;
  int rc = jobq__parts_mine(db, s, name, &parts, &np);
  for (size_t k = 0; k < np && rc == JOBQ_OK; k++) {
    jobq_rows *r;
    rc = jobq__sql_query(db, JOBQ_Q_PART_PICK, &r,
                         SQL_ARGS(V_TEXT(name), V_INT(most), V_INT(parts[k])));
    if (rc == JOBQ_OK) {
      rc = taken_rows(db, r, 0, 0, t);
      jobq__rows_done(db, r);
    }
  }
  free(parts);
  return rc;
}

/* The claim in steps: each queue's jobs picked (CLAIM_PICK; under
 * limits, the plan's queues, no more of each than its cap; in a queue in
 * parts, from the session's own parts), the best max of them marked
 * running (CLAIM_MARK), those that start at once and those held back
 * apart, at one claim time on the database clock.  A queue with a limit
 * per key is claimed from whole, parts or not. */
static int claim_in_steps(jobq *db, jobq_session *s, const char *const *queues, size_t nq,
                          const jobq__limit_plan *plan, size_t max, taken *t) {
  char **names = NULL;
  size_t nn = 0;
  int rc = plan != NULL ? JOBQ_OK
                        : jobq__sql_texts(db, JOBQ_Q_QUEUES_ACTIVE, &names, &nn, SQL_ARGS());
  for (size_t i = 0; i < (plan ? plan->n : nn) && rc == JOBQ_OK; i++) {
    const char *name = plan ? plan->names[i] : names[i];
    int64_t most = plan && plan->caps[i] < (int64_t)max ? plan->caps[i] : (int64_t)max;
    int wanted = plan != NULL || nq == 0;
    for (size_t k = 0; k < nq && !wanted; k++) wanted = strcmp(queues[k], name) == 0;
    int64_t per_key = plan ? plan->per_key[i] : 0, key_n = plan ? plan->key_n[i] : 0;
    if (wanted && most > 0 && per_key == 0 && key_n == 0 && jobq__parted(db, &name, 1)) {
      rc = pick_parts(db, s, name, most, t);
    } else if (wanted && most > 0 && per_key == 0 && key_n == 0) {
      jobq_rows *r;
      rc = jobq__sql_query(db, JOBQ_Q_CLAIM_PICK, &r, SQL_ARGS(V_TEXT(name), V_INT(most)));
      if (rc == JOBQ_OK) {
        rc = taken_rows(db, r, 0, 0, t);
        jobq__rows_done(db, r);
      }
    } else if (wanted && most > 0) {
      /* A limit per key: more jobs picked, for keys that come many in a
       * row, and only those that fit taken.  Under a rate per key alone
       * keys order, and one job of a key at most is ready. */
      taken kt = {NULL, 0, 0, NULL, 1};
      jobq_rows *r;
      rc = jobq__sql_query(db, JOBQ_Q_CLAIM_PICK_KEYED, &r,
                           SQL_ARGS(V_TEXT(name), V_INT(per_key > 0 ? 4 * most : most),
                                    V_INT(per_key), V_INT(key_n), V_INT(plan->key_ms[i])));
      if (rc == JOBQ_OK) {
        rc = taken_rows(db, r, 0, 0, &kt);
        jobq__rows_done(db, r);
      }
      if (rc == JOBQ_OK) rc = keyed_fits(db, &kt, per_key, key_n, most, t);
      jobq_jobs_free(kt.v, kt.n);
      free(kt.busy);
    }
  }
  jobq__texts_free(names, nn);
  if (rc != JOBQ_OK || t->n == 0) return rc;
  /* Several queues: the best of all of them.  The rows locked beyond max
   * stay locked until commit, a moment later. */
  qsort(t->v, t->n, sizeof *t->v, claim_order);
  while (t->n > max) {
    jobq_job *j = &t->v[--t->n];
    free(j->queue);
    free(j->payload);
    free(j->key);
  }
  char prefix[CLAIM_PREFIX + 1], *tok = NULL;
  int64_t now = 0;
  rc = tokens(db, s, t->n, prefix, &tok);
  if (rc == JOBQ_OK) rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  jobq_val *v = rc == JOBQ_OK ? malloc(2 * t->n * sizeof *v) : NULL;
  if (rc == JOBQ_OK && v == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; rc == JOBQ_OK && i < t->n; i++) {
    jobq_job *j = &t->v[i];
    memcpy(j->claim, tok + i * (JOBQ_CLAIM_LEN + 1), JOBQ_CLAIM_LEN + 1);
    j->claimed_at_ms = now;
    v[i] = V_INT(j->id);
    v[t->n + i] = V_TEXT(j->claim);
  }
  /* The first start_now start at once, the others are held back. */
  size_t start = s->start_now < t->n ? s->start_now : t->n;
  for (int started = 1; rc == JOBQ_OK && started >= 0; started--) {
    size_t from = started ? 0 : start, k = started ? start : t->n - start;
    int64_t changed = 0;
    if (k > 0)
      rc = jobq__sql_set(db, JOBQ_Q_CLAIM_MARK,
                         SQL_ARGS(V_TEXT(s->id), V_INT(started), V_INT(now),
                                  V_COL('i', v + from, k), V_COL('t', v + t->n + from, k)),
                         0, NULL, NULL, NULL, &changed);
    if (rc == JOBQ_OK && changed != (int64_t)k)
      rc = jobq__fail(db, JOBQ_EDB, "claiming %zu locked jobs changed %lld", k,
                      (long long)changed);
  }
  free(v);
  free(tok);
  return rc;
}

/* Claims up to max ready jobs for s from the nq queues (all unpaused
 * queues when nq is 0), in claim order, as the transaction's last
 * statements: *jobs and *n (jobq_jobs_free).  When some queue has a
 * limit, no more than the limits leave (lib/limit.c). */
static int claim_jobs(jobq *db, jobq_session *s, const char *const *queues, size_t nq,
                      size_t max, jobq_job **jobs, size_t *n) {
  taken t = {NULL, 0, 0, NULL, 0};
  jobq__limit_plan plan, *p = NULL;
  int rc = JOBQ_OK;
  if (jobq__limited(db, queues, nq) &&
      (rc = jobq__limits_plan(db, queues, nq, max, &plan)) == JOBQ_OK)
    p = &plan;
  if (rc == JOBQ_OK)
    rc = jobq__sql_none(db->store->dialect, JOBQ_Q_CLAIM) ||
                 (p != NULL && jobq__parted(db, queues, nq))
             ? claim_in_steps(db, s, queues, nq, p, max, &t)
             : claim_at_once(db, s, queues, nq, p, max, &t);
  if (rc == JOBQ_OK && p != NULL) rc = jobq__limit_claimed(db, p, t.v, t.n);
  if (p != NULL) jobq__limit_plan_release(p);
  if (rc != JOBQ_OK) {
    jobq_jobs_free(t.v, t.n);
    return rc;
  }
  /* A statement hands rows back in no promised order. */
  if (t.n > 1) qsort(t.v, t.n, sizeof *t.v, claim_order);
  *jobs = t.v;
  *n = t.n;
  return JOBQ_OK;
}

/* A claim whose commit failed with JOBQ_ECONN may have committed all the
 * same: the reply was lost, not the commit.  Had the caller been told of
 * a failure, its live session would hold jobs that no one runs until the
 * session ends.  The first job, read back under its claim token on a
 * connection made again, tells: JOBQ_OK when the claim holds it, and so
 * all its jobs (one transaction).  Otherwise rc stands, with its message,
 * and the jobs are doubtful: the read-back may have failed, or run before
 * a commit still under way on the server became visible.  The session's
 * next transaction gives back those it holds. */
static int claim_outcome(jobq *db, jobq_session *s, const jobq_job *jobs, size_t n,
                         int rc) {
  jobq__error kept;
  jobq__error_keep(db, &kept);
  int held = 0;
  if (jobq__txn_begin(db) == JOBQ_OK) {
    jobq_rows *r;
    int got = jobq__failpoint(db, "claim.read-back");
    if (got == JOBQ_OK)
      got = jobq__sql_row(db, JOBQ_Q_ACK_ROW, &r,
                          SQL_ARGS(V_INT(jobs[0].id), V_TEXT(s->id), V_TEXT(jobs[0].claim)));
    if (got == 1) jobq__rows_done(db, r);
    held = jobq__txn_end(db, got < 0 ? got : JOBQ_OK) == JOBQ_OK && got == 1;
  }
  if (held) return jobq__ok(db);
  if (jobq__session_doubt(db, s, jobs, n) != JOBQ_OK) return JOBQ_ENOMEM;
  jobq__error_restore(db, &kept);
  return rc;
}

int jobq_claim(jobq_session *s, const char *const *queues, size_t nq,
               size_t max, jobq_job **jobs, size_t *n) {
  return jobq_ack_claim(s, NULL, 0, queues, nq, max, jobs, n);
}

int jobq_ack_claim(jobq_session *s, jobq_ack *acks, size_t nacks,
                   const char *const *queues, size_t nq, size_t max,
                   jobq_job **jobs, size_t *n) {
  *jobs = NULL;
  *n = 0;
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc = jobq__claim_check(db, queues, nq, max);
  if (rc == JOBQ_OK) rc = jobq__ack_check(db, acks, nacks);
  if (rc != JOBQ_OK || (max == 0 && nacks == 0)) return rc;
  int attempt = 0;
  int64_t began = jobq__mono_ms();
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    if (nacks > 0) rc = jobq__failpoint(db, "ack.before-fence");
    if (rc == JOBQ_OK) rc = jobq__session_enter(db, s, max > 0, acks, nacks);
    if (rc == JOBQ_OK) rc = jobq__ack_batch(db, s, acks, nacks);
    /* The claim comes last: a store may commit with it (store.h). */
    if (rc == JOBQ_OK && nacks > 0) rc = jobq__failpoint(db, "ack.before-commit");
    if (rc == JOBQ_OK && max > 0) rc = jobq__failpoint(db, "claim.before-commit");
    if (rc == JOBQ_OK && max > 0) rc = claim_jobs(db, s, queues, nq, max, jobs, n);
    rc = jobq__txn_end(db, rc);
    /* A queue joined in a transaction that did not commit is joined again. */
    if (rc != JOBQ_OK) jobq__parts_forget(s);
    if (rc == JOBQ_OK && max > 0) rc = jobq__failpoint(db, "claim.after-commit");
    if (rc == JOBQ_ECONN && *n > 0) rc = claim_outcome(db, s, *jobs, *n, rc);
    if (rc != JOBQ_OK) {
      jobq_jobs_free(*jobs, *n);
      *jobs = NULL;
      *n = 0;
    }
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc == JOBQ_OK) {
    jobq__session_committed(s);
    jobq__session_claimed(s, *jobs, *n);
    if (max > 0) jobq__tally_claimed(s, *jobs, *n);
    jobq__mark_acks(db, acks, nacks, began);
  }
  s->start_now = SIZE_MAX;
  jobq__ack_done(s, acks, nacks, rc);
  if (rc == JOBQ_OK && nacks > 0) rc = jobq__failpoint(db, "ack.after-commit");
  if (rc != JOBQ_OK) {
    /* Committed, but the caller hears of a failure (a failpoint): what
     * it holds is no longer given out. */
    jobq__session_unhanded(s, *jobs, *n);
    jobq_jobs_free(*jobs, *n);
    *jobs = NULL;
    *n = 0;
    for (size_t i = 0; i < nacks; i++) acks[i].status = rc, acks[i].already = 0;
  }
  return rc;
}

void jobq_jobs_free(jobq_job *jobs, size_t n) {
  if (jobs == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(jobs[i].queue);
    free(jobs[i].payload);
    free(jobs[i].key);
  }
  free(jobs);
}
