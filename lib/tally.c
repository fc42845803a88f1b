/*
 * tally.c - what each session did, counted in memory on the way and kept
 * in the database per minute (jobq_tally), so that dashboards and metrics
 * on any machine read the same figures and a restart of them loses
 * nothing; and the attempts that ended without finishing their job
 * (jobq_attempts).
 *
 * Claims and acknowledgements only add to counters in the session: the
 * hot path writes nothing more.  The counts reach the database with the
 * session's heartbeats and its close, into rows of its own (minute,
 * session, queue): no row is shared by two sessions, so the figures make
 * no claimer wait for another.  Minutes older than JOBQ_TALLY_KEEP_MIN
 * are folded, now and then, into one row per queue (minute 0, session
 * ''), so that totals only grow while the table stays small.
 *
 * The jobs a session holds (lib/held.c) keep their queue, attempt and
 * claim time, for the counts of their acknowledgements and for the
 * record of an attempt that fails and is retried.  An attempt record costs one INSERT on that slow path alone:
 * a completion writes nothing here.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The counters of a queue, in the order of TALLY_ADD's columns. */
enum { T_CLAIMED, T_EMPTY, T_DONE, T_FAILED, T_RETRIED, T_DEAD, T_CANCELLED, T_WAIT, T_W0 };
_Static_assert(T_W0 + JOBQ_WAIT_BUCKETS == JOBQ_TALLY_COUNTERS, "one counter a column");

/* How often a session folds old minutes, and the longest error text an
 * attempt record keeps (its end, as last_error does). */
#define FOLD_EVERY_MS (10 * 60 * 1000)
#define ATTEMPT_ERROR_MAX 4096

static const int64_t wait_bounds[JOBQ_WAIT_BUCKETS - 1] = {
    10, 50, 250, 1000, 5000, 15000, 60000, 300000, 1800000};

int64_t jobq_wait_bound_ms(int i) {
  return i >= 0 && i < JOBQ_WAIT_BUCKETS - 1 ? wait_bounds[i] : -1;
}

/* The counters of queue in s, made when missing (entry 0 is '', claims
 * that found nothing); NULL when out of memory: the count is lost. */
static int64_t *counters(jobq_session *s, const char *queue) {
  for (size_t i = 0; i < s->ntally; i++)
    if (strcmp(s->tally[i].queue, queue) == 0) return s->tally[i].v;
  struct jobq_tally_acc *v = realloc(s->tally, (s->ntally + 1) * sizeof *v);
  if (v == NULL) return NULL;
  s->tally = v;
  struct jobq_tally_acc *t = &v[s->ntally++];
  memset(t, 0, sizeof *t);
  snprintf(t->queue, sizeof t->queue, "%s", queue);
  return t->v;
}

/* ---------------------------------------------------------------- counting */

void jobq__tally_claimed(jobq_session *s, const jobq_job *jobs, size_t n) {
  if (n == 0) {
    int64_t *v = counters(s, "");
    if (v != NULL) v[T_EMPTY]++;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t *v = counters(s, jobs[i].queue);
    if (v == NULL) continue;
    v[T_CLAIMED]++;
    int64_t wait = jobs[i].claimed_at_ms - jobs[i].run_at_ms;
    if (wait < 0) wait = 0;
    int b = 0;
    while (b < JOBQ_WAIT_BUCKETS - 1 && wait > wait_bounds[b]) b++;
    v[T_WAIT] += wait;
    v[T_W0 + b]++;
  }
}

void jobq__tally_acked(jobq_session *s, const jobq_ack *acks, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const jobq_ack *a = &acks[i];
    if (a->status != JOBQ_OK && a->status != JOBQ_ELOST) continue;
    struct jobq_held_job *h = jobq__held_find(s, a->id);
    int64_t *v = a->status == JOBQ_OK && !a->already
                     ? counters(s, h != NULL ? h->queue : "")
                     : NULL;
    if (v != NULL) {
      int again = a->outcome == JOBQ_STATE_READY || a->outcome == JOBQ_STATE_WAITING;
      v[T_DONE] += a->outcome == JOBQ_STATE_DONE;
      v[T_FAILED] += a->kind == JOBQ_ACK_FAIL;
      v[T_RETRIED] += again && (a->kind == JOBQ_ACK_FAIL || a->kind == JOBQ_ACK_RETRY);
      v[T_DEAD] += a->outcome == JOBQ_STATE_DEAD;
      v[T_CANCELLED] += a->outcome == JOBQ_STATE_CANCELLED;
    }
  }
}

