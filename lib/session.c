/*
 * session.c - a worker's session: a row with a lease on the database clock
 * that the worker heartbeats.  Opening and heartbeating also do this
 * worker's share of reaping sessions whose lease expired (with the stall
 * guard, which holds reaping back for a lease when the database itself may
 * have stalled), so dead workers' jobs come back within seconds.  A
 * session knows the jobs it handed its worker, and gives back, on a
 * connection made again, those the database shows under it that the
 * worker no longer holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int write_starts(jobq *db, jobq_session *s, const jobq_ack *acks,
                                      size_t nacks);
static int jobq__reap(jobq *db, const char *own, int64_t guard_ms, int64_t *count,
                      int64_t *held_ms, int64_t *live);

void jobq_session_opts_init(jobq_session_opts *o) {
  memset(o, 0, sizeof *o);
  o->name = "worker";
  o->lease_ms = JOBQ_DEFAULT_LEASE_MS;
}

static int not_in_caller_txn(jobq *db, const char *what) {
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE,
                      "%s inside a caller's transaction: expected it outside "
                      "jobq_begin/jobq_commit, so that it commits at once",
                      what);
  return JOBQ_OK;
}

/* Registers the session row; the store's host name and our pid. */
static int session_insert(jobq *db, jobq_session *s) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
  char *clean = NULL;
  size_t len;
  if (jobq__utf8_clean(host, strlen(host), &clean, &len) != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int rc = jobq__sql_run(db, JOBQ_Q_SESSION_INSERT,
                         SQL_ARGS(V_TEXT(s->id), V_INT(s->epoch), V_TEXT(s->name),
                                  V_TEXT(clean ? clean : host), V_INT((int64_t)getpid()),
                                  V_INT(s->lease_ms)));
  free(clean);
  return rc;
}

int jobq_session_open(jobq *db, const jobq_session_opts *opts,
                      jobq_session **out) {
  *out = NULL;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  jobq_session_opts def;
  if (opts == NULL) {
    jobq_session_opts_init(&def);
    opts = &def;
  }
  int rc = not_in_caller_txn(db, "a session open");
  if (rc != JOBQ_OK) return rc;
  if (opts->lease_ms < 100 || opts->lease_ms > 86400000)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid lease '%lldms': expected 100ms to 1d",
                      (long long)opts->lease_ms);
  const char *name = opts->name ? opts->name : "worker";
  if (strlen(name) == 0 || strlen(name) >= sizeof((jobq_session *)0)->name ||
      !jobq__utf8_valid(name, strlen(name)))
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid session name '%.40s': expected 1 to 127 bytes of UTF-8",
                      name);
  jobq_session *s = calloc(1, sizeof *s);
  if (s == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  s->db = db;
  s->lease_ms = opts->lease_ms;
  s->start_now = SIZE_MAX;
  s->reconciled = db->connects;
  snprintf(s->name, sizeof s->name, "%s", name);
  jobq__random_hex(s->id, JOBQ_SESSION_ID_LEN / 2);
  jobq__random_hex(s->tag, JOBQ__TAG_LEN / 2);
  s->tag[JOBQ__TAG_LEN - 1] = '0';

  int attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    rc = jobq__identity_check(db);
    if (rc == JOBQ_OK) rc = jobq__marks_check(db);
    if (rc == JOBQ_OK) {
      s->epoch = db->epoch;
      rc = jobq__reap(db, NULL, s->lease_ms, NULL, NULL, NULL);
    }
    if (rc == JOBQ_OK) rc = session_insert(db, s);
    rc = jobq__txn_end(db, rc);
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc != JOBQ_OK) {
    free(s);
    return rc;
  }
  *out = s;
  return JOBQ_OK;
}

