/*
 * test_ack.c - finishing claimed jobs: complete archives the result, fail
 * retries with backoff and ends dead after the last attempt, retry_later,
 * release gives the attempt back, ack_many mixes kinds in one batch with a
 * status per ack, and fencing: an ack with a wrong claim token, from
 * another session or after the claim was lost returns JOBQ_ELOST and
 * changes nothing, while repeating a committed complete is a quiet success.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

static int64_t put_with(jobq *db, int max_attempts, int64_t backoff_ms) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.max_attempts = max_attempts;
  o.backoff_ms = backoff_ms;
  o.payload = "p";
  o.payload_len = 1;
  return th_put_opts(db, &o);
}

/* Fails job now with error, retrying at once (retry_in_ms 0) if it can. */
static int fail_now(jobq_session *s, const jobq_job *j, const char *error,
                    int *outcome) {
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
  a.data = error;
  a.len = strlen(error);
  a.retry_in_ms = 0;
  int rc = jobq_ack_many(s, &a, 1);
  if (rc != JOBQ_OK) return rc;
  if (outcome != NULL) *outcome = a.outcome;
  return a.status;
}

static void test_complete_archives_result(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 3, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  static const unsigned char result[] = {'o', 'k', 0x00, 0xff, '\n'};
  int already = 9;
  int64_t before = th_db_now(t->db);
  assert_rc(jobq_complete(s, j, result, sizeof result, &already), JOBQ_OK);
  int64_t after = th_db_now(t->db);
  assert_int_equal(already, 0);

  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_int_equal(i->result_len, sizeof result);
  assert_non_null(i->result);
  assert_memory_equal(i->result, result, sizeof result);
  assert_int_equal(i->attempts, 1);
  assert_string_equal(i->claim, j->claim);
  assert_in_range(i->finished_at_ms, before, after);
  assert_int_equal(i->payload_len, 1);
  assert_memory_equal(i->payload, "p", 1);
  jobq_info_free(i, 1);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_RUNNING), 0);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DONE), 1);
  th_claim_none(s, NULL);

  /* An empty result is a result too. */
  int64_t id2 = put_with(t->db, 3, 1000);
  jobq_job *j2 = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, j2, NULL, 0, NULL), JOBQ_OK);
  i = th_show(t->db, id2);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_int_equal(i->result_len, 0);
  jobq_info_free(i, 1);
  jobq_jobs_free(j2, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_result_too_big(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 3, 1000);
  assert_rc(jobq_set_max_payload(t->db, 64), JOBQ_OK);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  char big[65];
  memset(big, 'r', sizeof big);
  assert_rc(jobq_complete(s, j, big, sizeof big, NULL), JOBQ_ETOOBIG);
  th_assert_msg(t->db, "result");
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->claim, j->claim);
  jobq_info_free(i, 1);
  /* The claim is still good. */
  assert_rc(jobq_complete(s, j, big, 64, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_fail_backoff(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 3, 2000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  int64_t before = th_db_now(t->db);
  assert_rc(jobq_fail(s, j, "disk full"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->attempts, 1);
  assert_non_null(i->last_error);
  assert_string_equal(i->last_error, "disk full");
  /* Backed off: due in the future, within twice the base. */
  assert_true(i->run_at_ms > before);
  assert_true(i->run_at_ms <= th_db_now(t->db) + 2 * 2000);
  assert_null(i->session);
  jobq_info_free(i, 1);
  /* Not claimable while backing off. */
  th_claim_none(s, "q");
  /* ...listed as scheduled. */
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(st[0].scheduled, 1);
  assert_int_equal(st[0].ready, 0);
  jobq_stats_free(st, n);
  jobq_session_close(s);
}

static void test_fail_until_dead(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 3, 1000);
  jobq_session *s = th_session(t->db, 0);
  int outcome = 0;
  for (int attempt = 1; attempt <= 3; attempt++) {
    jobq_job *j = th_claim_one(s, "q");
    assert_int_equal(j->id, id);
    assert_int_equal(j->attempt, attempt);
    char err[32];
    snprintf(err, sizeof err, "error %d", attempt);
    assert_int_equal(fail_now(s, j, err, &outcome), JOBQ_OK);
    jobq_jobs_free(j, 1);
    jobq_job_info *i = th_show(t->db, id);
    assert_int_equal(i->attempts, attempt);
    assert_string_equal(i->last_error, err);
    assert_int_equal(i->state, attempt < 3 ? JOBQ_STATE_READY : JOBQ_STATE_DEAD);
    assert_int_equal(outcome, i->state);
    if (attempt == 3) assert_true(i->finished_at_ms > 0);
    jobq_info_free(i, 1);
  }
  th_claim_none(s, NULL);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DEAD), 1);

  /* One attempt only: the first failure is final, with jobq_fail() too. */
  int64_t once = put_with(t->db, 1, 1000);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, once);
  assert_rc(jobq_fail(s, j, "bad input"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_job_info *i = th_show(t->db, once);
  assert_int_equal(i->state, JOBQ_STATE_DEAD);
  assert_string_equal(i->last_error, "bad input");
  jobq_info_free(i, 1);
  jobq_session_close(s);
}

static void test_retry_later(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  int64_t before = th_db_now(t->db);
  assert_rc(jobq_retry_later(s, j, 300, "rate limited"), JOBQ_OK);
  int64_t after = th_db_now(t->db);
  jobq_jobs_free(j, 1);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_in_range(i->run_at_ms, before + 300, after + 300);
  int64_t run_at = i->run_at_ms;
  jobq_info_free(i, 1);
  th_claim_none(s, "q");
  th_sleep_ms(run_at - th_db_now(t->db) + 30);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, id);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_release_keeps_attempt(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 1, 1000);
  jobq_session *s = th_session(t->db, 0);
  for (int round = 0; round < 3; round++) {
    jobq_job *j = th_claim_one(s, "q");
    assert_int_equal(j->id, id);
    assert_int_equal(j->attempt, 1);
    assert_rc(jobq_release(s, j), JOBQ_OK);
    /* The token is dead once released. */
    assert_rc(jobq_complete(s, j, "x", 1, NULL), JOBQ_ELOST);
    jobq_jobs_free(j, 1);
    jobq_job_info *i = th_show(t->db, id);
    assert_int_equal(i->state, JOBQ_STATE_READY);
    assert_int_equal(i->attempts, 0);
    assert_null(i->session);
    assert_true(i->run_at_ms <= th_db_now(t->db));
    jobq_info_free(i, 1);
  }
  /* With max_attempts 1 the job still has its one attempt. */
  jobq_job *j = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DONE);
  jobq_session_close(s);
}

