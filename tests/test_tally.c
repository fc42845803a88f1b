/*
 * test_tally.c - the sessions' figures per minute (jobq_tally) and the
 * attempts that did not finish their job (jobq_attempts): nothing is
 * written on the way (claims and acknowledgements only count in memory),
 * a heartbeat or a close writes the counts, a fold of old minutes keeps
 * the totals, an attempt that failed, asked to run later or was lost is
 * recorded with its session and machine, and a prune takes the old
 * records away.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>

/* lib/tally.c: the fold a session's heartbeat makes every ten minutes,
 * now (the library's own, not public). */
int jobq__tally_fold_now(jobq *db);

/* The totals of queue ("" for empty claims); zeroes when it has none. */
static jobq_tally total(jobq *db, const char *queue) {
  jobq_tally *t, z;
  size_t n;
  memset(&z, 0, sizeof z);
  assert_rc(jobq_tally_totals(db, &t, &n), JOBQ_OK);
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].queue, queue) == 0) {
      z = t[i];
      z.queue = NULL;
    }
  jobq_tallies_free(t, n);
  return z;
}

static int64_t waits(const jobq_tally *t) {
  int64_t s = 0;
  for (int i = 0; i < JOBQ_WAIT_BUCKETS; i++) s += t->wait[i];
  return s;
}

static void test_heartbeat_writes_what_was_counted(void **state) {
  tq *t = *state;
  th_put(t->db, "a", "1");
  th_put(t->db, "a", "2");
  int64_t dead = th_put_attempts(t->db, "b", 1);
  int64_t again = th_put_attempts(t->db, "b", 5);
  jobq_session *s = th_session(t->db, 5000);
  size_t n;
  jobq_job *jobs = th_claim(s, NULL, 10, &n);
  assert_int_equal(n, 4);
  for (size_t i = 0; i < n; i++) {
    if (jobs[i].id == dead || jobs[i].id == again)
      assert_rc(jobq_fail(s, &jobs[i], "boom"), JOBQ_OK);
    else
      assert_rc(jobq_complete(s, &jobs[i], "ok", 2, NULL), JOBQ_OK);
  }
  jobq_jobs_free(jobs, n);
  th_claim_none(s, "a");
  /* Nothing on the hot path. */
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_tally"), 0);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  jobq_tally a = total(t->db, "a"), b = total(t->db, "b"), none = total(t->db, "");
  assert_int_equal(a.claimed, 2);
  assert_int_equal(a.done, 2);
  assert_int_equal(waits(&a), 2);
  assert_int_equal(b.claimed, 2);
  assert_int_equal(b.failed, 2);
  assert_int_equal(b.retried, 1);
  assert_int_equal(b.dead, 1);
  assert_int_equal(b.done, 0);
  assert_int_equal(none.empty_claims, 1);
  /* Written once: a second heartbeat adds nothing. */
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  assert_int_equal(total(t->db, "a").done, 2);
  /* Per minute, the same figures. */
  jobq_tally *m;
  size_t nm;
  assert_rc(jobq_tally_minutes(t->db, th_db_now(t->db) - 120000, &m, &nm), JOBQ_OK);
  int64_t done = 0;
  for (size_t i = 0; i < nm; i++) {
    assert_true(m[i].minute > 0);
    done += m[i].done;
  }
  jobq_tallies_free(m, nm);
  assert_int_equal(done, 2);
  jobq_session_close(s);
}

static void test_close_writes_what_was_counted(void **state) {
  tq *t = *state;
  th_put(t->db, "a", "1");
  jobq_session *s = th_session(t->db, 5000);
  jobq_job *j = th_claim_one(s, "a");
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
  assert_int_equal(total(t->db, "a").done, 1);
}

