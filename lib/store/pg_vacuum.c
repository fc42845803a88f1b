/*
 * pg_vacuum.c - keeping the hot table's planner statistics and dead rows
 * in hand, and the archive's statistics: an analyze when the statistics
 * fell far behind a claim or a put, and a vacuum of its own when dead rows
 * pile up, one at a time for all the handles on the database.
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

/* ---------------------------------------------------------------- statistics */

/* The planner's statistics of the hot table, analyzed again when they
 * fell far behind it.  Vacuum that finds the table empty records no rows;
 * until an analyze says otherwise every plan expects none, every index
 * looks free, and a burst of jobs is claimed through whichever index won
 * that tie: the queue's index and a sort of all its jobs (200000 of them:
 * 150 ms a claim; or a bitmap of the claim index and a sort: 75 ms at
 * 20000).  Autovacuum analyzes once 5 % changed, but only at its next
 * round, up to a minute later; a claimer looks every second, and at once
 * after a full batch from a table the planner counts under a tenth of it.
 * SKIP_LOCKED: a vacuum or another claimer's analyze at work already is
 * as good, and no claim waits for one.  It samples 3000 rows rather
 * than 30000 (a statistics target of 10, for this analyze only): 24 ms
 * instead of 116 to 181 for a table of a million rows here, which the
 * claim that runs it waits for, and the plans need the row count, not
 * fine histograms.  Autovacuum's own analyze, with the server's target,
 * comes later.
 *
 * The archive's count too: a claim's look at the archive (whether the
 * handle's last completions are there, lib/mark.c) is planned once per
 * connection, and planned while vacuum had cut an emptied archive to no
 * pages, it read every archived row for each claim: a drain of 200000
 * jobs right after went at 11000 jobs/s, not 54000.  Autovacuum, the
 * only other analyze, comes up to a minute later.
 *
 * The same look starts a vacuum of the hot table when it has 20000 dead
 * rows or more and none is at work.  Every job leaves two dead rows
 * (its claim and its acknowledgement) and their entries stay at the head
 * of the claim index until a vacuum removes them; each claim walks over
 * them all.  A million jobs done leave 6500 index pages to walk: 10 ms a
 * claim, until autovacuum's next round, up to a minute later.  The
 * vacuum runs on a connection of its own that the claim does not wait
 * for, made once the claim's transaction has ended: making it takes
 * milliseconds, more on a busy machine, and the locks of the claim's
 * jobs were held meanwhile when it was made inside.
 *
 * The end of each of the handle's transactions closes that connection
 * once its vacuum has finished.  The handle then starts none for as
 * long again as the vacuum ran, so that its vacuums take at most half
 * of a core's time, however large the table: a vacuum of a million
 * dead rows took under a second here, and the next one may come as soon
 * after.  A fixed ten seconds between two
 * let a million jobs archived in twenty leave nearly a million dead rows
 * behind, and the claims after them ran at a quarter of their rate.
 * PARALLEL 0: that share is of one process.  Beside a large backlog the
 * hot table's indexes pass the size at which VACUUM hands them to
 * parallel workers (min_parallel_index_scan_size), and the vacuum then
 * took the leader and two workers, every core of a small machine, while
 * the claims waited for a core.
 *
 * One vacuum at a time, of all the handles on the database: the look
 * that finds the dead rows also takes a lock of the session's
 * (pg_try_advisory_lock on "v:" and the table's oid), and only the
 * handle that got it starts a vacuum; it gives the lock back at the end
 * of its first transaction after its vacuum has ended or could not
 * start.  Without it every claimer whose look came while another's
 * vacuum was still connecting, or just after it had begun, made and
 * authenticated a connection for a VACUUM that skipped the table: with
 * 64 claimer processes, 200 to 285 such connections in one run of
 * `jobq bench --workload scale`, up to 58 in one second; without them
 * the claims at 64 processes went a quarter faster (13133 to 14359
 * jobs/s against 10257 to 10919). */
/* The look of refresh_stats, once a second, before a put in a
 * transaction of the library's own; it leaves the vacuums to the
 * claimers, whose work leaves the dead rows.  Puts plan their looks for
 * a barrier and for a key's jobs once per connection, as every
 * statement; planned on a table that vacuum found empty, they scan the
 * whole table for each job put, and a burst of puts into an idle queue
 * with no claimer at work slowed down as it filled the table until
 * autovacuum analyzed it: 50000 jobs in batches of 1000 took 80 s here.
 * The jobs a put sends are not counted as a claim's batch is: they may
 * be claimed before the next put, and a producer beside fast workers
 * would then analyze an empty table at every put. */
#define STATS_CHECK_MS 1000
#define VACUUM_RETRY_MS 10000  /* after one that could not start; the most */

/* Closes the vacuum connection once its vacuum has ended (or failed),
 * and sets when the next may begin: as long after as it ran, as far as
 * this handle saw, which is later than it ended when the handle ran no
 * transaction meanwhile; hence no more than VACUUM_RETRY_MS. */
