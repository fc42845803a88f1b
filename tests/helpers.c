/*
 * helpers.c - the shared test fixture (a temp directory, and a real queue
 * database per test: an SQLite file in it, a fresh schema on the
 * PostgreSQL server or a fresh database on the MariaDB server that
 * tests/run.sh started) and the small helpers that keep the tests short:
 * quick puts and claims that assert success, clocks and sleeps in
 * milliseconds, raw SQL on the handle's connection, file and process
 * helpers, and the JOBQ_TEST_CASE filter.  See helpers.h.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* JOBQ_TEST_CASE=NAME runs only the cases of that name (cmocka's filter:
 * * and ? match any text and any character), as it does for the shell
 * tests: before main(), in every test program. */
__attribute__((constructor)) static void th_case_filter(void) {
  const char *name = getenv("JOBQ_TEST_CASE");
  if (name != NULL && name[0] != '\0') cmocka_set_test_filter(name);
}

char *th_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  if (base == NULL || *base == '\0') base = "/tmp";
  char tmpl[PATH_MAX];
  int len = snprintf(tmpl, sizeof tmpl, "%s/jobq-test-XXXXXX", base);
  assert_true(len > 0 && (size_t)len < sizeof tmpl);
  char *dir = mkdtemp(tmpl);
  assert_non_null(dir);
  char *copy = strdup(dir);
  assert_non_null(copy);
  return copy;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void th_rmtree(const char *dir) {
  if (dir == NULL || *dir == '\0') return;
  if (getenv("JOBQ_TEST_KEEP") != NULL) return;
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void th_path(char *out, size_t size, const char *dir, const char *name) {
  int len = snprintf(out, size, "%s/%s", dir, name);
  assert_true(len > 0 && (size_t)len < size);
}

jobq *th_open(const char *url) {
  jobq *db = NULL;
  int rc = jobq_open(url, &db);
  if (rc != JOBQ_OK)
    fail_msg("jobq_open(%s): %s: %s", url, jobq_err_name(rc), jobq_errmsg(db));
  assert_non_null(db);
  return db;
}

const char *th_store(void) {
  const char *s = getenv("JOBQ_TEST_STORE");
  return s != NULL && *s != '\0' ? s : "sqlite";
}

int th_is_sqlite(void) { return strcmp(th_store(), "sqlite") == 0; }
int th_is_mysql(void) { return strcmp(th_store(), "mysql") == 0; }

/* The database of a MariaDB test URL (the path after the host), into out. */
static void url_dbname(const char *url, char *out, size_t size) {
  const char *p = strstr(url, "://");
  assert_non_null(p);
  p = strchr(p + 3, '/');
  assert_non_null(p);
  snprintf(out, size, "%.*s", (int)strcspn(p + 1, "?"), p + 1);
}

/* Client options for the MariaDB test URL (user, host, port) into out, and
 * its password into MYSQL_PWD, where the client programs look for it. */
static void mysql_client_opts(const char *url, char *out, size_t size) {
  char user[64] = "", pass[128] = "", host[64] = "", port[16] = "";
  const char *p = strstr(url, "://");
  assert_non_null(p);
  p += 3;
  size_t n = strcspn(p, ":@");
  snprintf(user, sizeof user, "%.*s", (int)n, p);
  p += n;
  if (*p == ':') {
    p++;
    n = strcspn(p, "@");
    snprintf(pass, sizeof pass, "%.*s", (int)n, p);
    p += n;
  }
  assert_true(*p == '@');
  p++;
  n = strcspn(p, ":/");
  snprintf(host, sizeof host, "%.*s", (int)n, p);
  p += n;
  if (*p == ':') snprintf(port, sizeof port, "%.*s", (int)strcspn(p + 1, "/"), p + 1);
  setenv("MYSQL_PWD", pass, 1);
  snprintf(out, size, "--no-defaults -u '%s' -h %s -P %s", user, host,
           *port ? port : "3306");
}

/* A schema name no other test (of this run or of others on the same
 * server) uses. */
static void fresh_schema(char *out, size_t size) {
  static unsigned counter;
  unsigned char r[4];
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0 || read(fd, r, sizeof r) != (ssize_t)sizeof r) memset(r, 0, sizeof r);
  if (fd >= 0) close(fd);
  snprintf(out, size, "t%d_%u_%02x%02x%02x%02x", (int)getpid(), counter++, r[0], r[1],
           r[2], r[3]);
}

