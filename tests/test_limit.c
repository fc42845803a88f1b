/*
 * test_limit.c - queues' limits, on every store: at most N jobs of a
 * queue claimed at once across sessions, handles and processes that
 * claim at the same moment; a slot that comes back when a dead worker's
 * session is reaped; a freed slot that wakes the workers held back; at most N claims in any period of the database
 * clock; limits read back, shown as holding a queue back, changed and
 * removed; at most N jobs of one ordering key running at once, the
 * key no longer ordering its jobs in such a queue (and still ordering
 * them elsewhere); at most N claims of one ordering key in any period
 * of the database clock while other keys go on, with keys that order
 * and with a limit per key, across processes, counting a dead worker's
 * claims; values out of range refused with nothing changed.
 */
#include "helpers.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void set_limits(jobq *db, const char *queue, int64_t running, int64_t rate,
                       int64_t period_ms) {
  jobq_limits l = {.running = running, .rate = rate, .rate_period_ms = period_ms};
  assert_rc(jobq_set_limits(db, queue, &l), JOBQ_OK);
}

static void set_per_key(jobq *db, const char *queue, int64_t per_key) {
  jobq_limits l = {.running_per_key = per_key};
  assert_rc(jobq_set_limits(db, queue, &l), JOBQ_OK);
}

static void set_key_rate(jobq *db, const char *queue, int64_t per_key, int64_t n,
                         int64_t period_ms) {
  jobq_limits l = {
      .running_per_key = per_key, .rate_per_key = n, .rate_per_key_period_ms = period_ms};
  assert_rc(jobq_set_limits(db, queue, &l), JOBQ_OK);
}

/* Puts n jobs of queue with key (NULL: none) in one jobq_put_many(). */
static void put_keyed(jobq *db, const char *queue, const char *key, size_t n) {
  jobq_put_opts o[16];
  int64_t ids[16];
  assert_true(n <= 16);
  for (size_t i = 0; i < n; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = queue;
    o[i].key = key;
  }
  assert_rc(jobq_put_many(db, o, n, ids, NULL), JOBQ_OK);
}

/* How many of jobs[0..n) have key. */
static size_t with_key(const jobq_job *jobs, size_t n, const char *key) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += key == NULL ? jobs[i].key == NULL : jobs[i].key != NULL && strcmp(jobs[i].key, key) == 0;
  return k;
}

/* The queue's limits as jobq_limits_list() reads them. */
static jobq_limits read_limits(jobq *db, const char *queue) {
  jobq_limits *l;
  size_t n;
  int rc = jobq_limits_list(db, queue, &l, &n);
  if (rc != JOBQ_OK) fail_msg("jobq_limits_list: %s", jobq_errmsg(db));
  assert_int_equal(n, 1);
  jobq_limits out = l[0];
  assert_string_equal(out.queue, queue);
  out.queue = NULL;
  jobq_limits_free(l, n);
  return out;
}

static int64_t running(jobq *db, const char *queue) {
  jobq_queue_stats *st;
  size_t n;
  int64_t r = -1;
  assert_rc(jobq_stats(db, &st, &n), JOBQ_OK);
  for (size_t i = 0; i < n; i++)
    if (strcmp(st[i].name, queue) == 0) r = st[i].running;
  jobq_stats_free(st, n);
  return r;
}

/* Two handles, two sessions: the second gets only what the first left,
 * and a slot freed by an acknowledgement. */