int jobq_session_join(jobq *db, jobq_session *s, jobq_session **out) {
  if (out != NULL) *out = NULL;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  if (s == NULL || out == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid session: NULL");
  int rc = not_in_caller_txn(db, "a session join");
  if (rc != JOBQ_OK) return rc;
  jobq_session *root = s->root != NULL ? s->root : s;
  /* The lowest number free (bit 0 is the root's). */
  unsigned used = __atomic_load_n(&root->views, __ATOMIC_RELAXED);
  int view;
  do {
    for (view = 1; view <= JOBQ__VIEWS_MAX && (used & (1u << view)); view++) continue;
    if (view > JOBQ__VIEWS_MAX)
      return jobq__fail(db, JOBQ_EINVAL,
                        "session '%s' has %d joined views: expected at most %d", root->id,
                        JOBQ__VIEWS_MAX, JOBQ__VIEWS_MAX);
  } while (!__atomic_compare_exchange_n(&root->views, &used, used | (1u << view), 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  jobq_session *v = calloc(1, sizeof *v);
  if (v == NULL) {
    __atomic_and_fetch(&root->views, ~(1u << view), __ATOMIC_RELAXED);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  /* Only what never changes of the root is read: it may be at work on
   * another thread. */
  v->db = db;
  v->root = root;
  v->view = view;
  v->lease_ms = root->lease_ms;
  v->epoch = root->epoch;
  v->start_now = SIZE_MAX;
  v->reconciled = db->connects - 1; /* its first heartbeat reconciles */
  memcpy(v->id, root->id, sizeof v->id);
  memcpy(v->name, root->name, sizeof v->name);
  memcpy(v->tag, root->tag, sizeof v->tag);
  v->tag[JOBQ__TAG_LEN - 1] = "0123456789abcdef"[view];
  /* The session must be alive, on this handle's database too. */
  if ((rc = jobq_heartbeat(v, NULL, NULL)) != JOBQ_OK) {
    __atomic_and_fetch(&root->views, ~(1u << view), __ATOMIC_RELAXED);
    jobq__tally_release(v);
    free(v);
    return rc;
  }
  *out = v;
  return JOBQ_OK;
}

void jobq_session_close(jobq_session *s) {
  if (s == NULL) return;
  jobq *db = s->db;
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc, attempt = 0;
  if (db->txn_depth == 0) {
    do {
      if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
      rc = jobq__tally_write(db, s);
      /* A joined view leaves the session to its root. */
      if (rc == JOBQ_OK && s->root == NULL) rc = jobq__end_session(db, s->id, 0);
      rc = jobq__txn_end(db, rc);
    } while (jobq__txn_retry(db, rc, &attempt));
  }
  /* Its number is free again: a view that takes it gives back, on its
   * first reconciliation, what this one left under the session. */
  if (s->root != NULL) __atomic_and_fetch(&s->root->views, ~(1u << s->view), __ATOMIC_RELAXED);
  jobq__tally_release(s);
  jobq__held_release(s);
  jobq__parts_forget(s);
  free(s->started);
  free(s->doubtful);
  free(s);
}

const char *jobq_session_id(const jobq_session *s) { return s->id; }
int64_t jobq_session_lease_ms(const jobq_session *s) { return s->lease_ms; }
int64_t jobq_session_reaped(const jobq_session *s) { return s->reaped; }
int64_t jobq_session_peers(const jobq_session *s) { return s->peers; }

void jobq_session_set_in_flight(jobq_session *s, int64_t in_flight) {
  s->in_flight = in_flight;
}

void jobq_session_start_now(jobq_session *s, size_t n) {
  if (s != NULL) s->start_now = n;
}

void jobq_session_started(jobq_session *s, const jobq_job *job) {
  if (s == NULL || job == NULL) return;
  if (s->nstarted == s->capstarted) {
    size_t cap = s->capstarted ? s->capstarted * 2 : 16;
    int64_t *v = realloc(s->started, cap * sizeof *v);
    /* Out of memory: the job counts as not started, as if it were lost
     * before its start was recorded. */
    if (v == NULL) return;
    s->started = v;
    s->capstarted = cap;
  }
  s->started[s->nstarted++] = job->id;
}

typedef struct held {
  int64_t id;
  int attempts, max_attempts, cancel;
  char queue[JOBQ_QUEUE_MAX + 1];
  int started;
  char claim[JOBQ_CLAIM_LEN + 1];
} held;

static int session_jobs(jobq *db, const char *sid, held **out, size_t *nout);

/* The last error of a lost job that goes back to ready: one its worker
 * started spends its attempt, one it held back does not. */
static const char lost_started[] = "lease expired: the worker was lost";
static const char lost_held[] =
    "lease expired: the worker was lost before it started the job (attempt not counted)";

/* How a job's claim ends when its session no longer holds it: 0 (back to
 * ready), or cancelled when a cancel was asked, or dead when a lost worker
 * spent its last attempt.  A job its worker held back is given back, lost
 * or not: when lost, marked prev_lost all the same, since the worker may
 * have started it in the moment before it could say so.  SESSION_GIVE_BACK
 * and SESSION_REQUEUE_LOST (lib/sql.c) say the same in SQL. */
static int ending(const held *h, int lost) {
  int spent = lost && h->started;
  return h->cancel                                     ? JOBQ_STATE_CANCELLED
         : spent && h->attempts >= h->max_attempts ? JOBQ_STATE_DEAD
                                                   : 0;
}

/* Ends the claim of a job its session no longer holds that does not go
 * back to ready: finish (from ending()) is the state it ends in. */
static int finish_held(jobq *db, const held *h, int finish) {
  char e[128];
  if (finish == JOBQ_STATE_CANCELLED)
    snprintf(e, sizeof e, "cancelled: its worker ended");
  else
    snprintf(e, sizeof e, "lease expired: the worker was lost on attempt %d of %d",
             h->attempts, h->max_attempts);
  jobq_jobref ref;
  int state;
  int got = jobq__job_ref(db, h->id, &ref, &state);
  if (got != 1) return got < 0 ? got : JOBQ_OK;
  int rc = jobq__lock_job(db, &ref, 1);
  if (rc == JOBQ_OK) rc = jobq__archive(db, &ref, state, finish, NULL, 0, e, strlen(e));
  jobq__job_ref_release(&ref);
  return rc;
}

/* Room for n more doubtful jobs of s: the first of them, or NULL when
 * out of memory. */
static struct jobq_doubtful *doubt_more(jobq *db, jobq_session *s, size_t n) {
  if (s->ndoubtful + n > s->capdoubtful) {
    size_t cap = s->capdoubtful ? s->capdoubtful : 16;
    while (cap < s->ndoubtful + n) cap *= 2;
    struct jobq_doubtful *v = realloc(s->doubtful, cap * sizeof *v);
    if (v == NULL) {
      jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      return NULL;
    }
    s->doubtful = v;
    s->capdoubtful = cap;
  }
  return &s->doubtful[s->ndoubtful];
}

/* The jobs s holds of a claim whose jobs are not known (prefix, the start
 * of their tokens), added to its doubtful jobs. */
static int doubtful_of_claim(jobq *db, jobq_session *s, const char *prefix) {
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_CLAIM_HELD, &r,
                           SQL_ARGS(V_TEXT(s->id), V_TEXT(prefix),
                                    V_INT((int64_t)strlen(prefix))));
  if (rc != JOBQ_OK) return rc;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    struct jobq_doubtful *d = doubt_more(db, s, 1);
    if (d == NULL) {
      got = JOBQ_ENOMEM;
      break;
    }
    size_t len;
    const char *claim = db->store->col_bytes(r, 1, &len);
    d->id = jobq__col_int(db, r, 0);
    snprintf(d->claim, sizeof d->claim, "%.*s", (int)len, claim);
    s->ndoubtful++;
  }
  jobq__rows_done(db, r);
  return got < 0 ? got : JOBQ_OK;
}

/* The jobs of doubtful claims that the session holds under their claim
 * tokens were never handed to its worker: they are given back. */
static int give_back_doubtful(jobq *db, jobq_session *s) {
  int rc = JOBQ_OK;
  /* A claim's jobs found by their tokens' start come after the rest. */
  for (size_t i = 0; i < s->ndoubtful && rc == JOBQ_OK; i++) {
    if (s->doubtful[i].id != 0) continue;
    char prefix[JOBQ_CLAIM_LEN + 1];
    memcpy(prefix, s->doubtful[i].claim, sizeof prefix);
    rc = doubtful_of_claim(db, s, prefix);
  }
  for (size_t i = 0; i < s->ndoubtful && rc == JOBQ_OK; i++) {
    const struct jobq_doubtful *d = &s->doubtful[i];
    if (d->id == 0) continue;
    jobq_rows *r;
    int got = jobq__sql_row(db, JOBQ_Q_ACK_ROW, &r,
                            SQL_ARGS(V_INT(d->id), V_TEXT(s->id), V_TEXT(d->claim)));
    if (got != 1) {
      rc = got < 0 ? got : JOBQ_OK;
      continue;
    }
    held h = {d->id, (int)jobq__col_int(db, r, 0), (int)jobq__col_int(db, r, 1),
              (int)jobq__col_int(db, r, 3), "", 0, ""};
    size_t len;
    const char *q = db->store->col_bytes(r, 4, &len);
    snprintf(h.queue, sizeof h.queue, "%.*s", (int)len, q);
    jobq__rows_done(db, r);
    int finish = ending(&h, 0);
    if (finish != 0) {
      rc = finish_held(db, &h, finish);
    } else {
      jobq__wake(db, h.queue);
      rc = jobq__sql_run(db, JOBQ_Q_REQUEUE_GIVEN_BACK, SQL_ARGS(V_INT(h.id)));
    }
  }
  return rc;
}

int jobq__session_enter(jobq *db, jobq_session *s, int claim,
                        const jobq_ack *acks, size_t nacks) {
  int rc;
  jobq__counts_owner(db, s);
  if (claim) {
    /* The identity and the session in one statement. */
    jobq_rows *r;
    int64_t first, last;
    const char *first_claim, *last_claim;
    jobq__marks_args(db, &first, &first_claim, &last, &last_claim);
    int got = jobq__sql_row(db, JOBQ_Q_CLAIM_ENTER, &r,
                            SQL_ARGS(V_TEXT(s->id), V_INT(first), V_TEXT(first_claim),
                                     V_INT(last), V_TEXT(last_claim)));
    if (got < 0) return got;
    rc = jobq__identity_check_row(db, got == 1 ? r : NULL);
    if (rc == JOBQ_OK && db->epoch != s->epoch)
      rc = jobq__fail(db, JOBQ_EEXPIRED,
                      "session '%s' belongs to epoch %lld, the database is at "
                      "epoch %lld: open a new session",
                      s->id, (long long)s->epoch, (long long)db->epoch);
    /* No such session reads as NULLs: epoch 0, not alive. */
    int alive = got == 1 && jobq__col_int(db, r, 5) == s->epoch && jobq__col_int(db, r, 6);
    if (got == 1 && rc == JOBQ_OK) rc = jobq__limited_keep(db, r, 7);
    if (got == 1 && rc == JOBQ_OK) rc = jobq__parted_keep(db, r, 10);
    int64_t first_found = got == 1 ? jobq__col_int(db, r, 8) : 0;
    int64_t last_found = got == 1 ? jobq__col_int(db, r, 9) : 0;
    if (got == 1) jobq__rows_done(db, r);
    if (rc == JOBQ_OK && !alive)
      rc = jobq__fail(db, JOBQ_EEXPIRED,
                      "session '%s' has expired: stop its jobs and open a new session",
                      s->id);
    /* On a connection made again: is it still the database it was?  Else
     * is its last completion still there, before a job lost with it is
     * handed out again (lib/mark.c)? */
    if (rc == JOBQ_OK)
      rc = jobq__write_check_due(db) ? jobq__marks_check(db)
                                     : jobq__marks_seen(db, first_found, last_found);
  } else {
    /* An acknowledgement goes on, alive or not: its claim tokens are its
     * fence.  It only locks the row, and reads nothing back (a store may
     * send it with the next statement). */
    rc = jobq__write_check(db);
    if (rc == JOBQ_OK) rc = jobq__sql_defer(db, JOBQ_Q_SESSION_LOCK, SQL_ARGS(V_TEXT(s->id)));
  }
  if (rc != JOBQ_OK) return rc;
  rc = give_back_doubtful(db, s);
  if (rc == JOBQ_OK) rc = jobq__session_reconcile(db, s);
  return rc == JOBQ_OK ? write_starts(db, s, acks, nacks) : rc;
}

static int id_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int write_starts(jobq *db, jobq_session *s, const jobq_ack *acks,
                                      size_t nacks) {
  if (s->nstarted == 0) return JOBQ_OK;
  /* Every kind of acknowledgement ends its claim, and a claim that ends
   * in this transaction never needs its start written: a fast job is
   * often started and acknowledged between two transactions. */
  int64_t *acked = nacks ? malloc(nacks * sizeof *acked) : NULL;
  if (acked != NULL) {
    for (size_t i = 0; i < nacks; i++) acked[i] = acks[i].id;
    qsort(acked, nacks, sizeof *acked, id_cmp);
  }
  /* s->started stays as it is until a commit (jobq__session_committed): a
   * transaction that fails leaves it for the next one. */
  int64_t *ids = malloc(s->nstarted * sizeof *ids);
  if (ids == NULL) {
    free(acked);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  size_t n = 0;
  for (size_t i = 0; i < s->nstarted; i++)
    if (acked == NULL || !bsearch(&s->started[i], acked, nacks, sizeof *acked, id_cmp))
      ids[n++] = s->started[i];
  free(acked);
  jobq_val *v = n ? malloc(n * sizeof *v) : NULL;
  int rc = n && v == NULL ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) v[i] = V_INT(ids[i]);
  if (rc == JOBQ_OK)
    rc = jobq__sql_set(db, JOBQ_Q_STARTED, SQL_ARGS(V_COL('i', v, n), V_TEXT(s->id)), 0,
                       &(const jobq_how){.defer = 1}, NULL, NULL, NULL);
  free(v);
  free(ids);
  return rc;
}

void jobq__session_committed(jobq_session *s) {
  s->nstarted = 0;
  s->ndoubtful = 0;
  s->reconciled = s->db->connects;
}

int jobq__session_doubt(jobq *db, jobq_session *s, const jobq_job *jobs, size_t n) {
  struct jobq_doubtful *d = doubt_more(db, s, n);
  if (d == NULL) return JOBQ_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    d[i].id = jobs[i].id;
    memcpy(d[i].claim, jobs[i].claim, sizeof d[i].claim);
  }
  s->ndoubtful += n;
  return JOBQ_OK;
}

int jobq__session_doubt_claim(jobq *db, jobq_session *s, const char *prefix) {
  struct jobq_doubtful *d = doubt_more(db, s, 1);
  if (d == NULL) return JOBQ_ENOMEM;
  d->id = 0;
  snprintf(d->claim, sizeof d->claim, "%s", prefix);
  s->ndoubtful++;
  return JOBQ_OK;
}

void jobq__session_acked(jobq_session *s, const jobq_ack *acks, size_t n) {
  /* Every acknowledgement ends the claim, and so does a lost one. */
  for (size_t i = 0; i < n; i++)
    if (acks[i].status == JOBQ_OK || acks[i].status == JOBQ_ELOST) jobq__held_drop(s, acks[i].id);
}

void jobq__session_unhanded(jobq_session *s, const jobq_job *jobs, size_t n) {
  for (size_t i = 0; i < n; i++) jobq__held_drop(s, jobs[i].id);
}

/* The last error of a job its session still had that its worker no
 * longer held. */
static const char not_held[] =
    "its worker no longer held it: its outcome was lost with the database's "
    "latest writes (a failover or a restore)";

int jobq__session_reconcile(jobq *db, jobq_session *s) {
  if (s->reconciled == db->connects || s->held_unknown) return JOBQ_OK;
  held *h;
  size_t n;
  int rc = session_jobs(db, s->id, &h, &n);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    /* Another view's claim (jobq_session_join) is its own to reconcile. */
    if (strncmp(h[i].claim, s->tag, JOBQ__TAG_LEN) != 0) continue;
    const struct jobq_held_job *mine = jobq__held_find(s, h[i].id);
    if (mine != NULL && strcmp(mine->claim, h[i].claim) == 0) continue;
    int finish = ending(&h[i], 1);
    if (finish != 0) {
      rc = finish_held(db, &h[i], finish);
      continue;
    }
    jobq__wake(db, h[i].queue);
    rc = jobq__sql_run(db, JOBQ_Q_REQUEUE_LOST,
                       SQL_ARGS(V_INT(h[i].id), V_TEXT(not_held), V_INT(h[i].started ? 0 : 1)));
  }
  free(h);
  return rc;
}

