/*
 * jobq.h - the public interface of libjobq, a durable job queue whose only
 * coordinator is an SQL database.
 *
 * This header is the whole contract: anything not declared here is not API.
 *
 * Lifecycle
 *   jobq_open() connects to a queue database named by a URL and returns a
 *   handle; jobq_close() frees it.  Producers call jobq_put()/jobq_put_many().
 *   Workers open a session with jobq_session_open(), keep it alive with
 *   jobq_heartbeat() (every lease/3 is a good rhythm), claim jobs with
 *   jobq_claim(), and finish each claimed job exactly once with
 *   jobq_complete(), jobq_fail(), jobq_retry_later() or jobq_release() (or
 *   many at once with jobq_ack_many()).  jobq_session_close() releases every
 *   job the session still holds.
 *
 * Guarantees
 *   - No two live sessions ever hold the same job.
 *   - Every claim carries an unguessable claim token.  An acknowledgement is
 *     fenced by (job id, session, claim token): if the claim was lost (the
 *     session expired and was reaped, the job was released, an operator
 *     intervened) the call returns JOBQ_ELOST and changes nothing.  Repeating
 *     an acknowledgement whose first attempt committed returns JOBQ_OK again
 *     and writes nothing twice.
 *   - Execution is at-least-once: a job whose worker died runs again.  Use the
 *     claim token or the attempt number to make outside side effects
 *     idempotent.
 *   - Every lease and run-at decision uses the database clock.
 *
 * Threads
 *   A jobq handle and the sessions opened on it belong to one thread at a
 *   time.  Use one handle per thread; handles never share state.  The
 *   library has no global state and starts no threads.
 *
 * Errors
 *   Every call that can fail returns 0 (JOBQ_OK) or a negative jobq error
 *   code.  jobq_errmsg() gives the message of the last failed call on a
 *   handle; it names the input that was wrong and what was expected.  On
 *   error, nothing is changed in the database unless the call says otherwise.
 *   The library never prints and never exits.
 *
 * Memory
 *   Strings passed in are copied when kept.  Everything returned through an
 *   out-parameter is owned by the caller and is freed with the free function
 *   named in the call's comment.  Free functions accept NULL.
 */
#ifndef JOBQ_H
#define JOBQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JOBQ_VERSION "0.1.0"

/* Marks the names libjobq exports: the library is built with hidden
 * visibility, so that everything not declared here stays inside it. */
#if defined(__GNUC__)
#define JOBQ_API __attribute__((visibility("default")))
#else
#define JOBQ_API
#endif
/* The version of the library that is loaded ("0.1.0"): a program that
 * loads libjobq at run time (a language binding) compares it with the
 * JOBQ_VERSION it was written for.  Never NULL. */
JOBQ_API const char *jobq_version(void);

/* Frees what a call returned "to free with free()" (jobq_url_redact(),
 * jobq_roles_sql(), jobq_heartbeat()'s cancel ids) with the C library's
 * free() that the library allocated it with: for callers that cannot
 * name that free() themselves, such as bindings through an FFI.  NULL is
 * a no-op. */
JOBQ_API void jobq_free(void *p);

/* ---------------------------------------------------------------- errors */

/*
 * The one error vocabulary: X(NAME, value, message).  JOBQ_EINVAL,
 * JOBQ_EURL, JOBQ_ESCHEMA and JOBQ_ETOOBIG are errors in what the caller
 * gave; JOBQ_EBUSY and JOBQ_ECONN are temporary: the same call may succeed
 * later (jobq_err_temporary()).  JOBQ_EDENIED is the database refusing
 * who the caller is or what it asked for, for good: a wrong password, an
 * unknown user, role or database, a missing privilege (PostgreSQL's
 * 42501, MariaDB's 1142), an SQLite file this process may not open.
 * Trying again does not help until someone changes the URL, the grants
 * or the file.
 */
#define JOBQ_ERRNO_MAP(X)                                                     \
  X(OK, 0, "success")                                                         \
  X(EINVAL, -1, "invalid argument")                                           \
  X(EURL, -2, "invalid database url")                                         \
  X(ENOMEM, -3, "out of memory")                                              \
  X(ENOTFOUND, -4, "no such job")                                             \
  X(ELOST, -5, "claim lost")                                                  \
  X(EEXPIRED, -6, "session expired")                                          \
  X(ESTATE, -7, "job is not in a state that allows this")                    \
  X(EBUSY, -8, "database busy")                                               \
  X(ECONN, -9, "cannot reach the database")                                   \
  X(EDB, -10, "database error")                                               \
  X(ESCHEMA, -11, "unsupported schema version")                               \
  X(EIDENTITY, -12, "queue identity changed")                                 \
  X(ETOOBIG, -13, "value too large")                                          \
  X(ENOTSUP, -14, "not supported")                                            \
  X(ECANCELLED, -15, "cancel requested")                                      \
  X(EREADONLY, -16, "database is read-only")                                 \
  X(EDENIED, -17, "access denied")

typedef enum jobq_err {
#define JOBQ_ERR_ENUM(name, value, msg) JOBQ_##name = (value),
  JOBQ_ERRNO_MAP(JOBQ_ERR_ENUM)
#undef JOBQ_ERR_ENUM
} jobq_err;

/* The fixed message of an error code ("claim lost"); never NULL. */
JOBQ_API const char *jobq_strerror(int err);
/* The symbolic name of an error code ("JOBQ_ELOST"); never NULL. */
JOBQ_API const char *jobq_err_name(int err);
/* 1 when err is temporary, the same call may succeed later with nothing
 * changed, so that trying again after a pause (with backoff) is the thing
 * to do: JOBQ_EBUSY and JOBQ_ECONN.  0 for every other code: success, an
 * error in the input (JOBQ_EINVAL, JOBQ_EURL, ...), a refusal that lasts
 * until someone acts (JOBQ_EDENIED, JOBQ_ENOTSUP, JOBQ_ESCHEMA), an
 * outcome (JOBQ_ELOST, JOBQ_EEXPIRED), JOBQ_EREADONLY (a standby stays
 * one; a primary in a switchover is writable again soon) and JOBQ_EDB,
 * which says no more than that the database failed. */
JOBQ_API int jobq_err_temporary(int err);

/* ---------------------------------------------------------------- handles */

typedef struct jobq jobq;
typedef struct jobq_session jobq_session;
typedef struct jobq_job jobq_job;

/*
 * Opens the queue database named by url:
 *   sqlite:PATH            an SQLite file (created, then initialised, if
 *   sqlite:///ABS/PATH     missing); "sqlite:jobq.db" is the default
 *   postgres://[USER[:PASSWORD]@][HOST[:PORT][,...]]/DATABASE[?OPTIONS]
 *                          PostgreSQL, as libpq reads such a URL (a host
 *                          that is a path, written with %2F, or ?host=
 *                          /run/postgresql, is a Unix socket folder);
 *                          also libpq's "host=... dbname=..." form
 *   mysql://[USER[:PASSWORD]@][HOST[:PORT][,...]]/DATABASE[?OPTIONS]
 * Query options: ?busy_timeout=10s (how long to wait for a locked SQLite
 * file, default 10s), ?max_payload=1MiB (the largest payload and result,
 * default 1 MiB), ?max_size=SIZE (SQLite: the file never grows past SIZE;
 * a write that would need more fails with JOBQ_EDB, as on a full disk);
 * each store's own (docs/operations.md).  An option may be given once;
 * numbers out of range, unknown options, and a password with a raw '/',
 * '?', '@' or '#' (write them %2F, %3F, %40, %23) fail with JOBQ_EURL.
 *
 * *out always receives a handle, even on error (then jobq_errmsg(*out)
 * explains); free it with jobq_close().  *out is NULL only when memory ran
 * out.  Messages never contain a password.
 *
 * A connection the handle holds that broke (a restart, a failover) is
 * made again, with the URL's every option, by the next call that needs
 * it; the call that found it broken fails with JOBQ_ECONN.  A server
 * that refuses the URL's user for good (a wrong password, an unknown
 * user or database, a missing privilege) gives JOBQ_EDENIED.
 */
