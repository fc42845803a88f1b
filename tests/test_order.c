/*
 * test_order.c - ordering keys and barriers: jobs of one queue that share
 * a key run one at a time in enqueue order while other keys run in
 * parallel; a head that goes dead blocks its key under the "block" policy
 * until it is retried or cancelled, and lets the next one run under
 * "skip"; a barrier waits for every earlier job of its queue and holds
 * every later one; cancelling waiting jobs and barriers lets the rest go on.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t put_full(jobq *db, const char *queue, const char *key,
                        int barrier, int prio, int max_attempts) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = queue;
  o.key = key;
  o.barrier = barrier;
  o.priority = prio;
  o.max_attempts = max_attempts;
  return th_put_opts(db, &o);
}

static int64_t put_barrier(jobq *db, const char *queue) {
  return put_full(db, queue, NULL, 1, 0, 25);
}

/* Claims everything claimable from queue and checks the ids are exactly
 * want[0..nwant) in that order; returns the jobs. */
static jobq_job *claim_exactly(jobq_session *s, const char *queue,
                               const int64_t *want, size_t nwant, size_t *n) {
  jobq_job *j = th_claim(s, queue, 50, n);
  if (*n != nwant) {
    fail_msg("claimed %zu jobs (first %lld), expected %zu", *n,
             *n ? (long long)j[0].id : 0LL, nwant);
  }
  for (size_t k = 0; k < nwant; k++) assert_int_equal(j[k].id, want[k]);
  return j;
}

static void complete_all(jobq_session *s, jobq_job *j, size_t n) {
  for (size_t k = 0; k < n; k++)
    assert_rc(jobq_complete(s, &j[k], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, n);
}

static void test_key_one_at_a_time(void **state) {
  tq *t = *state;
  int64_t a = th_put_key(t->db, "q", "k1");
  int64_t b = th_put_key(t->db, "q", "k1");
  int64_t c = th_put_key(t->db, "q", "k1");
  int64_t d = th_put_key(t->db, "q", "k2");
  int64_t e = th_put(t->db, "q", NULL);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, d), JOBQ_STATE_READY);

  jobq_session *s = th_session(t->db, 0);
  size_t n;
  int64_t first[] = {a, d, e};
  jobq_job *j = claim_exactly(s, "q", first, 3, &n);
  /* While a runs, b and c wait. */
  th_claim_none(s, "q");
  assert_rc(jobq_complete(s, &j[0], NULL, 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_WAITING);
  jobq_job *jb = th_claim_one(s, "q");
  assert_int_equal(jb->id, b);
  th_claim_none(s, "q");
  complete_all(s, jb, 1);
  jobq_job *jc = th_claim_one(s, "q");
  assert_int_equal(jc->id, c);
  complete_all(s, jc, 1);
  assert_rc(jobq_complete(s, &j[1], NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_complete(s, &j[2], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, n);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DONE), 5);
  jobq_session_close(s);
}

/* A busy worker's rhythm on one key (jobq_ack_claim, as the foreman
 * acknowledges): the completion hands the key on, and the claim in the
 * same transaction takes the job it made ready, one commit a job.  A
 * failure to be retried keeps the key, and the claim finds nothing. */
static void test_ack_claim_takes_the_keys_next_job(void **state) {
  tq *t = *state;
  int64_t ids[4];
  for (int k = 0; k < 4; k++) ids[k] = th_put_key(t->db, "q", "k");
  jobq_session *s = th_session(t->db, 0);
  const char *q = "q";
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, ids[0]);
  for (int k = 1; k < 3; k++) {
    jobq_ack a;
    jobq_ack_init(&a, j, JOBQ_ACK_COMPLETE);
    jobq_job *next = NULL;
    size_t n = 0;
    assert_rc(jobq_ack_claim(s, &a, 1, &q, 1, 10, &next, &n), JOBQ_OK);
    assert_rc(a.status, JOBQ_OK);
    assert_int_equal(th_state(t->db, ids[k - 1]), JOBQ_STATE_DONE);
    assert_int_equal(n, 1);
    assert_int_equal(next[0].id, ids[k]);
    assert_int_equal(th_state(t->db, ids[k + 1]), JOBQ_STATE_WAITING);
    jobq_jobs_free(j, 1);
    j = next;
  }
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
  a.data = "boom";
  a.len = 4;
  a.retry_in_ms = 60000;
  jobq_job *next = NULL;
  size_t n = 9;
  assert_rc(jobq_ack_claim(s, &a, 1, &q, 1, 10, &next, &n), JOBQ_OK);
  assert_rc(a.status, JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_jobs_free(next, n);
  assert_int_equal(th_state(t->db, ids[2]), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, ids[3]), JOBQ_STATE_WAITING);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_key_order_beats_priority(void **state) {
  tq *t = *state;
  int64_t a = put_full(t->db, "q", "k", 0, 0, 25);
  int64_t b = put_full(t->db, "q", "k", 0, 100, 25);
  /* The same key in another queue is another key. */
  int64_t other = put_full(t->db, "r", "k", 0, 0, 25);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  int64_t want[] = {a};
  jobq_job *j = claim_exactly(s, "q", want, 1, &n);
  jobq_job *jo = th_claim_one(s, "r");
  assert_int_equal(jo->id, other);
  complete_all(s, jo, 1);
  complete_all(s, j, n);
  jobq_job *jb = th_claim_one(s, "q");
  assert_int_equal(jb->id, b);
  complete_all(s, jb, 1);
  jobq_session_close(s);
}

