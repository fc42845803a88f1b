/*
 * put.c - enqueueing: one job or many in one transaction, all or none,
 * validated before any SQL runs.  A job with a unique key that an
 * unfinished job of its queue already holds is not written; the caller
 * gets that job's id.  A job that must wait for its ordering key or a
 * barrier goes in as `waiting` (lib/order.c); one put after jobs not yet
 * done is made `pending` once it is in (lib/after.c).  Jobs without a
 * barrier, one or many, keyed or not, go in by set statements: one round
 * trip on PostgreSQL (two with unique keys, which are looked up first),
 * where the general way takes three for one job; one statement on SQLite
 * and one for up to 64 jobs on MariaDB, after a read of the batch's queues
 * and keys, where the general way takes three or four a job.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void jobq_put_opts_init(jobq_put_opts *o) {
  memset(o, 0, sizeof *o);
  o->queue = JOBQ_DEFAULT_QUEUE;
  o->max_attempts = JOBQ_DEFAULT_MAX_ATTEMPTS;
  o->backoff_ms = JOBQ_DEFAULT_BACKOFF_MS;
}

static int unique_find(jobq *db, const jobq_put_opts *o, int64_t *id) {
  return jobq__sql_int(db, JOBQ_Q_UNIQUE_FIND, 0, id,
                       SQL_ARGS(V_TEXT(o->queue), V_TEXT(o->unique_key)));
}

/* What one put transaction knows of the queue it last put into: its row
 * is there and locked for puts, and whether it has a barrier (-1: not
 * known yet).  A batch of jobs for one queue then costs one statement a
 * job. */
typedef struct queue_seen {
  const char *name;
  int barrier;
} queue_seen;

static const char *queue_of(const jobq_put_opts *o) {
  return o->queue != NULL ? o->queue : JOBQ_DEFAULT_QUEUE;
}

/* The ordering keys (queue and key) of which a put transaction has put
 * a job: a later job of one of them waits behind that one, and the key's
 * lock is held already, so that it costs its INSERT alone.  An
 * open-addressing table of opts indexes + 1 (0: empty), twice the batch's
 * size rounded up to a power of 2. */
typedef struct keys_put {
  size_t *slot;
  size_t mask;
} keys_put;

