/*
 * test_admin.c - the operator's calls and the database's identity: cancel,
 * retry and retry of every dead job, pause and resume, stats for every
 * state, list with filters and paging, show, prune, purge of a queue, the
 * identity triple
 * (queue_id, epoch, seq) and epoch bumps, refusal to claim from a database
 * restored from an older backup, refusal of a newer schema, and
 * transactions that put or acknowledge together with the caller's own
 * statements.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>


/* Claims one job from queue and fails it for good (max_attempts 1). */
static int64_t make_dead(jobq *db, jobq_session *s, const char *queue) {
  int64_t id = th_put_attempts(db, queue, 1);
  jobq_job *j = th_claim_one(s, queue);
  assert_int_equal(j->id, id);
  assert_rc(jobq_fail(s, j, "broken"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(db, id), JOBQ_STATE_DEAD);
  return id;
}

static int64_t make_done(jobq *db, jobq_session *s, const char *queue) {
  int64_t id = th_put(db, queue, NULL);
  jobq_job *j = th_claim_one(s, queue);
  assert_int_equal(j->id, id);
  assert_rc(jobq_complete(s, j, "r", 1, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  return id;
}

static void test_cancel(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t done = make_done(t->db, s, "q");
  int64_t dead = make_dead(t->db, s, "q");
  int64_t ready = th_put(t->db, "q", NULL);
  int64_t head = th_put_key(t->db, "q", "k");
  int64_t waiting = th_put_key(t->db, "q", "k");
  int64_t scheduled = 0;
  {
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = "q";
    o.delay_ms = 60000;
    scheduled = th_put_opts(t->db, &o);
  }

  int now = 9;
  assert_rc(jobq_cancel(t->db, ready, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  assert_rc(jobq_cancel(t->db, waiting, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  assert_rc(jobq_cancel(t->db, scheduled, &now), JOBQ_OK);
  assert_int_equal(now, 1);
  jobq_job_info *i = th_show(t->db, ready);
  assert_int_equal(i->state, JOBQ_STATE_CANCELLED);
  assert_true(i->finished_at_ms > 0);
  jobq_info_free(i, 1);
  assert_int_equal(th_state(t->db, waiting), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, scheduled), JOBQ_STATE_CANCELLED);

  /* Running: a request, the job keeps running. */
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, head);
  now = 9;
  assert_rc(jobq_cancel(t->db, head, &now), JOBQ_OK);
  assert_int_equal(now, 0);
  i = th_show(t->db, head);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_int_equal(i->cancel_requested, 1);
  jobq_info_free(i, 1);
  /* Asking twice is fine. */
  assert_rc(jobq_cancel(t->db, head, NULL), JOBQ_OK);

  /* Finished jobs cannot be cancelled (a dead job that blocks nothing
   * included); unknown ids are not found. */
  assert_rc(jobq_cancel(t->db, done, &now), JOBQ_ESTATE);
  assert_rc(jobq_cancel(t->db, ready, &now), JOBQ_ESTATE);
  assert_rc(jobq_cancel(t->db, dead, &now), JOBQ_ESTATE);
  assert_rc(jobq_cancel(t->db, 999999, &now), JOBQ_ENOTFOUND);
  assert_int_equal(th_state(t->db, done), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, dead), JOBQ_STATE_DEAD);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_retry(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.max_attempts = 2;
  o.payload = "keep me";
  o.payload_len = 7;
  int64_t dead = th_put_opts(t->db, &o);
  for (int k = 0; k < 2; k++) {
    jobq_job *j = th_claim_one(s, "q");
    jobq_ack a;
    jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
    a.retry_in_ms = 0;
    a.data = "nope";
    a.len = 4;
    assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
    jobq_jobs_free(j, 1);
  }
  assert_int_equal(th_state(t->db, dead), JOBQ_STATE_DEAD);

  assert_rc(jobq_retry(t->db, dead), JOBQ_OK);
  jobq_job_info *i = th_show(t->db, dead);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->attempts, 0);
  assert_int_equal(i->max_attempts, 2);
  assert_int_equal(i->payload_len, 7);
  assert_memory_equal(i->payload, "keep me", 7);
  assert_true(i->run_at_ms <= th_db_now(t->db));
  jobq_info_free(i, 1);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, dead);
  assert_int_equal(j->attempt, 1);
  /* Running and ready jobs are not retried. */
  assert_rc(jobq_retry(t->db, dead), JOBQ_ESTATE);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  /* Nor done ones. */
  assert_rc(jobq_retry(t->db, dead), JOBQ_ESTATE);
  assert_int_equal(th_state(t->db, dead), JOBQ_STATE_DONE);
  int64_t ready = th_put(t->db, "q", NULL);
  assert_rc(jobq_retry(t->db, ready), JOBQ_ESTATE);
  assert_rc(jobq_retry(t->db, 999999), JOBQ_ENOTFOUND);

  /* A cancelled job comes back too. */
  assert_rc(jobq_cancel(t->db, ready, NULL), JOBQ_OK);
  assert_rc(jobq_retry(t->db, ready), JOBQ_OK);
  assert_int_equal(th_state(t->db, ready), JOBQ_STATE_READY);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, ready);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_retry_dead(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t d1[3];
  for (int k = 0; k < 3; k++) d1[k] = make_dead(t->db, s, "q1");
  int64_t d2 = make_dead(t->db, s, "q2");
  int64_t done = make_done(t->db, s, "q1");
  int64_t cancelled = th_put(t->db, "q1", NULL);
  assert_rc(jobq_cancel(t->db, cancelled, NULL), JOBQ_OK);

  int64_t count = -1;
  assert_rc(jobq_retry_dead(t->db, "q1", &count), JOBQ_OK);
  assert_int_equal(count, 3);
  for (int k = 0; k < 3; k++) assert_int_equal(th_state(t->db, d1[k]), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, d2), JOBQ_STATE_DEAD);
  assert_int_equal(th_state(t->db, done), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, cancelled), JOBQ_STATE_CANCELLED);

  assert_rc(jobq_retry_dead(t->db, NULL, &count), JOBQ_OK);
  assert_int_equal(count, 1);
  assert_int_equal(th_state(t->db, d2), JOBQ_STATE_READY);
  assert_rc(jobq_retry_dead(t->db, NULL, &count), JOBQ_OK);
  assert_int_equal(count, 0);
  assert_rc(jobq_retry_dead(t->db, "Bad;Name", &count), JOBQ_EINVAL);
  jobq_session_close(s);
}

/* A dead job of queue "m" with key (NULL: none), unique key and barrier
 * as given, made dead by its one failed attempt. */
static int64_t make_dead_with(jobq *db, jobq_session *s, const char *key, const char *unique,
                              int barrier) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "m";
  o.key = key;
  o.unique_key = unique;
  o.barrier = barrier;
  o.max_attempts = 1;
  int64_t id = th_put_opts(db, &o);
  jobq_job *j = th_claim_one(s, "m");
  assert_int_equal(j->id, id);
  assert_rc(jobq_fail(s, j, "broken"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(db, id), JOBQ_STATE_DEAD);
  return id;
}

/* Dead jobs of every kind retried together keep the queue's order as
 * retrying them one by one in id order does: the plain ones go back at
 * once (on every store in one statement), a keyed and a unique one are
 * ready, a barrier waits for the jobs before it, and a plain job after
 * the barrier waits for the barrier. */
static void test_retry_dead_mixed(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t plain = make_dead_with(t->db, s, NULL, NULL, 0);
  int64_t keyed = make_dead_with(t->db, s, "k", NULL, 0);
  int64_t unique = make_dead_with(t->db, s, NULL, "u", 0);
  int64_t plain2 = make_dead_with(t->db, s, NULL, NULL, 0);
  int64_t barrier = make_dead_with(t->db, s, NULL, NULL, 1);
  int64_t after = make_dead_with(t->db, s, NULL, NULL, 0);
  int64_t count = -1;
  assert_rc(jobq_retry_dead(t->db, "m", &count), JOBQ_OK);
  assert_int_equal(count, 6);
  th_assert_counts_agree(t->db);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DEAD), 0);
  const int64_t first[] = {plain, keyed, unique, plain2};
  for (int k = 0; k < 4; k++) assert_int_equal(th_state(t->db, first[k]), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, barrier), JOBQ_STATE_WAITING);
  assert_int_equal(th_state(t->db, after), JOBQ_STATE_WAITING);

  /* They run in that order: the four, then the barrier, then the last. */
  size_t n;
  jobq_job *j = th_claim(s, "m", 10, &n);
  assert_int_equal(n, 4);
  th_complete_many(s, j, n);
  jobq_job *b = th_claim(s, "m", 10, &n);
  assert_int_equal(n, 1);
  assert_int_equal(b->id, barrier);
  th_complete_many(s, b, n);
  jobq_job *l = th_claim(s, "m", 10, &n);
  assert_int_equal(n, 1);
  assert_int_equal(l->id, after);
  th_complete_many(s, l, n);
  jobq_session_close(s);
}