void jobq__session_claimed(jobq_session *s, const jobq_job *jobs, size_t n) {
  jobq__held_add(s, jobs, n);
}

static int heartbeat(jobq *db, jobq_session *s, int64_t **ids, size_t *n) {
  /* What it reaps counts in its own rows (a reaped session's folded). */
  jobq__counts_owner(db, s);
  int rc = jobq__failpoint(db, "heartbeat.before");
  if (rc == JOBQ_OK) rc = jobq__identity_check(db);
  if (rc == JOBQ_OK && db->epoch != s->epoch)
    rc = jobq__fail(db, JOBQ_EEXPIRED,
                    "session '%s' belongs to epoch %lld, the database is at "
                    "epoch %lld: open a new session",
                    s->id, (long long)s->epoch, (long long)db->epoch);
  if (rc == JOBQ_OK) rc = jobq__marks_check(db);
  /* The guard looks before this heartbeat counts. */
  int64_t reaped = 0, live = 0;
  if (rc == JOBQ_OK) rc = jobq__reap(db, s->id, s->lease_ms, &reaped, NULL, &live);
  int64_t changed = 0;
  const jobq_session *root = s->root != NULL ? s->root : s;
  int64_t done = __atomic_load_n(&root->done, __ATOMIC_RELAXED);
  int64_t failed = __atomic_load_n(&root->failed, __ATOMIC_RELAXED);
  if (rc == JOBQ_OK)
    rc = jobq__sql_change(db, JOBQ_Q_HEARTBEAT, &changed,
                          SQL_ARGS(V_TEXT(s->id), V_INT(s->in_flight), V_INT(done),
                                   V_INT(failed), V_INT(s->epoch)));
  if (rc == JOBQ_OK && changed != 0) rc = jobq__tally_write(db, s);
  if (rc == JOBQ_OK && changed != 0) rc = give_back_doubtful(db, s);
  if (rc == JOBQ_OK && changed != 0) rc = jobq__session_reconcile(db, s);
  if (rc == JOBQ_OK && changed != 0) rc = write_starts(db, s, NULL, 0);
  if (rc == JOBQ_OK && changed != 0) rc = jobq__parts_heartbeat(db, s);
  if (rc == JOBQ_OK && changed == 0)
    rc = jobq__fail(db, JOBQ_EEXPIRED,
                    "session '%s' has expired and was reaped: stop its jobs "
                    "and open a new session",
                    s->id);
  if (rc == JOBQ_OK && ids != NULL)
    rc = jobq__sql_ids(db, JOBQ_Q_CANCEL_LIST, SIZE_MAX, ids, n, SQL_ARGS(V_TEXT(s->id)));
  s->reaped = rc == JOBQ_OK ? reaped : 0;
  /* Itself among them, whatever its lease was before this heartbeat. */
  if (rc == JOBQ_OK) s->peers = live > 0 ? live : 1;
  return rc;
}

