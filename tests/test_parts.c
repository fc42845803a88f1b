/*
 * test_parts.c - queues in parts, on every store: the parts shared
 * fairly among the sessions that claim (shares differ by at most one),
 * and a leaving one's handed to the others; a
 * joining session's share within one heartbeat of the others; a part
 * kept by its owner while one of its jobs runs, handed over once it is
 * acknowledged; an expired session's parts taken by the others; claims
 * only from the session's own parts, and none without parts; a change
 * of the count with jobs unfinished that loses none and puts each in
 * its key's part; each key's jobs one at a time and in order across
 * joins, leaves and heartbeats; counts out of range refused; the
 * PostgreSQL jobq_put() function's jobs in their keys' parts; a retried
 * dead job back in its key's part; a session's look at what comes due
 * (jobq_session_next_due) of its own parts only; sessions closing at
 * once that hand their parts over without a deadlock; a put of many
 * keyless jobs shared among the parts in runs.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char Q[] = "pq";

/* How many of queue's parts s owns. */
static size_t owned(jobq *db, jobq_session *s) {
  int parts;
  jobq_part *v;
  size_t n, k = 0;
  assert_rc(jobq_parts(db, Q, &parts, &v, &n), JOBQ_OK);
  for (size_t i = 0; i < n; i++)
    k += v[i].session != NULL && strcmp(v[i].session, jobq_session_id(s)) == 0;
  jobq_parts_free(v, n);
  return k;
}

/* Whether s owns part p. */
static int owns(jobq *db, jobq_session *s, int p) {
  int parts;
  jobq_part *v;
  size_t n;
  assert_rc(jobq_parts(db, Q, &parts, &v, &n), JOBQ_OK);
  int yes = 0;
  for (size_t i = 0; i < n; i++)
    yes = yes || (v[i].part == p && v[i].session != NULL &&
                  strcmp(v[i].session, jobq_session_id(s)) == 0);
  jobq_parts_free(v, n);
  return yes;
}

static void set_parts(jobq *db, int n) {
  if (jobq_set_parts(db, Q, n) != JOBQ_OK) fail_msg("jobq_set_parts %d: %s", n, jobq_errmsg(db));
}

static void beat(jobq_session *s) { assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK); }

/* A key whose part, of parts, is p (into buf). */
static const char *key_in(char *buf, size_t size, int p, int parts) {
  for (int i = 0;; i++) {
    snprintf(buf, size, "k%d", i);
    if (jobq_part_of(buf, strlen(buf), parts) == p) return buf;
  }
}

/* Claims nothing, but joins the queue's claimers (its first claim). */
static void join(jobq_session *s) {
  size_t n;
  jobq_job *j = th_claim(s, Q, 0 + 1, &n);
  /* The queue is empty in the tests that join this way. */
  assert_int_equal(n, 0);
  jobq_jobs_free(j, n);
}

/* Joins the queue's claimers without a claim (jobq_parts_join). */
static void join_only(jobq_session *s) {
  const char *const qs[] = {Q};
  assert_rc(jobq_parts_join(s, qs, 1), JOBQ_OK);
}