static size_t *key_slot(const keys_put *k, const jobq_put_opts *opts, const char *queue,
                        const char *key) {
  uint64_t h = 14695981039346656037u; /* FNV-1a over queue, a NUL, key */
  for (const char *p = queue;; p++) {
    h = (h ^ (unsigned char)*p) * 1099511628211u;
    if (*p == '\0') break;
  }
  for (const char *p = key; *p != '\0'; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
  for (size_t i = (size_t)h & k->mask;; i = (i + 1) & k->mask) {
    size_t at = k->slot[i];
    if (at == 0) return &k->slot[i];
    const jobq_put_opts *o = &opts[at - 1];
    if (strcmp(o->key, key) == 0 && strcmp(queue_of(o), queue) == 0)
      return &k->slot[i];
  }
}

static int queue_key_cmp(const void *a, const void *b) {
  const jobq_put_opts *x = *(const jobq_put_opts *const *)a;
  const jobq_put_opts *y = *(const jobq_put_opts *const *)b;
  return jobq__lock_cmp(queue_of(x), x->key, queue_of(y), y->key);
}

/* The keys of the jobs by[from..to) of one queue, sorted by key, each
 * once, into keys[0..*nkeys); first[k]: the earliest of keys[k]'s jobs in
 * the batch. */
static void queue_keys(const jobq_put_opts **by, size_t from, size_t to, const char **keys,
                       const jobq_put_opts **first, size_t *nkeys) {
  size_t k = 0;
  for (size_t i = from; i < to; i++) {
    if (by[i]->key == NULL) continue;
    if (k > 0 && strcmp(keys[k - 1], by[i]->key) == 0) {
      if (by[i] < first[k - 1]) first[k - 1] = by[i];
      continue;
    }
    keys[k] = by[i]->key;
    first[k++] = by[i];
  }
  *nkeys = k;
}

/* Makes sure of the n jobs' queues and takes their named locks (lib/order.c)
 * before anything is decided: each queue's (exclusive where the batch puts
 * a barrier), then each key's, each once, in jobq__lock_cmp().  Taken
 * as each job came, two batches of the same keys in other orders
 * deadlocked, again on every retry. */
static int lock_all(jobq *db, const jobq_put_opts *opts, size_t n) {
  const jobq_put_opts **by = malloc((n ? n : 1) * sizeof *by);
  const jobq_put_opts **first = malloc((n ? n : 1) * sizeof *first);
  const char **keys = malloc((n ? n : 1) * sizeof *keys);
  int rc = by == NULL || first == NULL || keys == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) by[i] = &opts[i];
  /* A batch is mostly of one queue, and often already in this order:
   * one pass finds out, where sorting it took 3 % of a put's work. */
  int sorted = 1;
  for (size_t i = 1; i < n && rc == JOBQ_OK && sorted; i++)
    sorted = queue_key_cmp(&by[i - 1], &by[i]) <= 0;
  if (rc == JOBQ_OK && !sorted) qsort(by, n, sizeof *by, queue_key_cmp);
  for (size_t i = 0, end; i < n && rc == JOBQ_OK; i = end) {
    jobq_jobref qref = {0, queue_of(by[i]), NULL, 0, 0};
    for (end = i; end < n && strcmp(queue_of(by[end]), qref.queue) == 0; end++)
      qref.barrier = qref.barrier || by[end]->barrier;
    rc = jobq__sql_defer(db, JOBQ_Q_QUEUE_ENSURE, SQL_ARGS(V_TEXT(qref.queue)));
    if (rc == JOBQ_OK) rc = jobq__lock_job(db, &qref, 0);
  }
  for (size_t i = 0, end; i < n && rc == JOBQ_OK; i = end) {
    const char *queue = queue_of(by[i]);
    for (end = i; end < n && strcmp(queue_of(by[end]), queue) == 0; end++) continue;
    size_t nkeys;
    queue_keys(by, i, end, keys, first, &nkeys);
    rc = jobq__lock_keys(db, queue, keys, nkeys);
  }
  free(by);
  free(first);
  free(keys);
  return rc;
}

/* One job into queue_seen *q's transaction, its locks taken (lock_all).
 * key_put: a job of its key went in earlier in the transaction.  now_id:
 * *id is needed before the commit (lib/after.c). */