static void test_running_across_sessions(void **state) {
  tq *t = *state;
  th_put_many(t->db, "lim", 10, 0);
  th_put_many(t->db, "free", 3, 0);
  set_limits(t->db, "lim", 3, 0, 0);
  jobq *db2 = th_open(t->url);
  jobq_session *a = th_session(t->db, 0), *b = th_session(db2, 0);
  size_t na, nb;
  jobq_job *ja = th_claim(a, "lim", 2, &na);
  assert_int_equal(na, 2);
  jobq_job *jb = th_claim(b, "lim", 10, &nb);
  assert_int_equal(nb, 1);
  th_claim_none(a, "lim");
  th_claim_none(b, "lim");
  /* Every queue at once: the limited one adds nothing, the others all. */
  size_t nall;
  jobq_job *all = th_claim(b, NULL, 10, &nall);
  assert_int_equal(nall, 3);
  for (size_t i = 0; i < nall; i++) assert_string_equal(all[i].queue, "free");
  jobq_limits l = read_limits(db2, "lim");
  assert_int_equal(l.running, 3);
  assert_int_equal(l.running_now, 3);
  assert_int_equal(l.held, 1);
  /* A slot back with each acknowledgement, to whichever session asks. */
  assert_rc(jobq_complete(a, &ja[0], NULL, 0, NULL), JOBQ_OK);
  jobq_job *jc = th_claim(b, "lim", 10, &nb);
  assert_int_equal(nb, 1);
  th_claim_none(a, "lim");
  assert_int_equal(running(t->db, "lim"), 3);
  /* A higher limit lets more in at once; none removes it. */
  set_limits(t->db, "lim", 5, 0, 0);
  jobq_job *jd = th_claim(a, "lim", 10, &na);
  assert_int_equal(na, 2);
  set_limits(t->db, "lim", 0, 0, 0);
  jobq_job *je = th_claim(a, "lim", 10, &na);
  assert_int_equal(na, 4);
  jobq_limits *none;
  size_t nn;
  assert_rc(jobq_limits_list(t->db, NULL, &none, &nn), JOBQ_OK);
  assert_int_equal(nn, 0);
  jobq_jobs_free(ja, 2);
  jobq_jobs_free(jb, 1);
  jobq_jobs_free(jc, 1);
  jobq_jobs_free(jd, 2);
  jobq_jobs_free(je, 4);
  jobq_jobs_free(all, nall);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

/* Workers in processes of their own claim at the same moment: the limit
 * holds however their transactions interleave. */
enum { PROCS = 6, LIMIT = 4 };
typedef struct racer {
  const char *url;
  int go[2];
} racer;

static int race_main(void *arg) {
  racer *r = arg;
  jobq_session *s = th_child_session(r->url, 60000);
  if (s == NULL) return 2;
  char c;
  if (read(r->go[0], &c, 1) != 1) return 3;
  const char *q[1] = {"race"};
  for (int i = 0; i < 5; i++) {
    jobq_job *jobs = NULL;
    size_t n = 0;
    if (jobq_claim(s, q, 1, 3, &jobs, &n) != JOBQ_OK) return 4;
    /* Held, never acknowledged: the process ends with its session alive. */
    free(jobs);
  }
  return 0;
}

static void test_running_concurrent(void **state) {
  tq *t = *state;
  th_put_many(t->db, "race", 100, 0);
  set_limits(t->db, "race", LIMIT, 0, 0);
  racer r = {t->url, {-1, -1}};
  assert_int_equal(pipe(r.go), 0);
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; i++) pids[i] = th_fork(race_main, &r);
  th_sleep_ms(300);
  char go[PROCS] = {0};
  assert_int_equal(write(r.go[1], go, PROCS), PROCS);
  for (int i = 0; i < PROCS; i++) assert_int_equal(th_wait(pids[i]), 0);
  close(r.go[0]);
  close(r.go[1]);
  assert_int_equal(running(t->db, "race"), LIMIT);
}

/* A worker that dies holding slots: they come back when its session is
 * reaped, not before. */
