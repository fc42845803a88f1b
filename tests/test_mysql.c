/*
 * test_mysql.c - what only the MariaDB/MySQL store does, against the
 * MariaDB server that tests/run.sh started: servers refused by version,
 * the claim's plan (the claim index, no filesort), a deadlock and a lock
 * wait timeout provoked and run again, a caller's transaction that a lock
 * wait timeout ended, a key's lock row made by two transactions at once,
 * batches that lock no row but their own, the job sequence read fresh by other connections,
 * and the durability warning.  tests/run.sh runs it on MariaDB only.
 */
#include "helpers.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "sql.h"
#include "store/store.h"

/* ---------------------------------------------------------------- helpers */

/* The handle's own connection. */
static MYSQL *native(jobq *db) {
  MYSQL *m = jobq_native(db);
  assert_non_null(m);
  return m;
}

/* Runs sql on m and asserts it worked. */
static void sql_ok(MYSQL *m, const char *sql) {
  if (mysql_query(m, sql) != 0) fail_msg("%s: %s", sql, mysql_error(m));
  MYSQL_RES *res = mysql_store_result(m);
  if (res != NULL) mysql_free_result(res);
}

/* The first column of the first row of sql on m. */
static int64_t sql_int(MYSQL *m, const char *sql) {
  if (mysql_query(m, sql) != 0) fail_msg("%s: %s", sql, mysql_error(m));
  MYSQL_RES *res = mysql_store_result(m);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (row == NULL || row[0] == NULL) fail_msg("%s: no row", sql);
  int64_t v = strtoll(row[0], NULL, 10);
  mysql_free_result(res);
  return v;
}

/* The value of a global status counter. */
static int64_t status_of(MYSQL *m, const char *name) {
  char sql[160];
  snprintf(sql, sizeof sql,
           "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
           "VARIABLE_NAME = '%s'",
           name);
  return sql_int(m, sql);
}

/* Waits up to 10 s until some transaction waits for a lock.  The server
 * refreshes what INNODB_TRX shows only when nobody read it for 100 ms. */
static void until_lock_wait(MYSQL *m) {
  int64_t start = th_mono_ms();
  do {
    th_sleep_ms(150);
    if (th_mono_ms() - start > 10000) fail_msg("no transaction waited for a lock");
  } while (sql_int(m, "SELECT count(*) FROM information_schema.INNODB_TRX WHERE "
                      "trx_state = 'LOCK WAIT'") == 0);
}

/* t's URL with an option added, into out. */
static void url_with(const tq *t, const char *opt, char *out, size_t size) {
  int len = snprintf(out, size, "%s%s%s", t->url, strchr(t->url, '?') ? "&" : "?", opt);
  assert_true(len > 0 && (size_t)len < size);
}

/* A forked producer: puts one job on queue "dq" with key "k" through its
 * own handle on url, and exits 0 when the put worked (its message on
 * stderr otherwise). */