void pg_vacuum_reap(pg *c) {
  if (c->vacuum != NULL && !(PQconsumeInput(c->vacuum) && PQisBusy(c->vacuum))) {
    PQfinish(c->vacuum);
    c->vacuum = NULL;
    int64_t now = jobq__mono_ms(), ran = now - c->vacuum_started_ms;
    c->vacuum_next_ms = now + (ran < VACUUM_RETRY_MS ? ran : VACUUM_RETRY_MS);
  }
}

/* Gives back the vacuums' lock that the look of refresh_stats took, on
 * the handle's connection, with no transaction open.  A connection that
 * broke lost the lock with its session. */
void pg_vacuum_unlock(pg *c) {
  c->vacuum_lock = 0;
  if (PQstatus(c->conn) == CONNECTION_OK)
    PQclear(PQexec(c->conn, "SELECT pg_advisory_unlock(" VACUUM_LOCK_KEY ")"));
}

/* Starts VACUUM of the hot table on a new connection and leaves it
 * running.  Best effort: a vacuum that cannot start (the server's
 * connection limit, say) leaves the claim and db's last error as they
 * were, and is not tried again before VACUUM_RETRY_MS; autovacuum still
 * comes. */
void pg_vacuum_start(jobq *db) {
  pg *c = pg_conn(db);
  c->vacuum_started_ms = jobq__mono_ms();
  c->vacuum_next_ms = c->vacuum_started_ms + VACUUM_RETRY_MS;
  jobq__error kept;
  jobq__error_keep(db, &kept);
  PGconn *pc = pg_connect_to(db);
  jobq__error_restore(db, &kept);
  if (pc == NULL) return;
  /* Through a pooler in transaction mode, a setting would stay on a
   * server connection that other clients get next, and the search_path
   * of setup is not there: the vacuum runs with the server's own
   * statement_timeout, and names the schema (checked at open: no quote
   * can be in it). */
  char sql[128];
  snprintf(sql, sizeof sql, "VACUUM (SKIP_LOCKED, PARALLEL 0) %s.jobq_jobs", c->set_path);
  PGresult *res = c->pooled ? NULL : PQexec(pc, "SET statement_timeout = 0");
  int ok = (c->pooled || PQresultStatus(res) == PGRES_COMMAND_OK) &&
           PQsendQueryParams(pc, sql, 0, NULL, NULL, NULL, NULL, 0) == 1;
  PQclear(res);
  if (!ok) {
    PQfinish(pc);
    return;
  }
  c->vacuum = pc;
}

int pg_refresh_stats(jobq *db, int64_t rows, int may_vacuum) {
  pg *c = pg_conn(db);
  int64_t now = jobq__mono_ms();
  /* A full batch from a table the planner counts (nearly) empty: the
   * statistics collector may not count the rows yet (a backend reports
   * its inserts once a second at most), so look now, with that batch.
   * The look finds the count under a tenth of it and analyzes. */
  int behind = rows > 0 && c->reltuples < (rows + 9) / 10;
  if (!behind && now - c->stats_checked_ms < STATS_CHECK_MS) return JOBQ_OK;
  c->stats_checked_ms = now;
  jobq_rows *r;
  may_vacuum = may_vacuum && c->vacuum == NULL && !c->vacuum_lock && now >= c->vacuum_next_ms;
  int rc = pg_query(db, c->pooled ? PG_TABLE_STATS_XACT : PG_TABLE_STATS,
                    SQL_ARGS(V_INT(rows), V_INT(may_vacuum)), &r, NULL);
  if (rc != JOBQ_OK) return rc;
  int stale = 0, dirty = 0, archive = 0;
  c->reltuples = INT64_MAX; /* a role that may not analyze: no look before the next */
  if (pg_next(db, r) == 1) {
    stale = pg_col_int(r, 0) != 0;
    dirty = pg_col_int(r, 1) != 0;
    c->reltuples = pg_col_int(r, 2);
    archive = pg_col_int(r, 3) != 0;
  }
  pg_done(db, r);
  if (dirty) c->vacuum_wanted = 1;
  /* Through a pooler in transaction mode, the lock was the look's
   * transaction's, and ends with it. */
  if (dirty && !c->pooled) c->vacuum_lock = 1;
  if (!stale && !archive) return JOBQ_OK;
  if (stale) c->reltuples = INT64_MAX;
  rc = pg_run_after(db, "SET LOCAL default_statistics_target = 10", "analyzing the job table");
  return rc == JOBQ_OK ? pg_run_after(db,
                                      stale && archive ? "ANALYZE (SKIP_LOCKED) jobq_jobs, jobq_done"
                                      : stale          ? "ANALYZE (SKIP_LOCKED) jobq_jobs"
                                                       : "ANALYZE (SKIP_LOCKED) jobq_done",
                                      "analyzing the job table")
                       : rc;
}
