/*
 * my_schema.c - the MariaDB / MySQL store's schema: the text of each
 * version's steps, each with the check that lets an interrupted jobq init
 * run it again (a change of a table commits at once), which lib/migrate.c
 * runs; and the lock that keeps initialisers one at a time.
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- schema */

/* {bin} is the binary NO PAD collation of the server. */
static const jobq_step v1_steps[] = {
    {"CREATE TABLE IF NOT EXISTS jobq_queues ("
    "  name VARCHAR(63) NOT NULL PRIMARY KEY,"
    "  paused SMALLINT NOT NULL DEFAULT 0,"
    "  key_policy VARCHAR(8) NOT NULL DEFAULT 'block' CHECK (key_policy IN ('block','skip')),"
    "  created_at BIGINT NOT NULL"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_counts ("
    "  queue VARCHAR(63) NOT NULL,"
    "  shard SMALLINT NOT NULL,"
    "  n_done BIGINT NOT NULL DEFAULT 0,"
    "  n_dead BIGINT NOT NULL DEFAULT 0,"
    "  n_cancelled BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (queue, shard)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_sessions ("
    "  id VARCHAR(32) NOT NULL PRIMARY KEY,"
    "  epoch BIGINT NOT NULL,"
    "  name VARCHAR(255) NOT NULL,"
    "  host VARCHAR(255) NOT NULL,"
    "  pid BIGINT NOT NULL,"
    "  started_at BIGINT NOT NULL,"
    "  heartbeat_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  lease_ms BIGINT NOT NULL,"
    "  in_flight BIGINT NOT NULL DEFAULT 0,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  failed BIGINT NOT NULL DEFAULT 0,"
    "  INDEX jobq_sessions_expires (expires_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {/* The claim index: the claim's WHERE (queue, state) and its ORDER BY. */
    "CREATE TABLE IF NOT EXISTS jobq_jobs ("
    "  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  priority INT NOT NULL DEFAULT 0,"
    "  run_at BIGINT NOT NULL,"
    "  state VARCHAR(8) NOT NULL CHECK (state IN ('ready','running','waiting')),"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL DEFAULT 0,"
    "  unique_key VARCHAR(255),"
    "  payload LONGBLOB NOT NULL,"
    "  attempts INT NOT NULL DEFAULT 0,"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL DEFAULT 0,"
    "  backoff_ms BIGINT NOT NULL,"
    "  session VARCHAR(32),"
    "  claim VARCHAR(32),"
    "  claimed_at BIGINT,"
    "  deadline_at BIGINT,"
    "  created_at BIGINT NOT NULL,"
    "  last_error MEDIUMTEXT,"
    "  cancel_requested SMALLINT NOT NULL DEFAULT 0,"
    "  prev_lost SMALLINT NOT NULL DEFAULT 0,"
    "  started SMALLINT NOT NULL DEFAULT 1,"
    "  INDEX jobq_jobs_claim (queue, state, priority DESC, run_at, id),"
    "  INDEX jobq_jobs_session (session),"
    "  INDEX jobq_jobs_key (queue, order_key, state, id),"
    "  INDEX jobq_jobs_barrier (queue, barrier, id),"
    "  INDEX jobq_jobs_queue (queue, id),"
    "  UNIQUE INDEX jobq_jobs_unique (queue, unique_key)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_done ("
    "  id BIGINT NOT NULL PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  priority INT NOT NULL,"
    "  run_at BIGINT NOT NULL,"
    "  outcome VARCHAR(9) NOT NULL CHECK (outcome IN ('done','dead','cancelled')),"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL,"
    "  unique_key VARCHAR(255),"
    "  payload LONGBLOB NOT NULL,"
    "  result LONGBLOB,"
    "  attempts INT NOT NULL,"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL,"
    "  backoff_ms BIGINT NOT NULL,"
    "  session VARCHAR(32),"
    "  claim VARCHAR(32),"
    "  created_at BIGINT NOT NULL,"
    "  claimed_at BIGINT,"
    "  finished_at BIGINT NOT NULL,"
    "  last_error MEDIUMTEXT,"
    "  prev_lost SMALLINT NOT NULL DEFAULT 0,"
    "  INDEX jobq_done_finished (finished_at),"
    "  INDEX jobq_done_outcome (outcome, queue, id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_blocked ("
    "  queue VARCHAR(63) NOT NULL,"
    "  order_key VARCHAR(255) NOT NULL,"
    "  job_id BIGINT NOT NULL,"
    "  PRIMARY KEY (queue, order_key),"
    "  INDEX jobq_blocked_job (job_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {/* The named locks of lib/order.c, one row each. */
    "CREATE TABLE IF NOT EXISTS jobq_locks ("
    "  name VARBINARY(330) NOT NULL PRIMARY KEY"
    ") ENGINE=InnoDB", NULL},
    {NULL, NULL},
};

/* Version 2: the sessions' figures per minute (lib/tally.c) and the
 * attempts that ended without finishing their job. */
static const jobq_step v2_steps[] = {
    {"CREATE TABLE IF NOT EXISTS jobq_tally ("
    "  at_minute BIGINT NOT NULL,"
    "  session VARCHAR(32) NOT NULL,"
    "  queue VARCHAR(63) NOT NULL,"
    "  claimed BIGINT NOT NULL DEFAULT 0,"
    "  empty_claims BIGINT NOT NULL DEFAULT 0,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  failed BIGINT NOT NULL DEFAULT 0,"
    "  retried BIGINT NOT NULL DEFAULT 0,"
    "  dead BIGINT NOT NULL DEFAULT 0,"
    "  cancelled BIGINT NOT NULL DEFAULT 0,"
    "  wait_ms BIGINT NOT NULL DEFAULT 0,"
    "  w0 BIGINT NOT NULL DEFAULT 0,"
    "  w1 BIGINT NOT NULL DEFAULT 0,"
    "  w2 BIGINT NOT NULL DEFAULT 0,"
    "  w3 BIGINT NOT NULL DEFAULT 0,"
    "  w4 BIGINT NOT NULL DEFAULT 0,"
    "  w5 BIGINT NOT NULL DEFAULT 0,"
    "  w6 BIGINT NOT NULL DEFAULT 0,"
    "  w7 BIGINT NOT NULL DEFAULT 0,"
    "  w8 BIGINT NOT NULL DEFAULT 0,"
    "  w9 BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (at_minute, session, queue)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_attempts ("
    "  id BIGINT AUTO_INCREMENT PRIMARY KEY,"
    "  job_id BIGINT NOT NULL,"
    "  attempt INTEGER NOT NULL,"
    "  outcome VARCHAR(255) NOT NULL,"
    "  error TEXT,"
    "  session VARCHAR(255),"
    "  host VARCHAR(255),"
    "  claimed_at BIGINT,"
    "  ended_at BIGINT NOT NULL,"
    "  INDEX jobq_attempts_job (job_id),"
    "  INDEX jobq_attempts_ended (ended_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};

/* Version 3: the checks that no writer may pass, whatever its rights: a
 * running job has a session, and times are in the one range of jobq.h. */
#define CHECK_MADE(NAME)                                                          \
  "SELECT count(*) FROM information_schema.TABLE_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = " \
  "DATABASE() AND TABLE_NAME = 'jobq_jobs' AND CONSTRAINT_NAME = '" NAME "'"
static const jobq_step v3_steps[] = {
    {"ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_claimed CHECK (state <> 'running' OR "
     "session IS NOT NULL)",
     CHECK_MADE("jobq_jobs_claimed")},
    {"ALTER TABLE jobq_jobs ADD CONSTRAINT jobq_jobs_times CHECK (run_at BETWEEN 0 AND "
     "253402300799999 AND timeout_ms BETWEEN 0 AND 3153600000000)",
     CHECK_MADE("jobq_jobs_times")},
    {NULL, NULL},
};

/* Version 4: the stall guard's look (lib/session.c) and the horizon of
 * pruned jobs (lib/mark.c), in one change. */
static const jobq_step v4_steps[] = {
    {"ALTER TABLE jobq_meta ADD COLUMN guard_at BIGINT NOT NULL DEFAULT 0, ADD COLUMN "
     "pruned_before BIGINT NOT NULL DEFAULT 0",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_meta' AND COLUMN_NAME = 'guard_at'"},
    {NULL, NULL},
};

/* Version 5: the schedules of periodic jobs (lib/cron.c). */
static const jobq_step v5_steps[] = {{
    "CREATE TABLE IF NOT EXISTS jobq_cron ("
    "  name VARCHAR(63) NOT NULL PRIMARY KEY,"
    "  queue VARCHAR(63) NOT NULL,"
    "  spec VARCHAR(255) NOT NULL,"
    "  tz VARCHAR(255) NOT NULL,"
    "  payload LONGBLOB NOT NULL,"
    "  priority INT NOT NULL,"
    "  order_key VARCHAR(255),"
    "  barrier SMALLINT NOT NULL,"
    "  unique_key VARCHAR(255),"
    "  max_attempts INT NOT NULL,"
    "  timeout_ms BIGINT NOT NULL,"
    "  backoff_ms BIGINT NOT NULL,"
    "  skip_missed SMALLINT NOT NULL,"
    "  paused SMALLINT NOT NULL,"
    "  next_at BIGINT NOT NULL,"
    "  last_at BIGINT,"
    "  last_error TEXT,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  INDEX jobq_cron_next (next_at)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL}, {NULL, NULL}};
/* Version 6: the queues' limits and the claims of the last rate period
 * (lib/limit.c). */
static const jobq_step v6_steps[] = {
    {"ALTER TABLE jobq_queues ADD COLUMN max_running BIGINT, ADD COLUMN max_per_key BIGINT, "
     "ADD COLUMN rate_n BIGINT, ADD COLUMN rate_ms BIGINT",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_queues' AND COLUMN_NAME = 'max_running'"},
    {"CREATE TABLE IF NOT EXISTS jobq_starts ("
     "  queue VARCHAR(63) NOT NULL,"
     "  at BIGINT NOT NULL,"
     "  n BIGINT NOT NULL,"
     "  PRIMARY KEY (queue, at)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};

/* Version 7: the finished-job counters by session (lib/counts.c), in
 * one change: a session adds to rows of its own, so that no two
 * sessions wait on one row. */
static const jobq_step v7_steps[] = {
    {"ALTER TABLE jobq_counts ADD COLUMN session VARCHAR(32) NOT NULL DEFAULT '', DROP "
     "PRIMARY KEY, ADD PRIMARY KEY (session, queue, shard)",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_counts' AND COLUMN_NAME = 'session'"},
    {NULL, NULL},
};
/* Version 8: dependencies (lib/after.c): the state 'pending' of a job
 * put after others, with the number of its parents not yet done and
 * whether others were put after it, and the edges between them. */
static const jobq_step v8_steps[] = {
    /* MySQL keeps a column's CHECK apart from the column, by the name it
     * gave it (the table's only unnamed check), and MODIFY would add a
     * second one: the first goes.  MariaDB replaces it with the column
     * and has no check of that name: the step is left out there. */
    {"ALTER TABLE jobq_jobs DROP CHECK jobq_jobs_chk_1",
     "SELECT count(*) = 0 FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = "
     "DATABASE() AND TABLE_NAME = 'jobq_jobs' AND CONSTRAINT_NAME = 'jobq_jobs_chk_1'"},
    {"ALTER TABLE jobq_jobs MODIFY state VARCHAR(8) NOT NULL CHECK (state IN "
     "('ready','running','waiting','pending')), ADD COLUMN parents_left INT NOT NULL DEFAULT 0, "
     "ADD COLUMN children SMALLINT NOT NULL DEFAULT 0",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_jobs' AND COLUMN_NAME = 'parents_left'"},
    {"CREATE TABLE IF NOT EXISTS jobq_after ("
     "  parent BIGINT NOT NULL,"
     "  child BIGINT NOT NULL,"
     "  any_outcome SMALLINT NOT NULL DEFAULT 0,"
     "  PRIMARY KEY (parent, child),"
     "  INDEX jobq_after_child (child, parent)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};
/* Version 9: parts (lib/part.c): a queue's count of parts, a job's part
 * (NULL while its queue has one), the parts' owners and the sessions
 * that claim from each partitioned queue. */
static const jobq_step v9_steps[] = {
    {"ALTER TABLE jobq_queues ADD COLUMN parts INT NOT NULL DEFAULT 1",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_queues' AND COLUMN_NAME = 'parts'"},
    {"ALTER TABLE jobq_jobs ADD COLUMN part INT, ADD INDEX jobq_jobs_part (queue, part, state, "
     "priority DESC, run_at, id)",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_jobs' AND COLUMN_NAME = 'part'"},
    {"CREATE TABLE IF NOT EXISTS jobq_parts ("
     "  queue VARCHAR(63) NOT NULL,"
     "  part INT NOT NULL,"
     "  session VARCHAR(32),"
     "  since BIGINT NOT NULL,"
     "  PRIMARY KEY (queue, part),"
     "  INDEX jobq_parts_session (session)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {"CREATE TABLE IF NOT EXISTS jobq_claimers ("
     "  queue VARCHAR(63) NOT NULL,"
     "  session VARCHAR(32) NOT NULL,"
     "  since BIGINT NOT NULL,"
     "  PRIMARY KEY (queue, session),"
     "  INDEX jobq_claimers_session (session)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};

/* Version 10: the rate limit per ordering key and the claims of each
 * key in the last period (lib/limit.c). */
static const jobq_step v10_steps[] = {
    {"ALTER TABLE jobq_queues ADD COLUMN key_rate_n BIGINT, ADD COLUMN key_rate_ms BIGINT",
     "SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
     "TABLE_NAME = 'jobq_queues' AND COLUMN_NAME = 'key_rate_n'"},
    {"CREATE TABLE IF NOT EXISTS jobq_key_starts ("
     "  queue VARCHAR(63) NOT NULL,"
     "  order_key VARCHAR(255) NOT NULL,"
     "  at BIGINT NOT NULL,"
     "  n BIGINT NOT NULL,"
     "  PRIMARY KEY (queue, order_key, at),"
     "  INDEX jobq_key_starts_at (queue, at)"
     ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}", NULL},
    {NULL, NULL},
};
static const jobq_step meta_steps[] = {{"CREATE TABLE IF NOT EXISTS jobq_meta ("
                                        "  id INT NOT NULL PRIMARY KEY CHECK (id = 1),"
                                        "  version INT NOT NULL,"
                                        "  queue_id VARCHAR(36) NOT NULL,"
                                        "  epoch BIGINT NOT NULL,"
                                        "  created_at BIGINT NOT NULL"
                                        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={bin}",
                                        NULL},
                                       {NULL, NULL}};
/* The steps of lib/migrate.c.  Every change of a table commits at once:
 * each step may run again after an interrupted init (IF NOT EXISTS, or
 * its check), and the version moves after each version's steps. */
const jobq_step *const my_versions[JOBQ_SCHEMA_VERSION + 1] = {meta_steps, v1_steps, v2_steps, v3_steps, v4_steps,
                                          v5_steps, v6_steps, v7_steps, v8_steps, v9_steps,
                                          v10_steps};
_Static_assert(sizeof my_versions / sizeof my_versions[0] == JOBQ_SCHEMA_VERSION + 1,
               "one migration per version");

/* ---------------------------------------------------------------- schema */

/* One initialiser at a time (tables are made outside transactions, each
 * change committed at once); the others then find it done.  No limit on
 * a statement's time meanwhile. */
int my_schema_begin(jobq *db) {
  my *c = my_conn(db);
  MYSQL_RES *res;
  MYSQL_ROW row = my_query_row(db, c->conn,
                            "SELECT GET_LOCK(CONCAT('jobq_init.', DATABASE()), 60)", &res,
                            "initialising the schema");
  if (row == NULL) return db->err;
  int locked = row[0] && strcmp(row[0], "1") == 0;
  mysql_free_result(res);
  if (!locked)
    return jobq__fail(db, JOBQ_EBUSY,
                      "initialising the schema of '%s': another jobq init held its lock "
                      "for a minute: try again",
                      c->redacted);
  return my_run_plain(db, c->mariadb ? "SET SESSION max_statement_time = 0"
                                  : "SET SESSION max_execution_time = 0",
                   "initialising the schema");
}

/* Back to the connection's own limit, and the lock given back. */
int my_schema_end(jobq *db, int ok) {
  (void)ok;
  my *c = my_conn(db);
  char sql[96];
  long long ms = (long long)c->statement_timeout_ms;
  if (c->mariadb)
    snprintf(sql, sizeof sql, "SET SESSION max_statement_time = %lld.%03lld", ms / 1000,
             ms % 1000);
  else
    snprintf(sql, sizeof sql, "SET SESSION max_execution_time = %lld", ms);
  if (!c->broken) mysql_real_query(c->conn, sql, strlen(sql));
  if (!c->broken) my_run_plain(db, "DO RELEASE_LOCK(CONCAT('jobq_init.', DATABASE()))", "");
  return JOBQ_OK;
}

/* Runs a schema statement with {bin} spelled as the server's collation. */
static int run_ddl(jobq *db, const char *ddl) {
  my *c = my_conn(db);
  const char *tok = strstr(ddl, "{bin}");
  if (tok == NULL) return my_run_plain(db, ddl, "creating the schema");
  size_t len = strlen(ddl) + strlen(c->collation) + 1;
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, "%.*s%s%s", (int)(tok - ddl), ddl, c->collation, tok + 5);
  int rc = my_run_plain(db, sql, "creating the schema");
  free(sql);
  return rc;
}

int my_schema_run(jobq *db, const char *sql, int64_t *first) {
  if (first == NULL) return run_ddl(db, sql);
  MYSQL_RES *res;
  MYSQL_ROW row = my_query_row(db, my_conn(db)->conn, sql, &res, "migrating the schema");
  if (row == NULL) return db->err;
  *first = row[0] ? strtoll(row[0], NULL, 10) : 0;
  mysql_free_result(res);
  return JOBQ_OK;
}
