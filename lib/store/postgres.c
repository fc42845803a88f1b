/*
 * postgres.c - the PostgreSQL store: one database shared by workers on
 * many machines.
 *
 * Transactions are READ COMMITTED, the engine's default: every statement
 * sees what committed before it began, which the library's named locks
 * rely on (a statement after a lock sees the work of whoever held it).
 * Named locks are transaction-scoped advisory locks, named by
 * hashtextextended() of the lock's name, so that the jobq_put() SQL
 * function takes the same ones.  The database clock is
 * statement_timestamp(), so a statement that waited for a lock still
 * decides with the time it runs at.
 *
 * Round trips are what cost here.  In a transaction of the library's
 * own, BEGIN goes with the first statement, a statement whose result is
 * not read waits for the next one (jobq_how), a put's INSERT and its ids
 * come with the commit, and a claim takes the COMMIT with it: a put is
 * one round trip, a claim or a batch of completions two.  Columns of set
 * statements travel as binary arrays; statements are prepared once per
 * connection and results come back in binary; every value is bound.  A
 * wake-up is a NOTIFY on channel "jobq" whose payload is a queue name,
 * sent once per committed transaction that made work ready; the watcher
 * LISTENs on a connection of its own.
 *
 * The files: pg_options.c (the URL), pg_connect.c (connections),
 * pg_exec.c (the executor), pg_txn.c (transactions, locks), pg_wake.c
 * (wake-ups), pg_vacuum.c (planner statistics and vacuum), pg_schema.c,
 * pg_roles.c, pg_doctor.c; pg.h holds what they share.
 *
 * libpq reads the URL (PQconninfoParse: URLs, Unix socket folders, its
 * keyword/value form), and the store keeps every parameter, jobq's own
 * options taken out, for each connection it makes: the work connection
 * when a transaction finds it broken, the LISTEN connection when a look
 * for wake-ups finds it gone, and a vacuum's.  It tries the URL's hosts
 * one after the other, each for at most connect_timeout, with the
 * server's messages in libpq's verbose form: their SQLSTATE tells a
 * refusal that lasts (JOBQ_EDENIED) from a failure that may pass.
 */
#include "store/pg.h"

const jobq_store jobq__store_postgres = {
    .scheme = "postgres",
    .dialect = JOBQ_DIALECT_PG,
    .options = pg_options,
    .named_wakes = 1,
    .open = pg_open,
    .close = pg_close,
    .native = pg_native,
    .schema = pg_versions,
    .schema_begin = pg_schema_begin,
    .schema_end = pg_schema_end,
    .schema_run = pg_schema_run,
    .roles = pg_roles,
    .doctor = pg_doctor,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .query = pg_query,
    .next = pg_next,
    .done = pg_done,
    .is_null = pg_is_null,
    .col_int = pg_col_int,
    .col_bytes = pg_col_bytes,
    .changes = pg_changes,
    .insert_id = pg_insert_id,
    .lock = pg_lock,
    .wake = pg_wake,
    .watch = pg_watch,
    .changed = pg_changed,
};