static const char *child_url;
static int put_keyed(void *arg) {
  (void)arg;
  jobq *db = NULL;
  int rc = jobq_open(child_url, &db);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "dq";
  o.key = "k";
  int64_t id = 0;
  if (rc == JOBQ_OK) rc = jobq_put(db, &o, &id, NULL);
  if (rc != JOBQ_OK) fprintf(stderr, "child put: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 1;
}

/* A forked worker: claims 3 jobs of queue "sq" in one batch and
 * acknowledges them in one, each with kind (a failure: to run again in an
 * hour); exits 0 when both worked. */
static int claim_and_ack(jobq_ack_kind kind) {
  jobq *db = NULL;
  jobq_session *s = NULL;
  int rc = jobq_open(child_url, &db);
  if (rc == JOBQ_OK) rc = jobq_session_open(db, NULL, &s);
  const char *queue = "sq";
  jobq_job *jobs = NULL;
  size_t n = 0;
  if (rc == JOBQ_OK) rc = jobq_claim(s, &queue, 1, 3, &jobs, &n);
  jobq_ack acks[3];
  for (size_t i = 0; i < n; i++) {
    jobq_ack_init(&acks[i], &jobs[i], kind);
    acks[i].retry_in_ms = 3600000;
  }
  if (rc == JOBQ_OK && n != 3) rc = JOBQ_EDB;
  if (rc == JOBQ_OK) rc = jobq_ack_many(s, acks, n);
  if (rc != JOBQ_OK) fprintf(stderr, "child: %s: %s (%zu jobs)\n", jobq_err_name(rc), jobq_errmsg(db), n);
  jobq_jobs_free(jobs, n);
  jobq_session_close(s);
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 1;
}

static int claim_and_complete(void *arg) {
  (void)arg;
  return claim_and_ack(JOBQ_ACK_COMPLETE);
}

static int claim_and_fail(void *arg) {
  (void)arg;
  return claim_and_ack(JOBQ_ACK_FAIL);
}

/* Runs child in a forked process while another transaction holds row id
 * of table, a row the child has no business with: the child must exit 0
 * within 10 s, before that transaction ends (who names it in the
 * failure).  The table is analyzed first, as a small table is planned. */
static void exits_while_held(tq *t, const char *table, int64_t id, int (*child)(void *),
                             const char *who) {
  jobq *a = th_open(t->url);
  MYSQL *am = native(a);
  char sql[128];
  snprintf(sql, sizeof sql, "ANALYZE TABLE %s", table);
  sql_ok(am, sql);
  sql_ok(am, "START TRANSACTION");
  snprintf(sql, sizeof sql, "SELECT id FROM %s WHERE id = %lld FOR UPDATE", table,
           (long long)id);
  sql_ok(am, sql);
  child_url = t->url;
  pid_t pid = th_fork(child, NULL);
  int status = 0;
  pid_t got = 0;
  for (int64_t start = th_mono_ms(); got == 0 && th_mono_ms() - start < 10000; th_sleep_ms(20))
    got = waitpid(pid, &status, WNOHANG);
  sql_ok(am, "COMMIT");
  jobq_close(a);
  if (got != pid) {
    th_wait(pid);
    fail_msg("%s still waited after 10 s for a row that was not its own", who);
  }
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A forked admin: prunes the jobs finished more than an hour ago; exits
 * 0 when it pruned four. */
static int prune_old(void *arg) {
  (void)arg;
  jobq *db = NULL;
  int rc = jobq_open(child_url, &db);
  int64_t n = 0;
  if (rc == JOBQ_OK) rc = jobq_prune(db, 3600000, &n);
  if (rc != JOBQ_OK) fprintf(stderr, "child prune: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc == JOBQ_OK && n == 4 ? 0 : 1;
}

/* A forked admin: purges queue "pq"; exits 0 when it did. */
static int purge_queue(void *arg) {
  (void)arg;
  jobq *db = NULL;
  int rc = jobq_open(child_url, &db);
  int64_t n = 0;
  if (rc == JOBQ_OK) rc = jobq_purge(db, "pq", &n);
  if (rc != JOBQ_OK) fprintf(stderr, "child purge: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc == JOBQ_OK && n == 2 ? 0 : 1;
}

/* A forked producer: puts jobs of keys "y" and "z" on queue "lq" in one
 * batch, pausing once it found their lock rows missing; exits 0 when
 * the put went in. */
static int put_two_keys(void *arg) {
  (void)arg;
  setenv("JOBQ_FAILPOINT", "put.keys-missing=sleep:2000", 1);
  jobq *db = NULL;
  int rc = jobq_open(child_url, &db);
  jobq_put_opts o[2];
  for (int i = 0; i < 2; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "lq";
    o[i].key = i ? "z" : "y";
  }
  int64_t ids[2];
  if (rc == JOBQ_OK) rc = jobq_put_many(db, o, 2, ids, NULL);
  if (rc != JOBQ_OK) fprintf(stderr, "child put: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 1;
}

/* A forked producer: puts a job with unique key "u" on queue "uq" and
 * exits 0 when it was told the job existed, 1 when it made one, 2 on
 * error. */
static int put_unique(void *arg) {
  (void)arg;
  jobq *db = NULL;
  int rc = jobq_open(child_url, &db);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "uq";
  o.unique_key = "u";
  int64_t id = 0;
  int existed = -1;
  if (rc == JOBQ_OK) rc = jobq_put(db, &o, &id, &existed);
  if (rc != JOBQ_OK) fprintf(stderr, "child put: %s: %s\n", jobq_err_name(rc), jobq_errmsg(db));
  jobq_close(db);
  return rc != JOBQ_OK ? 2 : existed ? 0 : 1;
}

/* ---------------------------------------------------------------- tests */

static void test_version_refusal(void **state) {
  (void)state;
  int mariadb;
  long v;
  char why[200];
  assert_int_equal(jobq__mysql_version_check("10.11.19-MariaDB-0+deb12u1", &mariadb, &v,
                                             why, sizeof why), 0);
  assert_int_equal(mariadb, 1);
  assert_int_equal(v, 101119);
  assert_int_equal(jobq__mysql_version_check("10.6.0-MariaDB", &mariadb, &v, why,
                                             sizeof why), 0);
  /* Before 11, MariaDB's handshake says 5.5.5 first. */
  assert_int_equal(jobq__mysql_version_check("5.5.5-10.6.12-MariaDB-log", &mariadb, &v,
                                             why, sizeof why), 0);
  assert_int_equal(v, 100612);
  assert_int_equal(jobq__mysql_version_check("11.4.2-MariaDB", &mariadb, &v, why,
                                             sizeof why), 0);
  assert_int_equal(jobq__mysql_version_check("8.0.36-0ubuntu0.22.04.1", &mariadb, &v,
                                             why, sizeof why), 0);
  assert_int_equal(mariadb, 0);
  assert_int_equal(jobq__mysql_version_check("8.0.1", &mariadb, &v, why, sizeof why), 0);
  assert_int_equal(jobq__mysql_version_check("9.1.0", &mariadb, &v, why, sizeof why), 0);

  /* Without SKIP LOCKED: refused, saying what is needed. */
  assert_int_equal(jobq__mysql_version_check("10.5.23-MariaDB", &mariadb, &v, why,
                                             sizeof why), -1);
  assert_non_null(strstr(why, "MariaDB 10.5.23"));
  assert_non_null(strstr(why, "SKIP LOCKED"));
  assert_non_null(strstr(why, "expected MariaDB 10.6 or newer"));
  assert_int_equal(jobq__mysql_version_check("5.5.5-10.4.3-MariaDB-log", &mariadb, &v,
                                             why, sizeof why), -1);
  assert_non_null(strstr(why, "10.4.3"));
  assert_int_equal(jobq__mysql_version_check("5.7.44-log", &mariadb, &v, why, sizeof why),
                   -1);
  assert_non_null(strstr(why, "MySQL 5.7.44"));
  assert_non_null(strstr(why, "expected MySQL 8.0.1 or newer"));
  assert_int_equal(jobq__mysql_version_check("8.0.0-dmr", &mariadb, &v, why, sizeof why),
                   -1);
  assert_int_equal(jobq__mysql_version_check("", &mariadb, &v, why, sizeof why), -1);
  assert_non_null(strstr(why, "cannot read the server version"));
  assert_int_equal(jobq__mysql_version_check(NULL, &mariadb, &v, why, sizeof why), -1);

  /* The server of these tests passes, and is MariaDB. */
  const char *base = getenv("JOBQ_TEST_MYSQL_URL");
  assert_non_null(base);
  jobq *db = th_open(base);
  assert_int_equal(jobq__mysql_version_check(mysql_get_server_info(native(db)), &mariadb,
                                             &v, why, sizeof why), 0);
  jobq_close(db);
}

/* The claim reads the claim index in order: no filesort, whatever the
 * backlog looks like. */
static void test_claim_plan(void **state) {
  tq *t = *state;
  jobq_put_opts o[300];
  int64_t ids[300];
  for (int i = 0; i < 300; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = i % 3 == 0 ? "plan" : "other";
    o[i].priority = i % 7 - 3;
    o[i].delay_ms = i % 5 == 0 ? 60000 : 0;
  }
  assert_rc(jobq_put_many(t->db, o, 300, ids, NULL), JOBQ_OK);
  MYSQL *m = native(t->db);
  sql_ok(m, "ANALYZE TABLE jobq_jobs");

  /* The claim's pick, explained with real values. */
  char *text = jobq__sql_text(JOBQ_DIALECT_MYSQL, JOBQ_Q_CLAIM_PICK, NULL, NULL);
  assert_non_null(text);
  char sql[2048];
  snprintf(sql, sizeof sql, "EXPLAIN %s", text);
  free(text);
  MYSQL_STMT *st = mysql_stmt_init(m);
  assert_non_null(st);
  if (mysql_stmt_prepare(st, sql, strlen(sql)) != 0)
    fail_msg("%s: %s", sql, mysql_stmt_error(st));
  assert_int_equal(mysql_stmt_param_count(st), 2);
  MYSQL_BIND p[2];
  memset(p, 0, sizeof p);
  long long limit = 10;
  p[0].buffer_type = MYSQL_TYPE_STRING;
  p[0].buffer = (void *)"plan";
  p[0].buffer_length = 4;
  p[1].buffer_type = MYSQL_TYPE_LONGLONG;
  p[1].buffer = &limit;
  assert_int_equal(mysql_stmt_bind_param(st, p), 0);
  if (mysql_stmt_execute(st) != 0) fail_msg("explain: %s", mysql_stmt_error(st));
  MYSQL_RES *meta = mysql_stmt_result_metadata(st);
  assert_non_null(meta);
  unsigned nf = mysql_num_fields(meta);
  int key_col = -1, extra_col = -1;
  for (unsigned i = 0; i < nf; i++) {
    const char *name = mysql_fetch_field_direct(meta, i)->name;
    if (strcmp(name, "key") == 0) key_col = (int)i;
    if (strcmp(name, "Extra") == 0) extra_col = (int)i;
  }
  mysql_free_result(meta);
  assert_true(key_col >= 0 && extra_col >= 0 && nf <= 16);
  char buf[16][256];
  unsigned long len[16];
  my_bool null[16];
  MYSQL_BIND r[16];
  memset(r, 0, sizeof r);
  for (unsigned i = 0; i < nf; i++) {
    r[i].buffer_type = MYSQL_TYPE_STRING;
    r[i].buffer = buf[i];
    r[i].buffer_length = sizeof buf[i] - 1;
    r[i].length = &len[i];
    r[i].is_null = &null[i];
  }
  assert_int_equal(mysql_stmt_bind_result(st, r), 0);
  int rows = 0;
  while (mysql_stmt_fetch(st) == 0) {
    rows++;
    for (unsigned i = 0; i < nf; i++) buf[i][null[i] ? 0 : len[i]] = '\0';
    print_message("plan: key %s, extra %s\n", buf[key_col], buf[extra_col]);
    assert_string_equal(buf[key_col], "jobq_jobs_claim");
    if (strstr(buf[extra_col], "filesort") != NULL)
      fail_msg("the claim sorts: %s", buf[extra_col]);
  }
  mysql_stmt_close(st);
  assert_int_equal(rows, 1);

  /* And it claims in the order the index gives. */
  jobq_session *s = th_session(t->db, 0);
  size_t n;
  jobq_job *j = th_claim(s, "plan", 100, &n);
  assert_int_equal(n, 80);
  for (size_t i = 1; i < n; i++) {
    assert_true(j[i - 1].priority >= j[i].priority);
    if (j[i - 1].priority == j[i].priority) assert_true(j[i - 1].id < j[i].id);
  }
  jobq_jobs_free(j, n);
  jobq_session_close(s);
}

/* A deadlock between a put and another transaction: the server rolls the
 * put back, and the library runs it again, which then succeeds. */
static void test_deadlock_runs_again(void **state) {
  tq *t = *state;
  th_put_key(t->db, "dq", "k");  /* the lock rows exist from now on */
  jobq *a = th_open(t->url);
  MYSQL *am = native(a);
  sql_ok(am, "CREATE TABLE ballast (x INT NOT NULL)");
  sql_ok(am, "INSERT INTO ballast WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT "
             "n + 1 FROM s WHERE n < 500) SELECT n FROM s");
  int64_t deadlocks = status_of(am, "INNODB_DEADLOCKS");

  /* A holds the key's lock, and weighs more than the put (500 changed
   * rows), so that the server picks the put to roll back. */
  sql_ok(am, "START TRANSACTION");
  sql_ok(am, "UPDATE ballast SET x = x + 1");
  sql_ok(am, "SELECT name FROM jobq_locks WHERE name = 'k:dq/k' FOR UPDATE");
  child_url = t->url;
  pid_t pid = th_fork(put_keyed, NULL);
  /* The put holds the queue's lock shared and waits for the key's. */
  until_lock_wait(am);
  /* A now wants the queue's lock: a cycle. */
  sql_ok(am, "SELECT name FROM jobq_locks WHERE name = 'q:dq' FOR UPDATE");
  assert_true(status_of(am, "INNODB_DEADLOCKS") > deadlocks);
  sql_ok(am, "COMMIT");
  assert_int_equal(th_wait(pid), 0);

  /* One job more, once, waiting behind the first. */
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'dq' "
                                     "AND order_key = 'k'"),
                   2);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'dq' "
                                     "AND state = 'waiting'"),
                   1);
  jobq_close(a);
}

/* A lock wait timeout: the put's transaction is rolled back and run
 * again until the lock comes free.  With lock_wait_timeout=1s, no single
 * wait lasts 2 s: a put that succeeds after 2.5 s waited, timed out and
 * ran again. */
static void test_lock_wait_timeout_runs_again(void **state) {
  tq *t = *state;
  th_put_key(t->db, "dq", "k");
  char url[sizeof t->url + 64];
  url_with(t, "lock_wait_timeout=1s", url, sizeof url);
  jobq *a = th_open(t->url);
  MYSQL *am = native(a);
  sql_ok(am, "START TRANSACTION");
  sql_ok(am, "SELECT name FROM jobq_locks WHERE name = 'k:dq/k' FOR UPDATE");
  child_url = url;
  int64_t start = th_mono_ms();
  pid_t pid = th_fork(put_keyed, NULL);
  until_lock_wait(am);
  th_sleep_ms(2500);
  sql_ok(am, "COMMIT");
  assert_int_equal(th_wait(pid), 0);
  int64_t took = th_mono_ms() - start;
  print_message("the put took %lld ms\n", (long long)took);
  assert_true(took >= 2500);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'dq'"),
                   2);
  jobq_close(a);
}

