/*
 * test_session.c - sessions and leases on the database clock: a session
 * that stops heartbeating is reaped by another session's heartbeat and its
 * jobs go back to ready (attempt spent, prev_lost set), its acks are then
 * fenced and its heartbeat says JOBQ_EEXPIRED; a heartbeating session keeps
 * its jobs; closing a session gives its jobs back without spending an
 * attempt; the stall guard renews every lease instead of reaping when no
 * session heartbeated for a lease; cancel requests reach the worker through
 * heartbeats and extends; jobq_sessions() lists sessions.  One test
 * SIGKILLs a real worker process.
 */
#include "helpers.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_open_and_list(void **state) {
  tq *t = *state;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  assert_int_equal(so.lease_ms, JOBQ_DEFAULT_LEASE_MS);
  so.name = "alpha";
  jobq_session *a = NULL, *b = NULL;
  assert_rc(jobq_session_open(t->db, &so, &a), JOBQ_OK);
  assert_int_equal(jobq_session_lease_ms(a), JOBQ_DEFAULT_LEASE_MS);
  so.name = "beta";
  so.lease_ms = 750;
  assert_rc(jobq_session_open(t->db, &so, &b), JOBQ_OK);
  assert_int_equal(jobq_session_lease_ms(b), 750);
  const char *ida = jobq_session_id(a), *idb = jobq_session_id(b);
  assert_int_equal(strlen(ida), 32);
  assert_int_equal(strspn(ida, "0123456789abcdef"), 32);
  assert_string_not_equal(ida, idb);

  th_put(t->db, NULL, NULL);
  th_put(t->db, NULL, NULL);
  jobq_job *j = th_claim_one(b, NULL);
  jobq_session_set_in_flight(b, 3);
  assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);

  jobq_identity ident;
  assert_rc(jobq_identity_get(t->db, &ident), JOBQ_OK);
  jobq_session_info *si = NULL;
  size_t n = 0;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 2);
  int found = 0;
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(si[k].pid, (int64_t)getpid());
    assert_non_null(si[k].host);
    assert_true(strlen(si[k].host) > 0);
    assert_int_equal(si[k].epoch, ident.epoch);
    assert_int_equal(si[k].expired, 0);
    assert_true(si[k].expires_at_ms > ident.now_ms);
    assert_true(si[k].heartbeat_at_ms >= si[k].started_at_ms);
    if (strcmp(si[k].id, ida) == 0) {
      found |= 1;
      assert_string_equal(si[k].name, "alpha");
      assert_int_equal(si[k].lease_ms, JOBQ_DEFAULT_LEASE_MS);
      assert_int_equal(si[k].claimed, 0);
    } else {
      assert_string_equal(si[k].id, idb);
      found |= 2;
      assert_string_equal(si[k].name, "beta");
      assert_int_equal(si[k].lease_ms, 750);
      assert_int_equal(si[k].claimed, 1);
      assert_int_equal(si[k].in_flight, 3);
    }
  }
  assert_int_equal(found, 3);
  jobq_sessions_free(si, n);
  jobq_sessions_free(NULL, 0);
  jobq_jobs_free(j, 1);

  jobq_session_close(a);
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_string_equal(si[0].id, idb);
  jobq_sessions_free(si, n);
  jobq_session_close(b);
  jobq_session_close(NULL);
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_sessions_free(si, n);

  /* A lease under 100 ms is refused. */
  so.lease_ms = 50;
  jobq_session *c = NULL;
  assert_rc(jobq_session_open(t->db, &so, &c), JOBQ_EINVAL);
  th_assert_msg(t->db, "lease");
  jobq_session_close(c);
}

/* The live sessions a heartbeat counts, its own among them: those whose
 * lease runs, not one closed. */
static void test_peers_counted(void **state) {
  tq *t = *state;
  jobq_session *a = th_session(t->db, 30000);
  assert_int_equal(jobq_session_peers(a), 0);
  jobq *db2 = th_open(t->url);
  jobq_session *b = th_session(db2, 30000), *c = th_session(db2, 30000);
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
  assert_int_equal(jobq_session_peers(a), 3);
  jobq_session_close(c);
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
  assert_int_equal(jobq_session_peers(a), 2);
  jobq_session_close(b);
  jobq_session_close(a);
  jobq_close(db2);
}