static void test_ack_many_mixed(void **state) {
  tq *t = *state;
  int64_t ids[5];
  for (int k = 0; k < 5; k++) ids[k] = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 5, &n);
  assert_int_equal(n, 5);

  jobq_ack a[5];
  jobq_ack_init(&a[0], &j[0], JOBQ_ACK_COMPLETE);
  a[0].data = "r0";
  a[0].len = 2;
  jobq_ack_init(&a[1], &j[1], JOBQ_ACK_FAIL);
  a[1].data = "e1";
  a[1].len = 2;
  a[1].retry_in_ms = 0;
  jobq_ack_init(&a[2], &j[2], JOBQ_ACK_RETRY);
  a[2].retry_in_ms = 60000;
  jobq_ack_init(&a[3], &j[3], JOBQ_ACK_RELEASE);
  jobq_ack_init(&a[4], &j[4], JOBQ_ACK_COMPLETE);
  a[4].claim[0] = a[4].claim[0] == 'a' ? 'b' : 'a'; /* a forged token */
  assert_int_equal(a[0].retry_in_ms, -1);
  assert_int_equal(a[0].id, j[0].id);
  assert_string_equal(a[0].claim, j[0].claim);

  int64_t before = th_db_now(t->db);
  assert_rc(jobq_ack_many(s, a, 5), JOBQ_OK);
  for (int k = 0; k < 4; k++) {
    assert_int_equal(a[k].status, JOBQ_OK);
    assert_int_equal(a[k].already, 0);
  }
  assert_int_equal(a[4].status, JOBQ_ELOST);
  assert_int_equal(a[0].outcome, JOBQ_STATE_DONE);
  assert_int_equal(a[1].outcome, JOBQ_STATE_READY);
  assert_int_equal(a[2].outcome, JOBQ_STATE_READY);
  assert_int_equal(a[3].outcome, JOBQ_STATE_READY);

  jobq_job_info *i = th_show(t->db, ids[0]);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_memory_equal(i->result, "r0", 2);
  jobq_info_free(i, 1);
  i = th_show(t->db, ids[1]);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->attempts, 1);
  assert_string_equal(i->last_error, "e1");
  /* A failure keeps its claim on the row until the next claim, so that
   * its repetition finds it (test_repeated_fail_and_lost_fail). */
  assert_string_equal(i->claim, j[1].claim);
  assert_true(i->run_at_ms <= th_db_now(t->db));
  jobq_info_free(i, 1);
  i = th_show(t->db, ids[2]);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_true(i->run_at_ms >= before + 60000);
  assert_string_equal(i->last_error, "retry requested");
  jobq_info_free(i, 1);
  i = th_show(t->db, ids[3]);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->attempts, 0);
  /* A release forgets it. */
  assert_null(i->claim);
  jobq_info_free(i, 1);
  /* The forged ack changed nothing. */
  i = th_show(t->db, ids[4]);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->claim, j[4].claim);
  assert_null(i->result);
  jobq_info_free(i, 1);

  /* Ready again now: the failed one (retry_in_ms 0) and the released one. */
  jobq_job *again = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 2);
  for (size_t k = 0; k < n; k++) {
    if (again[k].id == ids[1]) {
      assert_int_equal(again[k].attempt, 2);
    } else {
      assert_int_equal(again[k].id, ids[3]);
      assert_int_equal(again[k].attempt, 1);
    }
  }
  assert_true(again[0].id != again[1].id);
  jobq_jobs_free(again, n);
  jobq_jobs_free(j, 5);
  /* An empty batch is fine. */
  assert_rc(jobq_ack_many(s, a, 0), JOBQ_OK);
  jobq_session_close(s);
}