/* Inside a caller's transaction, a lock wait timeout ends the whole
 * transaction at once (its locks with it); the handle then refuses all
 * but a rollback, and nothing of the transaction is committed. */
static void test_lock_wait_timeout_in_caller_transaction(void **state) {
  tq *t = *state;
  th_put_key(t->db, "dq", "k");
  assert_int_equal(th_sql(t->db, "CREATE TABLE mine (x INT NOT NULL)"), 0);
  char url[sizeof t->url + 64];
  url_with(t, "lock_wait_timeout=1s", url, sizeof url);
  jobq *b = th_open(url);
  jobq *a = th_open(t->url);
  MYSQL *am = native(a);
  sql_ok(am, "SET SESSION innodb_lock_wait_timeout = 1");
  sql_ok(am, "START TRANSACTION");
  sql_ok(am, "SELECT name FROM jobq_locks WHERE name = 'k:dq/k' FOR UPDATE");

  assert_rc(jobq_begin(b), JOBQ_OK);
  assert_int_equal(th_sql(b, "INSERT INTO mine VALUES (1)"), 0);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "dq";
  o.key = "k";
  int64_t id;
  assert_rc(jobq_put(b, &o, &id, NULL), JOBQ_EBUSY);
  th_assert_msg(b, "lock_wait_timeout");
  /* Rolled back at once: the queue's lock that the put held is free
   * (A's own wait would time out in 1 s otherwise), and my row is gone. */
  sql_ok(am, "SELECT name FROM jobq_locks WHERE name = 'q:dq' FOR UPDATE");
  assert_int_equal(sql_int(am, "SELECT count(*) FROM mine"), 0);
  /* What the caller does next is not committed either. */
  assert_int_equal(th_sql(b, "INSERT INTO mine VALUES (2)"), 0);
  o.key = NULL;
  assert_rc(jobq_put(b, &o, &id, NULL), JOBQ_EBUSY);
  th_assert_msg(b, "roll back");
  assert_rc(jobq_commit(b), JOBQ_EBUSY);
  sql_ok(am, "COMMIT");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 0);
  /* After the rollback, the handle works again. */
  assert_rc(jobq_rollback(b), JOBQ_ESTATE);
  assert_rc(jobq_begin(b), JOBQ_OK);
  assert_int_equal(th_sql(b, "INSERT INTO mine VALUES (3)"), 0);
  assert_rc(jobq_put(b, &o, &id, NULL), JOBQ_OK);
  assert_rc(jobq_commit(b), JOBQ_OK);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM mine"), 1);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_READY);
  jobq_close(a);
  jobq_close(b);
}