static void test_lease_expiry_reaps(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", "x");
  jobq *db2 = th_open(t->url);
  int64_t opened = th_mono_ms();
  jobq_session *a = th_session(t->db, 250);
  jobq_session *b = th_session(db2, 250);
  jobq_job *ja = th_claim_one(a, "q");

  /* b beats; a says nothing, and is reaped once its lease ran out (not
   * before). */
  th_beat_until(b, t->db, id, JOBQ_STATE_READY, 5000);
  assert_true(th_mono_ms() - opened >= 250);
  /* The heartbeat that ended a says so (its own commit wakes no one). */
  assert_int_equal(jobq_session_reaped(b), 1);
  assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
  assert_int_equal(jobq_session_reaped(b), 0);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->prev_lost, 1);
  assert_int_equal(i->attempts, 1);
  assert_null(i->session);
  jobq_info_free(i, 1);

  /* a is gone: its heartbeat, claims and acks all say so. */
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_EEXPIRED);
  assert_rc(jobq_complete(a, ja, "late", 4, NULL), JOBQ_ELOST);
  assert_rc(jobq_extend(a, ja, 1000), JOBQ_ELOST);
  jobq_job *none = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(a, NULL, 0, 5, &none, &n), JOBQ_EEXPIRED);
  assert_int_equal(n, 0);

  jobq_session_info *si = NULL;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_string_equal(si[0].id, jobq_session_id(b));
  jobq_sessions_free(si, n);

  /* The next claim of the job is attempt 2 and says the last was lost. */
  jobq_job *jb = th_claim_one(b, "q");
  assert_int_equal(jb->id, id);
  assert_int_equal(jb->attempt, 2);
  assert_int_equal(jb->prev_lost, 1);
  assert_string_not_equal(jb->claim, ja->claim);
  /* Closing the dead session does not touch the job's new holder. */
  jobq_session_close(a);
  jobq_job_info *after = th_show(t->db, id);
  assert_int_equal(after->state, JOBQ_STATE_RUNNING);
  assert_string_equal(after->session, jobq_session_id(b));
  jobq_info_free(after, 1);
  assert_rc(jobq_complete(b, jb, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_session_close(b);
  jobq_close(db2);
}

/* The other acknowledgements of a reaped session are fenced too, and
 * change nothing: not the state, not the attempts, not the error. */
static void test_reaped_session_fail_release(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", "x");
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 200);
  jobq_session *b = th_session(db2, 200);
  jobq_job *ja = th_claim_one(a, "q");
  th_beat_until(b, t->db, id, JOBQ_STATE_READY, 5000);
  assert_rc(jobq_fail(a, ja, "late"), JOBQ_ELOST);
  assert_rc(jobq_retry_later(a, ja, 60000, "late"), JOBQ_ELOST);
  assert_rc(jobq_release(a, ja), JOBQ_ELOST);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->attempts, 1);
  assert_true(i->run_at_ms <= th_db_now(t->db));
  if (i->last_error != NULL) assert_string_not_equal(i->last_error, "late");
  jobq_info_free(i, 1);
  jobq_jobs_free(ja, 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

/* A job whose only attempt was lost with its session is not run a second
 * time beyond max_attempts. */
static void test_lost_last_attempt(void **state) {
  tq *t = *state;
  int64_t id = th_put_attempts(t->db, "q", 1);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 200);
  jobq_session *b = th_session(db2, 200);
  jobq_job *ja = th_claim_one(a, "q");
  /* Reaped: back to ready for another try within max_attempts, or dead. */
  int64_t end = th_mono_ms() + 5000;
  while (th_state(t->db, id) == JOBQ_STATE_RUNNING && th_mono_ms() < end) {
    assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
    th_sleep_ms(50);
  }
  jobq_jobs_free(ja, 1);
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_EEXPIRED);
  jobq_job_info *i = th_show(t->db, id);
  int st = i->state;
  jobq_info_free(i, 1);
  if (st == JOBQ_STATE_READY) {
    jobq_job *j = th_claim_one(b, "q");
    if (j->attempt > j->max_attempts)
      fail_msg("attempt %d of %d", j->attempt, j->max_attempts);
    jobq_jobs_free(j, 1);
  } else {
    assert_int_equal(st, JOBQ_STATE_DEAD);
  }
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

