/*
 * postgres.c - the PostgreSQL store: one database shared by workers on
 * many machines.
 *
 * Transactions are READ COMMITTED, the engine's default: every statement
 * sees what committed before it began, which the named locks of
 * lib/order.c rely on (a statement after a lock sees the work of whoever
 * held it).  A claim is one statement: per queue, the oldest ready jobs by
 * the claim index, locked with FOR UPDATE SKIP LOCKED so that claimers
 * never wait for each other, and marked running in the same statement.
 * The database clock is statement_timestamp(), so a statement that waited
 * for a lock still decides with the time it runs at.  Named locks are
 * transaction-scoped advisory locks, named by hashtextextended() of the
 * lock's name, so that the jobq_put() SQL function takes the same ones.
 *
 * Batches of plain jobs (no ordering key, no barrier, no unique key) are
 * put with one INSERT from arrays, and completed with one statement that
 * moves them to the archive; everything else goes through the common
 * logic, statement by statement.  Arrays travel in binary.
 *
 * Every value is bound.  Statements are prepared once per connection and
 * results come back in binary.  A wake-up is a NOTIFY on channel "jobq"
 * whose payload is a queue name, sent once per committed transaction that
 * made work ready; the watcher LISTENs on a second connection of its own.
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
