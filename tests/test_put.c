/*
 * test_put.c - enqueueing through jobq_put() and jobq_put_many(): the
 * defaults a job gets, the refusal of every family of bad input with the
 * right code and a message naming the input, the all-or-none rule (a
 * refused put writes nothing, not even its queue), byte-exact payloads and
 * unique keys.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

/* Nothing at all in the database: no jobs and no queues. */
static void assert_empty(jobq *db) {
  assert_int_equal(th_count_jobs(db, 0), 0);
  jobq_queue_stats *st = NULL;
  size_t n = 99;
  assert_rc(jobq_stats(db, &st, &n), JOBQ_OK);
  if (n != 0) fail_msg("expected no queues, found '%s'", st[0].name);
  jobq_stats_free(st, n);
}

/* Puts o, asserts it is refused with err and a message containing each of
 * the needles, and that nothing was written. */
static void refuse(jobq *db, const jobq_put_opts *o, int err,
                   const char *needle1, const char *needle2) {
  int64_t id = 12345;
  int existed = 7;
  int rc = jobq_put(db, o, &id, &existed);
  if (rc != err)
    fail_msg("expected %s, got %s (%s)", jobq_err_name(err), jobq_err_name(rc),
             jobq_errmsg(db));
  if (needle1 != NULL) th_assert_msg(db, needle1);
  if (needle2 != NULL) th_assert_msg(db, needle2);
  assert_empty(db);
}

static void test_defaults(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  assert_int_equal(o.priority, 0);
  assert_int_equal(o.delay_ms, 0);
  assert_int_equal(o.run_at_ms, 0);
  assert_null(o.key);
  assert_null(o.unique_key);
  assert_int_equal(o.barrier, 0);
  assert_int_equal(o.max_attempts, JOBQ_DEFAULT_MAX_ATTEMPTS);
  assert_int_equal(o.backoff_ms, JOBQ_DEFAULT_BACKOFF_MS);
  assert_int_equal(o.timeout_ms, 0);

  int64_t before = th_db_now(t->db);
  int64_t id = 0;
  int existed = 7;
  assert_rc(jobq_put(t->db, &o, &id, &existed), JOBQ_OK);
  assert_true(id > 0);
  assert_int_equal(existed, 0);
  int64_t after = th_db_now(t->db);

  jobq_job_info *i = th_show(t->db, id);
  assert_string_equal(i->queue, JOBQ_DEFAULT_QUEUE);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  assert_int_equal(i->priority, 0);
  assert_int_equal(i->max_attempts, JOBQ_DEFAULT_MAX_ATTEMPTS);
  assert_int_equal(i->backoff_ms, JOBQ_DEFAULT_BACKOFF_MS);
  assert_int_equal(i->timeout_ms, 0);
  assert_int_equal(i->attempts, 0);
  assert_int_equal(i->barrier, 0);
  assert_null(i->key);
  assert_null(i->unique_key);
  assert_null(i->last_error);
  assert_null(i->result);
  assert_int_equal(i->payload_len, 0);
  assert_int_equal(i->claimed_at_ms, 0);
  assert_int_equal(i->finished_at_ms, 0);
  assert_int_equal(i->cancel_requested, 0);
  assert_int_equal(i->prev_lost, 0);
  assert_in_range(i->created_at_ms, before, after);
  assert_in_range(i->run_at_ms, before, after);
  jobq_info_free(i, 1);

  /* existed may be NULL, and ids rise. */
  int64_t id2 = 0;
  assert_rc(jobq_put(t->db, &o, &id2, NULL), JOBQ_OK);
  assert_true(id2 > id);
  jobq_identity ident;
  assert_rc(jobq_identity_get(t->db, &ident), JOBQ_OK);
  assert_int_equal(ident.seq, id2);
}

