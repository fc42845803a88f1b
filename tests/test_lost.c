/*
 * test_lost.c - a database that lost acknowledged writes, whatever its
 * identity and job sequence say: restored under a live worker (found by
 * its heartbeat, or before that by its next claim), under a live producer (found when its connection is
 * made again, though another job took the lost one's id), and under a
 * worker started afterwards (the receipts of jobq_expect()); refused
 * until the epoch is bumped, listed by jobq_doctor(), and not confused
 * with a completion that was pruned.  And a live session that the
 * database shows holding a job its worker no longer holds (its
 * acknowledgement lost with the restore) gives it back once its
 * connection is made again.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

/* Bumps the epoch from a handle of its own. */
static void bump(const char *url) {
  jobq *op = th_open(url);
  assert_rc(jobq_epoch_bump(op, NULL), JOBQ_OK);
  jobq_close(op);
}

/* A receipt of job j's completion, as jobq work keeps it. */
static void receipt(const jobq_job *j, jobq_receipt *r) {
  memset(r, 0, sizeof *r);
  r->id = j->id;
  snprintf(r->queue, sizeof r->queue, "%s", j->queue);
  memcpy(r->claim, j->claim, sizeof r->claim);
  r->claimed_at_ms = j->claimed_at_ms;
}

/* A live worker: it completes a, the backup is taken, it completes b (no
 * job is put meanwhile, so the job sequence is the same), and the backup
 * is restored under it.  Its next heartbeat finds b's completion missing
 * and every write of the handle stops, until the epoch is bumped. */
static void test_restored_under_a_live_worker(void **state) {
  tq *t = *state;
  int64_t a = th_put(t->db, "q", "a");
  int64_t b = th_put(t->db, "q", "b");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *ja = th_claim_one(s, "q");
  assert_int_equal(ja->id, a);
  assert_rc(jobq_complete(s, ja, NULL, 0, NULL), JOBQ_OK);
  th_backup(t, "backup");
  jobq_job *jb = th_claim_one(s, "q");
  assert_int_equal(jb->id, b);
  assert_rc(jobq_complete(s, jb, NULL, 0, NULL), JOBQ_OK);
  jobq_identity before;
  assert_rc(jobq_identity_get(t->db, &before), JOBQ_OK);
  th_restore(t, "backup");
  jobq_identity after;
  assert_rc(jobq_identity_get(t->db, &after), JOBQ_OK);
  assert_int_equal(after.seq, before.seq);
  assert_string_equal(after.queue_id, before.queue_id);

  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_EIDENTITY);
  char want[64];
  snprintf(want, sizeof want, "job %lld, completed by this worker", (long long)b);
  th_assert_msg(t->db, want);
  th_assert_msg(t->db, "jobq epoch bump");
  jobq_job *jobs = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, NULL, 0, 5, &jobs, &n), JOBQ_EIDENTITY);
  assert_int_equal(n, 0);
  int64_t id = 0;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  assert_rc(jobq_put(t->db, &o, &id, NULL), JOBQ_EIDENTITY);
  jobq_session *s2 = NULL;
  assert_rc(jobq_session_open(t->db, NULL, &s2), JOBQ_EIDENTITY);

  /* The operator bumps the epoch: b runs again, on a new session. */
  bump(t->url);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_EEXPIRED);
  jobq_session_close(s);
  s = th_session(t->db, 0);
  jobq_job *again = th_claim_one(s, "q");
  assert_int_equal(again->id, b);
  assert_rc(jobq_complete(s, again, NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  jobq_jobs_free(again, 1);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_session_close(s);
}

/* The same restore, found before the next heartbeat: the worker's next
 * claim reads its last completion back before it hands out a job, so b,
 * whose completion the restore lost, is not handed out again, though a
 * heartbeat found that completion there just before the restore. */
static void test_restored_before_the_next_claim(void **state) {
  tq *t = *state;
  th_put(t->db, "q", "a");
  int64_t b = th_put(t->db, "q", "b");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *ja = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, ja, NULL, 0, NULL), JOBQ_OK);
  th_backup(t, "backup");
  jobq_job *jb = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, jb, NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  th_restore(t, "backup");
  jobq_job *jobs = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, NULL, 0, 5, &jobs, &n), JOBQ_EIDENTITY);
  assert_int_equal(n, 0);
  char want[64];
  snprintf(want, sizeof want, "job %lld, completed by this worker", (long long)b);
  th_assert_msg(t->db, want);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_session_close(s);
}

