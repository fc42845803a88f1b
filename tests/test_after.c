/*
 * test_after.c - dependencies: a job put after others stays pending,
 * where no claim finds it, until every one of them is done; a parent that
 * dies or is cancelled cancels it (and its own children), naming the
 * parent, unless it runs on any outcome; a batch names its own jobs by
 * place, all or nothing; unknown ids are refused with nothing written;
 * jobq_links() lists parents and children.  A job with an ordering key
 * put after others keeps its place among its key's jobs (put order): the
 * key's later jobs wait behind it while it is pending, and it waits for
 * the key's earlier ones once its parents are done, whichever finishes
 * first, one of the key at a time; a barrier put after others waits
 * for them, then for every earlier job of its queue, and holds back every
 * later one throughout.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int64_t put_after(jobq *db, const int64_t *after, size_t n, int any) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.after = after;
  o.n_after = n;
  o.after_any_outcome = any;
  o.max_attempts = 1;
  return th_put_opts(db, &o);
}

static int64_t put_one(jobq *db) { return th_put_attempts(db, "q", 1); }

/* Puts a job on "q" with key (NULL: none), a barrier if barrier, after
 * the job after (0: none). */
static int64_t put_keyed(jobq *db, const char *key, int barrier, int64_t after) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.key = key;
  o.barrier = barrier;
  o.after = &after;
  o.n_after = after != 0;
  o.max_attempts = 1;
  return th_put_opts(db, &o);
}

/* Claims every job of "q" that may run now and asserts they are exactly
 * want[0..n) (any order); completes them one by one (done) or in one
 * batch. */
static void claim_exactly(jobq_session *s, const int64_t *want, size_t n, int batch) {
  size_t got;
  jobq_job *j = th_claim(s, "q", 10, &got);
  if (got != n) fail_msg("claimed %zu jobs, expected %zu", got, n);
  for (size_t i = 0; i < n; i++) {
    int found = 0;
    for (size_t k = 0; k < got; k++) found |= j[k].id == want[i];
    if (!found) fail_msg("job %lld not claimed", (long long)want[i]);
  }
  if (batch) {
    th_complete_many(s, j, got);
    return;
  }
  for (size_t k = 0; k < got; k++)
    assert_rc(jobq_complete(s, &j[k], "", 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, got);
}

/* Runs parent (alone on queue "p"): done, or dead when fail. */
static void run_parent(jobq_session *s, int64_t parent, int fail) {
  jobq_job *j = th_claim_one(s, "p");
  assert_int_equal(j->id, parent);
  if (fail)
    assert_rc(jobq_fail(s, j, "boom"), JOBQ_OK);
  else
    assert_rc(jobq_complete(s, j, "", 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
}

/* Claims exactly the job id from "q". */
static jobq_job *claim_is(jobq_session *s, int64_t id) {
  jobq_job *j = th_claim_one(s, "q");
  assert_non_null(j);
  assert_int_equal(j->id, id);
  return j;
}

static void test_waits_until_every_parent_is_done(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db), b = put_one(t->db);
  const int64_t parents[] = {a, b};
  int64_t c = put_after(t->db, parents, 2, 0);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_PENDING);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *ja = claim_is(s, a);
  jobq_job *jb = claim_is(s, b);
  th_claim_none(s, "q");
  assert_int_equal(jobq_complete(s, ja, "", 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_PENDING);
  th_claim_none(s, "q");
  assert_int_equal(jobq_complete(s, jb, "", 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_READY);
  jobq_job *jc = claim_is(s, c);
  assert_int_equal(jobq_complete(s, jc, "", 0, NULL), JOBQ_OK);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_jobs_free(jc, 1);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* Acknowledged in one batch, as the foreman does: the general path and
 * (PostgreSQL) the completions at once. */
static void test_batch_ack_frees_children(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db), b = put_one(t->db);
  const int64_t pa[] = {a}, pb[] = {a, b};
  int64_t c = put_after(t->db, pa, 1, 0), d = put_after(t->db, pb, 2, 0);
  jobq_session *s = th_session(t->db, 5000);
  size_t n;
  jobq_job *j = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, j, n);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, d), JOBQ_STATE_READY);
  jobq_job *k = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, k, n);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

