/*
 * ack.c - acknowledgements: complete, fail, retry later, release and
 * extend, fenced by (job, session, claim token), many in one transaction.
 * The decision of where an acknowledged job goes (backoff, dead after the
 * last attempt, cancelled when a cancel was requested) is made here once
 * for every store.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The longest error text kept on a job; longer ones keep their tail. */
#define ERROR_MAX 65536

int64_t jobq__backoff_ms(int64_t base_ms, int attempt, uint64_t rnd) {
  if (base_ms <= 0) return 0;
  int64_t d = base_ms;
  for (int i = 1; i < attempt && d < JOBQ_BACKOFF_CAP_MS; i++) d *= 2;
  if (d > JOBQ_BACKOFF_CAP_MS) d = JOBQ_BACKOFF_CAP_MS;
  /* jitter in [0.5, 1.5) */
  double j = 0.5 + (double)(rnd >> 11) / (double)(1ULL << 53);
  return (int64_t)((double)d * j);
}

/* Where an acknowledged job goes, given what its row says. */
static void jobq__ack_plan(const jobq_ack_row *row, const jobq_ack *a, uint64_t rnd,
                           jobq_ack_plan *p) {
  memset(p, 0, sizeof *p);
  if (a->kind != JOBQ_ACK_COMPLETE) {
    p->error = a->data;
    p->error_len = a->len;
    if (p->error_len > ERROR_MAX) {
      p->error += p->error_len - ERROR_MAX;
      p->error_len = ERROR_MAX;
    }
  }
  switch (a->kind) {
    case JOBQ_ACK_COMPLETE:
      p->state = JOBQ_STATE_DONE;
      return;
    case JOBQ_ACK_RELEASE:
      p->error = NULL;
      p->error_len = 0;
      p->state = row->cancel_requested ? JOBQ_STATE_CANCELLED : JOBQ_STATE_READY;
      p->spend = 0;
      return;
    case JOBQ_ACK_FAIL:
    case JOBQ_ACK_RETRY:
      if (a->kind == JOBQ_ACK_RETRY && p->error == NULL) {
        p->error = "retry requested";
        p->error_len = strlen(p->error);
      }
      if (row->cancel_requested) {
        p->state = JOBQ_STATE_CANCELLED;
      } else if (row->attempts >= row->max_attempts) {
        p->state = JOBQ_STATE_DEAD;
      } else {
        p->state = JOBQ_STATE_READY;
        p->spend = 1;
        p->delay_ms = a->retry_in_ms >= 0
                          ? a->retry_in_ms
                          : jobq__backoff_ms(row->backoff_ms, row->attempts, rnd);
      }
      return;
  }
}

void jobq_ack_init(jobq_ack *a, const jobq_job *job, jobq_ack_kind kind) {
  memset(a, 0, sizeof *a);
  a->id = job->id;
  memcpy(a->claim, job->claim, sizeof a->claim);
  a->kind = kind;
  a->retry_in_ms = -1;
}

/* Was this exact acknowledgement already committed?  Sets a->already. */
static int ack_before(jobq *db, jobq_ack *a) {
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_ACK_DONE_BEFORE, &r,
                          SQL_ARGS(V_INT(a->id), V_TEXT(a->claim)));
  if (got < 0) return got;
  if (got == 1) {
    size_t len;
    a->outcome = jobq_state_parse(db->store->col_bytes(r, 0, &len));
    jobq__rows_done(db, r);
    /* A completion repeats only as done; a failure as dead or cancelled. */
    if ((a->kind == JOBQ_ACK_COMPLETE) == (a->outcome == JOBQ_STATE_DONE)) {
      a->status = JOBQ_OK;
      a->already = 1;
    }
    return JOBQ_OK;
  }
  if (a->kind == JOBQ_ACK_COMPLETE || a->kind == JOBQ_ACK_RELEASE) return JOBQ_OK;
  /* A fail or retry that sent the job back keeps its claim on the row
   * until the next claim; a release or a reaping forgets it. */
  int yes;
  int rc = jobq__sql_exists(db, JOBQ_Q_ACK_READY_BEFORE, &yes,
                            SQL_ARGS(V_INT(a->id), V_TEXT(a->claim)));
  if (rc == JOBQ_OK && yes) {
    a->status = JOBQ_OK;
    a->already = 1;
    a->outcome = JOBQ_STATE_READY;
  }
  return rc;
}