static void test_slot_back_with_session(void **state) {
  tq *t = *state;
  th_put_many(t->db, "lim", 4, 0);
  set_limits(t->db, "lim", 2, 0, 0);
  jobq *db2 = th_open(t->url);
  jobq_session *dead = th_session(db2, 400);
  size_t n;
  jobq_job *held = th_claim(dead, "lim", 5, &n);
  assert_int_equal(n, 2);
  jobq_session *live = th_session(t->db, 5000);
  th_claim_none(live, "lim");
  /* The dead one beats no more; the live one's beats reap it. */
  th_beat_until(live, t->db, held[0].id, JOBQ_STATE_READY, 15000);
  jobq_job *got = th_claim(live, "lim", 5, &n);
  assert_int_equal(n, 2);
  th_claim_none(live, "lim");
  jobq_jobs_free(got, n);
  jobq_jobs_free(held, 2);
  jobq_session_close(dead);
  jobq_session_close(live);
  jobq_close(db2);
}

/* A job of a limited queue that finishes frees its slot: a worker the
 * limit held back is woken, though no job became ready, and does not
 * wait for its poll. */
static void test_freed_slot_wakes(void **state) {
  tq *t = *state;
  jobq *db2 = th_open(t->url);
  int fd = -1;
  if (jobq_watch(db2, &fd) == JOBQ_ENOTSUP) {
    print_message("skipped: no wake-ups here (%s)\n", jobq_errmsg(db2));
    jobq_close(db2);
    skip();
  }
  th_put_many(t->db, "lim", 3, 0);
  set_limits(t->db, "lim", 1, 0, 0);
  jobq_session *a = th_session(t->db, 5000), *b = th_session(db2, 5000);
  jobq_job *j = th_claim_one(a, "lim");
  th_claim_none(b, "lim");
  /* What the puts sent is heard and forgotten. */
  th_sleep_ms(200);
  jobq_changed(db2);
  assert_int_equal(jobq_changed(db2), 0);
  th_complete_many(a, j, 1);
  int changed = 0;
  for (int64_t end = th_mono_ms() + 3000; !changed && th_mono_ms() < end;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) changed = jobq_changed(db2);
  }
  assert_int_equal(changed, 1);
  jobq_jobs_free(th_claim_one(b, "lim"), 1);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_close(db2);
}

/* Claims from queue every 25 ms until jobs come (5 s at most): them, in
 * *n; fails unless the database clock then is period_ms past first (less
 * 50 ms for the clock's reads). */
static jobq_job *claim_next_period(jobq_session *s, jobq *db, const char *queue,
                                   int64_t first, int64_t period_ms, size_t *n) {
  jobq_job *j = NULL;
  int64_t at = 0;
  *n = 0;
  for (int tries = 0; tries < 200 && *n == 0; tries++) {
    th_sleep_ms(25);
    at = th_db_now(db);
    j = th_claim(s, queue, 10, n);
  }
  assert_true(*n > 0);
  if (at < first + period_ms - 50)
    fail_msg("claimed %zu at %lld ms", *n, (long long)(at - first));
  return j;
}

/* At most 3 claims in any second of the database clock: the fourth job
 * waits until the first claim is a second old there. */
static void test_rate(void **state) {
  tq *t = *state;
  th_put_many(t->db, "rated", 10, 0);
  set_limits(t->db, "rated", 0, 3, 1000);
  jobq_session *s = th_session(t->db, 0);
  int64_t first = th_db_now(t->db);
  size_t n;
  jobq_job *j = th_claim(s, "rated", 2, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, j, n);
  /* Finished jobs still count: starts, not running jobs, are limited. */
  j = th_claim(s, "rated", 5, &n);
  assert_int_equal(n, 1);
  th_complete_many(s, j, n);
  th_claim_none(s, "rated");
  jobq_limits l = read_limits(t->db, "rated");
  assert_int_equal(l.rate, 3);
  assert_int_equal(l.rate_period_ms, 1000);
  assert_int_equal(l.claimed_now, 3);
  assert_int_equal(l.held, 1);
  j = claim_next_period(s, t->db, "rated", first, 1000, &n);
  /* The two claimed together left the window together. */
  assert_true(n <= 3);
  th_complete_many(s, j, n);
  jobq_session_close(s);
}