int jobq_heartbeat(jobq_session *s, int64_t **cancel, size_t *ncancel) {
  if (cancel != NULL) *cancel = NULL;
  if (ncancel != NULL) *ncancel = 0;
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc = not_in_caller_txn(db, "a heartbeat");
  if (rc != JOBQ_OK) return rc;
  int64_t *ids = NULL;
  size_t n = 0;
  int attempt = 0;
  do {
    free(ids);
    ids = NULL;
    n = 0;
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__txn_end(db, heartbeat(db, s, cancel ? &ids : NULL, &n));
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc != JOBQ_OK) {
    free(ids);
    return rc;
  }
  jobq__session_committed(s);
  jobq__tally_written(s);
  jobq__tally_fold(db, s);
  if (cancel != NULL) {
    *cancel = ids;
    *ncancel = n;
  }
  return JOBQ_OK;
}

/* The jobs the database shows under session sid, their rows locked:
 * *out (free()) and *nout. */
static int session_jobs(jobq *db, const char *sid, held **out, size_t *nout) {
  held *h = NULL;
  size_t n = 0, cap = 0;
  *out = NULL;
  *nout = 0;
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_SESSION_JOBS, &r, SQL_ARGS(V_TEXT(sid)));
  if (rc != JOBQ_OK) return rc;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      held *v = realloc(h, cap * sizeof *v);
      if (v == NULL) {
        got = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
        break;
      }
      h = v;
    }
    h[n] = (held){jobq__col_int(db, r, 0), (int)jobq__col_int(db, r, 1),
                  (int)jobq__col_int(db, r, 2), (int)jobq__col_int(db, r, 3), "",
                  (int)jobq__col_int(db, r, 5), ""};
    size_t len;
    const char *q = db->store->col_bytes(r, 4, &len);
    snprintf(h[n].queue, sizeof h[0].queue, "%.*s", (int)len, q);
    const char *c = db->store->col_bytes(r, 6, &len);
    snprintf(h[n++].claim, sizeof h[0].claim, "%.*s", (int)len, c);
  }
  jobq__rows_done(db, r);
  if (got < 0) {
    free(h);
    return got;
  }
  *out = h;
  *nout = n;
  return JOBQ_OK;
}