/* An acknowledgement, its job's row read and locked, and where the job
 * goes (ack_read). */
typedef struct ack_job {
  jobq_ack *a;
  jobq_jobref ref; /* queue and key are the ack_job's own */
  jobq_ack_plan plan;
  unsigned char at[16]; /* where ACK_ROWS found the row (PostgreSQL: its ctid) */
  size_t at_len;
} ack_job;

/* Whether j's job leaves the hot table, under its order locks. */
static int ack_leaves(const ack_job *j) { return j->plan.state != JOBQ_STATE_READY; }

/* *j for a, whose job's row its claim holds: where the job goes, and its
 * queue and key (j takes them over). */
static void ack_found(jobq *db, jobq_ack *a, const jobq_ack_row *row, char *queue, char *key,
                      int barrier, int children, ack_job *j) {
  j->a = a;
  jobq__ack_plan(row, a, jobq__rand(db), &j->plan);
  j->ref = (jobq_jobref){a->id, queue, key, barrier, children};
  j->at_len = 0;
}

/* Reads and locks a's job, fenced by its claim, into *j, with its plan:
 * 1; 0 when the claim does not hold, a->status said by ack_before(); or
 * an error. */
static int ack_read(jobq *db, jobq_session *s, jobq_ack *a, ack_job *j) {
  a->status = JOBQ_ELOST;
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_ACK_ROW, &r,
                          SQL_ARGS(V_INT(a->id), V_TEXT(s->id), V_TEXT(a->claim)));
  if (got < 0) return got;
  if (got == 0) {
    int rc = ack_before(db, a);
    return rc != JOBQ_OK ? rc : 0;
  }
  jobq_ack_row row = {(int)jobq__col_int(db, r, 0), (int)jobq__col_int(db, r, 1),
                      jobq__col_int(db, r, 2), (int)jobq__col_int(db, r, 3)};
  int failed = 0;
  char *queue = jobq__col_text(db, r, 4, &failed);
  char *key = jobq__col_text(db, r, 5, &failed);
  int barrier = (int)jobq__col_int(db, r, 6);
  int children = (int)jobq__col_int(db, r, 7);
  jobq__rows_done(db, r);
  if (failed) {
    free(queue);
    free(key);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  ack_found(db, a, &row, queue, key, barrier, children, j);
  return 1;
}

static void ack_job_free(ack_job *j) {
  free((char *)j->ref.queue);
  free((char *)j->ref.key);
}

/* The error text of plan *p made valid UTF-8 without NULs, which every
 * engine's text type takes (error texts come from anywhere: a job's
 * stderr); *clean gets the copy to free when one was needed. */