/* Many dead jobs are retried a part at a time (1000 a transaction), in
 * every queue, each once, and the counters follow. */
static void test_retry_dead_in_parts(void **state) {
  tq *t = *state;
  enum { JOBS = 2500 };
  th_put_many(t->db, "many", JOBS, 1);
  jobq_session *s = th_session(t->db, 0);
  for (size_t done = 0; done < JOBS;) {
    size_t n = 0;
    jobq_job *jobs = th_claim(s, "many", 1000, &n);
    assert_true(n > 0);
    jobq_ack *acks = calloc(n, sizeof *acks);
    assert_non_null(acks);
    for (size_t k = 0; k < n; k++) jobq_ack_init(&acks[k], &jobs[k], JOBQ_ACK_FAIL);
    assert_rc(jobq_ack_many(s, acks, n), JOBQ_OK);
    free(acks);
    jobq_jobs_free(jobs, n);
    done += n;
  }
  int64_t other = make_dead(t->db, s, "other");
  jobq_session_close(s);
  th_assert_counts_agree(t->db);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DEAD), JOBS + 1);

  int64_t count = -1;
  assert_rc(jobq_retry_dead(t->db, NULL, &count), JOBQ_OK);
  assert_int_equal(count, JOBS + 1);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DEAD), 0);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), JOBS + 1);
  assert_int_equal(th_state(t->db, other), JOBQ_STATE_READY);
  th_assert_counts_agree(t->db);
}

static jobq_queue_stats *find_stats(jobq_queue_stats *st, size_t n,
                                    const char *name) {
  for (size_t k = 0; k < n; k++)
    if (strcmp(st[k].name, name) == 0) return &st[k];
  fail_msg("queue '%s' not in stats", name);
  return NULL;
}

