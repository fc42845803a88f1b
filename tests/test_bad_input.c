/*
 * test_bad_input.c - the C API refuses what it cannot take, with a code,
 * a message that names the input, and nothing written; and takes the odd
 * but good: payloads and results with NUL bytes and invalid UTF-8 come
 * back byte for byte, error texts that are not text are kept as text.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Asserts call failed with want, left a message containing needle, and
 * wrote no job. */
#define REFUSED(t, call, want, needle)                          \
  do {                                                          \
    assert_rc((call), (want));                                  \
    th_assert_msg((t)->db, (needle));                           \
    assert_int_equal(th_count_jobs((t)->db, 0), 0);             \
  } while (0)

static void test_bad_opens(void **state) {
  (void)state;
  jobq *db = NULL;
  assert_rc(jobq_open(NULL, &db), JOBQ_EURL);
  assert_true(strlen(jobq_errmsg(db)) > 0);
  jobq_close(db);
  assert_rc(jobq_open("", &db), JOBQ_EURL);
  jobq_close(db);
  assert_rc(jobq_open("sqlite:x.db?max_payload=2GiB", &db), JOBQ_EURL);
  th_assert_msg(db, "max_payload");
  jobq_close(db);
  /* A handle that never connected refuses everything, clearly. */
  assert_rc(jobq_open("nosuch://x", &db), JOBQ_EURL);
  int64_t id;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  assert_rc(jobq_put(db, &o, &id, NULL), JOBQ_EINVAL);
  th_assert_msg(db, "not connected");
  jobq_close(db);
}

static void test_bad_puts(void **state) {
  tq *t = *state;
  int64_t id;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  REFUSED(t, jobq_put(t->db, NULL, &id, NULL), JOBQ_EINVAL, "opts");
  REFUSED(t, jobq_put(t->db, &o, NULL, NULL), JOBQ_EINVAL, "ids");
  o.payload = NULL;
  o.payload_len = 5;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "NULL");
  jobq_put_opts_init(&o);
  o.key = "\xff\xfe";
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "UTF-8");
  o.key = NULL;
  o.unique_key = "\xc0\x80"; /* an overlong NUL */
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "UTF-8");
  char big[300];
  memset(big, 'k', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  jobq_put_opts_init(&o);
  o.key = big;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "key");
  jobq_put_opts_init(&o);
  o.backoff_ms = 2 * 3600 * 1000;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "backoff");
  jobq_put_opts_init(&o);
  o.run_at_ms = 1;
  o.delay_ms = 1;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "run-at");
  jobq_put_opts_init(&o);
  o.timeout_ms = -1;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "timeout");
  /* Times: one range whatever the way in. */
  jobq_put_opts_init(&o);
  o.run_at_ms = INT64_MAX;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "9999-12-31T23:59:59.999Z");
  o.run_at_ms = JOBQ_TIME_MAX_MS + 1;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "run-at");
  o.run_at_ms = -1;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "run-at");
  jobq_put_opts_init(&o);
  o.delay_ms = INT64_MAX;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "100 years");
  o.delay_ms = JOBQ_DURATION_MAX_MS + 1;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "delay");
  jobq_put_opts_init(&o);
  o.timeout_ms = INT64_MAX;
  REFUSED(t, jobq_put(t->db, &o, &id, NULL), JOBQ_EINVAL, "timeout");
  /* One bad job in a batch: none of them, and the message names it. */
  jobq_put_opts many[3];
  for (int k = 0; k < 3; k++) jobq_put_opts_init(&many[k]);
  many[2].max_attempts = 0;
  int64_t ids[3];
  REFUSED(t, jobq_put_many(t->db, many, 3, ids, NULL), JOBQ_EINVAL, "job 2");
  /* Nothing to put is no error. */
  assert_rc(jobq_put_many(t->db, many, 0, ids, NULL), JOBQ_OK);
  /* The ends of the range are good. */
  jobq_put_opts_init(&o);
  o.run_at_ms = JOBQ_TIME_MAX_MS;
  o.timeout_ms = JOBQ_DURATION_MAX_MS;
  assert_rc(jobq_put(t->db, &o, &id, NULL), JOBQ_OK);
  jobq_job_info *info = NULL;
  assert_rc(jobq_show(t->db, id, &info), JOBQ_OK);
  assert_int_equal(info->run_at_ms, JOBQ_TIME_MAX_MS);
  jobq_info_free(info, 1);
  jobq_put_opts_init(&o);
  o.delay_ms = JOBQ_DURATION_MAX_MS;
  assert_rc(jobq_put(t->db, &o, &id, NULL), JOBQ_OK);
}

