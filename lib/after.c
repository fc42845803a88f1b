/*
 * after.c - dependencies: a job put after others (its parents) stays
 * `pending`, where no claim looks, until every parent is done.
 *
 * Each child keeps the number of its parents not yet done
 * (parents_left), and an edge (parent, child) in jobq_after says whom it
 * waits for; a parent's row has children = 1 once a job was put after
 * it.  The finish of a parent with children (lib/order.c, archived(),
 * and the completions at once of lib/ack.c) counts its pending children
 * down in the same transaction and makes ready those at zero (or
 * waiting for their turn: lib/order.c); a parent that
 * dies or is cancelled cancels its pending children, naming it, and
 * theirs in turn, unless they run on any outcome.  Nothing of this
 * touches the claim, and a finish without children costs nothing.
 *
 * A put and a parent's finish meet at the parent's row: the put marks
 * it (AFTER_MARK, which locks it) before its order locks, as an
 * acknowledgement locks a job's row before its order locks, so neither
 * waits for the other out of order.  Whichever commits second sees the
 * other's work: a finish that waited for the mark finds the child's
 * edge; a put that waited for the finish finds the parent archived.
 *
 * A parent must exist when the put starts (unfinished, or archived and
 * not pruned: a pruned job's outcome is gone); ids of the batch itself
 * are named by place (after_index), each before the job naming it, so
 * the graph never has a cycle.  A parent that is done counts as done; a
 * parent already dead or cancelled cancels the new job at once, as its
 * later death would.  The jobs of a put go in as any others (a batch by
 * set statements), then, before the commit, those that wait are made
 * pending, their edges written with the next round trip.
 *
 * A job with an ordering key, or a barrier, keeps its place by id (put
 * order) while pending: the key's later jobs (a barrier's: the queue's)
 * were put waiting behind it and stay so, as its key's next job is never
 * one behind a pending job (KEY_NEXT); once its parents are done it
 * takes its turn as a job of that place would (jobq__must_wait_after):
 * ready, or waiting for the key's earlier jobs (for a barrier, the
 * queue's).  Every wait is for a job with a smaller id, so none waits in
 * a circle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct jobq_after_put {
  int64_t *ids; /* the parents named by id, ascending, each once */
  int *states;  /* their states (jobq_state) */
  size_t n;
};

int jobq__after_has(const jobq_put_opts *o) {
  return o->n_after > 0 || o->n_after_index > 0;
}

static int id_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* ids[0..n) sorted, each once: how many are left. */
static size_t ids_unique(int64_t *ids, size_t n) {
  qsort(ids, n, sizeof *ids, id_cmp);
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (d == 0 || ids[d - 1] != ids[i]) ids[d++] = ids[i];
  return d;
}

static int state_of(const jobq_after_put *a, int64_t id) {
  const int64_t *hit = a ? bsearch(&id, a->ids, a->n, sizeof id, id_cmp) : NULL;
  return hit ? a->states[hit - a->ids] : 0;
}

static int unfinished(int state) {
  return state == JOBQ_STATE_READY || state == JOBQ_STATE_RUNNING ||
         state == JOBQ_STATE_WAITING || state == JOBQ_STATE_PENDING;
}

/* AFTER_STATES's rows. */
static int states_read(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  jobq_after_put *a = arg;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    int64_t id = jobq__col_int(db, r, 0);
    size_t len;
    const int64_t *hit = bsearch(&id, a->ids, a->n, sizeof id, id_cmp);
    if (hit != NULL)
      a->states[hit - a->ids] = jobq_state_parse(db->store->col_bytes(r, 1, &len));
  }
  return got < 0 ? got : JOBQ_OK;
}

static jobq_val *id_column(const int64_t *ids, size_t n) {
  jobq_val *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; v != NULL && i < n; i++) v[i] = V_INT(ids[i]);
  return v;
}

/* Marks jobs ids[0..n) (ascending) as having children, locking their
 * rows (how: with the next round trip, for rows of the put's own). */
static int mark(jobq *db, const int64_t *ids, size_t n, const jobq_how *how) {
  if (n == 0) return JOBQ_OK;
  jobq_val *v = id_column(ids, n);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int rc = jobq__sql_set(db, JOBQ_Q_AFTER_MARK, SQL_ARGS(V_COL('i', v, n)), 0, how, NULL,
                         NULL, NULL);
  free(v);
  return rc;
}