static int put_one(jobq *db, const jobq_put_opts *o, queue_seen *q, int key_put, int now_id,
                   int64_t *id, int *existed) {
  *existed = 0;
  int rc;
  if (o->unique_key != NULL) {
    int64_t found;
    if ((rc = unique_find(db, o, &found)) != JOBQ_OK) return rc;
    if (found != 0) {
      *id = found;
      *existed = 1;
      return JOBQ_OK;
    }
  }
  jobq_jobref ref = {0, o->queue, o->key, o->barrier != 0, 0};
  if (q->name == NULL || strcmp(q->name, o->queue) != 0 || o->barrier)
    *q = (queue_seen){o->queue, -1};
  int wait = 1;
  if (!key_put) {
    if (!o->barrier && q->barrier < 0 &&
        (rc = jobq__barrier_pending(db, o->queue, &q->barrier)) != JOBQ_OK)
      return rc;
    if ((rc = jobq__must_wait(db, &ref, o->barrier ? -1 : q->barrier, &wait)) != JOBQ_OK)
      return rc;
  }
  const jobq_val row[] = {V_TEXT(o->queue), V_INT(o->priority), V_INT(o->run_at_ms),
                          V_INT(o->delay_ms), V_TEXT(wait ? "waiting" : "ready"),
                          V_TEXT(o->key), V_INT(o->barrier ? 1 : 0), V_TEXT(o->unique_key),
                          V_BYTES(o->payload, o->payload_len), V_INT(o->max_attempts),
                          V_INT(o->timeout_ms), V_INT(o->backoff_ms),
                          V_INT(jobq__part_hash(db, o->key))};
  const size_t nrow = sizeof row / sizeof row[0];
  int inserted = 1;
  /* Without a unique key the row always goes in: where the INSERT
   * returns its id, the id may come later (with the commit). */
  if (o->unique_key == NULL && !now_id && jobq__sql_returns(db->store->dialect, JOBQ_Q_INSERT_JOB))
    rc = db->store->query(db, JOBQ_Q_INSERT_JOB, row, nrow, NULL,
                          &(const jobq_how){.defer = 1, .adds = 1, .ids = id, .nids = 1});
  else
    rc = jobq__sql_insert(db, JOBQ_Q_INSERT_JOB, id, &inserted, row, nrow);
  if (rc != JOBQ_OK) return rc;
  if (inserted) {
    /* The queue has a barrier from now on. */
    if (o->barrier) q->barrier = 1;
    /* Delayed too: an idle worker then knows when to look (jobq_next_due). */
    if (!wait && o->run_at_ms == 0 && o->delay_ms == 0) jobq__wake(db, o->queue);
    else if (!wait) jobq__wake_later(db, o->queue);
    return JOBQ_OK;
  }
  /* Another transaction took the unique key since we looked, and
   * committed: that job is the one. */
  if ((rc = unique_find(db, o, id)) != JOBQ_OK) return rc;
  *existed = 1;
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- sets of jobs */

/* PUT_ROWS's rows on a dialect whose INSERT does not return the new ids:
 * they are consecutive, db->id_step apart, from the first of each
 * statement's (insert_id). */
typedef struct rows_put {
  int64_t *ids;
} rows_put;

static int rows_put_ids(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  rows_put *p = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) continue;
  if (got < 0) return got;
  int64_t id = db->store->insert_id(db);
  for (size_t i = 0; i < n; i++) p->ids[first + i] = id + (int64_t)i * db->id_step;
  return JOBQ_OK;
}

/* PUT_WAITS's rows: for each queue's place, whether it has a barrier
 * (flags bit 1) and whether its keys order (bit 2), and its parts. */
typedef struct queue_waits {
  int *flags;
  int64_t *parts;
} queue_waits;

static int queues_waits(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  queue_waits *w = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    int64_t place = jobq__col_int(db, r, 0);
    w->flags[place] =
        (jobq__col_int(db, r, 1) != 0 ? 1 : 0) | (jobq__col_int(db, r, 2) != 0 ? 2 : 0);
    w->parts[place] = jobq__col_int(db, r, 3);
  }
  return got < 0 ? got : JOBQ_OK;
}

/* PUT_WAITS_KEYS's rows: the places of the keys that are held. */
static int keys_held(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  int *held = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) held[jobq__col_int(db, r, 0)] = 1;
  return got < 0 ? got : JOBQ_OK;
}

static int lock_find(const void *k, const void *e) {
  const jobq_lock *a = k, *b = e;
  return jobq__lock_cmp(a->queue, a->key, b->queue, b->key);
}

/*
 * Where the INSERT does not look itself (MariaDB/MySQL, SQLite), which of the jobs
 * o[0..n) wait, into the column wait (after[i] before: an earlier job of
 * the batch has job i's key): a job waits behind its queue's barrier, or
 * behind its key, held by an unfinished job, a blocked key or an earlier
 * job of the batch, where keys order.  Read once for each queue
 * (locks[0..nq), in order) and for each key (locks[nq..nl)), not for each
 * job: a batch of a thousand jobs of one queue is one short read.  The
 * read gives each queue's parts too, into the column parts (for the INSERT,
 * which need not look them up again for each row): the keyless
 * jobs of a queue in parts get hashes in runs in the column hash, each
 * moved on by its run's offset (jobq__part_run) from its place among the
 * queue's keyless jobs (place[i] is job i's queue, run[i] its place and
 * count[i] their number).
 */
