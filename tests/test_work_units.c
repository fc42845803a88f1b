/*
 * test_work_units.c - the foreman's pure parts, without processes: the
 * worker protocol's job line and its strict reply parser (every malformed
 * reply refused with a reason), base64, the scrubbing of the environment
 * jobs get, the bounded buffers for a job's stdout and stderr, and how
 * the prefetch adapts.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "../foreman/fm.h"
#include "helpers.h"

/* ---------------------------------------------------------------- base64 */

static void test_base64_round_trip(void **state) {
  (void)state;
  unsigned char in[64], out[64];
  char text[100];
  for (size_t n = 0; n < sizeof in; n++) {
    for (size_t i = 0; i < n; i++) in[i] = (unsigned char)(i * 37 + n);
    base64_encode(in, n, text);
    size_t len = base64_len(n), got = 999;
    for (int padding = BASE64_PADDED; padding <= BASE64_PAD_OPTIONAL; padding++) {
      assert_int_equal(base64_decode(text, len, padding, out, &got), 0);
      assert_int_equal(got, n);
      assert_memory_equal(in, out, n);
    }
    /* Without its padding, only when padding is optional. */
    size_t bare = len;
    while (bare > 0 && text[bare - 1] == '=') bare--;
    assert_int_equal(base64_decode(text, bare, BASE64_PAD_OPTIONAL, out, &got), 0);
    assert_int_equal(got, n);
    assert_memory_equal(in, out, n);
    if (bare != len) assert_int_equal(base64_decode(text, bare, BASE64_PADDED, out, &got), -1);
  }
  base64_encode("a\0b\xff", 4, text);
  assert_memory_equal(text, "YQBi/w==", 8);
}

static void test_base64_refuses_bad_input(void **state) {
  (void)state;
  static const char *const bad[] = {"abc", "ab=c", "a===", "@@@@", "ab==cd==",
                                    "YQ=A", "YQB", "Y Q=", "a"};
  unsigned char out[16];
  size_t n;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(base64_decode(bad[i], strlen(bad[i]), BASE64_PADDED, out, &n), -1);
  /* Padding optional still wants the rest right. */
  static const char *const still_bad[] = {"ab=c", "a===", "@@@@", "ab==cd==", "YQ=A",
                                          "Y Q=", "a", "YQBi/", "YQ==YQ=="};
  for (size_t i = 0; i < sizeof still_bad / sizeof still_bad[0]; i++)
    assert_int_equal(base64_decode(still_bad[i], strlen(still_bad[i]), BASE64_PAD_OPTIONAL,
                                   out, &n),
                     -1);
}

/* ---------------------------------------------------------------- job lines */

static void test_job_line(void **state) {
  (void)state;
  jobq_job j;
  memset(&j, 0, sizeof j);
  j.id = 7;
  j.queue = "email";
  j.attempt = 2;
  j.max_attempts = 25;
  j.prev_lost = 1;
  j.key = "key";
  j.payload = "a\0b\xff";
  j.payload_len = 4;
  memcpy(j.claim, "0123456789abcdef0123456789abcdef", 33);
  size_t len;
  char *line = fm_proto_job(&j, &len);
  const char *want =
      "job 7 email 2 25 1 0123456789abcdef0123456789abcdef a2V5 YQBi/w==\n";
  assert_int_equal(len, strlen(want));
  assert_memory_equal(line, want, len);
  free(line);

  j.key = NULL;
  j.payload = "";
  j.payload_len = 0;
  j.prev_lost = 0;
  line = fm_proto_job(&j, &len);
  want = "job 7 email 2 25 0 0123456789abcdef0123456789abcdef - -\n";
  assert_int_equal(len, strlen(want));
  assert_memory_equal(line, want, len);
  free(line);
}

/* ---------------------------------------------------------------- replies */

static int parse(const char *line, size_t max, struct fm_reply *r, char *why) {
  return fm_proto_reply(line, strlen(line), max, r, why, 256);
}