static void test_options_recorded(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "mail.out-2_x";
  o.priority = JOBQ_PRIORITY_MAX;
  o.max_attempts = JOBQ_ATTEMPTS_MAX;
  o.timeout_ms = 30000;
  o.backoff_ms = 250;
  o.key = "customer-42";
  o.unique_key = "welcome-42";
  int64_t id = th_put_opts(t->db, &o);
  jobq_job_info *i = th_show(t->db, id);
  assert_string_equal(i->queue, "mail.out-2_x");
  assert_int_equal(i->priority, JOBQ_PRIORITY_MAX);
  assert_int_equal(i->max_attempts, JOBQ_ATTEMPTS_MAX);
  assert_int_equal(i->timeout_ms, 30000);
  assert_int_equal(i->backoff_ms, 250);
  assert_string_equal(i->key, "customer-42");
  assert_string_equal(i->unique_key, "welcome-42");
  jobq_info_free(i, 1);

  /* The other ends of the ranges are accepted too. */
  jobq_put_opts_init(&o);
  o.priority = JOBQ_PRIORITY_MIN;
  o.max_attempts = 1;
  char name[JOBQ_QUEUE_MAX + 1];
  memset(name, 'q', JOBQ_QUEUE_MAX);
  name[JOBQ_QUEUE_MAX] = '\0';
  o.queue = name;
  char key[JOBQ_KEY_MAX + 1];
  memset(key, 'k', JOBQ_KEY_MAX);
  key[JOBQ_KEY_MAX] = '\0';
  o.key = key;
  id = th_put_opts(t->db, &o);
  i = th_show(t->db, id);
  assert_string_equal(i->queue, name);
  assert_string_equal(i->key, key);
  assert_int_equal(i->priority, JOBQ_PRIORITY_MIN);
  assert_int_equal(i->max_attempts, 1);
  jobq_info_free(i, 1);
}

static void test_delay_and_run_at(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.delay_ms = 60000;
  int64_t before = th_db_now(t->db);
  int64_t id = th_put_opts(t->db, &o);
  int64_t after = th_db_now(t->db);
  jobq_job_info *i = th_show(t->db, id);
  assert_in_range(i->run_at_ms, before + 60000, after + 60000);
  assert_int_equal(i->state, JOBQ_STATE_READY);
  jobq_info_free(i, 1);

  jobq_put_opts_init(&o);
  int64_t when = th_db_now(t->db) + 3600 * 1000;
  o.run_at_ms = when;
  id = th_put_opts(t->db, &o);
  i = th_show(t->db, id);
  assert_int_equal(i->run_at_ms, when);
  jobq_info_free(i, 1);
}

static void test_bad_queue_names(void **state) {
  tq *t = *state;
  char long_name[JOBQ_QUEUE_MAX + 2];
  memset(long_name, 'a', JOBQ_QUEUE_MAX + 1);
  long_name[JOBQ_QUEUE_MAX + 1] = '\0';
  const char *bad[] = {"a;b",   "a b",       "Abc",     "caf\xc3\xa9", long_name,
                       "",      "_lead",     ".lead",   "-lead",       "a/b",
                       "a'b",   "tab\there", "x\ny"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = bad[k];
    /* The subject is named; printable short names are shown as given. */
    int printable = strlen(bad[k]) > 0 && strlen(bad[k]) <= 40 &&
                    strpbrk(bad[k], "\t\n\xc3") == NULL;
    refuse(t->db, &o, JOBQ_EINVAL, "queue", printable ? bad[k] : NULL);
    assert_rc(jobq_check_queue(NULL, bad[k]), JOBQ_EINVAL);
    assert_rc(jobq_check_queue(t->db, bad[k]), JOBQ_EINVAL);
    th_assert_msg(t->db, "queue");
  }
  const char *good[] = {"a", "0", "default", "a.b-c_d", "9lives"};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
    assert_rc(jobq_check_queue(NULL, good[k]), JOBQ_OK);
}

static void test_bad_numbers(void **state) {
  tq *t = *state;
  jobq_put_opts o;

  jobq_put_opts_init(&o);
  o.priority = JOBQ_PRIORITY_MAX + 1;
  refuse(t->db, &o, JOBQ_EINVAL, "priority", "32768");
  o.priority = JOBQ_PRIORITY_MIN - 1;
  refuse(t->db, &o, JOBQ_EINVAL, "priority", "-32769");

  jobq_put_opts_init(&o);
  o.max_attempts = 0;
  refuse(t->db, &o, JOBQ_EINVAL, "attempts", NULL);
  o.max_attempts = JOBQ_ATTEMPTS_MAX + 1;
  refuse(t->db, &o, JOBQ_EINVAL, "attempts", "1001");
  o.max_attempts = -3;
  refuse(t->db, &o, JOBQ_EINVAL, "attempts", NULL);

  jobq_put_opts_init(&o);
  o.delay_ms = -1;
  refuse(t->db, &o, JOBQ_EINVAL, "delay", NULL);

  jobq_put_opts_init(&o);
  o.timeout_ms = -5;
  refuse(t->db, &o, JOBQ_EINVAL, "timeout", NULL);

  jobq_put_opts_init(&o);
  o.backoff_ms = -5;
  refuse(t->db, &o, JOBQ_EINVAL, "backoff", NULL);
}