int jobq__end_session(jobq *db, const char *sid, int lost) {
  held *h;
  size_t n;
  int rc = session_jobs(db, sid, &h, &n);
  if (rc != JOBQ_OK) return rc;
  /* The jobs that go back to ready (most of them, often all), locked by
   * the read above, in one statement; the others one at a time.  The
   * statement must send back exactly those: no claim of the session can
   * come in between, as the reaper holds its row (EXPIRED) and a session
   * that closes claims no more. */
  size_t back = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (ending(&h[i], lost) != 0) continue;
    back++;
    jobq__wake(db, h[i].queue);
  }
  if (rc == JOBQ_OK && back > 0 && lost)
    rc = jobq__sql_run(db, JOBQ_Q_ATTEMPTS_LOST, SQL_ARGS(V_TEXT(sid), V_TEXT(lost_started)));
  if (rc == JOBQ_OK && back > 0) {
    int64_t changed = 0;
    rc = lost ? jobq__sql_change(db, JOBQ_Q_SESSION_REQUEUE_LOST, &changed,
                                 SQL_ARGS(V_TEXT(sid), V_TEXT(lost_started), V_TEXT(lost_held)))
              : jobq__sql_change(db, JOBQ_Q_SESSION_GIVE_BACK, &changed, SQL_ARGS(V_TEXT(sid)));
    if (rc == JOBQ_OK && changed != (int64_t)back)
      rc = jobq__fail(db, JOBQ_EDB, "ending session '%s' sent %lld of its %zu jobs back to ready",
                      sid, (long long)changed, back);
  }
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    int finish = ending(&h[i], lost);
    if (finish != 0) rc = finish_held(db, &h[i], finish);
  }
  free(h);
  if (rc != JOBQ_OK) return rc;
  /* The delete waits for the acknowledgements that locked the row
   * (SESSION_LOCK): their counts are there for the fold. */
  rc = jobq__sql_run(db, JOBQ_Q_SESSION_DELETE, SQL_ARGS(V_TEXT(sid)));
  if (rc == JOBQ_OK) rc = jobq__parts_leave(db, sid);
  return rc == JOBQ_OK ? jobq__counts_fold(db, sid) : rc;
}