/* Both limits on one queue: the tighter one wins, and paused stays
 * paused. */
static void test_both_and_paused(void **state) {
  tq *t = *state;
  th_put_many(t->db, "both", 10, 0);
  set_limits(t->db, "both", 5, 2, 60000);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "both", 10, &n);
  assert_int_equal(n, 2);
  th_claim_none(s, "both");
  set_limits(t->db, "both", 1, 0, 0);
  th_claim_none(s, "both");
  set_limits(t->db, "both", 3, 0, 0);
  assert_rc(jobq_pause(t->db, "both"), JOBQ_OK);
  th_claim_none(s, "both");
  assert_rc(jobq_resume(t->db, "both"), JOBQ_OK);
  jobq_job *k = th_claim(s, "both", 10, &n);
  assert_int_equal(n, 1);
  jobq_jobs_free(k, 1);
  jobq_jobs_free(j, 2);
  jobq_session_close(s);
}

static int64_t waiting(jobq *db, const char *queue) {
  jobq_queue_stats *st;
  size_t n;
  int64_t w = -1;
  assert_rc(jobq_stats(db, &st, &n), JOBQ_OK);
  for (size_t i = 0; i < n; i++)
    if (strcmp(st[i].name, queue) == 0) w = st[i].waiting;
  jobq_stats_free(st, n);
  return w;
}

/* At most two of a key at once, on two sessions; the key does not order
 * (its jobs are ready, not waiting), while the same key elsewhere does. */
static void test_per_key(void **state) {
  tq *t = *state;
  set_per_key(t->db, "pk", 2);
  put_keyed(t->db, "pk", "a", 5);
  for (int i = 0; i < 5; i++) th_put_key(t->db, "pk", "b");
  put_keyed(t->db, "pk", NULL, 2);
  put_keyed(t->db, "ord", "a", 3);
  assert_int_equal(waiting(t->db, "pk"), 0);
  assert_int_equal(waiting(t->db, "ord"), 2);
  jobq *db2 = th_open(t->url);
  jobq_session *s = th_session(t->db, 0), *s2 = th_session(db2, 0);
  size_t n, n2;
  jobq_job *j = th_claim(s, "pk", 10, &n);
  assert_int_equal(n, 6);
  assert_int_equal(with_key(j, n, "a"), 2);
  assert_int_equal(with_key(j, n, "b"), 2);
  assert_int_equal(with_key(j, n, NULL), 2);
  th_claim_none(s2, "pk");
  jobq_limits l = read_limits(db2, "pk");
  assert_int_equal(l.running_per_key, 2);
  assert_int_equal(l.running, 0);
  /* An "a" done: one more "a", to the other session. */
  for (size_t i = 0; i < n; i++)
    if (j[i].key != NULL && strcmp(j[i].key, "a") == 0) {
      assert_rc(jobq_complete(s, &j[i], NULL, 0, NULL), JOBQ_OK);
      break;
    }
  jobq_job *k = th_claim(s2, "pk", 10, &n2);
  assert_int_equal(n2, 1);
  assert_string_equal(k[0].key, "a");
  th_claim_none(s, "pk");
  jobq_jobs_free(k, n2);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
  jobq_session_close(s2);
  jobq_close(db2);
}

/* One key many times in a row ahead of another: the claim takes one of
 * the first, and the next claim reaches the other key. */