/* Two puts race for one unique key: the second looked before the first
 * committed, so its insert meets the key on the index; it inserts
 * nothing and returns the first job. */
static void test_unique_key_race(void **state) {
  tq *t = *state;
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "uq";
  o.unique_key = "u";
  int64_t id = 0;
  int existed = -1;
  assert_rc(jobq_put(t->db, &o, &id, &existed), JOBQ_OK);
  assert_int_equal(existed, 0);
  child_url = t->url;
  pid_t pid = th_fork(put_unique, NULL);
  jobq *a = th_open(t->url);
  /* The other put waits on the unique index for this transaction. */
  until_lock_wait(native(a));
  jobq_close(a);
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  assert_int_equal(th_wait(pid), 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 1);
}

/* Two transactions make one key's lock row at once: a put of keys y and
 * z found neither row, and before it inserted them another transaction
 * inserted z's.  The put's insert waits for that one, goes in for y
 * alone, and the put then takes z's lock as a put of one key does, and
 * goes on.  (Should the child look after this transaction's insert, it
 * waits in its look instead, and the test passes without the race.) */
static void test_key_lock_row_race(void **state) {
  tq *t = *state;
  jobq *a = th_open(t->url);
  MYSQL *am = native(a);
  child_url = t->url;
  pid_t pid = th_fork(put_two_keys, NULL);
  th_sleep_ms(500);
  sql_ok(am, "START TRANSACTION");
  sql_ok(am, "INSERT INTO jobq_locks(name) VALUES ('k:lq/z')");
  until_lock_wait(am);
  sql_ok(am, "COMMIT");
  assert_int_equal(th_wait(pid), 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'lq' AND "
                                     "state = 'ready'"),
                   2);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_locks WHERE name IN "
                                     "('k:lq/y', 'k:lq/z')"),
                   2);
  jobq_close(a);
}