void th_new_db(const char *dir, const char *name, char *url, size_t size) {
  int len;
  if (th_is_sqlite()) {
    len = snprintf(url, size, "sqlite:%s/%s.db", dir, name);
  } else if (strcmp(th_store(), "postgres") == 0) {
    const char *base = getenv("JOBQ_TEST_PG_URL");
    if (base == NULL || *base == '\0') fail_msg("JOBQ_TEST_PG_URL is not set");
    char schema[64];
    fresh_schema(schema, sizeof schema);
    len = snprintf(url, size, "%s%sschema=%s", base, strchr(base, '?') ? "&" : "?", schema);
  } else if (th_is_mysql()) {
    /* A database of its own, made on the server's "jobq" database. */
    const char *base = getenv("JOBQ_TEST_MYSQL_URL");
    if (base == NULL || *base == '\0') fail_msg("JOBQ_TEST_MYSQL_URL is not set");
    char dbname[64], sql[128];
    fresh_schema(dbname, sizeof dbname);
    jobq *adm = th_open(base);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", dbname);
    assert_int_equal(th_sql(adm, sql), 0);
    jobq_close(adm);
    const char *slash = strchr(strstr(base, "://") + 3, '/');
    assert_non_null(slash);
    const char *query = strchr(slash, '?');
    len = snprintf(url, size, "%.*s/%s%s", (int)(slash - base), base, dbname,
                   query ? query : "");
  } else {
    fail_msg("unknown JOBQ_TEST_STORE '%s': expected sqlite, postgres or mysql",
             th_store());
    return;
  }
  assert_true(len > 0 && (size_t)len < size);
  /* Servers need `jobq init`; SQLite initialises on open. */
  if (!th_is_sqlite()) {
    jobq *db = NULL;
    int rc = jobq_open(url, &db);
    if (rc == JOBQ_OK) rc = jobq_init(db);
    if (rc != JOBQ_OK)
      fail_msg("initialising %s: %s: %s", url, jobq_err_name(rc), jobq_errmsg(db));
    jobq_close(db);
  }
}

void th_drop_db(const char *url) {
  if (th_is_sqlite() || getenv("JOBQ_TEST_KEEP") != NULL) return;
  if (th_is_mysql()) {
    char name[64], sql[128];
    url_dbname(url, name, sizeof name);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
    jobq *db = NULL;
    if (jobq_open(getenv("JOBQ_TEST_MYSQL_URL"), &db) == JOBQ_OK) th_sql(db, sql);
    jobq_close(db);
    return;
  }
  const char *schema = strstr(url, "schema=");
  if (schema == NULL) return;
  char sql[128];
  snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %.*s CASCADE",
           (int)strcspn(schema + 7, "&"), schema + 7);
  jobq *db = NULL;
  if (jobq_open(url, &db) == JOBQ_OK) th_sql(db, sql);
  jobq_close(db);
}

/* The schema=NAME of a PostgreSQL test URL, into out. */
static void url_schema(const char *url, char *out, size_t size) {
  const char *p = strstr(url, "schema=");
  assert_non_null(p);
  snprintf(out, size, "%.*s", (int)strcspn(p + 7, "&"), p + 7);
}

/* Runs a shell command line of the test's own making; asserts it worked. */
static void run_cmd(const char *cmd) {
  int rc = system(cmd);
  if (rc != 0) fail_msg("'%s' failed with status %d", cmd, rc);
}

