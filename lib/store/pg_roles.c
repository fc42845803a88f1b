/*
 * pg_roles.c - the SQL of the least-privilege roles of a PostgreSQL
 * schema (jobq init --print-roles): what each role may read and write,
 * and the advisory locks kept to them.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "store/pg.h"

/* ---------------------------------------------------------------- roles */

/* %1$s: the schema, %2$s: the role prefix (jobq_, or jobq_SCHEMA_).
 * What each role may do, and why not less, is docs/security.md's. */
static const char roles_sql[] =
    "-- Least-privilege roles for the jobq schema \"%1$s\".  Run as the owner\n"
    "-- of its tables (the role that ran jobq init), and as a superuser for\n"
    "-- the advisory locks below; then grant a role to each login:\n"
    "--   CREATE ROLE app LOGIN PASSWORD '...' IN ROLE %2$sworker;\n"
    "--   ALTER ROLE app SET idle_in_transaction_session_timeout = '60s';\n"
    "-- None of them owns the tables, so none can drop or alter them.  What\n"
    "-- each may do, and what no grant can keep it from, is in jobq's\n"
    "-- docs/security.md.  Running this again changes nothing.\n"
    "DO $$ BEGIN\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sreader') THEN CREATE ROLE %2$sreader NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sproducer') THEN CREATE ROLE %2$sproducer NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sworker') THEN CREATE ROLE %2$sworker NOLOGIN; END IF;\n"
    "  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%2$sadmin') THEN CREATE ROLE %2$sadmin NOLOGIN; END IF;\n"
    "END $$;\n"
    "GRANT USAGE ON SCHEMA \"%1$s\" TO %2$sreader, %2$sproducer, %2$sworker, %2$sadmin;\n"
    "REVOKE ALL ON ALL TABLES IN SCHEMA \"%1$s\" FROM %2$sreader, %2$sproducer, %2$sworker,\n"
    "  %2$sadmin;\n"
    "REVOKE ALL ON ALL SEQUENCES IN SCHEMA \"%1$s\" FROM %2$sreader, %2$sproducer,\n"
    "  %2$sworker, %2$sadmin;\n"
    "REVOKE ALL ON FUNCTION \"%1$s\".jobq_put(text, bytea, integer, bigint, text, boolean,\n"
    "  text, integer, bigint, bigint) FROM PUBLIC;\n"
    "\n"
    "-- reader: jobq stats, ls, show, sessions, doctor, and dashboards.  It\n"
    "-- reads everything, payloads and results included, and writes nothing.\n"
    "GRANT SELECT ON \"%1$s\".jobq_meta, \"%1$s\".jobq_queues, \"%1$s\".jobq_counts,\n"
    "  \"%1$s\".jobq_sessions, \"%1$s\".jobq_jobs, \"%1$s\".jobq_done, \"%1$s\".jobq_blocked,\n"
    "  \"%1$s\".jobq_tally, \"%1$s\".jobq_attempts, \"%1$s\".jobq_cron, \"%1$s\".jobq_starts,\n"
    "  \"%1$s\".jobq_key_starts, \"%1$s\".jobq_after, \"%1$s\".jobq_parts,\n"
    "  \"%1$s\".jobq_claimers, \"%1$s\".jobq_jobs_id_seq TO %2$sreader;\n"
    "\n"
    "-- producer: jobq put, jobq_put(), and the jobq_put() SQL function.  It\n"
    "-- sees the unfinished jobs' queues, keys and states, to put its own in\n"
    "-- order, not their payloads; it writes what a new job is (not how its\n"
    "-- work stands: session, claim, attempts) and new queues (not their\n"
    "-- settings).\n"
    "GRANT SELECT ON \"%1$s\".jobq_meta, \"%1$s\".jobq_queues, \"%1$s\".jobq_blocked\n"
    "  TO %2$sproducer;\n"
    "GRANT SELECT (id, queue, state, order_key, barrier, unique_key, session)\n"
    "  ON \"%1$s\".jobq_jobs TO %2$sproducer;\n"
    "-- the id and queue of finished jobs: a producer's put, read back after\n"
    "-- a reconnection, proves the database still has it.\n"
    "GRANT SELECT (id, queue) ON \"%1$s\".jobq_done TO %2$sproducer;\n"
    "-- jobs put after others (--after): the parents' states and a mark on\n"
    "-- their rows, the edges, and the new jobs made pending.  A put naming\n"
    "-- a parent that is already dead or cancelled cancels its job at once,\n"
    "-- which takes the admin role.\n"
    "GRANT SELECT (outcome) ON \"%1$s\".jobq_done TO %2$sproducer;\n"
    "GRANT UPDATE (children, state, parents_left) ON \"%1$s\".jobq_jobs TO %2$sproducer;\n"
    "GRANT SELECT, INSERT ON \"%1$s\".jobq_after TO %2$sproducer;\n"
    "GRANT INSERT (name, created_at) ON \"%1$s\".jobq_queues TO %2$sproducer;\n"
    "GRANT INSERT (queue, priority, run_at, state, order_key, barrier, unique_key, payload,\n"
    "  max_attempts, timeout_ms, backoff_ms, created_at, part) ON \"%1$s\".jobq_jobs TO %2$sproducer;\n"
    "GRANT USAGE, SELECT ON \"%1$s\".jobq_jobs_id_seq TO %2$sproducer;\n"
    "GRANT EXECUTE ON FUNCTION \"%1$s\".jobq_put(text, bytea, integer, bigint, text, boolean,\n"
    "  text, integer, bigint, bigint) TO %2$sproducer;\n"
    "-- And jobq cron run: the jobs of the schedules' slots (a foreman puts\n"
    "-- them when its login is a producer too).\n"
    "GRANT SELECT, UPDATE (next_at, last_at, last_error, updated_at) ON \"%1$s\".jobq_cron\n"
    "  TO %2$sproducer;\n"
    "\n"
    "-- worker: sessions, claims, acknowledgements, reaping (jobq work).  It\n"
    "-- changes how a job's work stands, not what the job is, and cannot ask\n"
    "-- to cancel one; it archives only jobs that a session held.\n"
    "GRANT %2$sreader TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_sessions TO %2$sworker;\n"
    "GRANT UPDATE (state, session, claim, claimed_at, deadline_at, attempts, run_at,\n"
    "  last_error, prev_lost, started, parents_left), DELETE ON \"%1$s\".jobq_jobs\n"
    "  TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_done TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_counts TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_blocked TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_tally TO %2$sworker;\n"
    "-- the claims of a rate-limited queue's last period (jobq limit)\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_starts TO %2$sworker;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_key_starts TO %2$sworker;\n"
    "GRANT INSERT ON \"%1$s\".jobq_attempts TO %2$sworker;\n"
    "-- the parts a session leases and the queues it claims from (jobq parts)\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_parts, \"%1$s\".jobq_claimers TO %2$sworker;\n"
    "GRANT USAGE ON \"%1$s\".jobq_attempts_id_seq TO %2$sworker;\n"
    "-- the stall guard's look, which any reaper records\n"
    "GRANT UPDATE (guard_at) ON \"%1$s\".jobq_meta TO %2$sworker;\n"
    "\n"
    "-- admin: retry, cancel, pause, prune, purge, epoch bump, and the\n"
    "-- others' rights.\n"
    "GRANT %2$sproducer, %2$sworker TO %2$sadmin;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_jobs, \"%1$s\".jobq_queues,\n"
    "  \"%1$s\".jobq_done, \"%1$s\".jobq_blocked, \"%1$s\".jobq_counts, \"%1$s\".jobq_attempts\n"
    "  TO %2$sadmin;\n"
    "GRANT UPDATE ON \"%1$s\".jobq_meta TO %2$sadmin;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_cron TO %2$sadmin;\n"
    "GRANT INSERT, UPDATE, DELETE ON \"%1$s\".jobq_after TO %2$sadmin;\n"
    "\n"
    "-- The archive takes from a worker only the jobs that a session held, so\n"
    "-- that a worker cannot cancel a job that is waiting for its turn; and\n"
    "-- the jobs put after others, which the death of a parent cancels.\n"
    "ALTER TABLE \"%1$s\".jobq_done ENABLE ROW LEVEL SECURITY;\n"
    "DROP POLICY IF EXISTS jobq_read ON \"%1$s\".jobq_done;\n"
    "DROP POLICY IF EXISTS jobq_held ON \"%1$s\".jobq_done;\n"
    "DROP POLICY IF EXISTS jobq_admin ON \"%1$s\".jobq_done;\n"
    "CREATE POLICY jobq_read ON \"%1$s\".jobq_done FOR SELECT TO %2$sreader, %2$sproducer\n"
    "  USING (true);\n"
    "CREATE POLICY jobq_held ON \"%1$s\".jobq_done FOR INSERT TO %2$sworker\n"
    "  WITH CHECK (session IS NOT NULL OR (outcome = 'cancelled' AND EXISTS (SELECT 1 FROM\n"
    "  \"%1$s\".jobq_after a WHERE a.child = id)));\n"
    "CREATE POLICY jobq_admin ON \"%1$s\".jobq_done TO %2$sadmin USING (true) WITH CHECK (true);\n"
    "\n"
    "-- Advisory locks.  jobq names its locks with them, and PostgreSQL lets\n"
    "-- any login of the database take any of them: one that may only read\n"
    "-- could hold a queue's lock and stop every put to the queue.  Run by a\n"
    "-- superuser, this takes them from PUBLIC in this database and gives the\n"
    "-- ones jobq takes to its roles and to the owner of its tables.  Another\n"
    "-- application of this database that takes advisory locks needs them\n"
    "-- back:  GRANT EXECUTE ON FUNCTION pg_advisory_lock(bigint) TO its_role;\n"
    "DO $$ DECLARE\n"
    "  owner name := (SELECT tableowner FROM pg_tables WHERE schemaname = '%1$s'\n"
    "                 AND tablename = 'jobq_meta');\n"
    "BEGIN\n"
    "  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN\n"
    "    RAISE WARNING 'not a superuser: any login may still take jobq''s advisory locks; run this file as a superuser to keep them to jobq''s roles';\n"
    "    RETURN;\n"
    "  END IF;\n"
    "  REVOKE EXECUTE ON FUNCTION pg_advisory_lock(bigint), pg_advisory_lock_shared(bigint),\n"
    "    pg_try_advisory_lock(bigint), pg_try_advisory_lock_shared(bigint),\n"
    "    pg_advisory_xact_lock(bigint), pg_advisory_xact_lock_shared(bigint),\n"
    "    pg_try_advisory_xact_lock(bigint), pg_try_advisory_xact_lock_shared(bigint) FROM PUBLIC;\n"
    "  EXECUTE format('GRANT EXECUTE ON FUNCTION pg_advisory_xact_lock(bigint), '\n"
    "    'pg_advisory_xact_lock_shared(bigint), pg_try_advisory_lock(bigint), '\n"
    "    'pg_try_advisory_xact_lock(bigint) TO %%I, %%I, %%I',\n"
    "    '%2$sproducer', '%2$sworker', owner);\n"
    "END $$;\n";

int pg_roles(jobq *db, char **out) {
  pg *c = pg_conn(db);
  char prefix[80];
  pg_role_prefix(c, prefix, sizeof prefix);
  size_t len = sizeof roles_sql + 64 * (strlen(c->schema) + strlen(prefix));
  char *sql = malloc(len);
  if (sql == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  snprintf(sql, len, roles_sql, c->schema, prefix);
  *out = sql;
  return JOBQ_OK;
}