static void test_good_replies(void **state) {
  (void)state;
  struct fm_reply r;
  char why[256];
  assert_int_equal(parse("done 7", 100, &r, why), 0);
  assert_int_equal(r.kind, FM_REPLY_DONE);
  assert_int_equal(r.id, 7);
  assert_null(r.data);
  assert_int_equal(parse("done 7 -", 100, &r, why), 0);
  assert_null(r.data);
  assert_int_equal(parse("done 12345 YQBi/w==", 100, &r, why), 0);
  assert_int_equal(r.id, 12345);
  assert_int_equal(r.len, 4);
  assert_memory_equal(r.data, "a\0b\xff", 4);
  free(r.data);
  assert_int_equal(parse("fail 7 ZXJy", 100, &r, why), 0);
  assert_int_equal(r.kind, FM_REPLY_FAIL);
  assert_string_equal(r.data, "err");
  free(r.data);
  assert_int_equal(parse("retry 7", 100, &r, why), 0);
  assert_int_equal(r.kind, FM_REPLY_RETRY);
  assert_int_equal(r.delay_ms, -1);
  assert_int_equal(parse("retry 7 250", 100, &r, why), 0);
  assert_int_equal(r.delay_ms, 250);
  assert_int_equal(parse("retry 7 0 -", 100, &r, why), 0);
  assert_int_equal(r.delay_ms, 0);
  assert_int_equal(parse("retry 7 - cmVhc29u", 100, &r, why), 0);
  assert_int_equal(r.delay_ms, -1);
  assert_string_equal(r.data, "reason");
  free(r.data);
  assert_true(fm_proto_ready("ready", 5));
  assert_false(fm_proto_ready("ready ", 6));
  assert_false(fm_proto_ready("READY", 5));
}

static void test_bad_replies(void **state) {
  (void)state;
  static const struct {
    const char *line, *why;
  } bad[] = {
      {"", "an empty line"},
      {"done", "the job id is missing"},
      {"done x", "ID is a job id"},
      {"done 07", "ID is a job id"},
      {"done -1", "ID is a job id"},
      {"done 0", "ID is a job id"},
      {"done 7  YQ==", "one space between fields"},
      {"done 7 ", "one space between fields"},
      {" done 7", "one space between fields"},
      {"done 7 YQ== more", "not more fields"},
      {"fail 7 a b", "not more fields"},
      {"retry 7 1 a b", "not more fields"},
      {"DONE 7", "expected 'done ID [RESULT]'"},
      {"ok 7", "expected 'done ID [RESULT]'"},
      {"hello world", "expected 'done ID [RESULT]'"},
      {"done 7 YQ=", "standard base64"},
      {"done 7 !!!!", "standard base64"},
      {"retry 7 -5", "DELAY_MS is zero or more"},
      {"retry 7 1.5", "DELAY_MS is zero or more"},
      {"done 7\r", "a control character"},
      {"done 7\t-", "a control character"},
      {"done 7 \xff", "a byte over 0x7e"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct fm_reply r;
    char why[256] = "";
    int rc = parse(bad[i].line, 100, &r, why);
    if (rc != -1 || strstr(why, bad[i].why) == NULL)
      fail_msg("'%s': %d, '%s' (expected -1 and '%s')", bad[i].line, rc, why,
               bad[i].why);
    assert_null(r.data);
  }
}

static void test_reply_over_the_limit(void **state) {
  (void)state;
  struct fm_reply r;
  char why[256];
  assert_int_equal(parse("done 7 YQBi/w==", 4, &r, why), 0);
  free(r.data);
  assert_int_equal(parse("done 7 YQBi/w==", 3, &r, why), -2);
  assert_non_null(strstr(why, "the result of 4 bytes is over the limit of 3 bytes"));
  assert_null(r.data);
  assert_true(fm_proto_max_line(3) >= strlen("done 7 YQBi/w=="));
}

/* ---------------------------------------------------------------- environment */

static void test_secrets_are_recognised(void **state) {
  (void)state;
  const char *url = "postgres://app:hunter2@db.example.com/jobs";
  assert_true(fm_env_is_secret("JOBQ_DB=sqlite:x.db", NULL, NULL));
  assert_true(fm_env_is_secret("JOBQ_ANYTHING=1", NULL, NULL));
  assert_true(fm_env_is_secret("PGPASSWORD=x", NULL, NULL));
  assert_true(fm_env_is_secret("DATABASE_URL=x", NULL, NULL));
  assert_true(fm_env_is_secret("MYSQL_PWD=x", NULL, NULL));
  assert_true(fm_env_is_secret("COPY=postgres://app:hunter2@db.example.com/jobs", url, NULL));
  assert_true(fm_env_is_secret("NOTE=the password is hunter2", url, NULL));
  assert_true(fm_env_is_secret("P=s3cret-pw", "postgres://h/db?sslmode=require&password=s3cret-pw", NULL));
  assert_false(fm_env_is_secret("HOME=/root", url, NULL));
  assert_false(fm_env_is_secret("PATH=/usr/bin:/bin", url, NULL));
  assert_false(fm_env_is_secret("JOB=x", url, NULL));
  /* Too short to look for. */
  assert_false(fm_env_is_secret("PATH=/usr/bin", "postgres://u:bin@h/db", NULL));
}

/* The password in every form it may take besides the URL's own. */
static void test_secrets_in_other_forms(void **state) {
  (void)state;
  const char *url = "postgres://jobq:p%40ss%2Fw%3Ard@db.internal/app";
  /* Decoded, as an application's own setting would hold it. */
  assert_true(fm_env_is_secret("APP_PW=p@ss/w:rd", url, NULL));
  /* Encoded another way: lower-case hex, or every byte. */
  assert_true(fm_env_is_secret("U=postgres://x:p%40ss%2fw%3ard@h/db", url, NULL));
  assert_true(fm_env_is_secret("U=%70%40%73%73%2F%77%3A%72%64", url, NULL));
  /* In a conninfo string, quoted with its escapes. */
  assert_true(fm_env_is_secret("PGCONN=host=h password='it\\'s-secret'",
                               "postgres://u:it%27s-secret@h/db", NULL));
  assert_true(fm_env_is_secret("P=it's-secret", "postgres://u:it%27s-secret@h/db", NULL));
  /* As a ?password= option, decoded. */
  assert_true(fm_env_is_secret("P=a b&c", "mysql://u@h/db?password=a%20b%26c", NULL));
  /* From PGPASSWORD or MYSQL_PWD, when the URL has none. */
  char *env[] = {"PGPASSWORD=from-the-env", "MYSQL_PWD=my%2Fsql-pw", NULL};
  assert_true(fm_env_is_secret("COPY=from-the-env", "postgres://u@h/db", env));
  assert_true(fm_env_is_secret("COPY=my/sql-pw", "mysql://u@h/db", env));
  assert_false(fm_env_is_secret("HOME=/home/jobq", "postgres://u@h/db", env));
  /* The user name is not a secret. */
  assert_false(fm_env_is_secret("USER=jobq", url, NULL));
  assert_false(fm_env_is_secret("P=100%", url, NULL));
}

static int has(char **vars, const char *var) {
  for (size_t i = 0; vars[i] != NULL; i++)
    if (strcmp(vars[i], var) == 0) return 1;
  return 0;
}

static int has_name(char **vars, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; vars[i] != NULL; i++)
    if (strncmp(vars[i], name, n) == 0 && vars[i][n] == '=') return 1;
  return 0;
}