/* Every mutation with a wrong token, or from another session, is refused
 * with JOBQ_ELOST and leaves the job exactly as it was. */
/* One batch where every job leaves the hot table, each its own way:
 * plain jobs dead, cancelled (a release of a job with a cancel request)
 * and done (its queue has a barrier, so no store takes the completion
 * on its own), a keyed one dead, and a forged failure.  The stores that
 * archive plain jobs in one statement do so here; the barrier behind
 * them runs once they are all gone. */
static void test_ack_many_leaving(void **state) {
  tq *t = *state;
  int64_t ids[5];
  for (int k = 0; k < 5; k++) {
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = "q";
    o.max_attempts = 1;
    o.key = k == 3 ? "k" : NULL;
    ids[k] = th_put_opts(t->db, &o);
  }
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  o.barrier = 1;
  int64_t barrier = th_put_opts(t->db, &o);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 5);
  for (int k = 0; k < 5; k++) assert_int_equal(j[k].id, ids[k]);
  int now = 1;
  assert_rc(jobq_cancel(t->db, j[1].id, &now), JOBQ_OK);
  assert_int_equal(now, 0);

  jobq_ack a[6];
  const char *errors[] = {"e0", NULL, NULL, "e3", "e4"};
  for (int k = 0; k < 5; k++) {
    jobq_ack_init(&a[k], &j[k], k == 1 ? JOBQ_ACK_RELEASE
                                : k == 2 ? JOBQ_ACK_COMPLETE
                                         : JOBQ_ACK_FAIL);
    a[k].data = k == 2 ? "r2" : errors[k];
    a[k].len = a[k].data ? 2 : 0;
  }
  jobq_ack_init(&a[5], &j[4], JOBQ_ACK_FAIL);
  a[5].claim[0] = a[5].claim[0] == 'a' ? 'b' : 'a'; /* a forged token */
  /* The forged one first: it must not stop the real one. */
  jobq_ack tmp = a[4];
  a[4] = a[5];
  a[5] = tmp;
  assert_rc(jobq_ack_many(s, a, 6), JOBQ_OK);
  assert_int_equal(a[4].status, JOBQ_ELOST);
  const int outcome[] = {JOBQ_STATE_DEAD, JOBQ_STATE_CANCELLED, JOBQ_STATE_DONE,
                         JOBQ_STATE_DEAD, -1, JOBQ_STATE_DEAD};
  for (int k = 0; k < 6; k++) {
    if (k == 4) continue;
    assert_int_equal(a[k].status, JOBQ_OK);
    assert_int_equal(a[k].outcome, outcome[k]);
  }

  for (int k = 0; k < 5; k++) {
    jobq_job_info *i = th_show(t->db, j[k].id);
    assert_int_equal(i->state, outcome[k == 4 ? 5 : k]);
    assert_true(i->finished_at_ms > 0);
    assert_int_equal(i->attempts, 1);
    if (k == 2) {
      assert_memory_equal(i->result, "r2", 2);
      assert_null(i->last_error);
    } else {
      assert_null(i->result);
    }
    if (errors[k] != NULL) assert_string_equal(i->last_error, errors[k]);
    jobq_info_free(i, 1);
  }
  jobq_queue_stats *st;
  size_t nq;
  assert_rc(jobq_stats(t->db, &st, &nq), JOBQ_OK);
  assert_int_equal(nq, 1);
  assert_int_equal(st[0].dead, 3);
  assert_int_equal(st[0].cancelled, 1);
  assert_int_equal(st[0].done, 1);
  assert_int_equal(st[0].running, 0);
  jobq_stats_free(st, nq);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_DEAD), 3);

  /* Nothing before the barrier is left: it runs. */
  jobq_job *b = th_claim_one(s, "q");
  assert_int_equal(b->id, barrier);
  jobq_jobs_free(b, 1);
  jobq_jobs_free(j, n);

  /* The same with only plain jobs before the barrier, all dead in one
   * batch: nothing else lets the barrier go. */
  for (int k = 0; k < 3; k++) {
    jobq_put_opts_init(&o);
    o.queue = "b";
    o.max_attempts = 1;
    o.barrier = k == 2;
    ids[k] = th_put_opts(t->db, &o);
  }
  j = th_claim(s, "b", 10, &n);
  assert_int_equal(n, 2);
  for (int k = 0; k < 2; k++) jobq_ack_init(&a[k], &j[k], JOBQ_ACK_FAIL);
  assert_rc(jobq_ack_many(s, a, 2), JOBQ_OK);
  for (int k = 0; k < 2; k++) assert_int_equal(a[k].outcome, JOBQ_STATE_DEAD);
  b = th_claim_one(s, "b");
  assert_int_equal(b->id, ids[2]);
  jobq_jobs_free(b, 1);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* Heads of two keys (each with a job waiting behind it) dead in one
 * batch, in a queue of each key policy: under 'block' both keys hold
 * their next jobs for an operator, under 'skip' both next jobs run. */
