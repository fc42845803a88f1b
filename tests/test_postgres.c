/*
 * test_postgres.c - what only the PostgreSQL store does, against the
 * server that tests/run.sh started: the plans a connection keeps, the
 * BEGIN and the statements whose results no one reads sent with the next
 * statement (the round trips of each kind of transaction), a lock that
 * timed out while it waited to be sent, a connection made again, the
 * Unix socket, and every connection back after a restart of the server.
 *
 * jobq prepares its statements once per connection and PostgreSQL plans
 * them once (generic plans).  A plan made while the hot table had no pages
 * at all would read the whole table for every job once it has filled: a
 * scan of no pages costs nothing, so it beats every index.  The hot table
 * therefore keeps its pages when vacuum empties it (vacuum_truncate off).
 * A generic plan's cost can pass jit_above_cost, and no plan of jobq's is
 * worth compiling: its connections turn jit off.
 * tests/run.sh runs this file on PostgreSQL only.
 */
#include "helpers.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs sql on the handle's own connection and returns its result, which
 * must be rows; the caller clears it. */
static PGresult *rows_of(jobq *db, const char *sql) {
  PGresult *res = PQexec(jobq_native(db), sql);
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    fail_msg("%s: %s", sql, PQresultErrorMessage(res));
  return res;
}

/* Runs sql, a command, on the handle's own connection. */
static void command(jobq *db, const char *sql) {
  PGresult *res = PQexec(jobq_native(db), sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) fail_msg("%s: %s", sql, PQresultErrorMessage(res));
  PQclear(res);
}

static int64_t reltuples(jobq *db) {
  return th_sql_int(db, "SELECT reltuples::bigint FROM pg_class WHERE oid = 'jobq_jobs'::regclass");
}

static int64_t relpages(jobq *db) {
  PGresult *res = rows_of(db, "SELECT relpages FROM pg_class WHERE oid = 'jobq_jobs'::regclass");
  int64_t n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return n;
}

/* The plan of the connection's prepared statement whose text starts with
 * prefix, run with args ("(NULL, 10)"), as one string. */
static char *plan_of(jobq *db, const char *prefix, const char *args) {
  char sql[512];
  snprintf(sql, sizeof sql,
           "SELECT name FROM pg_prepared_statements WHERE starts_with(statement, '%s')",
           prefix);
  PGresult *res = rows_of(db, sql);
  if (PQntuples(res) != 1) fail_msg("%d prepared statements start with '%s'", PQntuples(res), prefix);
  snprintf(sql, sizeof sql, "EXPLAIN EXECUTE %s%s", PQgetvalue(res, 0, 0), args);
  PQclear(res);
  res = rows_of(db, sql);
  size_t len = 1;
  for (int i = 0; i < PQntuples(res); i++) len += strlen(PQgetvalue(res, i, 0)) + 1;
  char *plan = calloc(1, len);
  assert_non_null(plan);
  for (size_t i = 0, at = 0; i < (size_t)PQntuples(res); i++)
    at += (size_t)snprintf(plan + at, len - at, "%s\n", PQgetvalue(res, (int)i, 0));
  PQclear(res);
  return plan;
}

/* Fails when the plan of the claim or the completion on worker's
 * connection, or of the put of queue's jobs on putter's, holds text:
 * "the claim <says>". */
static void busy_plans_lack(jobq *worker, jobq *putter, const char *queue, const char *text,
                            const char *says) {
  static const char *const names[] = {"claim", "put", "ack"};
  char args[256];
  snprintf(args, sizeof args,
           "('{%s}', '{0}', '{0}', '{0}', '{x}', '{1}', '{0}', '{0}', '{NULL}', "
           "'{NULL}', '{0}', '{0}', '{0}', '{1}', '%s')", queue, queue);
  char *plans[] = {
      plan_of(worker, "WITH q AS", "(NULL, 10, 'none', 10, '{t}')"),
      plan_of(putter, "INSERT INTO jobq_jobs(queue, priority, run_at, state, payload", args),
      plan_of(worker, "WITH a AS (SELECT * FROM unnest($1::bigint[]",
              "('{1}', '{x}', '{x}', 'none', false)")};
  for (int i = 0; i < 3; i++) {
    if (strstr(plans[i], text)) fail_msg("the %s %s:\n%s", names[i], says, plans[i]);
    free(plans[i]);
  }
}

/* Claims and completes every job of queue, heartbeating as a worker
 * does, so that a slow machine does not let the lease run out. */
static void drain(jobq_session *s, const char *queue) {
  for (;;) {
    assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
    size_t n;
    jobq_job *jobs = th_claim(s, queue, 500, &n);
    if (n == 0) break;
    th_complete_many(s, jobs, n);
  }
}

static void test_plans_made_on_an_emptied_table(void **state) {
  tq *t = *state;
  /* The table fills and empties, and vacuum finds it empty. */
  jobq_session *s = th_session(t->db, 60000);
  th_put_many(t->db, "plan", 3000, 0);
  drain(s, "plan");
  command(t->db, "VACUUM jobq_jobs");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 0);
  assert_true(relpages(t->db) > 0);

  /* A worker and a producer that start now plan their statements on the
   * empty table; then a backlog comes. */
  jobq *w = th_open(t->url), *p = th_open(t->url);
  jobq_session *ws = th_session(w, 60000);
  th_claim_none(ws, "plan");
  th_put_many(p, "plan", 2, 0);
  /* Both failed once in one batch, then completed. */
  size_t n;
  jobq_job *jobs = th_claim(ws, "plan", 2, &n);
  assert_int_equal(n, 2);
  jobq_ack fails[2];
  for (size_t i = 0; i < n; i++) {
    jobq_ack_init(&fails[i], &jobs[i], JOBQ_ACK_FAIL);
    fails[i].retry_in_ms = 0;
  }
  assert_rc(jobq_ack_many(ws, fails, n), JOBQ_OK);
  jobq_jobs_free(jobs, n);
  drain(ws, "plan");
  /* And two on their only attempt failed in one batch: dead. */
  jobq_put_opts o[2];
  for (int i = 0; i < 2; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "plan";
    o[i].max_attempts = 1;
  }
  int64_t ids[2];
  assert_rc(jobq_put_many(p, o, 2, ids, NULL), JOBQ_OK);
  jobs = th_claim(ws, "plan", 2, &n);
  assert_int_equal(n, 2);
  for (size_t i = 0; i < n; i++) jobq_ack_init(&fails[i], &jobs[i], JOBQ_ACK_FAIL);
  assert_rc(jobq_ack_many(ws, fails, n), JOBQ_OK);
  for (size_t i = 0; i < n; i++) assert_int_equal(fails[i].outcome, JOBQ_STATE_DEAD);
  jobq_jobs_free(jobs, n);
  th_put_many(p, "plan", 5000, 0);

  busy_plans_lack(w, p, "plan", "Seq Scan on jobq_jobs", "reads the whole table");
  /* A failure's rows are read through the primary key, job by job (a
   * plan that reads the whole key in order has no such condition), and
   * a retry's update goes to the rows the failure read. */
  char *rows = plan_of(w, "SELECT j.id, j.claim, j.attempts", "('{1,2}', 'none')");
  char *back = plan_of(w, "UPDATE jobq_jobs j SET state",
                       "('{\"(0,1)\"}', '{0}', '{0}', '{x}', '{1}')");
  if (!strstr(rows, "Index Cond: (id = a.id)"))
    fail_msg("a failure reads more than its jobs:\n%s", rows);
  if (!strstr(back, "TID Cond"))
    fail_msg("a retry reads more than its jobs:\n%s", back);
  /* So does the archiving of dead jobs. */
  char *dead = plan_of(w, "WITH a AS (SELECT * FROM unnest($1::tid[]",
                       "('{\"(0,1)\"}', '{dead}', '{NULL}', '{x}', '{1}')");
  if (!strstr(dead, "TID Cond") || strstr(dead, "Seq Scan on jobq_jobs"))
    fail_msg("archiving dead jobs reads more than its jobs:\n%s", dead);
  free(rows);
  free(back);
  free(dead);

  /* And they still do their work. */
  drain(ws, "plan");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 0);
  jobq_session_close(ws);
  jobq_session_close(s);
  jobq_close(w);
  jobq_close(p);
}

/* A generic plan does not know its LIMIT and expects a tenth of the
 * table: with a million jobs analyzed, the claim's plan cost more than
 * jit_above_cost, and the server compiled it at every claim, about 10 ms
 * for 10 jobs.  Here the server compiles whatever it runs
 * (jit_above_cost = 0 for the connection, through PGOPTIONS), and none of
 * jobq's plans may be compiled. */
