/*
 * test_claim.c - jobq_claim(): the order jobs are handed out in (priority,
 * then run_at, then id), delays, paused queues, claiming from some queues
 * or all of them, the max argument, empty claims, what a claimed job
 * carries, and that claims from two sessions (in one process and in
 * separate processes) never overlap.
 */
#include "helpers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t put_prio(jobq *db, const char *queue, int prio) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = queue;
  o.priority = prio;
  return th_put_opts(db, &o);
}

static int64_t put_delayed(jobq *db, const char *queue, int64_t delay) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = queue;
  o.delay_ms = delay;
  return th_put_opts(db, &o);
}

static void test_priority_then_fifo(void **state) {
  tq *t = *state;
  int64_t a = put_prio(t->db, "q", 0);
  int64_t b = put_prio(t->db, "q", 10);
  int64_t c = put_prio(t->db, "q", -5);
  int64_t d = put_prio(t->db, "q", 10);
  int64_t e = put_prio(t->db, "q", 0);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 5);
  int64_t want[] = {b, d, a, e, c};
  for (size_t k = 0; k < 5; k++) assert_int_equal(j[k].id, want[k]);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

static void test_priority_one_at_a_time(void **state) {
  tq *t = *state;
  int64_t ids[6];
  int prios[6] = {1, 3, 2, 3, -1, 2};
  for (int k = 0; k < 6; k++) ids[k] = put_prio(t->db, "q", prios[k]);
  int64_t want[] = {ids[1], ids[3], ids[2], ids[5], ids[0], ids[4]};
  jobq_session *s = th_session(t->db, 0);
  for (int k = 0; k < 6; k++) {
    jobq_job *j = th_claim_one(s, "q");
    assert_int_equal(j->id, want[k]);
    jobq_jobs_free(j, 1);
  }
  th_claim_none(s, "q");
  jobq_session_close(s);
}

static void test_run_at_before_id(void **state) {
  tq *t = *state;
  /* y is older but due later than x: x comes first once both are due. */
  int64_t y = put_delayed(t->db, "q", 400);
  int64_t x = put_delayed(t->db, "q", 100);
  int64_t z = th_put(t->db, "q", NULL);
  th_sleep_ms(500);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 3);
  assert_int_equal(j[0].id, z);
  assert_int_equal(j[1].id, x);
  assert_int_equal(j[2].id, y);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

static void test_delay(void **state) {
  tq *t = *state;
  int64_t id = put_delayed(t->db, "q", 1500);
  jobq_job_info *i = th_show(t->db, id);
  int64_t run_at = i->run_at_ms;
  jobq_info_free(i, 1);
  jobq_session *s = th_session(t->db, 0);
  /* Not before its time... */
  th_claim_none(s, "q");
  th_claim_none(s, NULL);
  assert_true(th_db_now(t->db) < run_at);
  /* ...and as soon as the database clock reaches it. */
  int64_t wait = run_at - th_db_now(t->db) + 30;
  th_sleep_ms(wait);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, id);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_paused_queue(void **state) {
  tq *t = *state;
  int64_t a = th_put(t->db, "a", NULL);
  int64_t b = th_put(t->db, "b", NULL);
  assert_rc(jobq_pause(t->db, "a"), JOBQ_OK);
  jobq_session *s = th_session(t->db, 0);
  th_claim_none(s, "a");
  jobq_job *j = th_claim_one(s, NULL);
  assert_int_equal(j->id, b);
  jobq_jobs_free(j, 1);
  th_claim_none(s, NULL);

  /* A paused queue still takes jobs. */
  int64_t a2 = th_put(t->db, "a", NULL);
  th_claim_none(s, "a");

  assert_rc(jobq_resume(t->db, "a"), JOBQ_OK);
  size_t n;
  j = th_claim(s, "a", 10, &n);
  assert_int_equal(n, 2);
  assert_int_equal(j[0].id, a);
  assert_int_equal(j[1].id, a2);
  jobq_jobs_free(j, n);

  /* Pausing a queue before it has any job holds its first job too. */
  assert_rc(jobq_pause(t->db, "later"), JOBQ_OK);
  th_put(t->db, "later", NULL);
  th_claim_none(s, "later");
  th_claim_none(s, NULL);
  assert_rc(jobq_resume(t->db, "later"), JOBQ_OK);
  j = th_claim_one(s, NULL);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_several_queues(void **state) {
  tq *t = *state;
  int64_t q1 = put_prio(t->db, "q1", 0);
  int64_t q2 = put_prio(t->db, "q2", 5);
  int64_t q3 = put_prio(t->db, "q3", 9);
  int64_t q1b = put_prio(t->db, "q1", 1);
  jobq_session *s = th_session(t->db, 0);

  const char *some[] = {"q1", "q3", "nosuch"};
  jobq_job *j = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, some, 3, 10, &j, &n), JOBQ_OK);
  assert_int_equal(n, 3);
  /* Priority order across the named queues. */
  assert_int_equal(j[0].id, q3);
  assert_string_equal(j[0].queue, "q3");
  assert_int_equal(j[1].id, q1b);
  assert_int_equal(j[2].id, q1);
  assert_string_equal(j[2].queue, "q1");
  jobq_jobs_free(j, n);

  j = th_claim(s, NULL, 10, &n);
  assert_int_equal(n, 1);
  assert_int_equal(j[0].id, q2);
  jobq_jobs_free(j, n);

  /* All queues at once. */
  int64_t x = put_prio(t->db, "x", 0);
  int64_t y = put_prio(t->db, "y", 1);
  j = th_claim(s, NULL, 10, &n);
  assert_int_equal(n, 2);
  assert_int_equal(j[0].id, y);
  assert_int_equal(j[1].id, x);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