/* One batch across a queue of each policy: dead heads of two keys and a
 * completed head of a third in each.  Under 'block' the dead heads hold
 * their keys and the completed one hands on; under 'skip' all three
 * hand on. */
static void test_ack_many_keyed_dead_across_queues(void **state) {
  tq *t = *state;
  static const char *const queues[] = {"xblock", "xskip"}, *const keys[] = {"a", "b", "c"};
  int64_t behind[2][3];
  for (int q = 0; q < 2; q++) {
    assert_rc(jobq_set_key_policy(t->db, queues[q], q == 0 ? "block" : "skip"), JOBQ_OK);
    for (int k = 0; k < 3; k++) {
      jobq_put_opts o;
      jobq_put_opts_init(&o);
      o.queue = queues[q];
      o.key = keys[k];
      o.max_attempts = 1;
      th_put_opts(t->db, &o);
      behind[q][k] = th_put_opts(t->db, &o);
    }
  }
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, NULL, 10, &n);
  assert_int_equal(n, 6);
  jobq_ack a[6];
  for (size_t k = 0; k < n; k++) {
    int last = strcmp(j[k].key, "c") == 0;
    jobq_ack_init(&a[k], &j[k], last ? JOBQ_ACK_COMPLETE : JOBQ_ACK_FAIL);
  }
  assert_rc(jobq_ack_many(s, a, n), JOBQ_OK);
  for (size_t k = 0; k < n; k++) {
    int last = strcmp(j[k].key, "c") == 0;
    assert_int_equal(a[k].status, JOBQ_OK);
    assert_int_equal(a[k].outcome, last ? JOBQ_STATE_DONE : JOBQ_STATE_DEAD);
  }
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < 3; k++) {
      int want = q == 0 && k < 2 ? JOBQ_STATE_WAITING : JOBQ_STATE_READY;
      if (th_state(t->db, behind[q][k]) != want)
        fail_msg("the job behind %s/%s is %s", queues[q], keys[k],
                 jobq_state_name(th_state(t->db, behind[q][k])));
    }
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