static void test_bad_payload_and_keys(void **state) {
  tq *t = *state;
  jobq_put_opts o;

  /* Over the default limit of 1 MiB. */
  size_t big = JOBQ_DEFAULT_MAX_PAYLOAD + 1;
  char *buf = calloc(1, big);
  assert_non_null(buf);
  jobq_put_opts_init(&o);
  o.payload = buf;
  o.payload_len = big;
  refuse(t->db, &o, JOBQ_ETOOBIG, "payload", NULL);

  /* A lowered limit applies at once; exactly the limit is fine. */
  assert_rc(jobq_set_max_payload(t->db, 1000), JOBQ_OK);
  o.payload_len = 1001;
  refuse(t->db, &o, JOBQ_ETOOBIG, "payload", NULL);

  /* NULL with a length is a caller bug. */
  jobq_put_opts_init(&o);
  o.payload = NULL;
  o.payload_len = 5;
  refuse(t->db, &o, JOBQ_EINVAL, "payload", NULL);
  int64_t id;
  int rc;

  char key[JOBQ_KEY_MAX + 2];
  memset(key, 'k', JOBQ_KEY_MAX + 1);
  key[JOBQ_KEY_MAX + 1] = '\0';
  jobq_put_opts_init(&o);
  o.queue = "fresh";
  o.key = key;
  rc = jobq_put(t->db, &o, &id, NULL);
  assert_true(rc == JOBQ_EINVAL || rc == JOBQ_ETOOBIG);
  th_assert_msg(t->db, "key");

  jobq_put_opts_init(&o);
  o.queue = "fresh";
  o.unique_key = key;
  rc = jobq_put(t->db, &o, &id, NULL);
  assert_true(rc == JOBQ_EINVAL || rc == JOBQ_ETOOBIG);
  th_assert_msg(t->db, "unique");

  jobq_put_opts_init(&o);
  o.queue = "fresh";
  o.barrier = 1;
  o.key = "k";
  refuse(t->db, &o, JOBQ_EINVAL, "barrier", NULL);

  /* None of the refused puts wrote anything, not even queue "fresh". */
  assert_empty(t->db);

  /* Exactly the limit is fine. */
  jobq_put_opts_init(&o);
  o.payload = buf;
  o.payload_len = 1000;
  id = th_put_opts(t->db, &o);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->payload_len, 1000);
  jobq_info_free(i, 1);
  free(buf);
}

static void test_put_many_all_or_none(void **state) {
  tq *t = *state;
  jobq_put_opts o[5];
  for (int k = 0; k < 5; k++) {
    jobq_put_opts_init(&o[k]);
    o[k].queue = "batch";
  }
  o[3].priority = 99999;
  int64_t ids[5] = {0};
  unsigned char existed[5] = {9, 9, 9, 9, 9};
  int rc = jobq_put_many(t->db, o, 5, ids, existed);
  assert_int_equal(rc, JOBQ_EINVAL);
  th_assert_msg(t->db, "job 3");
  th_assert_msg(t->db, "priority");
  assert_empty(t->db);

  /* A bad queue name in the last one: still nothing. */
  o[3].priority = 0;
  o[4].queue = "Bad Name";
  assert_rc(jobq_put_many(t->db, o, 5, ids, existed), JOBQ_EINVAL);
  th_assert_msg(t->db, "job 4");
  assert_empty(t->db);

  /* All good: five ids in order. */
  o[4].queue = "batch";
  assert_rc(jobq_put_many(t->db, o, 5, ids, existed), JOBQ_OK);
  for (int k = 0; k < 5; k++) {
    assert_true(ids[k] > 0);
    if (k > 0) assert_true(ids[k] > ids[k - 1]);
    assert_int_equal(existed[k], 0);
    assert_int_equal(th_state(t->db, ids[k]), JOBQ_STATE_READY);
  }
  assert_int_equal(th_count_jobs(t->db, 0), 5);
  /* existed may be NULL. */
  assert_rc(jobq_put_many(t->db, o, 2, ids, NULL), JOBQ_OK);
  assert_int_equal(th_count_jobs(t->db, 0), 7);
}