/* Reaps a bounded share per call: the rest goes with the next one. */
#define REAP_BATCH 64
/* Running jobs without a session row come only from a restore or a hand
 * edit, and finding that there are none walks the session index, dead
 * entries included (on PostgreSQL, every claimed job's until a vacuum:
 * 50 to 77 ms a look right after a million jobs were archived).  A
 * session's reap looks at most this often per handle; jobq_reap() looks
 * every time. */
#define ORPHANS_EVERY_MS 60000

/* The stall guard.  A session whose lease ran out is reaped, unless
 * every session has been silent for longer than a lease: then the
 * silence may be the database's (stalled, or the whole machine suspended)
 * rather than every worker's, and reaping them all would throw away every
 * claim of live workers that could not heartbeat.  So the guard first
 * holds reaping back: it gives every session a lease from now (keeping
 * their heartbeats as they were) and records its look in jobq_meta, a
 * write that shows the database working now.  Once a lease has passed
 * since that look with still no heartbeat from anyone, the silence is the
 * sessions' own, and they are reaped; by then the live ones would have
 * heartbeated, and a heartbeat (or the reaper's own, fresh session) shows
 * the database working and ends the guard at once.  A look older than
 * three leases shows little about now (the database may have stalled
 * again since): the guard looks anew.  Returns 1 (and how long it holds
 * back in *held_ms) when it holds reaping back, 0 when reaping may go on,
 * or an error.  *live (may be NULL) gets how many sessions' leases run. */