JOBQ_API int jobq_open(const char *url, jobq **out);
/*
 * As jobq_open(), for a handle that only reads: jobq_show(), jobq_list(),
 * jobq_stats(), jobq_sessions(), jobq_identity_get(), jobq_doctor().  It
 * writes nothing, ever: an SQLite file is neither made nor set up (a
 * missing file, or one without jobq's schema, is refused with
 * JOBQ_ESCHEMA), and it works on a file this process may not write, on a
 * PostgreSQL standby or read-only database and on a read-only MariaDB or
 * MySQL server, whose transactions it makes read-only.  Every call that
 * writes fails with JOBQ_EREADONLY.
 */
JOBQ_API int jobq_open_readonly(const char *url, jobq **out);
/* Closes the handle, rolling back an open transaction.  NULL is a no-op.
 * Sessions opened on it must be closed first. */
JOBQ_API void jobq_close(jobq *db);
/* The message of the last failed call on db ("" when none; never NULL).
 * Valid until the next call on db.  jobq_errmsg(NULL) returns "out of
 * memory", the only way jobq_open() fails without a handle. */
JOBQ_API const char *jobq_errmsg(const jobq *db);
/* A warning about the database found when db was opened (or last
 * reconnected): a setting that weakens jobq's durability promise, such as
 * a MariaDB/MySQL server whose innodb_flush_log_at_trx_commit is not 1.
 * NULL when there is none.  The handle works all the same; `jobq init`
 * prints it.  Valid until the next call on db. */
JOBQ_API const char *jobq_warning(const jobq *db);
/* The url with any password replaced by "***".  Caller frees with free().
 * Returns NULL only when out of memory. */
JOBQ_API char *jobq_url_redact(const char *url);

/* Creates or migrates the schema (SQLite does this on open).  Refuses a
 * schema newer than this library with JOBQ_ESCHEMA. */
JOBQ_API int jobq_init(jobq *db);

/*
 * SQL that creates least-privilege roles for this queue database, for its
 * owner to read and run: a producer (put only), a worker (claim,
 * acknowledge, heartbeat), an admin (everything jobq does) and a reader
 * (dashboards: stats, ls, show).  The roles cannot drop or alter jobq's
 * tables.  *sql is a new string (free with free()).  JOBQ_ENOTSUP for
 * SQLite, whose file has no roles.
 */
JOBQ_API int jobq_roles_sql(jobq *db, char **sql);

/* The largest payload or result accepted, in bytes (default 1 MiB). */
JOBQ_API int jobq_set_max_payload(jobq *db, size_t bytes);

/* ---------------------------------------------------------------- transactions */

/*
 * A put or an acknowledgement can commit together with the caller's own
 * statements: call jobq_begin(), run your statements on jobq_native(db),
 * call jobq_put()/jobq_complete()/..., then jobq_commit() (or
 * jobq_rollback()).  Inside such a transaction every jobq call works in a
 * savepoint, so a failed call leaves the caller's transaction usable and
 * changes nothing of its own.  Claims and heartbeats are refused inside a
 * caller's transaction (JOBQ_ESTATE): they must commit at once.
 */
JOBQ_API int jobq_begin(jobq *db);
JOBQ_API int jobq_commit(jobq *db);
JOBQ_API int jobq_rollback(jobq *db);
/* The engine's connection: sqlite3 * for SQLite, PGconn * for PostgreSQL,
 * MYSQL * for MariaDB/MySQL.  Owned by db.  The library loads libpq and
 * libmariadb when a URL needs them; a program that calls them itself
 * links them itself (-lpq, -lmariadb) and gets the same library.  On
 * SQLite, leave its busy handler, WAL hook and wal_autocheckpoint as they
 * are: jobq's waits and checkpoints are set there. */
JOBQ_API void *jobq_native(jobq *db);

/* ---------------------------------------------------------------- names and limits */

#define JOBQ_QUEUE_MAX 63        /* [a-z0-9][a-z0-9_.-]{0,62} */
#define JOBQ_KEY_MAX 255         /* ordering and unique keys, bytes */
#define JOBQ_PRIORITY_MIN (-32768)
#define JOBQ_PRIORITY_MAX 32767
#define JOBQ_ATTEMPTS_MAX 1000
/* The most jobs one job may be put after (jobq_put_opts.after). */
#define JOBQ_AFTER_MAX 1000
#define JOBQ_DEFAULT_QUEUE "default"
#define JOBQ_DEFAULT_MAX_ATTEMPTS 25
#define JOBQ_DEFAULT_BACKOFF_MS 1000
#define JOBQ_BACKOFF_CAP_MS (3600 * 1000)
/* The one range of times: a job's run-at time is a Unix time in
 * milliseconds from 1 (1970-01-01T00:00:00.001Z) to JOBQ_TIME_MAX_MS
 * (9999-12-31T23:59:59.999Z, the last time RFC 3339 can write); a delay,
 * timeout, retry delay or extension is 0 to JOBQ_DURATION_MAX_MS (100
 * years of 365 days).  Every call refuses a value outside them with
 * JOBQ_EINVAL. */
#define JOBQ_TIME_MAX_MS 253402300799999LL
#define JOBQ_DURATION_MAX_MS (100LL * 365 * 86400000)
#define JOBQ_DEFAULT_LEASE_MS 5000
#define JOBQ_DEFAULT_MAX_PAYLOAD (1024 * 1024)
#define JOBQ_CLAIM_LEN 32        /* hex characters in a claim token */

/* Returns JOBQ_OK when name is a valid queue name, else JOBQ_EINVAL with a
 * message on db (db may be NULL). */
JOBQ_API int jobq_check_queue(jobq *db, const char *name);

/* ---------------------------------------------------------------- put */

typedef struct jobq_put_opts {
  const char *queue;       /* default "default" */
  const void *payload;     /* bytes, may contain NUL; NULL with len 0 ok */
  size_t payload_len;
  int priority;            /* higher runs first; JOBQ_PRIORITY_MIN..MAX */
  int64_t delay_ms;        /* run no earlier than now + delay (0 to
                              JOBQ_DURATION_MAX_MS) */
  int64_t run_at_ms;       /* or at this Unix time in ms (0: not set; at
                              most JOBQ_TIME_MAX_MS) */
  const char *key;         /* ordering key: one at a time, in order */
  int barrier;             /* runs after all earlier jobs of the queue,
                              before any later one; cannot have a key */
  const char *unique_key;  /* unique among the queue's unfinished jobs */
  int max_attempts;        /* 1..1000, default 25 */
  int64_t timeout_ms;      /* 0: none; for the worker to enforce (at most
                              JOBQ_DURATION_MAX_MS) */
  int64_t backoff_ms;      /* base of exponential backoff, default 1 s */
  /* Dependencies: the job stays JOBQ_STATE_PENDING until every job it
   * names is done.  after[0..n_after): ids of jobs that exist when the put
   * starts (unfinished, or archived and not pruned); an unknown id is
   * refused (JOBQ_EINVAL), nothing written.  after_index[0..
   * n_after_index) (jobq_put_many only): places of earlier jobs of the
   * same batch, each less than this job's own place, so that no cycle
   * can form.  When a parent dies or is cancelled, the job is cancelled
   * naming it, unless after_any_outcome is 1: then it runs once every
   * parent has finished, whatever the outcome.  At most 1000 in all;
   * cannot be combined with key or barrier.  The arrays stay the
   * caller's. */
  const int64_t *after;
  size_t n_after;
  const size_t *after_index;
  size_t n_after_index;
  int after_any_outcome;
} jobq_put_opts;