static void test_no_statement_is_compiled(void **state) {
  tq *t = *state;
  /* pg_jit_available() also asks for jit on, which jobq's connections
   * turn off. */
  command(t->db, "BEGIN");
  command(t->db, "SET LOCAL jit = on");
  int64_t can = th_sql_int(t->db, "SELECT CASE WHEN pg_jit_available() THEN 1 ELSE 0 END");
  command(t->db, "ROLLBACK");
  if (can == 0) {
    print_message("skipped: this server cannot compile plans (no JIT provider)\n");
    skip();
  }
  const char *old = getenv("PGOPTIONS");
  char *saved = old != NULL ? strdup(old) : NULL;
  setenv("PGOPTIONS", "-c jit_above_cost=0", 1);
  jobq *w = th_open(t->url);
  if (saved != NULL) setenv("PGOPTIONS", saved, 1);
  else unsetenv("PGOPTIONS");
  free(saved);
  assert_int_equal(th_sql_int(w, "SELECT CASE WHEN current_setting('jit_above_cost') = '0' "
                                 "THEN 1 ELSE 0 END"),
                   1);
  jobq_session *s = th_session(w, 60000);
  th_put_many(w, "jit", 3, 0);
  drain(s, "jit");

  busy_plans_lack(w, w, "jit", "JIT", "is compiled");
  jobq_session_close(s);
  jobq_close(w);
}

/* How many times needle is in hay. */
static int occurs(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* Fails unless the generic plan of the connection's prepared statement
 * whose text starts with prefix, run with args, reads index within the
 * statement's bounds: no filter over what it reads, no sort (but, with
 * sorts_two, the sort of the first rows of two bounded reads).  The one
 * look at the queue's limit per key (a row of jobq_queues, once) is no
 * such filter. */
static void plan_reads(jobq *db, const char *prefix, const char *args, const char *index,
                       int sorts_two) {
  command(db, "SET plan_cache_mode = force_generic_plan");
  char *plan = plan_of(db, prefix, args);
  command(db, "RESET plan_cache_mode");
  if (!strstr(plan, index)) fail_msg("the plan does not read %s:\n%s", index, plan);
  int filters = occurs(plan, "Filter") - occurs(plan, "One-Time Filter") -
                occurs(plan, "Filter: (max_per_key IS NOT NULL)");
  int sorts = occurs(plan, "Sort Key");
  if (filters > 0 || sorts > (sorts_two ? 1 : 0) ||
      (sorts > 0 && occurs(plan, "->  Limit") < 2))
    fail_msg("the plan filters or sorts what it reads:\n%s", plan);
  free(plan);
}

static void generic_plan_reads(jobq *db, const char *prefix, const char *args,
                               const char *index) {
  plan_reads(db, prefix, args, index, 0);
}

/* 1 when job id is waiting, 0 when it is not, read with SQL. */
static int64_t waiting(jobq *db, int64_t id) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM jobq_jobs WHERE id = %lld AND state = 'waiting'",
           (long long)id);
  return th_sql_int(db, sql);
}

/* Whether anything comes before a barrier, with a backlog in another
 * queue and jobs running in a third: the generic plan, which expects any
 * row to match and to find one at once by a scan of the table or of the
 * primary key, reads the queue index for the jobs that are not running
 * and the session index for those that are (the others read all the jobs
 * when none is there).  A barrier waits behind a running job.  And the
 * jobq_put() SQL function finds a ready job and a running one before a
 * barrier as the library does. */
static void test_a_barrier_looks_for_earlier_jobs_in_the_queue_index(void **state) {
  tq *t = *state;
  th_put_many(t->db, "backlog", 5000, 0);
  th_put_many(t->db, "busy", 200, 0);
  jobq_session *w = th_session(t->db, 60000);
  size_t nbusy = 0;
  jobq_job *busy = th_claim(w, "busy", 200, &nbusy);
  assert_int_equal(nbusy, 200);
  command(t->db, "ANALYZE jobq_jobs");
  jobq_put_opts b;
  jobq_put_opts_init(&b);
  b.queue = "fence";
  b.barrier = 1;
  int64_t first = th_put_opts(t->db, &b);
  assert_int_equal(waiting(t->db, first), 0);
  int64_t second = th_put_opts(t->db, &b);
  assert_int_equal(waiting(t->db, second), 1);

  command(t->db, "SET plan_cache_mode = force_generic_plan");
  char *plan = plan_of(t->db, "SELECT 1 FROM ((SELECT 1 FROM jobq_jobs WHERE (queue, id) >",
                       "('fence', 1000000)");
  command(t->db, "RESET plan_cache_mode");
  if (!strstr(plan, "Index Only Scan using jobq_jobs_queue") ||
      !strstr(plan, "Index Scan using jobq_jobs_session") || strstr(plan, "jobq_jobs_pkey") ||
      strstr(plan, "Seq Scan") || strstr(plan, "Sort"))
    fail_msg("the look before a barrier does not read the queue and session indexes:\n%s", plan);
  free(plan);

  /* Behind a job that is running, and only running, a barrier waits. */
  jobq_put_opts r;
  jobq_put_opts_init(&r);
  r.queue = "gate";
  th_put_opts(t->db, &r);
  jobq_job *gate = th_claim_one(w, "gate");
  b.queue = "gate";
  int64_t behind = th_put_opts(t->db, &b);
  assert_int_equal(waiting(t->db, behind), 1);
  th_complete_many(w, gate, 1);
  assert_int_equal(waiting(t->db, behind), 0);
  jobq_jobs_free(busy, nbusy);
  jobq_session_close(w);

  /* The SQL function: a barrier in an empty queue is ready; behind a
   * ready job or a running one it waits. */
  assert_true(th_sql_int(t->db, "SELECT jobq_put('sqlempty', '', barrier => true)") > 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'sqlempty' "
                                     "AND state = 'ready'"),
                   1);
  th_put(t->db, "sqlready", "first");
  assert_int_equal(waiting(t->db, th_sql_int(t->db, "SELECT jobq_put('sqlready', '', "
                                                    "barrier => true)")),
                   1);
  th_put(t->db, "sqlrunning", "first");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *j = th_claim_one(s, "sqlrunning");
  assert_int_equal(waiting(t->db, th_sql_int(t->db, "SELECT jobq_put('sqlrunning', '', "
                                                    "barrier => true)")),
                   1);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
}

/* The looks at a key, with a backlog of few keys and one of plain ready
 * jobs: whether it has jobs (the put of a keyed job, in a batch of its
 * own and beside a job with a unique key), which of its jobs waits next
 * (the finish of one) and whether one is active (a cancelled waiting
 * job): each generic plan reads the key index within the key and the
 * states asked for.  A scan of the table reads all of it for a key that
 * has no such job; a read of the key's entries walks its waiting jobs to
 * find the active one. */