static int stall_guard(jobq *db, int64_t guard_ms, int64_t *held_ms, int64_t *live) {
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_STALL, &r, SQL_ARGS());
  if (got <= 0) return got;
  int64_t now = jobq__col_int(db, r, 0);
  int any = !jobq__col_null(db, r, 1);
  int64_t beat = jobq__col_int(db, r, 1), longest = jobq__col_int(db, r, 2);
  int64_t look = jobq__col_int(db, r, 3);
  if (live != NULL) *live = any ? jobq__col_int(db, r, 4) : 0;
  jobq__rows_done(db, r);
  if (!any) return 0; /* no session at all */
  if (guard_ms < 0) guard_ms = longest;
  if (now - beat <= guard_ms) return 0;
  int64_t since = now - look;
  if (look > beat && since >= guard_ms && since <= 3 * guard_ms) return 0;
  if (look > beat && since >= 0 && since < guard_ms) {
    *held_ms = guard_ms - since;
    return 1;
  }
  int rc = jobq__sql_run(db, JOBQ_Q_GUARD_SET, SQL_ARGS(V_INT(now)));
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_RENEW_ALL, SQL_ARGS());
  if (rc != JOBQ_OK) return rc;
  *held_ms = guard_ms;
  return 1;
}

/* This worker's share of reaping: sessions whose lease expired on the
 * database clock are ended as lost, but own (the reaper's own session,
 * NULL when none), which its heartbeat renews instead.  The stall guard
 * comes first (above): when no session at all heartbeated for guard_ms
 * (-1: the longest lease of any session), the database itself may have
 * stalled, and reaping is held back for a lease: *held_ms (may be NULL)
 * gets how long, 0 when it was not.  *count (may be NULL) gets how many
 * sessions were ended. */