void th_backup(tq *t, const char *name) {
  char path[PATH_MAX];
  th_path(path, sizeof path, t->dir, name);
  if (th_is_sqlite()) {
    sqlite3 *b = NULL;
    assert_int_equal(sqlite3_open(path, &b), SQLITE_OK);
    sqlite3_backup *bk = sqlite3_backup_init(b, "main", jobq_native(t->db), "main");
    if (bk == NULL) fail_msg("backup_init: %s", sqlite3_errmsg(b));
    int rc = sqlite3_backup_step(bk, -1);
    sqlite3_backup_finish(bk);
    sqlite3_close(b);
    if (rc != SQLITE_DONE) fail_msg("backup_step: %d", rc);
    return;
  }
  char schema[64], cmd[PATH_MAX * 2 + 512];
  if (th_is_mysql()) {
    char opts[256];
    url_dbname(t->url, schema, sizeof schema);
    mysql_client_opts(t->url, opts, sizeof opts);
    snprintf(cmd, sizeof cmd, "mariadb-dump %s --single-transaction %s > '%s'", opts,
             schema, path);
    run_cmd(cmd);
    return;
  }
  url_schema(t->url, schema, sizeof schema);
  snprintf(cmd, sizeof cmd, "pg_dump --dbname='%.*s' --schema=%s --no-owner -f '%s'",
           (int)strcspn(t->url, "?"), t->url, schema, path);
  run_cmd(cmd);
}

void th_restore(tq *t, const char *name) {
  char path[PATH_MAX];
  th_path(path, sizeof path, t->dir, name);
  if (th_is_sqlite()) {
    sqlite3 *b = NULL;
    assert_int_equal(sqlite3_open(path, &b), SQLITE_OK);
    sqlite3_backup *bk = sqlite3_backup_init(jobq_native(t->db), "main", b, "main");
    if (bk == NULL) fail_msg("backup_init failed");
    int rc = sqlite3_backup_step(bk, -1);
    sqlite3_backup_finish(bk);
    sqlite3_close(b);
    if (rc != SQLITE_DONE) fail_msg("backup_step: %d", rc);
    return;
  }
  char schema[64], sql[128], cmd[PATH_MAX * 2 + 512];
  if (th_is_mysql()) {
    /* The dump drops and makes again each of its tables. */
    char opts[256];
    url_dbname(t->url, schema, sizeof schema);
    mysql_client_opts(t->url, opts, sizeof opts);
    snprintf(cmd, sizeof cmd, "mariadb %s %s < '%s'", opts, schema, path);
    run_cmd(cmd);
    return;
  }
  url_schema(t->url, schema, sizeof schema);
  snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", schema);
  assert_int_equal(th_sql(t->db, sql), 0);
  snprintf(cmd, sizeof cmd, "psql -q -v ON_ERROR_STOP=1 --dbname='%.*s' -f '%s' >/dev/null",
           (int)strcspn(t->url, "?"), t->url, path);
  run_cmd(cmd);
}

void th_drop_connection(const char *url, jobq *db) {
  assert_false(th_is_sqlite());
  jobq *other = th_open(url);
  char sql[128];
  if (th_is_mysql())
    snprintf(sql, sizeof sql, "KILL CONNECTION %lld", (long long)th_sql_int(db, "SELECT CONNECTION_ID()"));
  else
    /* Waits (up to 5 s) for the server process to be gone. */
    snprintf(sql, sizeof sql,
             "SELECT CASE WHEN pg_terminate_backend(%lld, 5000) THEN 1 ELSE 0 END",
             (long long)th_sql_int(db, "SELECT pg_backend_pid()"));
  if (th_is_mysql())
    assert_int_equal(th_sql(other, sql), 0);
  else
    assert_int_equal(th_sql_int(other, sql), 1);
  jobq_close(other);
}