static int put_waits(jobq *db, const jobq_put_opts *o, size_t n, const jobq_lock *locks,
                     size_t nq, size_t nl, const size_t *place, const jobq_val *run,
                     const jobq_val *count, jobq_val *wait, jobq_val *hash, jobq_val *nparts) {
  size_t nk = nl - nq;
  int *flags = calloc(nl, sizeof *flags);
  int64_t *parts = calloc(nq, sizeof *parts);
  jobq_val *v = malloc(2 * nq * sizeof *v + 3 * nk * sizeof *v);
  int rc = flags == NULL || parts == NULL || v == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  queue_waits w = {flags, parts};
  for (size_t i = 0; i < nq && rc == JOBQ_OK; i++) {
    v[i] = V_TEXT(locks[i].queue);
    v[nq + i] = V_INT((int64_t)i);
  }
  if (rc == JOBQ_OK)
    rc = jobq__sql_set(db, JOBQ_Q_PUT_WAITS, SQL_ARGS(V_COL('t', v, nq), V_COL('i', v + nq, nq)),
                       0, NULL, queues_waits, &w, NULL);
  jobq_val *k = v + 2 * nq;
  for (size_t i = 0; i < nk && rc == JOBQ_OK; i++) {
    k[i] = V_TEXT(locks[nq + i].queue);
    k[nk + i] = V_TEXT(locks[nq + i].key);
    k[2 * nk + i] = V_INT((int64_t)i);
  }
  if (rc == JOBQ_OK && nk > 0)
    rc = jobq__sql_set(db, JOBQ_Q_PUT_WAITS_KEYS,
                       SQL_ARGS(V_COL('t', k, nk), V_COL('t', k + nk, nk),
                                V_COL('i', k + 2 * nk, nk)),
                       0, NULL, keys_held, flags + nq, NULL);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    int f = flags[place[i]], waits = f & 1;
    if (!waits && o[i].key != NULL && (f & 2)) {
      jobq_lock want = {'q', 0, queue_of(&o[i]), o[i].key};
      const jobq_lock *key = bsearch(&want, locks + nq, nk, sizeof *locks, lock_find);
      waits = wait[i].i != 0 || flags[key - locks] != 0;
    }
    wait[i] = V_INT(waits);
    nparts[i] = V_INT(parts[place[i]]);
    hash[i].i += jobq__part_run(parts[place[i]], run[i].i, count[i].i);
  }
  free(flags);
  free(parts);
  free(v);
  return rc;
}

/*
 * The jobs o[0..n), none with a barrier (nor a unique key that a job
 * holds: put_unique_rows()), in a few set
 * statements however many they are: their queues made sure of, the
 * queues' shared locks and the keys' locks taken (queues first, each
 * once, in jobq__lock_cmp() order), then the INSERT, which decides for
 * each job whether it waits, from the barriers and keys it sees under
 * those locks and from after[i], set here when an earlier job of the
 * batch has job i's key (keys: the batch's key table); or a read
 * (PUT_WAITS) decides it before, where the INSERT cannot.  On PostgreSQL
 * all of it goes with the commit, the ids read back with it: a put is
 * one round trip; with now_ids, the ids are read at once (jobs put after
 * others, lib/after.c, need them before the commit).  Each keyless job's
 * place among its queue's keyless jobs of the batch, and their number,
 * lay them in runs over the queue's parts (PUT_WAITS, or PostgreSQL's
 * INSERT); the batch's queue, when it has only one, lets PostgreSQL read
 * that queue's parts once, not for each job.
 */