/* Fills opts with the defaults above. */
JOBQ_API void jobq_put_opts_init(jobq_put_opts *opts);

/*
 * Enqueues one job.  On success *id is its id (the job sequence number).
 * If opts->unique_key names an unfinished job of the queue, nothing is
 * written, *id is that job's id and *existed is set to 1 (else 0).  existed
 * may be NULL.  On error nothing is written.
 */
JOBQ_API int jobq_put(jobq *db, const jobq_put_opts *opts, int64_t *id, int *existed);

/*
 * Enqueues n jobs in one transaction: all or none.  ids[i] and, when
 * existed is not NULL, existed[i] are filled as for jobq_put().  On error
 * nothing is written and jobq_errmsg() names the index of the bad job
 * ("job 7: ...").
 */
JOBQ_API int jobq_put_many(jobq *db, const jobq_put_opts *opts, size_t n, int64_t *ids,
                           unsigned char *existed);

/* ---------------------------------------------------------------- sessions */

typedef struct jobq_session_opts {
  const char *name;   /* shown by `jobq sessions`; default "worker" */
  int64_t lease_ms;   /* default 5000; at least 100 */
} jobq_session_opts;

JOBQ_API void jobq_session_opts_init(jobq_session_opts *opts);

/*
 * Registers a new session (a random id, never reused) on the database
 * clock, reaping expired sessions on the way.  Free with
 * jobq_session_close().  Refuses to start when the database's identity
 * does not match what this handle saw before (JOBQ_EIDENTITY).
 */
JOBQ_API int jobq_session_open(jobq *db, const jobq_session_opts *opts,
                               jobq_session **out);

/*
 * Ends the session: every job it still holds goes back to ready at once
 * without spending an attempt, and the session row is deleted.  NULL is a
 * no-op.  Errors are ignored (the lease ends the session anyway).
 */
JOBQ_API void jobq_session_close(jobq_session *s);

/*
 * Joins session s on another handle, so that one worker claims and
 * acknowledges under one session on several connections at once, each
 * handle on its own thread: *out is a view of s (its id, lease and
 * epoch) on db, which must be opened on the same database.  Each view
 * acknowledges the jobs its own claims handed out; jobq_heartbeat() on
 * any of them renews the lease and writes that view's figures (give
 * every view a heartbeat now and then), and a view gives back, on a
 * connection made again, only what its own claims left.  s may be in use
 * on its own thread meanwhile: only what never changes of it is read.
 * jobq_session_close() of a view writes its figures and leaves the
 * session open; close every view before s, which ends the session.  At
 * most 15 views of a session at once; JOBQ_EEXPIRED when the session is
 * gone.
 */
JOBQ_API int jobq_session_join(jobq *db, jobq_session *s, jobq_session **out);

/* The session's id (32 hex characters), owned by s. */
JOBQ_API const char *jobq_session_id(const jobq_session *s);
JOBQ_API int64_t jobq_session_lease_ms(const jobq_session *s);
/* How many other sessions the last successful jobq_heartbeat() of s
 * ended as expired, their jobs back to ready: a worker's own commits do
 * not wake it (jobq_watch), so it may claim for them now. */
JOBQ_API int64_t jobq_session_reaped(const jobq_session *s);
/* How many sessions, s among them, held a running lease on the database
 * at the last successful jobq_heartbeat() of s (0 before the first): the
 * size of the fleet, which a worker without wake-ups may poll by. */
JOBQ_API int64_t jobq_session_peers(const jobq_session *s);

/*
 * Renews the lease and does this session's share of reaping: expired
 * sessions are deleted and their jobs go back to ready in the same
 * transaction (with the stall guard of jobq_reap_held(): when no session
 * at all has heartbeated for a lease, the database itself may have
 * stalled, and every session gets one more lease instead).  A session
 * whose lease ran out while it could not reach the database is renewed
 * by its heartbeat as long as no one reaped it meanwhile.  When cancel is not NULL, *cancel receives the ids of this
 * session's jobs whose cancel was requested (free with free()) and *ncancel
 * their number.
 * Returns JOBQ_EEXPIRED when the session is gone (reaped or ended by an
 * epoch bump): stop its jobs and open a new session.
 */
JOBQ_API int jobq_heartbeat(jobq_session *s, int64_t **cancel, size_t *ncancel);

/* Sets the counters shown by `jobq sessions` (a worker's jobs in flight);
 * written with the next heartbeat. */
JOBQ_API void jobq_session_set_in_flight(jobq_session *s, int64_t in_flight);

/*
 * A worker that claims more than it starts at once (a prefetch) says so:
 * of the session's next claim, only the first n jobs (in claim order)
 * start at once; the others wait in its hands until it starts them and
 * tells jobq_session_started().  When a worker dies, a job it had started
 * spends its attempt (its outcome is unknown); a job it never started
 * comes back without spending one.  Without this call, every claimed job
 * counts as started.  Applies to one claim.
 */
JOBQ_API void jobq_session_start_now(jobq_session *s, size_t n);
/* A held-back job has started; recorded with the session's next claim,
 * acknowledgement or heartbeat. */
JOBQ_API void jobq_session_started(jobq_session *s, const jobq_job *job);

/* ---------------------------------------------------------------- claims */

typedef struct jobq_job {
  int64_t id;
  char *queue;
  void *payload;        /* payload_len bytes, plus a NUL after them */
  size_t payload_len;
  int attempt;          /* 1 on the first run */
  int max_attempts;
  int priority;
  char *key;            /* NULL when none */
  int64_t timeout_ms;   /* 0: none */
  int prev_lost;        /* the previous attempt's outcome is unknown */
  int64_t claimed_at_ms;  /* when it was claimed, on the database clock */
  char claim[JOBQ_CLAIM_LEN + 1];
  int64_t run_at_ms;      /* when it became due: claimed_at_ms - run_at_ms
                             is how long it waited to be picked up */
} jobq_job;

/*
 * Claims up to max ready jobs (run_at reached, queue not paused) from the
 * nq named queues (all queues when nq is 0), highest priority first, then
 * run_at, then id, in one short transaction.  *jobs is an array of *n jobs
 * (*n may be 0; free with jobq_jobs_free()).  Refuses with JOBQ_EIDENTITY
 * when the database is not the one this handle saw (another queue id, or a
 * job sequence lower than one seen without an epoch change) and with
 * JOBQ_EEXPIRED when the session is gone.  When the connection breaks as
 * the claim commits, the claim is read back on a new connection and its
 * jobs returned if it committed; when that cannot be told, it fails with
 * JOBQ_ECONN and the session's next heartbeat, claim or acknowledgement
 * gives back whatever the claim took.
 */