static void test_stats_every_state(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  make_done(t->db, s, "s");
  make_done(t->db, s, "s");
  make_dead(t->db, s, "s");
  int64_t c = th_put(t->db, "s", NULL);
  assert_rc(jobq_cancel(t->db, c, NULL), JOBQ_OK);
  th_put_key(t->db, "s", "k");
  jobq_job *j = th_claim_one(s, "s"); /* running, holds key k */
  th_put_key(t->db, "s", "k");        /* waiting */
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "s";
  o.delay_ms = 60000;
  th_put_opts(t->db, &o); /* scheduled */
  th_put(t->db, "s", NULL);
  th_put(t->db, "s", NULL); /* two ready */
  th_put(t->db, "other", NULL);
  th_sleep_ms(250);

  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(n, 2);
  /* By name. */
  assert_string_equal(st[0].name, "other");
  assert_string_equal(st[1].name, "s");
  jobq_queue_stats *q = find_stats(st, n, "s");
  assert_int_equal(q->ready, 2);
  assert_int_equal(q->scheduled, 1);
  assert_int_equal(q->waiting, 1);
  assert_int_equal(q->running, 1);
  assert_int_equal(q->done, 2);
  assert_int_equal(q->dead, 1);
  assert_int_equal(q->cancelled, 1);
  assert_int_equal(q->paused, 0);
  assert_string_equal(q->key_policy, "block");
  assert_in_range(q->oldest_ready_ms, 200, 60000);
  q = find_stats(st, n, "other");
  assert_int_equal(q->ready, 1);
  assert_int_equal(q->done + q->dead + q->cancelled + q->running, 0);
  jobq_stats_free(st, n);
  jobq_stats_free(NULL, 0);

  /* Paused shows; an empty queue has no oldest ready job. */
  assert_rc(jobq_pause(t->db, "other"), JOBQ_OK);
  size_t m;
  jobq_job *all = th_claim(s, "s", 10, &m);
  assert_int_equal(m, 2);
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  q = find_stats(st, n, "other");
  assert_int_equal(q->paused, 1);
  q = find_stats(st, n, "s");
  assert_int_equal(q->ready, 0);
  assert_int_equal(q->running, 3);
  assert_int_equal(q->oldest_ready_ms, 0);
  jobq_stats_free(st, n);
  assert_rc(jobq_resume(t->db, "other"), JOBQ_OK);
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(find_stats(st, n, "other")->paused, 0);
  jobq_stats_free(st, n);
  assert_rc(jobq_pause(t->db, "No Such"), JOBQ_EINVAL);
  assert_rc(jobq_resume(t->db, ""), JOBQ_EINVAL);
  jobq_jobs_free(all, m);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* The per-queue counts stats keeps for archived jobs agree with the jobs
 * themselves after every kind of move in and out of the archive. */
static void test_stats_counts_follow_moves(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t dead1 = make_dead(t->db, s, "q");
  make_dead(t->db, s, "q");
  make_dead(t->db, s, "r");
  make_done(t->db, s, "q");
  int64_t c = th_put(t->db, "q", NULL);
  assert_rc(jobq_cancel(t->db, c, NULL), JOBQ_OK);
  th_assert_counts_agree(t->db);
  assert_rc(jobq_retry(t->db, dead1), JOBQ_OK);
  th_assert_counts_agree(t->db);
  assert_rc(jobq_retry(t->db, c), JOBQ_OK);
  th_assert_counts_agree(t->db);
  int64_t count;
  assert_rc(jobq_retry_dead(t->db, NULL, &count), JOBQ_OK);
  assert_int_equal(count, 2);
  th_assert_counts_agree(t->db);
  /* A dead head that blocks its key, cancelled. */
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.key = "k";
  o.max_attempts = 1;
  int64_t head = th_put_opts(t->db, &o);
  th_put_opts(t->db, &o);
  size_t n;
  jobq_job *all = th_claim(s, "q", 20, &n);
  for (size_t k = 0; k < n; k++) {
    if (all[k].id == head) {
      assert_rc(jobq_fail(s, &all[k], "x"), JOBQ_OK);
    } else {
      assert_rc(jobq_complete(s, &all[k], NULL, 0, NULL), JOBQ_OK);
    }
  }
  jobq_jobs_free(all, n);
  th_assert_counts_agree(t->db);
  assert_rc(jobq_cancel(t->db, head, NULL), JOBQ_OK);
  th_assert_counts_agree(t->db);
  th_sleep_ms(10);
  assert_rc(jobq_prune(t->db, 0, &count), JOBQ_OK);
  assert_true(count > 0);
  th_assert_counts_agree(t->db);
  jobq_session_close(s);
}

static void test_list(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t done = make_done(t->db, s, "a");
  int64_t dead = make_dead(t->db, s, "a");
  int64_t ready[7];
  for (int k = 0; k < 7; k++) ready[k] = th_put(t->db, k % 2 ? "b" : "a", "pay");
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "a";
  o.delay_ms = 60000;
  int64_t later = th_put_opts(t->db, &o);

  jobq_list_opts lo;
  memset(&lo, 0, sizeof lo);
  jobq_job_info *infos = NULL;
  size_t n = 0;
  /* Everything, by id, payloads left out. */
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 10);
  for (size_t k = 1; k < n; k++) assert_true(infos[k].id > infos[k - 1].id);
  assert_int_equal(infos[0].id, done);
  assert_int_equal(infos[0].state, JOBQ_STATE_DONE);
  assert_int_equal(infos[1].id, dead);
  assert_int_equal(infos[1].state, JOBQ_STATE_DEAD);
  assert_null(infos[2].payload);
  assert_int_equal(infos[2].payload_len, 3);
  assert_null(infos[0].result);
  assert_int_equal(infos[0].result_len, 1);
  jobq_info_free(infos, n);

  /* By state and queue. */
  lo.state = JOBQ_STATE_READY;
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 8);
  jobq_info_free(infos, n);
  lo.scheduled = 1;
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(infos[0].id, later);
  jobq_info_free(infos, n);
  lo.scheduled = 0;
  lo.queue = "b";
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 3);
  for (size_t k = 0; k < n; k++) assert_string_equal(infos[k].queue, "b");
  jobq_info_free(infos, n);
  lo.queue = NULL;
  lo.state = JOBQ_STATE_DEAD;
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(infos[0].id, dead);
  assert_string_equal(infos[0].last_error, "broken");
  jobq_info_free(infos, n);
  lo.state = JOBQ_STATE_RUNNING;
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_info_free(infos, n);

  /* Paging: 3 at a time, after the last id seen. */
  memset(&lo, 0, sizeof lo);
  lo.limit = 3;
  int64_t seen[10];
  size_t total = 0;
  for (int page = 0; page < 10; page++) {
    assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
    assert_true(n <= 3);
    for (size_t k = 0; k < n; k++) {
      assert_true(total < 10);
      seen[total++] = infos[k].id;
    }
    if (n > 0) lo.after_id = infos[n - 1].id;
    jobq_info_free(infos, n);
    if (n == 0) break;
  }
  assert_int_equal(total, 10);
  assert_int_equal(seen[0], done);
  assert_int_equal(seen[2], ready[0]);
  assert_int_equal(seen[9], later);
  for (size_t k = 1; k < total; k++) assert_true(seen[k] > seen[k - 1]);
  jobq_session_close(s);
}