static int put_rows(jobq *db, const jobq_put_opts *o, size_t n, int64_t *ids,
                    const keys_put *keys, int now_ids) {
  enum { COLS = 15 };
  jobq_val *v = malloc(COLS * n * sizeof *v);
  jobq_lock *locks = malloc(2 * n * sizeof *locks);
  size_t *place = malloc(n * sizeof *place);
  if (v == NULL || locks == NULL || place == NULL) {
    free(v);
    free(locks);
    free(place);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  int keyed = 0, unique = 0;
  size_t nl = 0, keyless = 0;
  /* The keyless jobs' hash: where they start in the handle's round, made
   * runs by put_waits() or the INSERT. */
  for (size_t i = 0; i < n; i++) keyless += o[i].key == NULL;
  const int64_t start = keyless > 0 ? jobq__part_round(db, keyless) : 0;
  for (size_t i = 0; i < n; i++) {
    const char *queue = queue_of(&o[i]);
    locks[nl++] = (jobq_lock){'q', 0, queue, NULL};
    if (o[i].key != NULL) locks[nl++] = (jobq_lock){'k', 1, queue, o[i].key};
    int after = 0;
    if (o[i].key != NULL && keys->slot != NULL) {
      size_t *slot = key_slot(keys, o, queue, o[i].key);
      after = *slot != 0;
      if (!after) *slot = i + 1;
    }
    keyed = keyed || o[i].key != NULL;
    unique = unique || o[i].unique_key != NULL;
    v[i] = V_TEXT(queue);
    v[n + i] = V_INT(o[i].priority);
    v[2 * n + i] = V_INT(o[i].run_at_ms);
    v[3 * n + i] = V_INT(o[i].delay_ms);
    v[4 * n + i] = V_BYTES(o[i].payload, o[i].payload_len);
    v[5 * n + i] = V_INT(o[i].max_attempts);
    v[6 * n + i] = V_INT(o[i].timeout_ms);
    v[7 * n + i] = V_INT(o[i].backoff_ms);
    v[8 * n + i] = V_TEXT(o[i].unique_key);
    v[9 * n + i] = V_TEXT(o[i].key);
    v[10 * n + i] = V_INT(after);
    v[11 * n + i] = V_INT(0);
    v[12 * n + i] = o[i].key != NULL ? V_INT(jobq__part_hash(db, o[i].key)) : V_INT(start);
    v[13 * n + i] = V_INT(1);
    v[14 * n + i] = V_NULL;
  }
  /* The queues once each: the server need not sort a thousand names.
   * The locks' list has them, in order, once made distinct. */
  nl = jobq__locks_sort(locks, nl);
  size_t q = 0;
  jobq_val *queues = malloc(nl * sizeof *queues);
  int rc = queues == NULL ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  for (size_t i = 0; i < nl && rc == JOBQ_OK; i++)
    if (locks[i].kind == 'q') queues[q++] = V_TEXT(locks[i].queue);
  /* Each job's queue among them (place); each keyless job's place among
   * its queue's keyless jobs (column 12), then their number (14); a keyed
   * job keeps 0 and 1, which leave its hash as it is. */
  size_t *keyless_of = rc == JOBQ_OK ? calloc(q ? q : 1, sizeof *keyless_of) : NULL;
  if (rc == JOBQ_OK && keyless_of == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const jobq_lock want = {'q', 0, queue_of(&o[i]), NULL};
    const jobq_lock *at = bsearch(&want, locks, q, sizeof *locks, lock_find);
    place[i] = (size_t)(at - locks);
    if (o[i].key == NULL) v[11 * n + i] = V_INT((int64_t)keyless_of[place[i]]++);
  }
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    if (o[i].key == NULL) v[13 * n + i] = V_INT((int64_t)keyless_of[place[i]]);
  free(keyless_of);
  static const jobq_how defer = {.defer = 1};
  if (rc == JOBQ_OK)
    rc = jobq__sql_set(db, JOBQ_Q_QUEUES_ENSURE, SQL_ARGS(V_COL('t', queues, q)), 0, &defer,
                       NULL, NULL, NULL);
  if (rc == JOBQ_OK) rc = db->store->lock(db, locks, nl);
  const int returns = jobq__sql_returns(db->store->dialect, JOBQ_Q_PUT_ROWS);
  const jobq_how how = {.defer = !now_ids, .adds = 1, .ids = returns ? ids : NULL, .nids = n};
  rows_put p = {ids};
  /* The columns, then the batch's one queue (?15), then the parts read. */
  jobq_val args[COLS + 1] = {V_COL('t', v, n),          V_COL('i', v + n, n),
                             V_COL('i', v + 2 * n, n),  V_COL('i', v + 3 * n, n),
                             V_COL('b', v + 4 * n, n),  V_COL('i', v + 5 * n, n),
                             V_COL('i', v + 6 * n, n),  V_COL('i', v + 7 * n, n),
                             V_COL('t', v + 8 * n, n),  V_COL('t', v + 9 * n, n),
                             V_COL('i', v + 10 * n, n), V_COL('i', v + 11 * n, n),
                             V_COL('i', v + 12 * n, n), V_COL('i', v + 13 * n, n),
                             q == 1 ? queues[0] : V_NULL, V_COL('i', v + 14 * n, n)};
  /* Where the INSERT does not look itself (PUT_WAITS), reads first;
   * where it does, a column no job of the batch uses goes as NULL, an
   * array the server need not read (unnest() pads it with NULLs). */
  const int waits = !jobq__sql_none(db->store->dialect, JOBQ_Q_PUT_WAITS);
  if (rc == JOBQ_OK && waits)
    rc = put_waits(db, o, n, locks, q, nl, place, v + 11 * n, v + 13 * n, v + 10 * n,
                   v + 12 * n, v + 14 * n);
  if (!waits && !unique) args[8] = V_NULL;
  if (!waits && !keyed) args[9] = args[10] = V_NULL;
  if (rc == JOBQ_OK) rc = jobq__failpoint(db, "put.before-insert");
  if (rc == JOBQ_OK)
    rc = jobq__sql_set(db, keyed ? JOBQ_Q_PUT_KEYED_ROWS : JOBQ_Q_PUT_ROWS, args, COLS + 1,
                       returns || db->id_step != 0 ? 0 : 1, &how, returns ? NULL : rows_put_ids,
                       &p, NULL);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    if (o[i].run_at_ms == 0 && o[i].delay_ms == 0) jobq__wake(db, queue_of(&o[i]));
    else jobq__wake_later(db, queue_of(&o[i]));
  free(queues);
  free(locks);
  free(place);
  free(v);
  return rc;
}

/* UNIQUES_FIND's rows: the id of the job that holds each place's key. */
static int uniques_found(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  int64_t *found = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1)
    found[jobq__col_int(db, r, 0)] = jobq__col_int(db, r, 1);
  return got < 0 ? got : JOBQ_OK;
}