static void test_heartbeat_keeps_jobs(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", NULL);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 300);
  jobq_session *b = th_session(db2, 300);
  jobq_job *j = th_claim_one(a, "q");
  /* Both beat for several leases; a keeps its job. */
  int64_t end = th_mono_ms() + 800;
  while (th_mono_ms() < end) {
    assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
    assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
    th_sleep_ms(40);
  }
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->session, jobq_session_id(a));
  jobq_info_free(i, 1);
  th_claim_none(b, "q");
  assert_rc(jobq_complete(a, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

/* jobq_reap() ends a session whose lease ran out while another session
 * is alive and beating.  Timing: a's lease must run out after b's last
 * beat but well within b's idea of "recently"; a slow machine can miss
 * that window, so the scenario is retried, and skipped only if it never
 * fits. */
static void test_reap_call(void **state) {
  tq *t = *state;
  jobq *db2 = th_open(t->url);
  for (int round = 0; round < 3; round++) {
    int64_t id = th_put(t->db, "q", NULL);
    jobq_session *b = th_session(db2, 5000);
    int64_t before_a = th_mono_ms();
    jobq_session *a = th_session(t->db, 400);
    int64_t after_a = th_mono_ms();
    jobq_job *j = th_claim_one(a, "q");
    th_sleep_ms(before_a + 250 - th_mono_ms());
    assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
    int64_t beat = th_mono_ms();
    int fits = beat - before_a < 380;
    th_sleep_ms(after_a + 480 - th_mono_ms());
    int64_t count = -1;
    assert_rc(jobq_reap(db2, &count), JOBQ_OK);
    fits = fits && th_mono_ms() - beat < 350;
    if (fits) {
      assert_int_equal(count, 1);
      assert_rc(jobq_reap(db2, &count), JOBQ_OK);
      assert_int_equal(count, 0);
      jobq_job_info *i = th_show(t->db, id);
      assert_int_equal(i->state, JOBQ_STATE_READY);
      assert_int_equal(i->prev_lost, 1);
      jobq_info_free(i, 1);
      assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_EEXPIRED);
      assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
    }
    jobq_jobs_free(j, 1);
    jobq_session_close(a);
    jobq_session_close(b);
    if (fits) {
      jobq_close(db2);
      return;
    }
  }
  jobq_close(db2);
  print_message("skipped: the machine was too slow three times for the "
                "timing window this test needs\n");
  skip();
}

/* A running job whose session row is gone (a restore, a hand edit) is
 * lost as a reaped session's is.  A session's own reap looks for such
 * jobs once a minute at most per handle (the look walks the session
 * index); jobq_reap() looks every time. */
static void test_job_whose_session_vanished(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *j = th_claim_one(s, "q");
  /* Its open looks, and finds nothing. */
  jobq *db2 = th_open(t->url);
  jobq_session *other = th_session(db2, 60000);
  char sql[128];
  snprintf(sql, sizeof sql, "DELETE FROM jobq_sessions WHERE id = '%s'", jobq_session_id(s));
  assert_int_equal(th_sql(t->db, sql), 0);
  assert_rc(jobq_heartbeat(other, NULL, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  assert_rc(jobq_reap(db2, NULL), JOBQ_OK);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->prev_lost, 1);
  assert_non_null(i->last_error);
  assert_non_null(strstr(i->last_error, "vanished"));
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
  jobq_session_close(other);
  jobq_close(db2);
}

/* A handle's first reap looks for running jobs whose session is gone
 * in the session index, not by walking every job: on SQLite that look
 * used to read the whole table, 140 ms beside a million ready jobs,
 * holding the write lock.  SQLite counts the rows a statement steps
 * through in full scans; the look's statement, found among the
 * connection's prepared ones, must have stepped through none. */
static void test_orphans_look_skips_ready_jobs(void **state) {
  TH_SQLITE_ONLY("the count of a statement's full-scan steps is SQLite's");
  tq *t = *state;
  th_put_many(t->db, "q", 2000, 0);
  jobq *db2 = th_open(t->url);
  jobq_session *other = th_session(db2, 60000);
  /* Another session is there, so this open reaps, and looks. */
  jobq_session *s = th_session(t->db, 60000);
  sqlite3 *h = jobq_native(t->db);
  int found = 0;
  for (sqlite3_stmt *st = sqlite3_next_stmt(h, NULL); st != NULL; st = sqlite3_next_stmt(h, st)) {
    const char *sql = sqlite3_sql(st);
    if (sql == NULL || strstr(sql, "NOT EXISTS (SELECT 1 FROM jobq_sessions") == NULL) continue;
    found = 1;
    int steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0);
    if (steps != 0)
      fail_msg("the look for jobs whose session is gone stepped through %d rows of full "
               "scans: expected none",
               steps);
  }
  if (!found) fail_msg("the session's open did not look for jobs whose session is gone");
  jobq_session_close(s);
  jobq_session_close(other);
  jobq_close(db2);
}

/* jobq_reap() applies the stall guard too: when no session heartbeated
 * for a lease, it holds reaping back for a lease and says so, and gives
 * every session that lease; a session that heartbeats meanwhile keeps its
 * jobs, one that stays silent is reaped by the next call after it. */
static void test_reap_call_stall_guard(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", NULL);
  int64_t y = th_put(t->db, "q", NULL);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 300);
  jobq_session *b = th_session(db2, 300);
  jobq_job *ja = th_claim_one(a, "q");
  jobq_job *jb = th_claim_one(b, "q");
  assert_int_equal(ja->id, x);
  assert_int_equal(jb->id, y);
  th_sleep_ms(700);
  jobq *op = th_open(t->url);
  int64_t count = -1, held = -1;
  assert_rc(jobq_reap_held(op, &count, &held), JOBQ_OK);
  assert_int_equal(count, 0);
  assert_int_equal(held, 300);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_RUNNING);
  /* Called again within the lease, it still holds back, for less. */
  assert_rc(jobq_reap_held(op, &count, &held), JOBQ_OK);
  assert_int_equal(count, 0);
  assert_true(held > 0 && held <= 300);
  /* a is alive and heartbeats (every lease/3); b stays silent. */
  int64_t until = th_mono_ms() + held + 50;
  while (th_mono_ms() < until) {
    assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
    th_sleep_ms(100);
  }
  /* b was reaped, by a's heartbeat or by this call: the guard is over. */
  assert_rc(jobq_reap_held(op, &count, &held), JOBQ_OK);
  assert_int_equal(held, 0);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_RUNNING);
  assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_EEXPIRED);
  assert_rc(jobq_complete(a, ja, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
  jobq_close(op);
}

/* A worker that died holding a job: a session of lease 300ms on a handle
 * of its own (*db2), its job (*j), and 700ms of silence since; the job's
 * id. */
static int64_t dead_worker(tq *t, jobq **db2, jobq_session **s, jobq_job **j) {
  int64_t id = th_put(t->db, "q", NULL);
  *db2 = th_open(t->url);
  *s = th_session(*db2, 300);
  *j = th_claim_one(*s, "q");
  th_sleep_ms(700);
  return id;
}

/* The reproduction of a dead worker with no worker left: its session has
 * been silent for longer than its lease, and an operator's jobq_reap() is
 * the only reaper.  The guard holds back once, for the lease; called again
 * after it, the session is reaped (the guard used to renew the dead
 * session's heartbeat, so that it was never reaped at all). */
static void test_reap_with_no_worker_alive(void **state) {
  tq *t = *state;
  jobq *db2;
  jobq_session *dead;
  jobq_job *j;
  int64_t id = dead_worker(t, &db2, &dead, &j);
  int64_t count = -1, held = -1;
  assert_rc(jobq_reap_held(t->db, &count, &held), JOBQ_OK);
  assert_int_equal(count, 0);
  assert_int_equal(held, 300);
  /* The session's heartbeat was not made up: it is as old as it was. */
  jobq_session_info *si = NULL;
  size_t n = 0;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_true(th_db_now(t->db) - si[0].heartbeat_at_ms >= 700);
  jobq_sessions_free(si, n);
  th_sleep_ms(held + 50);
  assert_rc(jobq_reap_held(t->db, &count, &held), JOBQ_OK);
  assert_int_equal(held, 0);
  assert_int_equal(count, 1);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->prev_lost, 1);
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(dead);
  jobq_close(db2);
}