static void test_show(void **state) {
  tq *t = *state;
  jobq_job_info *i = NULL;
  assert_rc(jobq_show(t->db, 42, &i), JOBQ_ENOTFOUND);
  int rc = jobq_show(t->db, -1, &i);
  assert_true(rc == JOBQ_ENOTFOUND || rc == JOBQ_EINVAL);
  jobq_info_free(NULL, 0);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "sh";
  o.unique_key = "u1";
  o.barrier = 1;
  o.payload = "body";
  o.payload_len = 4;
  int64_t id = th_put_opts(t->db, &o);
  i = th_show(t->db, id);
  assert_string_equal(i->queue, "sh");
  assert_string_equal(i->unique_key, "u1");
  assert_int_equal(i->barrier, 1);
  assert_memory_equal(i->payload, "body", 4);
  assert_int_equal(((char *)i->payload)[4], '\0');
  assert_null(i->session);
  jobq_info_free(i, 1);
}

static void test_prune(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t old1 = make_done(t->db, s, "q");
  int64_t old2 = make_dead(t->db, s, "q");
  th_sleep_ms(400);
  int64_t recent = make_done(t->db, s, "q");
  int64_t pending = th_put(t->db, "q", NULL);
  th_put(t->db, "q", NULL);
  jobq_job *running = th_claim_one(s, "q");
  int64_t count = -1;
  assert_rc(jobq_prune(t->db, 200, &count), JOBQ_OK);
  assert_int_equal(count, 2);
  jobq_job_info *i = NULL;
  assert_rc(jobq_show(t->db, old1, &i), JOBQ_ENOTFOUND);
  assert_rc(jobq_show(t->db, old2, &i), JOBQ_ENOTFOUND);
  assert_int_equal(th_state(t->db, recent), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, running->id), JOBQ_STATE_RUNNING);
  int64_t other = running->id == pending ? pending + 1 : pending;
  assert_int_equal(th_state(t->db, other), JOBQ_STATE_READY);

  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(st[0].done, 1);
  assert_int_equal(st[0].dead, 0);
  jobq_stats_free(st, n);

  /* Everything finished, however recent; the unfinished stay. */
  th_sleep_ms(20);
  assert_rc(jobq_prune(t->db, 0, &count), JOBQ_OK);
  assert_int_equal(count, 1);
  assert_rc(jobq_show(t->db, recent, &i), JOBQ_ENOTFOUND);
  assert_int_equal(th_count_jobs(t->db, 0), 2);
  jobq_jobs_free(running, 1);
  jobq_session_close(s);
}

static void test_purge(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t done = make_done(t->db, s, "p");
  int64_t dead = make_dead(t->db, s, "p");
  int64_t ready = th_put(t->db, "p", NULL);
  int64_t head = th_put_key(t->db, "p", "k");
  int64_t waiting = th_put_key(t->db, "p", "k");
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "p";
  o.delay_ms = 60000;
  int64_t scheduled = th_put_opts(t->db, &o);
  int64_t other_done = make_done(t->db, s, "other");
  int64_t other = th_put(t->db, "other", NULL);
  assert_int_equal(th_state(t->db, waiting), JOBQ_STATE_WAITING);

  /* A running job of the queue: refused, nothing deleted. */
  jobq_job *running = th_claim_one(s, "p");
  int64_t count = -1;
  assert_rc(jobq_purge(t->db, "p", &count), JOBQ_EBUSY);
  th_assert_msg(t->db, "running");
  assert_int_equal(count, 0);
  assert_int_equal(th_state(t->db, done), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, scheduled), JOBQ_STATE_READY);
  assert_rc(jobq_complete(s, running, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(running, 1);

  /* 6 jobs of p: done, dead and the claimed one archived, the key's head,
   * the job waiting behind it and the scheduled one. */
  assert_rc(jobq_purge(t->db, "p", &count), JOBQ_OK);
  assert_int_equal(count, 6);
  int64_t gone[] = {done, dead, ready, head, waiting, scheduled};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
    jobq_job_info *info = NULL;
    assert_rc(jobq_show(t->db, gone[i], &info), JOBQ_ENOTFOUND);
  }
  /* Other queues are untouched, and the counters agree. */
  assert_int_equal(th_state(t->db, other), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, other_done), JOBQ_STATE_DONE);
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(st[i].name, "p") == 0) {
      assert_int_equal(st[i].ready + st[i].scheduled + st[i].waiting + st[i].running, 0);
      assert_int_equal(st[i].done + st[i].dead + st[i].cancelled, 0);
    } else {
      assert_string_equal(st[i].name, "other");
      assert_int_equal(st[i].ready, 1);
      assert_int_equal(st[i].done, 1);
    }
  }
  jobq_stats_free(st, n);
  th_assert_counts_agree(t->db);

  /* The queue still works: the key is free again. */
  int64_t again = th_put_key(t->db, "p", "k");
  assert_int_equal(th_state(t->db, again), JOBQ_STATE_READY);
  assert_rc(jobq_purge(t->db, "p", NULL), JOBQ_OK);
  assert_rc(jobq_purge(t->db, "p", &count), JOBQ_OK);
  assert_int_equal(count, 0);
  assert_rc(jobq_purge(t->db, "Bad Name", &count), JOBQ_EINVAL);
  th_assert_msg(t->db, "invalid queue name");
  jobq_session_close(s);
}