int jobq__after_begin(jobq *db, const jobq_put_opts *opts, size_t n, int index_names,
                      jobq_after_put **out) {
  *out = NULL;
  size_t total = 0, any = 0;
  for (size_t i = 0; i < n; i++) {
    total += opts[i].n_after;
    any += jobq__after_has(&opts[i]);
  }
  if (any == 0) return JOBQ_OK;
  jobq_after_put *a = calloc(1, sizeof *a);
  if (a != NULL) {
    a->ids = malloc((total ? total : 1) * sizeof *a->ids);
    a->states = calloc(total ? total : 1, sizeof *a->states);
  }
  if (a == NULL || a->ids == NULL || a->states == NULL) {
    jobq__after_release(a);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < opts[i].n_after; k++) a->ids[a->n++] = opts[i].after[k];
  a->n = ids_unique(a->ids, a->n);
  int rc = mark(db, a->ids, a->n, NULL);
  jobq_val *v = rc == JOBQ_OK ? id_column(a->ids, a->n) : NULL;
  if (rc == JOBQ_OK && v == NULL) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (rc == JOBQ_OK && a->n > 0)
    rc = jobq__sql_set(db, JOBQ_Q_AFTER_STATES, SQL_ARGS(V_COL('i', v, a->n)), 0, NULL,
                       states_read, a, NULL);
  free(v);
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
    for (size_t k = 0; k < opts[i].n_after && rc == JOBQ_OK; k++) {
      if (state_of(a, opts[i].after[k]) != 0) continue;
      char p[32] = "";
      if (index_names) snprintf(p, sizeof p, "job %zu: ", i);
      rc = jobq__fail(db, JOBQ_EINVAL,
                      "%sunknown job %lld in after: expected the id of a job put before "
                      "(never put, or pruned)",
                      p, (long long)opts[i].after[k]);
    }
  if (rc != JOBQ_OK) {
    jobq__after_release(a);
    return rc;
  }
  *out = a;
  return JOBQ_OK;
}

void jobq__after_release(jobq_after_put *a) {
  if (a == NULL) return;
  free(a->ids);
  free(a->states);
  free(a);
}

/* The reason a child is cancelled for its parent. */
static void reason(char *buf, size_t len, int64_t parent, int state) {
  snprintf(buf, len, "job %lld that it was put after %s", (long long)parent,
           state == JOBQ_STATE_DEAD ? "is dead" : "was cancelled");
}

/* Cancels pending job ref (its order locks taken here) for parent. */
static int cancel_child(jobq *db, const jobq_jobref *ref, int64_t parent, int parent_state) {
  char why[96];
  reason(why, sizeof why, parent, parent_state);
  int rc = jobq__lock_job(db, ref, 1);
  if (rc == JOBQ_OK)
    rc = jobq__archive(db, ref, JOBQ_STATE_PENDING, JOBQ_STATE_CANCELLED, NULL, 0, why,
                       strlen(why));
  return rc;
}

/* What one job of a put waits for (parents_of). */
typedef struct waits {
  size_t left;       /* parents not finished */
  int64_t failed;    /* the first that died or was cancelled (0: none) */
  int failed_state;  /* its outcome */
} waits;

/* Job i's parent id, state st (its batch's jobs: 0, or CANCELLED when the
 * put cancelled it), counted into *w. */
static void parent_counts(const jobq_put_opts *o, int64_t id, int st, waits *w) {
  if (st == 0 || unfinished(st)) {
    w->left++;
  } else if (st != JOBQ_STATE_DONE && !o->after_any_outcome && w->failed == 0) {
    w->failed = id;
    w->failed_state = st;
  }
}

/* Job i's parents, each once, onto edges (parent, child, any outcome:
 * three columns of cap rows from *ne on), and what it waits for.  A
 * parent of the batch (after_index) is unfinished (new, or an unfinished
 * job of its unique key) unless the put cancelled it (gone[place]). */
static void parents_of(const jobq_after_put *a, const jobq_put_opts *opts, size_t i,
                       const int64_t *ids, const unsigned char *gone, jobq_val *edges,
                       size_t cap, size_t *ne, waits *w) {
  const jobq_put_opts *o = &opts[i];
  *w = (waits){0, 0, 0};
  size_t first = *ne;
  for (size_t k = 0; k < o->n_after + o->n_after_index; k++) {
    int batch = k >= o->n_after;
    size_t at = batch ? o->after_index[k - o->n_after] : 0;
    int64_t id = batch ? ids[at] : o->after[k];
    int seen = 0;
    for (size_t e = first; e < *ne && !seen; e++) seen = edges[e].i == id;
    if (seen) continue;
    edges[*ne] = V_INT(id);
    edges[cap + *ne] = V_INT(ids[i]);
    edges[2 * cap + *ne] = V_INT(o->after_any_outcome ? 1 : 0);
    (*ne)++;
    parent_counts(o, id, batch ? (gone[at] ? JOBQ_STATE_CANCELLED : 0) : state_of(a, id), w);
  }
}

