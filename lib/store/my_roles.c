/*
 * my_roles.c - the SQL of the least-privilege roles of a MariaDB / MySQL
 * database (jobq init --print-roles).
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- roles */

/* %1$s the database, quoted; %2$s, %3$s ... the roles, quoted; %7$s how a
 * login's default role is set. */
static const char roles_sql[] =
    "-- Least-privilege roles for the jobq database %1$s.  Run as a user that may\n"
    "-- create roles and grant on it, then give a role to each login:\n"
    "--   CREATE USER 'app'@'%%' IDENTIFIED BY '...';\n"
    "--   GRANT %4$s TO 'app'@'%%';\n"
    "--   %7$s\n"
    "-- None of them may create, drop or alter tables.  What each may do, and\n"
    "-- what no grant can keep it from, is in jobq's docs/security.md.\n"
    "-- Running this again sets the roles' rights anew.\n"
    "CREATE ROLE IF NOT EXISTS %2$s;\n"
    "CREATE ROLE IF NOT EXISTS %3$s;\n"
    "CREATE ROLE IF NOT EXISTS %4$s;\n"
    "CREATE ROLE IF NOT EXISTS %5$s;\n"
    "REVOKE ALL PRIVILEGES, GRANT OPTION FROM %2$s, %3$s, %4$s, %5$s;\n"
    "\n"
    "-- reader: jobq stats, ls, show, sessions, doctor, and dashboards.  It\n"
    "-- reads everything, payloads and results included, and writes nothing.\n"
    "GRANT SELECT ON %1$s.jobq_meta TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_queues TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_counts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_sessions TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_jobs TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_done TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_blocked TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_tally TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_attempts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_cron TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_starts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_key_starts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_after TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_parts TO %2$s;\n"
    "GRANT SELECT ON %1$s.jobq_claimers TO %2$s;\n"
    "\n"
    "-- producer: jobq put and jobq_put().  It sees the unfinished jobs'\n"
    "-- queues, keys and states, to put its own in order, not their payloads;\n"
    "-- it writes what a new job is (not how its work stands: session,\n"
    "-- claim, attempts) and new queues (not their settings).\n"
    "GRANT SELECT ON %1$s.jobq_meta TO %3$s;\n"
    "GRANT SELECT, INSERT (name, created_at) ON %1$s.jobq_queues TO %3$s;\n"
    "GRANT SELECT (id, queue, state, order_key, barrier, unique_key, session),\n"
    "  INSERT (queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n"
    "  max_attempts, timeout_ms, backoff_ms, created_at, part) ON %1$s.jobq_jobs TO %3$s;\n"
    "GRANT SELECT ON %1$s.jobq_blocked TO %3$s;\n"
    "GRANT SELECT, INSERT, UPDATE ON %1$s.jobq_locks TO %3$s;\n"
    "-- the id and queue of finished jobs: a producer's put, read back after\n"
    "-- a reconnection, proves the database still has it.\n"
    "GRANT SELECT (id, queue) ON %1$s.jobq_done TO %3$s;\n"
    "-- jobs put after others (--after): the parents' states and a mark on\n"
    "-- their rows, the edges, and the new jobs made pending.  A put naming\n"
    "-- a parent that is already dead or cancelled cancels its job at once,\n"
    "-- which takes the admin role.\n"
    "GRANT SELECT (outcome) ON %1$s.jobq_done TO %3$s;\n"
    "GRANT SELECT (children, parents_left), UPDATE (children, state, parents_left)\n"
    "  ON %1$s.jobq_jobs TO %3$s;\n"
    "GRANT SELECT, INSERT ON %1$s.jobq_after TO %3$s;\n"
    "-- And jobq cron run: the jobs of the schedules' slots (a foreman puts\n"
    "-- them when its login is a producer too).\n"
    "GRANT SELECT, UPDATE (next_at, last_at, last_error, updated_at) ON %1$s.jobq_cron\n"
    "  TO %3$s;\n"
    "\n"
    "-- worker: sessions, claims, acknowledgements, reaping (jobq work).  It\n"
    "-- changes how a job's work stands, not what the job is, and cannot ask\n"
    "-- to cancel one.\n"
    "GRANT %2$s TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_sessions TO %4$s;\n"
    "GRANT UPDATE (state, session, claim, claimed_at, deadline_at, attempts, run_at,\n"
    "  last_error, prev_lost, started, parents_left), DELETE ON %1$s.jobq_jobs TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_done TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_counts TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_blocked TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_tally TO %4$s;\n"
    "-- the claims of a rate-limited queue's last period (jobq limit)\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_starts TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_key_starts TO %4$s;\n"
    "GRANT INSERT ON %1$s.jobq_attempts TO %4$s;\n"
    "-- the parts a session leases and the queues it claims from (jobq parts)\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_parts TO %4$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_claimers TO %4$s;\n"
    "GRANT SELECT, INSERT, UPDATE ON %1$s.jobq_locks TO %4$s;\n"
    "-- the stall guard's look, which any reaper records\n"
    "GRANT UPDATE (guard_at) ON %1$s.jobq_meta TO %4$s;\n"
    "\n"
    "-- admin: retry, cancel, pause, prune, purge, epoch bump, and the others'\n"
    "-- rights.\n"
    "GRANT %3$s TO %5$s;\n"
    "GRANT %4$s TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_jobs TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_queues TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_done TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_blocked TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_counts TO %5$s;\n"
    "GRANT DELETE ON %1$s.jobq_attempts TO %5$s;\n"
    "GRANT DELETE ON %1$s.jobq_locks TO %5$s;\n"
    "GRANT UPDATE ON %1$s.jobq_meta TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_cron TO %5$s;\n"
    "GRANT INSERT, UPDATE, DELETE ON %1$s.jobq_after TO %5$s;\n"
    "%6$s";

/* `name` with backticks doubled, into out. */
static void my_quote_ident(char *out, size_t size, const char *prefix, const char *name,
                        const char *suffix) {
  size_t o = 0;
  const char *parts[3] = {prefix, name, suffix};
  if (o + 1 < size) out[o++] = '`';
  for (int k = 0; k < 3; k++)
    for (const char *p = parts[k]; *p && o + 3 < size; p++) {
      if (*p == '`') out[o++] = '`';
      out[o++] = *p;
    }
  if (o + 1 < size) out[o++] = '`';
  out[o] = '\0';
}

int my_roles(jobq *db, char **out) {
  my *c = my_conn(db);
  char dbq[160], r[4][200], deflt[300];
  static const char *const kinds[4] = {"_reader", "_producer", "_worker", "_admin"};
  my_quote_ident(dbq, sizeof dbq, "", c->dbname, "");
  for (int k = 0; k < 4; k++) my_quote_ident(r[k], sizeof r[k], "jobq_", c->dbname, kinds[k]);
  snprintf(deflt, sizeof deflt,
           c->mariadb ? "SET DEFAULT ROLE %s FOR 'app'@'%%';"
                      : "SET DEFAULT ROLE %s TO 'app'@'%%';",
           r[2]);
  size_t len = sizeof roles_sql + 64 * (strlen(dbq) + strlen(r[1])) + sizeof deflt;
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, roles_sql, dbq, r[0], r[1], r[2], r[3], "", deflt);
  *out = sql;
  return JOBQ_OK;
}