/* A lone worker that starts after the others died: its session open sees
 * every session silent and holds reaping back; its own heartbeats then
 * show the database working, and the dead session is reaped once the
 * lease the guard gave it has run out. */
static void test_lone_worker_reaps_the_dead(void **state) {
  tq *t = *state;
  jobq *db2;
  jobq_session *dead;
  jobq_job *j;
  int64_t id = dead_worker(t, &db2, &dead, &j);
  jobq_session *lone = th_session(t->db, 300);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  int64_t took = th_beat_until(lone, t->db, id, JOBQ_STATE_READY, 5000);
  assert_true(took < 1500);
  jobq_jobs_free(j, 1);
  jobq_session_close(lone);
  jobq_session_close(dead);
  jobq_close(db2);
}

static void test_close_releases(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", NULL);
  int64_t y = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 5, &n);
  assert_int_equal(n, 2);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
  for (int k = 0; k < 2; k++) {
    jobq_job_info *i = th_show(t->db, k ? y : x);
    assert_int_equal(i->state, JOBQ_STATE_READY);
    assert_int_equal(i->attempts, 0);
    assert_int_equal(i->prev_lost, 0);
    assert_null(i->session);
    jobq_info_free(i, 1);
  }
  s = th_session(t->db, 0);
  j = th_claim(s, "q", 5, &n);
  assert_int_equal(n, 2);
  assert_int_equal(j[0].attempt, 1);
  assert_int_equal(j[0].prev_lost, 0);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* Every session idle for longer than a lease (as when the database itself
 * stalled): the first heartbeat afterwards must renew, not reap. */