int jobq__after_put(jobq *db, jobq_after_put *a, const jobq_put_opts *opts, size_t n,
                    const int64_t *ids, const unsigned char *existed) {
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) cap += opts[i].n_after + opts[i].n_after_index;
  jobq_val *edges = malloc((3 * cap + 1) * sizeof *edges);
  jobq_val *wait = malloc((2 * n + 1) * sizeof *wait);
  int64_t *batch = malloc((cap + 1) * sizeof *batch);
  unsigned char *gone = calloc(n ? n : 1, 1);
  int rc = edges == NULL || wait == NULL || batch == NULL || gone == NULL
               ? jobq__fail(db, JOBQ_ENOMEM, "out of memory")
               : JOBQ_OK;
  /* Nothing is read back: on PostgreSQL these go with the next round
   * trip. */
  static const jobq_how later = {.defer = 1};
  size_t ne = 0, nb = 0, nw = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const jobq_put_opts *o = &opts[i];
    if (!jobq__after_has(o) || (existed != NULL && existed[i])) continue;
    for (size_t k = 0; k < o->n_after_index; k++) batch[nb++] = ids[o->after_index[k]];
    waits w;
    parents_of(a, opts, i, ids, gone, edges, cap, &ne, &w);
    /* In order: a job of the batch cancelled here cancels those put after
     * it by place. */
    if (w.failed != 0) {
      jobq_jobref ref = {ids[i], o->queue ? o->queue : JOBQ_DEFAULT_QUEUE, o->key,
                         o->barrier, 0};
      rc = cancel_child(db, &ref, w.failed, w.failed_state);
      gone[i] = 1;
    } else if (w.left > 0) {
      wait[nw] = V_INT(ids[i]);
      wait[n + nw++] = V_INT((int64_t)w.left);
    }
  }
  if (rc == JOBQ_OK && nw > 0)
    rc = jobq__sql_set(db, JOBQ_Q_AFTER_PENDING,
                       SQL_ARGS(V_COL('i', wait, nw), V_COL('i', wait + n, nw)), 0, &later,
                       NULL, NULL, NULL);
  if (rc == JOBQ_OK && ne > 0)
    rc = jobq__sql_set(db, JOBQ_Q_AFTER_EDGES,
                       SQL_ARGS(V_COL('i', edges, ne), V_COL('i', edges + cap, ne),
                                V_COL('i', edges + 2 * cap, ne)),
                       0, &later, NULL, NULL, NULL);
  /* The batch's own parents marked (those named by id were at the
   * start). */
  if (rc == JOBQ_OK) rc = mark(db, batch, ids_unique(batch, nb), &later);
  free(edges);
  free(wait);
  free(batch);
  free(gone);
  return rc;
}

/* ---------------------------------------------------------------- finishes */

/* One edge AFTER_CHILDREN found. */
typedef struct edge {
  int64_t parent, child;
  int any_outcome;
  char *queue;
  int64_t left;
  int children;
  char *key; /* the child's ordering key (NULL: none) */
  int barrier;
} edge;

typedef struct edges {
  edge *e;
  size_t n, cap;
} edges;