static void test_a_key_looks_for_its_jobs_in_the_key_index(void **state) {
  tq *t = *state;
  jobq_put_opts *o = calloc(3000, sizeof *o);
  int64_t *ids = calloc(3000, sizeof *ids);
  assert_true(o != NULL && ids != NULL);
  for (size_t i = 0; i < 3000; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "keys";
    o[i].key = i % 2 ? "one" : "two";
  }
  assert_rc(jobq_put_many(t->db, o, 3000, ids, NULL), JOBQ_OK);
  free(o);
  /* Ready jobs elsewhere: "ready" is common in the statistics. */
  th_put_many(t->db, "backlog", 5000, 0);
  command(t->db, "ANALYZE jobq_jobs");
  th_put_key(t->db, "keys", "three");
  command(t->db, "SET plan_cache_mode = force_generic_plan");
  char *put = plan_of(t->db, "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key",
                      "('{keys}', '{0}', '{0}', '{0}', '{x}', '{1}', '{0}', '{0}', '{NULL}', "
                      "'{four}', '{0}', '{0}', '{0}', '{1}', 'keys')");
  command(t->db, "RESET plan_cache_mode");
  if (!strstr(put, "using jobq_jobs_key on jobq_jobs j") ||
      !strstr(put, "Index Cond: ((queue = u.q) AND (order_key >= u.k) AND (order_key <= u.k))") ||
      strstr(put, "Seq Scan on jobq_jobs"))
    fail_msg("the put does not look for the key's jobs in the key index:\n%s", put);
  free(put);
  jobq_put_opts u;
  jobq_put_opts_init(&u);
  u.queue = "keys";
  u.key = "three";
  u.unique_key = "three";
  /* In the caller's transaction, a put with a unique key goes one job at
   * a time, and looks for its key's jobs with KEY_TAKEN. */
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  th_put_opts(t->db, &u);
  assert_rc(jobq_commit(t->db), JOBQ_OK);
  generic_plan_reads(t->db, "(SELECT 1 FROM jobq_jobs WHERE queue = $1 AND order_key >= $2",
                     "('keys', 'four')", "jobq_jobs_key");

  /* A key's head completes, and one is cancelled as it fails: the next
   * of its key is looked for, by the completions' statement and by the
   * library's look. */
  jobq_session *s = th_session(t->db, 60000);
  size_t n;
  jobq_job *j = th_claim(s, "keys", 3, &n);
  assert_int_equal(n, 3);
  assert_rc(jobq_complete(s, &j[0], NULL, 0, NULL), JOBQ_OK);
  int now;
  assert_rc(jobq_cancel(t->db, j[1].id, &now), JOBQ_OK);
  assert_int_equal(now, 0);
  assert_rc(jobq_fail(s, &j[1], "cancelled"), JOBQ_OK);
  assert_int_equal(th_state(t->db, j[1].id), JOBQ_STATE_CANCELLED);
  command(t->db, "SET plan_cache_mode = force_generic_plan");
  char *ack = plan_of(t->db, "WITH a AS", "('{1}', '{x}', '{x}', 'none', true)");
  command(t->db, "RESET plan_cache_mode");
  if (!strstr(ack, "Index Cond: ((queue = k.queue) AND (ROW(order_key, state) >= "
                   "ROW(k.order_key, 'waiting'::text))") ||
      strstr(ack, "Seq Scan on jobq_jobs"))
    fail_msg("the completions do not look for a key's next job in the key index:\n%s", ack);
  free(ack);
  jobq_jobs_free(j, n);
  jobq_session_close(s);
  /* Its first pending job and its first waiting one, the first of the
   * two: a sort of two rows. */
  plan_reads(t->db, "(SELECT id, state FROM jobq_jobs WHERE queue = $1 AND (order_key, state)",
             "('keys', 'four')", "jobq_jobs_key", 1);

  /* A waiting job is cancelled: whether its key has an active job
   * decides whether the next one may run. */
  assert_int_equal(th_state(t->db, ids[2999]), JOBQ_STATE_WAITING);
  assert_rc(jobq_cancel(t->db, ids[2999], &now), JOBQ_OK);
  assert_int_equal(now, 1);
  generic_plan_reads(t->db, "SELECT 1 FROM jobq_jobs WHERE queue = $1 AND (order_key, state)",
                     "('keys', 'four')", "jobq_jobs_key");
  free(ids);
}

/* A column of the hot table's row in pg_stat_user_tables (n_live_tup,
 * n_dead_tup, ...), or an expression of them. */
static int64_t table_stat(jobq *db, const char *column) {
  char sql[160];
  snprintf(sql, sizeof sql,
           "SELECT %s FROM pg_stat_user_tables WHERE relid = 'jobq_jobs'::regclass", column);
  return th_sql_int(db, sql);
}

/* Waits, up to 5 s, until the statistics collector counts at least n. */
static void await_stat(jobq *db, const char *column, int64_t n) {
  for (int i = 0; i < 100 && table_stat(db, column) < n; i++) th_sleep_ms(50);
}

/* Statistics that say the hot table has `tuples` rows while a backlog of
 * 3000 has come: a claimer analyzes the table again, and its plans read
 * the claim index and find acknowledged jobs by their ids. */
static void stats_renewed(tq *t, int tuples) {
  th_put_many(t->db, "stats", 3000, 0);
  PQclear(rows_of(t->db, "SELECT pg_stat_force_next_flush()"));
  char sql[128];
  snprintf(sql, sizeof sql, "UPDATE pg_class SET reltuples = %d WHERE oid = 'jobq_jobs'::regclass",
           tuples);
  command(t->db, sql);
  /* The statistics collector counts the new jobs within a second. */
  await_stat(t->db, "n_live_tup", 3000);
  assert_int_equal(reltuples(t->db), tuples);

  jobq *w = th_open(t->url);
  jobq_session *ws = th_session(w, 60000);
  size_t n;
  jobq_job *jobs = th_claim(ws, "stats", 10, &n);
  assert_int_equal(n, 10);
  jobq_ack acks[10];
  for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
  assert_rc(jobq_ack_many(ws, acks, n), JOBQ_OK);
  jobq_jobs_free(jobs, n);
  assert_true(reltuples(t->db) >= 1000);

  char *claim = plan_of(w, "WITH q AS", "('{stats}', 10, 'none', 10, '{t}')");
  char *ack = plan_of(w, "WITH a AS", "('{1}', '{x}', '{x}', 'none', false)");
  if (!strstr(claim, "jobq_jobs_claim")) fail_msg("the claim does not read the claim index:\n%s", claim);
  if (strstr(claim, "Seq Scan on jobq_jobs")) fail_msg("the claim reads the whole table:\n%s", claim);
  if (strstr(ack, "jobq_jobs_session")) fail_msg("the ack starts from the session's jobs:\n%s", ack);
  free(claim);
  free(ack);
  drain(ws, "stats");
  jobq_session_close(ws);
  jobq_close(w);
}

/* As vacuum leaves them when it found the table empty. */
static void test_statistics_that_fell_behind_are_renewed(void **state) {
  stats_renewed(*state, 0);
}

/* As a new table has them (-1: never vacuumed nor analyzed), when its
 * first backlog comes right after jobq init. */
static void test_statistics_never_taken_are_taken(void **state) {
  stats_renewed(*state, -1);
}

/* A claim's look at the archive (whether the handle's last completions
 * are there, lib/mark.c) planned while the archive was empty, as vacuum
 * leaves it after a purge: once the archive has filled, a claimer
 * analyzes it, and the look reads its primary key, not every row (20 ms a
 * claim at 12000 rows). */
static void test_an_archive_that_filled_after_a_purge_is_analyzed(void **state) {
  tq *t = *state;
  /* No autovacuum to analyze it meanwhile. */
  command(t->db, "ALTER TABLE jobq_done SET (autovacuum_enabled = false)");
  command(t->db, "DELETE FROM jobq_done");
  command(t->db, "VACUUM jobq_done");
  assert_int_equal(th_sql_int(t->db, "SELECT pg_relation_size('jobq_done')"), 0);

  jobq *w = th_open(t->url);
  jobq_session *ws = th_session(w, 60000);
  th_put_many(t->db, "archive", 3000, 0);
  drain(ws, "archive");
  PQclear(rows_of(w, "SELECT pg_stat_force_next_flush()"));
  for (int i = 0; i < 100 && th_sql_int(t->db, "SELECT n_live_tup FROM pg_stat_user_tables "
                                                  "WHERE relid = 'jobq_done'::regclass") < 3000;
       i++)
    th_sleep_ms(50);
  /* The next look, a second after the last. */
  th_sleep_ms(1100);
  th_claim_none(ws, "archive");
  assert_true(th_sql_int(t->db, "SELECT reltuples::bigint FROM pg_class WHERE oid = "
                                "'jobq_done'::regclass") >= 1000);
  char *look = plan_of(w, "SELECT m.queue_id", "('none', 1, 'x', 2, 'y')");
  if (strstr(look, "Seq Scan on jobq_done"))
    fail_msg("a claim's look reads the whole archive:\n%s", look);
  free(look);
  jobq_session_close(ws);
  jobq_close(w);
  command(t->db, "ALTER TABLE jobq_done RESET (autovacuum_enabled)");
}

/* A claimer that took a full batch from a table the planner counts empty
 * (as vacuum leaves it) analyzes it before its next claim, without
 * waiting for the statistics collector to count the rows (a backend
 * reports its inserts once a second at most; here the counters were
 * reset): until then each claim plans for no rows and reads all of the
 * queue's ready jobs. */
static void test_a_full_batch_from_a_table_counted_empty_is_analyzed(void **state) {
  tq *t = *state;
  /* No autovacuum to count the rows meanwhile. */
  command(t->db, "ALTER TABLE jobq_jobs SET (autovacuum_enabled = false)");
  th_put_many(t->db, "counted", 3000, 0);
  PQclear(rows_of(t->db, "SELECT pg_stat_force_next_flush()"));
  command(t->db, "UPDATE pg_class SET reltuples = 0 WHERE oid = 'jobq_jobs'::regclass");
  PQclear(rows_of(t->db, "SELECT pg_stat_reset_single_table_counters('jobq_jobs'::regclass)"));
  assert_int_equal(table_stat(t->db, "n_live_tup"), 0);

  jobq *w = th_open(t->url);
  jobq_session *ws = th_session(w, 60000);
  for (int round = 0; round < 2; round++) {
    /* The first look finds nothing to analyze; the full batch it took
     * makes the second one analyze. */
    assert_int_equal(reltuples(t->db), 0);
    size_t n;
    jobq_job *jobs = th_claim(ws, "counted", 10, &n);
    assert_int_equal(n, 10);
    jobq_jobs_free(jobs, n);
  }
  assert_true(reltuples(t->db) >= 1000);
  char *claim = plan_of(w, "WITH q AS", "('{counted}', 10, 'none', 10, '{t}')");
  if (!strstr(claim, "jobq_jobs_claim")) fail_msg("the claim does not read the claim index:\n%s", claim);
  free(claim);
  jobq_session_close(ws);
  jobq_close(w);
  command(t->db, "ALTER TABLE jobq_jobs RESET (autovacuum_enabled)");
}