static void test_fair_split(void **state) {
  tq *t = *state;
  set_parts(t->db, 10);
  int parts;
  assert_rc(jobq_parts(t->db, Q, &parts, NULL, NULL), JOBQ_OK);
  assert_int_equal(parts, 10);
  jobq_session *s[3];
  for (int i = 0; i < 3; i++) {
    s[i] = th_session(t->db, 0);
    join(s[i]);
  }
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 3; i++) beat(s[i]);
  size_t total = 0, lo = 10, hi = 0;
  for (int i = 0; i < 3; i++) {
    size_t k = owned(t->db, s[i]);
    total += k;
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  assert_int_equal(total, 10);
  assert_true(hi - lo <= 1);
  /* Sticky: another round moves nothing. */
  size_t before[3];
  for (int i = 0; i < 3; i++) before[i] = owned(t->db, s[i]);
  for (int i = 0; i < 3; i++) beat(s[i]);
  for (int i = 0; i < 3; i++) assert_int_equal(owned(t->db, s[i]), before[i]);
  jobq_queue_stats *st;
  size_t ns;
  assert_rc(jobq_stats(t->db, &st, &ns), JOBQ_OK);
  assert_int_equal(ns, 1);
  assert_int_equal(st[0].parts, 10);
  assert_int_equal(st[0].parts_unowned, 0);
  jobq_stats_free(st, ns);
  jobq_session_info *si;
  size_t nsi;
  assert_rc(jobq_sessions(t->db, &si, &nsi), JOBQ_OK);
  assert_int_equal(nsi, 3);
  for (size_t i = 0; i < nsi; i++) {
    assert_int_equal(si[i].nparts, 1);
    assert_string_equal(si[i].parts[0].queue, Q);
    assert_true(si[i].parts[0].n == 3 || si[i].parts[0].n == 4);
  }
  jobq_sessions_free(si, nsi);
  /* A session that leaves hands its parts to the others at once. */
  jobq_session_close(s[0]);
  assert_int_equal(owned(t->db, s[1]), 5);
  assert_int_equal(owned(t->db, s[2]), 5);
  for (int i = 1; i < 3; i++) jobq_session_close(s[i]);
  /* Closed sessions own nothing. */
  assert_rc(jobq_stats(t->db, &st, &ns), JOBQ_OK);
  assert_int_equal(st[0].parts_unowned, 10);
  jobq_stats_free(st, ns);
}

/* A key whose part, of parts, is p (into buf). */
static const char *key_in(char *buf, size_t size, int p, int parts);

static void test_join_within_a_heartbeat(void **state) {
  tq *t = *state;
  set_parts(t->db, 8);
  jobq_session *a = th_session(t->db, 0), *b = th_session(t->db, 0);
  join(a);
  join(b);
  beat(a);
  beat(b);
  assert_int_equal(owned(t->db, a), 4);
  assert_int_equal(owned(t->db, b), 4);
  /* The others run nothing: a newcomer takes its share as it joins.
   * It joins a few milliseconds later, so that it is the youngest:
   * claimers who joined in the same millisecond are ordered by session
   * id, and the oldest take the odd parts. */
  th_sleep_ms(5);
  jobq_session *c = th_session(t->db, 0);
  join(c);
  assert_int_equal(owned(t->db, c), 2);
  assert_int_equal(owned(t->db, a), 3);
  assert_int_equal(owned(t->db, b), 3);
  /* The others run a job in each of their parts: the next newcomer
   * waits for them, and gets its share at the first heartbeat after
   * they are done. */
  for (int p = 0; p < 8; p++) {
    char key[16];
    th_put_key(t->db, Q, key_in(key, sizeof key, p, 8));
  }
  size_t na, nb, nc;
  jobq_job *ja = th_claim(a, Q, 10, &na), *jb = th_claim(b, Q, 10, &nb);
  jobq_job *jc = th_claim(c, Q, 10, &nc);
  assert_int_equal(na + nb + nc, 8);
  jobq_session *d = th_session(t->db, 0);
  join(d);
  assert_int_equal(owned(t->db, d), 0);
  th_complete_many(a, ja, na);
  th_complete_many(b, jb, nb);
  th_complete_many(c, jc, nc);
  beat(a);
  assert_int_equal(owned(t->db, a) + owned(t->db, b) + owned(t->db, c) + owned(t->db, d), 8);
  assert_int_equal(owned(t->db, d), 2);
  assert_int_equal(owned(t->db, a), 2);
  assert_int_equal(owned(t->db, b), 2);
  assert_int_equal(owned(t->db, c), 2);
  jobq_session_close(a);
  jobq_session_close(b);
  jobq_session_close(c);
  jobq_session_close(d);
}

/* What a session may claim, without claiming: of a queue in parts it
 * claims from, only its own parts; of another queue, all of it. */