static void test_per_key_run_of_one_key(void **state) {
  tq *t = *state;
  set_per_key(t->db, "pk", 1);
  put_keyed(t->db, "pk", "a", 16);
  put_keyed(t->db, "pk", "a", 16);
  put_keyed(t->db, "pk", "b", 1);
  jobq_session *s = th_session(t->db, 0);
  size_t n, m;
  jobq_job *j = th_claim(s, "pk", 3, &n);
  assert_true(n >= 1);
  assert_int_equal(with_key(j, n, "a"), 1);
  jobq_job *k = n == 1 ? th_claim(s, "pk", 3, &m) : NULL;
  if (n == 1) {
    assert_int_equal(m, 1);
    assert_string_equal(k[0].key, "b");
    jobq_jobs_free(k, m);
  }
  th_claim_none(s, "pk");
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* At most two claims of a key a minute, with keys that order: each key's
 * jobs one at a time and in order, two of them, while a key of the same
 * queue not yet claimed goes on; jobs without a key are not counted. */
static void test_rate_per_key_ordered(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "kr", 0, 2, 60000);
  int64_t a[4], b;
  for (int i = 0; i < 4; i++) a[i] = th_put_key(t->db, "kr", "a");
  b = th_put_key(t->db, "kr", "b");
  put_keyed(t->db, "kr", NULL, 3);
  assert_int_equal(waiting(t->db, "kr"), 3);
  jobq_session *s = th_session(t->db, 0);
  for (int round = 0; round < 2; round++) {
    size_t n;
    jobq_job *j = th_claim(s, "kr", 1, &n);
    assert_int_equal(n, 1);
    assert_string_equal(j[0].key, "a");
    assert_int_equal(j[0].id, a[round]);
    th_complete_many(s, j, n);
  }
  /* "a" used its two: its next job stays ready, passed over. */
  assert_int_equal(th_state(t->db, a[2]), JOBQ_STATE_READY);
  size_t n;
  jobq_job *j = th_claim(s, "kr", 10, &n);
  assert_int_equal(n, 4);
  assert_int_equal(with_key(j, n, "a"), 0);
  assert_int_equal(with_key(j, n, "b"), 1);
  assert_int_equal(with_key(j, n, NULL), 3);
  th_complete_many(s, j, n);
  th_claim_none(s, "kr");
  jobq_limits l = read_limits(t->db, "kr");
  assert_int_equal(l.rate_per_key, 2);
  assert_int_equal(l.rate_per_key_period_ms, 60000);
  assert_int_equal(l.rate, 0);
  assert_int_equal(l.keys_full_now, 1);
  assert_int_equal(l.held, 1);
  (void)b;
  jobq_session_close(s);
}

/* One claim of three keys counts one claim of each (a batch's rows are
 * written once each, whatever the store). */
static void test_rate_per_key_batch_counts_once(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "kb", 0, 2, 60000);
  const char *keys[] = {"a", "b", "c"};
  for (int round = 0; round < 3; round++)
    for (int k = 0; k < 3; k++) th_put_key(t->db, "kb", keys[k]);
  jobq_session *s = th_session(t->db, 0);
  for (int round = 0; round < 2; round++) {
    size_t n;
    jobq_job *j = th_claim(s, "kb", 10, &n);
    assert_int_equal(n, 3);
    th_complete_many(s, j, n);
  }
  th_claim_none(s, "kb");
  assert_int_equal(read_limits(t->db, "kb").keys_full_now, 3);
  jobq_session_close(s);
}

/* With a limit per key too: at most one of a key running and two a
 * minute; the tighter one holds. */