static int plan_error(jobq *db, jobq_ack_plan *p, char **clean) {
  *clean = NULL;
  if (p->error != NULL && jobq__utf8_clean(p->error, p->error_len, clean, &p->error_len) != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (*clean != NULL) p->error = *clean;
  return JOBQ_OK;
}

/* Sends ack_read()'s job where its plan says, its order locks held if it
 * leaves the hot table, and sets its ack's status. */
static int ack_apply(jobq *db, ack_job *j) {
  jobq_ack *a = j->a;
  jobq_ack_plan p = j->plan;
  char *clean;
  int rc = plan_error(db, &p, &clean);
  if (rc == JOBQ_OK && p.state == JOBQ_STATE_READY) {
    /* Delayed too, for an idle worker's jobq_next_due(). */
    if (p.delay_ms == 0) jobq__wake(db, j->ref.queue);
    else jobq__wake_later(db, j->ref.queue);
    rc = jobq__sql_run(db, JOBQ_Q_ACK_REQUEUE,
                       SQL_ARGS(V_INT(a->id), V_INT(p.delay_ms), V_INT(p.spend ? 0 : 1),
                                V_TEXTN(p.error, p.error_len)));
  } else if (rc == JOBQ_OK) {
    rc = jobq__archive(db, &j->ref, JOBQ_STATE_RUNNING, p.state, a->data, a->len, p.error,
                       p.error_len);
  }
  free(clean);
  if (rc == JOBQ_OK) {
    a->status = JOBQ_OK;
    a->outcome = p.state;
  }
  return rc;
}

/* One acknowledgement, fenced by the claim; sets a->status. */
static int ack(jobq *db, jobq_session *s, jobq_ack *a) {
  ack_job j;
  int rc = ack_read(db, s, a, &j);
  if (rc <= 0) return rc;
  rc = ack_leaves(&j) ? jobq__lock_job(db, &j.ref, 1) : JOBQ_OK;
  if (rc == JOBQ_OK) rc = ack_apply(db, &j);
  ack_job_free(&j);
  return rc;
}

static int ack_id_cmp(const void *x, const void *y) {
  const jobq_ack *a = *(jobq_ack *const *)x, *b = *(jobq_ack *const *)y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return (a > b) - (a < b); /* the batch's order */
}

static int ack_job_cmp(const void *x, const void *y) {
  const jobq_jobref *a = &((const ack_job *)x)->ref, *b = &((const ack_job *)y)->ref;
  int c = jobq__lock_cmp(a->queue, a->key, b->queue, b->key);
  return c != 0 ? c : (a->id > b->id) - (a->id < b->id);
}

static int ack_id_only(const void *x, const void *y) {
  int64_t a = (*(jobq_ack *const *)x)->id, b = (*(jobq_ack *const *)y)->id;
  return (a > b) - (a < b);
}

jobq_ack_got *jobq__ack_got_row(jobq *db, jobq_rows *r, jobq_ack *const *acks, size_t n,
                                jobq_ack_got *got, int *failed) {
  jobq_ack key = {.id = jobq__col_int(db, r, 0)}, *kp = &key;
  jobq_ack *const *hit = bsearch(&kp, acks, n, sizeof *acks, ack_id_only);
  size_t len;
  const char *claim = hit ? db->store->col_bytes(r, 1, &len) : NULL;
  /* A row whose claim is another's is not found, as JOBQ_Q_ACK_ROW would
   * not find it. */
  if (hit == NULL || strlen((*hit)->claim) != len || memcmp((*hit)->claim, claim, len) != 0)
    return NULL;
  jobq_ack_got *g = &got[hit - acks];
  g->found = 1;
  g->row = (jobq_ack_row){(int)jobq__col_int(db, r, 2), (int)jobq__col_int(db, r, 3),
                          jobq__col_int(db, r, 4), (int)jobq__col_int(db, r, 5)};
  g->queue = jobq__col_text(db, r, 6, failed);
  g->key = jobq__col_text(db, r, 7, failed);
  g->barrier = (int)jobq__col_int(db, r, 8);
  g->children = (int)jobq__col_int(db, r, 10);
  return g;
}

/* ACK_ROWS's rows: each acknowledgement's whose claim holds. */
typedef struct got_ctx {
  jobq_ack **acks;
  jobq_ack_got *got;
} got_ctx;

static int got_rows(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  got_ctx *g = arg;
  int row, failed = 0;
  while ((row = jobq__rows_next(db, r)) == 1) {
    jobq_ack_got *e = jobq__ack_got_row(db, r, g->acks + first, n, g->got + first, &failed);
    if (e == NULL || jobq__col_null(db, r, 9)) continue;
    size_t len;
    const void *at = db->store->col_bytes(r, 9, &len);
    e->at_len = len < sizeof e->at ? len : sizeof e->at;
    memcpy(e->at, at, e->at_len);
  }
  if (row < 0) return row;
  return failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
}

/* ack_read() for each distinct job of pending[0..m) (ack_id_cmp()
 * order), by one set statement (ACK_ROWS, in id order): jobs[0..*nj) get
 * the ones whose claims hold. */
static int ack_read_many(jobq *db, jobq_session *s, jobq_ack **pending, size_t m,
                         ack_job *jobs, size_t *nj) {
  jobq_ack **acks = malloc(m * sizeof *acks);
  jobq_ack_got *got = calloc(m, sizeof *got);
  jobq_val *ids = malloc(m * sizeof *ids);
  if (acks == NULL || got == NULL || ids == NULL) {
    free(acks);
    free(got);
    free(ids);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  size_t n = 0;
  for (size_t i = 0; i < m; i++) {
    if (i > 0 && pending[i]->id == pending[i - 1]->id) continue;
    pending[i]->status = JOBQ_ELOST;
    ids[n] = V_INT(pending[i]->id);
    acks[n++] = pending[i];
  }
  got_ctx g = {acks, got};
  int rc = jobq__sql_set(db, JOBQ_Q_ACK_ROWS, SQL_ARGS(V_COL('i', ids, n), V_TEXT(s->id)), 0,
                         NULL, got_rows, &g, NULL);
  for (size_t i = 0; i < n; i++) {
    if (rc == JOBQ_OK && got[i].found) {
      ack_job *j = &jobs[(*nj)++];
      ack_found(db, acks[i], &got[i].row, got[i].queue, got[i].key, got[i].barrier,
                got[i].children, j);
      memcpy(j->at, got[i].at, got[i].at_len);
      j->at_len = got[i].at_len;
      continue;
    }
    free(got[i].queue);
    free(got[i].key);
    if (rc == JOBQ_OK) rc = ack_before(db, acks[i]);
  }
  free(ids);
  free(acks);
  free(got);
  return rc;
}

/* The jobs of jobs[0..n) (read by ack_read_many()) that go back to their
 * queues, by one set statement (REQUEUE_ROWS); each one sent gets its
 * status. */
static int requeue_many(jobq *db, ack_job *jobs, size_t n) {
  jobq_val *v = malloc(5 * n * sizeof *v);
  char **clean = calloc(n, sizeof *clean);
  int rc = v == NULL || clean == NULL ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  size_t k = 0;
  jobq_val *at = v, *delay = v + n, *back = v + 2 * n, *error = v + 3 * n, *id = v + 4 * n;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    jobq_ack_plan p = jobs[i].plan;
    if (p.state != JOBQ_STATE_READY) continue;
    rc = plan_error(db, &p, &clean[k]);
    at[k] = jobs[i].at_len ? V_BYTES(jobs[i].at, jobs[i].at_len) : V_NULL;
    delay[k] = V_INT(p.delay_ms);
    back[k] = V_INT(!p.spend);
    error[k] = V_TEXTN(p.error, p.error_len);
    id[k++] = V_INT(jobs[i].a->id);
  }
  if (rc == JOBQ_OK && k > 0)
    rc = jobq__sql_set(db, JOBQ_Q_REQUEUE_ROWS,
                       SQL_ARGS(V_COL('r', at, k), V_COL('i', delay, k), V_COL('i', back, k),
                                V_COL('t', error, k), V_COL('i', id, k)),
                       0, NULL, NULL, NULL, NULL);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (jobs[i].plan.state != JOBQ_STATE_READY) continue;
    if (jobs[i].plan.delay_ms == 0) jobq__wake(db, jobs[i].ref.queue);
    else jobq__wake_later(db, jobs[i].ref.queue);
    jobs[i].a->status = JOBQ_OK;
    jobs[i].a->outcome = JOBQ_STATE_READY;
  }
  for (size_t i = 0; clean != NULL && i < k; i++) free(clean[i]);
  free(clean);
  free(v);
  return rc;
}