/* A burst of puts into a table that vacuum found empty, with no claimer
 * to analyze it: the producer's own look at the statistics (once a
 * second) does, so that the puts' looks for a barrier and for a key's
 * jobs, planned once per connection, do not scan the whole table for
 * every job put. */
static void test_a_burst_of_puts_into_an_emptied_table_is_analyzed(void **state) {
  tq *t = *state;
  /* No autovacuum to count the rows meanwhile. */
  command(t->db, "ALTER TABLE jobq_jobs SET (autovacuum_enabled = false)");
  command(t->db, "VACUUM jobq_jobs");
  assert_int_equal(reltuples(t->db), 0);
  jobq *p = th_open(t->url);
  enum { BATCH = 1000 };
  static jobq_put_opts o[BATCH];
  static char keys[BATCH][32];
  int64_t ids[BATCH];
  /* Plain and keyed batches until the table is analyzed, 10 s at most. */
  int64_t end = th_mono_ms() + 10000;
  for (int round = 0; reltuples(t->db) < BATCH && th_mono_ms() < end; round++) {
    th_put_many(p, "burst", BATCH, 0);
    for (int i = 0; i < BATCH; i++) {
      jobq_put_opts_init(&o[i]);
      o[i].queue = "burst";
      snprintf(keys[i], sizeof keys[i], "k%d-%d", round, i);
      o[i].key = keys[i];
    }
    assert_rc(jobq_put_many(p, o, BATCH, ids, NULL), JOBQ_OK);
    th_sleep_ms(200);
  }
  assert_true(reltuples(t->db) >= BATCH);
  char *plain = plan_of(p, "INSERT INTO jobq_jobs(queue, priority, run_at, state, payload",
                        "('{burst}', '{0}', '{0}', '{0}', '{x}', '{1}', '{0}', '{0}', '{NULL}', "
           "'{NULL}', '{0}', '{0}', '{0}', '{1}', 'burst')");
  char *keyed = plan_of(p, "INSERT INTO jobq_jobs(queue, priority, run_at, state, order_key",
                        "('{burst}', '{0}', '{0}', '{0}', '{x}', '{1}', '{0}', '{0}', '{NULL}', "
                        "'{k}', '{0}', '{0}', '{0}', '{1}', 'burst')");
  if (strstr(plain, "Seq Scan on jobq_jobs")) fail_msg("the put reads the whole table:\n%s", plain);
  if (strstr(keyed, "Seq Scan on jobq_jobs"))
    fail_msg("the keyed put reads the whole table:\n%s", keyed);
  free(plain);
  free(keyed);
  jobq_close(p);
  command(t->db, "ALTER TABLE jobq_jobs RESET (autovacuum_enabled)");
}

/* The vacuums of the hot table, so far. */
static int64_t vacuums(jobq *db) { return table_stat(db, "vacuum_count + autovacuum_count"); }

/* The lock the claimers' look takes before it starts a vacuum. */
#define VACUUM_LOCK "hashtextextended('v:' || 'jobq_jobs'::regclass::oid::text, 0)"

/* Whether db's session took the vacuums' lock (it keeps it). */
static int try_vacuum_lock(jobq *db) {
  PGresult *res = rows_of(db, "SELECT pg_try_advisory_lock(" VACUUM_LOCK ")");
  int got = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
  PQclear(res);
  return got;
}

/* Takes the vacuums' lock on db's session.  The handle of s holds it
 * from the look that started its last vacuum to its first transaction
 * after that vacuum ended: its claims of queue (empty) give it back. */
static void take_vacuum_lock(jobq *db, jobq_session *s, const char *queue) {
  for (int i = 0; i < 500; i++) {
    if (try_vacuum_lock(db)) return;
    th_claim_none(s, queue);
    th_sleep_ms(10);
  }
  fail_msg("the vacuums' lock stayed taken for 5 s");
}

/* 11000 jobs of queue claimed and done on s, 22000 dead rows, once the
 * statistics count them.  db holds the vacuums' lock meanwhile: the
 * count passes 20000 during the last rounds, and a look of s's claims
 * that saw it then would start a vacuum before the caller's claims. */
static void make_dead_rows(jobq *db, jobq *w, jobq_session *s, const char *queue) {
  take_vacuum_lock(db, s, queue);
  for (int round = 0; round < 11; round++) {
    th_put_many(db, queue, 1000, 0);
    drain(s, queue);
  }
  PQclear(rows_of(w, "SELECT pg_stat_force_next_flush()"));
  await_stat(db, "n_dead_tup", 20000);
  PQclear(rows_of(db, "SELECT pg_advisory_unlock(" VACUUM_LOCK ")"));
}

/* Claims from queue on s every 100 ms until the hot table's count of
 * vacuums passes before, for at most 30 s; the milliseconds it took. */
static int64_t claim_until_vacuumed(jobq *db, jobq_session *s, const char *queue,
                                    int64_t before) {
  int64_t t0 = th_mono_ms();
  for (int i = 0; i < 300 && vacuums(db) == before; i++) {
    th_claim_none(s, queue);
    th_sleep_ms(100);
  }
  assert_true(vacuums(db) > before);
  return th_mono_ms() - t0;
}

/* A claimer that finds 20000 dead rows in the hot table starts a vacuum
 * of it, without waiting for autovacuum (turned off here) nor for the
 * vacuum: the dead rows' entries at the head of the claim index would
 * otherwise cost every claim a walk over them.  Once that vacuum has
 * ended, the next may start when as long again as it ran has passed:
 * with ten seconds between two, a million jobs archived in twenty
 * seconds left nearly a million dead rows behind them. */
static void test_dead_rows_are_vacuumed_without_waiting_for_autovacuum(void **state) {
  tq *t = *state;
  command(t->db, "ALTER TABLE jobq_jobs SET (autovacuum_enabled = false)");
  int64_t before = vacuums(t->db);
  jobq *w = th_open(t->url);
  jobq_session *s = th_session(w, 60000);
  make_dead_rows(t->db, w, s, "dead");
  assert_int_equal(vacuums(t->db), before);
  /* A claim once a second looks at the statistics: the first one after
   * they count the dead rows starts the vacuum. */
  claim_until_vacuumed(t->db, s, "dead", before);
  assert_true(table_stat(t->db, "n_dead_tup") < 20000);
  /* The vacuum of so small a table takes milliseconds: the next look
   * after the dead rows are back starts the next one. */
  before = vacuums(t->db);
  make_dead_rows(t->db, w, s, "dead");
  int64_t ms = claim_until_vacuumed(t->db, s, "dead", before);
  if (ms >= 5000) fail_msg("the second vacuum started %lld ms after the dead rows were counted",
                           (long long)ms);
  jobq_session_close(s);
  jobq_close(w);
  command(t->db, "ALTER TABLE jobq_jobs RESET (autovacuum_enabled)");
}

/* Whether db's session could take the vacuums' lock (given back at once). */
static int vacuum_lock_free(jobq *db) {
  int is_free = try_vacuum_lock(db);
  if (is_free) PQclear(rows_of(db, "SELECT pg_advisory_unlock(" VACUUM_LOCK ")"));
  return is_free;
}

/* One vacuum of the hot table at a time, whoever starts it: a claimer
 * whose look finds the dead rows starts none while another session holds
 * the vacuums' lock (with 64 claimer processes, dozens of connections a
 * second were made for a vacuum that skipped the table, another being at
 * work), starts one once it is free, and gives the lock back after it. */