static void test_key_head_retry_and_release(void **state) {
  tq *t = *state;
  int64_t a = th_put_key(t->db, "q", "k");
  int64_t b = th_put_key(t->db, "q", "k");
  jobq_session *s = th_session(t->db, 0);
  /* A head that fails with attempts left is still the head. */
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  jobq_ack ack;
  jobq_ack_init(&ack, j, JOBQ_ACK_FAIL);
  ack.retry_in_ms = 0;
  assert_rc(jobq_ack_many(s, &ack, 1), JOBQ_OK);
  assert_int_equal(ack.status, JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  assert_int_equal(j->attempt, 2);
  /* Released, it is the head again. */
  assert_rc(jobq_release(s, j), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, b);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

/* Makes the head of key k in queue q go dead; returns its id. */
static int64_t kill_head(jobq_session *s, const char *q, int64_t want) {
  jobq_job *j = th_claim_one(s, q);
  assert_int_equal(j->id, want);
  assert_rc(jobq_fail(s, j, "fatal"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  return want;
}

static void test_dead_head_blocks_until_retry(void **state) {
  tq *t = *state;
  int64_t a = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t b = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t other = put_full(t->db, "q", "k2", 0, 0, 1);
  jobq_session *s = th_session(t->db, 0);
  kill_head(s, "q", a);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_DEAD);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  /* Only the other key moves. */
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, other);
  complete_all(s, j, 1);
  th_claim_none(s, "q");
  /* Pruning never removes a dead head that blocks its key. */
  th_sleep_ms(20);
  int64_t count = -1;
  assert_rc(jobq_prune(t->db, 1, &count), JOBQ_OK);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_DEAD);
  th_claim_none(s, "q");

  /* The operator retries the head: it runs first, then b. */
  assert_rc(jobq_retry(t->db, a), JOBQ_OK);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  assert_int_equal(j->attempt, 1);
  th_claim_none(s, "q");
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, b);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

static void test_dead_head_blocks_until_cancel(void **state) {
  tq *t = *state;
  int64_t a = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t b = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t c = put_full(t->db, "q", "k", 0, 0, 1);
  jobq_session *s = th_session(t->db, 0);
  kill_head(s, "q", a);
  th_claim_none(s, "q");
  /* A job put on a key whose only job left is the dead head waits too. */
  int64_t lone = put_full(t->db, "q", "lone", 0, 0, 1);
  kill_head(s, "q", lone);
  int64_t after = put_full(t->db, "q", "lone", 0, 0, 1);
  assert_int_equal(th_state(t->db, after), JOBQ_STATE_WAITING);
  int now = 9;
  assert_rc(jobq_cancel(t->db, lone, &now), JOBQ_OK);
  assert_int_equal(th_state(t->db, after), JOBQ_STATE_READY);
  jobq_job *l = th_claim_one(s, "q");
  assert_int_equal(l->id, after);
  complete_all(s, l, 1);
  assert_rc(jobq_cancel(t->db, a, &now), JOBQ_OK);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_READY);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, b);
  th_claim_none(s, "q");
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, c);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

static void test_dead_head_skip_policy(void **state) {
  tq *t = *state;
  assert_rc(jobq_set_key_policy(t->db, "q", "skip"), JOBQ_OK);
  assert_rc(jobq_set_key_policy(t->db, "q", "wait"), JOBQ_EINVAL);
  th_assert_msg(t->db, "wait");
  assert_rc(jobq_set_key_policy(t->db, "Bad Q", "skip"), JOBQ_EINVAL);
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_string_equal(st[0].key_policy, "skip");
  jobq_stats_free(st, n);

  int64_t a = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t b = put_full(t->db, "q", "k", 0, 0, 1);
  jobq_session *s = th_session(t->db, 0);
  kill_head(s, "q", a);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_DEAD);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_READY);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, b);
  complete_all(s, j, 1);

  /* Back to block: the next dead head holds the key again. */
  assert_rc(jobq_set_key_policy(t->db, "q", "block"), JOBQ_OK);
  int64_t c = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t d = put_full(t->db, "q", "k", 0, 0, 1);
  kill_head(s, "q", c);
  assert_int_equal(th_state(t->db, d), JOBQ_STATE_WAITING);
  th_claim_none(s, "q");
  jobq_session_close(s);
}

static void test_cancel_waiting_keyed(void **state) {
  tq *t = *state;
  int64_t a = th_put_key(t->db, "q", "k");
  int64_t b = th_put_key(t->db, "q", "k");
  int64_t c = th_put_key(t->db, "q", "k");
  int now = 9;
  assert_rc(jobq_cancel(t->db, b, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_CANCELLED);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, c);
  complete_all(s, j, 1);

  /* Cancelling a ready head hands the key on at once. */
  int64_t d = th_put_key(t->db, "q", "k");
  int64_t e = th_put_key(t->db, "q", "k");
  assert_int_equal(th_state(t->db, d), JOBQ_STATE_READY);
  assert_rc(jobq_cancel(t->db, d, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  assert_int_equal(th_state(t->db, e), JOBQ_STATE_READY);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, e);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

static void test_barrier(void **state) {
  tq *t = *state;
  int64_t a = th_put(t->db, "q", NULL);
  int64_t b = th_put_key(t->db, "q", "k");
  int64_t x = put_barrier(t->db, "q");
  int64_t c = th_put(t->db, "q", NULL);
  int64_t d = put_full(t->db, "q", NULL, 0, 1000, 25);
  int64_t elsewhere = th_put(t->db, "r", NULL);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, c), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, d), JOBQ_STATE_WAITING);

  jobq_session *s = th_session(t->db, 0);
  size_t n;
  int64_t first[] = {a, b};
  jobq_job *j = claim_exactly(s, "q", first, 2, &n);
  /* Another queue is not held. */
  jobq_job *je = th_claim_one(s, NULL);
  assert_int_equal(je->id, elsewhere);
  complete_all(s, je, 1);

  assert_rc(jobq_complete(s, &j[0], NULL, 0, NULL), JOBQ_OK);
  th_claim_none(s, "q"); /* b still runs */
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_WAITING);
  assert_rc(jobq_complete(s, &j[1], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, n);

  /* The barrier runs alone. */
  jobq_job *jx = th_claim_one(s, "q");
  assert_int_equal(jx->id, x);
  th_claim_none(s, "q");
  /* A job put while the barrier runs waits for it too. */
  int64_t f = th_put(t->db, "q", NULL);
  th_claim_none(s, "q");
  complete_all(s, jx, 1);

  int64_t after[] = {d, c, f};
  j = claim_exactly(s, "q", after, 3, &n);
  complete_all(s, j, n);
  jobq_session_close(s);
}