static void test_fold_keeps_totals(void **state) {
  tq *t = *state;
  int64_t now = th_db_now(t->db) / 60000;
  char sql[512];
  /* Two sessions' old minutes, a recent one, and what an earlier fold left. */
  const struct {
    int64_t minute;
    const char *session;
    int done;
  } rows[] = {{now - 200, "s1", 5}, {now - 150, "s1", 7}, {now - 100, "s2", 11},
              {now - 5, "s2", 13},  {0, "", 100}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    snprintf(sql, sizeof sql,
             "INSERT INTO jobq_tally(at_minute, session, queue, claimed, done, w2) "
             "VALUES (%lld, '%s', 'a', %d, %d, %d)",
             (long long)rows[i].minute, rows[i].session, rows[i].done, rows[i].done,
             rows[i].done);
    assert_int_equal(th_sql(t->db, sql), 0);
  }
  jobq_tally before = total(t->db, "a");
  assert_int_equal(before.done, 136);
  assert_rc(jobq__tally_fold_now(t->db), JOBQ_OK);
  jobq_tally after = total(t->db, "a");
  assert_int_equal(after.done, 136);
  assert_int_equal(after.claimed, 136);
  assert_int_equal(after.wait[2], 136);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_tally"), 2);
  assert_int_equal(th_sql_int(t->db, "SELECT done FROM jobq_tally WHERE at_minute = 0"), 123);
  /* Again: nothing old is left to move. */
  assert_rc(jobq__tally_fold_now(t->db), JOBQ_OK);
  assert_int_equal(total(t->db, "a").done, 136);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_tally"), 2);
}

static void test_attempts_recorded(void **state) {
  tq *t = *state;
  int64_t id = th_put_attempts(t->db, "a", 5);
  jobq_session *s = th_session(t->db, 5000);
  for (int k = 0; k < 2; k++) {
    /* The backoff puts the job off: make it due again. */
    assert_int_equal(th_sql(t->db, "UPDATE jobq_jobs SET run_at = 0"), 0);
    jobq_job *j = th_claim_one(s, "a");
    assert_int_equal(j->id, id);
    if (k == 0)
      assert_rc(jobq_fail(s, j, "first <b>error</b>"), JOBQ_OK);
    else
      assert_rc(jobq_retry_later(s, j, 0, "not yet"), JOBQ_OK);
    jobq_jobs_free(j, 1);
  }
  jobq_attempt *a;
  size_t n;
  assert_rc(jobq_attempts(t->db, id, &a, &n), JOBQ_OK);
  assert_int_equal(n, 2);
  assert_int_equal(a[0].attempt, 1);
  assert_string_equal(a[0].outcome, "failed");
  assert_string_equal(a[0].error, "first <b>error</b>");
  assert_string_equal(a[0].session, jobq_session_id(s));
  assert_non_null(a[0].host);
  assert_true(a[0].claimed_at_ms > 0 && a[0].ended_at_ms >= a[0].claimed_at_ms);
  assert_int_equal(a[1].attempt, 2);
  assert_string_equal(a[1].outcome, "retry");
  jobq_attempts_free(a, n);
  jobq_session_close(s);
  /* A completion writes no record. */
  int64_t ok = th_put(t->db, "c", "x");
  s = th_session(t->db, 5000);
  jobq_job *j = th_claim_one(s, "c");
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
  assert_rc(jobq_attempts(t->db, ok, &a, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_attempts_free(a, n);
}

static void test_lost_attempt_recorded(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "a", "x");
  jobq_session *s = th_session(t->db, 200);
  jobq_job *j = th_claim_one(s, "a");
  jobq_jobs_free(j, 1);
  th_sleep_ms(400);
  /* Another session's opening reaps the silent one. */
  jobq_session *other = th_session(t->db, 5000);
  jobq_attempt *a;
  size_t n;
  assert_rc(jobq_attempts(t->db, id, &a, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_string_equal(a[0].outcome, "lost");
  assert_int_equal(a[0].attempt, 1);
  assert_string_equal(a[0].session, jobq_session_id(s));
  assert_non_null(a[0].host);
  jobq_attempts_free(a, n);
  /* The prune of that age takes the record away: it ended before the
   * prune's cut-off (now, strictly before, so a few ms later). */
  th_sleep_ms(5);
  int64_t count;
  assert_rc(jobq_prune(t->db, 0, &count), JOBQ_OK);
  assert_rc(jobq_attempts(t->db, id, &a, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_attempts_free(a, n);
  jobq_session_close(other);
  jobq_session_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_heartbeat_writes_what_was_counted),
      TQ_TEST(test_close_writes_what_was_counted),
      TQ_TEST(test_fold_keeps_totals),
      TQ_TEST(test_attempts_recorded),
      TQ_TEST(test_lost_attempt_recorded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