static void test_max_and_empty(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  /* Empty: no jobs at all. */
  jobq_job *j = NULL;
  size_t n = 77;
  assert_rc(jobq_claim(s, NULL, 0, 5, &j, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_jobs_free(j, n);
  jobq_jobs_free(NULL, 0);

  int64_t ids[10];
  for (int k = 0; k < 10; k++) ids[k] = th_put(t->db, "m", NULL);
  size_t sizes[] = {3, 3, 3, 1, 0};
  int next = 0;
  for (int round = 0; round < 5; round++) {
    j = th_claim(s, "m", 3, &n);
    assert_int_equal(n, sizes[round]);
    for (size_t k = 0; k < n; k++) assert_int_equal(j[k].id, ids[next++]);
    jobq_jobs_free(j, n);
  }
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_RUNNING), 10);
  jobq_session_close(s);
}

static void test_claimed_job_fields(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "f";
  o.priority = 7;
  o.key = "k1";
  o.max_attempts = 4;
  o.timeout_ms = 1234;
  o.payload = "hello";
  o.payload_len = 5;
  int64_t id = th_put_opts(t->db, &o);
  jobq_session *s = th_session(t->db, 0);
  int64_t before = th_db_now(t->db);
  jobq_job *j = th_claim_one(s, "f");
  int64_t after = th_db_now(t->db);
  assert_int_equal(j->id, id);
  assert_string_equal(j->queue, "f");
  assert_int_equal(j->priority, 7);
  assert_string_equal(j->key, "k1");
  assert_int_equal(j->max_attempts, 4);
  assert_int_equal(j->timeout_ms, 1234);
  assert_int_equal(j->attempt, 1);
  assert_int_equal(j->prev_lost, 0);
  assert_int_equal(j->payload_len, 5);
  assert_memory_equal(j->payload, "hello", 5);
  assert_int_equal(strlen(j->claim), JOBQ_CLAIM_LEN);
  assert_int_equal(strspn(j->claim, "0123456789abcdef"), JOBQ_CLAIM_LEN);

  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->session, jobq_session_id(s));
  assert_string_equal(i->claim, j->claim);
  assert_int_equal(i->attempts, 1);
  assert_in_range(i->claimed_at_ms, before, after);
  jobq_info_free(i, 1);

  /* A job without a key claims with key NULL; tokens differ per claim. */
  th_put(t->db, "f", NULL);
  jobq_job *j2 = th_claim_one(s, "f");
  assert_null(j2->key);
  assert_string_not_equal(j2->claim, j->claim);
  jobq_jobs_free(j2, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* A batch gives every job a token of its own, and the one each job was
 * handed is the one its row holds: 40 of them, more random bytes than
 * one draw of 64 would give. */
static void test_batch_tokens_are_each_jobs_own(void **state) {
  tq *t = *state;
  enum { N = 40 };
  for (int k = 0; k < N; k++) th_put(t->db, "b", NULL);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "b", N, &n);
  assert_int_equal(n, N);
  for (size_t a = 0; a < n; a++) {
    assert_int_equal(strspn(j[a].claim, "0123456789abcdef"), JOBQ_CLAIM_LEN);
    for (size_t b = a + 1; b < n; b++) assert_string_not_equal(j[a].claim, j[b].claim);
    jobq_job_info *i = th_show(t->db, j[a].id);
    assert_string_equal(i->claim, j[a].claim);
    jobq_info_free(i, 1);
  }
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* Two handles on one file, two sessions claiming in turns: every job is
 * claimed once, by exactly one of them. */
static void test_two_sessions_never_overlap(void **state) {
  tq *t = *state;
  enum { N = 60 };
  for (int k = 0; k < N; k++) th_put(t->db, "q", NULL);
  jobq *db2 = th_open(t->url);
  jobq_session *s1 = th_session(t->db, 0);
  jobq_session *s2 = th_session(db2, 0);
  assert_string_not_equal(jobq_session_id(s1), jobq_session_id(s2));
  int owner[N + 1];
  memset(owner, 0, sizeof owner);
  size_t total = 0;
  for (int round = 0; round < 100 && total < N; round++) {
    jobq_session *s = round % 2 ? s2 : s1;
    size_t n;
    jobq_job *j = th_claim(s, "q", 1 + (size_t)round % 4, &n);
    for (size_t k = 0; k < n; k++) {
      assert_in_range(j[k].id, 1, N);
      assert_int_equal(owner[j[k].id], 0);
      owner[j[k].id] = round % 2 + 1;
    }
    total += n;
    jobq_jobs_free(j, n);
  }
  assert_int_equal(total, N);
  th_claim_none(s1, "q");
  th_claim_none(s2, "q");
  jobq_session_close(s1);
  jobq_session_close(s2);
  jobq_close(db2);
}

/* Four processes claim from one file at the same time; each writes the ids
 * it got to its own file.  Together they got every job exactly once. */
struct claimer {
  const char *url;
  char out[PATH_MAX];
};

static int claimer_main(void *arg) {
  struct claimer *c = arg;
  jobq *db = NULL;
  if (jobq_open(c->url, &db) != JOBQ_OK) return 10;
  jobq_session *s = NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  if (jobq_session_open(db, &so, &s) != JOBQ_OK) return 11;
  FILE *f = fopen(c->out, "w");
  if (f == NULL) return 12;
  int empty = 0;
  while (empty < 3) {
    jobq_job *j = NULL;
    size_t n = 0;
    int rc = jobq_claim(s, NULL, 0, 3, &j, &n);
    if (rc == JOBQ_EBUSY) continue;
    if (rc != JOBQ_OK) return 13;
    empty = n == 0 ? empty + 1 : 0;
    for (size_t k = 0; k < n; k++) fprintf(f, "%lld\n", (long long)j[k].id);
    jobq_jobs_free(j, n);
  }
  fclose(f);
  /* Keep the claims: closing the session would release them. */
  _exit(0);
}

static void test_processes_never_overlap(void **state) {
  tq *t = *state;
  enum { N = 300, P = 4 };
  jobq_put_opts o[N];
  int64_t ids[N];
  for (int k = 0; k < N; k++) jobq_put_opts_init(&o[k]);
  assert_rc(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  struct claimer c[P];
  pid_t pids[P];
  for (int p = 0; p < P; p++) {
    c[p].url = t->url;
    char name[32];
    snprintf(name, sizeof name, "claims-%d", p);
    th_path(c[p].out, sizeof c[p].out, t->dir, name);
    pids[p] = th_fork(claimer_main, &c[p]);
  }
  for (int p = 0; p < P; p++) assert_int_equal(th_wait(pids[p]), 0);

  int64_t lo = ids[0];
  unsigned char seen[N] = {0};
  size_t total = 0;
  for (int p = 0; p < P; p++) {
    FILE *f = fopen(c[p].out, "r");
    assert_non_null(f);
    long long id;
    while (fscanf(f, "%lld", &id) == 1) {
      assert_in_range(id, lo, lo + N - 1);
      if (seen[id - lo]) fail_msg("job %lld claimed twice", id);
      seen[id - lo] = 1;
      total++;
    }
    fclose(f);
  }
  assert_int_equal(total, N);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_RUNNING), N);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_priority_then_fifo),
      TQ_TEST(test_priority_one_at_a_time),
      TQ_TEST(test_run_at_before_id),
      TQ_TEST(test_delay),
      TQ_TEST(test_paused_queue),
      TQ_TEST(test_several_queues),
      TQ_TEST(test_max_and_empty),
      TQ_TEST(test_claimed_job_fields),
      TQ_TEST(test_batch_tokens_are_each_jobs_own),
      TQ_TEST(test_two_sessions_never_overlap),
      TQ_TEST(test_processes_never_overlap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