JOBQ_API int jobq_claim(jobq_session *s, const char *const *queues, size_t nq,
                        size_t max, jobq_job **jobs, size_t *n);
JOBQ_API void jobq_jobs_free(jobq_job *jobs, size_t n);

/* ---------------------------------------------------------------- wake-ups */

/*
 * Lets a worker sleep until work may have arrived instead of polling with
 * claims.  jobq_watch() starts watching (SQLite: the file's write-ahead
 * log, through inotify; PostgreSQL: LISTEN, on a connection of its own)
 * and gives a file descriptor that becomes readable when another
 * connection committed a change; the descriptor is owned by db and stays
 * the same until jobq_close(), whatever happens to the connection behind
 * it.  When it is readable (or on a timer), call jobq_changed(): it
 * drains the descriptor and returns 1 when something changed since the
 * previous call, else 0: another connection committed, or a commit of
 * db's own made a job ready now (its other commits are no news to it; on
 * SQLite a commit still being written is waited for).  A change is a
 * hint, not a promise of work: claim to find out.
 *
 * Wake-ups can be lost, so keep a slow timer as well.  When the LISTEN
 * connection is lost, jobq_changed() returns JOBQ_ECONN (its message says
 * why) for as long as it is gone: claim on your timer meanwhile.  The
 * descriptor does not turn readable for the lost connection; the look
 * that finds it lost opens it again at once, and the later ones after a
 * wait (250 ms after a failure, doubling to 8 s, with jitter); the one
 * that gets it back returns 1, as anything may have happened meanwhile.  JOBQ_ENOTSUP when the store cannot watch: poll
 * with claims instead.
 */
JOBQ_API int jobq_watch(jobq *db, int *fd);
JOBQ_API int jobq_changed(jobq *db);
/*
 * Limits what jobq_changed() reports to work for these queues; nq 0:
 * every queue, as at the start.  A worker of a few queues among many then
 * does not claim in vain each time another queue gets a job.  The names
 * are checked and copied; on error the filter is unchanged.  JOBQ_ENOTSUP
 * when the store's wake-ups do not name their queue (SQLite: any commit
 * of another connection wakes every watcher).
 */
JOBQ_API int jobq_watch_queues(jobq *db, const char *const *queues, size_t nq);
/*
 * When the next ready job of the nq named queues (every queue when nq is
 * 0) comes due, which no wake-up tells: a delayed job, or a retry after
 * its backoff.  *due_in_ms gets the milliseconds from now on the
 * database clock: 0 when one is due now (or a queue holds more ready jobs
 * than a short look reads: look again at your usual pace), -1 when the
 * queues hold no ready job at all.  A worker that watches for wake-ups
 * may then sleep until then instead of polling.  Reads only.
 */
JOBQ_API int jobq_next_due(jobq *db, const char *const *queues, size_t nq,
                           int64_t *due_in_ms);
/*
 * jobq_next_due() of the jobs session s may claim: of a queue in parts
 * that s claims from (jobq_parts_join, or its first claim of it), only
 * those of its own parts, so that a worker whose parts are empty does
 * not claim in vain while others' parts hold work.  Reads only.
 */
JOBQ_API int jobq_session_next_due(jobq_session *s, const char *const *queues, size_t nq,
                                   int64_t *due_in_ms);

/* ---------------------------------------------------------------- acknowledgements */

typedef enum jobq_ack_kind {
  JOBQ_ACK_COMPLETE = 1,  /* done; data is the result */
  JOBQ_ACK_FAIL,          /* failed; data is the error text; retried with
                             backoff while attempts remain, else dead */
  JOBQ_ACK_RETRY,         /* the job asked to run later; retried with
                             backoff (or retry_in_ms), not an error */
  JOBQ_ACK_RELEASE        /* back to ready now, the attempt not spent */
} jobq_ack_kind;

typedef struct jobq_ack {
  int64_t id;                          /* in: the job */
  char claim[JOBQ_CLAIM_LEN + 1];      /* in: its claim token */
  jobq_ack_kind kind;                  /* in */
  const void *data;                    /* in: result or error text */
  size_t len;
  int64_t retry_in_ms;                 /* in: FAIL/RETRY delay, -1: backoff */
  int status;                          /* out: JOBQ_OK or JOBQ_ELOST */
  int already;                         /* out: an earlier identical ack had
                                          committed; nothing was written */
  int outcome;                         /* out: JOBQ_STATE_* the job went to */
} jobq_ack;

/* Fills ack for job with kind, no data and retry_in_ms -1. */
JOBQ_API void jobq_ack_init(jobq_ack *ack, const jobq_job *job, jobq_ack_kind kind);

/*
 * Acknowledges n jobs in one transaction.  Each ack's status says whether
 * it took effect (JOBQ_OK) or its claim was lost (JOBQ_ELOST, nothing
 * changed for that job); the call itself returns JOBQ_OK when the batch
 * committed.  On any other error nothing is written.
 * A job whose cancel was requested ends as cancelled on FAIL, RETRY and
 * RELEASE; a COMPLETE still records it done.
 */
JOBQ_API int jobq_ack_many(jobq_session *s, jobq_ack *acks, size_t n);

/*
 * Acknowledges n jobs and claims up to max more, in one transaction: a busy
 * worker's rhythm, at half the commits of jobq_ack_many() followed by
 * jobq_claim().  The acks get their status as from jobq_ack_many(); *jobs
 * and *njobs are filled as by jobq_claim() (free with jobq_jobs_free()).
 * On an error, nothing is acknowledged and nothing claimed.  n or max may
 * be 0.
 */
JOBQ_API int jobq_ack_claim(jobq_session *s, jobq_ack *acks, size_t n,
                            const char *const *queues, size_t nq, size_t max,
                            jobq_job **jobs, size_t *njobs);

/* Single-job forms of jobq_ack_many(): JOBQ_OK, JOBQ_ELOST or an error.
 * When already is not NULL it receives the ack's already flag. */
JOBQ_API int jobq_complete(jobq_session *s, const jobq_job *job, const void *result,
                           size_t len, int *already);
JOBQ_API int jobq_fail(jobq_session *s, const jobq_job *job, const char *error);
JOBQ_API int jobq_retry_later(jobq_session *s, const jobq_job *job, int64_t delay_ms,
                              const char *reason);
JOBQ_API int jobq_release(jobq_session *s, const jobq_job *job);

/*
 * Confirms the claim is still held and moves the job's deadline to now +
 * ms.  Returns JOBQ_ECANCELLED (the deadline is still moved) when an
 * operator asked to cancel the job, JOBQ_ELOST when the claim is gone.
 */
JOBQ_API int jobq_extend(jobq_session *s, const jobq_job *job, int64_t ms);

/* ---------------------------------------------------------------- inspection */

typedef enum jobq_state {
  JOBQ_STATE_READY = 1,   /* run_at may be in the future: "scheduled" */
  JOBQ_STATE_RUNNING,
  JOBQ_STATE_WAITING,     /* for its ordering key or a barrier */
  JOBQ_STATE_DONE,
  JOBQ_STATE_DEAD,
  JOBQ_STATE_CANCELLED,
  JOBQ_STATE_PENDING      /* for the jobs it was put after (--after) */
} jobq_state;

