/*
 * test_parse.c - the text helpers and the edges of jobq_open(): durations
 * and sizes, URL redaction, every way opening a database can be refused
 * (unknown scheme, bad options, a directory, a missing folder, a file that
 * is not a database) with messages that never show a password, the error
 * vocabulary (jobq_strerror, jobq_err_name), state names, and the words
 * every statement is named by in messages.
 */
#include "helpers.h"
#include "sql.h"
#include "store/store.h"

#include <ctype.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_durations(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int64_t ms;
  } good[] = {{"250ms", 250},       {"30s", 30000},        {"5m", 300000},
              {"1h", 3600000},      {"2d", 172800000},     {"1m30s", 90000},
              {"0s", 0},            {"1h2m3s4ms", 3723004}, {"100ms", 100},
              {"90m", 5400000},     {"0", 0}};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    int64_t ms = -1;
    int rc = jobq_parse_duration(good[k].text, &ms);
    if (rc != JOBQ_OK) fail_msg("'%s' refused", good[k].text);
    if (ms != good[k].ms)
      fail_msg("'%s' gave %lld, expected %lld", good[k].text, (long long)ms,
               (long long)good[k].ms);
  }
  static const char *const bad[] = {
      "",   "10", "-5s",   "10x",   "99999999999999999999h", "9223372036854775807d",
      "s",  "ms", "1m30",  "5sec",  "0x10s",                 "1h-5m",
      "-0s", "00", "0 ", "01s0"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    int64_t ms = 4242;
    int rc = jobq_parse_duration(bad[k], &ms);
    if (rc != JOBQ_EINVAL)
      fail_msg("'%s' gave %s (%lld), expected JOBQ_EINVAL", bad[k],
               jobq_err_name(rc), (long long)ms);
    assert_int_equal(ms, 4242);
  }
  int64_t ms;
  assert_rc(jobq_parse_duration(NULL, &ms), JOBQ_EINVAL);
}

static void test_rates(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int64_t count, ms;
  } good[] = {{"100/1s", 100, 1000},  {"10/m", 10, 60000},         {"1/250ms", 1, 250},
              {"5/1m30s", 5, 90000},  {"1000000000/1d", 1000000000, 86400000},
              {"7/s", 7, 1000},       {"3/1ms", 3, 1}};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    int64_t n = -1, ms = -1;
    if (jobq_parse_rate(good[k].text, &n, &ms) != JOBQ_OK) fail_msg("'%s' refused", good[k].text);
    if (n != good[k].count || ms != good[k].ms)
      fail_msg("'%s' gave %lld/%lldms", good[k].text, (long long)n, (long long)ms);
  }
  static const char *const bad[] = {"",      "5",     "/1s",   "5/",      "x/1s",
                                    "0/1s",  "-1/1s", "5/2x",  "5/2d",    "5/0s",
                                    "5/0",   " 5/1s", "5 /1s", "+5/1s",   "1000000001/1s",
                                    "99999999999999999999/1s", "5/1s/2"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    int64_t n = 4242, ms = 4242;
    int rc = jobq_parse_rate(bad[k], &n, &ms);
    if (rc != JOBQ_EINVAL) fail_msg("'%s' gave %s, expected JOBQ_EINVAL", bad[k], jobq_err_name(rc));
    assert_int_equal(n, 4242);
    assert_int_equal(ms, 4242);
  }
  int64_t n, ms;
  assert_rc(jobq_parse_rate(NULL, &n, &ms), JOBQ_EINVAL);
}

static void test_sizes(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int64_t bytes;
  } good[] = {{"1048576", 1048576}, {"512KiB", 524288}, {"1MiB", 1048576},
              {"0", 0},             {"1GiB", 1073741824}};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    int64_t b = -1;
    int rc = jobq_parse_size(good[k].text, &b);
    if (rc != JOBQ_OK) fail_msg("'%s' refused", good[k].text);
    if (b != good[k].bytes)
      fail_msg("'%s' gave %lld, expected %lld", good[k].text, (long long)b,
               (long long)good[k].bytes);
  }
  /* "2MB": decimal megabytes, or binary ones by an older convention. */
  int64_t b = -1;
  assert_rc(jobq_parse_size("2MB", &b), JOBQ_OK);
  assert_true(b == 2000000 || b == 2097152);

  static const char *const bad[] = {"",    "-1",  "1XB",
                                    "abc", "MiB", "99999999999999999999",
                                    "9999999999999GiB"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    b = 4242;
    int rc = jobq_parse_size(bad[k], &b);
    if (rc != JOBQ_EINVAL)
      fail_msg("'%s' gave %s (%lld), expected JOBQ_EINVAL", bad[k],
               jobq_err_name(rc), (long long)b);
    assert_int_equal(b, 4242);
  }
}