void th_swap_in(tq *t, jobq *other, const char *other_url) {
  if (th_is_sqlite()) {
    sqlite3_backup *bk =
        sqlite3_backup_init(jobq_native(t->db), "main", jobq_native(other), "main");
    if (bk == NULL) fail_msg("backup_init failed");
    int rc = sqlite3_backup_step(bk, -1);
    sqlite3_backup_finish(bk);
    if (rc != SQLITE_DONE) fail_msg("backup_step: %d", rc);
    return;
  }
  char mine[64], theirs[64], sql[256];
  if (th_is_mysql()) {
    /* Every table of the other database moves over this one's. */
    url_dbname(t->url, mine, sizeof mine);
    url_dbname(other_url, theirs, sizeof theirs);
    static const char *const tables[] = {"jobq_meta",  "jobq_queues",  "jobq_counts",
                                         "jobq_sessions", "jobq_jobs", "jobq_done",
                                         "jobq_blocked", "jobq_locks", "jobq_tally",
                                         "jobq_attempts"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
      snprintf(sql, sizeof sql, "DROP TABLE %s.%s", mine, tables[i]);
      assert_int_equal(th_sql(t->db, sql), 0);
      snprintf(sql, sizeof sql, "RENAME TABLE %s.%s TO %s.%s", theirs, tables[i], mine,
               tables[i]);
      assert_int_equal(th_sql(t->db, sql), 0);
    }
    return;
  }
  url_schema(t->url, mine, sizeof mine);
  url_schema(other_url, theirs, sizeof theirs);
  snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE; ALTER SCHEMA %s RENAME TO %s", mine,
           theirs, mine);
  assert_int_equal(th_sql(t->db, sql), 0);
}

int tq_setup(void **state) {
  tq *t = calloc(1, sizeof *t);
  assert_non_null(t);
  char *dir = th_mkdtemp();
  snprintf(t->dir, sizeof t->dir, "%s", dir);
  free(dir);
  th_path(t->path, sizeof t->path, t->dir, "queue.db");
  th_new_db(t->dir, "queue", t->url, sizeof t->url);
  t->db = th_open(t->url);
  *state = t;
  return 0;
}

int tq_teardown(void **state) {
  tq *t = *state;
  if (t == NULL) return 0;
  jobq_close(t->db);
  th_drop_db(t->url);
  th_rmtree(t->dir);
  free(t);
  *state = NULL;
  return 0;
}

int64_t th_put_opts(jobq *db, const jobq_put_opts *o) {
  int64_t id = 0;
  int existed = -1;
  int rc = jobq_put(db, o, &id, &existed);
  if (rc != JOBQ_OK)
    fail_msg("jobq_put: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  assert_true(id > 0);
  return id;
}

int64_t th_put_attempts(jobq *db, const char *queue, int max_attempts) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = queue;
  o.max_attempts = max_attempts;
  return th_put_opts(db, &o);
}

void th_put_many(jobq *db, const char *queue, size_t n, int max_attempts) {
  jobq_put_opts *o = calloc(n, sizeof *o);
  int64_t *ids = calloc(n, sizeof *ids);
  assert_true(o != NULL && ids != NULL);
  for (size_t i = 0; i < n; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = queue;
    if (max_attempts > 0) o[i].max_attempts = max_attempts;
  }
  int rc = jobq_put_many(db, o, n, ids, NULL);
  if (rc != JOBQ_OK) fail_msg("jobq_put_many: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  free(o);
  free(ids);
}

int64_t th_put(jobq *db, const char *queue, const char *payload) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  if (queue != NULL) o.queue = queue;
  if (payload != NULL) {
    o.payload = payload;
    o.payload_len = strlen(payload);
  }
  return th_put_opts(db, &o);
}

int64_t th_put_key(jobq *db, const char *queue, const char *key) {
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  if (queue != NULL) o.queue = queue;
  o.key = key;
  return th_put_opts(db, &o);
}