/* "ready", "running", ...; NULL for an unknown value. */
JOBQ_API const char *jobq_state_name(int state);
/* The state named by name, or 0 when unknown.  "scheduled" is READY. */
JOBQ_API int jobq_state_parse(const char *name);

typedef struct jobq_job_info {
  int64_t id;
  char *queue;
  int state;              /* jobq_state */
  int priority;
  int64_t run_at_ms;      /* Unix ms */
  char *key;              /* NULL when none */
  int barrier;
  char *unique_key;       /* NULL when none */
  void *payload;          /* plus a NUL after payload_len bytes */
  size_t payload_len;
  void *result;           /* done jobs; NULL otherwise */
  size_t result_len;
  int attempts;
  int max_attempts;
  int64_t timeout_ms;
  int64_t backoff_ms;
  char *session;          /* running jobs */
  char *claim;            /* running and finished jobs */
  int64_t created_at_ms;
  int64_t claimed_at_ms;  /* 0 when never claimed */
  int64_t finished_at_ms; /* 0 when unfinished */
  char *last_error;       /* NULL when none */
  int cancel_requested;
  int prev_lost;
  int part;               /* its part (jobq_parts); -1 when its queue has
                             one, or it is finished */
} jobq_job_info;

/* One job by id, unfinished or archived.  Free with jobq_info_free(p, 1).
 * JOBQ_ENOTFOUND when there is none (pruned or never put). */
JOBQ_API int jobq_show(jobq *db, int64_t id, jobq_job_info **out);

/* A dependency of a job: one of the jobs it was put after (a parent), or
 * one put after it (a child). */
typedef struct jobq_job_link {
  int64_t id;
  int child;              /* 0: a parent of the job, 1: a child */
  int state;              /* jobq_state; 0 when the job was pruned */
  int any_outcome;        /* the child runs whatever the parent's outcome */
} jobq_job_link;

/* The parents and children of job id, parents first, each by id.  Free
 * *out with free().  A job without any gives *n 0 (JOBQ_OK, whether or
 * not the job exists). */
JOBQ_API int jobq_links(jobq *db, int64_t id, jobq_job_link **out, size_t *n);

typedef struct jobq_list_opts {
  const char *queue;   /* NULL: every queue */
  int state;           /* 0: every state; JOBQ_STATE_* */
  int scheduled;       /* with READY: 1 only future run_at, 0 both */
  size_t limit;        /* default 100 */
  int64_t after_id;    /* for paging: ids greater than this (0: start) */
  const char *key;     /* only jobs of this ordering key; NULL: any */
} jobq_list_opts;

/* Jobs by id order (payload and result left out: NULL, lengths set).
 * Free with jobq_info_free(). */
JOBQ_API int jobq_list(jobq *db, const jobq_list_opts *opts, jobq_job_info **out,
                       size_t *n);
JOBQ_API void jobq_info_free(jobq_job_info *infos, size_t n);

typedef struct jobq_queue_stats {
  char *name;
  int64_t ready;        /* run_at reached */
  int64_t scheduled;    /* ready but run_at in the future */
  int64_t waiting;
  int64_t running;
  int64_t done;         /* archived, not yet pruned */
  int64_t dead;
  int64_t cancelled;
  int paused;
  int64_t oldest_ready_ms; /* age of the oldest ready job, 0 when none */
  char *key_policy;     /* "block" or "skip" */
  int64_t pending;      /* for the jobs they were put after */
  int parts;            /* its count of parts (jobq_parts) */
  int parts_unowned;    /* its parts with no live owner */
} jobq_queue_stats;

/* Per-queue counts, by name.  Costs nothing per finished job (counters).
 * Free with jobq_stats_free(). */
JOBQ_API int jobq_stats(jobq *db, jobq_queue_stats **out, size_t *n);
JOBQ_API void jobq_stats_free(jobq_queue_stats *stats, size_t n);

/* A session's parts of one queue, in ascending order. */
typedef struct jobq_session_parts {
  char *queue;
  int *parts;
  size_t n;
} jobq_session_parts;

typedef struct jobq_session_info {
  char *id;
  char *name;
  char *host;
  int64_t pid;
  int64_t epoch;
  int64_t started_at_ms;
  int64_t heartbeat_at_ms;
  int64_t expires_at_ms;
  int64_t lease_ms;
  int64_t claimed;      /* jobs it holds now */
  int64_t in_flight;    /* as the worker reported */
  int64_t done;
  int64_t failed;
  int expired;          /* expires_at has passed on the database clock */
  /* The parts it holds (jobq_parts), one entry per queue, by name. */
  struct jobq_session_parts *parts;
  size_t nparts;
} jobq_session_info;

JOBQ_API int jobq_sessions(jobq *db, jobq_session_info **out, size_t *n);
JOBQ_API void jobq_sessions_free(jobq_session_info *s, size_t n);

/*
 * The attempts of a job that ended without finishing it, oldest first:
 * those that failed and were retried, asked to run later, or were lost
 * with their worker.  The attempt that finished the job (done, dead,
 * cancelled) and a running one are the job's own (jobq_show()).  An
 * admin retry starts the count again, so a number may come twice.  The
 * records go with jobq_prune() of the same age.  Free with
 * jobq_attempts_free().
 */
typedef struct jobq_attempt {
  int attempt;            /* 1 on the first run */
  char *outcome;          /* "failed", "retry" (asked to run later), "lost" */
  char *error;            /* the worker's error text; NULL when none */
  char *session;          /* the session that ran it */
  char *host;             /* its machine; NULL when not known */
  int64_t claimed_at_ms;  /* 0 when not known */
  int64_t ended_at_ms;
} jobq_attempt;

JOBQ_API int jobq_attempts(jobq *db, int64_t id, jobq_attempt **out, size_t *n);
JOBQ_API void jobq_attempts_free(jobq_attempt *a, size_t n);

/* ---------------------------------------------------------------- figures */

/*
 * What the sessions did, per minute of the database clock and per queue,
 * kept in the database: every session counts its claims and
 * acknowledgements in memory (nothing is written on the way) and adds
 * them to its own rows with each heartbeat and when it closes.  So every
 * reader sees the same figures, and a session that is lost loses at most
 * what it counted since its last heartbeat.  Minutes older than
 * JOBQ_TALLY_KEEP_MIN are folded into one row per queue, so totals only
 * grow and the table stays small.
 *
 * The wait of a claimed job is claimed_at - run_at: how long it was due
 * before a session picked it up.  wait[i] counts the waits of at most
 * jobq_wait_bound_ms(i) not counted in a lower bucket (not cumulative);
 * the last bucket has no bound.
 */
#define JOBQ_WAIT_BUCKETS 10
#define JOBQ_TALLY_KEEP_MIN 90

typedef struct jobq_tally {
  int64_t minute;         /* Unix minute (ms / 60000); 0 in totals */
  char *queue;            /* "" for claims that found nothing */
  int64_t claimed;        /* jobs claimed */
  int64_t empty_claims;   /* claims that found no job */
  int64_t done;           /* completed */
  int64_t failed;         /* failed attempts (retried or dead) */
  int64_t retried;        /* put back to run again after a failure or on
                             the worker's request */
  int64_t dead;           /* failed with no attempts left */
  int64_t cancelled;      /* ended as cancelled by their worker */
  int64_t wait_ms;        /* sum of the claimed jobs' waits */
  int64_t wait[JOBQ_WAIT_BUCKETS];
} jobq_tally;

