/*
 * test_failpoint.c - the known races, replayed with JOBQ_FAILPOINT
 * (lib/failpoint.c) instead of waited for: an acknowledgement whose commit
 * outcome the caller never heard, an acknowledgement racing the reaper, a
 * claim that commits after its session's lease ran out, and a worker that
 * dies right after a batch claim (whose held-back jobs cost no attempt).
 * A second process plays the other
 * workers (heartbeating, so reaping) where the race needs one.
 */
#include "helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A worker in a child process that heartbeats a session of its own every
 * 50 ms for ms milliseconds: the reaper of the others' sessions. */
struct beater {
  const char *url;
  int64_t ms;
};

static int beat_for(void *arg) {
  struct beater *b = arg;
  jobq *db = NULL;
  if (jobq_open(b->url, &db) != JOBQ_OK) return 10;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = "reaper";
  so.lease_ms = 2000;
  jobq_session *s = NULL;
  if (jobq_session_open(db, &so, &s) != JOBQ_OK) return 11;
  int64_t end = th_mono_ms() + b->ms;
  while (th_mono_ms() < end) {
    if (jobq_heartbeat(s, NULL, NULL) != JOBQ_OK) return 12;
    th_sleep_ms(50);
  }
  jobq_session_close(s);
  jobq_close(db);
  return 0;
}

static jobq_session *session_with_lease(jobq *db, int64_t lease_ms) {
  return th_session(db, lease_ms);
}

/* The commit went through, the reply did not: the retried completion is
 * a quiet success, and there is one result. */
static void test_commit_outcome_unknown(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", "x");
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  setenv("JOBQ_FAILPOINT", "ack.after-commit=error", 1);
  int already = -1;
  assert_rc(jobq_complete(s, j, "first", 5, &already), JOBQ_ECONN);
  th_assert_msg(t->db, "failpoint");
  unsetenv("JOBQ_FAILPOINT");
  assert_rc(jobq_complete(s, j, "second", 6, &already), JOBQ_OK);
  assert_int_equal(already, 1);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DONE);
  assert_int_equal(i->result_len, 5);
  assert_memory_equal(i->result, "first", 5);
  jobq_info_free(i, 1);
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(t->db, &st, &n), JOBQ_OK);
  assert_int_equal(n, 1);
  assert_int_equal(st[0].done, 1);
  jobq_stats_free(st, n);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* Three jobs in queue q, and a session to claim them. */
static jobq_session *three_jobs(jobq *db, int64_t ids[3]) {
  for (int k = 0; k < 3; k++) ids[k] = th_put(db, "q", "x");
  return th_session(db, 0);
}

/* A claim whose commit went through but whose reply was lost: the claim
 * reads its first job back and hands the jobs over, so that a live
 * session never holds jobs its worker does not know of.  And one that
 * failed before its commit hands over nothing and holds nothing. */
static void test_claim_reply_lost(void **state) {
  tq *t = *state;
  int64_t ids[3];
  jobq_session *s = three_jobs(t->db, ids);
  const char *q = "q";
  jobq_job *j = NULL;
  size_t n = 0;
  setenv("JOBQ_FAILPOINT", "claim.before-commit=error", 1);
  assert_rc(jobq_claim(s, &q, 1, 2, &j, &n), JOBQ_ECONN);
  th_assert_msg(t->db, "failpoint");
  assert_int_equal(n, 0);
  assert_null(j);
  for (int k = 0; k < 3; k++) assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_READY);

  setenv("JOBQ_FAILPOINT", "claim.after-commit=error", 1);
  assert_rc(jobq_claim(s, &q, 1, 2, &j, &n), JOBQ_OK);
  unsetenv("JOBQ_FAILPOINT");
  assert_int_equal(n, 2);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(j[k].id, ids[k]);
    assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_RUNNING);
    int already = -1;
    assert_rc(jobq_complete(s, &j[k], "ok", 2, &already), JOBQ_OK);
    assert_int_equal(already, 0);
  }
  jobq_jobs_free(j, n);
  assert_int_equal(th_state(t->db, ids[2]), JOBQ_STATE_READY);
  jobq_session_close(s);
}

