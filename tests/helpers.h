/*
 * helpers.h - what every jobq test shares: a fresh temporary directory per
 * test with a real SQLite queue file in it, quick puts and claims, sleeping
 * and reading the clock in milliseconds, raw SQL on the handle's own
 * connection, and forking helper processes.
 *
 * The helpers assert through cmocka, so call them only from the process
 * that runs the test; forked children use plain checks and _exit().
 */
#ifndef JOBQ_TEST_HELPERS_H
#define JOBQ_TEST_HELPERS_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "jobq.h"

/* One test's world: a temp directory, a fresh queue database and an open
 * handle on it.  The store is JOBQ_TEST_STORE: "sqlite" (the default: a
 * file in dir), "postgres" (a new schema on the server whose URL is
 * JOBQ_TEST_PG_URL, dropped at the end) or "mysql" (a new database on the
 * MariaDB server whose URL is JOBQ_TEST_MYSQL_URL, dropped at the end). */
typedef struct tq {
  char dir[PATH_MAX];
  char path[PATH_MAX];       /* dir/queue.db (SQLite) */
  char url[PATH_MAX + 256];  /* the queue database */
  jobq *db;
} tq;

/* The store under test ("sqlite", "postgres", "mysql"), and whether it is
 * SQLite or MariaDB/MySQL. */
const char *th_store(void);
int th_is_sqlite(void);
int th_is_mysql(void);
/* Makes another fresh queue database of the store under test, initialised,
 * named name (SQLite: dir/name.db); its URL goes to url. */
void th_new_db(const char *dir, const char *name, char *url, size_t size);
/* Drops a database made by th_new_db (SQLite: nothing; the folder goes). */
void th_drop_db(const char *url);
/* Keeps a copy of t's database as name (SQLite: a file in t->dir made
 * by the backup API; PostgreSQL: pg_dump of its schema; MariaDB:
 * mariadb-dump of its database). */
void th_backup(tq *t, const char *name);
/* Puts copy name back in place of t's database, under its live handle, as
 * an operator restoring a backup would. */
void th_restore(tq *t, const char *name);
/* Replaces t's database, under its live handle, with other (a database
 * made by th_new_db, used up by this). */
void th_swap_in(tq *t, jobq *other, const char *other_url);
/* Ends db's connection to the server at url from another connection, as
 * a server restart or a failover would (server stores only): the handle
 * makes it again with its next transaction. */
void th_drop_connection(const char *url, jobq *db);
/* For tests of one store only: skips the test, saying why, unless the
 * store under test is SQLite. */
#define TH_SQLITE_ONLY(why)                                                \
  do {                                                                     \
    if (!th_is_sqlite()) {                                                 \
      print_message("skipped on %s: %s\n", th_store(), (why));             \
      skip();                                                              \
    }                                                                      \
  } while (0)

/* For tests of the server stores only: skips the test on SQLite, saying
 * why. */
#define TH_SERVER_ONLY(why)                                                \
  do {                                                                     \
    if (th_is_sqlite()) {                                                  \
      print_message("skipped on %s: %s\n", th_store(), (why));             \
      skip();                                                              \
    }                                                                      \
  } while (0)

/* cmocka setup/teardown: *state becomes a tq with an open handle. */
int tq_setup(void **state);
int tq_teardown(void **state);
#define TQ_TEST(f) cmocka_unit_test_setup_teardown(f, tq_setup, tq_teardown)

/* Makes a fresh directory under $TMPDIR (or /tmp); caller frees with
 * free() after th_rmtree(). */
char *th_mkdtemp(void);
/* Removes dir and everything under it (errors ignored). */
void th_rmtree(const char *dir);

/* Opens url and asserts success. */
jobq *th_open(const char *url);
/* Writes "dir/name" into out (asserts it fits). */
void th_path(char *out, size_t size, const char *dir, const char *name);

/* Puts one job with default options on queue (NULL: default) and payload
 * text (NULL: empty); asserts success and returns the id. */