static void test_rate_per_key_with_running(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "kr", 1, 2, 60000);
  put_keyed(t->db, "kr", "a", 5);
  put_keyed(t->db, "kr", "b", 5);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "kr", 10, &n);
  assert_int_equal(n, 2);
  assert_int_equal(with_key(j, n, "a"), 1);
  assert_int_equal(with_key(j, n, "b"), 1);
  th_claim_none(s, "kr");
  th_complete_many(s, j, n);
  j = th_claim(s, "kr", 10, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, j, n);
  /* Nothing runs, but each key had its two. */
  th_claim_none(s, "kr");
  jobq_limits l = read_limits(t->db, "kr");
  assert_int_equal(l.keys_full_now, 2);
  assert_int_equal(l.held, 1);
  /* A higher rate per key, and the queue's own rate beside it (its
   * claims counted from now on): both count. */
  jobq_limits both = {.rate = 3,
                      .rate_period_ms = 60000,
                      .rate_per_key = 5,
                      .rate_per_key_period_ms = 60000,
                      .running_per_key = 1};
  assert_rc(jobq_set_limits(t->db, "kr", &both), JOBQ_OK);
  j = th_claim(s, "kr", 10, &n);
  assert_int_equal(n, 2);
  assert_int_equal(with_key(j, n, "a"), 1);
  assert_int_equal(with_key(j, n, "b"), 1);
  th_complete_many(s, j, n);
  j = th_claim(s, "kr", 10, &n);
  assert_int_equal(n, 1);
  th_complete_many(s, j, n);
  th_claim_none(s, "kr");
  jobq_session_close(s);
}

/* At most two claims of a key in any second of the database clock: the
 * key's third job waits until its first claims are a second old there. */
static void test_rate_per_key_window(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "kw", 10, 2, 1000);
  put_keyed(t->db, "kw", "a", 6);
  jobq_session *s = th_session(t->db, 0);
  int64_t first = th_db_now(t->db);
  size_t n;
  jobq_job *j = th_claim(s, "kw", 10, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, j, n);
  th_claim_none(s, "kw");
  j = claim_next_period(s, t->db, "kw", first, 1000, &n);
  assert_int_equal(n, 2);
  th_complete_many(s, j, n);
  th_claim_none(s, "kw");
  jobq_session_close(s);
}

/* A claim is a start, whatever became of it: a worker that dies with
 * its job gives the job back, not the claim. */
static void test_rate_per_key_dead_worker(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "kd", 0, 1, 60000);
  int64_t id = th_put_key(t->db, "kd", "a");
  jobq *db2 = th_open(t->url);
  jobq_session *dead = th_session(db2, 400);
  jobq_job *held = th_claim_one(dead, "kd");
  assert_int_equal(held[0].id, id);
  jobq_session *live = th_session(t->db, 5000);
  th_beat_until(live, t->db, id, JOBQ_STATE_READY, 15000);
  th_claim_none(live, "kd");
  /* Another key is not held back. */
  th_put_key(t->db, "kd", "b");
  jobq_jobs_free(th_claim_one(live, "kd"), 1);
  jobq_jobs_free(held, 1);
  jobq_session_close(dead);
  jobq_session_close(live);
  jobq_close(db2);
}

/* Processes claiming at the same moment, each acknowledging what it got:
 * key "a" is claimed three times in all, and "b" beside it. */
enum { KEY_RATE = 3 };
static int key_race_main(void *arg) {
  racer *r = arg;
  jobq_session *s = th_child_session(r->url, 60000);
  if (s == NULL) return 255;
  char c;
  if (read(r->go[0], &c, 1) != 1) return 254;
  const char *q[1] = {"krace"};
  int a = 0, b = 0;
  for (int i = 0; i < 5; i++) {
    jobq_job *jobs = NULL;
    size_t n = 0;
    if (jobq_claim(s, q, 1, 3, &jobs, &n) != JOBQ_OK) return 253;
    for (size_t k = 0; k < n; k++) {
      a += strcmp(jobs[k].key, "a") == 0;
      b += strcmp(jobs[k].key, "b") == 0;
      if (jobq_complete(s, &jobs[k], NULL, 0, NULL) != JOBQ_OK) return 252;
    }
    jobq_jobs_free(jobs, n);
  }
  jobq_session_close(s);
  return a * 16 + b;
}

