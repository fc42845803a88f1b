/*
 * store.h - the table of functions behind which each database engine
 * lives, chosen by the URL's scheme (like SQLite's sqlite3_vfs).  A store
 * knows SQL and its engine, nothing about processes or terminals.
 *
 * Transactions belong to the library: every store function except open,
 * close, native and migrate runs inside a transaction (or savepoint) that
 * the library began with begin() and ends with commit() or rollback().  A
 * store function that fails records its message with jobq__fail() and
 * leaves the rollback to the library.  Decisions that must be the same on
 * every engine (validation, backoff, where an acknowledged job goes, the
 * identity rules) come from lib/internal.h; the store applies them.
 *
 * To add a store, see docs/internals/new-store.md.
 */
#ifndef JOBQ_STORE_H
#define JOBQ_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "jobq.h"

/* A parsed database URL.  All strings are owned by the struct. */
typedef struct jobq_url {
  char *scheme;       /* "sqlite", ... */
  char *path;         /* sqlite: the file path */
  char *user, *password, *host, *port, *dbname; /* network stores */
  /* Query options, in order. */
  size_t nopts;
  char **keys;
  char **values;
} jobq_url;

int jobq__url_parse(jobq *db, const char *text, jobq_url *out);
void jobq__url_release(jobq_url *url);
/* The value of query option key, or NULL. */
const char *jobq__url_opt(const jobq_url *url, const char *key);

typedef struct jobq_store {
  const char *scheme;

  /* Connects; db->conn holds the store's state.  Validates url options
   * the store knows and refuses unknown ones (JOBQ_EURL). */
  int (*open)(jobq *db, const jobq_url *url);
  void (*close)(jobq *db);
  void *(*native)(jobq *db);
  /* Creates or migrates the schema in its own transaction. */
  int (*migrate)(jobq *db);

  /* depth 0: a real transaction that may write; depth > 0: a savepoint. */
  int (*begin)(jobq *db, int depth);
  int (*commit)(jobq *db, int depth);
  int (*rollback)(jobq *db, int depth);

  int (*identity)(jobq *db, jobq_identity *out);

  /* One validated job; fills *id and *existed. */
  int (*put)(jobq *db, const jobq_put_opts *o, int64_t *id, int *existed);

  /* Inserts the session row (the store fills host and pid). */
  int (*session_insert)(jobq *db, jobq_session *s);
  /* Deletes the row; its running jobs go back to ready, attempts given
   * back (or to cancelled when a cancel was requested). */
  int (*session_delete)(jobq *db, const char *sid);
  /* Renews the lease: JOBQ_EEXPIRED when the row is gone or belongs to
   * another epoch. */
  int (*heartbeat)(jobq *db, jobq_session *s);
  /* The stall guard, then reaping of expired sessions (their jobs back to
   * ready with prev_lost, or dead when no attempts are left).  guard_ms:
   * when nobody heartbeated for longer, every lease is renewed instead
   * (-1: the longest lease of any session).
   * Records this call as the latest heartbeat when beat is set. */
  int (*reap)(jobq *db, int64_t guard_ms, int beat, int64_t *count);
  int (*cancel_list)(jobq *db, const char *sid, int64_t **ids, size_t *n);

  int (*claim)(jobq *db, jobq_session *s, const char *const *queues,
               size_t nq, size_t max, jobq_job **jobs, size_t *n);
  /* One acknowledgement; sets ack->status, already and outcome.  Returns
   * an error only for database failures (the batch is rolled back). */
  int (*ack)(jobq *db, jobq_session *s, jobq_ack *ack);
  int (*extend)(jobq *db, jobq_session *s, const jobq_job *job, int64_t ms);

  int (*show)(jobq *db, int64_t id, jobq_job_info **out);
  int (*list)(jobq *db, const jobq_list_opts *o, jobq_job_info **out,
              size_t *n);
  int (*stats)(jobq *db, jobq_queue_stats **out, size_t *n);
  int (*sessions)(jobq *db, jobq_session_info **out, size_t *n);

  int (*retry)(jobq *db, int64_t id);
  int (*retry_dead)(jobq *db, const char *queue, int64_t *count);
  int (*cancel)(jobq *db, int64_t id, int *now);
  /* paused: 0/1, or -1 to leave; policy: "block"/"skip" or NULL. */
  int (*set_queue)(jobq *db, const char *queue, int paused,
                   const char *policy);
  int (*prune)(jobq *db, int64_t older_than_ms, int64_t *count);
  int (*epoch_bump)(jobq *db, int64_t *epoch);

  /* Wake-ups (outside transactions): watch() sets *fd to a descriptor
   * that turns readable on another connection's commit; changed() drains
   * it and returns 1 when something changed since its last call.  NULL
   * when the store cannot watch. */
  int (*watch)(jobq *db, int *fd);
  int (*changed)(jobq *db);
} jobq_store;

extern const jobq_store jobq__store_sqlite;

#endif
