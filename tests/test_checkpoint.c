/*
 * test_checkpoint.c - the SQLite store's write-ahead log.  The store
 * checkpoints after its own commits, in place of SQLite's automatic
 * checkpoint: once the log is past 1000 pages and no reader holds an
 * older snapshot, the log is copied into the file and started again
 * from its beginning.  A reader that holds a snapshot meanwhile holds
 * the copy back, but no commit fails or is lost for it; once the reader
 * is gone, the next commits start the log again.  The log's length is
 * read as SQLite reports it (PRAGMA wal_checkpoint on a connection of
 * the test's own).
 */
#include "helpers.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define SQLITE_WHY "the write-ahead log and its checkpoints are SQLite's"

enum { BATCH = 100, PAYLOAD = 3000 };

/* A connection of the test's own on t's file. */
static sqlite3 *raw(const tq *t) {
  sqlite3 *h = NULL;
  if (sqlite3_open_v2(t->path, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    fail_msg("opening %s: %s", t->path, h ? sqlite3_errmsg(h) : "out of memory");
  sqlite3_busy_timeout(h, 5000);
  return h;
}

/* The pages in the log now, as a PASSIVE checkpoint on a connection of
 * the test's own reports them. */
static int log_pages(const tq *t) {
  sqlite3 *h = raw(t);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(h, "PRAGMA wal_checkpoint(PASSIVE)", -1, &st, NULL) != SQLITE_OK)
    fail_msg("PRAGMA wal_checkpoint: %s", sqlite3_errmsg(h));
  if (sqlite3_step(st) != SQLITE_ROW) fail_msg("PRAGMA wal_checkpoint: %s", sqlite3_errmsg(h));
  int pages = sqlite3_column_int(st, 1);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return pages;
}

/* Puts n jobs of PAYLOAD bytes on q, BATCH to a transaction, each batch
 * asserted acknowledged. */
static void put_big(jobq *db, int n) {
  static char payload[PAYLOAD];
  memset(payload, 'p', sizeof payload);
  jobq_put_opts o[BATCH];
  int64_t ids[BATCH];
  for (int done = 0; done < n; done += BATCH) {
    for (int k = 0; k < BATCH; k++) {
      jobq_put_opts_init(&o[k]);
      o[k].queue = "q";
      o[k].payload = payload;
      o[k].payload_len = sizeof payload;
    }
    assert_rc(jobq_put_many(db, o, BATCH, ids, NULL), JOBQ_OK);
  }
}

/* Past 1000 pages the log is copied and started again: 3000 jobs of 3 KB
 * write several thousand pages, and the log ends shorter than 1000. */
static void test_log_starts_again(void **state) {
  TH_SQLITE_ONLY(SQLITE_WHY);
  tq *t = *state;
  put_big(t->db, 3000);
  int pages = log_pages(t);
  if (pages >= 1000)
    fail_msg("the log holds %d pages after 3000 jobs: expected fewer than 1000", pages);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), 3000);
}

/* A reader holding a snapshot keeps the log from being copied: every
 * commit still succeeds, and once the reader is gone the log starts
 * again and every job is there. */
static void test_reader_holds_log_back(void **state) {
  TH_SQLITE_ONLY(SQLITE_WHY);
  tq *t = *state;
  th_put(t->db, "q", "first");
  sqlite3 *reader = raw(t);
  if (sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM jobq_jobs;", NULL, NULL, NULL) !=
      SQLITE_OK)
    fail_msg("reading: %s", sqlite3_errmsg(reader));
  put_big(t->db, 1500);
  int held = log_pages(t);
  if (held < 1000)
    fail_msg("the log holds %d pages behind a reader: expected 1000 or more", held);
  if (sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    fail_msg("ending the read: %s", sqlite3_errmsg(reader));
  sqlite3_close(reader);
  /* The first commit after the reader copies the log; the next starts it
   * again. */
  for (int k = 0; k < 3; k++) th_put(t->db, "q", "after");
  int pages = log_pages(t);
  if (pages >= 1000)
    fail_msg("the log holds %d pages after the reader left, %d before: expected fewer "
             "than 1000, the log started again",
             pages, held);
  assert_int_equal(th_count_jobs(t->db, JOBQ_STATE_READY), 1504);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_log_starts_again),
      TQ_TEST(test_reader_holds_log_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
