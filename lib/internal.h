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
#include "sql.h"
#include "store/store.h"

#define JOBQ_SCHEMA_VERSION 10
#define JOBQ__SCHEMA_FOREIGN 2
#define JOBQ_ERRMSG_MAX 512
#define JOBQ_SESSION_ID_LEN 32
/* The counters of a queue in jobq_tally: 8 counts and the wait buckets. */
#define JOBQ_TALLY_COUNTERS (8 + JOBQ_WAIT_BUCKETS)

struct jobq {
  const jobq_store *store;     /* NULL until the URL named a store */
  void *conn;                  /* the store's own connection state */
  char *url_redacted;          /* the URL without its password, for messages */
  int schema_missing;          /* set by a store: only jobq_init() may run
                                  (JOBQ__SCHEMA_FOREIGN: the file holds
                                  another application's tables) */
  int readonly;                /* jobq_open_readonly(): nothing is written */
  int txn_depth;               /* 0: none; 1: a caller's jobq_begin() */
  size_t max_payload;
  uint64_t rng;                /* xorshift state for jitter */
  /* What this handle has seen of the database's identity. */
  int identity_known;
  char queue_id[37];
  int64_t epoch;
  int64_t max_seq;
  /* The writes acknowledged to this handle that the database must still
   * have (lib/mark.c): its own last one, and those of earlier workers
   * that jobq_expect() told of.  connects: how many times a store made
   * its connection again (a store adds 1 each time); checked: its value
   * at the last check.  lost: a check found a write missing, and every
   * write is refused until the epoch rises.  done: its last completion,
   * which every claim reads back; first: the first completion since the
   * last check, when there were several since (unchecked), read back
   * beside it (lib/mark.c). */
  struct jobq__mark {
    int64_t id;
    char queue[JOBQ_QUEUE_MAX + 1];  /* "" when not known */
    char claim[JOBQ_CLAIM_LEN + 1];  /* a completion's token; "" for a put */
    uint64_t digest;                 /* a put: its payload's */
    int64_t at_ms;     /* the database clock before it was written, or 0 */
    int64_t mono_ms;   /* a write of this handle's: when its call began */
  } mark, done, first, *expected;
  size_t nexpected;
  unsigned connects, checked;
  unsigned txn_connects;       /* connects when the transaction began */
  int txn_committed;           /* a store committed with the transaction's last
                                  statement (jobq_how's ends) */
  int lost, unchecked;
  /* Set by a store when it connects: the most bytes of values one
   * statement may carry (0: no limit), for the sets of lib/sql.c; and
   * how far apart the ids of the rows of one multi-row INSERT are (0:
   * not known, one row a statement), where an INSERT does not return
   * them (insert_id). */
  size_t stmt_bytes;
  int64_t id_step;
  /* The login may not read payloads (the producer role): a put is
   * proved by its id and queue alone. */
  int mark_blind;
  /* Set by a store with its error when the whole transaction may succeed
   * if run again (a deadlock, a serialization failure). */
  int retry;
  int need;                    /* the role the public call at work needs
                                  (jobq__need) */
  int err;
  char errmsg[JOBQ_ERRMSG_MAX];
  /* Set by a store when it connects: a setting of the database that
   * weakens jobq's promises ("" when none); see jobq_warning(). */
  char warning[JOBQ_ERRMSG_MAX];
  /* jobq_watch_queues(): the queues whose wake-ups count (none: all). */
  char **watched;
  size_t nwatched;
  /* Wake-ups of this handle's own (jobq__wake) for queues it watches: in
   * the open transaction, and committed since the last jobq_changed(). */
  int wake_pending, woke;
  int64_t orphans_swept_ms;    /* monotonic, when this handle's reap last looked */
  /* The queues with a limit that the last claim's look found
   * (lib/limit.c), joined by commas; "" when none. */
  char *limited;
  size_t limited_cap;
  /* The queues in parts that the last claim's look found (lib/part.c),
   * the same way. */
  char *parted;
  size_t parted_cap;
  /* The hash of this handle's next job without a key (0: not drawn). */
  uint32_t part_next;
  /* What the open transaction and its savepoints added to the
   * counters, one entry per queue and level (lib/counts.c). */
  struct jobq_count {
    char *queue;
    int depth;  /* the txn_depth that added it */
    int64_t done, dead, cancelled;
  } *counts;
  size_t ncounts, capcounts;
  /* The session whose counter rows the open transaction adds to ("":
   * the shared rows); see jobq__counts_owner. */
  char counts_owner[JOBQ_SESSION_ID_LEN + 1];
  int64_t counts_shard;  /* which of the session's rows: its view's */
};