/* Counts what a bulk call's progress reported. */
static void count_progress(void *arg, int64_t done) {
  int64_t *p = arg;
  assert_true(done >= p[1]);
  p[0]++;
  p[1] = done;
}

/* jobq_cancel_jobs: a queue's jobs by state and key, a running one asked
 * to stop, the jobs behind a cancelled key head cancelled too, other
 * queues untouched, a dry run that changes nothing, parts of 1000 jobs
 * reported as they commit. */
static void test_cancel_jobs(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  int64_t ready = th_put(t->db, "c", NULL);
  int64_t head = th_put_key(t->db, "c", "k");
  int64_t waiting = th_put_key(t->db, "c", "k");
  int64_t other_key = th_put_key(t->db, "c", "other");
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "c";
  o.delay_ms = 3600000;
  int64_t scheduled = th_put_opts(t->db, &o);
  int64_t elsewhere = th_put(t->db, "d", NULL);
  jobq_job *running = th_claim_one(s, "c");
  assert_int_equal(running->id, ready);

  jobq_bulk_opts b;
  jobq_bulk_opts_init(&b);
  int64_t cancelled = -1, requested = -1;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_EINVAL);
  th_assert_msg(t->db, "missing queue");
  b.queue = "c";
  b.state = JOBQ_STATE_DONE;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_EINVAL);
  th_assert_msg(t->db, "expected ready, scheduled, running, waiting or pending");

  /* The scheduled one only, counted, then cancelled. */
  b.state = JOBQ_STATE_READY;
  b.scheduled = 1;
  b.dry_run = 1;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_OK);
  assert_int_equal(cancelled, 1);
  assert_int_equal(requested, 0);
  assert_int_equal(th_state(t->db, scheduled), JOBQ_STATE_READY);
  b.dry_run = 0;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_OK);
  assert_int_equal(cancelled, 1);
  assert_int_equal(th_state(t->db, scheduled), JOBQ_STATE_CANCELLED);

  /* Key k: its head and the job waiting behind it. */
  jobq_bulk_opts_init(&b);
  b.queue = "c";
  b.key = "k";
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_OK);
  assert_int_equal(cancelled, 2);
  assert_int_equal(th_state(t->db, head), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, waiting), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, other_key), JOBQ_STATE_READY);

  /* The rest: the running one is asked to stop. */
  b.key = NULL;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_OK);
  assert_int_equal(cancelled, 1);
  assert_int_equal(requested, 1);
  assert_int_equal(th_state(t->db, other_key), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, ready), JOBQ_STATE_RUNNING);
  int64_t *ids = NULL;
  size_t n = 0;
  assert_rc(jobq_heartbeat(s, &ids, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ids[0], ready);
  free(ids);
  assert_rc(jobq_release(s, running), JOBQ_OK);
  assert_int_equal(th_state(t->db, ready), JOBQ_STATE_CANCELLED);
  jobq_jobs_free(running, 1);
  assert_int_equal(th_state(t->db, elsewhere), JOBQ_STATE_READY);
  th_assert_counts_agree(t->db);

  /* 2500 jobs: three parts, each reported. */
  jobq_put_opts many[2500];
  int64_t mids[2500];
  for (size_t i = 0; i < 2500; i++) {
    jobq_put_opts_init(&many[i]);
    many[i].queue = "m";
  }
  assert_rc(jobq_put_many(t->db, many, 2500, mids, NULL), JOBQ_OK);
  int64_t seen[2] = {0, 0};
  jobq_bulk_opts_init(&b);
  b.queue = "m";
  b.progress = count_progress;
  b.progress_arg = seen;
  assert_rc(jobq_cancel_jobs(t->db, &b, &cancelled, &requested), JOBQ_OK);
  assert_int_equal(cancelled, 2500);
  assert_int_equal(seen[0], 3);
  assert_int_equal(seen[1], 2500);
  th_assert_counts_agree(t->db);

  /* Prune by queue: a dry run, then m's cancelled jobs, not c's. */
  jobq_bulk_opts_init(&b);
  b.queue = "m";
  b.dry_run = 1;
  int64_t count = -1;
  assert_rc(jobq_prune_jobs(t->db, 0, &b, &count), JOBQ_OK);
  assert_int_equal(count, 2500);
  b.dry_run = 0;
  assert_rc(jobq_prune_jobs(t->db, 0, &b, &count), JOBQ_OK);
  assert_int_equal(count, 2500);
  assert_int_equal(th_state(t->db, head), JOBQ_STATE_CANCELLED);
  th_assert_counts_agree(t->db);
  /* Purge's dry run counts what it would delete. */
  b.queue = "c";
  b.dry_run = 1;
  assert_rc(jobq_purge_jobs(t->db, &b, &count), JOBQ_OK);
  assert_int_equal(count, 5);
  assert_int_equal(th_state(t->db, head), JOBQ_STATE_CANCELLED);
  jobq_session_close(s);
}