static void test_done_parent_counts_as_done(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *ja = claim_is(s, a);
  assert_int_equal(jobq_complete(s, ja, "", 0, NULL), JOBQ_OK);
  const int64_t pa[] = {a};
  int64_t c = put_after(t->db, pa, 1, 0);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_READY);
  jobq_jobs_free(ja, 1);
  jobq_session_close(s);
}

static void test_dead_parent_cancels_children_transitively(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  const int64_t pa[] = {a};
  int64_t c = put_after(t->db, pa, 1, 0);
  const int64_t pc[] = {c};
  int64_t g = put_after(t->db, pc, 1, 0);
  int64_t any = put_after(t->db, pa, 1, 1);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *ja = claim_is(s, a);
  assert_int_equal(jobq_fail(s, ja, "boom"), JOBQ_OK);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_DEAD);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, g), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, any), JOBQ_STATE_READY);
  jobq_job_info *ic = th_show(t->db, c), *ig = th_show(t->db, g);
  assert_non_null(strstr(ic->last_error, "is dead"));
  char want[64];
  snprintf(want, sizeof want, "job %lld ", (long long)a);
  assert_non_null(strstr(ic->last_error, want));
  snprintf(want, sizeof want, "job %lld ", (long long)c);
  assert_non_null(strstr(ig->last_error, want));
  jobq_info_free(ic, 1);
  jobq_info_free(ig, 1);
  /* A job put after a dead one now is cancelled at once. */
  int64_t late = put_after(t->db, pa, 1, 0);
  assert_int_equal(th_state(t->db, late), JOBQ_STATE_CANCELLED);
  jobq_jobs_free(ja, 1);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* A job after a parent that dies and after that parent's cancelled child,
 * on any outcome: both count, in the one transaction of the death. */
static void test_cascade_counts_once_each(void **state) {
  tq *t = *state;
  int64_t x = put_one(t->db);
  const int64_t px[] = {x};
  int64_t c1 = put_after(t->db, px, 1, 0);
  const int64_t pboth[] = {x, c1};
  int64_t c2 = put_after(t->db, pboth, 2, 1);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *jx = claim_is(s, x);
  assert_int_equal(jobq_fail(s, jx, "boom"), JOBQ_OK);
  assert_int_equal(th_state(t->db, c1), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, c2), JOBQ_STATE_READY);
  jobq_jobs_free(jx, 1);
  jobq_session_close(s);
}