/* The hex characters every claim token of a session (or a joined view of
 * it, jobq_session_join) starts with: the view's own, so that each view
 * reconciles only the jobs of its own claims.  The last one is the
 * view's number (0: the session that was opened), hence at most 15
 * joins. */
#define JOBQ__TAG_LEN 4
#define JOBQ__VIEWS_MAX 15

struct jobq_session {
  jobq *db;
  char id[JOBQ_SESSION_ID_LEN + 1];
  char name[128];
  int64_t lease_ms;
  int64_t epoch;
  int64_t in_flight;
  int64_t done;     /* acknowledged by this session: written by heartbeats */
  int64_t failed;
  int64_t reaped;   /* sessions its last heartbeat ended (jobq_session_reaped) */
  int64_t peers;    /* live sessions at its last heartbeat (jobq_session_peers) */
  /* jobq_session_start_now(): how many jobs of the next claim start at
   * once (SIZE_MAX: all); jobq_session_started(): held-back jobs started
   * since the last transaction. */
  size_t start_now;
  int64_t *started;
  size_t nstarted, capstarted;
  /* Jobs of claims whose commit may have gone through unseen (its reply
   * was lost and could not be read back): given back by the session's
   * next transaction, under their claim tokens.  Id 0 stands for every
   * job of a claim whose jobs are not known, whose tokens all begin with
   * claim. */
  struct jobq_doubtful {
    int64_t id;
    char claim[JOBQ_CLAIM_LEN + 1];
  } *doubtful;
  size_t ndoubtful, capdoubtful;
  /* What it did since its figures were last written, per queue
   * (lib/tally.c). */
  struct jobq_tally_acc {
    char queue[JOBQ_QUEUE_MAX + 1];
    int64_t v[JOBQ_TALLY_COUNTERS];
  } *tally;
  size_t ntally;
  int64_t folded_ms;     /* monotonic, when it last folded old minutes */
  /* The jobs its claims handed to the worker that no acknowledgement has
   * ended yet, by id (lib/held.c); held_unknown once they could not all
   * be kept (no memory).  reconciled: the handle's connects when the
   * session last compared them with what the database shows under it
   * (jobq__session_reconcile). */
  struct jobq_held_job {
    int64_t id;          /* 0: a free slot */
    int64_t claimed_at;
    int attempt;
    char claim[JOBQ_CLAIM_LEN + 1];
    char queue[JOBQ_QUEUE_MAX + 1];
    char *key;           /* its ordering key (owned), or NULL */
  } *held;
  size_t nheld, capheld;
  int held_unknown;
  unsigned reconciled;
  /* The queues in parts whose claimers it joined (lib/part.c). */
  char **joined;
  size_t njoined;
  /* A view of a session opened on another handle (jobq_session_join):
   * root is the session it joined, NULL for the one opened; view, its
   * number (0 for the root); views, the root's numbers in use, a bit
   * each (atomic: views join and close on other threads).  A view's done
   * and failed go to the root's (atomic), which every heartbeat writes. */
  jobq_session *root;
  int view;
  unsigned views;
  char tag[JOBQ__TAG_LEN + 1];
};

/* lib/held.c: the jobs s holds.  add: the n jobs of a claim (a job
 * claimed again renewed); find: a job's entry, or NULL; drop: the job
 * no longer held; release: all freed. */
void jobq__held_add(jobq_session *s, const jobq_job *jobs, size_t n);
struct jobq_held_job *jobq__held_find(const jobq_session *s, int64_t id);
void jobq__held_drop(jobq_session *s, int64_t id);
void jobq__held_release(jobq_session *s);

/* lib/limit.c: what a claim may take of each queue under the queues'
 * limits, taken under their locks in the claim's transaction: names[i]
 * (every unpaused queue the claim wants, in name order) and caps[i],
 * how many of its jobs; rate_ms[i] is its rate period, or 0 with no rate;
 * per_key[i] how many jobs of one ordering key may run, or 0 with no such
 * limit.  jobq__limit_claimed() counts the claimed jobs against the
 * rates. */
typedef struct jobq__limit_plan {
  char **names;
  int64_t *caps, *rate_ms, *per_key;
  /* A rate per key: how many of one key in key_ms (0: none). */
  int64_t *key_n, *key_ms;
  size_t n;
} jobq__limit_plan;
/* Whether queue's ordering keys order its jobs: not when it has a limit
 * per key.  A put decides it in its own statements (KEY_TAKEN,
 * PUT_KEYED_ROWS, PUT_WAITS in lib/sql.c). */
int jobq__key_orders(jobq *db, const char *queue, int *orders);
/* Keeps the claim's look's list of limited queues (col of r) on db;
 * whether a claim of the nq queues (every one when nq is 0) needs a
 * plan. */