static void test_rate_per_key_concurrent(void **state) {
  tq *t = *state;
  set_key_rate(t->db, "krace", 100, KEY_RATE, 60000);
  put_keyed(t->db, "krace", "a", 10);
  put_keyed(t->db, "krace", "b", 10);
  racer r = {t->url, {-1, -1}};
  assert_int_equal(pipe(r.go), 0);
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; i++) pids[i] = th_fork(key_race_main, &r);
  th_sleep_ms(300);
  char go[PROCS] = {0};
  assert_int_equal(write(r.go[1], go, PROCS), PROCS);
  int a = 0, b = 0;
  for (int i = 0; i < PROCS; i++) {
    int got = th_wait(pids[i]);
    if (got >= 252) fail_msg("a claimer failed: %d", got);
    a += got / 16;
    b += got % 16;
  }
  close(r.go[0]);
  close(r.go[1]);
  assert_int_equal(a, KEY_RATE);
  assert_int_equal(b, KEY_RATE);
}

/* A limit on other queues, whose names hold this one's, changes nothing
 * for it. */
static void test_other_queues_limited(void **state) {
  tq *t = *state;
  set_limits(t->db, "lim2", 1, 0, 0);
  set_limits(t->db, "a.lim", 1, 0, 0);
  th_put_many(t->db, "lim", 5, 0);
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "lim", 5, &n);
  assert_int_equal(n, 5);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* Values out of range: JOBQ_EINVAL naming them, nothing written. */
static void test_bad_limits(void **state) {
  tq *t = *state;
  set_limits(t->db, "q", 2, 0, 0);
  const jobq_limits bad[] = {
      {.running = -1},
      {.running = (int64_t)JOBQ_LIMIT_MAX + 1},
      {.rate = 5},
      {.rate = 5, .rate_period_ms = (int64_t)JOBQ_LIMIT_PERIOD_MAX + 1},
      {.rate = -2, .rate_period_ms = 1000},
      {.rate_period_ms = 1000},
      {.running_per_key = -1},
      {.rate_per_key = 5},
      {.rate_per_key = -1, .rate_per_key_period_ms = 1000},
      {.rate_per_key = (int64_t)JOBQ_LIMIT_MAX + 1, .rate_per_key_period_ms = 1000},
      {.rate_per_key = 5, .rate_per_key_period_ms = (int64_t)JOBQ_LIMIT_PERIOD_MAX + 1},
      {.rate_per_key_period_ms = 1000},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_rc(jobq_set_limits(t->db, "q", &bad[i]), JOBQ_EINVAL);
    assert_non_null(strstr(jobq_errmsg(t->db), "invalid"));
  }
  assert_rc(jobq_set_limits(t->db, "Bad Name", &(jobq_limits){.running = 1}), JOBQ_EINVAL);
  assert_rc(jobq_set_limits(t->db, "q", NULL), JOBQ_EINVAL);
  jobq_limits l = read_limits(t->db, "q");
  assert_int_equal(l.running, 2);
  assert_int_equal(l.rate, 0);
  assert_int_equal(l.rate_per_key, 0);
  /* A queue never used reads as no queue. */
  jobq_limits *v;
  size_t n;
  assert_rc(jobq_limits_list(t->db, "never", &v, &n), JOBQ_OK);
  assert_int_equal(n, 0);
  jobq_limits_free(v, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_running_across_sessions),
      TQ_TEST(test_running_concurrent),
      TQ_TEST(test_slot_back_with_session),
      TQ_TEST(test_freed_slot_wakes),
      TQ_TEST(test_rate),
      TQ_TEST(test_both_and_paused),
      TQ_TEST(test_per_key),
      TQ_TEST(test_per_key_run_of_one_key),
      TQ_TEST(test_rate_per_key_ordered),
      TQ_TEST(test_rate_per_key_batch_counts_once),
      TQ_TEST(test_rate_per_key_with_running),
      TQ_TEST(test_rate_per_key_window),
      TQ_TEST(test_rate_per_key_dead_worker),
      TQ_TEST(test_rate_per_key_concurrent),
      TQ_TEST(test_other_queues_limited),
      TQ_TEST(test_bad_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