static void expect_redacted(const char *url, const char *secret,
                            const char *keep1, const char *keep2) {
  char *r = jobq_url_redact(url);
  assert_non_null(r);
  if (strstr(r, secret) != NULL) fail_msg("'%s' redacted to '%s'", url, r);
  if (strstr(r, "***") == NULL) fail_msg("'%s' redacted to '%s'", url, r);
  if (keep1 != NULL && strstr(r, keep1) == NULL) fail_msg("'%s' lost '%s': '%s'", url, keep1, r);
  if (keep2 != NULL && strstr(r, keep2) == NULL) fail_msg("'%s' lost '%s': '%s'", url, keep2, r);
  free(r);
}

static void expect_unchanged(const char *url) {
  char *r = jobq_url_redact(url);
  assert_non_null(r);
  assert_string_equal(r, url);
  free(r);
}

static void test_url_redact(void **state) {
  (void)state;
  expect_redacted("postgres://u:secret@h/db", "secret", "postgres://u:", "@h/db");
  expect_redacted("mysql://root:hunter2@db.local:3306/jobs?x=1", "hunter2",
                  "root", "db.local:3306/jobs?x=1");
  expect_redacted("postgres://u:s%40cret@h1:5432,h2:5433/db", "s%40cret",
                  "h1:5432,h2:5433/db", NULL);
  /* An '@' left raw in the password: the last '@' ends the user info. */
  expect_redacted("postgres://u:p@ss@h/db", "p@ss", "@h/db", NULL);
  /* A '#' in the password (found by fuzzing): the parser reads it as part
   * of the password, and so must the redaction. */
  expect_redacted("postgres://u:se#r-et@db/q", "se#r-et", "@db/q", NULL);
  expect_redacted("postgres://h/db?sslmode=require&password=secret", "secret",
                  "sslmode=require", NULL);
  /* Whatever the parse: a password with a raw '/', '?' or '&' leaves
   * nothing behind, in the user part or in an option (its key decoded). */
  expect_redacted("postgres://app:Xk9/Tq+2vR==@db.internal:5432/app", "Tq+2vR",
                  "postgres://app:", "@db.internal:5432/app");
  expect_redacted("postgres://app:Xk9/Tq+2vR==@db.internal:5432/app", "Xk9", NULL, NULL);
  expect_redacted("mysql://app:a?b/c@h:3306/db", "b/c", "@h:3306/db", NULL);
  expect_redacted("postgres://h/db?password=ab&cd=ef&schema=s", "cd=ef", "h/db?", NULL);
  expect_redacted("postgres://h/db?%70assword=secret", "secret", "h/db?", NULL);
  expect_redacted("postgres://h/db?sslpassword=secret", "secret", "h/db?", NULL);
  expect_redacted("sqlite:q.db?password=secret", "secret", "sqlite:q.db?", NULL);
  /* PostgreSQL's keyword/value form, quoted or not. */
  expect_redacted("host=/run/postgresql password=secret dbname=db", "secret",
                  "host=/run/postgresql", NULL);
  expect_redacted("host=h password = 'se cret' dbname=db", "cret", "host=h", NULL);
  expect_redacted("password='sec\\'ret'", "ret", NULL, NULL);
  expect_unchanged("host=/run/postgresql dbname=db");
  expect_unchanged("sqlite:/data/a:b@c/q.db");
  expect_unchanged("postgres://u@h/db");
  expect_unchanged("postgres://h:5432/db");
  expect_unchanged("sqlite:/tmp/x.db");
  expect_unchanged("sqlite:jobq.db?busy_timeout=5s");
  expect_unchanged("");
}