/* A batch's statements touch its own jobs' rows and no others, however
 * few rows the table has: with a handful, the server's plan for a list of
 * ids had been to scan the whole table, locking each row on its way, and
 * a batch claim or completion then waited for any row another
 * transaction held (and two such batches deadlocked).  Another
 * transaction holds the first job's row; a worker claims three others
 * and completes them, and is done while that row is still held; then
 * another claims three more and fails them (one statement reads their
 * rows and one sends them back). */
static void test_batches_lock_only_their_rows(void **state) {
  tq *t = *state;
  int64_t first = th_put(t->db, "sq", "held");
  for (int i = 0; i < 6; i++) th_put(t->db, "sq", "x");
  exits_while_held(t, "jobq_jobs", first, claim_and_complete, "the worker");
  assert_int_equal(th_state(t->db, first), JOBQ_STATE_READY);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done WHERE queue = 'sq'"), 3);
  /* Failures read their rows, and send them back, by id as well. */
  exits_while_held(t, "jobq_jobs", first, claim_and_fail, "the failing worker");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'sq' AND "
                                     "state = 'ready' AND attempts = 1 AND session IS NULL"),
                   3);
}

/* A purge finds its queue's finished jobs through the outcome index: a
 * scan of the whole archive waited for any row another transaction held,
 * such as a finished job of another queue being retried. */