static int attempts_of(jobq *db, int64_t id) {
  jobq_job_info *i = th_show(db, id);
  int a = i->attempts;
  jobq_info_free(i, 1);
  return a;
}

/* A claim whose commit reply was lost and whose read-back failed too: the
 * caller is told it failed, and its session, alive, holds the jobs.  The
 * session's next transaction, a heartbeat or a claim, gives them back
 * with their attempt, so they do not wait for the session to end. */
static void test_claim_outcome_unknown_is_given_back(void **state) {
  tq *t = *state;
  int64_t ids[3];
  jobq_session *s = three_jobs(t->db, ids);
  const char *q = "q";
  jobq_job *j = NULL;
  size_t n = 0;
  for (int round = 0; round < 2; round++) {
    setenv("JOBQ_FAILPOINT", "claim.after-commit=error,claim.read-back=error", 1);
    assert_rc(jobq_claim(s, &q, 1, 2, &j, &n), JOBQ_ECONN);
    unsetenv("JOBQ_FAILPOINT");
    assert_int_equal(n, 0);
    assert_null(j);
    for (int k = 0; k < 2; k++) {
      assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_RUNNING);
      assert_int_equal(attempts_of(t->db, ids[k]), 1);
    }
    /* Round 0: a heartbeat gives them back. */
    if (round == 0) {
      assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
      for (int k = 0; k < 2; k++) {
        assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_READY);
        assert_int_equal(attempts_of(t->db, ids[k]), 0);
      }
    }
  }
  /* Round 1: the next claim gives them back and takes them again. */
  assert_rc(jobq_claim(s, &q, 1, 3, &j, &n), JOBQ_OK);
  assert_int_equal(n, 3);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(j[k].id, ids[k]);
    assert_int_equal(attempts_of(t->db, ids[k]), 1);
    assert_rc(jobq_complete(s, &j[k], "ok", 2, NULL), JOBQ_OK);
  }
  jobq_jobs_free(j, n);
  /* What was given back and then completed stays completed. */
  assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
  for (int k = 0; k < 3; k++) assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_DONE);
  jobq_session_close(s);
}

/* An acknowledgement that stalls (before reading its job) while its lease
 * runs out and another worker reaps: whichever comes first wins, and the
 * other sees it.  Either the ack went through and the job is done once,
 * or the ack is refused and the job runs again. */
static void test_ack_races_reaper(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "q", "x");
  jobq_session *a = session_with_lease(t->db, 200);
  jobq_job *j = th_claim_one(a, "q");
  struct beater b = {t->url, 1500};
  pid_t pid = th_fork(beat_for, &b);
  setenv("JOBQ_FAILPOINT", "ack.before-fence=sleep:700", 1);
  int rc = jobq_complete(a, j, "late", 4, NULL);
  unsetenv("JOBQ_FAILPOINT");
  assert_int_equal(th_wait(pid), 0);
  jobq_job_info *i = th_show(t->db, id);
  if (rc == JOBQ_OK) {
    assert_int_equal(i->state, JOBQ_STATE_DONE);
    assert_memory_equal(i->result, "late", 4);
  } else {
    assert_rc(rc, JOBQ_ELOST);
    assert_int_equal(i->state, JOBQ_STATE_READY);
    assert_int_equal(i->prev_lost, 1);
    assert_null(i->session);
  }
  print_message("ack racing the reaper on %s: %s\n", th_store(),
                rc == JOBQ_OK ? "the ack came first" : "the reaper came first");
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(a);
}

/* A claim that stalls before its commit until its session's lease has
 * run out: the session is held while the claim runs, so the claim
 * commits, and then the reaper takes the jobs back.  The late worker's
 * acknowledgements are refused; the jobs run again, marked as lost. */