int jobq__tally_attempts(jobq *db, jobq_session *s, const jobq_ack *acks, size_t n) {
  int rc = JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const jobq_ack *a = &acks[i];
    if (a->status != JOBQ_OK || a->already) continue;
    if (a->kind != JOBQ_ACK_FAIL && a->kind != JOBQ_ACK_RETRY) continue;
    if (a->outcome != JOBQ_STATE_READY && a->outcome != JOBQ_STATE_WAITING) continue;
    const struct jobq_held_job *h = jobq__held_find(s, a->id);
    const char *text = a->data;
    size_t len = text != NULL ? a->len : 0;
    if (len > ATTEMPT_ERROR_MAX) {
      text += len - ATTEMPT_ERROR_MAX;
      len = ATTEMPT_ERROR_MAX;
    }
    char *clean = NULL;
    if (len > 0 && jobq__utf8_clean(text, len, &clean, &len) != JOBQ_OK)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    rc = jobq__sql_defer(db, JOBQ_Q_ATTEMPT_ADD,
                       SQL_ARGS(V_INT(a->id), V_INT(h ? h->attempt : 0),
                                V_TEXT(a->kind == JOBQ_ACK_FAIL ? "failed" : "retry"),
                                len > 0 ? V_TEXTN(clean ? clean : text, len) : V_NULL,
                                V_TEXT(s->id), h ? V_INT(h->claimed_at) : V_NULL));
    free(clean);
  }
  return rc;
}

/* ---------------------------------------------------------------- writing */

int jobq__tally_write(jobq *db, jobq_session *s) {
  int any = 0;
  for (size_t i = 0; i < s->ntally && !any; i++)
    for (int c = 0; c < JOBQ_TALLY_COUNTERS && !any; c++) any = s->tally[i].v[c] != 0;
  if (!any) return JOBQ_OK;
  int rc = JOBQ_OK;
  for (size_t i = 0; i < s->ntally && rc == JOBQ_OK; i++) {
    const int64_t *v = s->tally[i].v;
    int nonzero = 0;
    for (int c = 0; c < JOBQ_TALLY_COUNTERS; c++) nonzero |= v[c] != 0;
    if (!nonzero) continue;
    rc = jobq__sql_defer(db, JOBQ_Q_TALLY_ADD,
                       SQL_ARGS(V_INT(-1), V_TEXT(s->id), V_TEXT(s->tally[i].queue),
                                V_INT(v[0]), V_INT(v[1]), V_INT(v[2]), V_INT(v[3]),
                                V_INT(v[4]), V_INT(v[5]), V_INT(v[6]), V_INT(v[7]),
                                V_INT(v[8]), V_INT(v[9]), V_INT(v[10]), V_INT(v[11]),
                                V_INT(v[12]), V_INT(v[13]), V_INT(v[14]), V_INT(v[15]),
                                V_INT(v[16]), V_INT(v[17])));
  }
  return rc;
}

void jobq__tally_written(jobq_session *s) {
  for (size_t i = 0; i < s->ntally; i++) memset(s->tally[i].v, 0, sizeof s->tally[i].v);
}

/* One fold, in the caller's transaction. */
static int fold(jobq *db) {
  int64_t now;
  int rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  if (rc != JOBQ_OK) return rc;
  int64_t before = now / 60000 - JOBQ_TALLY_KEEP_MIN;
  jobq_tally *t;
  size_t n;
  if ((rc = jobq__tally_read(db, JOBQ_Q_TALLY_OLD, before, &t, &n)) != JOBQ_OK) return rc;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const jobq_tally *x = &t[i];
    rc = jobq__sql_defer(db, JOBQ_Q_TALLY_ADD,
                       SQL_ARGS(V_INT(0), V_TEXT(""), V_TEXT(x->queue), V_INT(x->claimed),
                                V_INT(x->empty_claims), V_INT(x->done), V_INT(x->failed),
                                V_INT(x->retried), V_INT(x->dead), V_INT(x->cancelled),
                                V_INT(x->wait_ms), V_INT(x->wait[0]), V_INT(x->wait[1]),
                                V_INT(x->wait[2]), V_INT(x->wait[3]), V_INT(x->wait[4]),
                                V_INT(x->wait[5]), V_INT(x->wait[6]), V_INT(x->wait[7]),
                                V_INT(x->wait[8]), V_INT(x->wait[9])));
  }
  jobq_tallies_free(t, n);
  if (rc == JOBQ_OK && n > 0) rc = jobq__sql_run(db, JOBQ_Q_TALLY_DROP, SQL_ARGS(V_INT(before)));
  return rc;
}