/* The upper bound of wait bucket i in ms; -1 for the last (no bound). */
JOBQ_API int64_t jobq_wait_bound_ms(int i);
/* Per minute and queue for the minutes from since_ms (Unix ms, database
 * clock) on, by minute then queue.  Free with jobq_tallies_free(). */
JOBQ_API int jobq_tally_minutes(jobq *db, int64_t since_ms, jobq_tally **out, size_t *n);
/* Per queue, everything counted since the database was made, by queue
 * (minute 0).  Free with jobq_tallies_free(). */
JOBQ_API int jobq_tally_totals(jobq *db, jobq_tally **out, size_t *n);
JOBQ_API void jobq_tallies_free(jobq_tally *t, size_t n);

/* ---------------------------------------------------------------- administration */

/*
 * Puts a dead or cancelled job back to run with a fresh attempt count,
 * keeping its id and payload.  JOBQ_ESTATE when the job is unfinished or
 * done, JOBQ_ENOTFOUND when there is none.  A dead job that blocks its
 * ordering key becomes the key's head again.
 */
JOBQ_API int jobq_retry(jobq *db, int64_t id);
/* Retries every dead job (of queue, or all when NULL), a queue at a time
 * and oldest first, in transactions of 1000 jobs; *count gets how many
 * (on an error, how many until then). */
JOBQ_API int jobq_retry_dead(jobq *db, const char *queue, int64_t *count);

/*
 * Cancels a job.  A ready or waiting job is archived as cancelled at once
 * (*now = 1); a running job gets a cancel request that its worker sees on
 * its next heartbeat or extend (*now = 0).  A dead job that blocks its key
 * is marked cancelled and the key proceeds.  JOBQ_ESTATE for other
 * finished jobs.  now may be NULL.
 */
JOBQ_API int jobq_cancel(jobq *db, int64_t id, int *now);

JOBQ_API int jobq_pause(jobq *db, const char *queue);
JOBQ_API int jobq_resume(jobq *db, const char *queue);

/* The ordering-key policy for a head that goes dead: "block" (default: the
 * key waits for an operator to retry or cancel it) or "skip". */
JOBQ_API int jobq_set_key_policy(jobq *db, const char *queue, const char *policy);

/*
 * A queue's limits, kept in the database and enforced inside every claim
 * on the database clock, whatever the number of workers and machines:
 *
 *   running   at most this many of the queue's jobs claimed at once (a
 *             claim prefetched but not started counts); a job stops
 *             counting when it is acknowledged, released or given back
 *             with its session, so a dead worker's slots come back when
 *             its lease runs out
 *   rate      at most rate jobs claimed in any rate_period_ms: a window
 *             that slides with the database clock (a job given back and
 *             claimed again counts again)
 *   running_per_key
 *             at most this many jobs of one ordering key claimed at once;
 *             in such a queue a key limits and no longer orders: a job
 *             put with a key is ready at once, not waiting behind the
 *             key's earlier jobs (1: one at a time, in no set order)
 *   rate_per_key
 *             at most this many jobs of one ordering key claimed in any
 *             rate_per_key_period_ms, a window that slides with the
 *             database clock as rate's does; keys still order (unless
 *             running_per_key is set), and jobs without a key are not
 *             counted
 *
 * 0 in a field is no limit.  JOBQ_LIMIT_MAX bounds running,
 * running_per_key, rate and rate_per_key; a period runs from 1 to
 * JOBQ_LIMIT_PERIOD_MAX (a day) and is 0 with no rate.
 */
#define JOBQ_LIMIT_MAX 1000000000
#define JOBQ_LIMIT_PERIOD_MAX 86400000
typedef struct jobq_limits {
  char *queue;              /* jobq_limits_list(): the queue's name */
  int64_t running;
  int64_t rate;
  int64_t rate_period_ms;
  int64_t running_per_key;
  int64_t rate_per_key;
  int64_t rate_per_key_period_ms;
  /* jobq_limits_list(): how the queue stands now. */
  int64_t running_now;      /* its jobs claimed now */
  int64_t claimed_now;      /* its jobs claimed in the last rate period */
  int64_t keys_full_now;    /* its keys claimed rate_per_key times in the
                               last rate_per_key_period_ms */
  int held;                 /* a job is ready to run but the queue's
                               running or rate limit is full, or its
                               key's rate is */
} jobq_limits;

/* Sets queue's limits to *limits (its running, rate, rate_period_ms,
 * running_per_key, rate_per_key and rate_per_key_period_ms; every field 0
 * removes them all), making the queue if
 * it is new.
 * JOBQ_EINVAL, naming the field, for a value out of range; on error
 * nothing is changed. */
JOBQ_API int jobq_set_limits(jobq *db, const char *queue, const jobq_limits *limits);
/* Every queue with a limit, by name, or (queue not NULL) that queue
 * alone, with or without one (none when the queue was never used): *out
 * and *n, freed with jobq_limits_free(). */
JOBQ_API int jobq_limits_list(jobq *db, const char *queue, jobq_limits **out, size_t *n);
JOBQ_API void jobq_limits_free(jobq_limits *limits, size_t n);

/*
 * A queue's parts.  A queue may be split into 1 to JOBQ_PARTS_MAX parts
 * (1, the default, is a queue as it always was).  A job's part is a
 * stable hash of its ordering key (FNV-1a of its bytes, modulo the
 * count: jobq_part_of()), so that all of a key's jobs share one part;
 * a job without a key goes to any part, spread evenly.  Every live
 * session that claims from a queue in parts holds a fair share of them
 * (shares differ by at most one), and claims only from its own, so
 * that claimers do not contend.  The sessions share them out among
 * themselves as they join and at each heartbeat, with no leader: a
 * session keeps the parts it holds up to its share, a part over its
 * owner's share moves only once its owner runs none of its jobs, and
 * the parts of no one, or of sessions whose lease ran out, go to the
 * sessions under their shares.  A session that joins gets its share at
 * once from idle parts, else within a heartbeat of the others once
 * their jobs there are done; a dead one's parts move within its lease
 * and a heartbeat.  The ordering keys keep a key's jobs one at a time
 * and in order whatever the parts do.
 */
#define JOBQ_PARTS_MAX 1024
typedef struct jobq_part {
  int part;               /* 0 to parts - 1 */
  char *session;          /* its owner; NULL when none */
  int64_t since_ms;       /* when it got its owner (or lost it) */
  int live;               /* the owner's lease holds */
  int64_t ready;          /* its ready jobs */
} jobq_part;

/* Splits queue into parts (1 to JOBQ_PARTS_MAX), making the queue if it
 * is new.  A change puts every unfinished job of the queue into its new
 * part and shares the new parts out among the queue's live claimers, in
 * one transaction; jobs running go on under their sessions.
 * JOBQ_EINVAL, naming the value, out of range; on error nothing is
 * changed. */
JOBQ_API int jobq_set_parts(jobq *db, const char *queue, int parts);
/* Queue's count of parts (1 for a queue never used or never split) in
 * *parts, and (out not NULL) each part with its owner: *out and *n,
 * freed with jobq_parts_free() (none with one part). */
JOBQ_API int jobq_parts(jobq *db, const char *queue, int *parts, jobq_part **out, size_t *n);
JOBQ_API void jobq_parts_free(jobq_part *parts, size_t n);
/* Joins s to the claimers of those of queues[0..nq) that are in parts,
 * taking its share of their parts now, as its first claim from each
 * would: a worker that knows its queues joins them when it starts. */