static void test_put_many_unique_inside_batch(void **state) {
  tq *t = *state;
  jobq_put_opts o[3];
  for (int k = 0; k < 3; k++) jobq_put_opts_init(&o[k]);
  o[0].unique_key = "u";
  o[1].unique_key = "u";
  o[2].unique_key = "v";
  int64_t ids[3];
  unsigned char existed[3];
  assert_rc(jobq_put_many(t->db, o, 3, ids, existed), JOBQ_OK);
  assert_int_equal(existed[0], 0);
  assert_int_equal(existed[1], 1);
  assert_int_equal(existed[2], 0);
  assert_int_equal(ids[1], ids[0]);
  assert_true(ids[2] != ids[0]);
  assert_int_equal(th_count_jobs(t->db, 0), 2);
}

/* A batch of plain jobs large enough to go in statements of several sizes
 * on MariaDB (149 = 2 x 64 + 16 + 4 + 1; one statement elsewhere), in
 * three queues interleaved, one of them behind a barrier: each id is its
 * own job's, with its values (payloads of bytes with NULs, empty ones,
 * unique keys and none), and only that queue's jobs wait. */
static void test_put_many_plain_ids_are_their_jobs(void **state) {
  tq *t = *state;
  enum { N = 149 };
  static const char *const queues[] = {"plain-b", "plain-a", "plain-c"};
  jobq_put_opts b;
  jobq_put_opts_init(&b);
  b.queue = "plain-c";
  b.barrier = 1;
  int64_t barrier = th_put_opts(t->db, &b);
  jobq_put_opts o[N];
  char payload[N][16], unique[N][16];
  size_t len[N];
  int64_t ids[N];
  for (int k = 0; k < N; k++) {
    jobq_put_opts_init(&o[k]);
    o[k].queue = queues[k % 3];
    o[k].priority = k % 5 - 2;
    o[k].delay_ms = k % 7 == 0 ? 60000 : 0;
    o[k].max_attempts = 1 + k % 4;
    snprintf(payload[k], sizeof payload[k], "job %d", k);
    len[k] = k % 10 == 4 ? 0 : strlen(payload[k]);
    if (k % 10 == 3) payload[k][1] = payload[k][3] = '\0';
    o[k].payload = payload[k];
    o[k].payload_len = len[k];
    snprintf(unique[k], sizeof unique[k], "u%d", k);
    o[k].unique_key = k % 4 == 1 ? unique[k] : NULL;
  }
  assert_rc(jobq_put_many(t->db, o, N, ids, NULL), JOBQ_OK);
  for (int k = 0; k < N; k++) {
    if (k > 0) assert_true(ids[k] > ids[k - 1]);
    assert_true(ids[k] > barrier);
    jobq_job_info *i = th_show(t->db, ids[k]);
    assert_string_equal(i->queue, queues[k % 3]);
    assert_int_equal(i->priority, k % 5 - 2);
    assert_int_equal(i->max_attempts, 1 + k % 4);
    assert_int_equal(i->payload_len, len[k]);
    assert_memory_equal(i->payload, payload[k], len[k]);
    if (k % 4 == 1) assert_string_equal(i->unique_key, unique[k]);
    else assert_null(i->unique_key);
    assert_int_equal(i->state, k % 3 == 2 ? JOBQ_STATE_WAITING : JOBQ_STATE_READY);
    jobq_info_free(i, 1);
  }
  assert_int_equal(th_count_jobs(t->db, 0), N + 1);
}