static void test_ack_many_keyed_dead(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 0);
  static const char *const queues[] = {"kblock", "kskip"};
  for (int q = 0; q < 2; q++) {
    assert_rc(jobq_set_key_policy(t->db, queues[q], q == 0 ? "block" : "skip"), JOBQ_OK);
    int64_t ids[4];
    for (int k = 0; k < 4; k++) {
      jobq_put_opts o;
      jobq_put_opts_init(&o);
      o.queue = queues[q];
      o.key = k % 2 ? "b" : "a";
      o.max_attempts = 1;
      ids[k] = th_put_opts(t->db, &o);
    }
    size_t n;
    jobq_job *j = th_claim(s, queues[q], 10, &n);
    assert_int_equal(n, 2);
    jobq_ack a[2];
    for (size_t k = 0; k < n; k++) {
      assert_int_equal(j[k].id, ids[k]);
      jobq_ack_init(&a[k], &j[k], JOBQ_ACK_FAIL);
      a[k].data = "gone";
      a[k].len = 4;
    }
    assert_rc(jobq_ack_many(s, a, n), JOBQ_OK);
    for (int k = 0; k < 2; k++) {
      assert_int_equal(a[k].status, JOBQ_OK);
      assert_int_equal(a[k].outcome, JOBQ_STATE_DEAD);
      assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_DEAD);
      assert_int_equal(th_state(t->db, ids[k + 2]),
                       q == 0 ? JOBQ_STATE_WAITING : JOBQ_STATE_READY);
    }
    jobq_jobs_free(j, n);
    j = th_claim(s, queues[q], 10, &n);
    assert_int_equal(n, q == 0 ? 0 : 2);
    th_complete_many(s, j, n);
  }
  jobq_queue_stats *st;
  size_t nq;
  assert_rc(jobq_stats(t->db, &st, &nq), JOBQ_OK);
  for (size_t i = 0; i < nq; i++) {
    assert_int_equal(st[i].dead, 2);
    assert_int_equal(st[i].waiting, strcmp(st[i].name, "kblock") == 0 ? 2 : 0);
  }
  jobq_stats_free(st, nq);
  jobq_session_close(s);
}

/* The dead heads of 21 keys failed in one batch under 'block' each hold
 * their own key (eight holds a statement, the rest one at a time): with
 * the holds of the even keys cancelled, exactly their next jobs run. */
static void test_ack_many_dead_heads_hold_their_keys(void **state) {
  tq *t = *state;
  enum { K = 21 };
  jobq_session *s = th_session(t->db, 0);
  int64_t head[K], next[K];
  char keys[K][16];
  for (int round = 0; round < 2; round++) {
    for (int k = 0; k < K; k++) {
      jobq_put_opts o;
      jobq_put_opts_init(&o);
      o.queue = "holds";
      snprintf(keys[k], sizeof keys[k], "k%02d", k);
      o.key = keys[k];
      o.max_attempts = 1;
      (round == 0 ? head : next)[k] = th_put_opts(t->db, &o);
    }
  }
  size_t n;
  jobq_job *j = th_claim(s, "holds", 2 * K, &n);
  assert_int_equal(n, K);
  jobq_ack a[K];
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(j[k].id, head[k]);
    jobq_ack_init(&a[k], &j[k], JOBQ_ACK_FAIL);
  }
  assert_rc(jobq_ack_many(s, a, n), JOBQ_OK);
  jobq_jobs_free(j, n);
  for (int k = 0; k < K; k++) {
    assert_int_equal(a[k].outcome, JOBQ_STATE_DEAD);
    assert_int_equal(th_state(t->db, next[k]), JOBQ_STATE_WAITING);
  }
  for (int k = 0; k < K; k += 2) {
    int now = 0;
    assert_rc(jobq_cancel(t->db, head[k], &now), JOBQ_OK);
    assert_int_equal(now, 1);
  }
  j = th_claim(s, "holds", 2 * K, &n);
  assert_int_equal(n, (K + 1) / 2);
  for (size_t i = 0; i < n; i++) assert_int_equal(j[i].id, next[2 * i]);
  th_complete_many(s, j, n);
  for (int k = 1; k < K; k += 2) assert_int_equal(th_state(t->db, next[k]), JOBQ_STATE_WAITING);
  jobq_session_close(s);
}

