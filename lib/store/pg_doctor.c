/*
 * pg_doctor.c - what jobq doctor checks of a PostgreSQL server: durability
 * settings, replication, the oldest transaction holding vacuum back, and
 * the hot table's bloat.
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

/* ---------------------------------------------------------------- doctor */

/* Runs a query of the doctor's (no values) for its first row; NULL when
 * it returns none.  Caller PQclear()s. */
static PGresult *doctor_row(jobq *db, const char *sql) {
  const sendable q = {.id = -1, .sql = sql};
  PGresult *res = NULL;
  if (pg_exec_pending(db, &q, &res) != JOBQ_OK) return NULL;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    pg_fail(db, res, "checking the server");
    PQclear(res);
    return NULL;
  }
  return res;
}

int pg_doctor(jobq *db, jobq__checks *c) {
  PGresult *r = doctor_row(
      db,
      "SELECT current_setting('server_version'), current_setting('fsync'), "
      "(SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'), "
      "current_setting('full_page_writes'), current_setting('synchronous_standby_names'), "
      "current_setting('autovacuum')");
  if (r == NULL) return db->err;
  const char *version = PQgetvalue(r, 0, 0), *fsync = PQgetvalue(r, 0, 1);
  const char *sync = PQgetvalue(r, 0, 2), *fpw = PQgetvalue(r, 0, 3);
  const char *standbys = PQgetvalue(r, 0, 4), *autovacuum = PQgetvalue(r, 0, 5);
  jobq__check_add(c, JOBQ_CHECK_OK, "server", NULL, "PostgreSQL %s", version);
  if (strcmp(fsync, "on") != 0 || strcmp(fpw, "on") != 0)
    jobq__check_add(c, JOBQ_CHECK_FAIL, "durability",
                    "set fsync = on and full_page_writes = on in postgresql.conf: "
                    "without them a crash can lose or corrupt acknowledged jobs",
                    "fsync = %s, full_page_writes = %s", fsync, fpw);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "durability", NULL,
                    "fsync and full_page_writes on; jobq's connections commit with "
                    "synchronous_commit = on (the server's default is %s)",
                    sync);
  if (*standbys == '\0')
    jobq__check_add(c, JOBQ_CHECK_WARN, "replication",
                    "with no synchronous standby, losing this server loses the "
                    "latest commits; a failover to an asynchronous replica may bring "
                    "finished jobs back (workers stop with a changed identity: run "
                    "'jobq epoch bump' on the new primary)",
                    "no synchronous standby (synchronous_standby_names is empty)");
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "replication", NULL, "synchronous standbys: %s",
                    standbys);
  int autovac_on = strcmp(autovacuum, "on") == 0;
  PQclear(r);

  /* A pooler gives its clients process ids of its own making. */
  pg *pc = pg_conn(db);
  r = doctor_row(db, "SELECT pg_backend_pid()");
  if (r == NULL) return db->err;
  int pooled = strtol(PQgetvalue(r, 0, 0), NULL, 10) != PQbackendPID(pc->conn);
  PQclear(r);
  if (pc->pooled)
    jobq__check_add(c, JOBQ_CHECK_OK, "pooler", NULL,
                    "through a pooler in transaction mode (pooler=transaction): no "
                    "wake-ups, workers poll");
  else if (pooled)
    jobq__check_add(c, JOBQ_CHECK_WARN, "pooler",
                    "if the pooler hands server connections to other clients between "
                    "transactions (pgbouncer's pool_mode = transaction), add "
                    "pooler=transaction to the url; in session mode nothing is needed",
                    "through a connection pooler (the server's process id is not the one "
                    "the connection was given)");

  /* The oldest transaction anywhere holds vacuum back in every table. */
  r = doctor_row(db,
                 "SELECT pid, coalesce(usename, ''), coalesce(application_name, ''), "
                 "coalesce(state, ''), CAST(extract(epoch FROM clock_timestamp() - "
                 "xact_start) AS bigint), left(regexp_replace(coalesce(query, ''), "
                 "'\\s+', ' ', 'g'), 60) FROM pg_stat_activity WHERE xact_start IS "
                 "NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 1");
  if (r == NULL) return db->err;
  long long age = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 4), NULL, 10) : 0;
  if (age >= 60)
    jobq__check_add(c, age >= 600 ? JOBQ_CHECK_FAIL : JOBQ_CHECK_WARN, "vacuum",
                    "a long transaction keeps vacuum from reclaiming the hot table, so "
                    "it bloats and claims slow down: end it (SELECT "
                    "pg_terminate_backend(PID)) and keep transactions short",
                    "the oldest transaction has been open for %llds: pid %s, user '%s', "
                    "application '%s', %s: %s",
                    age, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
                    PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 5));
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "vacuum", NULL,
                    "no transaction older than a minute holds vacuum back");
  PQclear(r);

  r = doctor_row(db,
                 "SELECT n_live_tup, n_dead_tup, pg_total_relation_size(relid), "
                 "coalesce(to_char(greatest(last_autovacuum, last_vacuum), "
                 "'YYYY-MM-DD HH24:MI:SS'), 'never') FROM pg_stat_user_tables WHERE "
                 "relid = 'jobq_jobs'::regclass");
  if (r == NULL) return db->err;
  if (PQntuples(r) == 1) {
    long long live = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    long long dead = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    long long bytes = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    int bloated = dead > 10000 && dead > 2 * live;
    int oversized = bytes > (64LL << 20) && bytes > (live + 1) * 20480;
    if (!autovac_on || bloated || oversized)
      jobq__check_add(c, JOBQ_CHECK_WARN, "bloat",
                      !autovac_on ? "turn autovacuum on: the hot table churns and "
                                    "grows without it"
                                  : "vacuum is behind on the hot table: look for long "
                                    "transactions (above); VACUUM jobq_jobs now, and "
                                    "at a quiet time VACUUM FULL or pg_repack to give "
                                    "the space back",
                      "jobq_jobs: %lld live and %lld dead rows in %lld MiB; last vacuum "
                      "%s; autovacuum %s",
                      live, dead, bytes >> 20, PQgetvalue(r, 0, 3), autovac_on ? "on" : "off");
    else
      jobq__check_add(c, JOBQ_CHECK_OK, "bloat", NULL,
                      "jobq_jobs: %lld live and %lld dead rows in %lld MiB", live, dead,
                      bytes >> 20);
  }
  PQclear(r);
  return JOBQ_OK;
}