JOBQ_API int jobq_parts_join(jobq_session *s, const char *const *queues, size_t nq);
/* The part, of parts, of a job with ordering key key (len bytes). */
JOBQ_API int jobq_part_of(const char *key, size_t len, int parts);

/*
 * Calls over many jobs work in parts, each its own transaction of about
 * a thousand jobs (prune: ten thousand), never one for the whole set: other
 * writers go on, and PostgreSQL's vacuum is not held back.  On an error
 * the parts before it stay done, and the count says how many went.  These
 * options choose the jobs and let the caller show progress.
 */
typedef struct jobq_bulk_opts {
  const char *queue;     /* the queue (NULL: every queue, where allowed) */
  int state;             /* jobq_cancel_jobs(): 0 for every unfinished job,
                            or JOBQ_STATE_READY, _RUNNING, _WAITING or
                            _PENDING */
  int scheduled;         /* with READY: 1 only jobs whose run-at time is
                            ahead ("scheduled"), -1 only those due, 0 both */
  const char *key;       /* jobq_cancel_jobs(): only this ordering key */
  int dry_run;           /* count what would be done; change nothing */
  /* Called (when not NULL) after each part, with how many so far. */
  void (*progress)(void *arg, int64_t done);
  void *progress_arg;
} jobq_bulk_opts;

/* Fills opts with every queue, every state, no dry run, no progress. */
JOBQ_API void jobq_bulk_opts_init(jobq_bulk_opts *opts);

/* Deletes archived jobs finished more than older_than_ms ago, oldest
 * first, in transactions of about 10000 jobs; *count gets how many (on an
 * error, how many until then).  Never touches unfinished jobs or a dead
 * head that blocks its key.  The records of attempts as old go too. */
JOBQ_API int jobq_prune(jobq *db, int64_t older_than_ms, int64_t *count);
/* jobq_prune() of one queue's jobs (opts->queue; the records of attempts
 * stay), or with opts->dry_run the count of what it would delete. */
JOBQ_API int jobq_prune_jobs(jobq *db, int64_t older_than_ms, const jobq_bulk_opts *opts,
                             int64_t *count);

/*
 * Deletes every job of queue that is not running: ready, scheduled and
 * waiting jobs, and the queue's archived (done, dead, cancelled) jobs, in
 * parts, oldest first; the jobs put after it began stay.  *count (may be
 * NULL) gets how many jobs went.  The queue itself stays, with its pause
 * state and key policy.  Refuses with JOBQ_EBUSY, deleting nothing, when
 * a job of the queue is running as it starts: purge it once its workers
 * are done (a job claimed while it works is left to its worker).  The
 * jobs are gone for good.
 */
JOBQ_API int jobq_purge(jobq *db, const char *queue, int64_t *count);
/* jobq_purge() of opts->queue with progress, or with opts->dry_run the
 * count of the jobs it would delete. */
JOBQ_API int jobq_purge_jobs(jobq *db, const jobq_bulk_opts *opts, int64_t *count);

/*
 * Cancels the unfinished jobs of opts->queue (required) that opts
 * chooses, as jobq_cancel() would each, oldest first: ready and waiting
 * jobs are archived as cancelled (*cancelled counts them), running ones
 * get a cancel request (*requested).  Either may be NULL.  With
 * opts->dry_run, nothing changes and the counts say what would be done.
 */
JOBQ_API int jobq_cancel_jobs(jobq *db, const jobq_bulk_opts *opts, int64_t *cancelled,
                              int64_t *requested);

/*
 * Deletes expired sessions now; *count gets how many.  Their jobs go back
 * to ready.  The stall guard: when no session at all has heartbeated for
 * longer than the longest lease, the database itself may have stalled
 * (rather than every worker died), and reaping them all would take every
 * job from live workers.  Then nothing is reaped yet: every session gets
 * one more lease from now, and *held_ms (may be NULL) gets how long
 * reaping is held back (0 when it was not).  Called again once that time
 * has passed, it reaps the sessions that stayed silent; a heartbeat from
 * any session meanwhile shows the database working and ends the guard.
 */
JOBQ_API int jobq_reap_held(jobq *db, int64_t *count, int64_t *held_ms);
/* jobq_reap_held() without *held_ms. */
JOBQ_API int jobq_reap(jobq *db, int64_t *count);

typedef struct jobq_identity {
  char queue_id[37];     /* random UUID made by jobq init */
  int64_t epoch;         /* starts at 1, raised by jobq_epoch_bump() */
  int64_t seq;           /* the highest job id ever given */
  int schema_version;
  int64_t now_ms;        /* the database clock */
} jobq_identity;

JOBQ_API int jobq_identity_get(jobq *db, jobq_identity *out);

/*
 * After a restore from backup or a failover to an asynchronous replica:
 * ends every session (their jobs go back to ready) and starts a new epoch,
 * so workers may claim again.  *epoch gets the new epoch (may be NULL).
 */
JOBQ_API int jobq_epoch_bump(jobq *db, int64_t *epoch);

/* ---------------------------------------------------------------- lost writes */

/*
 * A database can lose writes it acknowledged and keep its identity: an
 * older backup restored, a replica that had not seen the latest commits
 * promoted.  Each handle remembers its last acknowledged write (a put:
 * its job, queue and payload; a completion: its job and claim token) and
 * reads it back at every session open and heartbeat, and before it
 * writes on a connection made again.  When it is missing (and was not
 * pruned since), every write of the handle fails with JOBQ_EIDENTITY,
 * naming it, until the epoch rises (jobq_epoch_bump).
 */

/* What proves that a completion was written: its job, its queue, the
 * claim token the completion was fenced by, and when the job was claimed
 * (jobq_job.claimed_at_ms, the database clock), a time before it was
 * written. */
typedef struct jobq_receipt {
  int64_t id;
  char queue[JOBQ_QUEUE_MAX + 1];
  char claim[JOBQ_CLAIM_LEN + 1];
  int64_t claimed_at_ms;
} jobq_receipt;

/*
 * Tells a new handle what earlier workers saw of its database, for it to
 * check as its own writes: seen->queue_id, ->epoch and ->seq (the highest
 * job id they saw), and the receipts r[0..n) of completions acknowledged
 * to them (copied).  jobq work keeps these in a state file.  Then checks
 * at once: JOBQ_EIDENTITY, with a message naming what is missing, when
 * the epoch or the job sequence went back or a completion is missing;
 * the handle's session opens refuse the same way.  Changes nothing when
 * the database is another (its queue id) or its epoch rose since (an
 * operator gave those writes up).  The receipts are checked while the
 * handle has no write of its own (then the newest alone), and all of them
 * by jobq_doctor().
 */
JOBQ_API int jobq_expect(jobq *db, const jobq_identity *seen, const jobq_receipt *r,
                         size_t n);
/* ---------------------------------------------------------------- periodic jobs */