static void test_cancelled_parent_cancels_children(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  const int64_t pa[] = {a};
  int64_t c = put_after(t->db, pa, 1, 0);
  int64_t any = put_after(t->db, pa, 1, 1);
  assert_int_equal(jobq_cancel(t->db, a, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_CANCELLED);
  jobq_job_info *ic = th_show(t->db, c);
  assert_non_null(strstr(ic->last_error, "was cancelled"));
  jobq_info_free(ic, 1);
  assert_int_equal(th_state(t->db, any), JOBQ_STATE_READY);
  th_assert_counts_agree(t->db);
}

/* A keyed job after a job of another queue keeps its place in its key:
 * the key's later job waits behind it, and it behind the key's earlier
 * one, whichever of its parent and the earlier job finishes first. */
static void keyed_keeps_its_place(tq *t, int parent_first, int batch) {
  int64_t p = th_put_attempts(t->db, "p", 1);
  int64_t x = put_keyed(t->db, "k", 0, 0);
  int64_t y = put_keyed(t->db, "k", 0, p);
  int64_t w = put_keyed(t->db, "k", 0, 0);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_PENDING);
  assert_int_equal(th_state(t->db, w), JOBQ_STATE_WAITING);
  jobq_session *s = th_session(t->db, 5000);
  if (parent_first) {
    run_parent(s, p, 0);
    /* Its parent done, it still waits for the key's earlier job. */
    assert_int_equal(th_state(t->db, y), JOBQ_STATE_WAITING);
    claim_exactly(s, &x, 1, batch);
  } else {
    claim_exactly(s, &x, 1, batch);
    /* The key's earlier job done: the key waits for the pending one. */
    assert_int_equal(th_state(t->db, w), JOBQ_STATE_WAITING);
    th_claim_none(s, "q");
    run_parent(s, p, 0);
  }
  claim_exactly(s, &y, 1, batch);
  claim_exactly(s, &w, 1, batch);
  th_claim_none(s, "q");
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

static void test_keyed_parent_first(void **state) { keyed_keeps_its_place(*state, 1, 0); }
static void test_keyed_parent_last(void **state) { keyed_keeps_its_place(*state, 0, 0); }
static void test_keyed_parent_last_batch(void **state) {
  keyed_keeps_its_place(*state, 0, 1);
}

/* A keyed job after the key's own earlier job: that job's completion
 * makes it, not the key's next one, ready, by one completion and by a
 * batch. */
static void keyed_after_its_key(tq *t, int batch) {
  int64_t x = put_keyed(t->db, "k", 0, 0);
  int64_t y = put_keyed(t->db, "k", 0, x);
  int64_t w = put_keyed(t->db, "k", 0, 0);
  jobq_session *s = th_session(t->db, 5000);
  claim_exactly(s, &x, 1, batch);
  assert_int_equal(th_state(t->db, w), JOBQ_STATE_WAITING);
  claim_exactly(s, &y, 1, batch);
  claim_exactly(s, &w, 1, batch);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

static void test_keyed_after_its_key(void **state) { keyed_after_its_key(*state, 0); }
static void test_keyed_after_its_key_batch(void **state) {
  keyed_after_its_key(*state, 1);
}

/* Two pending jobs of one key: the later one's parent done first, it
 * waits for the earlier one. */
static void test_keyed_pending_in_put_order(void **state) {
  tq *t = *state;
  int64_t p1 = th_put_attempts(t->db, "p", 1), p2 = th_put_attempts(t->db, "p", 1);
  int64_t y1 = put_keyed(t->db, "k", 0, p1), y2 = put_keyed(t->db, "k", 0, p2);
  jobq_session *s = th_session(t->db, 5000);
  size_t n;
  jobq_job *ps = th_claim(s, "p", 2, &n);
  assert_int_equal(n, 2);
  jobq_job *second = ps[0].id == p2 ? &ps[0] : &ps[1],
           *first = ps[0].id == p2 ? &ps[1] : &ps[0];
  assert_rc(jobq_complete(s, second, "", 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, y2), JOBQ_STATE_WAITING);
  th_claim_none(s, "q");
  assert_rc(jobq_complete(s, first, "", 0, NULL), JOBQ_OK);
  claim_exactly(s, &y1, 1, 0);
  claim_exactly(s, &y2, 1, 0);
  jobq_jobs_free(ps, n);
  jobq_session_close(s);
}

/* A pending keyed job cancelled by its dead parent while the key's
 * earlier job runs: the key's next job waits for the running one. */
static void test_keyed_child_cancelled_key_goes_on(void **state) {
  tq *t = *state;
  int64_t p = th_put_attempts(t->db, "p", 1);
  int64_t x = put_keyed(t->db, "k", 0, 0);
  int64_t y = put_keyed(t->db, "k", 0, p);
  int64_t w = put_keyed(t->db, "k", 0, 0);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *jx = claim_is(s, x);
  run_parent(s, p, 1);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, w), JOBQ_STATE_WAITING);
  th_claim_none(s, "q");
  assert_rc(jobq_complete(s, jx, "", 0, NULL), JOBQ_OK);
  claim_exactly(s, &w, 1, 0);
  jobq_jobs_free(jx, 1);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* In a queue with a limit per key, whose keys do not order, a keyed job
 * after others is ready once they are done, and the limit holds it while
 * its key's other job runs. */
static void test_keyed_without_order(void **state) {
  tq *t = *state;
  assert_rc(jobq_set_limits(t->db, "q", &(jobq_limits){.running_per_key = 1}), JOBQ_OK);
  int64_t p = th_put_attempts(t->db, "p", 1);
  int64_t x = put_keyed(t->db, "k", 0, 0);
  int64_t y = put_keyed(t->db, "k", 0, p);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *jx = claim_is(s, x);
  run_parent(s, p, 0);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_READY);
  th_claim_none(s, "q");
  assert_rc(jobq_complete(s, jx, "", 0, NULL), JOBQ_OK);
  claim_exactly(s, &y, 1, 0);
  jobq_jobs_free(jx, 1);
  jobq_session_close(s);
}