int jobq__limited_keep(jobq *db, jobq_rows *r, int col);
int jobq__limited(const jobq *db, const char *const *queues, size_t nq);
int jobq__limits_plan(jobq *db, const char *const *queues, size_t nq, size_t max,
                     jobq__limit_plan *p);
int jobq__limit_claimed(jobq *db, const jobq__limit_plan *p, const jobq_job *jobs, size_t n);
void jobq__limit_plan_release(jobq__limit_plan *p);

/* lib/part.c: a queue's parts.  part_hash: a new job's hash (of its key,
 * or the handle's next when it has none), whose remainder by the count of parts is
 * its part (PART_OF in lib/sql.c).  part_round: the hash of the first
 * of n keyless jobs that go round the parts (the handle's round moves on
 * by n).  part_run: how far the hash of the j-th (from 0) of the m
 * keyless jobs of one put to a queue of parts parts (as the put read it)
 * moves on from the put's part_round, so that they make runs of
 * neighbours, one a part (PostgreSQL's INSERT computes the same, PUT_ROWS
 * in lib/sql.c): each part gets m / parts of them, give or take one, and
 * a claim of a part takes rows that lie together.  names_has: whether
 * the names in list (joined by commas) hold one of the nq queues (any
 * when nq is 0);
 * names_keep: column col of r (such a list, or NULL) into *list, of
 * *cap bytes, grown as needed.
 * parted_keep / parted: the claim's look's queues in parts, as
 * jobq__limited_keep / jobq__limited.  parts_mine: s's parts of queue,
 * locked until commit (*parts, free()), after it joined the queue's
 * claimers the first time; parts_join: s joins queue's claimers (unless
 * it did) and takes its share; parts_claim_lock: the same for those of
 * the nq queues in parts (every one when nq is 0), then s's part lock on
 * each (shared: a balance that moves a part of s takes it exclusive),
 * for a claim that reads s's parts without locking their rows;
 * parts_joined: whether s joined queue's claimers (in this handle's
 * memory); parts_forget: s joins again at its next claim
 * (its transaction failed).  parts_heartbeat: s balances the parts of
 * the queues it claims from.  parts_leave: session sid's parts handed
 * to the others and its claims forgotten, as it ends.  parts_rekey: the
 * unfinished jobs of key back in the key's part (a job retried from the
 * archive comes back in its id's).  parts_of_sessions: each
 * session's parts into v[0..n); session_parts_free: what it added. */
int64_t jobq__part_hash(jobq *db, const char *key);
int64_t jobq__part_round(jobq *db, size_t n);
int64_t jobq__part_run(int64_t parts, int64_t j, int64_t m);
int jobq__names_has(const char *list, const char *const *queues, size_t nq);
int jobq__names_keep(jobq *db, jobq_rows *r, int col, char **list, size_t *cap);
int jobq__parted_keep(jobq *db, jobq_rows *r, int col);
int jobq__parted(const jobq *db, const char *const *queues, size_t nq);
int jobq__parts_mine(jobq *db, jobq_session *s, const char *queue, int64_t **parts, size_t *n);
int jobq__parts_join(jobq *db, jobq_session *s, const char *queue);
int jobq__parts_joined(const jobq_session *s, const char *queue);
int jobq__parts_claim_lock(jobq *db, jobq_session *s, const char *const *queues, size_t nq);
void jobq__parts_forget(jobq_session *s);
int jobq__parts_heartbeat(jobq *db, jobq_session *s);
int jobq__parts_leave(jobq *db, const char *sid);
int jobq__parts_rekey(jobq *db, const char *queue, const char *key);
int jobq__parts_of_sessions(jobq *db, jobq_session_info *v, size_t n);
void jobq__session_parts_free(jobq_session_info *x);

/* lib/tally.c: counting claims (after their commit) and acknowledgements
 * (after theirs: statuses and outcomes set); recording, in the
 * acknowledging transaction, the attempts that failed and go again;
 * writing the counts in a heartbeat's or a close's transaction and
 * clearing them once it committed; folding old minutes now and then in a
 * transaction of its own (errors ignored); freeing. */
void jobq__tally_claimed(jobq_session *s, const jobq_job *jobs, size_t n);
void jobq__tally_acked(jobq_session *s, const jobq_ack *acks, size_t n);
int jobq__tally_attempts(jobq *db, jobq_session *s, const jobq_ack *acks, size_t n);
int jobq__tally_write(jobq *db, jobq_session *s);
void jobq__tally_written(jobq_session *s);
void jobq__tally_fold(jobq *db, jobq_session *s);
/* Folds the minutes older than JOBQ_TALLY_KEEP_MIN now, in a transaction
 * of its own; JOBQ_OK or the error. */