static void test_one_vacuum_at_a_time(void **state) {
  tq *t = *state;
  command(t->db, "ALTER TABLE jobq_jobs SET (autovacuum_enabled = false)");
  PQclear(rows_of(t->db, "SELECT pg_advisory_lock(" VACUUM_LOCK ")"));
  jobq *w = th_open(t->url);
  jobq_session *s = th_session(w, 60000);
  make_dead_rows(t->db, w, s, "one");
  int64_t before = vacuums(t->db);
  /* Three looks, a second apart, find the dead rows and the lock taken. */
  for (int i = 0; i < 30; i++) {
    th_claim_none(s, "one");
    th_sleep_ms(100);
  }
  assert_int_equal(vacuums(t->db), before);
  assert_true(table_stat(t->db, "n_dead_tup") >= 20000);
  PQclear(rows_of(t->db, "SELECT pg_advisory_unlock(" VACUUM_LOCK ")"));
  claim_until_vacuumed(t->db, s, "one", before);
  /* The vacuum has ended: a transaction of the claimer's after its
   * connection has the result gives the lock back. */
  int is_free = 0;
  for (int i = 0; i < 50 && !(is_free = vacuum_lock_free(t->db)); i++) {
    th_claim_none(s, "one");
    th_sleep_ms(100);
  }
  assert_true(is_free);
  jobq_session_close(s);
  jobq_close(w);
  command(t->db, "ALTER TABLE jobq_jobs RESET (autovacuum_enabled)");
}

/* Behind a pooler in transaction mode, a connection's next transaction
 * may run on a server connection without the statements it prepared:
 * the error says so, and nothing was written. */
static void test_a_connection_that_changed_hands_is_named(void **state) {
  tq *t = *state;
  jobq *db = th_open(t->url);
  th_put(db, "hands", "x");
  command(db, "DEALLOCATE ALL");
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "hands";
  int64_t id;
  assert_rc(jobq_put(db, &o, &id, NULL), JOBQ_EDB);
  const char *msg = jobq_errmsg(db);
  if (!strstr(msg, "does not exist") || !strstr(msg, "pooler in session mode"))
    fail_msg("the message does not say what happened: %s", msg);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'hands'"), 1);
  jobq_close(db);
}

/* The library's own transactions send their BEGIN with their first
 * statement; jobq_begin() must begin at once, as the caller's own
 * statements on the connection come next. */
static void test_the_callers_transaction_begins_at_once(void **state) {
  tq *t = *state;
  PGconn *pc = jobq_native(t->db);
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_int_equal(PQtransactionStatus(pc), PQTRANS_INTRANS);
  PGresult *res = PQexec(pc, "CREATE TABLE app_rows (v int)");
  assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
  PQclear(res);
  th_put(t->db, "mine", "x");
  assert_rc(jobq_rollback(t->db), JOBQ_OK);
  assert_int_equal(PQtransactionStatus(pc), PQTRANS_IDLE);
  /* Both the table and the job went with the rollback. */
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM pg_tables WHERE tablename = 'app_rows'"), 0);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 0);
  /* And the library's own transactions leave the connection idle. */
  th_put(t->db, "mine", "y");
  assert_int_equal(PQtransactionStatus(pc), PQTRANS_IDLE);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 1);
}

/* A connection the server ended is made again when a transaction finds
 * it broken before doing anything, with its BEGIN sent beside the first
 * statement. */
static void test_a_connection_ended_by_the_server_is_made_again(void **state) {
  tq *t = *state;
  jobq *w = th_open(t->url);
  jobq_session *s = th_session(w, 60000);
  th_put(t->db, "again", "1");
  th_claim_none(s, "other");
  for (int round = 0; round < 2; round++) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int", PQbackendPID(jobq_native(w)));
    assert_int_equal(th_sql_int(t->db, sql), 1);
    /* The backend is gone once the server no longer lists it. */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d",
             PQbackendPID(jobq_native(w)));
    for (int i = 0; i < 500 && th_sql_int(t->db, sql) > 0; i++) th_sleep_ms(10);
    if (round == 0) {
      size_t n;
      jobq_job *jobs = th_claim(s, "again", 10, &n);
      assert_int_equal(n, 1);
      jobq_jobs_free(jobs, n);
    } else {
      th_put(w, "again", "2");
    }
  }
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 2);
  jobq_session_close(s);
  jobq_close(w);
}

/* ---------------------------------------------------------------- round trips */

/* Starts counting the round trips of db's connection (libpq's trace of
 * the messages it sends): round_trips() gives the count so far. */
static FILE *trace_start(jobq *db) {
  FILE *f = tmpfile();
  assert_non_null(f);
  PQtrace(jobq_native(db), f);
  PQsetTraceFlags(jobq_native(db), PQTRACE_SUPPRESS_TIMESTAMPS);
  return f;
}

/* Each round trip ends with one Sync (extended protocol: one statement,
 * or a pipeline of them) or is one Query (simple protocol). */
static int round_trips(jobq *db, FILE *f) {
  PQuntrace(jobq_native(db));
  rewind(f);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    char *msg = strchr(line, '\t');
    msg = msg ? strchr(msg + 1, '\t') : NULL;
    if (line[0] == 'F' && msg != NULL &&
        (strncmp(msg + 1, "Sync", 4) == 0 || strncmp(msg + 1, "Query", 5) == 0))
      n++;
  }
  fclose(f);
  return n;
}

/* Puts jobs of keys a, b, a into queue, the first with unique key unique
 * (NULL: none); the round trips it took.  Checks that each id that came
 * back late is its job's, in the state its key gives it. */
static int put_keys(jobq *db, const char *queue, const char *unique) {
  static const char *const keys[] = {"a", "b", "a"};
  jobq_put_opts o[3];
  int64_t ids[3];
  for (int i = 0; i < 3; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = queue;
    o[i].key = keys[i];
  }
  o[0].unique_key = unique;
  FILE *f = trace_start(db);
  assert_rc(jobq_put_many(db, o, 3, ids, NULL), JOBQ_OK);
  int n = round_trips(db, f);
  for (int i = 0; i < 3; i++) {
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM jobq_jobs WHERE id = %lld AND queue = '%s' AND order_key = "
             "'%s' AND state = '%s'",
             (long long)ids[i], queue, keys[i], i < 2 ? "ready" : "waiting");
    assert_int_equal(th_sql_int(db, sql), 1);
  }
  return n;
}

/* Puts three jobs of max_attempts into queue, claims them and fails them
 * in one batch, to run again in an hour; the round trips of the batch.
 * Checks that each went as outcome says. */
static int fail_three(jobq *db, jobq_session *s, const char *queue, int max_attempts,
                      int outcome) {
  jobq_put_opts o[3];
  int64_t ids[3];
  for (int i = 0; i < 3; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = queue;
    o[i].max_attempts = max_attempts;
  }
  assert_rc(jobq_put_many(db, o, 3, ids, NULL), JOBQ_OK);
  size_t n;
  jobq_job *jobs = th_claim(s, queue, 3, &n);
  assert_int_equal(n, 3);
  jobq_ack acks[3];
  for (size_t i = 0; i < n; i++) {
    jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_FAIL);
    acks[i].retry_in_ms = 3600000;
  }
  FILE *f = trace_start(db);
  assert_rc(jobq_ack_many(s, acks, 3), JOBQ_OK);
  int trips = round_trips(db, f);
  for (size_t i = 0; i < 3; i++) {
    assert_rc(acks[i].status, JOBQ_OK);
    assert_int_equal(acks[i].outcome, outcome);
  }
  jobq_jobs_free(jobs, n);
  return trips;
}

/* The round trips of each kind of transaction, once its statements are
 * prepared: the queue's lock, the queues made sure of, an
 * acknowledgement's lock on its session, the held-back starts and a
 * put's insert go with the next statement; the BEGIN with the first;
 * NOTIFY with the COMMIT. */