jobq_session *th_session(jobq *db, int64_t lease_ms) {
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = "test";
  if (lease_ms > 0) so.lease_ms = lease_ms;
  jobq_session *s = NULL;
  int rc = jobq_session_open(db, &so, &s);
  if (rc != JOBQ_OK)
    fail_msg("jobq_session_open: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  assert_non_null(s);
  return s;
}

jobq_session *th_child_session(const char *url, int64_t lease_ms) {
  jobq *db = NULL;
  if (jobq_open(url, &db) != JOBQ_OK) return NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.lease_ms = lease_ms;
  jobq_session *s = NULL;
  return jobq_session_open(db, &so, &s) == JOBQ_OK ? s : NULL;
}

jobq_job *th_claim(jobq_session *s, const char *queue, size_t max, size_t *n) {
  jobq_job *jobs = NULL;
  *n = 0;
  const char *qs[1] = {queue};
  int rc = jobq_claim(s, queue != NULL ? qs : NULL, queue != NULL ? 1 : 0, max,
                      &jobs, n);
  if (rc != JOBQ_OK) fail_msg("jobq_claim: %s", jobq_err_name(rc));
  if (*n > 0) assert_non_null(jobs);
  return jobs;
}

jobq_job *th_claim_one(jobq_session *s, const char *queue) {
  size_t n;
  jobq_job *j = th_claim(s, queue, 1, &n);
  if (n != 1) fail_msg("expected one job to claim from %s, got %zu",
                       queue != NULL ? queue : "every queue", n);
  return j;
}

void th_claim_none(jobq_session *s, const char *queue) {
  size_t n;
  jobq_job *j = th_claim(s, queue, 10, &n);
  if (n != 0)
    fail_msg("expected nothing to claim from %s, got %zu (first id %lld)",
             queue != NULL ? queue : "every queue", n, (long long)j[0].id);
  jobq_jobs_free(j, n);
}

void th_complete_many(jobq_session *s, jobq_job *jobs, size_t n) {
  jobq_ack *acks = calloc(n ? n : 1, sizeof *acks);
  assert_non_null(acks);
  for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
  assert_rc(jobq_ack_many(s, acks, n), JOBQ_OK);
  for (size_t i = 0; i < n; i++) assert_rc(acks[i].status, JOBQ_OK);
  free(acks);
  jobq_jobs_free(jobs, n);
}

jobq_job_info *th_show(jobq *db, int64_t id) {
  jobq_job_info *info = NULL;
  int rc = jobq_show(db, id, &info);
  if (rc != JOBQ_OK)
    fail_msg("jobq_show(%lld): %s: %s", (long long)id, jobq_err_name(rc),
             jobq_errmsg(db));
  assert_non_null(info);
  assert_int_equal(info->id, id);
  return info;
}

int th_state(jobq *db, int64_t id) {
  jobq_job_info *info = th_show(db, id);
  int st = info->state;
  jobq_info_free(info, 1);
  return st;
}

int64_t th_beat_until(jobq_session *s, jobq *db, int64_t id, int state,
                      int64_t max_ms) {
  int64_t start = th_mono_ms();
  for (;;) {
    int rc = jobq_heartbeat(s, NULL, NULL);
    if (rc != JOBQ_OK) fail_msg("jobq_heartbeat: %s", jobq_err_name(rc));
    if (th_state(db, id) == state) return th_mono_ms() - start;
    if (th_mono_ms() - start > max_ms)
      fail_msg("job %lld not %s after %lld ms", (long long)id,
               jobq_state_name(state), (long long)max_ms);
    th_sleep_ms(50);
  }
}

int64_t th_db_now(jobq *db) {
  jobq_identity ident;
  int rc = jobq_identity_get(db, &ident);
  if (rc != JOBQ_OK) fail_msg("jobq_identity_get: %s", jobq_err_name(rc));
  return ident.now_ms;
}

int64_t th_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t th_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void th_sleep_ms(int64_t ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Runs sql on a PostgreSQL handle.  Through a pooler in transaction mode
 * (JOBQ_TEST_PG_URL with pooler=transaction) the connection keeps no
 * search_path of its own between transactions: a statement outside one
 * runs in a transaction of jobq_begin(), which sets it. */
static PGresult *pg_run(jobq *db, const char *sql) {
  PGconn *h = jobq_native(db);
  const char *url = getenv("JOBQ_TEST_PG_URL");
  int wrap = url != NULL && strstr(url, "pooler=transaction") != NULL &&
             PQtransactionStatus(h) == PQTRANS_IDLE && jobq_begin(db) == JOBQ_OK;
  PGresult *res = PQexec(h, sql);
  ExecStatusType st = PQresultStatus(res);
  if (wrap && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK))
    assert_int_equal(jobq_commit(db), JOBQ_OK);
  else if (wrap)
    jobq_rollback(db);
  return res;
}

int th_sql(jobq *db, const char *sql) {
  void *h = jobq_native(db);
  assert_non_null(h);
  if (th_is_sqlite()) return sqlite3_exec(h, sql, NULL, NULL, NULL);
  if (th_is_mysql()) {
    if (mysql_query(h, sql) != 0) {
      print_message("%s: %s\n", sql, mysql_error(h));
      return 1;
    }
    MYSQL_RES *res = mysql_store_result(h);
    if (res != NULL) mysql_free_result(res);
    return 0;
  }
  PGresult *res = pg_run(db, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : 1;
  if (rc != 0) print_message("%s: %s", sql, PQresultErrorMessage(res));
  PQclear(res);
  return rc;
}

int64_t th_sql_int(jobq *db, const char *sql) {
  void *h = jobq_native(db);
  assert_non_null(h);
  if (th_is_mysql()) {
    if (mysql_query(h, sql) != 0) fail_msg("%s: %s", sql, mysql_error(h));
    MYSQL_RES *res = mysql_store_result(h);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    if (row == NULL || row[0] == NULL) {
      if (res) mysql_free_result(res);
      fail_msg("%s: no row", sql);
    }
    int64_t v = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    return v;
  }
  if (!th_is_sqlite()) {
    PGresult *res = pg_run(db, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1) {
      print_error("%s: %s\n", sql, PQresultErrorMessage(res));
      PQclear(res);
      fail_msg("%s: no row", sql);
    }
    int64_t v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return v;
  }
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
  rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    fail_msg("%s: no row (%d)", sql, rc);
  }
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

void th_assert_msg_at(jobq *db, const char *needle, const char *file,
                      int line) {
  const char *msg = jobq_errmsg(db);
  if (msg == NULL || strstr(msg, needle) == NULL) {
    print_error("%s:%d: message \"%s\" does not contain \"%s\"\n", file,
                line, msg != NULL ? msg : "(null)", needle);
    _fail(file, line);
  }
}

pid_t th_fork(int (*fn)(void *), void *arg) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(fn(arg));
  return pid;
}

int th_wait(pid_t pid) {
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void th_write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    assert_true(w > 0);
    p += w;
    len -= (size_t)w;
  }
  assert_int_equal(close(fd), 0);
}