static int jobq__reap(jobq *db, const char *own, int64_t guard_ms, int64_t *count,
                      int64_t *held_ms, int64_t *live) {
  if (count != NULL) *count = 0;
  int64_t hold = 0;
  int by_hand = guard_ms < 0; /* jobq_reap() */
  int got = stall_guard(db, guard_ms, &hold, live);
  if (held_ms != NULL) *held_ms = hold;
  if (got != 0) return got < 0 ? got : JOBQ_OK;
  jobq_rows *r;
  int64_t *ids = NULL;
  size_t n = 0;
  /* Session ids are 32 hex characters: read them as text. */
  int rc = jobq__sql_query(db, JOBQ_Q_EXPIRED, &r,
                           SQL_ARGS(V_INT(REAP_BATCH), V_TEXT(own != NULL ? own : "")));
  if (rc != JOBQ_OK) return rc;
  char sid[REAP_BATCH][JOBQ_SESSION_ID_LEN + 1];
  size_t ns = 0;
  while (ns < REAP_BATCH && (got = jobq__rows_next(db, r)) == 1) {
    size_t len;
    const char *t = db->store->col_bytes(r, 0, &len);
    snprintf(sid[ns++], sizeof sid[0], "%.*s", (int)len, t);
  }
  jobq__rows_done(db, r);
  if (got < 0) return got;
  for (size_t i = 0; i < ns && rc == JOBQ_OK; i++) rc = jobq__end_session(db, sid[i], 1);
  if (rc == JOBQ_OK && count != NULL) *count = (int64_t)ns;
  /* Running jobs with no session row at all are lost as well. */
  int64_t now = jobq__mono_ms();
  if (rc == JOBQ_OK && (by_hand || db->orphans_swept_ms == 0 ||
                        now - db->orphans_swept_ms >= ORPHANS_EVERY_MS)) {
    rc = jobq__sql_ids(db, JOBQ_Q_ORPHANS, REAP_BATCH, &ids, &n, SQL_ARGS(V_INT(REAP_BATCH)));
    /* A full batch leaves more for the next look, at once. */
    if (rc == JOBQ_OK) db->orphans_swept_ms = n == REAP_BATCH ? 0 : now;
  }
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    rc = jobq__sql_run(db, JOBQ_Q_REQUEUE_LOST,
                       SQL_ARGS(V_INT(ids[i]), V_TEXT("the job's session vanished"), V_INT(0)));
  free(ids);
  return rc;
}

int jobq_reap_held(jobq *db, int64_t *count, int64_t *held_ms) {
  if (count != NULL) *count = 0;
  if (held_ms != NULL) *held_ms = 0;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    /* The guard is the longest lease of any session. */
    rc = jobq__txn_end(db, jobq__reap(db, NULL, -1, count, held_ms, NULL));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

int jobq_reap(jobq *db, int64_t *count) { return jobq_reap_held(db, count, NULL); }