static void test_stall_guard(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", NULL);
  int64_t y = th_put(t->db, "q", NULL);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 300);
  jobq_session *b = th_session(db2, 300);
  jobq_job *ja = th_claim_one(a, "q");
  jobq_job *jb = th_claim_one(b, "q");
  assert_int_equal(ja->id, x);
  assert_int_equal(jb->id, y);

  th_sleep_ms(900);
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
  jobq_job_info *i = th_show(t->db, y);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_string_equal(i->session, jobq_session_id(b));
  jobq_info_free(i, 1);
  assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_OK);
  assert_rc(jobq_complete(b, jb, NULL, 0, NULL), JOBQ_OK);
  assert_rc(jobq_complete(a, ja, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(ja, 1);
  jobq_jobs_free(jb, 1);

  /* The guard does not stop reaping for good: once a beats alone, b's
   * silence ends it. */
  int64_t z = th_put(t->db, "q", NULL);
  jb = th_claim_one(b, "q");
  assert_int_equal(jb->id, z);
  th_beat_until(a, t->db, z, JOBQ_STATE_READY, 5000);
  assert_rc(jobq_heartbeat(b, NULL, NULL), JOBQ_EEXPIRED);
  jobq_jobs_free(jb, 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

static void test_cancel_requests(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", NULL);
  int64_t y = th_put(t->db, "q", NULL);
  int64_t z = th_put(t->db, "q", NULL);
  int64_t w = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "q", 4, &n);
  assert_int_equal(n, 4);

  int64_t *ids = NULL;
  size_t nc = 99;
  assert_rc(jobq_heartbeat(s, &ids, &nc), JOBQ_OK);
  assert_int_equal(nc, 0);
  free(ids);

  int now = 9;
  assert_rc(jobq_cancel(t->db, x, &now), JOBQ_OK);
  assert_int_equal(now, 0);
  assert_rc(jobq_cancel(t->db, y, NULL), JOBQ_OK);
  assert_rc(jobq_cancel(t->db, z, NULL), JOBQ_OK);
  jobq_job_info *i = th_show(t->db, x);
  assert_int_equal(i->state, JOBQ_STATE_RUNNING);
  assert_int_equal(i->cancel_requested, 1);
  jobq_info_free(i, 1);

  ids = NULL;
  assert_rc(jobq_heartbeat(s, &ids, &nc), JOBQ_OK);
  assert_int_equal(nc, 3);
  assert_non_null(ids);
  int seen = 0;
  for (size_t k = 0; k < nc; k++)
    seen |= ids[k] == x ? 1 : ids[k] == y ? 2 : ids[k] == z ? 4 : 8;
  assert_int_equal(seen, 7);
  free(ids);

  /* extend tells too, and still moves the deadline. */
  assert_rc(jobq_extend(s, &j[0], 60000), JOBQ_ECANCELLED);
  assert_rc(jobq_extend(s, &j[3], 60000), JOBQ_OK);

  /* fail and release end a cancelled job as cancelled; complete records
   * it done. */
  jobq_ack a[3];
  jobq_ack_init(&a[0], &j[0], JOBQ_ACK_FAIL);
  a[0].data = "stopped";
  a[0].len = 7;
  jobq_ack_init(&a[1], &j[1], JOBQ_ACK_RELEASE);
  jobq_ack_init(&a[2], &j[2], JOBQ_ACK_COMPLETE);
  assert_rc(jobq_ack_many(s, a, 3), JOBQ_OK);
  for (int k = 0; k < 3; k++) assert_int_equal(a[k].status, JOBQ_OK);
  assert_int_equal(a[0].outcome, JOBQ_STATE_CANCELLED);
  assert_int_equal(a[1].outcome, JOBQ_STATE_CANCELLED);
  assert_int_equal(a[2].outcome, JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_CANCELLED);
  assert_int_equal(th_state(t->db, z), JOBQ_STATE_DONE);
  /* Nothing of them comes back. */
  th_claim_none(s, "q");
  ids = NULL;
  assert_rc(jobq_heartbeat(s, &ids, &nc), JOBQ_OK);
  assert_int_equal(nc, 0);
  free(ids);
  assert_rc(jobq_complete(s, &j[3], NULL, 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, w), JOBQ_STATE_DONE);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

static void test_cancelled_job_on_close(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_rc(jobq_cancel(t->db, x, NULL), JOBQ_OK);
  jobq_session_close(s);
  /* Given back by close, a job whose cancel was requested is cancelled. */
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_CANCELLED);
  jobq_jobs_free(j, 1);
}

static void test_expired_flag(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 150);
  th_sleep_ms(400);
  jobq_session_info *si = NULL;
  size_t n = 0;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(si[0].expired, 1);
  assert_true(si[0].expires_at_ms < th_db_now(t->db));
  jobq_sessions_free(si, n);
  jobq_session_close(s);
}

/* A real worker process claims a job and is killed with SIGKILL; another
 * session's heartbeats bring the job back. */
struct victim {
  const char *url;
  int fd;
};

static int victim_main(void *arg) {
  struct victim *v = arg;
  jobq_session *s = th_child_session(v->url, 300);
  if (s == NULL) return 11;
  jobq_job *j = NULL;
  size_t n = 0;
  if (jobq_claim(s, NULL, 0, 1, &j, &n) != JOBQ_OK || n != 1) return 12;
  if (write(v->fd, j->claim, JOBQ_CLAIM_LEN) != JOBQ_CLAIM_LEN) return 13;
  for (;;) pause();
}

static void test_killed_worker_reaped(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", NULL);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  struct victim v = {t->url, fds[1]};
  pid_t pid = th_fork(victim_main, &v);
  close(fds[1]);
  char claim[JOBQ_CLAIM_LEN + 1] = {0};
  ssize_t got = 0;
  while (got < JOBQ_CLAIM_LEN) {
    ssize_t r = read(fds[0], claim + got, (size_t)(JOBQ_CLAIM_LEN - got));
    if (r <= 0) break;
    got += r;
  }
  close(fds[0]);
  if (got != JOBQ_CLAIM_LEN) {
    kill(pid, SIGKILL);
    fail_msg("worker exited with %d before claiming", th_wait(pid));
  }
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_RUNNING);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(th_wait(pid), 128 + SIGKILL);

  jobq_session *s = th_session(t->db, 5000);
  th_beat_until(s, t->db, id, JOBQ_STATE_READY, 5000);
  jobq_job *j = th_claim_one(s, "q");
  assert_int_equal(j->id, id);
  assert_int_equal(j->attempt, 2);
  assert_int_equal(j->prev_lost, 1);
  assert_string_not_equal(j->claim, claim);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* A session that dies holding many jobs of every kind: the first five
 * on their only attempt (one of them cancelled), the rest
 * with attempts left, the first 30 started at once and the others held
 * back, of which one is started later and one cancelled.  Reaped, each
 * ends its own way. */
#define MANY 45
#define START_NOW 30
#define LAST_ATTEMPT 5
#define LATE_START 31
static const int cancelled_ids[] = {2, 35};

struct many_victim {
  const char *url;
  const int64_t *ids;
};

static int die_holding_many(void *arg) {
  const struct many_victim *v = arg;
  jobq_session *s = th_child_session(v->url, 300);
  if (s == NULL) return 11;
  jobq *db = NULL;
  if (jobq_open(v->url, &db) != JOBQ_OK) return 10;
  jobq_job *j = NULL;
  size_t n = 0;
  const char *q = "q";
  jobq_session_start_now(s, START_NOW);
  if (jobq_claim(s, &q, 1, MANY, &j, &n) != JOBQ_OK || n != MANY) return 12;
  for (size_t k = 0; k < n; k++)
    if (j[k].id != v->ids[k]) return 13;
  jobq_session_started(s, &j[LATE_START]);
  if (jobq_heartbeat(s, NULL, NULL) != JOBQ_OK) return 14;
  for (size_t k = 0; k < sizeof cancelled_ids / sizeof cancelled_ids[0]; k++)
    if (jobq_cancel(db, v->ids[cancelled_ids[k]], NULL) != JOBQ_OK) return 15;
  raise(SIGKILL);
  return 16;
}

static int is_cancelled(int k) {
  for (size_t c = 0; c < sizeof cancelled_ids / sizeof cancelled_ids[0]; c++)
    if (cancelled_ids[c] == k) return 1;
  return 0;
}

static void test_lost_session_many_jobs(void **state) {
  tq *t = *state;
  int64_t ids[MANY];
  for (int k = 0; k < MANY; k++) ids[k] = th_put_attempts(t->db, "q", k < LAST_ATTEMPT ? 1 : 25);
  struct many_victim v = {t->url, ids};
  pid_t pid = th_fork(die_holding_many, &v);
  assert_int_equal(th_wait(pid), 128 + SIGKILL);
  jobq_session *s = th_session(t->db, 5000);
  th_beat_until(s, t->db, ids[MANY - 1], JOBQ_STATE_READY, 5000);
  for (int k = 0; k < MANY; k++) {
    jobq_job_info *i = th_show(t->db, ids[k]);
    int started = k < START_NOW || k == LATE_START;
    if (is_cancelled(k)) {
      assert_int_equal(i->state, JOBQ_STATE_CANCELLED);
    } else if (k < LAST_ATTEMPT) {
      assert_int_equal(i->state, JOBQ_STATE_DEAD);
      assert_string_equal(i->last_error, "lease expired: the worker was lost on attempt 1 of 1");
    } else {
      if (i->state != JOBQ_STATE_READY) fail_msg("job %d is in state %d", k, i->state);
      assert_int_equal(i->attempts, started);
      assert_int_equal(i->prev_lost, 1);
      assert_null(i->session);
      assert_non_null(i->last_error);
      assert_int_equal(strstr(i->last_error, "attempt not counted") != NULL, !started);
    }
    jobq_info_free(i, 1);
  }
  th_assert_counts_agree(t->db);
  size_t n = 0;
  jobq_session_info *si = NULL;
  assert_rc(jobq_sessions(t->db, &si, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  jobq_sessions_free(si, n);
  jobq_session_close(s);
}

/* Closing a session gives back every job it holds, started or not, but
 * the one whose cancel was asked. */
static void test_close_gives_back_many(void **state) {
  tq *t = *state;
  int64_t ids[MANY];
  for (int k = 0; k < MANY; k++) ids[k] = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 0);
  jobq_session_start_now(s, START_NOW);
  size_t n;
  jobq_job *j = th_claim(s, "q", MANY, &n);
  assert_int_equal(n, MANY);
  jobq_session_started(s, &j[LATE_START]);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  assert_rc(jobq_cancel(t->db, ids[7], NULL), JOBQ_OK);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
  for (int k = 0; k < MANY; k++) {
    jobq_job_info *i = th_show(t->db, ids[k]);
    if (k == 7) {
      assert_int_equal(i->state, JOBQ_STATE_CANCELLED);
    } else {
      assert_int_equal(i->state, JOBQ_STATE_READY);
      assert_int_equal(i->attempts, 0);
      assert_int_equal(i->prev_lost, 0);
      assert_null(i->session);
    }
    jobq_info_free(i, 1);
  }
  th_assert_counts_agree(t->db);
}

/* One session on two handles (jobq_session_join): each view claims and
 * acknowledges its own jobs, the figures add up under the one session, a
 * view's close leaves the session open, and the root's close gives back
 * what any view still held. */
static void test_joined_views(void **state) {
  tq *t = *state;
  int64_t ids[5];
  for (int i = 0; i < 5; i++) ids[i] = th_put(t->db, "q", NULL);
  jobq_session *s = th_session(t->db, 60000);
  jobq *db2;
  assert_rc(jobq_open(t->url, &db2), JOBQ_OK);
  jobq_session *v;
  assert_rc(jobq_session_join(db2, s, &v), JOBQ_OK);
  assert_string_equal(jobq_session_id(v), jobq_session_id(s));
  size_t n1, n2;
  jobq_job *a = th_claim(s, "q", 2, &n1);
  jobq_job *b = th_claim(v, "q", 2, &n2);
  assert_int_equal(n1, 2);
  assert_int_equal(n2, 2);
  for (size_t i = 0; i < 2; i++) {
    assert_rc(jobq_complete(s, &a[i], NULL, 0, NULL), JOBQ_OK);
    assert_rc(jobq_complete(v, &b[i], NULL, 0, NULL), JOBQ_OK);
  }
  assert_rc(jobq_heartbeat(v, NULL, NULL), JOBQ_OK);
  jobq_session_info *si;
  size_t ns;
  assert_rc(jobq_sessions(t->db, &si, &ns), JOBQ_OK);
  assert_int_equal(ns, 1);
  assert_int_equal(si[0].done, 4);
  jobq_sessions_free(si, ns);
  /* A view's close leaves the session, and the jobs it holds, to the
   * root. */
  jobq_job *c = th_claim_one(v, "q");
  assert_int_equal(c->id, ids[4]);
  jobq_session_close(v);
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, ids[4]), JOBQ_STATE_RUNNING);
  jobq_session_close(s);
  assert_int_equal(th_state(t->db, ids[4]), JOBQ_STATE_READY);
  /* No joining a session that is gone. */
  s = th_session(t->db, 60000);
  int64_t epoch;
  assert_rc(jobq_epoch_bump(t->db, &epoch), JOBQ_OK);
  jobq_session *w = NULL;
  assert_rc(jobq_session_join(db2, s, &w), JOBQ_EEXPIRED);
  assert_null(w);
  jobq_jobs_free(a, n1);
  jobq_jobs_free(b, n2);
  jobq_jobs_free(c, 1);
  jobq_session_close(s);
  jobq_close(db2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_open_and_list),
      TQ_TEST(test_peers_counted),
      TQ_TEST(test_lease_expiry_reaps),
      TQ_TEST(test_reaped_session_fail_release),
      TQ_TEST(test_lost_last_attempt),
      TQ_TEST(test_heartbeat_keeps_jobs),
      TQ_TEST(test_reap_call),
      TQ_TEST(test_reap_call_stall_guard),
      TQ_TEST(test_reap_with_no_worker_alive),
      TQ_TEST(test_lone_worker_reaps_the_dead),
      TQ_TEST(test_job_whose_session_vanished),
      TQ_TEST(test_orphans_look_skips_ready_jobs),
      TQ_TEST(test_close_releases),
      TQ_TEST(test_stall_guard),
      TQ_TEST(test_cancel_requests),
      TQ_TEST(test_cancelled_job_on_close),
      TQ_TEST(test_expired_flag),
      TQ_TEST(test_killed_worker_reaped),
      TQ_TEST(test_lost_session_many_jobs),
      TQ_TEST(test_close_gives_back_many),
      TQ_TEST(test_joined_views),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