static void test_purge_locks_only_its_queue(void **state) {
  tq *t = *state;
  int64_t other = th_put(t->db, "kept", NULL);
  th_put(t->db, "pq", NULL);
  th_put(t->db, "pq", NULL);
  jobq_session *s = th_session(t->db, 0);
  const char *queues[] = {"kept", "pq"};
  jobq_job *jobs = NULL;
  size_t n = 0;
  assert_rc(jobq_claim(s, queues, 2, 10, &jobs, &n), JOBQ_OK);
  assert_int_equal(n, 3);
  th_complete_many(s, jobs, n);
  jobq_session_close(s);
  exits_while_held(t, "jobq_done", other, purge_queue, "the purge");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done"), 1);
}

/* A prune reads the archive through its index of finish times: a scan
 * of all of it, the plan when most of the archive goes, waited for any
 * row another transaction held, such as a job finished a moment ago.
 * (The index's first row past the old ones is still read with its lock:
 * the newest job here is held, the one before it is that row.) */
static void test_prune_locks_only_old_rows(void **state) {
  tq *t = *state;
  for (int i = 0; i < 6; i++) th_put(t->db, "pr", NULL);
  jobq_session *s = th_session(t->db, 0);
  size_t n = 0;
  jobq_job *jobs = th_claim(s, "pr", 10, &n);
  assert_int_equal(n, 6);
  int64_t past = jobs[4].id, recent = jobs[5].id;
  th_complete_many(s, jobs, n);
  jobq_session_close(s);
  char sql[160];
  snprintf(sql, sizeof sql, "UPDATE jobq_done SET finished_at = 1000 WHERE id < %lld",
           (long long)past);
  assert_int_equal(th_sql(t->db, sql), 0);
  snprintf(sql, sizeof sql, "UPDATE jobq_done SET finished_at = finished_at + 1 WHERE id = %lld",
           (long long)recent);
  assert_int_equal(th_sql(t->db, sql), 0);
  exits_while_held(t, "jobq_done", recent, prune_old, "the prune");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done"), 2);
}