/* A barrier after a job of another queue: the queue's later jobs wait
 * while it is pending, it waits for the earlier ones once its parent is
 * done, and runs alone. */
static void test_barrier_after(void **state) {
  tq *t = *state;
  int64_t p = th_put_attempts(t->db, "p", 1);
  int64_t a = put_keyed(t->db, NULL, 0, 0);
  int64_t b = put_keyed(t->db, NULL, 1, p);
  int64_t c = put_keyed(t->db, NULL, 0, 0), d = put_keyed(t->db, "k", 0, 0);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_PENDING);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *ja = claim_is(s, a);
  th_claim_none(s, "q");
  run_parent(s, p, 0);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  th_claim_none(s, "q");
  assert_rc(jobq_complete(s, ja, "", 0, NULL), JOBQ_OK);
  claim_exactly(s, &b, 1, 0);
  const int64_t after[] = {c, d};
  claim_exactly(s, after, 2, 1);
  jobq_jobs_free(ja, 1);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* A barrier whose parent finishes after the queue's earlier jobs: ready
 * at once then. */
static void test_barrier_after_parent_last(void **state) {
  tq *t = *state;
  int64_t p = th_put_attempts(t->db, "p", 1);
  int64_t a = put_keyed(t->db, NULL, 0, 0);
  int64_t b = put_keyed(t->db, NULL, 1, p);
  int64_t c = put_keyed(t->db, NULL, 0, 0);
  jobq_session *s = th_session(t->db, 5000);
  claim_exactly(s, &a, 1, 1);
  th_claim_none(s, "q");
  run_parent(s, p, 0);
  claim_exactly(s, &b, 1, 0);
  claim_exactly(s, &c, 1, 0);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

static void test_unknown_id_refused_nothing_written(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  jobq_put_opts o[2];
  jobq_put_opts_init(&o[0]);
  jobq_put_opts_init(&o[1]);
  const int64_t bad[] = {a, a + 1000};
  o[1].after = bad;
  o[1].n_after = 2;
  int64_t ids[2];
  assert_int_equal(jobq_put_many(t->db, o, 2, ids, NULL), JOBQ_EINVAL);
  char want[64];
  snprintf(want, sizeof want, "unknown job %lld", (long long)(a + 1000));
  th_assert_msg(t->db, want);
  th_assert_msg(t->db, "job 1: ");
  assert_int_equal(th_count_jobs(t->db, 0), 1);
  /* The id the batch's own first job will get is not known yet either:
   * no cycle through ids. */
  const int64_t next[] = {a + 1};
  o[1].after = next;
  o[1].n_after = 1;
  assert_int_equal(jobq_put_many(t->db, o, 2, ids, NULL), JOBQ_EINVAL);
  assert_int_equal(th_count_jobs(t->db, 0), 1);
  /* With a key too, the same. */
  jobq_put_opts k;
  jobq_put_opts_init(&k);
  k.after = bad;
  k.n_after = 2;
  k.key = "k";
  int64_t id;
  assert_int_equal(jobq_put(t->db, &k, &id, NULL), JOBQ_EINVAL);
  th_assert_msg(t->db, want);
  assert_int_equal(th_count_jobs(t->db, 0), 1);
}

static void test_batch_by_place(void **state) {
  tq *t = *state;
  jobq_put_opts o[4];
  for (int i = 0; i < 4; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "q";
  }
  const size_t p1[] = {0}, p3[] = {1, 2}, fwd[] = {3};
  o[1].after_index = p1;
  o[1].n_after_index = 1;
  o[2].after_index = p1;
  o[2].n_after_index = 1;
  o[3].after_index = p3;
  o[3].n_after_index = 2;
  int64_t ids[4];
  /* Forward, or to itself: refused, nothing written. */
  o[2].after_index = fwd;
  assert_int_equal(jobq_put_many(t->db, o, 4, ids, NULL), JOBQ_EINVAL);
  th_assert_msg(t->db, "job 2: invalid after_index '3'");
  assert_int_equal(th_count_jobs(t->db, 0), 0);
  o[2].after_index = p1;
  assert_int_equal(jobq_put_many(t->db, o, 4, ids, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, ids[0]), JOBQ_STATE_READY);
  for (int i = 1; i < 4; i++) assert_int_equal(th_state(t->db, ids[i]), JOBQ_STATE_PENDING);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *j0 = claim_is(s, ids[0]);
  th_claim_none(s, "q");
  assert_int_equal(jobq_complete(s, j0, "", 0, NULL), JOBQ_OK);
  size_t n;
  jobq_job *mid = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 2);
  assert_int_equal(th_state(t->db, ids[3]), JOBQ_STATE_PENDING);
  th_complete_many(s, mid, n);
  jobq_job *j3 = claim_is(s, ids[3]);
  /* Its parents and children, with their states. */
  jobq_job_link *l;
  size_t nl;
  assert_int_equal(jobq_links(t->db, ids[1], &l, &nl), JOBQ_OK);
  assert_int_equal(nl, 2);
  assert_int_equal(l[0].id, ids[0]);
  assert_int_equal(l[0].child, 0);
  assert_int_equal(l[0].state, JOBQ_STATE_DONE);
  assert_int_equal(l[1].id, ids[3]);
  assert_int_equal(l[1].child, 1);
  assert_int_equal(l[1].state, JOBQ_STATE_RUNNING);
  free(l);
  jobq_jobs_free(j0, 1);
  jobq_jobs_free(j3, 1);
  jobq_session_close(s);
}