static int edges_read(jobq *db, jobq_rows *r, size_t first, size_t n, void *arg) {
  (void)first;
  (void)n;
  edges *es = arg;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (es->n == es->cap) {
      size_t cap = es->cap ? 2 * es->cap : 16;
      edge *e = realloc(es->e, cap * sizeof *e);
      if (e == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      es->e = e;
      es->cap = cap;
    }
    edge *e = &es->e[es->n++];
    e->parent = jobq__col_int(db, r, 0);
    e->child = jobq__col_int(db, r, 1);
    e->any_outcome = (int)jobq__col_int(db, r, 2);
    e->queue = jobq__col_text(db, r, 3, &failed);
    e->left = jobq__col_int(db, r, 4);
    e->children = (int)jobq__col_int(db, r, 5);
    e->key = jobq__col_text(db, r, 6, &failed);
    e->barrier = (int)jobq__col_int(db, r, 7);
    if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  return got < 0 ? got : JOBQ_OK;
}

static int edge_cmp(const void *x, const void *y) {
  const edge *a = x, *b = y;
  if (a->child != b->child) return a->child < b->child ? -1 : 1;
  return (a->parent > b->parent) - (a->parent < b->parent);
}

static int outcome_of(const int64_t *parents, const int *outcomes, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (parents[i] == id) return outcomes[i];
  return JOBQ_STATE_DONE;
}

/* What child_turn() knows of the queue of the children it last made
 * ready: its lock is held, and whether it has an unfinished barrier. */
typedef struct queue_look {
  const char *queue;
  int barrier;
} queue_look;

/* Pending child e[0] (its edges e[0..k) to the finished parents): counted
 * down, made ready or waiting at zero, or cancelled. */
static int child_turn(jobq *db, const edge *e, size_t k, const int64_t *parents,
                      const int *outcomes, size_t n, queue_look *q) {
  int64_t dec = 0, failed = 0;
  int failed_state = 0;
  for (size_t i = 0; i < k; i++) {
    int st = outcome_of(parents, outcomes, n, e[i].parent);
    if (st == JOBQ_STATE_DONE || e[i].any_outcome)
      dec++;
    else if (failed == 0)
      failed = e[i].parent, failed_state = st;
  }
  jobq_jobref ref = {e->child, e->queue, e->key, e->barrier, e->children};
  if (failed != 0) {
    /* A cancel of one of its other parents may have cancelled it
     * already, and its own children with it. */
    jobq_jobref now;
    int state = 0;
    int got = jobq__job_ref(db, e->child, &now, &state);
    if (got <= 0) return got;
    int rc = state == JOBQ_STATE_PENDING ? cancel_child(db, &now, failed, failed_state)
                                         : JOBQ_OK;
    jobq__job_ref_release(&now);
    q->queue = NULL; /* its locks may be others now */
    return rc;
  }
  /* Where it goes once no parent is left: its queue's lock, shared, so
   * that no barrier comes or goes while it decides whether one is before
   * it (once a queue); a keyed child's key's lock too, and a barrier's
   * queue lock exclusive, as its put took them.  Decided for every
   * child: what was read of its count may be older than a cascade's
   * count-down in this transaction, which AFTER_SET adds to. */
  int wait = 0, rc = JOBQ_OK;
  if (q->queue == NULL || strcmp(q->queue, e->queue) != 0) {
    *q = (queue_look){e->queue, 0};
    const jobq_jobref queue = {0, e->queue, NULL, 0, 0};
    rc = jobq__lock_job(db, &queue, 0);
    if (rc == JOBQ_OK) rc = jobq__barrier_pending(db, e->queue, &q->barrier);
  }
  if (rc == JOBQ_OK && (ref.key != NULL || ref.barrier)) rc = jobq__lock_job(db, &ref, 0);
  if (rc == JOBQ_OK && (q->barrier || ref.key != NULL))
    rc = jobq__must_wait_after(db, &ref, &wait);
  if (rc == JOBQ_OK)
    rc = jobq__sql_defer(db, JOBQ_Q_AFTER_SET,
                         SQL_ARGS(V_INT(e->child), V_INT(dec), V_TEXT(wait ? "waiting" : "ready")));
  if (rc == JOBQ_OK && e->left - dec <= 0 && !wait) jobq__wake(db, e->queue);
  return rc;
}

static int edge_queue_cmp(const void *x, const void *y) {
  const edge *a = x, *b = y;
  int c = strcmp(a->queue, b->queue);
  if (c != 0) return c;
  return edge_cmp(x, y);
}

int jobq__after_finished(jobq *db, const int64_t *parents, const int *outcomes,
                         size_t n) {
  if (n == 0) return JOBQ_OK;
  jobq_val *v = id_column(parents, n);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  edges es = {NULL, 0, 0};
  int rc = jobq__sql_set(db, JOBQ_Q_AFTER_CHILDREN, SQL_ARGS(V_COL('i', v, n)), 0, NULL,
                         edges_read, &es, NULL);
  free(v);
  /* By queue, then child: a queue's lock and look once. */
  if (rc == JOBQ_OK) qsort(es.e, es.n, sizeof *es.e, edge_queue_cmp);
  queue_look q = {NULL, 0};
  for (size_t i = 0, end; i < es.n && rc == JOBQ_OK; i = end) {
    for (end = i; end < es.n && es.e[end].child == es.e[i].child; end++) continue;
    rc = child_turn(db, &es.e[i], end - i, parents, outcomes, n, &q);
  }
  for (size_t i = 0; i < es.n; i++) {
    free(es.e[i].queue);
    free(es.e[i].key);
  }
  free(es.e);
  return rc;
}

/* ---------------------------------------------------------------- inspection */

int jobq_links(jobq *db, int64_t id, jobq_job_link **out, size_t *n) {
  if (db == NULL || out == NULL || n == NULL) return JOBQ_EINVAL;
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_AFTER_LINKS, &r, SQL_ARGS(V_INT(id)))) != JOBQ_OK)
    return rc;
  size_t cap = 0;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      jobq_job_link *l = realloc(*out, cap * sizeof *l);
      if (l == NULL) {
        got = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
        break;
      }
      *out = l;
    }
    jobq_job_link *l = &(*out)[(*n)++];
    size_t len;
    l->id = jobq__col_int(db, r, 0);
    l->child = (int)jobq__col_int(db, r, 1);
    l->state = jobq__col_null(db, r, 2)
                   ? 0
                   : jobq_state_parse(db->store->col_bytes(r, 2, &len));
    l->any_outcome = (int)jobq__col_int(db, r, 3);
  }
  jobq__rows_done(db, r);
  if (got < 0) {
    free(*out);
    *out = NULL;
    *n = 0;
    return got;
  }
  return JOBQ_OK;
}