static void test_round_trips(void **state) {
  tq *t = *state;
  jobq_session *s = th_session(t->db, 60000);
  jobq_put_opts o[3];
  for (int i = 0; i < 3; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "rt";
    o[i].payload = "x";
    o[i].payload_len = 1;
  }
  int64_t ids[3];
  /* Once each first: every statement is prepared on first use. */
  for (int round = 0; round < 2; round++) {
    FILE *f = trace_start(t->db);
    th_put(t->db, "rt", "one");
    int put = round_trips(t->db, f);
    f = trace_start(t->db);
    assert_rc(jobq_put_many(t->db, o, 3, ids, NULL), JOBQ_OK);
    int put_many = round_trips(t->db, f);
    int put_keyed = put_keys(t->db, round ? "rtk" : "rtk0", NULL);
    int put_general = put_keys(t->db, round ? "rtu" : "rtu0", "u");
    size_t n;
    f = trace_start(t->db);
    jobq_job *jobs = th_claim(s, "rt", 4, &n);
    int claim = round_trips(t->db, f);
    assert_int_equal(n, 4);
    jobq_ack acks[4];
    for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    f = trace_start(t->db);
    assert_rc(jobq_ack_many(s, acks, 3), JOBQ_OK);
    int ack_many = round_trips(t->db, f);
    f = trace_start(t->db);
    assert_rc(jobq_complete(s, &jobs[3], "r", 1, NULL), JOBQ_OK);
    int complete = round_trips(t->db, f);
    for (size_t i = 0; i < 3; i++) assert_rc(acks[i].status, JOBQ_OK);
    jobq_jobs_free(jobs, n);
    /* A worker's rhythm: the last job's completion with the next claim. */
    th_put(t->db, "rt", "next");
    jobs = th_claim(s, "rt", 1, &n);
    assert_int_equal(n, 1);
    jobq_ack_init(&acks[0], &jobs[0], JOBQ_ACK_COMPLETE);
    jobq_job *next;
    size_t nnext;
    const char *rt = "rt";
    f = trace_start(t->db);
    assert_rc(jobq_ack_claim(s, acks, 1, &rt, 1, 1, &next, &nnext), JOBQ_OK);
    int ack_claim = round_trips(t->db, f);
    assert_rc(acks[0].status, JOBQ_OK);
    assert_int_equal(nnext, 0);
    jobq_jobs_free(next, nnext);
    jobq_jobs_free(jobs, n);
    /* Failures, each back to its queue for an hour; then failures on
     * their only attempt, dead. */
    int fail_many = fail_three(t->db, s, "rtf", 25, JOBQ_STATE_READY);
    int dead_many = fail_three(t->db, s, "rtd", 1, JOBQ_STATE_DEAD);
    if (round == 0) continue;
    /* BEGIN, the queue made sure of, its lock, the insert (which checks
     * for a barrier itself), NOTIFY and COMMIT, the ids read back after
     * them. */
    assert_int_equal(put, 1);
    /* The same for many. */
    assert_int_equal(put_many, 1);
    /* Keyed jobs a, b, a: as many, with the keys' locks before the
     * insert, which looks at the keys itself. */
    assert_int_equal(put_keyed, 1);
    /* The same with a unique key on the first: BEGIN with the look for
     * the batch's unique keys (UNIQUES_FIND); then the keyed jobs' insert
     * as above, with the NOTIFY and the COMMIT (6 when a batch with a
     * unique key went one job at a time). */
    assert_int_equal(put_general, 2);
    /* BEGIN with the identity and the session; the claim with the
     * COMMIT.  At most once a second, a look at the planner's
     * statistics. */
    assert_in_range(claim, 2, 3);
    /* BEGIN, the session's lock and the queues' locks with the
     * completions; COMMIT.  One completion goes the same way. */
    assert_int_equal(ack_many, 2);
    assert_int_equal(complete, 2);
    /* BEGIN with the identity and the session; the queues' locks with the
     * completions; the claim with the counters and the COMMIT. */
    assert_in_range(ack_claim, 3, 4);
    /* BEGIN with the identity, the session's lock and the three rows
     * read and locked; the three sent back; COMMIT. */
    assert_int_equal(fail_many, 3);
    /* BEGIN with the identity, the session's lock and the rows; the
     * queue's lock with its look for a barrier; the three archived in
     * one statement; the look for a waiting barrier; the counters with
     * the COMMIT (12 when each was archived on its own). */
    assert_int_equal(dead_many, 5);
  }
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'rtf' AND "
                                     "state = 'ready' AND session IS NULL AND attempts = 1 "
                                     "AND run_at > created_at + 3000000"),
                   6);
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done WHERE outcome = 'done'"), 10);
  jobq_session_close(s);
}

/* A commit that fails after the claim ran undid the claim, and the claim
 * says so; a connection that breaks in the commit leaves the claim to
 * read its outcome back (lib/claim.c), and the claimer finds its job
 * ready again.  A deferred trigger fails the commit, then ends its own
 * connection. */
static void test_a_claim_whose_commit_fails(void **state) {
  tq *t = *state;
  int64_t id = th_put(t->db, "cf", "x");
  jobq *w = th_open(t->url);
  jobq_session *s = th_session(w, 60000);
  command(t->db,
          "CREATE FUNCTION cf_refuse() RETURNS trigger LANGUAGE plpgsql AS "
          "$$ BEGIN RAISE EXCEPTION 'commit refused'; END $$");
  command(t->db,
          "CREATE CONSTRAINT TRIGGER cf AFTER UPDATE ON jobq_jobs DEFERRABLE "
          "INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cf_refuse()");
  const char *q = "cf";
  jobq_job *j = NULL;
  size_t n = 9;
  assert_rc(jobq_claim(s, &q, 1, 1, &j, &n), JOBQ_EDB);
  assert_int_equal(n, 0);
  assert_null(j);
  th_assert_msg(w, "commit refused");
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_READY);

  command(t->db,
          "CREATE OR REPLACE FUNCTION cf_refuse() RETURNS trigger LANGUAGE plpgsql AS "
          "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); "
          "RETURN NULL; END $$");
  assert_rc(jobq_claim(s, &q, 1, 1, &j, &n), JOBQ_ECONN);
  assert_int_equal(n, 0);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_READY);

  command(t->db, "DROP TRIGGER cf ON jobq_jobs");
  j = th_claim_one(s, "cf");
  assert_int_equal(j->id, id);
  assert_rc(jobq_complete(s, j, NULL, 0, NULL), JOBQ_OK);
  assert_int_equal(th_state(t->db, id), JOBQ_STATE_DONE);
  jobq_jobs_free(j, 1);
  jobq_session_close(s);
  jobq_close(w);
}

/* A claim sent with its commit whose reply was lost: no job is known, so
 * none is handed over, but the commit went through.  The claim's tokens
 * share their start, and by it the session's next transaction, a
 * heartbeat or a claim, gives those jobs back, and only those. */
static void test_a_claim_committed_unseen(void **state) {
  tq *t = *state;
  int64_t ids[4];
  for (int i = 0; i < 4; i++) ids[i] = th_put(t->db, "cu", "x");
  jobq_session *s = th_session(t->db, 60000);
  jobq_job *held = th_claim_one(s, "cu");
  assert_int_equal(held->id, ids[0]);
  const char *q = "cu";
  for (int round = 0; round < 2; round++) {
    jobq_job *j = NULL;
    size_t n = 9;
    setenv("JOBQ_FAILPOINT", "claim.sent-commit=error", 1);
    assert_rc(jobq_claim(s, &q, 1, 2, &j, &n), JOBQ_ECONN);
    unsetenv("JOBQ_FAILPOINT");
    assert_int_equal(n, 0);
    assert_null(j);
    assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE state = "
                                       "'running' AND attempts = 1"), 3);
    assert_int_equal(th_sql_int(t->db, "SELECT count(DISTINCT substr(claim, 1, 16)) FROM "
                                       "jobq_jobs WHERE state = 'running'"), 2);
    if (round == 0) {
      assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
      assert_int_equal(th_state(t->db, ids[1]), JOBQ_STATE_READY);
      assert_int_equal(th_state(t->db, ids[2]), JOBQ_STATE_READY);
    }
  }
  /* The next claim gives them back and takes all three. */
  size_t n;
  jobq_job *j = th_claim(s, "cu", 4, &n);
  assert_int_equal(n, 3);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(j[k].id, ids[k + 1]);
    assert_int_equal(j[k].attempt, 1);
    assert_rc(jobq_complete(s, &j[k], NULL, 0, NULL), JOBQ_OK);
  }
  jobq_jobs_free(j, n);
  /* The job claimed before was never in doubt. */
  assert_int_equal(th_state(t->db, ids[0]), JOBQ_STATE_RUNNING);
  assert_rc(jobq_complete(s, held, NULL, 0, NULL), JOBQ_OK);
  jobq_jobs_free(held, 1);
  jobq_session_close(s);
}

/* A statement sent later (the queue's shared lock of a put) that times
 * out waiting: the put fails with its error, and nothing of it stays. */
static void test_a_lock_sent_later_that_times_out(void **state) {
  tq *t = *state;
  char url[sizeof t->url + 32];
  snprintf(url, sizeof url, "%s&statement_timeout=200ms", t->url);
  jobq *w = th_open(url);
  th_put(w, "held", "before");
  /* A barrier's put holds the queue's lock, exclusive, until commit. */
  jobq_put_opts b;
  jobq_put_opts_init(&b);
  b.queue = "held";
  b.barrier = 1;
  int64_t id;
  assert_rc(jobq_begin(t->db), JOBQ_OK);
  assert_rc(jobq_put(t->db, &b, &id, NULL), JOBQ_OK);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = "held";
  o.payload = "waits";
  o.payload_len = 5;
  assert_rc(jobq_put(w, &o, &id, NULL), JOBQ_EBUSY);
  th_assert_msg(w, "lock");
  assert_rc(jobq_rollback(t->db), JOBQ_OK);
  assert_int_equal(th_sql_int(w, "SELECT count(*) FROM jobq_jobs"), 1);
  /* The connection goes on. */
  th_put(w, "held", "after");
  assert_int_equal(th_sql_int(w, "SELECT count(*) FROM jobq_jobs"), 2);
  jobq_close(w);
}