/* A worker holds a and b from before the backup, and completes a after
 * it; the restore loses a's completion.  Its completion of b, whose
 * claim the restored database still has, is taken: b's completion is
 * now the worker's last, and the restored database has it.  Its next
 * claim still finds a's missing (the first completion since the last
 * check is read back beside the last), and hands out nothing. */
static void test_restored_between_two_completions(void **state) {
  tq *t = *state;
  int64_t a = th_put(t->db, "q", "a");
  th_put(t->db, "q", "b");
  jobq_session *s = th_session(t->db, 60000);
  size_t n = 0;
  jobq_job *jobs = th_claim(s, "q", 2, &n);
  assert_int_equal(n, 2);
  assert_int_equal(jobs[0].id, a);
  th_backup(t, "backup");
  assert_rc(jobq_complete(s, &jobs[0], NULL, 0, NULL), JOBQ_OK);
  th_restore(t, "backup");
  assert_rc(jobq_complete(s, &jobs[1], NULL, 0, NULL), JOBQ_OK);
  jobq_job *more = NULL;
  size_t nmore = 0;
  assert_rc(jobq_claim(s, NULL, 0, 5, &more, &nmore), JOBQ_EIDENTITY);
  assert_int_equal(nmore, 0);
  char want[64];
  snprintf(want, sizeof want, "job %lld, completed by this worker", (long long)a);
  th_assert_msg(t->db, want);
  jobq_jobs_free(jobs, n);
  jobq_session_close(s);
}

/* A long-lived producer puts a, the backup is taken, it puts b; the
 * backup is restored, and another producer's job takes b's id (so the
 * job sequence is where it was).  The producer's connection is made
 * again (a failover would do that): its next put finds that job b is
 * another job now, and refuses. */
static void test_put_lost_on_a_new_connection(void **state) {
  TH_SERVER_ONLY("SQLite makes no connection again: the heartbeats of its workers look");
  tq *t = *state;
  jobq *producer = th_open(t->url);
  th_put(producer, "q", "a");
  th_backup(t, "backup");
  int64_t b = th_put(producer, "q", "b");
  th_restore(t, "backup");
  int64_t other = th_put(t->db, "q", "someone else's");
  assert_int_equal(other, b);
  th_drop_connection(t->url, producer);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  int64_t id = 0;
  /* The put that finds the connection broken may fail with it, but
   * never commits before the check: on PostgreSQL a put of plain jobs
   * goes in one round trip with its commit, and the connection made
   * again there runs the whole put again, check first. */
  int rc = jobq_put(producer, &o, &id, NULL);
  if (rc == JOBQ_ECONN) rc = jobq_put(producer, &o, &id, NULL);
  assert_rc(rc, JOBQ_EIDENTITY);
  char want[80];
  snprintf(want, sizeof want, "job %lld, put into queue 'q' by this producer", (long long)b);
  th_assert_msg(producer, want);
  /* Refused until the operator bumps the epoch. */
  assert_rc(jobq_put(producer, &o, &id, NULL), JOBQ_EIDENTITY);
  bump(t->url);
  assert_rc(jobq_put(producer, &o, &id, NULL), JOBQ_OK);
  jobq_close(producer);
}

/* A completion pruned since is not a lost one: the prune raised the
 * horizon before which archived jobs may be gone. */
static void test_pruned_is_not_lost(void **state) {
  tq *t = *state;
  th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *j = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  /* Finished in the past millisecond at the latest: pruned at once. */
  th_sleep_ms(5);
  int64_t count = 0;
  assert_rc(jobq_prune(t->db, 0, &count), JOBQ_OK);
  assert_int_equal(count, 1);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  th_put(t->db, "q", NULL);
  jobq_job *k = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, k, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_jobs_free(k, 1);
  jobq_session_close(s);
}