static void test_bad_sessions_and_claims(void **state) {
  tq *t = *state;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  jobq_session *s = NULL;
  so.lease_ms = 50;
  assert_rc(jobq_session_open(t->db, &so, &s), JOBQ_EINVAL);
  th_assert_msg(t->db, "lease");
  so.lease_ms = 1000;
  so.name = "\xff";
  assert_rc(jobq_session_open(t->db, &so, &s), JOBQ_EINVAL);
  char name[200];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  so.name = name;
  assert_rc(jobq_session_open(t->db, &so, &s), JOBQ_EINVAL);
  assert_null(s);
  s = th_session(t->db, 0);
  jobq_job *j = NULL;
  size_t n = 7;
  assert_rc(jobq_claim(s, NULL, 2, 5, &j, &n), JOBQ_EINVAL);
  assert_int_equal(n, 0);
  const char *bad[] = {"ok", "Not OK"};
  assert_rc(jobq_claim(s, bad, 2, 5, &j, &n), JOBQ_EINVAL);
  th_assert_msg(t->db, "Not OK");
  const char *q = "q";
  assert_rc(jobq_claim(s, &q, 1, 10001, &j, &n), JOBQ_EINVAL);
  th_assert_msg(t->db, "10001");
  jobq_session_close(s);
}

static void test_bad_acks(void **state) {
  tq *t = *state;
  th_put(t->db, "q", "x");
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "q");
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_COMPLETE);
  a.kind = (jobq_ack_kind)99;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_EINVAL);
  jobq_ack_init(&a, j, JOBQ_ACK_COMPLETE);
  a.data = NULL;
  a.len = 3;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_EINVAL);
  assert_rc(jobq_set_max_payload(t->db, 16), JOBQ_OK);
  char result[17] = "0123456789abcdef";
  assert_rc(jobq_complete(s, j, result, 17, NULL), JOBQ_ETOOBIG);
  th_assert_msg(t->db, "17 bytes");
  assert_rc(jobq_extend(s, j, -1), JOBQ_EINVAL);
  assert_rc(jobq_extend(s, j, JOBQ_DURATION_MAX_MS + 1), JOBQ_EINVAL);
  th_assert_msg(t->db, "100 years");
  assert_rc(jobq_retry_later(s, j, INT64_MAX, NULL), JOBQ_EINVAL);
  th_assert_msg(t->db, "retry delay");
  assert_int_equal(th_state(t->db, j->id), JOBQ_STATE_RUNNING);
  assert_rc(jobq_complete(s, j, result, 16, NULL), JOBQ_OK);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

static void test_bad_admin(void **state) {
  tq *t = *state;
  jobq_job_info *info = NULL;
  assert_rc(jobq_show(t->db, 0, &info), JOBQ_EINVAL);
  assert_rc(jobq_show(t->db, 12345, &info), JOBQ_ENOTFOUND);
  jobq_list_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.limit = 2000000;
  size_t n;
  assert_rc(jobq_list(t->db, &lo, &info, &n), JOBQ_EINVAL);
  lo.limit = 0;
  lo.state = 42;
  assert_rc(jobq_list(t->db, &lo, &info, &n), JOBQ_EINVAL);
  assert_rc(jobq_set_key_policy(t->db, "q", "maybe"), JOBQ_EINVAL);
  th_assert_msg(t->db, "maybe");
  assert_rc(jobq_pause(t->db, "Q!"), JOBQ_EINVAL);
  int64_t count;
  assert_rc(jobq_prune(t->db, -1, &count), JOBQ_EINVAL);
  assert_rc(jobq_retry(t->db, -5), JOBQ_EINVAL);
  assert_rc(jobq_cancel(t->db, 99999, NULL), JOBQ_ENOTFOUND);
  assert_rc(jobq_retry_dead(t->db, "bad queue", &count), JOBQ_EINVAL);
}