static void test_identity_and_epoch(void **state) {
  tq *t = *state;
  jobq_identity a, b;
  assert_rc(jobq_identity_get(t->db, &a), JOBQ_OK);
  assert_int_equal(strlen(a.queue_id), 36);
  assert_int_equal(a.epoch, 1);
  assert_int_equal(a.seq, 0);
  assert_true(a.schema_version >= 1);
  int64_t wall = th_now_ms();
  assert_in_range(a.now_ms, wall - 5000, wall + 5000);

  int64_t id = th_put(t->db, NULL, NULL);
  int64_t id2 = th_put(t->db, NULL, NULL);
  jobq *db2 = th_open(t->url);
  assert_rc(jobq_identity_get(db2, &b), JOBQ_OK);
  assert_string_equal(b.queue_id, a.queue_id);
  assert_int_equal(b.seq, id2);
  assert_true(id2 > id);

  /* A session of epoch 1 holds a job; the bump ends it. */
  jobq_session *s = th_session(db2, 0);
  jobq_job *j = th_claim_one(s, NULL);
  /* Epochs only rise (by how much is the library's choice). */
  int64_t epoch = 0;
  assert_rc(jobq_epoch_bump(t->db, &epoch), JOBQ_OK);
  assert_true(epoch > a.epoch);
  assert_rc(jobq_identity_get(t->db, &b), JOBQ_OK);
  assert_int_equal(b.epoch, epoch);
  assert_string_equal(b.queue_id, a.queue_id);
  assert_int_equal(th_state(t->db, j->id), JOBQ_STATE_READY);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_EEXPIRED);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_ELOST);
  jobq_job *none = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, NULL, 0, 1, &none, &n), JOBQ_EEXPIRED);
  jobq_session_info *si = NULL;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_sessions_free(si, n);
  jobq_session_close(s);
  jobq_jobs_free(j, 1);

  /* A new session is of the new epoch and claims normally. */
  s = th_session(db2, 0);
  j = th_claim_one(s, NULL);
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(si[0].epoch, epoch);
  jobq_sessions_free(si, n);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_rc(jobq_epoch_bump(t->db, NULL), JOBQ_OK);
  assert_rc(jobq_identity_get(db2, &b), JOBQ_OK);
  assert_true(b.epoch > epoch);
  epoch = b.epoch;
  /* The old session is over for the second bump too. */
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_EEXPIRED);
  jobq_session_close(s);
  jobq_close(db2);

  /* The identity survives reopening. */
  jobq_close(t->db);
  t->db = th_open(t->url);
  assert_rc(jobq_identity_get(t->db, &b), JOBQ_OK);
  assert_string_equal(b.queue_id, a.queue_id);
  assert_int_equal(b.epoch, epoch);
  assert_int_equal(b.seq, id2);
}

static void test_restore_from_backup(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  th_put(t->db, "q", NULL);
  th_put(t->db, "q", NULL);

  /* The backup, taken with two jobs and the session. */
  th_backup(t, "backup");

  /* Life goes on: more jobs, a claim that sees the higher sequence. */
  for (int k = 0; k < 3; k++) th_put(t->db, "q", NULL);
  jobq_job *j = th_claim_one(s, "q");
  jobq_jobs_free(j, 1);
  jobq_identity before;
  assert_rc(jobq_identity_get(t->db, &before), JOBQ_OK);
  assert_int_equal(before.seq, 5);

  /* The database is restored under the live handle. */
  th_restore(t, "backup");

  jobq_job *jobs = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, NULL, 0, 5, &jobs, &n), JOBQ_EIDENTITY);
  assert_int_equal(n, 0);
  assert_true(strlen(jobq_errmsg(t->db)) > 0);
  jobq_session *s2 = NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  assert_rc(jobq_session_open(t->db, &so, &s2), JOBQ_EIDENTITY);
  jobq_session_close(s2);
  s2 = NULL;
  /* Still refused on a second try: it does not heal by itself. */
  assert_rc(jobq_claim(s, NULL, 0, 5, &jobs, &n), JOBQ_EIDENTITY);

  /* The operator bumps the epoch: the old session is over, a new one
   * claims what the backup holds. */
  int64_t epoch = 0;
  assert_rc(jobq_epoch_bump(t->db, &epoch), JOBQ_OK);
  assert_true(epoch > before.epoch);
  assert_rc(jobq_claim(s, NULL, 0, 5, &jobs, &n), JOBQ_EEXPIRED);
  jobq_session_close(s);
  s2 = th_session(t->db, 0);
  jobs = th_claim(s2, "q", 10, &n);
  assert_int_equal(n, 2);
  jobq_jobs_free(jobs, n);
  /* Puts work again too. */
  int64_t id = th_put(t->db, "q", NULL);
  assert_true(id > 2);
  jobq_session_close(s2);
}

static void test_other_database_refused(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  th_put(t->db, "q", NULL);
  jobq_job *j = th_claim_one(s, "q");
  jobq_jobs_free(j, 1);

  /* Another queue database (its own queue_id) copied over this one. */
  char ourl[sizeof t->url];
  th_new_db(t->dir, "other", ourl, sizeof ourl);
  jobq *other = th_open(ourl);
  for (int k = 0; k < 5; k++) th_put(other, "q", NULL);
  th_swap_in(t, other, ourl);
  jobq_close(other);

  /* Its session row is not in the other database either, so a claim may
   * say either; it must not hand out the other database's jobs. */
  jobq_job *jobs = NULL;
  size_t n = 0;
  int rc = jobq_claim(s, NULL, 0, 5, &jobs, &n);
  assert_true(rc == JOBQ_EIDENTITY || rc == JOBQ_EEXPIRED);
  assert_int_equal(n, 0);
  jobq_session *s2 = NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  assert_rc(jobq_session_open(t->db, &so, &s2), JOBQ_EIDENTITY);
  jobq_session_close(s2);
  jobq_session_close(s);
}