static void test_claim_outlives_lease(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", "x");
  int64_t y = th_put(t->db, "q", "y");
  jobq_session *a = session_with_lease(t->db, 400);
  struct beater b = {t->url, 3000};
  pid_t pid = th_fork(beat_for, &b);
  /* Alive when the claim starts, however long the fork took. */
  assert_rc(jobq_heartbeat(a, NULL, NULL), JOBQ_OK);
  setenv("JOBQ_FAILPOINT", "claim.before-commit=sleep:1200", 1);
  size_t n = 0;
  jobq_job *j = th_claim(a, "q", 2, &n);
  unsetenv("JOBQ_FAILPOINT");
  assert_int_equal(n, 2);
  /* The reaper gets the session as soon as the claim let go of it. */
  int64_t until = th_mono_ms() + 3000;
  while (th_state(t->db, x) != JOBQ_STATE_READY && th_mono_ms() < until) th_sleep_ms(20);
  assert_int_equal(th_state(t->db, x), JOBQ_STATE_READY);
  assert_int_equal(th_state(t->db, y), JOBQ_STATE_READY);
  assert_rc(jobq_complete(a, &j[0], NULL, 0, NULL), JOBQ_ELOST);
  assert_int_equal(th_wait(pid), 0);
  jobq_session *c = th_session(t->db, 0);
  jobq_job *again = th_claim(c, "q", 2, &n);
  assert_int_equal(n, 2);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(again[k].attempt, 2);
    assert_int_equal(again[k].prev_lost, 1);
  }
  jobq_jobs_free(again, n);
  jobq_jobs_free(j, 2);
  jobq_session_close(c);
  jobq_session_close(a);
}

/* A worker killed right after its batch claim committed: the jobs come
 * back once its lease has run out, to be claimed by another worker.  Each
 * job it started spent an attempt; the ones it held back (a prefetch,
 * jobq_session_start_now) did not. */
static int claim_and_die(void *arg) {
  jobq_session *s = th_child_session(arg, 1000);
  if (s == NULL) return 10;
  setenv("JOBQ_FAILPOINT", "claim.after-commit=kill", 1);
  jobq_job *j = NULL;
  size_t n = 0;
  const char *q = "q";
  jobq_session_start_now(s, 1);
  jobq_claim(s, &q, 1, 3, &j, &n);
  return 12; /* not reached: the failpoint kills */
}

static void test_dies_after_claim(void **state) {
  tq *t = *state;
  int64_t ids[3];
  for (int k = 0; k < 3; k++) ids[k] = th_put(t->db, "q", "x");
  pid_t pid = th_fork(claim_and_die, (void *)t->url);
  assert_int_equal(th_wait(pid), 128 + SIGKILL);
  for (int k = 0; k < 3; k++) assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_RUNNING);
  jobq_session *s = th_session(t->db, 0);
  th_beat_until(s, t->db, ids[2], JOBQ_STATE_READY, 8000);
  size_t n = 0;
  jobq_job *j = th_claim(s, "q", 10, &n);
  assert_int_equal(n, 3);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(j[k].id, ids[k]);
    /* The first started at once; the other two were held back, so
     * their attempts are given back, but the worker may have started
     * them in the moment before it could say so. */
    assert_int_equal(j[k].attempt, k == 0 ? 2 : 1);
    assert_true(j[k].prev_lost);
  }
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* A worker that held back both jobs of a claim, started the first, said
 * so with a heartbeat, claimed a third (without holding it back), and
 * died: the started ones spent their attempts, the other did not; all
 * three are marked as possibly run. */
static int start_one_and_die(void *arg) {
  jobq_session *s = th_child_session(arg, 1000);
  if (s == NULL) return 10;
  jobq_job *j = NULL, *k = NULL;
  size_t n = 0;
  const char *q = "q";
  jobq_session_start_now(s, 0);
  if (jobq_claim(s, &q, 1, 2, &j, &n) != JOBQ_OK || n != 2) return 12;
  jobq_session_started(s, &j[0]);
  if (jobq_heartbeat(s, NULL, NULL) != JOBQ_OK) return 13;
  if (jobq_claim(s, &q, 1, 1, &k, &n) != JOBQ_OK || n != 1) return 14;
  raise(SIGKILL);
  return 15;
}