/* The job sequence (AUTO_INCREMENT) that the identity check watches is
 * read fresh by every connection, also when jobs left the table. */
static void test_sequence_is_fresh(void **state) {
  tq *t = *state;
  jobq *other = th_open(t->url);
  jobq_identity a, b;
  assert_rc(jobq_identity_get(t->db, &a), JOBQ_OK);
  assert_int_equal(a.seq, 0);
  int64_t last = 0;
  for (int i = 0; i < 3; i++) last = th_put(other, "seq", NULL);
  assert_rc(jobq_identity_get(t->db, &b), JOBQ_OK);
  assert_int_equal(b.seq, last);
  /* Finished and pruned jobs do not take it back. */
  jobq_session *s = th_session(other, 0);
  size_t n;
  jobq_job *j = th_claim(s, "seq", 10, &n);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) assert_rc(jobq_complete(s, &j[i], NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
  assert_int_equal(th_sql(other, "DELETE FROM jobq_done"), 0);
  assert_rc(jobq_identity_get(t->db, &b), JOBQ_OK);
  assert_int_equal(b.seq, last);
  jobq_close(other);
}

/* innodb_flush_log_at_trx_commit other than 1 is a warning on the handle,
 * not an error. */
static void test_durability_warning(void **state) {
  tq *t = *state;
  assert_null(jobq_warning(t->db));
  assert_int_equal(th_sql(t->db, "SET GLOBAL innodb_flush_log_at_trx_commit = 2"), 0);
  jobq *db = NULL;
  int rc = jobq_open(t->url, &db);
  const char *w = rc == JOBQ_OK ? jobq_warning(db) : NULL;
  char copy[512];
  snprintf(copy, sizeof copy, "%s", w ? w : "(none)");
  jobq_close(db);
  assert_int_equal(th_sql(t->db, "SET GLOBAL innodb_flush_log_at_trx_commit = 1"), 0);
  assert_rc(rc, JOBQ_OK);
  assert_non_null(strstr(copy, "innodb_flush_log_at_trx_commit = 2"));
  assert_non_null(strstr(copy, "expected 1"));
  /* The URL in it is redacted: never the password. */
  const char *u = strstr(t->url, "://") + 3;
  char password[128];
  snprintf(password, sizeof password, "%.*s", (int)strcspn(u + strcspn(u, ":") + 1, "@"),
           u + strcspn(u, ":") + 1);
  assert_true(strlen(password) > 0);
  assert_null(strstr(copy, password));
  assert_non_null(strstr(copy, "***"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_refusal),
      TQ_TEST(test_claim_plan),
      TQ_TEST(test_deadlock_runs_again),
      TQ_TEST(test_lock_wait_timeout_runs_again),
      TQ_TEST(test_lock_wait_timeout_in_caller_transaction),
      TQ_TEST(test_unique_key_race),
      TQ_TEST(test_key_lock_row_race),
      TQ_TEST(test_batches_lock_only_their_rows),
      TQ_TEST(test_purge_locks_only_its_queue),
      TQ_TEST(test_prune_locks_only_old_rows),
      TQ_TEST(test_sequence_is_fresh),
      TQ_TEST(test_durability_warning),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