static void test_newer_schema_refused(void **state) {
  tq *t = *state;
  th_put(t->db, NULL, NULL);
  assert_int_equal(th_sql(t->db, "UPDATE jobq_meta SET version = 999"), 0);
  assert_rc(jobq_init(t->db), JOBQ_ESCHEMA);
  assert_true(strlen(jobq_errmsg(t->db)) > 0);
  jobq_close(t->db);
  t->db = NULL;
  jobq *db = NULL;
  assert_rc(jobq_open(t->url, &db), JOBQ_ESCHEMA);
  assert_non_null(db);
  const char *msg = jobq_errmsg(db);
  assert_true(strstr(msg, "999") != NULL || strstr(msg, "newer") != NULL);
  jobq_close(db);
}

/* The jobs of queue counted done in jobq_counts. */
static int64_t done_counted(jobq *db, const char *queue) {
  char sql[200];
  snprintf(sql, sizeof sql,
           "SELECT coalesce(sum(n_done), 0) FROM jobq_counts WHERE queue = '%s'", queue);
  return th_sql_int(db, sql);
}

/* The finished jobs of queue as jobq_stats() counts them. */
static int64_t done_stats(jobq *db, const char *queue) {
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(db, &st, &n), JOBQ_OK);
  int64_t done = -1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(st[i].name, queue) == 0) done = st[i].done;
  jobq_stats_free(st, n);
  return done;
}

/* The counter rows of session sid. */
static int64_t session_counted(jobq *db, const char *sid) {
  char sql[200];
  snprintf(sql, sizeof sql,
           "SELECT coalesce(sum(n_done), 0) FROM jobq_counts WHERE session = '%s'", sid);
  return th_sql_int(db, sql);
}

/* Each session counts its finished jobs in rows of its own, so that no
 * two wait on one row: an acknowledgement goes through while every
 * other row of its queue is locked.  An ended session's rows are folded
 * into its ender's, and every count stays exact. */
static void test_counts_by_session(void **state) {
  tq *t = *state;
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 0);
  jobq_session *b = th_session(db2, 250);
  for (int i = 0; i < 5; i++) th_put(t->db, "cq", "p");
  /* The shared rows of the queue, made for the locks below. */
  for (int shard = 0; shard < 16 && !th_is_sqlite(); shard++) {
    char sql[200];
    snprintf(sql, sizeof sql,
             "INSERT INTO jobq_counts(queue, shard, n_done, n_dead, n_cancelled) "
             "VALUES ('cq', %d, 0, 0, 0)", shard);
    assert_int_equal(th_sql(t->db, sql), 0);
  }
  jobq_job *j = th_claim_one(b, "cq");
  th_complete_many(b, j, 1);

  j = th_claim_one(a, "cq");
  if (!th_is_sqlite()) {
    /* Every row of the queue there is locked by another transaction:
     * a's acknowledgement does not wait.  A lock timeout turns a wait
     * into a failure. */
    assert_int_equal(th_sql(t->db, th_is_mysql() ? "SET SESSION innodb_lock_wait_timeout = 3"
                                                 : "SET lock_timeout = '3s'"), 0);
    jobq *locker = th_open(t->url);
    assert_rc(jobq_begin(locker), JOBQ_OK);
    assert_int_equal(th_sql(locker, "UPDATE jobq_counts SET n_done = n_done WHERE queue = 'cq'"),
                     0);
    assert_rc(jobq_complete(a, j, NULL, 0, NULL), JOBQ_OK);
    assert_rc(jobq_rollback(locker), JOBQ_OK);
    jobq_close(locker);
    jobq_jobs_free(j, 1);
  } else {
    th_complete_many(a, j, 1);
  }
  j = th_claim_one(a, "cq");
  th_complete_many(a, j, 1);
  assert_int_equal(session_counted(t->db, jobq_session_id(a)), 2);
  assert_int_equal(session_counted(t->db, jobq_session_id(b)), 1);
  assert_int_equal(done_stats(t->db, "cq"), 3);

  /* Closed: a's rows go to the shared ones. */
  char aid[64];
  snprintf(aid, sizeof aid, "%s", jobq_session_id(a));
  jobq_session_close(a);
  assert_int_equal(session_counted(t->db, aid), 0);
  assert_int_equal(done_stats(t->db, "cq"), 3);

  /* Reaped: b's rows go to its reaper's. */
  jobq_session *c = th_session(t->db, 0);
  j = th_claim_one(c, "cq");
  th_complete_many(c, j, 1);
  char bid[64];
  snprintf(bid, sizeof bid, "%s", jobq_session_id(b));
  int64_t waiting = th_put(t->db, "other", "x");
  jobq_job *held = th_claim_one(b, "other");
  th_beat_until(c, t->db, waiting, JOBQ_STATE_READY, 5000);
  assert_int_equal(session_counted(t->db, bid), 0);
  assert_int_equal(session_counted(t->db, jobq_session_id(c)), 2);
  assert_int_equal(done_stats(t->db, "cq"), 4);
  assert_int_equal(done_counted(t->db, "cq"), 4);
  jobq_jobs_free(held, 1);
  jobq_session_close(b);
  jobq_session_close(c);
  assert_int_equal(done_stats(t->db, "cq"), 4);
  jobq_close(db2);
}