/* Whether j's job leaves the hot table and is no barrier: ARCHIVE_ROWS
 * takes it (archive_many). */
static int ack_leaves_at_once(const ack_job *j) { return ack_leaves(j) && !j->ref.barrier; }

/* The jobs of jobs[0..n) (read by ack_read_many(), in ack_job_cmp()
 * order) that leave the hot table and are no barrier, by set statements;
 * each one archived gets its status. */
static int archive_many(jobq *db, ack_job *jobs, size_t n) {
  jobq_archive_row *r = malloc(n * sizeof *r);
  const jobq_jobref **refs = malloc(n * sizeof *refs);
  char **clean = calloc(n, sizeof *clean);
  int rc = r == NULL || refs == NULL || clean == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  size_t k = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (!ack_leaves_at_once(&jobs[i])) continue;
    jobq_ack_plan p = jobs[i].plan;
    const jobq_ack *a = jobs[i].a;
    rc = plan_error(db, &p, &clean[k]);
    int done = p.state == JOBQ_STATE_DONE;
    r[k] = (jobq_archive_row){jobs[i].at, jobs[i].at_len, a->id, p.state,
                              done ? a->data : NULL, done ? a->len : 0, p.error,
                              p.error_len};
    refs[k++] = &jobs[i].ref;
  }
  if (rc == JOBQ_OK) rc = jobq__archive_many(db, r, refs, k);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (!ack_leaves_at_once(&jobs[i])) continue;
    jobs[i].a->status = JOBQ_OK;
    jobs[i].a->outcome = jobs[i].plan.state;
  }
  for (size_t i = 0; clean != NULL && i < k; i++) free(clean[i]);
  free(clean);
  free(refs);
  free(r);
  return rc;
}