ssize_t th_read_file(const char *path, void *buf, size_t size) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, (char *)buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return (ssize_t)got;
}

size_t th_count_jobs(jobq *db, int state) {
  jobq_list_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.state = state;
  lo.limit = 100000;
  jobq_job_info *infos = NULL;
  size_t n = 0;
  int rc = jobq_list(db, &lo, &infos, &n);
  if (rc != JOBQ_OK)
    fail_msg("jobq_list: %s: %s", jobq_err_name(rc), jobq_errmsg(db));
  jobq_info_free(infos, n);
  return n;
}

void th_assert_counts_agree(jobq *db) {
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  assert_rc(jobq_stats(db, &st, &n), JOBQ_OK);
  int64_t sums[8] = {0};
  for (size_t k = 0; k < n; k++) {
    sums[JOBQ_STATE_READY] += st[k].ready + st[k].scheduled;
    sums[JOBQ_STATE_RUNNING] += st[k].running;
    sums[JOBQ_STATE_WAITING] += st[k].waiting;
    sums[JOBQ_STATE_DONE] += st[k].done;
    sums[JOBQ_STATE_DEAD] += st[k].dead;
    sums[JOBQ_STATE_CANCELLED] += st[k].cancelled;
    sums[JOBQ_STATE_PENDING] += st[k].pending;
  }
  jobq_stats_free(st, n);
  for (int state = JOBQ_STATE_READY; state <= JOBQ_STATE_PENDING; state++) {
    int64_t listed = (int64_t)th_count_jobs(db, state);
    if (listed != sums[state])
      fail_msg("stats count %lld %s jobs, jobq_list finds %lld",
               (long long)sums[state], jobq_state_name(state), (long long)listed);
  }
}