static int unique_cmp(const void *a, const void *b) {
  const jobq_put_opts *x = *(const jobq_put_opts *const *)a;
  const jobq_put_opts *y = *(const jobq_put_opts *const *)b;
  int c = strcmp(queue_of(x), queue_of(y));
  if (c == 0) c = strcmp(x->unique_key, y->unique_key);
  return c != 0 ? c : (x > y) - (x < y);
}

/* What put_unique_rows() decided, finished by uniques_done() once the
 * transaction committed (on PostgreSQL the ids come with the commit). */
typedef struct uniques {
  size_t *holder;    /* by place: the batch's first job of its unique key */
  int64_t *found;    /* by place: the id of the job that held the key */
  size_t *at;        /* the places of the jobs put, in[0..m) */
  int64_t *in_ids;   /* their ids */
  size_t m;
} uniques;

static void uniques_release(uniques *u) {
  free(u->holder);
  free(u->found);
  free(u->at);
  free(u->in_ids);
  memset(u, 0, sizeof *u);
}

/*
 * put_rows() for jobs some of which have unique keys: each key's first
 * job in the batch goes in unless an unfinished job holds the key (one
 * read, UNIQUES_FIND), and the batch's later jobs of the key and the
 * jobs of keys held get the holder's id, are told they existed, and take
 * no turn of their ordering keys.  A key taken by another transaction
 * between the read and the INSERT fails the INSERT: put() then puts the
 * batch the general way, which expects it.  u is filled for uniques_done().
 */
