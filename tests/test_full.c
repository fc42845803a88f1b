/*
 * test_full.c - a queue database that runs out of space.  On SQLite the
 * url's max_size caps the file (PRAGMA max_page_count), which is how a
 * full disk looks to the store: every write that needs a new page fails
 * with SQLITE_FULL.  A put refused that way writes nothing, not half a
 * batch; what was acknowledged before stays; and once there is room again
 * (a larger max_size, as an operator freeing space) every acknowledged job
 * runs and completes exactly once.  A full disk under PostgreSQL or
 * MariaDB needs a size-limited filesystem, which a test cannot mount
 * without privileges; docs/operations.md says what happens there.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP "256KiB"
#define BATCH 10

/* t's file, opened with ?max_size=size. */
static jobq *open_capped(const tq *t, const char *size) {
  char url[PATH_MAX + 64];
  snprintf(url, sizeof url, "sqlite:%s?max_size=%s", t->path, size);
  return th_open(url);
}

/* Puts batches of BATCH 1 KiB jobs until one is refused; returns how many
 * jobs were acknowledged, and asserts the refusal says what is full. */
static int64_t fill(jobq *db) {
  char payload[1024];
  memset(payload, 'x', sizeof payload);
  jobq_put_opts o[BATCH];
  int64_t ids[BATCH];
  int64_t acked = 0;
  for (int round = 0; round < 10000; round++) {
    for (int k = 0; k < BATCH; k++) {
      jobq_put_opts_init(&o[k]);
      o[k].queue = "q";
      o[k].payload = payload;
      o[k].payload_len = sizeof payload;
    }
    int rc = jobq_put_many(db, o, BATCH, ids, NULL);
    if (rc == JOBQ_OK) {
      acked += BATCH;
      continue;
    }
    if (rc != JOBQ_EDB)
      fail_msg("expected JOBQ_EDB from a full database, got %s (%s)",
               jobq_err_name(rc), jobq_errmsg(db));
    th_assert_msg(db, "is full");
    th_assert_msg(db, "max_size");
    return acked;
  }
  fail_msg("a database capped at " CAP " took 100000 jobs of 1 KiB");
  return 0;
}

/* Claims and completes everything left in q, 100 at a time; returns how
 * many jobs that was. */
static int64_t drain(jobq *db) {
  jobq_session *s = th_session(db, 0);
  int64_t done = 0;
  for (;;) {
    size_t n = 0;
    jobq_job *j = th_claim(s, "q", 100, &n);
    if (n == 0) break;
    th_complete_many(s, j, n);
    done += (int64_t)n;
  }
  jobq_session_close(s);
  return done;
}

static void test_full_refuses_whole_puts(void **state) {
  TH_SQLITE_ONLY("a full disk on a server store needs a size-limited "
                 "filesystem, which tests cannot mount");
  tq *t = *state;
  jobq *db = open_capped(t, CAP);
  int64_t acked = fill(db);
  assert_true(acked > 0);
  /* Nothing of the refused batch, everything of the others. */
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), acked);
  /* Single puts of the same size fill what is left, then are refused
   * the same way. */
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "q";
  char payload[1024];
  memset(payload, 'y', sizeof payload);
  o.payload = payload;
  o.payload_len = sizeof payload;
  int rc = JOBQ_OK;
  for (int k = 0; k < 100 && rc == JOBQ_OK; k++) {
    int64_t id = 0;
    rc = jobq_put(db, &o, &id, NULL);
    if (rc == JOBQ_OK) acked++;
  }
  assert_rc(rc, JOBQ_EDB);
  th_assert_msg(db, "is full");
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), acked);
  jobq_close(db);

  /* Room again: every acknowledged job runs once and is done once. */
  db = open_capped(t, "64MiB");
  assert_int_equal(drain(db), acked);
  assert_int_equal(th_count_jobs(db, JOBQ_STATE_DONE), acked);
  assert_int_equal(th_count_jobs(db, 0), acked);
  jobq_close(db);
}

/* Full while a job runs: its completion (the archive needs pages) either
 * fits or is refused changing nothing; the job is then released with its
 * session and runs again once there is room. */
static void test_full_while_running(void **state) {
  TH_SQLITE_ONLY("a full disk on a server store needs a size-limited "
                 "filesystem, which tests cannot mount");
  tq *t = *state;
  jobq *db = open_capped(t, CAP);
  jobq_session *s = th_session(db, 0);
  th_put(db, "q", "first");
  jobq_job *j = th_claim_one(s, "q");
  int64_t acked = 1 + fill(db);
  int rc = jobq_complete(s, j, "r", 1, NULL);
  if (rc != JOBQ_OK) {
    assert_int_equal(rc, JOBQ_EDB);
    th_assert_msg(db, "is full");
    assert_int_equal(th_state(t->db, j->id), JOBQ_STATE_RUNNING);
  }
  jobq_session_close(s);
  jobq_close(db);
  db = open_capped(t, "64MiB");
  assert_int_equal(drain(db), rc == JOBQ_OK ? acked - 1 : acked);
  assert_int_equal(th_count_jobs(db, JOBQ_STATE_DONE), acked);
  assert_int_equal(th_count_jobs(db, 0), acked);
  jobq_jobs_free(j, 1);
  jobq_close(db);
}

static void test_bad_max_size(void **state) {
  TH_SQLITE_ONLY("max_size is an option of SQLite urls");
  tq *t = *state;
  const char *bad[] = {"abc", "1KiB", "-5", "10XB", ""};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char url[PATH_MAX + 64];
    snprintf(url, sizeof url, "sqlite:%s?max_size=%s", t->path, bad[k]);
    jobq *db = NULL;
    int rc = jobq_open(url, &db);
    if (rc != JOBQ_EURL)
      fail_msg("max_size '%s': expected JOBQ_EURL, got %s", bad[k], jobq_err_name(rc));
    th_assert_msg(db, "max_size");
    jobq_close(db);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_full_refuses_whole_puts),
      TQ_TEST(test_full_while_running),
      TQ_TEST(test_bad_max_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