/* A put's INSERT, held to go with the COMMIT, that the server refuses:
 * the put fails with the INSERT's error, gives no id, leaves nothing, and
 * the connection goes on.  One job and many take the same path. */
static void test_a_held_insert_that_fails(void **state) {
  tq *t = *state;
  command(t->db, "ALTER TABLE jobq_jobs ADD CONSTRAINT no_refused "
                 "CHECK (payload <> '\\x72656675736564'::bytea)");
  jobq_put_opts o[2];
  for (int i = 0; i < 2; i++) {
    jobq_put_opts_init(&o[i]);
    o[i].queue = "held";
    o[i].payload = i == 0 ? "fine" : "refused";
    o[i].payload_len = strlen(o[i].payload);
  }
  int64_t ids[2] = {-1, -1};
  assert_rc(jobq_put(t->db, &o[1], &ids[0], NULL), JOBQ_EDB);
  th_assert_msg(t->db, "no_refused");
  assert_int_equal(ids[0], -1);
  assert_rc(jobq_put_many(t->db, o, 2, ids, NULL), JOBQ_EDB);
  th_assert_msg(t->db, "no_refused");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 0);
  command(t->db, "ALTER TABLE jobq_jobs DROP CONSTRAINT no_refused");
  /* The connection goes on, and the ids come back with the commit. */
  assert_rc(jobq_put_many(t->db, o, 2, ids, NULL), JOBQ_OK);
  assert_true(ids[0] > 0 && ids[1] == ids[0] + 1);
  jobq_job_info *j;
  assert_rc(jobq_show(t->db, ids[1], &j), JOBQ_OK);
  assert_memory_equal(j->payload, "refused", 7);
  jobq_info_free(j, 1);
}

/* Runs sql, which must fail with SQLSTATE state and a message holding
 * needle. */
static void refused(jobq *db, const char *sql, const char *state, const char *needle) {
  PGresult *res = PQexec(jobq_native(db), sql);
  const char *got = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  if (got == NULL || strcmp(got, state) != 0 || strstr(PQresultErrorMessage(res), needle) == NULL)
    fail_msg("%s: expected SQLSTATE %s and '%s', got %s: %s", sql, state, needle,
             got ? got : "success", PQresultErrorMessage(res));
  PQclear(res);
}

/* The jobq_put() SQL function takes times in the range the library
 * takes (jobq.h), names the argument that is out of it, and writes
 * nothing. */
static void test_the_sql_put_takes_the_one_range_of_times(void **state) {
  tq *t = *state;
  refused(t->db, "SELECT jobq_put('times', 'x', delay_ms => 9223372036854775807)", "22023",
          "invalid jobq_put argument delay_ms => 9223372036854775807");
  refused(t->db, "SELECT jobq_put('times', 'x', delay_ms => 3153600000001)", "22023",
          "100 years");
  refused(t->db, "SELECT jobq_put('times', 'x', delay_ms => -1)", "22023", "delay_ms");
  refused(t->db, "SELECT jobq_put('times', 'x', timeout_ms => 9223372036854775807)", "22023",
          "invalid jobq_put argument timeout_ms");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs"), 0);
  int64_t id = th_sql_int(t->db, "SELECT jobq_put('times', 'x', delay_ms => 3153600000000, "
                                 "timeout_ms => 3153600000000)");
  jobq_job_info *j;
  assert_rc(jobq_show(t->db, id, &j), JOBQ_OK);
  assert_true(j->run_at_ms > j->created_at_ms + 3153599000000);
  assert_true(j->run_at_ms < JOBQ_TIME_MAX_MS);
  jobq_info_free(j, 1);
}

/* ---------------------------------------------------------------- connections */

/* The test server's folder (its Unix socket is there) and the script that
 * restarts it, or a skip that says why not. */
static const char *server_dir(void) {
  const char *dir = getenv("JOBQ_TEST_PG_DIR");
  if (dir == NULL || *dir == '\0') {
    print_message("skipped: JOBQ_TEST_PG_DIR (the test server's folder) is not set\n");
    skip();
  }
  if (access("tests/pgserver.sh", X_OK) != 0) {
    print_message("skipped: tests/pgserver.sh not found: run from the source tree\n");
    skip();
  }
  return dir;
}

/* The LISTEN connections of application app on the server. */
static int64_t listeners(const char *url, const char *app) {
  jobq *db = th_open(url);
  char sql[160];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s' AND "
           "query = 'LISTEN jobq'",
           app);
  int64_t n = th_sql_int(db, sql);
  jobq_close(db);
  return n;
}

/* A handle keeps what its URL says about connecting, libpq's options
 * among them, for every connection it makes again: after a restart of
 * the server under it, its puts go on (the first may find the old
 * connection gone) and its wake-ups come back on the descriptor it gave
 * first, which meanwhile does not stay readable.  (The options' names
 * were once borrowed from the parsed URL, freed when jobq_open()
 * returned: every later connection failed, and the sanitizers saw a use
 * after free.) */
static void test_a_restart_under_a_handle_with_url_options(void **state) {
  tq *t = *state;
  const char *dir = server_dir();
  char app[64], url[sizeof t->url + 256], cmd[PATH_MAX + 64];
  snprintf(app, sizeof app, "jq_restart_%d", (int)getpid());
  snprintf(url, sizeof url,
           "%s&connect_timeout=2&target_session_attrs=read-write&sslmode=prefer&keepalives=1"
           "&application_name=%s",
           t->url, app);
  jobq *h = th_open(url);
  int fd;
  assert_rc(jobq_watch(h, &fd), JOBQ_OK);
  th_put(h, "r", "before");
  assert_int_equal(listeners(t->url, app), 1);
  snprintf(cmd, sizeof cmd, "tests/pgserver.sh restart '%s'", dir);
  assert_int_equal(system(cmd), 0);
  int ok = 0;
  for (int i = 0; i < 5; i++) {
    jobq_put_opts o;
    jobq_put_opts_init(&o);
    o.queue = "r";
    int64_t id;
    int rc = jobq_put(h, &o, &id, NULL);
    if (rc == JOBQ_OK)
      ok++;
    else if (rc != JOBQ_ECONN)
      fail_msg("put after the restart: %s: %s", jobq_err_name(rc), jobq_errmsg(h));
  }
  assert_true(ok >= 4);
  /* Until the wake-up connection is back, jobq_changed() says so; the
   * descriptor is not readable for a connection that is gone. */
  int back = 0;
  for (int64_t end = th_mono_ms() + 20000; !back && th_mono_ms() < end;) {
    int rc = jobq_changed(h);
    if (rc < 0) {
      assert_int_equal(rc, JOBQ_ECONN);
      th_assert_msg(h, "no wake-ups");
      struct pollfd p = {fd, POLLIN, 0};
      assert_int_equal(poll(&p, 1, 100), 0);
    }
    back = rc >= 0 && listeners(t->url, app) == 1;
  }
  assert_true(back);
  int again;
  assert_rc(jobq_watch(h, &again), JOBQ_OK);
  assert_int_equal(again, fd);
  /* and another connection's put wakes it. */
  while (jobq_changed(h) > 0) {
  }
  jobq *other = th_open(t->url);
  th_put(other, "r", "wake");
  jobq_close(other);
  struct pollfd p = {fd, POLLIN, 0};
  assert_int_equal(poll(&p, 1, 5000), 1);
  assert_int_equal(jobq_changed(h), 1);
  jobq_close(h);
}

/* A connection to a server that went away without a word is found
 * broken within about half a minute: TCP keepalives and a limit on
 * unacknowledged data, unless the URL sets its own. */
static void test_a_silent_server_is_noticed(void **state) {
  tq *t = *state;
  int fd = PQsocket(jobq_native(t->db)), v;
  socklen_t len = sizeof v;
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len), 0);
  assert_int_equal(v, 10);
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, &len), 0);
  assert_int_equal(v, 5);
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &len), 0);
  assert_int_equal(v, 30000);
  char url[sizeof t->url + 64];
  snprintf(url, sizeof url, "%s&keepalives_idle=60s&tcp_user_timeout=0", t->url);
  jobq *db = th_open(url);
  fd = PQsocket(jobq_native(db));
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len), 0);
  assert_int_equal(v, 60);
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &len), 0);
  assert_int_equal(v, 0);
  jobq_close(db);
}