static int put_unique_rows(jobq *db, const jobq_put_opts *o, size_t n, const keys_put *keys,
                           uniques *u) {
  const jobq_put_opts **by = malloc(n * sizeof *by);
  jobq_val *v = malloc(3 * n * sizeof *v);
  jobq_put_opts *in = malloc(n * sizeof *in);
  u->holder = malloc(n * sizeof *u->holder);
  u->found = calloc(n, sizeof *u->found);
  u->at = malloc(n * sizeof *u->at);
  u->in_ids = malloc(n * sizeof *u->in_ids);
  u->m = 0;
  int rc = by == NULL || v == NULL || in == NULL || u->holder == NULL || u->found == NULL ||
                   u->at == NULL || u->in_ids == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  size_t nu = 0, nq = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    u->holder[i] = i;
    if (o[i].unique_key != NULL) by[nu++] = &o[i];
  }
  if (rc == JOBQ_OK) qsort(by, nu, sizeof *by, unique_cmp);
  /* The first of each key asks; the later ones follow it. */
  for (size_t i = 0; i < nu && rc == JOBQ_OK; i++) {
    size_t place = (size_t)(by[i] - o);
    if (i > 0 && strcmp(queue_of(by[i - 1]), queue_of(by[i])) == 0 &&
        strcmp(by[i - 1]->unique_key, by[i]->unique_key) == 0) {
      u->holder[place] = u->holder[by[i - 1] - o];
      continue;
    }
    v[nq] = V_TEXT(queue_of(by[i]));
    v[n + nq] = V_TEXT(by[i]->unique_key);
    v[2 * n + nq] = V_INT((int64_t)place);
    nq++;
  }
  if (rc == JOBQ_OK && nq > 0) {
    const jobq_val args[] = {V_COL('t', v, nq), V_COL('t', v + n, nq),
                             V_COL('i', v + 2 * n, nq)};
    rc = jobq__sql_set(db, JOBQ_Q_UNIQUES_FIND, args, 3, 0, NULL, uniques_found, u->found,
                       NULL);
  }
  if (rc == JOBQ_OK) rc = jobq__failpoint(db, "put.uniques-found");
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    if (u->holder[i] != i || u->found[i] != 0) continue;
    in[u->m] = o[i];
    u->at[u->m++] = i;
  }
  if (rc == JOBQ_OK && u->m > 0) rc = put_rows(db, in, u->m, u->in_ids, keys, 0);
  free(by);
  free(v);
  free(in);
  return rc;
}

/* Every job's id and whether it existed, from what put_unique_rows()
 * decided, after the commit. */
static void uniques_done(const uniques *u, size_t n, int64_t *ids, unsigned char *existed) {
  for (size_t k = 0; k < u->m; k++) ids[u->at[k]] = u->in_ids[k];
  for (size_t i = 0; i < n; i++) {
    size_t h = u->holder[i];
    if (u->found[h] != 0)
      ids[i] = u->found[h];
    else if (h != i)
      ids[i] = ids[h];
    if (existed != NULL) existed[i] = h != i || u->found[h] != 0;
  }
}

/* Whether put_rows() (put_unique_rows() with a unique key) takes o. */
static int plain(const jobq_put_opts *o) { return !o->barrier; }