static void test_job_environment(void **state) {
  (void)state;
  char *environ_[] = {"HOME=/home/me", "JOBQ_DB=sqlite:q.db", "PGPASSWORD=pw",
                      "LANG=C.UTF-8", NULL};
  struct fm_env e;
  fm_env_init(&e, environ_, "sqlite:q.db");
  assert_int_equal(e.n, 2);
  jobq_job j;
  memset(&j, 0, sizeof j);
  j.id = 42;
  j.queue = "email";
  j.attempt = 3;
  j.max_attempts = 5;
  memcpy(j.claim, "0123456789abcdef0123456789abcdef", 33);
  struct fm_envp p;
  fm_env_job(&e, &j, &p);
  assert_true(has(p.vars, "HOME=/home/me"));
  assert_true(has(p.vars, "LANG=C.UTF-8"));
  assert_true(has(p.vars, "JOBQ_JOB_ID=42"));
  assert_true(has(p.vars, "JOBQ_QUEUE=email"));
  assert_true(has(p.vars, "JOBQ_ATTEMPT=3"));
  assert_true(has(p.vars, "JOBQ_MAX_ATTEMPTS=5"));
  assert_true(has(p.vars, "JOBQ_CLAIM=0123456789abcdef0123456789abcdef"));
  assert_false(has_name(p.vars, "JOBQ_KEY"));
  assert_false(has_name(p.vars, "JOBQ_PREV_LOST"));
  assert_false(has_name(p.vars, "JOBQ_DB"));
  assert_false(has_name(p.vars, "PGPASSWORD"));
  fm_envp_release(&p);
  j.key = "acct 7";
  j.prev_lost = 1;
  fm_env_job(&e, &j, &p);
  assert_true(has(p.vars, "JOBQ_KEY=acct 7"));
  assert_true(has(p.vars, "JOBQ_PREV_LOST=1"));
  fm_envp_release(&p);
  fm_env_worker(&e, 3, &p);
  assert_true(has(p.vars, "JOBQ_WORKER=3"));
  assert_true(has(p.vars, "JOBQ_PROTOCOL=1"));
  assert_false(has_name(p.vars, "JOBQ_JOB_ID"));
  fm_envp_release(&p);
  fm_env_release(&e);
}