/* The server's Unix socket, in libpq's forms: a path as the URL's host,
 * as an option, and the keyword/value string, with libpq's options= for
 * the server's settings. */
static void test_a_unix_socket_and_libpq_options(void **state) {
  tq *t = *state;
  const char *dir = server_dir();
  const char *schema = strstr(t->url, "schema=") + 7;
  const char *port = strstr(t->url, "@127.0.0.1:") + 11;
  char enc[PATH_MAX * 3], urls[3][PATH_MAX * 3 + 256];
  size_t o = 0;
  for (const char *c = dir; *c && o + 4 < sizeof enc; c++)
    o += (size_t)(*c == '/' ? snprintf(enc + o, 4, "%%2F") : snprintf(enc + o, 2, "%c", *c));
  int plen = (int)strcspn(port, "/");
  snprintf(urls[0], sizeof urls[0], "postgres://jobq@%s:%.*s/jobq?schema=%s&options=-c%%20work_mem%%3D7MB",
           enc, plen, port, schema);
  snprintf(urls[1], sizeof urls[1],
           "postgres:///jobq?host=%s&port=%.*s&user=jobq&schema=%s&options=-c%%20work_mem%%3D7MB",
           dir, plen, port, schema);
  snprintf(urls[2], sizeof urls[2],
           "host='%s' port=%.*s user=jobq dbname=jobq schema=%s options='-c work_mem=7MB'", dir,
           plen, port, schema);
  for (int i = 0; i < 3; i++) {
    jobq *db = th_open(urls[i]);
    th_put(db, "sock", "x");
    PGresult *res = rows_of(db, "SELECT current_setting('work_mem'), inet_server_addr() IS NULL");
    assert_string_equal(PQgetvalue(res, 0, 0), "7MB");
    assert_string_equal(PQgetvalue(res, 0, 1), "t"); /* not over TCP */
    PQclear(res);
    jobq_close(db);
  }
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_jobs WHERE queue = 'sock'"), 3);
}

/* Through a pooler in transaction mode (pooler=transaction), the next
 * transaction of a handle may run on another server connection, and the
 * one it ran on goes to other clients: nothing of a handle's may outlive
 * its transaction there.  Here on the server itself, the handle's one
 * connection shows what each transaction left: no prepared statement, no
 * setting, no lock, no LISTEN; inside a transaction of its own the
 * settings are there; and the puts, claims and acknowledgements work. */
static void test_a_pooled_handle_leaves_nothing_on_the_server(void **state) {
  tq *t = *state;
  char url[sizeof t->url + 32];
  snprintf(url, sizeof url, "%s&pooler=transaction", t->url);
  jobq *w = th_open(url);
  PGconn *pc = jobq_native(w);
  jobq_session *s = th_session(w, 60000);
  th_put_many(w, "pooled", 50, 0);
  drain(s, "pooled");
  assert_int_equal(th_sql_int(t->db, "SELECT count(*) FROM jobq_done WHERE queue = 'pooled'"), 50);
  jobq_queue_stats *st;
  size_t n;
  assert_rc(jobq_stats(w, &st, &n), JOBQ_OK);
  jobq_stats_free(st, n);
  jobq *r = NULL;
  assert_rc(jobq_open_readonly(url, &r), JOBQ_OK);
  assert_rc(jobq_stats(r, &st, &n), JOBQ_OK);
  jobq_stats_free(st, n);
  int fd;
  assert_rc(jobq_watch(w, &fd), JOBQ_ENOTSUP);
  if (!strstr(jobq_errmsg(w), "pooler=transaction"))
    fail_msg("the message does not say why: %s", jobq_errmsg(w));
  PGconn *conns[] = {pc, jobq_native(r)};
  for (size_t i = 0; i < 2; i++) {
    PGresult *res = PQexec(
        conns[i],
        "SELECT (SELECT count(*) FROM pg_prepared_statements), current_setting('search_path'), "
        "current_setting('statement_timeout'), current_setting('default_transaction_read_only'), "
        "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()), "
        "(SELECT count(*) FROM pg_listening_channels())");
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    const char *got[6], *want[6] = {"0", "\"$user\", public", "0", "off", "0", "0"};
    for (int c = 0; c < 6; c++) {
      got[c] = PQgetvalue(res, 0, c);
      if (strcmp(got[c], want[c]) != 0)
        fail_msg("connection %zu kept '%s' where '%s' was expected (column %d)", i, got[c],
                 want[c], c);
    }
    PQclear(res);
  }
  /* A transaction of the handle's has the settings. */
  assert_rc(jobq_begin(w), JOBQ_OK);
  PGresult *res = PQexec(pc, "SELECT current_setting('search_path'), "
                             "current_setting('statement_timeout'), current_setting('jit')");
  assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
  assert_non_null(strstr(PQgetvalue(res, 0, 0), strstr(t->url, "schema=") + 7));
  assert_string_equal(PQgetvalue(res, 0, 1), "30s");
  assert_string_equal(PQgetvalue(res, 0, 2), "off");
  PQclear(res);
  assert_rc(jobq_rollback(w), JOBQ_OK);
  jobq_close(r);
  jobq_session_close(s);
  jobq_close(w);
}

/* Through a pooler in transaction mode, the vacuums' lock is the look's
 * transaction's: a look still starts no vacuum while another holds the
 * lock, starts one once it is free, and keeps nothing on its connection
 * after it. */
static void test_a_pooled_claimer_vacuums_and_keeps_no_lock(void **state) {
  tq *t = *state;
  command(t->db, "ALTER TABLE jobq_jobs SET (autovacuum_enabled = false)");
  char url[sizeof t->url + 32];
  snprintf(url, sizeof url, "%s&pooler=transaction", t->url);
  jobq *w = th_open(url);
  jobq_session *s = th_session(w, 60000);
  make_dead_rows(t->db, w, s, "pv");
  PQclear(rows_of(t->db, "SELECT pg_advisory_lock(" VACUUM_LOCK ")"));
  int64_t before = vacuums(t->db);
  for (int i = 0; i < 30; i++) {
    th_claim_none(s, "pv");
    th_sleep_ms(100);
  }
  assert_int_equal(vacuums(t->db), before);
  PQclear(rows_of(t->db, "SELECT pg_advisory_unlock(" VACUUM_LOCK ")"));
  claim_until_vacuumed(t->db, s, "pv", before);
  assert_true(vacuum_lock_free(t->db));
  PGresult *res = rows_of(w, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                             "pid = pg_backend_pid()");
  assert_string_equal(PQgetvalue(res, 0, 0), "0");
  PQclear(res);
  jobq_session_close(s);
  jobq_close(w);
  command(t->db, "ALTER TABLE jobq_jobs RESET (autovacuum_enabled)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TQ_TEST(test_plans_made_on_an_emptied_table),
      TQ_TEST(test_no_statement_is_compiled),
      TQ_TEST(test_a_barrier_looks_for_earlier_jobs_in_the_queue_index),
      TQ_TEST(test_a_key_looks_for_its_jobs_in_the_key_index),
      TQ_TEST(test_statistics_that_fell_behind_are_renewed),
      TQ_TEST(test_statistics_never_taken_are_taken),
      TQ_TEST(test_a_full_batch_from_a_table_counted_empty_is_analyzed),
      TQ_TEST(test_an_archive_that_filled_after_a_purge_is_analyzed),
      TQ_TEST(test_a_burst_of_puts_into_an_emptied_table_is_analyzed),
      TQ_TEST(test_dead_rows_are_vacuumed_without_waiting_for_autovacuum),
      TQ_TEST(test_one_vacuum_at_a_time),
      TQ_TEST(test_the_callers_transaction_begins_at_once),
      TQ_TEST(test_a_connection_ended_by_the_server_is_made_again),
      TQ_TEST(test_round_trips),
      TQ_TEST(test_a_connection_that_changed_hands_is_named),
      TQ_TEST(test_a_pooled_handle_leaves_nothing_on_the_server),
      TQ_TEST(test_a_pooled_claimer_vacuums_and_keeps_no_lock),
      TQ_TEST(test_a_claim_whose_commit_fails),
      TQ_TEST(test_a_claim_committed_unseen),
      TQ_TEST(test_a_lock_sent_later_that_times_out),
      TQ_TEST(test_a_held_insert_that_fails),
      TQ_TEST(test_the_sql_put_takes_the_one_range_of_times),
      TQ_TEST(test_a_unix_socket_and_libpq_options),
      TQ_TEST(test_a_silent_server_is_noticed),
      /* Last: it restarts the server. */
      TQ_TEST(test_a_restart_under_a_handle_with_url_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