/* A batch after a dead job: the job put after it is cancelled at once,
 * and so are the batch's jobs put after that one, by place. */
static void test_batch_after_a_dead_job(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *ja = claim_is(s, a);
  assert_int_equal(jobq_fail(s, ja, "boom"), JOBQ_OK);
  jobq_put_opts o[3];
  for (int i = 0; i < 3; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "q";
  }
  const int64_t pa[] = {a};
  const size_t p0[] = {0}, p1[] = {1};
  o[0].after = pa;
  o[0].n_after = 1;
  o[1].after_index = p0;
  o[1].n_after_index = 1;
  o[2].after_index = p1;
  o[2].n_after_index = 1;
  o[2].after_any_outcome = 1;
  int64_t ids[3];
  assert_int_equal(jobq_put_many(t->db, o, 3, ids, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, ids[0]), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, ids[1]), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, ids[2]), JOBQ_STATE_READY);
  jobq_jobs_free(ja, 1);
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* A chain of jobs in one batch, longer than a set statement's rows, runs
 * one after the other, in order. */
static void test_chain_in_one_batch(void **state) {
  tq *t = *state;
  enum { N = 150 };
  jobq_put_opts o[N];
  size_t prev[N];
  for (size_t i = 0; i < N; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "q";
    prev[i] = i - 1;
    if (i > 0) {
      o[i].after_index = &prev[i];
      o[i].n_after_index = 1;
    }
  }
  int64_t ids[N];
  assert_int_equal(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_PENDING), N - 1);
  jobq_session *s = th_session(t->db, 5000);
  for (size_t i = 0; i < N; i++) {
    size_t n;
    jobq_job *j = th_claim(s, "q", 10, &n);
    assert_int_equal(n, 1);
    assert_int_equal(j[0].id, ids[i]);
    th_complete_many(s, j, n);
  }
  th_claim_none(s, "q");
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
}