/* ---------------------------------------------------------------- buffers */

static void test_capture_is_bounded(void **state) {
  (void)state;
  struct fm_capture c;
  fm_capture_init(&c, 10);
  fm_capture_add(&c, "hello", 5);
  assert_false(c.over);
  fm_capture_add(&c, " world!", 7);
  assert_true(c.over);
  size_t len;
  char *d = fm_capture_take(&c, &len);
  assert_int_equal(len, 10);
  assert_memory_equal(d, "hello worl", 10);
  free(d);
  fm_capture_release(&c);
  fm_capture_init(&c, 0);
  fm_capture_add(&c, "x", 1);
  assert_true(c.over);
  assert_int_equal(c.len, 0);
  fm_capture_release(&c);
}

static void test_tail_keeps_the_end(void **state) {
  (void)state;
  struct fm_tail *t = calloc(1, sizeof *t);
  size_t len;
  char *text = fm_error_text("exit status 3", t, &len);
  assert_string_equal(text, "exit status 3");
  free(text);
  fm_tail_add(t, "\nsomething broke\n\n", 18);
  text = fm_error_text("exit status 3", t, &len);
  assert_string_equal(text, "exit status 3: something broke");
  assert_int_equal(len, strlen(text));
  free(text);
  /* Over the bound, in pieces that wrap the ring: the last bytes stay. */
  fm_tail_clear(t);
  char chunk[1000];
  for (int i = 0; i < 10; i++) {
    memset(chunk, 'a' + i, sizeof chunk);
    fm_tail_add(t, chunk, sizeof chunk);
  }
  fm_tail_add(t, "END", 3);
  text = fm_error_text("x", t, &len);
  assert_int_equal(len, strlen("x: ...") + FM_TAIL_MAX);
  assert_memory_equal(text, "x: ...", 6);
  assert_string_equal(text + len - 3, "END");
  assert_int_equal(text[len - 4], 'j');
  free(text);
  /* One piece larger than the ring. */
  char big[FM_TAIL_MAX + 100];
  memset(big, 'z', sizeof big);
  big[sizeof big - 1] = 'Q';
  fm_tail_add(t, big, sizeof big);
  text = fm_error_text("x", t, &len);
  assert_int_equal(text[len - 1], 'Q');
  assert_int_equal(text[6], 'z');
  free(text);
  free(t);
}

/* ---------------------------------------------------------------- prefetch */

static void test_prefetch_adapts(void **state) {
  (void)state;
  /* A starved foreman doubles (plus one), a short claim halves. */
  assert_int_equal(fm_prefetch_next(10, 0, 1, 4, 5.0, 1, 1000), 21);
  assert_int_equal(fm_prefetch_next(10, 1, 1, 4, 5.0, 1, 1000), 5);
  assert_int_equal(fm_prefetch_next(10, 0, 0, 4, 5.0, 1, 1000), 10);
  assert_int_equal(fm_prefetch_next(1, 1, 0, 4, 5.0, 1, 1000), 1);
  /* At most 50 ms of work held back: 4 slots of 10 ms jobs get through
   * 20 jobs in that time. */
  assert_int_equal(fm_prefetch_next(15, 0, 1, 4, 10.0, 1, 1000), 20);
  /* Jobs of a tenth of a millisecond: 4 slots get through 2000 in 50 ms,
   * so the prefetch grows to its maximum (a clock that counted whole
   * milliseconds held it at 200). */
  int p = 1;
  for (int i = 0; i < 20; i++) p = fm_prefetch_next(p, 0, 1, 4, 0.1, 1, 1000);
  assert_int_equal(p, 1000);
  /* An average of almost nothing counts as 10 microseconds. */
  assert_int_equal(fm_prefetch_next(5000, 0, 0, 1, 0.0, 1, 100000), 5000);
  assert_int_equal(fm_prefetch_next(9000, 0, 0, 1, 0.0, 1, 100000), 5000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base64_round_trip),
      cmocka_unit_test(test_base64_refuses_bad_input),
      cmocka_unit_test(test_job_line),
      cmocka_unit_test(test_good_replies),
      cmocka_unit_test(test_bad_replies),
      cmocka_unit_test(test_reply_over_the_limit),
      cmocka_unit_test(test_secrets_are_recognised),
      cmocka_unit_test(test_secrets_in_other_forms),
      cmocka_unit_test(test_job_environment),
      cmocka_unit_test(test_capture_is_bounded),
      cmocka_unit_test(test_tail_keeps_the_end),
      cmocka_unit_test(test_prefetch_adapts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