int jobq__tally_fold_now(jobq *db);
void jobq__tally_release(jobq_session *s);
/* Rows of TALLY_READ (arg: the first minute), TALLY_TOTALS or TALLY_OLD
 * (arg: the minute before which), into *out (jobq_tallies_free()). */
int jobq__tally_read(jobq *db, int id, int64_t arg, jobq_tally **out, size_t *n);

/* Whether a wake-up for queue counts, and the filter freed (lib/watch.c). */
int jobq__watching(const jobq *db, const char *queue);
void jobq__watch_release(jobq *db);

/* Records err and a printf-style message on db (db may be NULL); returns
 * err so callers can `return jobq__fail(db, JOBQ_EINVAL, "...")`. */
int jobq__fail(jobq *db, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears the last error; returns JOBQ_OK. */
int jobq__ok(jobq *db);

/* The roles of `jobq init --print-roles`, and the owner of the schema
 * (who runs jobq init), by what they may do. */
enum {
  JOBQ__ROLE_ANY = 0,   /* not known */
  JOBQ__ROLE_READER,    /* stats, ls, show, sessions, doctor */
  JOBQ__ROLE_PRODUCER,  /* put */
  JOBQ__ROLE_WORKER,    /* sessions, claims, acknowledgements, reaping */
  JOBQ__ROLE_ADMIN,     /* retry, cancel, pause, prune, purge, epoch bump */
  JOBQ__ROLE_OWNER      /* jobq init */
};
/* A public call says which role it needs, first thing: a permission
 * failure names it (jobq__denied). */
static inline void jobq__need(jobq *db, int role) { db->need = role; }
/* Records a permission failure: what was being done, the server's
 * message, and the role that may do it, named as the store's roles SQL
 * names it: prefix followed by "reader", "producer", "worker" or
 * "admin".  Returns JOBQ_EDENIED: running it again will not help. */
int jobq__denied(jobq *db, const char *what, const char *msg, const char *prefix);

/* The last error, kept across work whose own failure must not replace
 * it (a rollback after a failed commit, say). */
typedef struct jobq__error {
  int err;
  char msg[JOBQ_ERRMSG_MAX];
} jobq__error;
void jobq__error_keep(const jobq *db, jobq__error *e);
void jobq__error_restore(jobq *db, const jobq__error *e);

/* JOBQ_OK when db is a connected handle, else JOBQ_EINVAL (with a
 * message when db is not NULL). */
int jobq__usable(jobq *db);
/* jobq__usable(), and the schema is there: JOBQ_ESCHEMA until jobq_init()
 * made it on stores that do not make it on open. */
int jobq__ready(jobq *db);

/* Starts a write transaction, or a savepoint inside a caller's one. */
int jobq__txn_begin(jobq *db);
/* Commits (or releases the savepoint) when rc is JOBQ_OK, else rolls back
 * keeping the error already recorded; returns the final code. */
int jobq__txn_end(jobq *db, int rc);
/* After a transaction ended with rc: 1 when it should run again from the
 * start (the store flagged a deadlock or the like, the transaction was
 * the library's own, and *attempt is under the limit), after a short
 * jittered sleep; 0 otherwise.  *attempt starts at 0.
 *
 *   int attempt = 0, rc;
 *   do {
 *     if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
 *     rc = jobq__txn_end(db, work(db));
 *   } while (jobq__txn_retry(db, rc, &attempt));
 */
int jobq__txn_retry(jobq *db, int rc, int *attempt);

/* ---------------------------------------------------------------- acknowledged
 * writes (lib/mark.c) */

/* Notes the last write of a committed put (n jobs, existed[i] set for a
 * job that was there already) or batch of acknowledgements, begun at
 * monotonic mono_ms: the handle's mark from then on. */
void jobq__mark_put(jobq *db, const jobq_put_opts *opts, const int64_t *ids,
                    const unsigned char *existed, size_t n, int64_t mono_ms);
void jobq__mark_acks(jobq *db, const jobq_ack *acks, size_t n, int64_t mono_ms);
/* Inside a transaction: checks that the database still has the handle's
 * mark (or, before the handle wrote one, the writes jobq_expect() told
 * of).  JOBQ_EIDENTITY, naming what is missing, when it does not; the
 * handle then refuses every write until the epoch rises.  The identity
 * must have been checked in the same transaction. */
int jobq__marks_check(jobq *db);
/* The completions for CLAIM_ENTER to look for (0 and "" when the handle
 * made none): the first since the last check (or the last), and the
 * last; and, given the two counts it read, JOBQ_OK when both are there,
 * else the whole check's answer. */
void jobq__marks_args(const jobq *db, int64_t *first, const char **first_claim,
                      int64_t *last, const char **last_claim);
int jobq__marks_seen(jobq *db, int64_t first_found, int64_t last_found);
/* For a transaction that writes (a put, an acknowledgement): the identity
 * and the marks checked when the handle has not looked since its
 * connection was made (again), or a check found a write missing. */
int jobq__write_check(jobq *db);
/* Whether jobq__write_check() would look. */
int jobq__write_check_due(const jobq *db);
/* The epoch rose (an operator's bump): the writes of the old one are
 * the operator's to have given up. */
void jobq__marks_forget(jobq *db);
/* The doctor's check of the writes the handle knows of. */
int jobq__marks_doctor(jobq *db, jobq__checks *c);

/* lib/migrate.c: at open, the schema's version read (the store
 * connected): a newer one refused, a missing or older one noted
 * (db->schema_missing), or made on an embedded database; and the runner
 * of jobq_init(). */
int jobq__schema_check(jobq *db);
int jobq__migrate(jobq *db);

/* Checks the database identity against what db has seen, inside a
 * transaction; records it the first time.  JOBQ_EIDENTITY on a different
 * queue id or a job sequence that went back without an epoch change. */
int jobq__identity_check(jobq *db);
/* The same check of the identity in the first five columns of r, a row
 * of CLAIM_ENTER (NULL: there was no row). */
int jobq__identity_check_row(jobq *db, jobq_rows *r);

/* Draws from db's generator (seeded from the kernel's random bytes). */
uint64_t jobq__rand(jobq *db);
/* bytes[0..len) as 2*len lowercase hex characters, NUL-terminated; out
 * may be bytes - len, as jobq__random_hex() uses it. */
void jobq__hex(char *out, const unsigned char *bytes, size_t len);
/* 2*len lowercase hex characters of random bytes, NUL-terminated, from
 * one draw of the kernel's randomness however many are asked for. */
void jobq__random_hex(char *out, size_t len);
/* A random (version 4) UUID in its 36-character form. */
void jobq__uuid(char out[37]);

/* Milliseconds of the monotonic clock (lib/clock.c). */
int64_t jobq__mono_ms(void);

/* Milliseconds to wait before attempt `attempt + 1` after `attempt` failed:
 * base * 2^(attempt-1), capped at JOBQ_BACKOFF_CAP_MS, times a jitter in
 * [0.5, 1.5) drawn from rnd. */
int64_t jobq__backoff_ms(int64_t base_ms, int attempt, uint64_t rnd);

/* What an acknowledgement reads of its job's row (JOBQ_Q_ACK_ROW), for
 * where the job goes (jobq__ack_plan) and the locks it takes to go there
 * (lib/order.c). */
typedef struct jobq_ack_row {
  int attempts;
  int max_attempts;
  int64_t backoff_ms;
  int cancel_requested;
} jobq_ack_row;

/* What ACK_ROWS read for one acknowledgement: found when its claim
 * holds, then the row, the job's queue and ordering key (malloc'd, key
 * NULL when it has none), and where the row is, for REQUEUE_ROWS and
 * ARCHIVE_ROWS in the same transaction (PostgreSQL: its ctid). */
typedef struct jobq_ack_got {
  int found;
  jobq_ack_row row;
  char *queue, *key;
  int barrier;
  int children;
  unsigned char at[16];
  size_t at_len;
} jobq_ack_got;

/* A job leaving the hot table by an acknowledgement, not a barrier:
 * where ACK_ROWS found its row, its outcome
 * (done, dead or cancelled), its result (done only) and its new last
 * error (NULL: kept). */
typedef struct jobq_archive_row {
  const unsigned char *at;
  size_t at_len;
  int64_t id;
  int state;
  const void *result;
  size_t result_len;
  const char *error;
  size_t error_len;
} jobq_archive_row;

/* Where an acknowledged job goes, given what its row says. */
typedef struct jobq_ack_plan {
  int state;          /* JOBQ_STATE_READY, _DONE, _DEAD or _CANCELLED */
  int64_t delay_ms;   /* READY: run_at = now + delay_ms */
  int spend;          /* READY: 0 gives the attempt back (release) */
  const char *error;  /* the text to keep as last_error, or NULL */
  size_t error_len;
} jobq_ack_plan;


/* The parts of jobq_ack_many() and jobq_claim(), for jobq_ack_claim():
 * checking the arguments (no SQL; resets the statuses), the work inside
 * the caller's transaction, and the session's counters afterwards (rc:
 * how the transaction ended). */
int jobq__ack_check(jobq *db, jobq_ack *acks, size_t n);
int jobq__ack_batch(jobq *db, jobq_session *s, jobq_ack *acks, size_t n);
/* For ACK_ROWS: the ack of acks[0..n) (ids ascending) whose job
 * is r's current row, with the columns id, claim, attempts, max_attempts,
 * backoff_ms, cancel_requested, queue, order_key, barrier, recorded in
 * its entry of got[0..n); that entry, or NULL when no ack has that job
 * and claim.  *failed is set when out of memory. */
jobq_ack_got *jobq__ack_got_row(jobq *db, jobq_rows *r, jobq_ack *const *acks, size_t n,
                                jobq_ack_got *got, int *failed);
void jobq__ack_done(jobq_session *s, jobq_ack *acks, size_t n, int rc);

/* ---------------------------------------------------------------- dependencies
 * (lib/after.c): jobs put after others. */

/* Before a put of opts[0..n) takes its order locks: the parents the jobs
 * name by id marked (which locks their rows, as an acknowledgement does
 * first) and their states read into *a (release with
 * jobq__after_release).  A job with an unknown parent is refused. */
typedef struct jobq_after_put jobq_after_put;
int jobq__after_begin(jobq *db, const jobq_put_opts *opts, size_t n, int index_names,
                      jobq_after_put **a);
/* Whether opts names parents. */
int jobq__after_has(const jobq_put_opts *o);
/* After the n jobs of the put went in (ids; existed[i]: job i was there
 * already, by its unique key), as though they had no parents: their
 * edges, those that wait made pending with their count of parents left,
 * and those whose parent died or was cancelled (a job of the batch that
 * this cancelled, by place, included) cancelled, unless they run on any
 * outcome. */
int jobq__after_put(jobq *db, jobq_after_put *a, const jobq_put_opts *opts, size_t n,
                    const int64_t *ids, const unsigned char *existed);
void jobq__after_release(jobq_after_put *a);
/* The jobs parents[0..n) left the hot table with outcomes[i] (DONE, DEAD
 * or CANCELLED): their pending children counted down and made ready (or
 * waiting for a barrier) at zero, or cancelled, naming the parent, when
 * one died or was cancelled and they do not run on any outcome; their
 * own children in turn. */
int jobq__after_finished(jobq *db, const int64_t *parents, const int *outcomes, size_t n);

/* The status of an ack that nobody has taken yet (the completions at
 * once leave it on the acks they do not take, lib/ack.c). */
#define JOBQ_ACK_PENDING 1

/* ---------------------------------------------------------------- ordering
 * (lib/order.c): ordering keys, barriers and the archive. */

/* What the ordering logic needs to know of a job. */
typedef struct jobq_jobref {
  int64_t id;
  const char *queue;
  const char *key;    /* ordering key, or NULL */
  int barrier;
  int children;       /* jobs were put after it (lib/after.c) */
} jobq_jobref;

/* Takes the named locks under which a job's place in its queue's order may be
 * read or changed (put, finish, retry), on stores with concurrent
 * writers.  finishing: the job leaves the hot table. */
int jobq__lock_job(jobq *db, const jobq_jobref *job, int finishing);
/* The locks of jobs[0..n), all finishing, sorted by jobq__lock_cmp():
 * as jobq__lock_job() would take them one job after the other, each
 * once. */
int jobq__lock_finishing(jobq *db, const jobq_jobref *const *jobs, size_t n);
/* The locks of queue's ordering keys keys[0..n), distinct and sorted
 * (strcmp), in that order; the queue's taken before. */
int jobq__lock_keys(jobq *db, const char *queue, const char *const *keys, size_t n);
/* taken[i] set when queue's key keys[i] (distinct, sorted) has a job, in
 * any state, or a dead one that blocks it: a new job of the key waits.
 * Under the keys' locks. */
int jobq__keys_taken(jobq *db, const char *queue, const char *const *keys, size_t n,
                     unsigned char *taken);
/* Sorts locks[0..n) as a batch takes them, every queue's lock before any
 * key's, each by jobq__lock_cmp(), and drops the repeated ones (of a
 * lock given twice, the first one's mode stays): how many are left. */
size_t jobq__locks_sort(jobq_lock *locks, size_t n);
/* The order in which a transaction that needs the locks of several jobs
 * takes them (<0, 0, >0 as strcmp): by queue, then key (none first), byte
 * by byte; every queue's lock before any key's.  Taken in any other order,
 * two transactions that need the same two keys deadlock. */
int jobq__lock_cmp(const char *queue_a, const char *key_a, const char *queue_b,
                   const char *key_b);
/* Whether a new job (id 0) or a retried one (its id) must wait.  For a
 * new job that is no barrier, barrier_known may say whether its queue has
 * an unfinished barrier (0 or 1; -1: look). */
int jobq__must_wait(jobq *db, const jobq_jobref *job, int barrier_known, int *wait);
/* Whether a job leaving pending (its parents done) must wait, in its
 * place by id: a barrier for any earlier job of its queue; any other for
 * an earlier barrier, and a keyed one for an earlier job of its key or a
 * dead one that blocks the key (where keys order). */
int jobq__must_wait_after(jobq *db, const jobq_jobref *job, int *wait);
/* Whether queue has an unfinished barrier. */
int jobq__barrier_pending(jobq *db, const char *queue, int *yes);
/* Lets the next waiting job of queue's key run when its turn has come.
 * head_left: the key's one active (ready or running) job has just left
 * the hot table, so that none is active and the look for one is spared:
 * made after every finish of a keyed job, it would walk the key index's
 * entries of the key's finished jobs that vacuum has not removed yet. */
int jobq__promote_key(jobq *db, const char *queue, const char *key, int head_left);
/* Moves a job that was in state from (JOBQ_STATE_WAITING, _READY or
 * _RUNNING) to the archive with its outcome (JOBQ_STATE_DONE, _DEAD or
 * _CANCELLED), counts it, and lets the jobs that waited for it run.  A
 * result is kept for DONE only; error (or NULL to keep the job's last
 * error) becomes the last error.  The order locks must be held. */
int jobq__archive(jobq *db, const jobq_jobref *job, int from, int state,
                  const void *result, size_t result_len, const char *error,
                  size_t error_len);
/* jobq__archive() for running jobs r[0..n) (jobs[0..n), none a barrier,
 * in jobq__lock_cmp()) by set statements (ARCHIVE_ROWS), then what
 * follows for each, and each queue's look for a barrier once.  Their
 * rows are locked by ACK_ROWS and their order locks held. */
int jobq__archive_many(jobq *db, const jobq_archive_row *r, const jobq_jobref *const *jobs,
                       size_t n);
/* Adds to a queue's counters of finished jobs (lib/counts.c), inside a
 * transaction, which writes them at its end (jobq__counts_write). */
int jobq__count_add(jobq *db, const char *queue, int64_t done, int64_t dead,
                    int64_t cancelled);
/* Writes what the transaction added to the counters: the last thing
 * before the outermost commit. */
int jobq__counts_write(jobq *db);
/* The open transaction is session s's: what it adds to the counters
 * goes to that session's own rows (one per view of it, so that views on
 * several connections do not wait for one another), not to the shared
 * ones.  Until the outermost transaction ends. */
void jobq__counts_owner(jobq *db, const jobq_session *s);
/* Session's counter rows (an ended session's, its row already deleted)
 * moved into this transaction's counts (jobq__count_add), and deleted. */
int jobq__counts_fold(jobq *db, const char *session);
/* After a transaction or savepoint ended (db->txn_depth already the
 * level around it): what it added is kept for the level around it
 * (kept), or dropped; everything once the outermost has ended. */
void jobq__counts_settle(jobq *db, int kept);
/* The ordering facts of an unfinished job, its row locked: fills ref
 * (release it with jobq__job_ref_release) and *state, and returns 1; 0
 * when there is no such job. */
int jobq__job_ref(jobq *db, int64_t id, jobq_jobref *ref, int *state);
void jobq__job_ref_release(jobq_jobref *ref);

/* Cancels job id inside a transaction, as jobq_cancel() does: *now is 1
 * when it was archived as cancelled, 0 when its worker was asked to stop
 * it (lib/admin.c). */
int jobq__cancel(jobq *db, int64_t id, int *now);

/* A named place where JOBQ_FAILPOINT may inject a fault (lib/failpoint.c
 * lists them): JOBQ_OK to go on, or an error recorded on db. */
int jobq__failpoint(jobq *db, const char *name);

/* Adds a check to a doctor's list (lib/doctor.c): level, name, what to do
 * (NULL when all is well), and what was found. */
int jobq__check_add(jobq__checks *c, int level, const char *name,
                    const char *advice, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Tells the store that queue has a job ready now (for watchers), and the
 * handle's own jobq_changed() once the transaction commits. */
void jobq__wake(jobq *db, const char *queue);
/* Tells the store only: queue has a job due later (a delay, a retry's
 * backoff), which an idle watcher asks jobq_next_due() about; nothing
 * is ready for this handle's own jobq_changed(). */
void jobq__wake_later(jobq *db, const char *queue);
/* The transaction ended: its own wake-ups count if it committed. */
void jobq__wake_settle(jobq *db, int committed);

/* ---------------------------------------------------------------- sessions
 * (lib/session.c) */

/* The start of every claim and acknowledgement transaction of s: holds
 * the session's row (shared) until commit, so that reapers, which skip
 * held rows, neither take the session nor wait on its jobs while its
 * worker is inside a transaction (a worker stopped there would stop them
 * too); for a claim, checks that the database is the same and the session
 * alive and of its epoch; gives back the jobs of its doubtful claims
 * (jobq__session_doubt()); and writes what jobq_session_started() learned
 * (jobq__session_committed() forgets it once the transaction committed),
 * but for the jobs that acks, the transaction's acknowledgements, end. */
int jobq__session_enter(jobq *db, jobq_session *s, int claim,
                        const jobq_ack *acks, size_t nacks);
/* Once a transaction of s committed: forgets what it wrote (the starts
 * noted, the doubtful claims given back). */
void jobq__session_committed(jobq_session *s);
/* Remembers the n jobs of a claim whose outcome is unknown: the session's
 * next transaction gives back those it holds (jobq__session_enter and
 * heartbeats).  JOBQ_ENOMEM when they cannot be remembered. */
int jobq__session_doubt(jobq *db, jobq_session *s, const jobq_job *jobs, size_t n);
/* The same for a claim whose jobs are not known (its reply was lost with
 * the commit's): every job s holds under a claim token that begins with
 * prefix. */
int jobq__session_doubt_claim(jobq *db, jobq_session *s, const char *prefix);
/* Notes the n jobs s was handed by a claim: the worker holds them. */
void jobq__session_claimed(jobq_session *s, const jobq_job *jobs, size_t n);
/* The n jobs that a claim took but the caller was not given after all
 * (a failpoint after its commit): no longer held by the worker. */
void jobq__session_unhanded(jobq_session *s, const jobq_job *jobs, size_t n);
/* The acknowledgements acks[0..n) that took effect or found their claim
 * lost: their jobs are no longer held by the worker. */
void jobq__session_acked(jobq_session *s, const jobq_ack *acks, size_t n);
/* Inside a transaction of s, on a connection made since it last looked:
 * every job the database shows under s that its worker does not hold
 * (an acknowledgement that committed and was lost with the database's
 * last writes, a failover or a restore) goes back to its queue as a lost
 * one, so that a live session never keeps a job no one runs. */
int jobq__session_reconcile(jobq *db, jobq_session *s);

/* Ends session sid: its jobs go back to ready (lost: the worker vanished,
 * so the attempt is spent and the job marked prev_lost; else given back),
 * dead when lost on their last attempt, cancelled when a cancel was
 * requested.  The row is deleted. */
int jobq__end_session(jobq *db, const char *sid, int lost);

/* Validation before any SQL runs; each records a message naming the
 * input.  index >= 0 prefixes "job N: " for jobq_put_many(). */
int jobq__check_put(jobq *db, const jobq_put_opts *o, long index);
int jobq__check_key(jobq *db, const char *what, const char *key, long index);

/* ---------------------------------------------------------------- schedules
 * (lib/cronspec.c): a periodic job's spec, parsed, and its slots. */

typedef struct jobq__cron_spec {
  int64_t every_ms;      /* @every: the period; 0: the fields below */
  uint64_t minute;       /* bit n set: minute n matches */
  uint32_t hour, dom;    /* hours 0-23, days of month 1-31 */
  uint16_t month;        /* 1-12 */
  uint8_t dow;           /* bit 0 Sunday ... bit 6 Saturday */
  int dom_any, dow_any;  /* the day field starts with '*' */
  int wild;              /* the minute or hour field starts with '*' */
  void *zone;            /* its GTimeZone; NULL for UTC */
} jobq__cron_spec;

/* Parses spec in zone tz (NULL: UTC) into s, to be released with
 * jobq__cron_spec_release() on success. */
int jobq__cron_parse(jobq *db, const char *spec, const char *tz, jobq__cron_spec *s);
void jobq__cron_spec_release(jobq__cron_spec *s);
/* The first slot after after_ms. */
int jobq__cron_next(jobq *db, const jobq__cron_spec *s, int64_t after_ms, int64_t *next_ms);
/* The last slot from first_ms (a slot) to now_ms; 0 when first_ms is
 * after now_ms. */
int jobq__cron_latest(jobq *db, const jobq__cron_spec *s, int64_t first_ms, int64_t now_ms,
                      int64_t *slot_ms);

/* Whether len bytes of s are valid UTF-8 without NUL bytes. */
int jobq__utf8_valid(const char *s, size_t len);
/* Makes text safe to store as text: *out is NULL when s already is valid
 * UTF-8 without NULs, else a new copy (caller frees) in which each bad
 * byte is '?'; *out_len gets its length.  JOBQ_ENOMEM on failure. */
int jobq__utf8_clean(const char *s, size_t len, char **out, size_t *out_len);

/* Returns a heap copy of s (NULL stays NULL); *failed set on ENOMEM. */
char *jobq__strdup(const char *s, int *failed);
void *jobq__memdup(const void *p, size_t len, int *failed);

#endif