static void test_fencing(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq *db2 = th_open(t->url);
  jobq_session *other = th_session(db2, 0);
  jobq_job *j = th_claim_one(s, "q");
  jobq_job forged = *j;
  forged.claim[JOBQ_CLAIM_LEN - 1] = forged.claim[JOBQ_CLAIM_LEN - 1] == '0' ? '1' : '0';

  int already = 9;
  assert_rc(jobq_complete(s, &forged, "x", 1, &already), JOBQ_ELOST);
  assert_rc(jobq_fail(s, &forged, "x"), JOBQ_ELOST);
  assert_rc(jobq_retry_later(s, &forged, 10, "x"), JOBQ_ELOST);
  assert_rc(jobq_release(s, &forged), JOBQ_ELOST);
  assert_rc(jobq_extend(s, &forged, 60000), JOBQ_ELOST);
  /* The right token from a session that does not hold the job. */
  assert_rc(jobq_complete(other, j, "x", 1, NULL), JOBQ_ELOST);
  assert_rc(jobq_fail(other, j, "x"), JOBQ_ELOST);
  assert_rc(jobq_retry_later(other, j, 10, "x"), JOBQ_ELOST);
  assert_rc(jobq_release(other, j), JOBQ_ELOST);
  assert_rc(jobq_extend(other, j, 60000), JOBQ_ELOST);
  /* A job id that does not exist. */
  jobq_job ghost = *j;
  ghost.id = id + 1000;
  int rc = jobq_complete(s, &ghost, "x", 1, NULL);
  assert_true(rc == JOBQ_ELOST || rc == JOBQ_ENOTFOUND);

  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->claim, j->claim);
  assert_string_equal(i->session, jobq_session_id(s));
  assert_int_equal(i->attempts, 1);
  assert_null(i->last_error);
  assert_null(i->result);
  jobq_info_free(i, 1);

  /* The real holder still can. */
  assert_rc(jobq_extend(s, j, 60000), JOBQ_OK);
  assert_rc(jobq_complete(s, j, "done", 4, &already), JOBQ_OK);
  assert_int_equal(already, 0);
  jobq_jobs_free(j, 1);
  jobq_session_close(other);
  jobq_close(db2);
  jobq_session_close(s);
}

static void test_repeated_complete(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  int already = 9;
  assert_rc(jobq_complete(s, j, "first", 5, &already), JOBQ_OK);
  assert_int_equal(already, 0);
  assert_rc(jobq_complete(s, j, "second", 6, &already), JOBQ_OK);
  assert_int_equal(already, 1);
  /* The batch form says the same. */
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_COMPLETE);
  a.data = "third";
  a.len = 5;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
  assert_int_equal(a.status, JOBQ_OK);
  assert_int_equal(a.already, 1);
  assert_int_equal(a.outcome, JOBQ_STATE_DONE);

  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_int_equal(i->result_len, 5);
  assert_memory_equal(i->result, "first", 5);
  jobq_info_free(i, 1);
  assert_int_equal(th_count_jobs(t->db, 0), 1);

  /* A forged token for the done job is not "already done". */
  jobq_job forged = *j;
  forged.claim[0] = forged.claim[0] == 'f' ? 'e' : 'f';
  assert_rc(jobq_complete(s, &forged, "x", 1, &already), JOBQ_ELOST);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* One job twice in a batch, among others: the first of its acks counts,
 * the second finds it acknowledged (already, for the same kind; lost for
 * a failure after a completion), whatever their places in the batch. */