static void test_next_due_of_own_parts(void **state) {
  tq *t = *state;
  set_parts(t->db, 2);
  jobq_session *a = th_session(t->db, 0), *b = th_session(t->db, 0);
  const char *const qs[] = {Q, "whole"};
  int64_t in = 7;
  /* Not joined yet: the queue is looked at whole. */
  char key[16], later[16];
  key_in(key, sizeof key, 0, 2);
  th_put_key(t->db, Q, key);
  assert_rc(jobq_session_next_due(a, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  join_only(a);
  join_only(b);
  beat(a);
  beat(b);
  jobq_session *zero = owns(t->db, a, 0) ? a : b, *one = zero == a ? b : a;
  assert_true(owns(t->db, one, 1));
  assert_rc(jobq_session_next_due(zero, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  assert_rc(jobq_session_next_due(one, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, -1);
  assert_rc(jobq_session_next_due(one, NULL, 0, &in), JOBQ_OK);
  assert_int_equal(in, -1);
  /* The handle's look is of the whole queue. */
  assert_rc(jobq_next_due(t->db, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  /* A job of another queue, and one coming due in part 1. */
  th_put(t->db, "whole", "x");
  assert_rc(jobq_session_next_due(one, qs, 2, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  assert_rc(jobq_session_next_due(one, NULL, 0, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = Q;
  o.key = key_in(later, sizeof later, 1, 2);
  o.delay_ms = 60000;
  th_put_opts(t->db, &o);
  assert_rc(jobq_session_next_due(one, qs, 1, &in), JOBQ_OK);
  assert_true(in > 50000 && in <= 60000);
  assert_rc(jobq_session_next_due(zero, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  /* Part 0's job claimed: nothing due for its owner. */
  size_t n;
  jobq_job *j = th_claim(zero, Q, 10, &n);
  assert_int_equal(n, 1);
  assert_rc(jobq_session_next_due(zero, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, -1);
  th_complete_many(zero, j, n);
  /* Back in one part: the whole queue again. */
  th_put_key(t->db, Q, key);
  set_parts(t->db, 1);
  assert_rc(jobq_session_next_due(one, qs, 1, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  assert_rc(jobq_session_next_due(one, NULL, 0, &in), JOBQ_OK);
  assert_int_equal(in, 0);
  assert_rc(jobq_session_next_due(NULL, qs, 1, &in), JOBQ_EINVAL);
  assert_rc(jobq_session_next_due(one, qs, 1, NULL), JOBQ_EINVAL);
  jobq_session_close(a);
  jobq_session_close(b);
}

/* Sessions that close at the same moment hand their parts over one
 * after the other: none of their transactions deadlocks (each locks the
 * queue's parts in the same order before giving its own up). */
enum { LEAVERS = 8 };
typedef struct leaver {
  const char *url;
  int ready[2], go[2];
} leaver;

static int leaver_main(void *arg) {
  leaver *l = arg;
  jobq_session *s = th_child_session(l->url, 60000);
  if (s == NULL) return 2;
  const char *const qs[] = {Q};
  if (jobq_parts_join(s, qs, 1) != JOBQ_OK || jobq_heartbeat(s, NULL, NULL) != JOBQ_OK) return 3;
  char c = 0;
  if (write(l->ready[1], &c, 1) != 1 || read(l->go[0], &c, 1) != 1) return 4;
  jobq_session_close(s);
  return 0;
}

/* The server's count of deadlocks so far (its statistics, which a
 * backend sends as it ends). */
static int64_t deadlocks(jobq *db) {
  if (th_is_mysql())
    return th_sql_int(db, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                          "WHERE VARIABLE_NAME = 'INNODB_DEADLOCKS'");
  th_sql(db, "SELECT pg_stat_clear_snapshot()");
  return th_sql_int(db, "SELECT deadlocks FROM pg_stat_database WHERE datname = "
                        "current_database()");
}

static void test_sessions_leave_at_once(void **state) {
  TH_SERVER_ONLY("one writer: SQLite's transactions cannot deadlock");
  tq *t = *state;
  set_parts(t->db, LEAVERS);
  int64_t before = deadlocks(t->db);
  leaver l = {t->url, {-1, -1}, {-1, -1}};
  assert_int_equal(pipe(l.ready), 0);
  assert_int_equal(pipe(l.go), 0);
  pid_t pids[LEAVERS];
  for (int i = 0; i < LEAVERS; i++) pids[i] = th_fork(leaver_main, &l);
  char buf[LEAVERS] = {0};
  for (int got = 0; got < LEAVERS;) {
    ssize_t k = read(l.ready[0], buf, sizeof buf);
    assert_true(k > 0);
    got += (int)k;
  }
  assert_int_equal(write(l.go[1], buf, LEAVERS), LEAVERS);
  for (int i = 0; i < LEAVERS; i++) assert_int_equal(th_wait(pids[i]), 0);
  for (int i = 0; i < 2; i++) {
    close(l.ready[i]);
    close(l.go[i]);
  }
  /* Every part without an owner, and no claimer left. */
  int parts;
  jobq_part *v;
  size_t n;
  assert_rc(jobq_parts(t->db, Q, &parts, &v, &n), JOBQ_OK);
  assert_int_equal(n, LEAVERS);
  for (size_t i = 0; i < n; i++) assert_null(v[i].session);
  jobq_parts_free(v, n);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_claimers"), 0);
  /* The ended backends' statistics reach the server as they end. */
  th_sleep_ms(500);
  assert_int_equal(deadlocks(t->db) - before, 0);
}

static void test_running_part_kept(void **state) {
  tq *t = *state;
  set_parts(t->db, 2);
  char k0[16], k1[16];
  key_in(k0, sizeof k0, 0, 2);
  key_in(k1, sizeof k1, 1, 2);
  th_put_key(t->db, Q, k0);
  th_put_key(t->db, Q, k1);
  jobq_session *a = th_session(t->db, 0);
  size_t n;
  jobq_job *jobs = th_claim(a, Q, 10, &n);
  /* Alone, it holds both parts and runs a job of each. */
  assert_int_equal(n, 2);
  assert_int_equal(owned(t->db, a), 2);
  jobq_session *b = th_session(t->db, 0);
  join(b);
  beat(a);
  beat(b);
  /* Over its share, but busy in both: it gives up neither. */
  assert_int_equal(owned(t->db, a), 2);
  assert_int_equal(owned(t->db, b), 0);
  const jobq_job *in1 = jobs[0].key && strcmp(jobs[0].key, k1) == 0 ? &jobs[0] : &jobs[1];
  assert_rc(jobq_complete(a, in1, NULL, 0, NULL), JOBQ_OK);
  beat(a);
  /* Part 1 ran nothing any more: handed over at a's beat. */
  assert_true(owns(t->db, a, 0));
  assert_true(owns(t->db, b, 1));
  beat(a);
  beat(b);
  assert_true(owns(t->db, a, 0));
  assert_true(owns(t->db, b, 1));
  jobq_jobs_free(jobs, n);
  jobq_session_close(a);
  jobq_session_close(b);
}

static void test_expired_parts_move(void **state) {
  tq *t = *state;
  set_parts(t->db, 4);
  jobq_session *a = th_session(t->db, 300);
  join(a);
  assert_int_equal(owned(t->db, a), 4);
  jobq_session *b = th_session(t->db, 0);
  join(b);
  assert_int_equal(owned(t->db, b), 2);
  /* a stops beating: after its lease, b's beat takes its parts. */
  th_sleep_ms(600);
  beat(b);
  assert_int_equal(owned(t->db, b), 4);
  jobq_session_close(a);
  jobq_session_close(b);
}

static void test_claims_only_own_parts(void **state) {
  tq *t = *state;
  set_parts(t->db, 4);
  jobq_session *a = th_session(t->db, 0), *b = th_session(t->db, 0);
  join(a);
  join(b);
  beat(a);
  beat(b);
  assert_int_equal(owned(t->db, a), 2);
  for (int i = 0; i < 40; i++) {
    char key[16];
    snprintf(key, sizeof key, "key%d", i % 10);
    if (i % 2) th_put(t->db, Q, "x");
    else th_put_key(t->db, Q, key);
  }
  size_t na, nb;
  jobq_job *ja = th_claim(a, Q, 100, &na), *jb = th_claim(b, Q, 100, &nb);
  assert_true(na > 0 && nb > 0);
  for (size_t i = 0; i < na; i++) {
    jobq_job_info *info = th_show(t->db, ja[i].id);
    assert_true(info->part >= 0 && info->part < 4);
    assert_true(owns(t->db, a, info->part));
    if (ja[i].key) assert_int_equal(info->part, jobq_part_of(ja[i].key, strlen(ja[i].key), 4));
    jobq_info_free(info, 1);
  }
  for (size_t i = 0; i < nb; i++) {
    jobq_job_info *info = th_show(t->db, jb[i].id);
    assert_true(owns(t->db, b, info->part));
    jobq_info_free(info, 1);
  }
  /* 20 keyless jobs and the heads of the 5 keys (key0, key2 ... key8). */
  assert_int_equal(na + nb, 25);
  jobq_jobs_free(ja, na);
  jobq_jobs_free(jb, nb);
  /* More sessions than parts: the last ones hold none and claim none. */
  jobq_session *c[3];
  for (int i = 0; i < 3; i++) {
    c[i] = th_session(t->db, 0);
    join(c[i]);
  }
  th_put(t->db, Q, "y");
  for (int round = 0; round < 2; round++) {
    beat(a);
    beat(b);
    for (int i = 0; i < 3; i++) beat(c[i]);
  }
  assert_int_equal(owned(t->db, c[2]), 0);
  th_claim_none(c[2], Q);
  for (int i = 0; i < 3; i++) jobq_session_close(c[i]);
  jobq_session_close(a);
  jobq_session_close(b);
}

/* Drains queue Q with sessions s[0..ns) (NULL: none), each claiming a
 * few at a time and holding them until every session has claimed,
 * asserting that no two jobs of a key are held at once and that each
 * key's jobs are claimed in id order; between rounds, each session
 * beats and hook (may be NULL) runs.  Returns the jobs finished. */
typedef void (*round_fn)(tq *t, int round, jobq_session **s, size_t ns);
static size_t drain(tq *t, jobq_session **s, size_t ns, round_fn hook) {
  char keys[16][16];
  int64_t last[16];
  size_t nkeys = 0, done = 0;
  for (int round = 0; round < 500; round++) {
    size_t got = 0;
    jobq_job *held[8] = {NULL};
    size_t nheld[8] = {0};
    const char *running[64];
    size_t nrunning = 0;
    assert_true(ns <= 8);
    for (size_t i = 0; i < ns; i++) {
      if (s[i] == NULL) continue;
      held[i] = th_claim(s[i], Q, 3, &nheld[i]);
      got += nheld[i];
      for (size_t k = 0; k < nheld[i]; k++) {
        const jobq_job *j = &held[i][k];
        if (j->key == NULL) continue;
        for (size_t r = 0; r < nrunning; r++) assert_string_not_equal(running[r], j->key);
        assert_true(nrunning < 64);
        running[nrunning++] = j->key;
        size_t x = 0;
        while (x < nkeys && strcmp(keys[x], j->key) != 0) x++;
        if (x == nkeys) {
          assert_true(nkeys < 16);
          snprintf(keys[nkeys], sizeof keys[0], "%s", j->key);
          last[nkeys++] = 0;
        }
        assert_true(j->id > last[x]);
        last[x] = j->id;
      }
    }
    for (size_t i = 0; i < ns; i++) {
      for (size_t k = 0; k < nheld[i]; k++)
        assert_rc(jobq_complete(s[i], &held[i][k], NULL, 0, NULL), JOBQ_OK);
      done += nheld[i];
      jobq_jobs_free(held[i], nheld[i]);
    }
    for (size_t i = 0; i < ns; i++)
      if (s[i] != NULL) beat(s[i]);
    if (hook != NULL) hook(t, round, s, ns);
    if (got == 0 && round > 10 && th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs") == 0)
      break;
  }
  return done;
}

static void put_keyed_jobs(tq *t, int keys, int each, int keyless) {
  for (int i = 0; i < each; i++)
    for (int k = 0; k < keys; k++) {
      char key[16];
      snprintf(key, sizeof key, "key%d", k);
      th_put_key(t->db, Q, key);
    }
  for (int i = 0; i < keyless; i++) th_put(t->db, Q, "z");
}

static void change_count(tq *t, int round, jobq_session **s, size_t ns) {
  static const int counts[] = {8, 3, 1, 5};
  if (round < 4) set_parts(t->db, counts[round]);
}

static void test_change_count_loses_nothing(void **state) {
  tq *t = *state;
  set_parts(t->db, 4);
  put_keyed_jobs(t, 6, 5, 20);
  jobq_session *s[2] = {th_session(t->db, 0), th_session(t->db, 0)};
  /* Some running while the count changes. */
  size_t n;
  jobq_job *j = th_claim(s[0], Q, 4, &n);
  assert_true(n > 0);
  set_parts(t->db, 7);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 50);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE part IS NULL "
                                     "OR part < 0 OR part >= 7"),
                   0);
  /* Each keyed job in its key's part. */
  jobq_job_info *v;
  size_t nv;
  jobq_list_opts lo = {.queue = Q, .limit = 100};
  assert_rc(jobq_list(t->db, &lo, &v, &nv), JOBQ_OK);
  assert_int_equal(nv, 50);
  for (size_t i = 0; i < nv; i++)
    if (v[i].key != NULL) assert_int_equal(v[i].part, jobq_part_of(v[i].key, strlen(v[i].key), 7));
  jobq_info_free(v, nv);
  for (size_t i = 0; i < n; i++) assert_rc(jobq_complete(s[0], &j[i], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, n);
  size_t done = drain(t, s, 2, change_count);
  assert_int_equal(done + n, 50);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done WHERE outcome = 'done'"),
                   50);
  jobq_session_close(s[0]);
  jobq_session_close(s[1]);
}

static void rebalance(tq *t, int round, jobq_session **s, size_t ns) {
  if (round == 2) s[2] = th_session(t->db, 0);
  if (round == 5) {
    jobq_session_close(s[0]);
    s[0] = NULL;
  }
  if (round == 8) s[0] = th_session(t->db, 0);
}

static void test_key_order_across_rebalances(void **state) {
  tq *t = *state;
  set_parts(t->db, 6);
  put_keyed_jobs(t, 10, 8, 10);
  jobq_session *s[3] = {th_session(t->db, 0), th_session(t->db, 0), NULL};
  size_t done = drain(t, s, 3, rebalance);
  assert_int_equal(done, 90);
  for (int i = 0; i < 3; i++) jobq_session_close(s[i]);
}

/* A dead job of a key, retried, comes back in its key's part. */
static void test_retried_in_its_part(void **state) {
  tq *t = *state;
  set_parts(t->db, 8);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = Q;
  o.key = "the-key";
  o.max_attempts = 1;
  int64_t id = th_put_opts(t->db, &o);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, Q);
  assert_rc(jobq_fail(s, j, "no"), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DEAD);
  assert_rc(jobq_retry(t->db, id), JOBQ_OK);
  jobq_job_info *info = th_show(t->db, id);
  assert_int_equal(info->part, jobq_part_of("the-key", 7, 8));
  jobq_info_free(info, 1);
  /* And its owner claims it. */
  j = th_claim_one(s, Q);
  assert_int_equal(j->id, id);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_bad_counts(void **state) {
  tq *t = *state;
  th_put(t->db, Q, "a");
  assert_rc(jobq_set_parts(t->db, Q, 0), JOBQ_EINVAL);
  assert_non_null(strstr(jobq_errmsg(t->db), "'0'"));
  assert_rc(jobq_set_parts(t->db, Q, 1025), JOBQ_EINVAL);
  assert_rc(jobq_set_parts(t->db, "Bad Queue", 2), JOBQ_EINVAL);
  int parts = 0;
  assert_rc(jobq_parts(t->db, Q, &parts, NULL, NULL), JOBQ_OK);
  assert_int_equal(parts, 1);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_parts"), 0);
  /* One part: the queue as it was, its jobs in no part. */
  jobq_job_info *info = th_show(t->db, 1);
  assert_int_equal(info->part, -1);
  jobq_info_free(info, 1);
}

/* PostgreSQL's jobq_put() SQL function puts a job in its key's part, as
 * the library does, and a job without a key in one of the parts. */
static void test_sql_put_function(void **state) {
  tq *t = *state;
  if (strcmp(th_store(), "postgres") != 0) {
    print_message("skipped on %s: the jobq_put() SQL function is PostgreSQL's\n", th_store());
    skip();
  }
  set_parts(t->db, 16);
  static const char *const keys[] = {"a", "order-17", "caf\xc3\xa9", "x/y/z"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT jobq_put('%s', '', order_key => '%s')", Q, keys[i]);
    jobq_job_info *info = th_show(t->db, th_sql_int(t->db, sql));
    assert_int_equal(info->part, jobq_part_of(keys[i], strlen(keys[i]), 16));
    jobq_info_free(info, 1);
  }
  jobq_job_info *info = th_show(t->db, th_sql_int(t->db, "SELECT jobq_put('pq', '')"));
  assert_true(info->part >= 0 && info->part < 16);
  jobq_info_free(info, 1);
}

/* A put of many keyless jobs gives each part its share of them (a
 * tenth of 103 in 10 parts: 10 or 11), each share a run of neighbours in
 * the order of the put; a lone put goes round the parts. */
static void test_put_in_runs(void **state) {
  tq *t = *state;
  enum { N = 103, P = 10 };
  set_parts(t->db, P);
  jobq_put_opts o[N];
  int64_t ids[N];
  for (int i = 0; i < N; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = Q;
  }
  assert_rc(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  int count[P] = {0}, runs = 0, last = -1;
  for (int i = 0; i < N; i++) {
    jobq_job_info *j = th_show(t->db, ids[i]);
    assert_true(j->part >= 0 && j->part < P);
    count[j->part]++;
    runs += j->part != last;
    last = j->part;
    jobq_info_free(j, 1);
  }
  for (int p = 0; p < P; p++)
    if (count[p] < N / P || count[p] > N / P + 1) fail_msg("part %d has %d of %d jobs", p, count[p], N);
  assert_int_equal(runs, P);
  /* One at a time, each in the part after the last one's. */
  int first = -1;
  for (int i = 0; i < P; i++) {
    int64_t id = th_put(t->db, Q, "one");
    jobq_job_info *j = th_show(t->db, id);
    if (first < 0) first = j->part;
    assert_int_equal(j->part, (first + i) % P);
    jobq_info_free(j, 1);
  }
  /* Two queues in one put, their jobs interleaved, some with keys: each
   * queue's keyless jobs make runs over its own parts. */
  enum { M = 90, P2 = 4 };
  const char *other = "parts.other";
  if (jobq_set_parts(t->db, other, P2) != JOBQ_OK)
    fail_msg("jobq_set_parts: %s", jobq_errmsg(t->db));
  jobq_put_opts m[M];
  int64_t mids[M];
  char keys[M][16];
  for (int i = 0; i < M; i++) {
    jobq_put_opts_init(&m[i]);
    m[i].queue = i % 3 == 0 ? other : Q;
    if (i % 5 == 4) {
      snprintf(keys[i], sizeof keys[i], "k%d", i);
      m[i].key = keys[i];
    }
  }
  assert_rc(jobq_put_many(t->db, m, M, mids, NULL), JOBQ_OK);
  for (int q = 0; q < 2; q++) {
    const char *queue = q ? other : Q;
    int parts = q ? P2 : P, per[P] = {0}, n = 0;
    runs = 0;
    last = -1;
    for (int i = 0; i < M; i++) {
      if (m[i].queue != queue) continue;
      jobq_job_info *j = th_show(t->db, mids[i]);
      if (m[i].key != NULL) {
        assert_int_equal(j->part, jobq_part_of(m[i].key, strlen(m[i].key), parts));
      } else {
        per[j->part]++;
        n++;
        runs += j->part != last;
        last = j->part;
      }
      jobq_info_free(j, 1);
    }
    for (int p = 0; p < parts; p++)
      if (per[p] < n / parts || per[p] > n / parts + 1)
        fail_msg("%s: part %d has %d of %d jobs", queue, p, per[p], n);
    assert_int_equal(runs, parts);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_fair_split),
      TQ_TEST(test_put_in_runs),
      TQ_TEST(test_join_within_a_heartbeat),
      TQ_TEST(test_next_due_of_own_parts),
      TQ_TEST(test_sessions_leave_at_once),
      TQ_TEST(test_running_part_kept),
      TQ_TEST(test_expired_parts_move),
      TQ_TEST(test_claims_only_own_parts),
      TQ_TEST(test_change_count_loses_nothing),
      TQ_TEST(test_key_order_across_rebalances),
      TQ_TEST(test_retried_in_its_part),
      TQ_TEST(test_bad_counts),
      TQ_TEST(test_sql_put_function),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