/* index_names: prefix messages with "job N: " (jobq_put_many). */
static int put(jobq *db, const jobq_put_opts *opts, size_t n, int64_t *ids,
               unsigned char *existed, int index_names) {
  int rc = jobq__usable(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_PRODUCER);
  if (opts == NULL || ids == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid arguments: opts and ids are required");
  int all_plain = 1, keyed = 0, unique = 0, named = 0;
  for (size_t i = 0; i < n; i++) {
    rc = jobq__check_put(db, &opts[i], index_names ? (long)i : -1);
    if (rc != JOBQ_OK) return rc;
    all_plain = all_plain && plain(&opts[i]);
    named = named || jobq__after_has(&opts[i]);
    keyed = keyed || opts[i].key != NULL;
    unique = unique || opts[i].unique_key != NULL;
  }
  if (existed != NULL) memset(existed, 0, n);
  /* With dependencies: which jobs of the batch were there already. */
  unsigned char *there = named ? calloc(n, 1) : NULL;
  if (named && there == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  keys_put keys = {NULL, 0};
  if (keyed && n > 1) {
    if (n > SIZE_MAX / 4 / sizeof *keys.slot) {
      free(there);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    size_t size = 4;
    while (size < 2 * n) size *= 2;
    if ((keys.slot = malloc(size * sizeof *keys.slot)) == NULL) {
      free(there);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    keys.mask = size - 1;
  }
  int attempt = 0, own = db->txn_depth == 0;
  /* Unique keys by set statements only in a transaction of the
   * library's own, which can run again the general way (below). */
  int rows = all_plain && n > 0 && (!unique || own) && !(named && unique), again;
  uniques u = {NULL, NULL, NULL, NULL, 0};
  int64_t began = jobq__mono_ms();
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    /* On a connection made again: is it still the database it was? */
    rc = jobq__write_check(db);
    if (keys.slot != NULL) memset(keys.slot, 0, (keys.mask + 1) * sizeof *keys.slot);
    /* The parents' rows before the order locks (lib/after.c). */
    jobq_after_put *after = NULL;
    if (rc == JOBQ_OK && named) rc = jobq__after_begin(db, opts, n, index_names, &after);
    if (rc == JOBQ_OK && rows) {
      rc = unique ? put_unique_rows(db, opts, n, &keys, &u)
                  : put_rows(db, opts, n, ids, &keys, named);
      if (rc == JOBQ_OK && after != NULL) rc = jobq__after_put(db, after, opts, n, ids, NULL);
    } else if (rc == JOBQ_OK) {
      queue_seen q = {NULL, -1};
      rc = lock_all(db, opts, n);
      for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
        jobq_put_opts o = opts[i];
        if (o.queue == NULL) o.queue = JOBQ_DEFAULT_QUEUE;
        size_t *slot = o.key != NULL && keys.slot != NULL
                           ? key_slot(&keys, opts, o.queue, o.key)
                           : NULL;
        int ex = 0;
        rc = put_one(db, &o, &q, slot != NULL && *slot != 0, named, &ids[i], &ex);
        if (rc == JOBQ_OK && slot != NULL && *slot == 0 && !ex) *slot = i + 1;
        if (existed != NULL) existed[i] = (unsigned char)ex;
        if (there != NULL) there[i] = (unsigned char)ex;
      }
      if (rc == JOBQ_OK && after != NULL) rc = jobq__after_put(db, after, opts, n, ids, there);
    }
    jobq__after_release(after);
    rc = jobq__txn_end(db, rc);
    if (rc == JOBQ_OK && rows && unique) uniques_done(&u, n, ids, existed);
    uniques_release(&u);
    /* A unique key that another transaction took after put_unique_rows()
     * looked failed its INSERT, and nothing was written. */
    again = rc != JOBQ_OK && rows && unique && !db->retry;
    if (again) rows = 0;
  } while (again || jobq__txn_retry(db, rc, &attempt));
  free(keys.slot);
  free(there);
  /* Only the library's own transaction is known to have committed. */
  if (rc == JOBQ_OK && own) jobq__mark_put(db, opts, ids, existed, n, began);
  return rc;
}

int jobq_put(jobq *db, const jobq_put_opts *opts, int64_t *id, int *existed) {
  unsigned char ex = 0;
  int rc = put(db, opts, 1, id, &ex, 0);
  if (existed != NULL) *existed = ex;
  return rc;
}

int jobq_put_many(jobq *db, const jobq_put_opts *opts, size_t n, int64_t *ids,
                  unsigned char *existed) {
  return put(db, opts, n, ids, existed, 1);
}