static void test_barrier_waits_for_retries(void **state) {
  tq *t = *state;
  int64_t a = put_full(t->db, "q", NULL, 0, 0, 3);
  int64_t x = put_barrier(t->db, "q");
  /* A barrier first in its queue is ready at once once nothing is
   * before it; here a is before it, so it waits. */
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  jobq_ack ack;
  jobq_ack_init(&ack, j, JOBQ_ACK_FAIL);
  ack.retry_in_ms = 0;
  assert_rc(jobq_ack_many(s, &ack, 1), JOBQ_OK);
  jobq_jobs_free(j, 1);
  /* a is not finished: the barrier still waits. */
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_WAITING);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  assert_rc(jobq_fail(s, j, "again"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  /* Backing off (not finished): still waits. */
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_WAITING);
  assert_rc(jobq_cancel(t->db, a, NULL), JOBQ_OK);
  /* a finished (cancelled): the barrier may run. */
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, x);
  complete_all(s, j, 1);

  /* A barrier in an empty queue is ready at once. */
  int64_t y = put_barrier(t->db, "empty");
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_READY);
  j = th_claim_one(s, "empty");
  assert_int_equal(j->id, y);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

static void test_cancel_barrier(void **state) {
  tq *t = *state;
  int64_t a = th_put(t->db, "q", NULL);
  int64_t x = put_barrier(t->db, "q");
  int64_t c = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *ja = th_claim_one(s, "q");
  assert_int_equal(ja->id, a);
  th_claim_none(s, "q");
  int now = 9;
  assert_rc(jobq_cancel(t->db, x, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_CANCELLED);
  /* With the barrier gone, c no longer waits for a. */
  jobq_job *jc = th_claim_one(s, "q");
  assert_int_equal(jc->id, c);
  complete_all(s, jc, 1);
  complete_all(s, ja, 1);
  jobq_session_close(s);
}

static void test_two_barriers(void **state) {
  tq *t = *state;
  int64_t x = put_barrier(t->db, "q");
  int64_t y = put_barrier(t->db, "q");
  int64_t c = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, x);
  th_claim_none(s, "q");
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, y);
  th_claim_none(s, "q");
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, c);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

/* A finished job of a key that comes back (retry) must not run beside
 * the job that holds its key now. */
static void test_retry_into_busy_key(void **state) {
  tq *t = *state;
  int64_t a = th_put_key(t->db, "q", "k");
  int64_t b = th_put_key(t->db, "q", "k");
  assert_rc(jobq_cancel(t->db, a, NULL), JOBQ_OK);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *jb = th_claim_one(s, "q");
  assert_int_equal(jb->id, b);
  assert_rc(jobq_retry(t->db, a), JOBQ_OK);
  /* b holds the key: a waits. */
  th_claim_none(s, "q");
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_WAITING);
  complete_all(s, jb, 1);
  jobq_job *ja = th_claim_one(s, "q");
  assert_int_equal(ja->id, a);
  complete_all(s, ja, 1);

  /* The same for a dead job under "skip", whose key moved on. */
  assert_rc(jobq_set_key_policy(t->db, "q", "skip"), JOBQ_OK);
  int64_t c = put_full(t->db, "q", "k", 0, 0, 1);
  int64_t d = put_full(t->db, "q", "k", 0, 0, 1);
  kill_head(s, "q", c);
  jobq_job *jd = th_claim_one(s, "q");
  assert_int_equal(jd->id, d);
  assert_rc(jobq_retry(t->db, c), JOBQ_OK);
  th_claim_none(s, "q");
  complete_all(s, jd, 1);
  jobq_job *jc = th_claim_one(s, "q");
  assert_int_equal(jc->id, c);
  complete_all(s, jc, 1);
  jobq_session_close(s);
}

/* Enqueue order holds even when the head is delayed. */
static void test_key_waits_for_delayed_head(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.key = "k";
  o.delay_ms = 400;
  int64_t a = th_put_opts(t->db, &o);
  int64_t b = th_put_key(t->db, "q", "k");
  jobq_session *s = th_session(t->db, 0);
  th_claim_none(s, "q");
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_WAITING);
  th_sleep_ms(450);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  th_claim_none(s, "q");
  complete_all(s, j, 1);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, b);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

