/*
 * mysql.c - the MariaDB / MySQL store (InnoDB): one database shared by
 * workers on many machines, through libmariadb, which speaks to MariaDB
 * (10.6 or newer) and MySQL (8.0.1 or newer) alike.  Older servers have no
 * SKIP LOCKED and are refused by version.
 *
 * Isolation.  jobq's connections run READ COMMITTED (set per session):
 * every statement sees what committed before it began, as on PostgreSQL,
 * which the named locks of lib/order.c rely on: a statement run after
 * taking a lock sees the work of whoever held it before.  Under InnoDB's
 * default REPEATABLE READ, reads would come from the transaction's first
 * snapshot and miss exactly that work; READ COMMITTED also takes no gap
 * locks on searches, so claimers and acknowledgers lock the rows they touch
 * and nothing between them.
 *
 * Named locks.  InnoDB has no shared advisory locks that end with the
 * transaction (GET_LOCK() is exclusive, held by the connection, and its
 * deadlocks with row locks go undetected), so a named lock is a row of
 * jobq_locks, keyed by the lock's name ("q:QUEUE", "b:QUEUE",
 * "k:QUEUE/KEY"): SELECT ... LOCK IN SHARE MODE takes it shared, FOR UPDATE
 * exclusive, both held to the end of the transaction, with InnoDB's
 * deadlock detection over them and the job rows alike.  A missing row is
 * inserted first (the insert holds it exclusively until commit).  Rows of
 * ordering keys stay; deleting any of them at any time is safe (docs/sql.md).
 *
 * The clock is UTC_TIMESTAMP(6), fixed for the duration of each statement,
 * in Unix milliseconds; sessions also run with time_zone '+00:00' and a
 * strict sql_mode.  Queue names, keys, sessions and claims are utf8mb4 with
 * a binary NO PAD collation (utf8mb4_nopad_bin on MariaDB,
 * utf8mb4_0900_bin on MySQL): compared byte for byte, trailing spaces
 * included.  Payloads and results are LONGBLOBs.
 *
 * The claim's pick (lib/sql.c's CLAIM_PICK) names the claim index
 * (queue, state, priority DESC, run_at, id), which serves the ORDER BY
 * without a sort on MariaDB 10.8+ and MySQL 8 (descending index keys).
 * There is no RETURNING: an INSERT's ids come from insert_id, and the
 * rows of a multi-row INSERT take consecutive ids only where the server
 * hands them out so (innodb_autoinc_lock_mode 0 or 1: db->id_step).  Set
 * statements spell their rows out, up to 64 to a statement, within half
 * of max_allowed_packet (db->stmt_bytes).
 *
 * Errors: a deadlock (1213) has rolled the whole transaction back; a lock
 * wait timeout (1205) only the statement, so the store rolls back the rest
 * at once.  Both set db->retry, and the library runs its transaction again
 * after a jittered pause; inside a caller's transaction (jobq_begin) the
 * handle refuses everything but a rollback until the caller starts again.
 * A lost connection is made again (with its prepared statements) before
 * the next transaction.
 *
 * The files: my_connect.c (the URL, connections), my_exec.c (the
 * executor, errors), my_txn.c (transactions, named locks), my_schema.c,
 * my_roles.c, my_doctor.c; my.h holds what they share.
 *
 * Every value is bound (prepared statements, made once per connection).
 * Connections use CLIENT_FOUND_ROWS, so that an UPDATE counts the rows it
 * matched, not only those it changed: the heartbeat and extend fences
 * depend on it.  There is no NOTIFY: workers poll.
 */
#include "store/my.h"

/* ---------------------------------------------------------------- wake-ups */

/* There is no NOTIFY: workers poll, and every look may have news. */
static void my_wake(jobq *db, const char *queue) {
  (void)db;
  (void)queue;
}

static int my_watch(jobq *db, int *fd) {
  *fd = -1;
  return jobq__fail(db, JOBQ_ENOTSUP, "the mysql store cannot watch for new work: poll instead");
}

static int my_changed(jobq *db, int (*wanted)(const jobq *db, const char *queue)) {
  (void)db;
  (void)wanted;
  return 1;
}

const jobq_store jobq__store_mysql = {
    .scheme = "mysql",
    .dialect = JOBQ_DIALECT_MYSQL,
    .options = my_options,
    .open = my_open,
    .close = my_close,
    .native = my_native,
    .schema = my_versions,
    .schema_begin = my_schema_begin,
    .schema_end = my_schema_end,
    .schema_run = my_schema_run,
    .roles = my_roles,
    .doctor = my_doctor,
    .begin = my_begin,
    .commit = my_commit,
    .rollback = my_rollback,
    .query = my_query,
    .next = my_next,
    .done = my_done,
    .is_null = my_is_null,
    .col_int = my_col_int,
    .col_bytes = my_col_bytes,
    .changes = my_changes,
    .insert_id = my_insert_id,
    .lock = my_lock,
    .wake = my_wake,
    .watch = my_watch,
    .changed = my_changed,
};