static void test_started_spends_held_does_not(void **state) {
  tq *t = *state;
  int64_t x = th_put(t->db, "q", "x");
  int64_t y = th_put(t->db, "q", "y");
  int64_t z = th_put(t->db, "q", "z");
  pid_t pid = th_fork(start_one_and_die, (void *)t->url);
  assert_int_equal(th_wait(pid), 128 + SIGKILL);
  jobq_session *s = th_session(t->db, 0);
  th_beat_until(s, t->db, z, JOBQ_STATE_READY, 8000);
  int64_t ids[] = {x, y, z};
  int spent[] = {1, 0, 1};
  for (int k = 0; k < 3; k++) {
    jobq_job_info *i = th_show(t->db, ids[k]);
    assert_int_equal(i->state, JOBQ_STATE_READY);
    assert_int_equal(i->attempts, spent[k]);
    assert_true(i->prev_lost);
    jobq_info_free(i, 1);
  }
  jobq_session_close(s);
}

/* A worker that held back three jobs, started two, completed the first
 * (the acknowledgement writes no start for a job it ends) and died: the
 * second still spent its attempt, the third did not. */
static int start_two_ack_one_and_die(void *arg) {
  jobq_session *s = th_child_session(arg, 1000);
  if (s == NULL) return 10;
  jobq_job *j = NULL;
  size_t n = 0;
  const char *q = "q";
  jobq_session_start_now(s, 0);
  if (jobq_claim(s, &q, 1, 3, &j, &n) != JOBQ_OK || n != 3) return 12;
  jobq_session_started(s, &j[0]);
  jobq_session_started(s, &j[1]);
  jobq_ack a;
  jobq_ack_init(&a, &j[0], JOBQ_ACK_COMPLETE);
  if (jobq_ack_many(s, &a, 1) != JOBQ_OK || a.status != JOBQ_OK) return 13;
  raise(SIGKILL);
  return 14;
}

static void test_acked_start_not_written_others_are(void **state) {
  tq *t = *state;
  int64_t ids[] = {th_put(t->db, "q", "x"), th_put(t->db, "q", "y"),
                   th_put(t->db, "q", "z")};
  pid_t pid = th_fork(start_two_ack_one_and_die, (void *)t->url);
  assert_int_equal(th_wait(pid), 128 + SIGKILL);
  jobq_session *s = th_session(t->db, 0);
  th_beat_until(s, t->db, ids[2], JOBQ_STATE_READY, 8000);
  assert_int_equal(th_state(t->db, ids[0]), JOBQ_STATE_DONE);
  for (int k = 1; k < 3; k++) {
    jobq_job_info *i = th_show(t->db, ids[k]);
    assert_int_equal(i->state, JOBQ_STATE_READY);
    assert_int_equal(i->attempts, k == 1 ? 1 : 0);
    jobq_info_free(i, 1);
  }
  jobq_session_close(s);
}

/* A reaper whose heartbeats must each come back well within limit_ms. */
struct quick_beater {
  const char *url;
  int64_t ms, limit_ms;
};

static int beat_quickly(void *arg) {
  struct quick_beater *b = arg;
  jobq *db = NULL;
  if (jobq_open(b->url, &db) != JOBQ_OK) return 10;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.lease_ms = 5000;
  jobq_session *s = NULL;
  if (jobq_session_open(db, &so, &s) != JOBQ_OK) return 11;
  int64_t end = th_mono_ms() + b->ms;
  while (th_mono_ms() < end) {
    int64_t t0 = th_mono_ms();
    if (jobq_heartbeat(s, NULL, NULL) != JOBQ_OK) return 12;
    if (th_mono_ms() - t0 > b->limit_ms) return 13;
    th_sleep_ms(50);
  }
  jobq_session_close(s);
  jobq_close(db);
  return 0;
}

/* A worker stopped inside its acknowledgement's transaction past its
 * lease (a pause, a stopped process) holds its rows: the other workers'
 * heartbeats pass its session by instead of waiting on them, so one stuck
 * worker does not cost the others their leases.  Its acknowledgement
 * commits when it wakes up (nobody took the job meanwhile). */
static void test_stalled_worker_does_not_block_reapers(void **state) {
  tq *t = *state;
  TH_SERVER_ONLY("SQLite has one writer at a time: a stalled writer stops everyone "
                 "until its busy timeout");
  int64_t id = th_put(t->db, "q", "x");
  jobq_session *a = session_with_lease(t->db, 300);
  jobq_job *j = th_claim_one(a, "q");
  struct quick_beater b = {t->url, 2500, 1000};
  pid_t pid = th_fork(beat_quickly, &b);
  setenv("JOBQ_FAILPOINT", "ack.before-commit=sleep:2000", 1);
  int rc = jobq_complete(a, j, "late", 4, NULL);
  unsetenv("JOBQ_FAILPOINT");
  assert_int_equal(th_wait(pid), 0);
  assert_rc(rc, JOBQ_OK);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DONE);
  jobq_jobs_free(j, 1);
  jobq_session_close(a);
}

