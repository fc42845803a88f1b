/*
 * internal.h - what the library's files share and nothing outside lib/ may
 * use: the handle and session structs, error reporting onto a handle, the
 * transaction wrapper every public call goes through, and the decisions
 * (backoff, where an acknowledged job goes) that every store applies the
 * same way.
 */
#ifndef JOBQ_INTERNAL_H
#define JOBQ_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "jobq.h"
#include "store/store.h"

#define JOBQ_SCHEMA_VERSION 1
#define JOBQ_ERRMSG_MAX 512
#define JOBQ_SESSION_ID_LEN 32

struct jobq {
  const jobq_store *store;     /* NULL until the URL named a store */
  void *conn;                  /* the store's own connection state */
  int txn_depth;               /* 0: none; 1: a caller's jobq_begin() */
  size_t max_payload;
  uint64_t rng;                /* xorshift state for jitter */
  /* What this handle has seen of the database's identity. */
  int identity_known;
  char queue_id[37];
  int64_t epoch;
  int64_t max_seq;
  int err;
  char errmsg[JOBQ_ERRMSG_MAX];
};

struct jobq_session {
  jobq *db;
  char id[JOBQ_SESSION_ID_LEN + 1];
  char name[128];
  int64_t lease_ms;
  int64_t epoch;
  int64_t in_flight;
  int64_t done;     /* acknowledged by this session: written by heartbeats */
  int64_t failed;
};

/* Records err and a printf-style message on db (db may be NULL); returns
 * err so callers can `return jobq__fail(db, JOBQ_EINVAL, "...")`. */
int jobq__fail(jobq *db, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears the last error; returns JOBQ_OK. */
int jobq__ok(jobq *db);

/* Starts a write transaction, or a savepoint inside a caller's one. */
int jobq__txn_begin(jobq *db);
/* Commits (or releases the savepoint) when rc is JOBQ_OK, else rolls back
 * keeping the error already recorded; returns the final code. */
int jobq__txn_end(jobq *db, int rc);

/* Checks the database identity against what db has seen, inside a
 * transaction; records it the first time.  JOBQ_EIDENTITY on a different
 * queue id or a job sequence that went back without an epoch change. */
int jobq__identity_check(jobq *db);

/* Random bytes from the kernel into buf (never fails in practice; falls
 * back to the clock and pid).  jobq__rand() draws from db's generator. */
void jobq__random(void *buf, size_t len);
uint64_t jobq__rand(jobq *db);
/* 2*len lowercase hex characters of random bytes, NUL-terminated. */
void jobq__random_hex(char *out, size_t len);

/* Milliseconds to wait before attempt `attempt + 1` after `attempt` failed:
 * base * 2^(attempt-1), capped at JOBQ_BACKOFF_CAP_MS, times a jitter in
 * [0.5, 1.5) drawn from rnd. */
int64_t jobq__backoff_ms(int64_t base_ms, int attempt, uint64_t rnd);

/* Where an acknowledged job goes, given what its row says. */
typedef struct jobq_ack_row {
  int attempts;
  int max_attempts;
  int64_t backoff_ms;
  int cancel_requested;
} jobq_ack_row;

typedef struct jobq_ack_plan {
  int state;          /* JOBQ_STATE_READY, _DONE, _DEAD or _CANCELLED */
  int64_t delay_ms;   /* READY: run_at = now + delay_ms */
  int spend;          /* READY: 0 gives the attempt back (release) */
  const char *error;  /* the text to keep as last_error, or NULL */
  size_t error_len;
} jobq_ack_plan;

void jobq__ack_plan(const jobq_ack_row *row, const jobq_ack *ack,
                    uint64_t rnd, jobq_ack_plan *plan);

/* Validation shared by every store; each records a message naming the
 * input.  index >= 0 prefixes "job N: " for jobq_put_many(). */
int jobq__check_put(jobq *db, const jobq_put_opts *o, long index);
int jobq__check_key(jobq *db, const char *what, const char *key, long index);

/* Returns a heap copy of s (NULL stays NULL); *failed set on ENOMEM. */
char *jobq__strdup(const char *s, int *failed);
void *jobq__memdup(const void *p, size_t len, int *failed);

#endif