/* Many acknowledgements, pending[] in ack_id_cmp() order: every job's
 * row read and locked first, in id order (ACK_ROWS), then the queue and
 * key locks of every job that leaves the hot table, each once, in
 * jobq__lock_cmp() as a put takes them, then each job sent where it goes
 * (those back to their queues by REQUEUE_ROWS, those out of the hot
 * table by ARCHIVE_ROWS, barriers one at a time).  Finished in the batch's
 * order, two jobs of other keys took
 * their locks the other way round from a put of both keys, and the two
 * transactions deadlocked (on PostgreSQL each such deadlock costs a
 * second before it is found); finished as they were locked, the queue's
 * counter row, which each finish adds to, was held between two keys'
 * locks.  A second ack of one job comes last, one by one, and finds it
 * acknowledged. */
static int ack_many(jobq *db, jobq_session *s, jobq_ack **pending, size_t m) {
  ack_job *jobs = malloc(m * sizeof *jobs);
  const jobq_jobref **leaving = malloc(m * sizeof *leaving);
  if (jobs == NULL || leaving == NULL) {
    free(jobs);
    free(leaving);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  size_t nj = 0;
  int rc = ack_read_many(db, s, pending, m, jobs, &nj);
  size_t nl = 0;
  if (rc == JOBQ_OK) qsort(jobs, nj, sizeof *jobs, ack_job_cmp);
  for (size_t i = 0; i < nj && rc == JOBQ_OK; i++)
    if (ack_leaves(&jobs[i])) leaving[nl++] = &jobs[i].ref;
  if (rc == JOBQ_OK) rc = jobq__lock_finishing(db, leaving, nl);
  free(leaving);
  if (rc == JOBQ_OK) rc = requeue_many(db, jobs, nj);
  if (rc == JOBQ_OK) rc = archive_many(db, jobs, nj);
  for (size_t i = 0; i < nj && rc == JOBQ_OK; i++)
    if (jobs[i].a->status != JOBQ_OK) rc = ack_apply(db, &jobs[i]);
  for (size_t i = 0; i < nj; i++) ack_job_free(&jobs[i]);
  free(jobs);
  for (size_t i = 1; i < m && rc == JOBQ_OK; i++)
    if (pending[i]->id == pending[i - 1]->id) rc = ack(db, s, pending[i]);
  return rc;
}

/* ---------------------------------------------------------------- completions at once */

/* COMPLETE's rows: a job archived (its ack done, its queue counted),
 * (id 0) a queue with a job made ready, or (id < 0) a job archived that
 * has children (lib/after.c). */
typedef struct complete_ctx {
  jobq_ack **by_id;
  size_t n;
  int64_t *parents; /* (id < 0) the jobs completed that have children */
  size_t nparents;
} complete_ctx;

static int completed(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  complete_ctx *c = arg;
  int row, rc = JOBQ_OK, failed = 0;
  while (rc == JOBQ_OK && (row = jobq__rows_next(db, r)) == 1) {
    jobq_ack key = {.id = jobq__col_int(db, r, 0)}, *kp = &key;
    char *queue = jobq__col_text(db, r, 1, &failed);
    if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    if (key.id == 0) {
      jobq__wake(db, queue);
    } else if (key.id < 0) {
      if (c->nparents < c->n) c->parents[c->nparents++] = -key.id;
    } else {
      rc = jobq__count_add(db, queue, 1, 0, 0);
      jobq_ack **hit = bsearch(&kp, c->by_id, c->n, sizeof *c->by_id, ack_id_only);
      if (hit != NULL) {
        (*hit)->status = JOBQ_OK;
        (*hit)->outcome = JOBQ_STATE_DONE;
      }
    }
    free(queue);
  }
  return rc != JOBQ_OK ? rc : row < 0 ? row : JOBQ_OK;
}

/*
 * The completions of acks[0..n) (all different jobs) in one statement
 * (COMPLETE), where the dialect has one: one round trip on PostgreSQL,
 * where the general way takes six.  The locks of every job of the batch
 * come first, known from what the session holds (lib/held.c): its
 * queue's, shared, so that no barrier comes or goes meanwhile, and its
 * key's, the queues' first, in jobq__lock_cmp() order, so that the ones
 * left to the general way, which takes their locks again, wait for none
 * out of that order.  A batch with a job the session does not know goes the general
 * way whole.  Each completion taken gets its status and outcome; the
 * others keep JOBQ_ACK_PENDING.
 */
static int complete_at_once(jobq *db, jobq_session *s, jobq_ack *acks, size_t n) {
  if (jobq__sql_none(db->store->dialect, JOBQ_Q_COMPLETE) || s->held_unknown) return JOBQ_OK;
  size_t m = 0;
  int keyed = 0;
  for (size_t i = 0; i < n; i++) {
    const struct jobq_held_job *h = jobq__held_find(s, acks[i].id);
    if (h == NULL) return JOBQ_OK;
    if (acks[i].kind != JOBQ_ACK_COMPLETE) continue;
    m++;
    keyed = keyed || h->key != NULL;
  }
  if (m == 0) return JOBQ_OK;
  jobq_lock *locks = malloc(2 * n * sizeof *locks);
  jobq_val *v = malloc(3 * m * sizeof *v);
  jobq_ack **by_id = malloc(m * sizeof *by_id);
  int64_t *parents = malloc(m * sizeof *parents);
  int rc = locks == NULL || v == NULL || by_id == NULL || parents == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  size_t nl = 0, k = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const struct jobq_held_job *h = jobq__held_find(s, acks[i].id);
    locks[nl++] = (jobq_lock){'q', 0, h->queue, NULL};
    if (h->key != NULL) locks[nl++] = (jobq_lock){'k', 1, h->queue, h->key};
    if (acks[i].kind != JOBQ_ACK_COMPLETE) continue;
    v[k] = V_INT(acks[i].id);
    v[m + k] = V_TEXT(acks[i].claim);
    v[2 * m + k] = V_BYTES(acks[i].data, acks[i].len);
    by_id[k++] = &acks[i];
  }
  if (rc == JOBQ_OK) rc = db->store->lock(db, locks, jobq__locks_sort(locks, nl));
  if (rc == JOBQ_OK) {
    qsort(by_id, m, sizeof *by_id, ack_id_only);
    complete_ctx c = {by_id, m, parents, 0};
    rc = jobq__sql_set(db, keyed ? JOBQ_Q_COMPLETE : JOBQ_Q_COMPLETE_UNKEYED,
                       SQL_ARGS(V_COL('i', v, m), V_COL('t', v + m, m), V_COL('b', v + 2 * m, m),
                                V_TEXT(s->id), V_INT(keyed)),
                       0, NULL, completed, &c, NULL);
    /* Their children's turn, after the statement (its snapshot predates
     * a put that named them while it waited for their rows). */
    int *done = c.nparents > 0 ? malloc(c.nparents * sizeof *done) : NULL;
    if (c.nparents > 0 && done == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < c.nparents && rc == JOBQ_OK; i++) done[i] = JOBQ_STATE_DONE;
    if (rc == JOBQ_OK) rc = jobq__after_finished(db, c.parents, done, c.nparents);
    free(done);
  }
  free(parents);
  free(locks);
  free(v);
  free(by_id);
  return rc;
}