/*
 * A schedule puts a job at each of its slots.  Its spec is one of
 *   five cron fields   "MIN HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK": lists
 *                      (1,15), ranges (1-5), steps (0-30/10; a star with
 *                      /15 for every 15th; 5/15 is 5-59/15), names
 *                      (jan-dec, sun-sat, any case), Sunday 0
 *                      or 7; when both day fields are restricted (neither
 *                      starts with '*') a day matching either one will do
 *   @hourly @daily (@midnight) @weekly @monthly @yearly (@annually)
 *   @every D           every D from 1s, at the multiples of D since
 *                      1970-01-01T00:00:00Z ("@every 1h" on the hour)
 * read on the wall clock of its zone (an IANA name of the system's tzdata,
 * default UTC).  Around daylight-saving changes it runs as Vixie cron and
 * cronie do: a job at a fixed time (neither the minute nor the hour field
 * starts with '*') whose time the clock skips runs at the change, and
 * runs once when the clock repeats its time; other jobs follow the wall
 * clock, so they skip the missing hour and run in both passes of the
 * repeated one.
 *
 * Schedules live in the database.  jobq_cron_run() puts the jobs of the
 * slots due on the database clock; any number of processes may call it
 * at once (every foreman does, with its heartbeat), and each slot is put
 * exactly once: the schedule's next slot moves on in the same transaction
 * as the put, only if no one moved it first.  When nothing ran at a slot,
 * the next run puts the latest slot that passed, once (never a burst of
 * them), unless the schedule skips missed slots: then a slot found more
 * than JOBQ_CRON_GRACE_MS late puts nothing.  The job's run-at time is
 * its slot.
 */
#define JOBQ_CRON_TEXT_MAX 255       /* bytes of a spec or a zone name */
#define JOBQ_CRON_GRACE_MS 60000

typedef struct jobq_cron_opts {
  const char *name;      /* as a queue name: [a-z0-9][a-z0-9_.-]{0,62} */
  const char *spec;      /* "0 3 * * mon-fri", "@daily", "@every 30s" */
  const char *tz;        /* NULL: "UTC" */
  int skip_missed;       /* a slot found late puts nothing */
  int replace;           /* 1: a schedule of the name is changed; 0: the
                            call refuses it with JOBQ_ESTATE */
  jobq_put_opts job;     /* the job of each slot: queue, payload and the
                            rest; delay_ms and run_at_ms must be 0 */
} jobq_cron_opts;

/* Fills opts with no name or spec, UTC and jobq_put_opts_init()'s job. */
JOBQ_API void jobq_cron_opts_init(jobq_cron_opts *opts);

/*
 * Adds a schedule (or with opts->replace, changes one: its next slot is
 * computed anew, a pause is kept).  *next_ms (may be NULL) gets its first
 * slot, after the database clock's now; *replaced (may be NULL) whether
 * a schedule of that name was there.  On error nothing is written.
 */
JOBQ_API int jobq_cron_add(jobq *db, const jobq_cron_opts *opts, int64_t *next_ms,
                           int *replaced);
/* Deletes a schedule (the jobs it put stay).  JOBQ_ENOTFOUND when there is
 * none of that name. */
JOBQ_API int jobq_cron_remove(jobq *db, const char *name);
/* A paused schedule puts nothing; jobq_cron_resume() starts it again from
 * the next slot after now (the slots of the pause are not put).
 * JOBQ_ENOTFOUND when there is none of that name. */
JOBQ_API int jobq_cron_pause(jobq *db, const char *name);
JOBQ_API int jobq_cron_resume(jobq *db, const char *name);

typedef struct jobq_cron_info {
  char *name;
  char *spec;
  char *tz;
  int skip_missed;
  int paused;
  int64_t next_ms;        /* the next slot (paused: the one it stopped at) */
  int64_t last_ms;        /* the last slot that put a job; 0: none yet */
  char *last_error;       /* why the last slot put nothing; NULL when it did */
  int64_t created_at_ms;
  int64_t updated_at_ms;
  jobq_put_opts job;      /* its strings and payload owned by the info */
} jobq_cron_info;

/* The schedules by name.  Free with jobq_cron_info_free(). */
JOBQ_API int jobq_cron_list(jobq *db, jobq_cron_info **out, size_t *n);
JOBQ_API void jobq_cron_info_free(jobq_cron_info *infos, size_t n);

/* What jobq_cron_run() did for one schedule's slot. */
typedef struct jobq_cron_slot {
  char *name;
  int64_t slot_ms;
  int64_t id;             /* the job put; 0: none (skipped or error) */
  int existed;            /* its unique key named an unfinished job, id */
  int skipped;            /* missed, and the schedule skips missed slots */
  char *error;            /* why the job could not be put (its options
                             do not fit this database); NULL otherwise */
} jobq_cron_slot;

/*
 * Puts the jobs of the slots due now on the database clock, in one
 * transaction, and moves each schedule to its next slot.  Costs one read
 * when nothing is due.  *slots (may be NULL) gets what happened to each
 * slot (free with jobq_cron_slots_free()), *n their number;
 * *wait_ms (may be NULL) how long until the next slot of any schedule
 * (-1: there is none).  A slot whose job cannot be put (a payload over
 * this handle's limit) is passed over with its error kept on the
 * schedule (jobq_cron_info's last_error); any other error changes
 * nothing.
 */
JOBQ_API int jobq_cron_run(jobq *db, jobq_cron_slot **slots, size_t *n, int64_t *wait_ms);
JOBQ_API void jobq_cron_slots_free(jobq_cron_slot *slots, size_t n);

/* The first slot of spec in zone tz (NULL: UTC) after Unix time after_ms,
 * computed here without the database: JOBQ_EINVAL for a bad spec or zone,
 * with a message on db (db may be NULL). */
JOBQ_API int jobq_cron_next(jobq *db, const char *spec, const char *tz, int64_t after_ms,
                            int64_t *next_ms);

/* ---------------------------------------------------------------- doctor */

typedef enum jobq_check_level {
  JOBQ_CHECK_OK = 0,
  JOBQ_CHECK_WARN,   /* works, but needs attention */
  JOBQ_CHECK_FAIL    /* puts the guarantees or the service at risk */
} jobq_check_level;

typedef struct jobq_check {
  char *name;        /* "durability", "clock", "vacuum", ... */
  int level;         /* jobq_check_level */
  char *detail;      /* what was found */
  char *advice;      /* what to do about it; NULL when all is well */
} jobq_check;

/*
 * Looks the queue database over: its durability settings, the server's
 * version, the difference between this host's clock and the database's,
 * transactions that hold back vacuum (naming the oldest), the hot table's
 * bloat, sessions near expiry or expired without a reaper, and dead jobs.
 * *out gets *n checks (free with jobq_checks_free()).  Reads only.
 */
JOBQ_API int jobq_doctor(jobq *db, jobq_check **out, size_t *n);
JOBQ_API void jobq_checks_free(jobq_check *checks, size_t n);

/* ---------------------------------------------------------------- parsing helpers */

/* "250ms", "30s", "5m", "1h", "2d" (and combinations like "1m30s") into
 * milliseconds; "0" alone needs no unit.  JOBQ_EINVAL for a missing unit,
 * a negative value or an overflow. */
JOBQ_API int jobq_parse_duration(const char *text, int64_t *ms);
/* A rate limit, "N/PERIOD" ("100/1s", "10/5m"; a bare unit is one of it:
 * "100/s" is 100/1s), into its count (1 to JOBQ_LIMIT_MAX) and period (1ms
 * to JOBQ_LIMIT_PERIOD_MAX).  JOBQ_EINVAL when it is not one. */
JOBQ_API int jobq_parse_rate(const char *text, int64_t *count, int64_t *period_ms);
/* "1048576", "512KiB", "1MiB", "2MB" into bytes. */
JOBQ_API int jobq_parse_size(const char *text, int64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif /* JOBQ_H */