/* Prunes every finished job while child(arg) runs in a forked process,
 * each part of the prune pausing pause_ms once it has counted its jobs;
 * asserts the prune went through, sets *count, and returns the child's
 * exit status. */
static int prune_all_with(tq *t, int pause_ms, int (*child)(void *), void *arg,
                          int64_t *count) {
  pid_t pid = th_fork(child, arg);
  char fp[64];
  snprintf(fp, sizeof fp, "prune.counted=sleep:%d", pause_ms);
  setenv("JOBQ_FAILPOINT", fp, 1);
  int rc = jobq_prune(t->db, 0, count);
  unsetenv("JOBQ_FAILPOINT");
  int status = th_wait(pid);
  assert_rc(rc, JOBQ_OK);
  return status;
}

/* A forked operator: retries dead job *arg a moment after the prune
 * counted it; exits 0 when the retry went through, 1 when the job was
 * gone, 2 on anything else. */
struct retrier {
  const char *url;
  int64_t id;
};
static int retry_later(void *arg) {
  const struct retrier *r = arg;
  th_sleep_ms(500);
  jobq *db = NULL;
  int rc = jobq_open(r->url, &db);
  if (rc == JOBQ_OK) rc = jobq_retry(db, r->id);
  if (rc != JOBQ_OK && rc != JOBQ_ENOTFOUND)
    fprintf(stderr, "child retry: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : rc == JOBQ_ENOTFOUND ? 1 : 2;
}

/* A retry of a dead job that a prune has counted but not yet deleted:
 * the prune holds what it counted, so the retry finds the job gone, and
 * the queue's counters go down once. */
static void test_retry_during_prune(void **state) {
  tq *t = *state;
  int64_t id = th_put_attempts(t->db, "q", 1);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_rc(jobq_fail(s, j, "broken"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DEAD);
  th_sleep_ms(5);
  struct retrier r = {t->url, id};
  int64_t count = -1;
  int retried = prune_all_with(t, 1500, retry_later, &r, &count);
  th_assert_counts_agree(t->db);
  assert_int_equal(retried, 1);
  assert_int_equal(count, 1);
  jobq_job_info *i = NULL;
  assert_rc(jobq_show(t->db, id, &i), JOBQ_ENOTFOUND);
}

/* A forked observer: counts the archived jobs of the database at URL arg
 * 1.5 s from now; exits with that count in hundreds (0 to 250). */
static int count_archive_later(void *arg) {
  const char *url = arg;
  th_sleep_ms(1500);
  jobq *db = th_open(url);
  int64_t n = th_sql_int(db, "SELECT count(*) FROM jobq_done");
  jobq_close(db);
  return (int)(n / 100);
}

/* A prune of more jobs than one transaction takes: each part commits on
 * its own (another connection sees the archive shrink while the prune
 * goes on), jobs finished in the same millisecond included, and in the
 * end every old job is gone, counted once. */
static void test_prune_in_parts(void **state) {
  tq *t = *state;
  enum { JOBS = 25000, BATCH = 1000 };
  jobq_session *s = th_session(t->db, 0);
  for (int b = 0; b < JOBS / BATCH; b++) {
    th_put_many(t->db, "q", BATCH, 0);
    size_t n = 0;
    jobq_job *jobs = th_claim(s, "q", BATCH, &n);
    assert_int_equal(n, BATCH);
    th_complete_many(s, jobs, n); /* one finish time a batch */
  }
  jobq_session_close(s);
  int64_t count = -1;
  int seen = prune_all_with(t, 1000, count_archive_later, (void *)t->url, &count);
  assert_int_equal(count, JOBS);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done"), 0);
  th_assert_counts_agree(t->db);
  if (seen <= 0 || seen >= JOBS / 100)
    fail_msg("while the prune went on, another connection saw %d to %d archived jobs: "
             "expected some parts deleted and some not",
             seen * 100, seen * 100 + 99);
}

/* A batch put looked its unique keys up and found them free, and another
 * put takes one before the batch's INSERT: the batch still succeeds, and
 * that job is the other put's (on SQLite the other put waits for the
 * batch's transaction instead). */
static int put_unique_slowly(void *arg) {
  setenv("JOBQ_FAILPOINT", "put.uniques-found=sleep:1500", 1);
  jobq *db = th_open(arg);
  jobq_put_opts o[2];
  for (int k = 0; k < 2; k++) {
    jobq_put_opts_init(&o[k]);
    o[k].queue = "uq";
  }
  o[0].unique_key = "raced";
  o[1].unique_key = "free";
  int64_t ids[2];
  unsigned char existed[2];
  int rc = jobq_put_many(db, o, 2, ids, existed);
  jobq_close(db);
  if (rc != JOBQ_OK) return 10;
  /* 0: the batch put "raced" first; 1: the other put did. */
  return existed[1] ? 11 : existed[0];
}

/* A batch put took its queue's locks (and read its parts, but on
 * PostgreSQL), and the parts change before its INSERT: its jobs end in
 * parts of the new count.  The change waits for the put where the put
 * read the parts first: MariaDB's put holds its queue's row from the
 * INSERT IGNORE that makes sure of it, SQLite's the file; PostgreSQL's
 * INSERT reads the parts at its own start. */
static int put_before_parts_change(void *arg) {
  setenv("JOBQ_FAILPOINT", "put.before-insert=sleep:1500", 1);
  jobq *db = th_open(arg);
  enum { N = 20 };
  jobq_put_opts o[N];
  for (int k = 0; k < N; k++) {
    jobq_put_opts_init(&o[k]);
    o[k].queue = "pq";
  }
  int64_t ids[N];
  int rc = jobq_put_many(db, o, N, ids, NULL);
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 10;
}

static void test_parts_change_during_a_put(void **state) {
  tq *t = *state;
  th_put(t->db, "pq", "first");
  pid_t pid = th_fork(put_before_parts_change, (void *)t->url);
  th_sleep_ms(500);
  assert_rc(jobq_set_parts(t->db, "pq", 4), JOBQ_OK);
  assert_int_equal(th_wait(pid), 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'pq'"), 21);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'pq' AND "
                                     "(part IS NULL OR part < 0 OR part >= 4)"),
                   0);
}

static void test_unique_key_taken_during_batch(void **state) {
  tq *t = *state;
  pid_t pid = th_fork(put_unique_slowly, (void *)t->url);
  th_sleep_ms(500);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "uq";
  o.unique_key = "raced";
  int64_t id;
  int existed;
  assert_rc(jobq_put(t->db, &o, &id, &existed), JOBQ_OK);
  int st = th_wait(pid);
  if (th_is_sqlite()) {
    assert_int_equal(st, 0);
    assert_int_equal(existed, 1);
  } else {
    assert_int_equal(st, 1);
    assert_int_equal(existed, 0);
  }
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE unique_key = 'raced'"), 1);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'uq'"), 2);
}

/* An unknown failpoint name or action changes nothing. */
static void test_unknown_failpoint(void **state) {
  tq *t = *state;
  setenv("JOBQ_FAILPOINT", "no.such.place=error,ack.after-commit=dance", 1);
  int64_t id = th_put(t->db, "q", "x");
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  unsetenv("JOBQ_FAILPOINT");
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DONE);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_commit_outcome_unknown),
      TQ_TEST(test_claim_reply_lost),
      TQ_TEST(test_claim_outcome_unknown_is_given_back),
      TQ_TEST(test_ack_races_reaper),
      TQ_TEST(test_claim_outlives_lease),
      TQ_TEST(test_dies_after_claim),
      TQ_TEST(test_started_spends_held_does_not),
      TQ_TEST(test_acked_start_not_written_others_are),
      TQ_TEST(test_retry_during_prune),
      TQ_TEST(test_prune_in_parts),
      TQ_TEST(test_stalled_worker_does_not_block_reapers),
      TQ_TEST(test_unique_key_taken_during_batch),
      TQ_TEST(test_parts_change_during_a_put),
      TQ_TEST(test_unknown_failpoint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