int jobq__ack_check(jobq *db, jobq_ack *acks, size_t n) {
  for (size_t i = 0; i < n; i++) {
    jobq_ack *a = &acks[i];
    a->status = JOBQ_ELOST;
    a->already = 0;
    a->outcome = 0;
    if (a->kind < JOBQ_ACK_COMPLETE || a->kind > JOBQ_ACK_RELEASE)
      return jobq__fail(db, JOBQ_EINVAL, "ack %zu: invalid kind '%d': expected a jobq_ack_kind", i, (int)a->kind);
    if (a->data == NULL && a->len > 0)
      return jobq__fail(db, JOBQ_EINVAL, "ack %zu: data is NULL with length %zu", i, a->len);
    if (a->kind == JOBQ_ACK_COMPLETE && a->len > db->max_payload)
      return jobq__fail(db, JOBQ_ETOOBIG,
                        "ack %zu: result of %zu bytes is over the limit of %zu bytes",
                        i, a->len, db->max_payload);
    if (a->retry_in_ms > JOBQ_DURATION_MAX_MS)
      return jobq__fail(db, JOBQ_EINVAL,
                        "ack %zu: invalid retry delay '%lldms': expected 0 to %lldms "
                        "(100 years), or -1 for the job's backoff",
                        i, (long long)a->retry_in_ms, JOBQ_DURATION_MAX_MS);
  }
  return JOBQ_OK;
}