static void test_repeated_in_one_batch(void **state) {
  tq *t = *state;
  int64_t ids[3];
  for (int k = 0; k < 3; k++) ids[k] = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 3, &n);
  assert_int_equal(n, 3);
  jobq_ack a[5];
  jobq_ack_init(&a[0], &j[2], JOBQ_ACK_COMPLETE);
  a[0].data = "first";
  a[0].len = 5;
  jobq_ack_init(&a[1], &j[0], JOBQ_ACK_COMPLETE);
  jobq_ack_init(&a[2], &j[2], JOBQ_ACK_COMPLETE);
  a[2].data = "second";
  a[2].len = 6;
  jobq_ack_init(&a[3], &j[1], JOBQ_ACK_RETRY);
  jobq_ack_init(&a[4], &j[2], JOBQ_ACK_FAIL);
  assert_rc(jobq_ack_many(s, a, 5), JOBQ_OK);
  static const int status[] = {JOBQ_OK, JOBQ_OK, JOBQ_OK, JOBQ_OK, JOBQ_ELOST};
  static const int already[] = {0, 0, 1, 0, 0};
  for (int k = 0; k < 5; k++) {
    if (a[k].status != status[k] || a[k].already != already[k])
      fail_msg("ack %d: status %d, already %d; expected %d, %d", k, a[k].status, a[k].already,
               status[k], already[k]);
  }
  jobq_job_info *i = th_show(t->db, ids[2]);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_memory_equal(i->result, "first", 5);
  jobq_info_free(i, 1);
  assert_int_equal(th_state(t->db, ids[0]), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, ids[1]), JOBQ_STATE_READY);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* A session that stopped heartbeating is reaped by another; its claim is
 * gone, so its acks are refused, even after the job was claimed again. */
static void test_lost_claim_cannot_ack(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 200);
  jobq_session *b = th_session(db2, 5000);
  jobq_job *ja = th_claim_one(a, "q");
  /* a goes quiet; b keeps beating past a's lease. */
  th_beat_until(b, t->db, id, JOBQ_STATE_READY, 5000);

  assert_rc(jobq_complete(a, ja, "late", 4, NULL), JOBQ_ELOST);
  assert_rc(jobq_extend(a, ja, 1000), JOBQ_ELOST);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_READY);

  jobq_job *jb = th_claim_one(b, "q");
  assert_int_equal(jb->id, id);
  assert_rc(jobq_fail(a, ja, "late"), JOBQ_ELOST);
  assert_rc(jobq_release(a, ja), JOBQ_ELOST);
  assert_rc(jobq_complete(a, ja, "late", 4, NULL), JOBQ_ELOST);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->claim, jb->claim);
  jobq_info_free(i, 1);
  assert_rc(jobq_complete(b, jb, "ok", 2, NULL), JOBQ_OK);
  i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_memory_equal(i->result, "ok", 2);
  jobq_info_free(i, 1);
  /* Even now the old token is not taken for an earlier success. */
  int already = 9;
  assert_rc(jobq_complete(a, ja, "late", 4, &already), JOBQ_ELOST);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

/* A repeated fail whose first attempt committed is a quiet success; a
 * fail for a claim that ended some other way (released, reaped) is not. */