/* A barrier waits for earlier jobs that are only waiting for their key. */
static void test_barrier_after_waiting_keys(void **state) {
  tq *t = *state;
  int64_t a = th_put_key(t->db, "q", "k");
  int64_t b = th_put_key(t->db, "q", "k");
  int64_t x = put_barrier(t->db, "q");
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, a);
  complete_all(s, j, 1);
  /* b is ready now; the barrier must still wait for it. */
  size_t n;
  int64_t want[] = {b};
  j = claim_exactly(s, "q", want, 1, &n);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_WAITING);
  complete_all(s, j, n);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, x);
  complete_all(s, j, 1);
  jobq_session_close(s);
}

/* Keys are compared byte for byte on every store: case, trailing spaces
 * and the two spellings of an accented letter make different keys, so
 * each first job runs at once; only the exact same bytes wait. */
static void test_keys_compare_bytes(void **state) {
  tq *t = *state;
  static const char *const keys[] = {"k", "K", "k ", "\xc3\xa9", "e\xcc\x81"};
  int64_t ids[5];
  for (int i = 0; i < 5; i++) ids[i] = th_put_key(t->db, "bytes", keys[i]);
  for (int i = 0; i < 5; i++) assert_int_equal(th_state(t->db, ids[i]), JOBQ_STATE_READY);
  int64_t again = th_put_key(t->db, "bytes", "k ");
  assert_int_equal(th_state(t->db, again), JOBQ_STATE_WAITING);
  /* Unique keys too: "u" and "u " are two jobs. */
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "bytes";
  o.unique_key = "u";
  int64_t u1 = 0, u2 = 0;
  int existed = -1;
  assert_rc(jobq_put(t->db, &o, &u1, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  o.unique_key = "u ";
  assert_rc(jobq_put(t->db, &o, &u2, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  assert_true(u1 != u2);
  o.unique_key = "U";
  assert_rc(jobq_put(t->db, &o, &u2, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
}

/* Keyed jobs in one batch: the first of each key (queue and key, byte
 * for byte) runs unless the key had a job before, the later ones wait
 * behind it in order, in the transaction that put them all. */
static void test_keyed_jobs_in_one_batch(void **state) {
  tq *t = *state;
  int64_t before = th_put_key(t->db, "q", "c");
  static const char *const queues[] = {"q", "q", "q", "r", "q", "q", "q", "q"};
  static const char *const keys[] = {"a", "b", "a", "a", "b", "c", "A", "a"};
  static const int want[] = {JOBQ_STATE_READY,   JOBQ_STATE_READY,   JOBQ_STATE_WAITING,
                             JOBQ_STATE_READY,   JOBQ_STATE_WAITING, JOBQ_STATE_WAITING,
                             JOBQ_STATE_READY,   JOBQ_STATE_WAITING};
  jobq_put_opts o[8];
  int64_t ids[8];
  for (int i = 0; i < 8; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = queues[i];
    o[i].key = keys[i];
  }
  assert_rc(jobq_put_many(t->db, o, 8, ids, NULL), JOBQ_OK);
  for (int i = 0; i < 8; i++) {
    if (th_state(t->db, ids[i]) != want[i])
      fail_msg("job %d (%s/%s) is %s, expected %s", i, queues[i], keys[i],
               jobq_state_name(th_state(t->db, ids[i])), jobq_state_name(want[i]));
  }
  /* Each key hands on to its next job, in the order put. */
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  const int64_t heads[] = {before, ids[0], ids[1], ids[6]};
  jobq_job *j = claim_exactly(s, "q", heads, 4, &n);
  complete_all(s, j, n);
  const int64_t next[] = {ids[2], ids[4], ids[5]};
  j = claim_exactly(s, "q", next, 3, &n);
  complete_all(s, j, n);
  const int64_t last[] = {ids[7]};
  j = claim_exactly(s, "q", last, 1, &n);
  complete_all(s, j, n);
  th_claim_none(s, "q");
  const int64_t other[] = {ids[3]};
  j = claim_exactly(s, "r", other, 1, &n);
  complete_all(s, j, n);
  jobq_session_close(s);
}

/* One batch of every kind of job of one queue: a unique key already
 * taken and one taken twice in the batch give the existing job (and
 * neither takes its ordering key's turn), a keyed job waits behind the
 * first of its key, a barrier (with barrier) behind every earlier job,
 * and a plain job behind the barrier.  They then run in that order.
 * Without the barrier the batch goes in by set statements (lib/put.c),
 * with it the general way. */
static void mixed_batch(tq *t, int with_barrier) {
  jobq_put_opts e;
  jobq_put_opts_init(&e);
  e.queue = "m";
  e.unique_key = "u2";
  e.key = "b";
  int64_t before = th_put_opts(t->db, &e);
  enum { N = 8 };
  jobq_put_opts o[N];
  for (int i = 0; i < N; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "m";
  }
  o[0].key = "a";
  o[0].unique_key = "u1";
  o[2].key = "c";
  o[2].unique_key = "u1";  /* the batch's own o[0] */
  o[3].key = "a";
  o[4].key = "c";          /* first of its key: o[2] did not go in */
  o[5].barrier = with_barrier;
  o[7].unique_key = "u2";  /* before */
  o[7].key = "b";
  int64_t ids[N];
  unsigned char existed[N];
  assert_rc(jobq_put_many(t->db, o, N, ids, existed), JOBQ_OK);
  static const unsigned char want_existed[N] = {0, 0, 1, 0, 0, 0, 0, 1};
  for (int i = 0; i < N; i++)
    if (existed[i] != want_existed[i]) fail_msg("job %d: existed %d", i, existed[i]);
  assert_int_equal(ids[2], ids[0]);
  assert_int_equal(ids[7], before);
  int want[N] = {JOBQ_STATE_READY,   JOBQ_STATE_READY, JOBQ_STATE_READY,
                 JOBQ_STATE_WAITING, JOBQ_STATE_READY, JOBQ_STATE_WAITING,
                 JOBQ_STATE_WAITING, JOBQ_STATE_READY};
  if (!with_barrier) want[5] = want[6] = JOBQ_STATE_READY;
  for (int i = 0; i < N; i++)
    if (th_state(t->db, ids[i]) != want[i])
      fail_msg("job %d is %s, expected %s", i, jobq_state_name(th_state(t->db, ids[i])),
               jobq_state_name(want[i]));
  assert_int_equal(th_count_jobs(t->db, 0), 7);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  const int64_t first[] = {before, ids[0], ids[1], ids[4], ids[5], ids[6]};
  jobq_job *j = claim_exactly(s, "m", first, with_barrier ? 4 : 6, &n);
  complete_all(s, j, n);
  const int64_t second[] = {ids[3]};
  j = claim_exactly(s, "m", second, 1, &n);
  complete_all(s, j, n);
  if (!with_barrier) {
    th_claim_none(s, "m");
    jobq_session_close(s);
    return;
  }
  const int64_t barrier[] = {ids[5]};
  j = claim_exactly(s, "m", barrier, 1, &n);
  complete_all(s, j, n);
  const int64_t last[] = {ids[6]};
  j = claim_exactly(s, "m", last, 1, &n);
  complete_all(s, j, n);
  th_claim_none(s, "m");
  jobq_session_close(s);
}

/* A batch of plain and keyed jobs decides each job's state from what the
 * queues already hold: behind a barrier put before, behind a key an
 * unfinished job holds, behind an earlier job of the batch, and not
 * behind a key where a limit per key means keys do not order. */
static void test_batch_waits_for_what_is_there(void **state) {
  tq *t = *state;
  jobq_put_opts b;
  jobq_put_opts_init(&b);
  b.queue = "w";
  b.barrier = 1;
  th_put_opts(t->db, &b);
  th_put_key(t->db, "v", "held");
  jobq_limits l = {.running_per_key = 2};
  assert_rc(jobq_set_limits(t->db, "lk", &l), JOBQ_OK);
  th_put_key(t->db, "lk", "k");
  enum { N = 7 };
  static const struct {
    const char *queue, *key;
    int state;
  } want[N] = {
      {"w", NULL, JOBQ_STATE_WAITING},   {"v", "held", JOBQ_STATE_WAITING},
      {"v", "new", JOBQ_STATE_READY},    {"v", "new", JOBQ_STATE_WAITING},
      {"v", NULL, JOBQ_STATE_READY},     {"lk", "k", JOBQ_STATE_READY},
      {"w", "x", JOBQ_STATE_WAITING},
  };
  jobq_put_opts o[N];
  for (int i = 0; i < N; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = want[i].queue;
    o[i].key = want[i].key;
  }
  int64_t ids[N];
  assert_rc(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  for (int i = 0; i < N; i++)
    if (th_state(t->db, ids[i]) != want[i].state)
      fail_msg("job %d (%s/%s) is %s, expected %s", i, want[i].queue,
               want[i].key ? want[i].key : "-", jobq_state_name(th_state(t->db, ids[i])),
               jobq_state_name(want[i].state));
}

static void test_mixed_batch(void **state) { mixed_batch(*state, 0); }
static void test_mixed_batch_with_barrier(void **state) { mixed_batch(*state, 1); }

/* One batch completes the heads of keys in two queues, some with a job
 * behind them and some without, interleaved: exactly the jobs behind
 * become ready, each in its own queue and key. */
static void test_batch_hands_on_only_keys_with_jobs_behind(void **state) {
  tq *t = *state;
  enum { KEYS = 12 };
  static const char *const queues[] = {"hq", "hr"};
  int64_t heads[2 * KEYS], behind[2 * KEYS];
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < KEYS; k++) {
      char key[16];
      snprintf(key, sizeof key, "k%02d", k);
      heads[q * KEYS + k] = th_put_key(t->db, queues[q], key);
      /* Behind every third key of hq and every other key of hr. */
      int has = q == 0 ? k % 3 == 0 : k % 2 == 1;
      behind[q * KEYS + k] = has ? th_put_key(t->db, queues[q], key) : 0;
    }
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, NULL, 1000, &n);
  assert_int_equal(n, 2 * KEYS);
  th_complete_many(s, j, n);
  for (int i = 0; i < 2 * KEYS; i++) {
    assert_int_equal(th_state(t->db, heads[i]), JOBQ_STATE_DONE);
    if (behind[i] != 0 && th_state(t->db, behind[i]) != JOBQ_STATE_READY)
      fail_msg("the job behind key %d of %s is %s", i % KEYS, queues[i / KEYS],
               jobq_state_name(th_state(t->db, behind[i])));
  }
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), KEYS / 3 + KEYS / 2);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_WAITING), 0);
  jobq_session_close(s);
}

/* A batch of many keys, more than a store puts or looks at in one
 * statement, each key twice, in an order of its own: the first job of a
 * key runs unless the key has a job already (ready, running, waiting or a
 * dead head that blocks it), whether the key was used before or not; a
 * key whose jobs all finished is free.  The same keys in the queues
 * "mk.x" and "mk-x", whose names sort around "mk" by another rule once a
 * key follows them, are keys of their own.  A batch of completions of
 * many keys hands each key on. */
static void test_many_keys_in_one_batch(void **state) {
  tq *t = *state;
  enum { KEYS = 100 };
  static const char *const queues[] = {"mk", "mk.x", "mk-x"};
  char keys[KEYS][16];
  for (int k = 0; k < KEYS; k++) snprintf(keys[k], sizeof keys[k], "k%02d", k);
  /* Before: k00-k07 ready, k08 running, k09 running with a job waiting
   * behind it, k10 blocked by its dead head, k11 finished. */
  jobq_session *s = th_session(t->db, 0);
  int64_t running = th_put_key(t->db, "mk", keys[8]);
  int64_t head = th_put_key(t->db, "mk", keys[9]);
  th_put_key(t->db, "mk", keys[9]);
  int64_t dead = put_full(t->db, "mk", keys[10], 0, 0, 1);
  int64_t done = th_put_key(t->db, "mk", keys[11]);
  for (int64_t id = running; id <= done; id++) {
    if (id == head + 1) continue;
    jobq_job *j = th_claim_one(s, "mk");
    if (j->id != id) fail_msg("claimed job %lld, expected %lld", (long long)j->id, (long long)id);
    if (id == dead) assert_rc(jobq_fail(s, j, "fatal"), JOBQ_OK);
    if (id == done) assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
    jobq_jobs_free(j, 1);
  }
  assert_int_equal(th_state(t->db, dead), JOBQ_STATE_DEAD);
  for (int k = 0; k < 8; k++) th_put_key(t->db, "mk", keys[k]);
  /* The batch: every key of every queue twice, the keys backwards, and a
   * job without a key after every tenth. */
  enum { N = 3 * (2 * KEYS + KEYS / 10) };
  jobq_put_opts o[N];
  int queue_of[N], key_of[N], round_of[N];
  int n = 0;
  for (int round = 0; round < 2; round++)
    for (int q = 0; q < 3; q++)
      for (int k = KEYS - 1; k >= 0; k--) {
        jobq_put_opts_init(&o[n]);
        o[n].queue = queues[q];
        o[n].key = keys[k];
        queue_of[n] = q, key_of[n] = k, round_of[n++] = round;
        if (round == 0 && k % 10 == 0) {
          jobq_put_opts_init(&o[n]);
          o[n].queue = queues[q];
          queue_of[n] = q, key_of[n] = -1, round_of[n++] = round;
        }
      }
  assert_int_equal(n, N);
  int64_t ids[N];
  assert_rc(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  for (int i = 0; i < N; i++) {
    int runs = key_of[i] < 0 || (round_of[i] == 0 && (queue_of[i] > 0 || key_of[i] >= 11));
    int want = runs ? JOBQ_STATE_READY : JOBQ_STATE_WAITING;
    if (th_state(t->db, ids[i]) != want)
      fail_msg("job %d (%s/%s) is %s, expected %s", i, queues[queue_of[i]],
               key_of[i] < 0 ? "-" : keys[key_of[i]], jobq_state_name(th_state(t->db, ids[i])),
               jobq_state_name(want));
  }
  /* Each key of "mk.x" hands on to its second job, all completed in one
   * batch. */
  size_t got;
  jobq_job *j = th_claim(s, "mk.x", 1000, &got);
  assert_int_equal(got, KEYS + KEYS / 10);
  th_complete_many(s, j, got);
  j = th_claim(s, "mk.x", 1000, &got);
  assert_int_equal(got, KEYS);
  for (size_t k = 0; k < got; k++) {
    int i = 0;
    while (ids[i] != j[k].id) i++;
    assert_int_equal(queue_of[i], 1);
    assert_int_equal(round_of[i], 1);
  }
  complete_all(s, j, got);
  jobq_session_close(s);
}

/* ---------------------------------------------------------------- a race */

/* Producers put batches of jobs over a few keys (and some without) while
 * workers claim and complete them, each on its own connection, and send
 * one keyed job in four back once (a retry, in the batch of completions).
 * Checked throughout: no key ever has two active jobs; each key's jobs
 * are claimed in the order put; every job ends done once and none is
 * left waiting. */
enum { RACE_KEYS = 4, RACE_PRODUCERS = 2, RACE_BATCHES = 25, RACE_BATCH = 20,
       RACE_WORKERS = 3, RACE_JOBS = RACE_PRODUCERS * RACE_BATCHES * RACE_BATCH };

typedef struct race {
  const char *url;
  pthread_mutex_t mu;
  int64_t last[RACE_KEYS];  /* the last job of each key claimed */
  int done, producers_left;
  char failure[256];        /* the first failure, "" while none */
} race;

static void race_fail(race *r, const char *fmt, ...) {
  pthread_mutex_lock(&r->mu);
  if (r->failure[0] == '\0') {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof r->failure, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&r->mu);
}

static int race_over(race *r) {
  pthread_mutex_lock(&r->mu);
  int over = r->failure[0] != '\0' || r->done == RACE_JOBS;
  pthread_mutex_unlock(&r->mu);
  return over;
}

static const char *const race_keys[RACE_KEYS] = {"k0", "k1", "k2", "k3"};

static void *race_producer(void *arg) {
  race *r = arg;
  jobq *db;
  if (jobq_open(r->url, &db) != JOBQ_OK) {
    race_fail(r, "a producer could not open the queue");
    return NULL;
  }
  unsigned seed = (unsigned)(uintptr_t)&db;
  for (int b = 0; b < RACE_BATCHES && !race_over(r); b++) {
    jobq_put_opts o[RACE_BATCH];
    int64_t ids[RACE_BATCH];
    for (int i = 0; i < RACE_BATCH; i++) {
      jobq_put_opts_init(&o[i]);
      o[i].queue = "race";
      int k = rand_r(&seed) % (RACE_KEYS + 1);
      o[i].key = k < RACE_KEYS ? race_keys[k] : NULL;
    }
    int rc = jobq_put_many(db, o, RACE_BATCH, ids, NULL);
    if (rc != JOBQ_OK) race_fail(r, "put: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  }
  jobq_close(db);
  pthread_mutex_lock(&r->mu);
  r->producers_left--;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void *race_worker(void *arg) {
  race *r = arg;
  jobq *db;
  jobq_session *s = NULL;
  if (jobq_open(r->url, &db) != JOBQ_OK) {
    race_fail(r, "a worker could not open the queue");
    return NULL;
  }
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.lease_ms = 120000; /* no heartbeats: as long as the test may take */
  int rc = jobq_session_open(db, &so, &s);
  if (rc != JOBQ_OK) race_fail(r, "session: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  const char *queue = "race";
  while (rc == JOBQ_OK && !race_over(r)) {
    jobq_job *jobs;
    size_t n;
    if ((rc = jobq_claim(s, &queue, 1, 5, &jobs, &n)) != JOBQ_OK) {
      race_fail(r, "claim: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
      break;
    }
    jobq_ack acks[5];
    pthread_mutex_lock(&r->mu);
    int done = 0;
    for (size_t i = 0; i < n; i++) {
      int back = jobs[i].key != NULL && jobs[i].attempt == 1 && jobs[i].id % 4 == 0;
      jobq_ack_init(&acks[i], &jobs[i], back ? JOBQ_ACK_RETRY : JOBQ_ACK_COMPLETE);
      acks[i].retry_in_ms = 0;
      done += !back;
      if (jobs[i].key == NULL) continue;
      /* A job sent back is its key's head still, and comes again. */
      int k = jobs[i].key[1] - '0';
      if ((jobs[i].id < r->last[k] || (jobs[i].id == r->last[k] && jobs[i].attempt == 1)) &&
          r->failure[0] == '\0')
        snprintf(r->failure, sizeof r->failure, "job %lld of key %s claimed after job %lld",
                 (long long)jobs[i].id, jobs[i].key, (long long)r->last[k]);
      r->last[k] = jobs[i].id;
    }
    pthread_mutex_unlock(&r->mu);
    if (n > 0 && (rc = jobq_ack_many(s, acks, n)) != JOBQ_OK)
      race_fail(r, "ack: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
    for (size_t i = 0; i < n && rc == JOBQ_OK; i++)
      if (acks[i].status != JOBQ_OK) race_fail(r, "job %lld's ack was lost", (long long)acks[i].id);
    jobq_jobs_free(jobs, n);
    pthread_mutex_lock(&r->mu);
    r->done += done;
    pthread_mutex_unlock(&r->mu);
    if (n == 0) th_sleep_ms(2);
  }
  jobq_session_close(s);
  jobq_close(db);
  return NULL;
}

/* A put of a job of a key whose head is finishing in a transaction not
 * committed yet waits for it (the key's lock), then finds the key free:
 * deciding at once, it saw the head still there and waited behind it, and
 * the head's finish, which could not see the new job, handed the key on
 * to no one. */
typedef struct put_after {
  const char *url;
  volatile int done;
  int rc;
  int64_t ids[2];
} put_after;

static void *put_after_head(void *arg) {
  put_after *p = arg;
  jobq *db;
  if ((p->rc = jobq_open(p->url, &db)) == JOBQ_OK) {
    static const char *const keys[] = {"other", "k"};
    jobq_put_opts o[2];
    for (int i = 0; i < 2; i++) {
      jobq_put_opts_init(&o[i]);
      o[i].queue = "q";
      o[i].key = keys[i];
    }
    p->rc = jobq_put_many(db, o, 2, p->ids, NULL);
    jobq_close(db);
  }
  p->done = 1;
  return NULL;
}

static void test_a_put_waits_for_its_keys_finish(void **state) {
  tq *t = *state;
  int64_t head = th_put_key(t->db, "q", "k");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, head);
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  put_after p = {.url = t->url};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, put_after_head, &p), 0);
  th_sleep_ms(300);
  int waited = !p.done;
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  pthread_join(th, NULL);
  assert_rc(p.rc, JOBQ_OK);
  assert_true(waited);
  assert_int_equal(th_state(t->db, p.ids[1]), JOBQ_STATE_READY);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* The server's count of deadlocks so far (SQLite: none; PostgreSQL: of
 * the database, as far as its backends have reported them). */
static int64_t deadlocks(jobq *db) {
  if (th_is_sqlite()) return 0;
  if (th_is_mysql())
    return th_sql_int(db, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
                          "VARIABLE_NAME = 'INNODB_DEADLOCKS'");
  th_sql_int(db, "SELECT 1 FROM pg_stat_clear_snapshot()");
  return th_sql_int(db, "SELECT deadlocks FROM pg_stat_database WHERE datname = "
                        "current_database()");
}

/* A batch that completes a job of key b and fails one of key a to dead,
 * while a put transaction holds key a's lock and then takes b's: the
 * batch takes a's lock before b's, waits for the put, and nothing
 * deadlocks.  (Completed in one statement with b's lock taken first, and
 * the failure's a after it, the two deadlocked.) */
typedef struct ack_after {
  jobq_session *s;
  jobq_ack acks[2];
  int rc;
} ack_after;

static void *ack_batch(void *arg) {
  ack_after *a = arg;
  a->rc = jobq_ack_many(a->s, a->acks, 2);
  return NULL;
}

static void test_a_batch_finishes_keys_in_lock_order(void **state) {
  tq *t = *state;
  int64_t a = put_full(t->db, "q", "a", 0, 0, 1), b = th_put_key(t->db, "q", "b");
  jobq *w = th_open(t->url);
  ack_after acks = {.s = th_session(w, 60000)};
  size_t n;
  jobq_job *j = th_claim(acks.s, "q", 2, &n);
  assert_int_equal(n, 2);
  int ia = j[0].id == a ? 0 : 1;
  jobq_ack_init(&acks.acks[0], &j[1 - ia], JOBQ_ACK_COMPLETE);
  jobq_ack_init(&acks.acks[1], &j[ia], JOBQ_ACK_FAIL);
  int64_t before = deadlocks(t->db);
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  int64_t a2 = th_put_key(t->db, "q", "a");
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, ack_batch, &acks), 0);
  th_sleep_ms(300);
  int64_t b2 = th_put_key(t->db, "q", "b");
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  pthread_join(th, NULL);
  assert_rc(acks.rc, JOBQ_OK);
  assert_rc(acks.acks[0].status, JOBQ_OK);
  assert_rc(acks.acks[1].status, JOBQ_OK);
  assert_int_equal(th_state(t->db, b), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, a), JOBQ_STATE_DEAD);
  /* a is blocked by its dead head; b's next job runs. */
  assert_int_equal(th_state(t->db, a2), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, b2), JOBQ_STATE_READY);
  th_sleep_ms(500);
  int64_t deadlocked = deadlocks(t->db) - before;
  if (deadlocked > 0) fail_msg("%lld transactions deadlocked", (long long)deadlocked);
  jobq_jobs_free(j, n);
  jobq_session_close(acks.s);
  jobq_close(w);
}

static void test_keys_under_concurrent_puts_and_finishes(void **state) {
  tq *t = *state;
  int64_t deadlocks_before = deadlocks(t->db);
  race r = {.url = t->url, .producers_left = RACE_PRODUCERS};
  pthread_mutex_init(&r.mu, NULL);
  pthread_t th[RACE_PRODUCERS + RACE_WORKERS];
  for (int i = 0; i < RACE_PRODUCERS + RACE_WORKERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, i < RACE_PRODUCERS ? race_producer : race_worker,
                                    &r),
                     0);
  /* Looked at from a connection of its own, throughout. */
  int64_t deadline = th_now_ms() + 120000, looks = 0, twice = 0;
  while (!race_over(&r) && th_now_ms() < deadline) {
    int64_t n = th_sql_int(t->db, "SELECT count(*) FROM (SELECT order_key FROM jobq_jobs WHERE "
                                  "queue = 'race' AND order_key IS NOT NULL AND state IN "
                                  "('ready', 'running') GROUP BY order_key HAVING count(*) > 1) x");
    if (n > 0 && twice == 0) twice = n;
    looks++;
  }
  if (!race_over(&r)) race_fail(&r, "%d of %d jobs done after 120 s", r.done, RACE_JOBS);
  for (int i = 0; i < RACE_PRODUCERS + RACE_WORKERS; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&r.mu);
  if (r.failure[0] != '\0') fail_msg("%s", r.failure);
  if (twice > 0) fail_msg("%lld keys had two active jobs at once", (long long)twice);
  /* Puts and acknowledgements take the keys' locks in one order, and
   * add to the counters after them: none deadlocked (each would have run
   * again).  The threads' backends report theirs as they end. */
  th_sleep_ms(500);
  int64_t deadlocked = deadlocks(t->db) - deadlocks_before;
  if (deadlocked > 0) fail_msg("%lld transactions deadlocked", (long long)deadlocked);
  assert_true(looks > 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'race'"), 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(DISTINCT id) FROM jobq_done WHERE queue = "
                                     "'race' AND outcome = 'done'"),
                   RACE_JOBS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_key_one_at_a_time),
      TQ_TEST(test_ack_claim_takes_the_keys_next_job),
      TQ_TEST(test_key_order_beats_priority),
      TQ_TEST(test_key_head_retry_and_release),
      TQ_TEST(test_dead_head_blocks_until_retry),
      TQ_TEST(test_dead_head_blocks_until_cancel),
      TQ_TEST(test_dead_head_skip_policy),
      TQ_TEST(test_cancel_waiting_keyed),
      TQ_TEST(test_barrier),
      TQ_TEST(test_barrier_waits_for_retries),
      TQ_TEST(test_cancel_barrier),
      TQ_TEST(test_two_barriers),
      TQ_TEST(test_retry_into_busy_key),
      TQ_TEST(test_key_waits_for_delayed_head),
      TQ_TEST(test_barrier_after_waiting_keys),
      TQ_TEST(test_keys_compare_bytes),
      TQ_TEST(test_keyed_jobs_in_one_batch),
      TQ_TEST(test_mixed_batch),
      TQ_TEST(test_mixed_batch_with_barrier),
      TQ_TEST(test_batch_waits_for_what_is_there),
      TQ_TEST(test_batch_hands_on_only_keys_with_jobs_behind),
      TQ_TEST(test_many_keys_in_one_batch),
      TQ_TEST(test_a_put_waits_for_its_keys_finish),
      TQ_TEST(test_keys_under_concurrent_puts_and_finishes),
      TQ_TEST(test_a_batch_finishes_keys_in_lock_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