static void test_payload_bytes_exact(void **state) {
  tq *t = *state;
  static const unsigned char bytes[] = {0x00, 0xff, 0xfe, 0x80, 'a', 0x00,
                                        0xc3, 0x28, 0xed, 0xa0, 0x80, 0x00};
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.payload = bytes;
  o.payload_len = sizeof bytes;
  int64_t id = th_put_opts(t->db, &o);

  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->payload_len, sizeof bytes);
  assert_memory_equal(i->payload, bytes, sizeof bytes);
  assert_int_equal(((unsigned char *)i->payload)[sizeof bytes], 0);
  jobq_info_free(i, 1);

  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, NULL);
  assert_int_equal(j->id, id);
  assert_int_equal(j->payload_len, sizeof bytes);
  assert_memory_equal(j->payload, bytes, sizeof bytes);
  assert_int_equal(((unsigned char *)j->payload)[sizeof bytes], 0);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);

  /* An empty payload with a NULL pointer is fine and reads back empty. */
  jobq_put_opts_init(&o);
  o.payload = NULL;
  o.payload_len = 0;
  id = th_put_opts(t->db, &o);
  i = th_show(t->db, id);
  assert_int_equal(i->payload_len, 0);
  jobq_info_free(i, 1);
}

static void test_unique_keys(void **state) {
  tq *t = *state;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "u";
  o.unique_key = "report-2024";
  o.payload = "first";
  o.payload_len = 5;
  int64_t id1 = 0, id2 = 0;
  int existed = 9;
  assert_rc(jobq_put(t->db, &o, &id1, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);

  o.payload = "second";
  o.payload_len = 6;
  assert_rc(jobq_put(t->db, &o, &id2, &existed), JOBQ_OK);
  assert_int_equal(existed, 1);
  assert_int_equal(id2, id1);
  assert_int_equal(th_count_jobs(t->db, 0), 1);
  jobq_job_info *i = th_show(t->db, id1);
  assert_memory_equal(i->payload, "first", 5);
  jobq_info_free(i, 1);

  /* Unique per queue: the same key elsewhere is a new job. */
  o.queue = "u2";
  int64_t other = 0;
  assert_rc(jobq_put(t->db, &o, &other, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  assert_true(other != id1);

  /* Still unique while it runs. */
  o.queue = "u";
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "u");
  assert_int_equal(j->id, id1);
  assert_rc(jobq_put(t->db, &o, &id2, &existed), JOBQ_OK);
  assert_int_equal(existed, 1);
  assert_int_equal(id2, id1);

  /* Once it finished, the key is free again. */
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  assert_rc(jobq_put(t->db, &o, &id2, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  assert_true(id2 > id1);
  assert_int_equal(th_state(t->db, id1), JOBQ_STATE_DONE);
  assert_int_equal(th_state(t->db, id2), JOBQ_STATE_READY);

  /* A cancelled job frees it too. */
  assert_rc(jobq_cancel(t->db, id2, NULL), JOBQ_OK);
  int64_t id3 = 0;
  assert_rc(jobq_put(t->db, &o, &id3, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  assert_true(id3 > id2);

  /* A retried job may not make a second unfinished job with its unique
   * key: either the retry is refused or only one holds the key. */
  int rc = jobq_retry(t->db, id2);
  assert_true(rc == JOBQ_OK || rc == JOBQ_ESTATE);
  jobq_list_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.queue = "u";
  jobq_job_info *infos = NULL;
  size_t n = 0;
  assert_rc(jobq_list(t->db, &lo, &infos, &n), JOBQ_OK);
  int holders = 0;
  for (size_t k = 0; k < n; k++)
    if (infos[k].unique_key != NULL && strcmp(infos[k].unique_key, "report-2024") == 0 &&
        infos[k].state <= JOBQ_STATE_WAITING)
      holders++;
  jobq_info_free(infos, n);
  assert_int_equal(holders, 1);
  jobq_session_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_defaults),
      TQ_TEST(test_options_recorded),
      TQ_TEST(test_delay_and_run_at),
      TQ_TEST(test_bad_queue_names),
      TQ_TEST(test_bad_numbers),
      TQ_TEST(test_bad_payload_and_keys),
      TQ_TEST(test_put_many_all_or_none),
      TQ_TEST(test_put_many_unique_inside_batch),
      TQ_TEST(test_put_many_plain_ids_are_their_jobs),
      TQ_TEST(test_payload_bytes_exact),
      TQ_TEST(test_unique_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