static void test_repeated_fail_and_lost_fail(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
  a.data = "e1";
  a.len = 2;
  a.retry_in_ms = 60000;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
  assert_int_equal(a.status, JOBQ_OK);
  assert_int_equal(a.already, 0);
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
  assert_int_equal(a.status, JOBQ_OK);
  assert_int_equal(a.already, 1);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->attempts, 1);
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);

  /* Released, then failed with the same token: the fail never happened,
   * so it must not be reported as an earlier success. */
  int64_t id2 = put_with(t->db, 5, 1000);
  j = th_claim_one(s, "q");
  assert_int_equal(j->id, id2);
  assert_rc(jobq_release(s, j), JOBQ_OK);
  jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
  a.data = "late";
  a.len = 4;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
  if (a.status != JOBQ_ELOST)
    fail_msg("fail after release: status %s, already %d; expected JOBQ_ELOST",
             jobq_err_name(a.status), a.already);
  i = th_show(t->db, id2);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_null(i->last_error);
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_bad_ack_arguments(void **state) {
  tq *t = *state;
  int64_t id = put_with(t->db, 5, 1000);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  jobq_ack a[2];
  jobq_ack_init(&a[0], j, JOBQ_ACK_COMPLETE);
  jobq_ack_init(&a[1], j, JOBQ_ACK_COMPLETE);
  a[1].kind = (jobq_ack_kind)42;
  assert_rc(jobq_ack_many(s, a, 2), JOBQ_EINVAL);
  /* Nothing of the batch happened. */
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* jobq_ack_claim(): one transaction acknowledges a batch and claims the
 * next; a lost ack in it is refused alone; a failing claim takes the acks
 * down with it. */
static void test_ack_claim(void **state) {
  tq *t = *state;
  int64_t ids[6];
  for (int k = 0; k < 6; k++) ids[k] = put_with(t->db, 3, 1000);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *first = th_claim(s, "q", 3, &n);
  assert_int_equal(n, 3);
  jobq_ack a[4];
  for (int k = 0; k < 3; k++) jobq_ack_init(&a[k], &first[k], JOBQ_ACK_COMPLETE);
  a[0].data = "r0";
  a[0].len = 2;
  /* A forged claim: refused on its own, the others go through. */
  jobq_ack_init(&a[3], &first[0], JOBQ_ACK_COMPLETE);
  a[3].id = ids[5];
  const char *q = "q";
  jobq_job *next = NULL;
  size_t nn = 9;
  assert_rc(jobq_ack_claim(s, a, 4, &q, 1, 2, &next, &nn), JOBQ_OK);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(a[k].status, JOBQ_OK);
    assert_int_equal(a[k].outcome, JOBQ_STATE_DONE);
    assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_DONE);
  }
  assert_int_equal(a[3].status, JOBQ_ELOST);
  assert_int_equal(nn, 2);
  assert_int_equal(next[0].id, ids[3]);
  assert_int_equal(next[1].id, ids[4]);
  jobq_job_info *i = th_show(t->db, ids[0]);
  assert_memory_equal(i->result, "r0", 2);
  jobq_info_free(i, 1);

  /* An invalid queue: nothing happens at all. */
  jobq_ack b[2];
  for (int k = 0; k < 2; k++) jobq_ack_init(&b[k], &next[k], JOBQ_ACK_COMPLETE);
  const char *bad = "Bad Queue";
  jobq_job *none = NULL;
  assert_rc(jobq_ack_claim(s, b, 2, &bad, 1, 5, &none, &nn), JOBQ_EINVAL);
  assert_null(none);
  assert_int_equal(nn, 0);
  assert_int_equal(th_state(t->db, ids[3]), JOBQ_STATE_RUNNING);

  /* Only acks (max 0) and only a claim (n 0) both work. */
  assert_rc(jobq_ack_claim(s, b, 2, NULL, 0, 0, &none, &nn), JOBQ_OK);
  assert_int_equal(nn, 0);
  assert_int_equal(th_state(t->db, ids[3]), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, ids[4]), JOBQ_STATE_DONE);
  assert_rc(jobq_ack_claim(s, NULL, 0, &q, 1, 5, &none, &nn), JOBQ_OK);
  assert_int_equal(nn, 1);
  assert_int_equal(none[0].id, ids[5]);

  /* The session is gone: the claim fails, and the ack with it. */
  jobq_ack c;
  jobq_ack_init(&c, &none[0], JOBQ_ACK_COMPLETE);
  assert_rc(jobq_epoch_bump(t->db, NULL), JOBQ_OK);
  jobq_job *after = NULL;
  assert_rc(jobq_ack_claim(s, &c, 1, &q, 1, 5, &after, &nn), JOBQ_EEXPIRED);
  assert_int_equal(c.status, JOBQ_EEXPIRED);
  assert_null(after);
  assert_int_equal(th_state(t->db, ids[5]), JOBQ_STATE_READY);
  jobq_jobs_free(first, 3);
  jobq_jobs_free(next, 2);
  jobq_jobs_free(none, 1);
  jobq_session_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_complete_archives_result),
      TQ_TEST(test_result_too_big),
      TQ_TEST(test_fail_backoff),
      TQ_TEST(test_fail_until_dead),
      TQ_TEST(test_retry_later),
      TQ_TEST(test_release_keeps_attempt),
      TQ_TEST(test_ack_many_mixed),
      TQ_TEST(test_ack_many_leaving),
      TQ_TEST(test_ack_many_keyed_dead),
      TQ_TEST(test_ack_many_keyed_dead_across_queues),
      TQ_TEST(test_ack_many_dead_heads_hold_their_keys),
      TQ_TEST(test_fencing),
      TQ_TEST(test_repeated_complete),
      TQ_TEST(test_repeated_in_one_batch),
      TQ_TEST(test_lost_claim_cannot_ack),
      TQ_TEST(test_repeated_fail_and_lost_fail),
      TQ_TEST(test_bad_ack_arguments),
      TQ_TEST(test_ack_claim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