/* A worker started after the loss: the receipts of the worker before it
 * (jobq work's state file) tell it, and jobq_doctor() lists the missing
 * jobs; a receipt of another database's, or of an epoch bumped since,
 * changes nothing. */
static void test_expected_receipts(void **state) {
  tq *t = *state;
  jobq *old = th_open(t->url);
  int64_t a = th_put(old, "q", "a");
  int64_t b = th_put(old, "q", "b");
  int64_t c = th_put(old, "q", "c");
  jobq_session *s = th_session(old, 0);
  size_t n = 0;
  jobq_job *jobs = th_claim(s, "q", 3, &n);
  assert_int_equal(n, 3);
  jobq_receipt r[3];
  for (size_t i = 0; i < 3; i++) receipt(&jobs[i], &r[i]);
  assert_rc(jobq_complete(s, &jobs[0], NULL, 0, NULL), JOBQ_OK);
  th_backup(t, "backup");
  assert_rc(jobq_complete(s, &jobs[1], NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_complete(s, &jobs[2], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(jobs, n);
  jobq_session_close(s);
  jobq_identity seen;
  assert_rc(jobq_identity_get(old, &seen), JOBQ_OK);
  jobq_close(old);
  th_restore(t, "backup");

  /* Another database's receipts have no bearing. */
  jobq_identity elsewhere = seen;
  memcpy(elsewhere.queue_id, "00000000-0000-4000-8000-000000000000", 37);
  jobq *fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &elsewhere, r, 3), JOBQ_OK);
  jobq_session *s2 = th_session(fresh, 0);
  jobq_session_close(s2);
  jobq_close(fresh);

  fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &seen, r, 3), JOBQ_EIDENTITY);
  th_assert_msg(fresh, "completed by a worker on this machine");
  th_assert_msg(fresh, "(queue 'q')");
  assert_rc(jobq_session_open(fresh, NULL, &s2), JOBQ_EIDENTITY);
  jobq_check *checks = NULL;
  size_t nc = 0;
  assert_rc(jobq_doctor(fresh, &checks, &nc), JOBQ_OK);
  int listed = 0;
  char want[64];
  snprintf(want, sizeof want, "jobs %lld-%lld", (long long)b, (long long)c);
  for (size_t i = 0; i < nc; i++) {
    if (strcmp(checks[i].name, "lost writes") != 0) continue;
    listed = 1;
    assert_int_equal(checks[i].level, JOBQ_CHECK_FAIL);
    assert_non_null(strstr(checks[i].detail, "2 of the last 3"));
    if (strstr(checks[i].detail, want) == NULL) fail_msg("detail: %s", checks[i].detail);
    assert_non_null(strstr(checks[i].advice, "jobq epoch bump"));
  }
  assert_true(listed);
  jobq_checks_free(checks, nc);
  jobq_close(fresh);

  /* After the bump, the same receipts are of an epoch given up. */
  bump(t->url);
  fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &seen, r, 3), JOBQ_OK);
  s2 = th_session(fresh, 0);
  jobq_job *j = th_claim_one(s2, "q");
  assert_true(j->id == b || j->id == c);
  assert_true(j->id != a);
  jobq_jobs_free(j, 1);
  jobq_session_close(s2);
  jobq_close(fresh);
}

/* The receipts of a worker whose completions are all there pass, and so
 * do those of completions pruned since. */
static void test_expected_receipts_found_or_pruned(void **state) {
  tq *t = *state;
  th_put(t->db, "q", NULL);
  th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  size_t n = 0;
  jobq_job *jobs = th_claim(s, "q", 2, &n);
  assert_int_equal(n, 2);
  jobq_receipt r[2];
  for (size_t i = 0; i < 2; i++) receipt(&jobs[i], &r[i]);
  th_complete_many(s, jobs, n);
  jobq_session_close(s);
  jobq_identity seen;
  assert_rc(jobq_identity_get(t->db, &seen), JOBQ_OK);
  jobq *fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &seen, r, 2), JOBQ_OK);
  jobq_close(fresh);
  th_sleep_ms(5);
  int64_t count = 0;
  assert_rc(jobq_prune(t->db, 0, &count), JOBQ_OK);
  assert_int_equal(count, 2);
  fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &seen, r, 2), JOBQ_OK);
  s = th_session(fresh, 0);
  jobq_session_close(s);
  jobq_close(fresh);
  /* A receipt that names no claim token is refused as such. */
  r[0].claim[3] = '\0';
  fresh = th_open(t->url);
  assert_rc(jobq_expect(fresh, &seen, r, 2), JOBQ_EINVAL);
  th_assert_msg(fresh, "receipt 0");
  jobq_close(fresh);
}