/* A job of a queue with a limit that stops running frees a slot (or a
 * key's): other workers held back by the limit are woken, as by a job
 * made ready, and do not wait for their poll.  What the session's last
 * claim saw limited (jobq__limited) is enough: a queue limited since
 * then wakes them at its next claim's look. */
static void slots_freed(jobq *db, jobq_session *s, const jobq_ack *acks, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (acks[i].status != JOBQ_OK || acks[i].already) continue;
    const struct jobq_held_job *h = jobq__held_find(s, acks[i].id);
    const char *queue = h != NULL ? h->queue : NULL;
    if (queue != NULL && jobq__limited(db, &queue, 1)) jobq__wake(db, queue);
  }
}

int jobq__ack_batch(jobq *db, jobq_session *s, jobq_ack *acks, size_t n) {
  if (n == 0) return JOBQ_OK;
  for (size_t i = 0; i < n; i++) acks[i].status = JOBQ_ACK_PENDING;
  jobq_ack **pending = malloc(n * sizeof *pending);
  if (pending == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) pending[i] = &acks[i];
  qsort(pending, n, sizeof *pending, ack_id_cmp);
  int repeated = 0;
  for (size_t i = 1; i < n; i++) repeated = repeated || pending[i]->id == pending[i - 1]->id;
  /* Completions at once where the dialect can, unless a job comes
   * twice: its second ack must find the first's work.  The rest, by set
   * statements (ack_many), or alone. */
  int rc = JOBQ_OK;
  size_t m = n;
  if (!repeated) {
    rc = complete_at_once(db, s, acks, n);
    m = 0;
    for (size_t i = 0; i < n; i++)
      if (pending[i]->status == JOBQ_ACK_PENDING) pending[m++] = pending[i];
  }
  if (rc == JOBQ_OK && m == 1) rc = ack(db, s, pending[0]);
  if (rc == JOBQ_OK && m > 1) rc = ack_many(db, s, pending, m);
  free(pending);
  if (rc == JOBQ_OK) slots_freed(db, s, acks, n);
  return rc == JOBQ_OK ? jobq__tally_attempts(db, s, acks, n) : rc;
}

void jobq__ack_done(jobq_session *s, jobq_ack *acks, size_t n, int rc) {
  for (size_t i = 0; i < n; i++) {
    if (rc != JOBQ_OK) {
      acks[i].status = rc;
      acks[i].already = 0;
      continue;
    }
    if (acks[i].status != JOBQ_OK || acks[i].already) continue;
    /* A joined view counts in its root's figures (on another thread). */
    jobq_session *root = s->root != NULL ? s->root : s;
    if (acks[i].outcome == JOBQ_STATE_DONE)
      __atomic_add_fetch(&root->done, 1, __ATOMIC_RELAXED);
    else if (acks[i].kind == JOBQ_ACK_FAIL)
      __atomic_add_fetch(&root->failed, 1, __ATOMIC_RELAXED);
  }
  /* The figures from what the session held, then the jobs let go. */
  if (rc == JOBQ_OK) jobq__tally_acked(s, acks, n);
  if (rc == JOBQ_OK) jobq__session_acked(s, acks, n);
}