static void test_transactions(void **state) {
  tq *t = *state;
  assert_int_equal(th_sql(t->db, "CREATE TABLE mine (x INTEGER)"), 0);

  /* Rolled back: neither my row nor the job. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_int_equal(th_sql(t->db, "INSERT INTO mine VALUES (1)"), 0);
  int64_t id = th_put(t->db, "tx", "p");
  assert_rc(jobq_rollback(t->db), JOBQ_OK);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 0);
  jobq_job_info *i = NULL;
  assert_rc(jobq_show(t->db, id, &i), JOBQ_ENOTFOUND);
  assert_int_equal(th_count_jobs(t->db, 0), 0);

  /* Committed: both. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_int_equal(th_sql(t->db, "INSERT INTO mine VALUES (2)"), 0);
  id = th_put(t->db, "tx", "p");
  /* A failed call inside leaves the transaction usable. */
  jobq_put_opts bad;
  jobq_put_opts_init(&bad);
  bad.priority = 1 << 20;
  int64_t ignored;
  assert_rc(jobq_put(t->db, &bad, &ignored, NULL), JOBQ_EINVAL);
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 1);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_READY);
  assert_int_equal(th_count_jobs(t->db, 0), 1);

  /* Claims and heartbeats are refused inside a transaction. */
  jobq_session *s = th_session(t->db, 0);
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  jobq_job *j = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, NULL, 0, 1, &j, &n), JOBQ_ESTATE);
  assert_int_equal(n, 0);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_ESTATE);
  assert_rc(jobq_rollback(t->db), JOBQ_OK);

  /* Complete inside a transaction that rolls back: still running. */
  j = th_claim_one(s, "tx");
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_int_equal(th_sql(t->db, "INSERT INTO mine VALUES (3)"), 0);
  assert_rc(jobq_complete(s, j, "res", 3, NULL), JOBQ_OK);
  assert_rc(jobq_rollback(t->db), JOBQ_OK);
  assert_int_equal(done_counted(t->db, "tx"), 0);
  i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->claim, j->claim);
  assert_null(i->result);
  jobq_info_free(i, 1);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 1);

  /* And with commit: done together with my row. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_int_equal(th_sql(t->db, "INSERT INTO mine VALUES (4)"), 0);
  int already = 9;
  assert_rc(jobq_complete(s, j, "res", 3, &already), JOBQ_OK);
  assert_int_equal(already, 0);
  /* A second time inside: nothing more to count. */
  assert_rc(jobq_complete(s, j, "res", 3, &already), JOBQ_OK);
  assert_int_equal(already, 1);
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  assert_int_equal(done_counted(t->db, "tx"), 1);
  th_assert_counts_agree(t->db);
  i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_memory_equal(i->result, "res", 3);
  jobq_info_free(i, 1);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 2);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);

  /* Closing the handle rolls an open transaction back. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  int64_t lost = th_put(t->db, "tx", NULL);
  jobq_close(t->db);
  t->db = th_open(t->url);
  assert_rc(jobq_show(t->db, lost, &i), JOBQ_ENOTFOUND);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 2);
}

/* A caller's transaction that completed a job holds no lock of the
 * queue's counters until it commits, so other workers' completions of the
 * same queue go on meanwhile: the counters are written at the commit.
 * (Were they written with the completion, one of the rows would be held
 * open, and 40 completions, each on a row drawn at random, would meet it:
 * on PostgreSQL they time out waiting; on MariaDB the library runs a
 * transaction whose lock wait timed out again, on another row, so there
 * this only checks the counts.) */
static void test_open_transaction_holds_no_counter(void **state) {
  tq *t = *state;
  TH_SERVER_ONLY("SQLite has one writer, which holds the whole file until its commit");
  char url[sizeof t->url + 64];
  snprintf(url, sizeof url, "%s%s%s", t->url, strchr(t->url, '?') ? "&" : "?",
           th_is_mysql() ? "lock_wait_timeout=1s" : "statement_timeout=500ms");
  enum { N = 40 };
  for (int k = 0; k <= N; k++) th_put(t->db, "cq", NULL);
  jobq_session *sa = th_session(t->db, 0);
  jobq_job *ja = th_claim_one(sa, "cq");
  jobq *b = th_open(url);
  jobq_session *sb = th_session(b, 0);
  size_t n;
  jobq_job *jb = th_claim(sb, "cq", N, &n);
  assert_int_equal(n, N);
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_rc(jobq_complete(sa, ja, NULL, 0, NULL), JOBQ_OK);
  for (size_t k = 0; k < n; k++) {
    int rc = jobq_complete(sb, &jb[k], NULL, 0, NULL);
    if (rc != JOBQ_OK) fail_msg("completion %zu of %d: %s", k + 1, N, jobq_errmsg(b));
  }
  assert_int_equal(done_counted(b, "cq"), N);
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  assert_int_equal(done_counted(b, "cq"), N + 1);
  jobq_jobs_free(jb, n);
  jobq_jobs_free(ja, 1);
  jobq_session_close(sb);
  jobq_session_close(sa);
  jobq_close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_cancel),
      TQ_TEST(test_retry),
      TQ_TEST(test_retry_dead),
      TQ_TEST(test_retry_dead_in_parts),
      TQ_TEST(test_retry_dead_mixed),
      TQ_TEST(test_stats_every_state),
      TQ_TEST(test_stats_counts_follow_moves),
      TQ_TEST(test_list),
      TQ_TEST(test_show),
      TQ_TEST(test_prune),
      TQ_TEST(test_purge),
      TQ_TEST(test_cancel_jobs),
      TQ_TEST(test_identity_and_epoch),
      TQ_TEST(test_restore_from_backup),
      TQ_TEST(test_other_database_refused),
      TQ_TEST(test_newer_schema_refused),
      TQ_TEST(test_transactions),
      TQ_TEST(test_counts_by_session),
      TQ_TEST(test_open_transaction_holds_no_counter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