/* Opens url, which must fail with err (0: any error); returns the message
 * (a copy; caller frees) and asserts it is not empty and contains no
 * "secret". */
static char *open_fails(const char *url, int err) {
  jobq *db = NULL;
  int rc = jobq_open(url, &db);
  assert_non_null(db);
  if (rc == JOBQ_OK) fail_msg("'%s' opened", url);
  if (err != 0 && rc != err)
    fail_msg("'%s': %s (%s), expected %s", url, jobq_err_name(rc),
             jobq_errmsg(db), jobq_err_name(err));
  const char *msg = jobq_errmsg(db);
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);
  if (strstr(msg, "secret") != NULL) fail_msg("password shown: %s", msg);
  char *copy = strdup(msg);
  /* A failed handle refuses work politely. */
  int64_t id;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  assert_true(jobq_put(db, &o, &id, NULL) < 0);
  jobq_close(db);
  return copy;
}

static void test_open_errors(void **state) {
  tq *t = *state;
  char *msg = open_fails("foo:bar", JOBQ_EURL);
  assert_non_null(strstr(msg, "foo"));
  free(msg);
  msg = open_fails("foo://u:secret@h/db", JOBQ_EURL);
  free(msg);
  msg = open_fails("", 0);
  free(msg);

  /* Network stores that are absent or unreachable: never the password. */
  msg = open_fails("postgres://u:secret@127.0.0.1:1/db", 0);
  free(msg);
  msg = open_fails("mysql://u:secret@127.0.0.1:1/db", 0);
  free(msg);
  msg = open_fails("postgres://127.0.0.1:1/db?password=secret", 0);
  free(msg);
  /* A password with a raw '/': refused before anything of it is named,
   * with the way to write it. */
  msg = open_fails("postgres://u:se/cret@h/db", JOBQ_EURL);
  assert_non_null(strstr(msg, "%2F"));
  assert_null(strstr(msg, "cret"));
  free(msg);
  msg = open_fails("mysql://u:se?cret&schema=x@h/db", JOBQ_EURL);
  assert_null(strstr(msg, "cret"));
  free(msg);
  /* Each option once. */
  msg = open_fails("postgres://u:secret@127.0.0.1:1/db?schema=a&schema=b", JOBQ_EURL);
  assert_non_null(strstr(msg, "'schema' is given twice"));
  free(msg);

  char url[PATH_MAX + 64];
  /* Options: unknown or malformed ones are refused. */
  snprintf(url, sizeof url, "sqlite:%s/o.db?bogus=1", t->dir);
  msg = open_fails(url, JOBQ_EURL);
  assert_non_null(strstr(msg, "bogus"));
  free(msg);
  snprintf(url, sizeof url, "sqlite:%s/o.db?busy_timeout=soon", t->dir);
  msg = open_fails(url, JOBQ_EURL);
  assert_non_null(strstr(msg, "soon"));
  free(msg);
  snprintf(url, sizeof url, "sqlite:%s/o.db?max_payload=lots", t->dir);
  msg = open_fails(url, JOBQ_EURL);
  free(msg);

  /* A directory. */
  snprintf(url, sizeof url, "sqlite:%s", t->dir);
  msg = open_fails(url, 0);
  assert_non_null(strstr(msg, t->dir));
  free(msg);

  /* A folder that does not exist: refused, and not created. */
  char missing[PATH_MAX];
  th_path(missing, sizeof missing, t->dir, "nope");
  snprintf(url, sizeof url, "sqlite:%s/q.db", missing);
  msg = open_fails(url, 0);
  assert_non_null(strstr(msg, "nope"));
  free(msg);
  struct stat sb;
  assert_int_equal(stat(missing, &sb), -1);

  /* A file that is not a database: refused, and left as it was. */
  char junk[PATH_MAX];
  th_path(junk, sizeof junk, t->dir, "junk.db");
  unsigned char garbage[4096];
  for (size_t k = 0; k < sizeof garbage; k++)
    garbage[k] = (unsigned char)(k * 7 + 13);
  th_write_file(junk, garbage, sizeof garbage);
  snprintf(url, sizeof url, "sqlite:%s", junk);
  msg = open_fails(url, 0);
  assert_non_null(strstr(msg, "junk.db"));
  free(msg);
  unsigned char back[8192];
  assert_int_equal(th_read_file(junk, back, sizeof back), sizeof garbage);
  assert_memory_equal(back, garbage, sizeof garbage);

  /* A good path opens, in both spellings, with no message left. */
  snprintf(url, sizeof url, "sqlite:%s/good.db", t->dir);
  jobq *db = th_open(url);
  assert_string_equal(jobq_errmsg(db), "");
  jobq_close(db);
  snprintf(url, sizeof url, "sqlite://%s/good.db", t->dir);
  db = th_open(url);
  jobq_close(db);
}