int64_t th_put(jobq *db, const char *queue, const char *payload);
/* Puts with full options; asserts success and returns the id. */
int64_t th_put_opts(jobq *db, const jobq_put_opts *o);
/* Puts one job on queue with an ordering key. */
int64_t th_put_key(jobq *db, const char *queue, const char *key);
/* Puts one job on queue that may run max_attempts times. */
int64_t th_put_attempts(jobq *db, const char *queue, int max_attempts);
/* Puts n jobs with empty payloads on queue in one jobq_put_many(), each
 * of which may run max_attempts times (0: the default). */
void th_put_many(jobq *db, const char *queue, size_t n, int max_attempts);

/* Opens a session with lease_ms (0: default) and asserts success. */
jobq_session *th_session(jobq *db, int64_t lease_ms);
/* For a forked child, which must not assert: a handle of its own on url
 * and a session on it with lease_ms; NULL when either fails. */
jobq_session *th_child_session(const char *url, int64_t lease_ms);

/* Claims up to max jobs from queue (NULL: every queue) and asserts the call
 * succeeded; *n gets how many.  Free with jobq_jobs_free(). */
jobq_job *th_claim(jobq_session *s, const char *queue, size_t max, size_t *n);
/* Claims exactly one job from queue, asserting there is one. */
jobq_job *th_claim_one(jobq_session *s, const char *queue);
/* Asserts a claim from queue returns nothing. */
void th_claim_none(jobq_session *s, const char *queue);
/* Completes jobs[0..n) in one jobq_ack_many(), asserting that each one is
 * done, and frees them. */
void th_complete_many(jobq_session *s, jobq_job *jobs, size_t n);

/* Heartbeats s every 50 ms (asserting each succeeds) until job id is in
 * state, for at most max_ms; returns the milliseconds it took (fails the
 * test on timeout).  For waiting out another session's lease. */
int64_t th_beat_until(jobq_session *s, jobq *db, int64_t id, int state,
                      int64_t max_ms);

/* The state of job id (asserts it exists). */
int th_state(jobq *db, int64_t id);
/* jobq_show() that asserts success; free with jobq_info_free(p, 1). */
jobq_job_info *th_show(jobq *db, int64_t id);

/* The database clock in Unix ms (through jobq_identity_get). */
int64_t th_db_now(jobq *db);
/* Wall clock Unix ms, and a monotonic clock in ms. */
int64_t th_now_ms(void);
int64_t th_mono_ms(void);
void th_sleep_ms(int64_t ms);

/* Runs SQL on the handle's own connection; returns 0 (SQLITE_OK) on
 * success. */
int th_sql(jobq *db, const char *sql);
/* The first column of the first row of sql as an integer (asserts one). */
int64_t th_sql_int(jobq *db, const char *sql);

/* Asserts that a jobq call returned want, naming both codes if not. */
#define assert_rc(call, want)                                            \
  do {                                                                   \
    int rc_ = (call);                                                    \
    if (rc_ != (want))                                                   \
      fail_msg("%s returned %s, expected %s", #call, jobq_err_name(rc_), \
               jobq_err_name(want));                                     \
  } while (0)

/* Asserts that jobq_errmsg(db) contains needle. */
#define th_assert_msg(db, needle) th_assert_msg_at((db), (needle), __FILE__, __LINE__)
void th_assert_msg_at(jobq *db, const char *needle, const char *file, int line);

/* Forks; the child runs fn(arg) and exits with its return value.  Returns
 * the child's pid. */
pid_t th_fork(int (*fn)(void *), void *arg);
/* Waits for pid and returns its exit code, or 128 + signal. */
int th_wait(pid_t pid);

/* Writes len bytes to path (creating or truncating it); asserts success. */
void th_write_file(const char *path, const void *data, size_t len);
/* Reads up to size bytes of path into buf; returns how many (-1: error). */
ssize_t th_read_file(const char *path, void *buf, size_t size);

/* Counts jobs of every state via jobq_list() (up to 100000). */
size_t th_count_jobs(jobq *db, int state);
/* Fails unless jobq_stats() counts, state by state over every queue, as
 * many jobs as jobq_list() finds. */
void th_assert_counts_agree(jobq *db);

#endif