/* The database shows a job under a live session that its worker no
 * longer holds: the worker failed it (to run again later), and a backup
 * taken between the claim and that acknowledgement was restored.  Its
 * identity and the handle's marks are as they were (the failure is no
 * mark), and the session's heartbeats would keep the job running as long
 * as the worker lives.  Once the connection is made again (as after a
 * failover), the session's next transaction gives it back. */
static void test_job_the_worker_no_longer_holds(void **state) {
  TH_SERVER_ONLY("SQLite makes no connection again: a restored file is found by the "
                 "check of acknowledged writes instead");
  tq *t = *state;
  int64_t id = th_put(t->db, "q", "x");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *j = th_claim_one(s, "q");
  th_backup(t, "backup");
  assert_rc(jobq_fail(s, j, "failed once"), JOBQ_OK);
  th_restore(t, "backup");
  /* Without a new connection the session sees nothing amiss. */
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  th_drop_connection(t->url, t->db);
  int rc = jobq_heartbeat(s, NULL, NULL);
  if (rc == JOBQ_ECONN) rc = jobq_heartbeat(s, NULL, NULL);
  assert_rc(rc, JOBQ_OK);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->prev_lost, 1);
  assert_null(i->session);
  assert_non_null(i->last_error);
  assert_non_null(strstr(i->last_error, "no longer held"));
  jobq_info_free(i, 1);
  /* A job the worker does hold stays with it. */
  jobq_job *k = th_claim_one(s, "q");
  assert_int_equal(k->id, id);
  th_drop_connection(t->url, t->db);
  rc = jobq_heartbeat(s, NULL, NULL);
  if (rc == JOBQ_ECONN) rc = jobq_heartbeat(s, NULL, NULL);
  assert_rc(rc, JOBQ_OK);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  assert_rc(jobq_complete(s, k, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_jobs_free(k, 1);
  jobq_session_close(s);
}

/* Views of one session on two connections (jobq_session_join): a view
 * whose connection was made again gives back only what its own claims
 * left, never the jobs another view holds. */
static void test_views_reconcile_their_own(void **state) {
  TH_SERVER_ONLY("SQLite makes no connection again");
  tq *t = *state;
  int64_t x = th_put(t->db, "q", "x");
  int64_t y = th_put(t->db, "q", "y");
  jobq_session *s = th_session(t->db, 60000);
  jobq *db2;
  assert_rc(jobq_open(t->url, &db2), JOBQ_OK);
  jobq_session *v;
  assert_rc(jobq_session_join(db2, s, &v), JOBQ_OK);
  jobq_job *a = th_claim_one(s, "q");
  jobq_job *b = th_claim_one(v, "q");
  assert_int_equal(a->id, x);
  assert_int_equal(b->id, y);
  th_drop_connection(t->url, db2);
  int rc = jobq_heartbeat(v, NULL, NULL);
  if (rc == JOBQ_ECONN) rc = jobq_heartbeat(v, NULL, NULL);
  assert_rc(rc, JOBQ_OK);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_RUNNING);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_RUNNING);
  assert_rc(jobq_complete(s, a, NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_complete(v, b, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(a, 1);
  jobq_jobs_free(b, 1);
  jobq_session_close(v);
  jobq_session_close(s);
  jobq_close(db2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_restored_under_a_live_worker),
      TQ_TEST(test_restored_before_the_next_claim),
      TQ_TEST(test_restored_between_two_completions),
      TQ_TEST(test_put_lost_on_a_new_connection),
      TQ_TEST(test_pruned_is_not_lost),
      TQ_TEST(test_expected_receipts),
      TQ_TEST(test_expected_receipts_found_or_pruned),
      TQ_TEST(test_job_the_worker_no_longer_holds),
      TQ_TEST(test_views_reconcile_their_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