int jobq__tally_fold_now(jobq *db) {
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    rc = jobq__txn_end(db, fold(db));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

void jobq__tally_fold(jobq *db, jobq_session *s) {
  int64_t mono = jobq__mono_ms();
  /* The first fold of a session comes a random while after its start, so
   * that foremen started together fold at different times. */
  if (s->folded_ms == 0) s->folded_ms = mono - (int64_t)(jobq__rand(db) % FOLD_EVERY_MS);
  if (mono - s->folded_ms < FOLD_EVERY_MS) return;
  s->folded_ms = mono;
  /* A fold that failed is done by a later one; the heartbeat stands. */
  jobq__error kept;
  jobq__error_keep(db, &kept);
  jobq__tally_fold_now(db);
  jobq__error_restore(db, &kept);
}

void jobq__tally_release(jobq_session *s) { free(s->tally); }

/* ---------------------------------------------------------------- reading */

int jobq__tally_read(jobq *db, int id, int64_t arg, jobq_tally **out, size_t *n) {
  *out = NULL;
  *n = 0;
  jobq_rows *r;
  int rc = id == JOBQ_Q_TALLY_TOTALS ? jobq__sql_query(db, id, &r, SQL_ARGS())
                                     : jobq__sql_query(db, id, &r, SQL_ARGS(V_INT(arg)));
  if (rc != JOBQ_OK) return rc;
  jobq_tally *v = NULL;
  size_t nv = 0, cap = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (nv == cap) {
      cap = cap ? cap * 2 : 64;
      jobq_tally *w = realloc(v, cap * sizeof *w);
      if (w == NULL) {
        failed = 1;
        break;
      }
      v = w;
    }
    jobq_tally *t = &v[nv++];
    memset(t, 0, sizeof *t);
    /* TALLY_OLD has no minute column. */
    int c = id == JOBQ_Q_TALLY_OLD ? 0 : 1;
    if (c) t->minute = jobq__col_int(db, r, 0);
    t->queue = jobq__col_text(db, r, c, &failed);
    if (t->queue == NULL && !failed) t->queue = jobq__strdup("", &failed);
    int64_t *f[] = {&t->claimed, &t->empty_claims, &t->done, &t->failed, &t->retried,
                    &t->dead, &t->cancelled, &t->wait_ms};
    for (int k = 0; k < T_W0; k++) *f[k] = jobq__col_int(db, r, c + 1 + k);
    for (int k = 0; k < JOBQ_WAIT_BUCKETS; k++) t->wait[k] = jobq__col_int(db, r, c + 1 + T_W0 + k);
  }
  jobq__rows_done(db, r);
  if (got < 0 || failed) {
    jobq_tallies_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

int jobq_tally_minutes(jobq *db, int64_t since_ms, jobq_tally **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  if (since_ms < 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid since '%lld': expected Unix milliseconds",
                      (long long)since_ms);
  /* Minute 0 holds the folded totals, never a minute. */
  int64_t from = since_ms / 60000;
  return jobq__tally_read(db, JOBQ_Q_TALLY_READ, from > 0 ? from : 1, out, n);
}

int jobq_tally_totals(jobq *db, jobq_tally **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  return jobq__tally_read(db, JOBQ_Q_TALLY_TOTALS, 0, out, n);
}

void jobq_tallies_free(jobq_tally *t, size_t n) {
  if (t == NULL) return;
  for (size_t i = 0; i < n; i++) free(t[i].queue);
  free(t);
}

/* ---------------------------------------------------------------- attempts */

int jobq_attempts(jobq *db, int64_t id, jobq_attempt **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_ATTEMPTS_OF, &r, SQL_ARGS(V_INT(id)))) != JOBQ_OK)
    return rc;
  jobq_attempt *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_attempt *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_attempt *a = &v[nv++];
    memset(a, 0, sizeof *a);
    a->attempt = (int)jobq__col_int(db, r, 0);
    a->outcome = jobq__col_text(db, r, 1, &failed);
    a->error = jobq__col_text(db, r, 2, &failed);
    a->session = jobq__col_text(db, r, 3, &failed);
    a->host = jobq__col_text(db, r, 4, &failed);
    a->claimed_at_ms = jobq__col_int(db, r, 5);
    a->ended_at_ms = jobq__col_int(db, r, 6);
  }
  jobq__rows_done(db, r);
  if (got < 0 || failed) {
    jobq_attempts_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

void jobq_attempts_free(jobq_attempt *a, size_t n) {
  if (a == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(a[i].outcome);
    free(a[i].error);
    free(a[i].session);
    free(a[i].host);
  }
  free(a);
}