/* Bytes that are not text, in and out, exactly. */
static void test_bytes_round_trip(void **state) {
  tq *t = *state;
  static const unsigned char payload[] = {'a', 0, 'b', 0xff, 0xfe, 0x80, 0, 0xc0, 0x80};
  static const unsigned char result[] = {0, 0, 0xed, 0xa0, 0x80, 'z'};
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "raw";
  o.payload = payload;
  o.payload_len = sizeof payload;
  int64_t id = th_put_opts(t->db, &o);
  jobq_session *s = th_session(t->db, 0);
  jobq_job *j = th_claim_one(s, "raw");
  assert_int_equal(j->payload_len, sizeof payload);
  assert_memory_equal(j->payload, payload, sizeof payload);
  assert_rc(jobq_complete(s, j, result, sizeof result, NULL), JOBQ_OK);
  jobq_job_info *i = th_show(t->db, id);
  assert_int_equal(i->payload_len, sizeof payload);
  assert_memory_equal(i->payload, payload, sizeof payload);
  assert_int_equal(i->result_len, sizeof result);
  assert_memory_equal(i->result, result, sizeof result);
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);

  /* An error text that is not text (a job's stderr) is kept as text. */
  jobq_put_opts_init(&o);
  o.queue = "raw";
  o.max_attempts = 1;
  id = th_put_opts(t->db, &o);
  j = th_claim_one(s, "raw");
  jobq_ack a;
  jobq_ack_init(&a, j, JOBQ_ACK_FAIL);
  static const char err[] = {'b', 'a', 'd', 0, '\xff', 'x'};
  a.data = err;
  a.len = sizeof err;
  assert_rc(jobq_ack_many(s, &a, 1), JOBQ_OK);
  assert_int_equal(a.status, JOBQ_OK);
  i = th_show(t->db, id);
  assert_int_equal(i->state, JOBQ_STATE_DEAD);
  assert_string_equal(i->last_error, "bad??x");
  jobq_info_free(i, 1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* A handle of jobq_open_readonly() reads everything and writes nothing:
 * each call that would write is refused, and a missing SQLite file is
 * not made. */
static void test_a_read_only_handle_writes_nothing(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "ro", "x");
  jobq *ro = NULL;
  assert_rc(jobq_open_readonly(t->url, &ro), JOBQ_OK);
  jobq_job_info *info = NULL;
  assert_rc(jobq_show(ro, id, &info), JOBQ_OK);
  jobq_info_free(info, 1);
  assert_int_equal(th_count_jobs(ro, 0), 1);
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(ro, &st, &n), JOBQ_OK);
  jobq_stats_free(st, n);
  jobq_session_info *si = NULL;
  assert_rc(jobq_sessions(ro, &si, &n), JOBQ_OK);
  jobq_sessions_free(si, n);
  jobq_identity ident;
  assert_rc(jobq_identity_get(ro, &ident), JOBQ_OK);
  jobq_check *checks = NULL;
  assert_rc(jobq_doctor(ro, &checks, &n), JOBQ_OK);
  jobq_checks_free(checks, n);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  assert_rc(jobq_put(ro, &o, &id, NULL), JOBQ_EREADONLY);
  th_assert_msg(ro, "only reads");
  assert_rc(jobq_begin(ro), JOBQ_EREADONLY);
  assert_rc(jobq_init(ro), JOBQ_EREADONLY);
  assert_rc(jobq_pause(ro, "ro"), JOBQ_EREADONLY);
  jobq_session *s = NULL;
  assert_rc(jobq_session_open(ro, NULL, &s), JOBQ_EREADONLY);
  assert_null(s);
  jobq_close(ro);
  assert_int_equal(th_count_jobs(t->db, 0), 1);
  if (!th_is_sqlite()) return;
  char path[PATH_MAX + 16], url[PATH_MAX + 32];
  th_path(path, sizeof path, t->dir, "missing.db");
  snprintf(url, sizeof url, "sqlite:%s", path);
  assert_rc(jobq_open_readonly(url, &ro), JOBQ_ESCHEMA);
  th_assert_msg(ro, "no jobq database");
  jobq_close(ro);
  assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_opens),
      TQ_TEST(test_bad_puts),
      TQ_TEST(test_bad_sessions_and_claims),
      TQ_TEST(test_bad_acks),
      TQ_TEST(test_bad_admin),
      TQ_TEST(test_bytes_round_trip),
      TQ_TEST(test_a_read_only_handle_writes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