/* A stats count and a listing of their own. */
static void test_pending_in_stats_and_list(void **state) {
  tq *t = *state;
  int64_t a = put_one(t->db);
  const int64_t pa[] = {a};
  int64_t c = put_after(t->db, pa, 1, 0);
  jobq_queue_stats *st;
  size_t n;
  assert_int_equal(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(st[0].pending, 1);
  assert_int_equal(st[0].ready, 1);
  jobq_stats_free(st, n);
  jobq_list_opts lo = {.state = JOBQ_STATE_PENDING};
  jobq_job_info *v;
  assert_int_equal(jobq_list(t->db, &lo, &v, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(v[0].id, c);
  jobq_info_free(v, n);
  assert_string_equal(jobq_state_name(JOBQ_STATE_PENDING), "pending");
  assert_int_equal(jobq_state_parse("pending"), JOBQ_STATE_PENDING);
}

/* A purged parent cancels its children in other queues; a pruned child
 * takes its edges with it, a pruned parent shows as such. */
static void test_purge_and_prune(void **state) {
  tq *t = *state;
  int64_t a = th_put_attempts(t->db, "other", 1);
  const int64_t pa[] = {a};
  int64_t c = put_after(t->db, pa, 1, 0);
  int64_t purged;
  assert_int_equal(jobq_purge(t->db, "other", &purged), JOBQ_OK);
  assert_int_equal(purged, 1);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_CANCELLED);
  jobq_job_link *l;
  size_t n;
  assert_int_equal(jobq_links(t->db, c, &l, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(l[0].id, a);
  assert_int_equal(l[0].state, 0);
  free(l);
  th_sleep_ms(5);
  int64_t pruned;
  assert_int_equal(jobq_prune(t->db, 0, &pruned), JOBQ_OK);
  assert_int_equal(pruned, 1);
  assert_int_equal(jobq_links(t->db, c, &l, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  free(l);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_after"), 0);
}

/* A put naming a parent beside the parent's completion, many times over:
 * whichever commits second sees the other's work, so that the child is
 * never left pending behind a parent that is done. */
typedef struct beside {
  const char *url;
  int64_t parent, child;
  pthread_barrier_t *go;
} beside;

static void *put_beside(void *arg) {
  beside *b = arg;
  jobq *db = NULL;
  if (jobq_open(b->url, &db) != JOBQ_OK) return NULL;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.after = &b->parent;
  o.n_after = 1;
  pthread_barrier_wait(b->go);
  if (jobq_put(db, &o, &b->child, NULL) != JOBQ_OK) b->child = -1;
  jobq_close(db);
  return NULL;
}

static void test_put_beside_the_parents_completion(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 5000);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, 2);
  for (int round = 0; round < 25; round++) {
    int64_t p = put_one(t->db);
    jobq_job *j = claim_is(s, p);
    beside b = {t->url, p, 0, &go};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, put_beside, &b), 0);
    pthread_barrier_wait(&go);
    assert_int_equal(jobq_complete(s, j, "", 0, NULL), JOBQ_OK);
    pthread_join(th, NULL);
    assert_true(b.child > 0);
    assert_int_equal(th_state(t->db, b.child), JOBQ_STATE_READY);
    jobq_job *c = claim_is(s, b.child);
    assert_int_equal(jobq_complete(s, c, "", 0, NULL), JOBQ_OK);
    jobq_jobs_free(j, 1);
    jobq_jobs_free(c, 1);
  }
  pthread_barrier_destroy(&go);
  jobq_session_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_waits_until_every_parent_is_done),
      TQ_TEST(test_batch_ack_frees_children),
      TQ_TEST(test_done_parent_counts_as_done),
      TQ_TEST(test_dead_parent_cancels_children_transitively),
      TQ_TEST(test_cancelled_parent_cancels_children),
      TQ_TEST(test_cascade_counts_once_each),
      TQ_TEST(test_unknown_id_refused_nothing_written),
      TQ_TEST(test_batch_by_place),
      TQ_TEST(test_batch_after_a_dead_job),
      TQ_TEST(test_chain_in_one_batch),
      TQ_TEST(test_pending_in_stats_and_list),
      TQ_TEST(test_purge_and_prune),
      TQ_TEST(test_put_beside_the_parents_completion),
      TQ_TEST(test_keyed_parent_first),
      TQ_TEST(test_keyed_parent_last),
      TQ_TEST(test_keyed_parent_last_batch),
      TQ_TEST(test_keyed_after_its_key),
      TQ_TEST(test_keyed_after_its_key_batch),
      TQ_TEST(test_keyed_pending_in_put_order),
      TQ_TEST(test_keyed_child_cancelled_key_goes_on),
      TQ_TEST(test_keyed_without_order),
      TQ_TEST(test_barrier_after),
      TQ_TEST(test_barrier_after_parent_last),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