/* A store's table of URL options, as the library checks and reads it:
 * one message for each way an option is bad, naming the option and what
 * was expected; numbers as their kind reads them, the default for an
 * option not given or not a number; a host list split with its ports. */
static void test_url_options(void **state) {
  (void)state;
  const jobq_option *pg = jobq__store_postgres.options;
  const jobq_option *my = jobq__store_mysql.options;
  jobq_url u;
  assert_int_equal(jobq__url_parse(NULL,
                                   "postgres://u@a:1,[::1]:2,b/db?sslmode=require&"
                                   "connect_timeout=1500ms&notify=off&statement_timeout=2s",
                                   &u),
                   JOBQ_OK);
  assert_int_equal(jobq__url_check(NULL, &u, pg), JOBQ_OK);
  assert_int_equal(jobq__url_number(&u, pg, "connect_timeout", 10), 2);
  assert_int_equal(jobq__url_number(&u, pg, "statement_timeout", 30000), 2000);
  assert_int_equal(jobq__url_number(&u, pg, "keepalives", 7), 7);
  /* Words and text are no numbers. */
  assert_int_equal(jobq__url_number(&u, pg, "sslmode", -1), -1);
  assert_int_equal(jobq__url_number(&u, pg, "notify", -1), -1);
  jobq_host *hosts;
  size_t n;
  assert_int_equal(jobq__url_hosts(NULL, &u, 5432, &hosts, &n), JOBQ_OK);
  assert_int_equal(n, 3);
  assert_string_equal(hosts[0].name, "a");
  assert_int_equal(hosts[0].port, 1);
  assert_string_equal(hosts[1].name, "::1");
  assert_int_equal(hosts[1].port, 2);
  assert_string_equal(hosts[2].name, "b");
  assert_int_equal(hosts[2].port, 5432);
  jobq__url_hosts_free(hosts, n);
  jobq__url_release(&u);

  const struct {
    const char *url, *want;
  } bad[] = {
      {"postgres://h/db?notify=maybe", "invalid notify 'maybe' in the database url: expected on or off"},
      {"postgres://h/db?connect_timeout=soon",
       "invalid connect_timeout 'soon' in the database url: expected seconds from 0 to 86400"},
      {"postgres://h/db?keepalives=2",
       "invalid keepalives '2' in the database url: expected an integer from 0 to 1"},
      {"postgres://h/db?schema=Jobs", "invalid schema 'Jobs' in the database url: expected 1 to 63"},
      {"postgres://h/db?replication=database",
       "option 'replication' in the database url: jobq needs an ordinary connection"},
      {"postgres://h/db?sslmode=requir",
       "invalid sslmode 'requir' in the database url: expected disable, allow"},
      {"postgres://h/db?target_session_attrs=standby", "expected read-write, primary or any"},
      {"mysql://h/db?bogus=1",
       "unknown option 'bogus' in the database url: expected connect_timeout, "
       "lock_wait_timeout, statement_timeout, sslmode, sslca, sslcert, sslkey, socket or "
       "max_payload"},
      {"mysql://h/db?statement_timeout=0s",
       "invalid statement_timeout '0s' in the database url: expected a duration from 1ms to 1d"},
      {"mysql://h/db?sslmode=prefer", "expected disable, require, verify-ca or verify-full"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *msg = open_fails(bad[i].url, JOBQ_EURL);
    if (strstr(msg, bad[i].want) == NULL)
      fail_msg("'%s': '%s', expected '%s'", bad[i].url, msg, bad[i].want);
    free(msg);
  }
  /* Words are whole words of the list. */
  assert_int_equal(jobq__url_parse(NULL, "mysql://h/db?sslmode=verify", &u), JOBQ_OK);
  assert_int_equal(jobq__url_check(NULL, &u, my), JOBQ_EURL);
  jobq__url_release(&u);
}

static void test_open_options(void **state) {
  tq *t = *state;
  char url[sizeof t->url + 64];
  snprintf(url, sizeof url, "%s?max_payload=1KiB&busy_timeout=2s", t->url);
  jobq *db = th_open(url);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  char buf[1025];
  memset(buf, 'x', sizeof buf);
  o.payload = buf;
  o.payload_len = 1025;
  int64_t id;
  assert_rc(jobq_put(db, &o, &id, NULL), JOBQ_ETOOBIG);
  o.payload_len = 1024;
  assert_rc(jobq_put(db, &o, &id, NULL), JOBQ_OK);
  jobq_close(db);
}

static void test_error_vocabulary(void **state) {
  (void)state;
#define CHECK_ERR(name, value, msg)                                  \
  assert_int_equal(JOBQ_##name, value);                              \
  assert_string_equal(jobq_strerror(value), msg);                    \
  assert_string_equal(jobq_err_name(value), "JOBQ_" #name);
  JOBQ_ERRNO_MAP(CHECK_ERR)
#undef CHECK_ERR
  /* Which errors may pass by themselves. */
  assert_true(jobq_err_temporary(JOBQ_EBUSY));
  assert_true(jobq_err_temporary(JOBQ_ECONN));
  assert_false(jobq_err_temporary(JOBQ_OK));
  assert_false(jobq_err_temporary(JOBQ_EDENIED));
  assert_false(jobq_err_temporary(JOBQ_EURL));
  assert_false(jobq_err_temporary(JOBQ_EDB));
  assert_false(jobq_err_temporary(-999));
  /* Unknown codes still give strings. */
  assert_non_null(jobq_strerror(-999));
  assert_non_null(jobq_err_name(-999));
  assert_non_null(jobq_strerror(7));
  assert_non_null(jobq_err_name(7));
  assert_string_equal(jobq_errmsg(NULL), "out of memory");
  jobq_close(NULL);
}

/* What a binding asks of the library it loaded: its version, and the
 * free() for what the library returned to be freed with free(). */
static void test_version_and_free(void **state) {
  (void)state;
  assert_string_equal(jobq_version(), JOBQ_VERSION);
  char *red = jobq_url_redact("postgres://u:secret@h/db");
  assert_non_null(red);
  assert_null(strstr(red, "secret"));
  jobq_free(red);
  jobq_free(NULL);
}

static void test_state_names(void **state) {
  (void)state;
  static const struct {
    int st;
    const char *name;
  } names[] = {{JOBQ_STATE_READY, "ready"},     {JOBQ_STATE_RUNNING, "running"},
               {JOBQ_STATE_WAITING, "waiting"}, {JOBQ_STATE_DONE, "done"},
               {JOBQ_STATE_DEAD, "dead"},       {JOBQ_STATE_CANCELLED, "cancelled"}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    assert_string_equal(jobq_state_name(names[k].st), names[k].name);
    assert_int_equal(jobq_state_parse(names[k].name), names[k].st);
  }
  assert_int_equal(jobq_state_parse("scheduled"), JOBQ_STATE_READY);
  assert_int_equal(jobq_state_parse("bogus"), 0);
  assert_int_equal(jobq_state_parse(""), 0);
  assert_null(jobq_state_name(0));
  assert_null(jobq_state_name(99));
}

/* Messages say what a statement was doing in words, never its name. */
static void test_statements_in_words(void **state) {
  (void)state;
  for (int id = 0; id < JOBQ_Q__COUNT; id++) {
    const char *what = jobq__sql_what(id);
    if (strcmp(what, "running a statement") == 0)
      fail_msg("statement %d has no words for messages", id);
    for (const char *p = what; *p; p++)
      if (isupper((unsigned char)*p) || *p == '_')
        fail_msg("statement %d: '%s' is not plain words", id, what);
  }
}

/* A store is an engine: every member of its table is there, and the
 * library branches on none. */
static void test_stores_are_whole(void **state) {
  (void)state;
  const jobq_store *stores[] = {&jobq__store_sqlite, &jobq__store_postgres, &jobq__store_mysql};
  for (size_t i = 0; i < sizeof stores / sizeof stores[0]; i++) {
    const jobq_store *s = stores[i];
    const void *members[] = {
        (const void *)s->open,    (const void *)s->close,   (const void *)s->native,
        (const void *)s->schema,  (const void *)s->schema_begin, (const void *)s->schema_end,
        (const void *)s->schema_run, (const void *)s->roles, (const void *)s->doctor,
        (const void *)s->begin,   (const void *)s->commit,  (const void *)s->rollback,
        (const void *)s->query,   (const void *)s->next,    (const void *)s->done,
        (const void *)s->is_null, (const void *)s->col_int, (const void *)s->col_bytes,
        (const void *)s->changes, (const void *)s->insert_id, (const void *)s->lock,
        (const void *)s->wake,    (const void *)s->watch,   (const void *)s->changed};
    assert_non_null(s->scheme);
    assert_non_null(s->options);
    for (size_t m = 0; m < sizeof members / sizeof members[0]; m++)
      if (members[m] == NULL) fail_msg("the %s store lacks member %zu", s->scheme, m);
  }
}

/* Every statement, and every variant of a set statement, spells for
 * every dialect that has it: no token of the notation is left, and a
 * variant's rows are spelled out. */
static void test_statements_spell(void **state) {
  (void)state;
  const int dialects[] = {JOBQ_DIALECT_SQLITE, JOBQ_DIALECT_PG, JOBQ_DIALECT_MYSQL};
  for (size_t d = 0; d < 3; d++) {
    for (int stmt = 0; stmt < JOBQ_STMT_COUNT; stmt++) {
      if (jobq__sql_none(dialects[d], stmt % JOBQ_Q__COUNT)) continue;
      int *order = NULL;
      size_t norder = 0;
      char *text = jobq__sql_text(dialects[d], stmt, &order, &norder);
      if (text == NULL) fail_msg("statement %d of dialect %d does not spell", stmt, (int)d);
      if (strstr(text, "{each") != NULL || strstr(text, "{now}") != NULL)
        fail_msg("statement %d of dialect %d keeps a token: %s", stmt, (int)d, text);
      if (dialects[d] == JOBQ_DIALECT_MYSQL && stmt >= JOBQ_Q__COUNT &&
          strchr(text, '?') != NULL && norder == 0)
        fail_msg("statement %d: no parameters found in %s", stmt, text);
      free(order);
      free(text);
    }
  }
  /* SQLite and PostgreSQL take a set statement's columns whole: no
   * statement spells rows out, so that a variant is the statement as
   * written. */
  for (size_t d = 0; d < 2; d++) {
    for (int id = 0; id < JOBQ_Q__COUNT; id++) {
      if (jobq__sql_none(dialects[d], id)) continue;
      char *whole = jobq__sql_text(dialects[d], id, NULL, NULL);
      char *chunk = jobq__sql_text(dialects[d], jobq__stmt(id, 1), NULL, NULL);
      assert_non_null(whole);
      assert_non_null(chunk);
      if (strcmp(whole, chunk) != 0)
        fail_msg("statement %d of dialect %d spells its rows out: %s", id, (int)d, chunk);
      free(whole);
      free(chunk);
    }
  }
  /* A chunk of a set statement names each of its rows' values. */
  int *order = NULL;
  size_t norder = 0;
  char *t = jobq__sql_text(JOBQ_DIALECT_MYSQL, jobq__stmt(JOBQ_Q_AFTER_MARK, 1), &order,
                           &norder);
  assert_non_null(t);
  assert_non_null(strstr(t, "IN (?, ?, "));
  assert_int_equal(norder, 64);
  assert_int_equal(order[0], 1);
  assert_int_equal(order[63], 64);
  free(order);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stores_are_whole),
      cmocka_unit_test(test_statements_spell),
      cmocka_unit_test(test_durations),
      cmocka_unit_test(test_rates),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_url_redact),
      TQ_TEST(test_open_errors),
      TQ_TEST(test_open_options),
      cmocka_unit_test(test_url_options),
      cmocka_unit_test(test_error_vocabulary),
      cmocka_unit_test(test_version_and_free),
      cmocka_unit_test(test_state_names),
      cmocka_unit_test(test_statements_in_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