int jobq_ack_many(jobq_session *s, jobq_ack *acks, size_t n) {
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc = jobq__ack_check(db, acks, n), attempt = 0, own = db->txn_depth == 0;
  if (rc != JOBQ_OK) return rc;
  int64_t began = jobq__mono_ms();
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__failpoint(db, "ack.before-fence");
    if (rc == JOBQ_OK) rc = jobq__session_enter(db, s, 0, acks, n);
    if (rc == JOBQ_OK) rc = jobq__ack_batch(db, s, acks, n);
    if (rc == JOBQ_OK) rc = jobq__failpoint(db, "ack.before-commit");
    rc = jobq__txn_end(db, rc);
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc == JOBQ_OK) jobq__session_committed(s);
  if (rc == JOBQ_OK && own) jobq__mark_acks(db, acks, n, began);
  jobq__ack_done(s, acks, n, rc);
  if (rc == JOBQ_OK && (rc = jobq__failpoint(db, "ack.after-commit")) != JOBQ_OK)
    for (size_t i = 0; i < n; i++) acks[i].status = rc, acks[i].already = 0;
  return rc;
}

static int ack_one(jobq_session *s, const jobq_job *job, jobq_ack_kind kind,
                   const void *data, size_t len, int64_t retry_in_ms,
                   int *already) {
  if (s == NULL || job == NULL) return JOBQ_EINVAL;
  jobq_ack a;
  jobq_ack_init(&a, job, kind);
  a.data = data;
  a.len = len;
  a.retry_in_ms = retry_in_ms;
  int rc = jobq_ack_many(s, &a, 1);
  if (already != NULL) *already = a.already;
  if (rc != JOBQ_OK) return rc;
  if (a.status == JOBQ_ELOST)
    return jobq__fail(s->db, JOBQ_ELOST,
                      "job %lld: claim '%s' is no longer held by this session: "
                      "the job was released, reaped or acknowledged under another claim",
                      (long long)job->id, job->claim);
  return a.status;
}

int jobq_complete(jobq_session *s, const jobq_job *job, const void *result,
                  size_t len, int *already) {
  return ack_one(s, job, JOBQ_ACK_COMPLETE, result, len, -1, already);
}

int jobq_fail(jobq_session *s, const jobq_job *job, const char *error) {
  return ack_one(s, job, JOBQ_ACK_FAIL, error, error ? strlen(error) : 0, -1, NULL);
}

int jobq_retry_later(jobq_session *s, const jobq_job *job, int64_t delay_ms,
                     const char *reason) {
  return ack_one(s, job, JOBQ_ACK_RETRY, reason, reason ? strlen(reason) : 0,
                 delay_ms < 0 ? -1 : delay_ms, NULL);
}

int jobq_release(jobq_session *s, const jobq_job *job) {
  return ack_one(s, job, JOBQ_ACK_RELEASE, NULL, 0, -1, NULL);
}

int jobq_extend(jobq_session *s, const jobq_job *job, int64_t ms) {
  if (s == NULL || job == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  if (ms < 0 || ms > JOBQ_DURATION_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid extension '%lldms': expected 0 to %lldms (100 years)",
                      (long long)ms, JOBQ_DURATION_MAX_MS);
  int rc, attempt = 0, cancel = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    int64_t changed = 0, req = 0;
    rc = jobq__sql_change(db, JOBQ_Q_EXTEND, &changed,
                          SQL_ARGS(V_INT(job->id), V_TEXT(s->id), V_TEXT(job->claim),
                                   V_INT(ms)));
    if (rc == JOBQ_OK && changed == 0)
      rc = jobq__fail(db, JOBQ_ELOST, "job %lld: claim '%s' is no longer held by this session",
                      (long long)job->id, job->claim);
    if (rc == JOBQ_OK)
      rc = jobq__sql_int(db, JOBQ_Q_EXTEND_CANCEL, 0, &req, SQL_ARGS(V_INT(job->id)));
    cancel = req != 0;
    rc = jobq__txn_end(db, rc);
  } while (jobq__txn_retry(db, rc, &attempt));
  /* A cancel request still moves the deadline. */
  if (rc == JOBQ_OK && cancel)
    return jobq__fail(db, JOBQ_ECANCELLED, "job %lld: an operator asked to cancel it",
                      (long long)job->id);
  return rc;
}
