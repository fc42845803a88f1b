/*
 * claim.c - taking ready jobs for a session: one short transaction for a
 * whole batch, refused when the database's identity changed or the
 * session is gone; and a worker's steady rhythm, acknowledging one batch
 * and claiming the next in the same transaction.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CLAIM_MAX 10000

static int jobq__claim_check(jobq *db, const char *const *queues, size_t nq, size_t max) {
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE,
                      "a claim inside a caller's transaction: expected it "
                      "outside jobq_begin/jobq_commit, so that it commits at once");
  if (nq > 0 && queues == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid queues: NULL with a count of %zu", nq);
  for (size_t i = 0; i < nq; i++) {
    int rc = jobq_check_queue(db, queues[i]);
    if (rc != JOBQ_OK) return rc;
  }
  if (max > CLAIM_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid claim size '%zu': expected 1 to %d",
                      max, CLAIM_MAX);
  return JOBQ_OK;
}

/* A claim whose commit failed with JOBQ_ECONN may have committed all the
 * same: the reply was lost, not the commit.  Had the caller been told of
 * a failure, its live session would hold jobs that no one runs until the
 * session ends.  The first job, read back under its claim token on a
 * connection made again, tells: JOBQ_OK when the claim holds it, and so
 * all its jobs (one transaction).  Otherwise rc stands, with its message,
 * and the jobs are doubtful: the read-back may have failed, or run before
 * a commit still under way on the server became visible.  The session's
 * next transaction gives back those it holds. */
static int claim_outcome(jobq *db, jobq_session *s, const jobq_job *jobs, size_t n,
                         int rc) {
  jobq__error kept;
  jobq__error_keep(db, &kept);
  int held = 0;
  if (jobq__txn_begin(db) == JOBQ_OK) {
    jobq_rows *r;
    int got = jobq__failpoint(db, "claim.read-back");
    if (got == JOBQ_OK)
      got = jobq__sql_row(db, JOBQ_Q_ACK_ROW, &r,
                          SQL_ARGS(V_INT(jobs[0].id), V_TEXT(s->id), V_TEXT(jobs[0].claim)));
    if (got == 1) jobq__rows_done(db, r);
    held = jobq__txn_end(db, got < 0 ? got : JOBQ_OK) == JOBQ_OK && got == 1;
  }
  if (held) return jobq__ok(db);
  if (jobq__session_doubt(db, s, jobs, n) != JOBQ_OK) return JOBQ_ENOMEM;
  jobq__error_restore(db, &kept);
  return rc;
}

int jobq_claim(jobq_session *s, const char *const *queues, size_t nq,
               size_t max, jobq_job **jobs, size_t *n) {
  return jobq_ack_claim(s, NULL, 0, queues, nq, max, jobs, n);
}

int jobq_ack_claim(jobq_session *s, jobq_ack *acks, size_t nacks,
                   const char *const *queues, size_t nq, size_t max,
                   jobq_job **jobs, size_t *n) {
  *jobs = NULL;
  *n = 0;
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  int rc = jobq__claim_check(db, queues, nq, max);
  if (rc == JOBQ_OK) rc = jobq__ack_check(db, acks, nacks);
  if (rc != JOBQ_OK || (max == 0 && nacks == 0)) return rc;
  int attempt = 0;
  int64_t began = jobq__mono_ms();
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    if (nacks > 0) rc = jobq__failpoint(db, "ack.before-fence");
    if (rc == JOBQ_OK) rc = jobq__session_enter(db, s, max > 0, acks, nacks);
    if (rc == JOBQ_OK) rc = jobq__ack_batch(db, s, acks, nacks);
    /* The claim comes last: a store may commit with it (store.h). */
    if (rc == JOBQ_OK && nacks > 0) rc = jobq__failpoint(db, "ack.before-commit");
    if (rc == JOBQ_OK && max > 0) rc = jobq__failpoint(db, "claim.before-commit");
    if (rc == JOBQ_OK && max > 0) rc = db->store->claim(db, s, queues, nq, max, jobs, n);
    rc = jobq__txn_end(db, rc);
    if (rc == JOBQ_OK && max > 0) rc = jobq__failpoint(db, "claim.after-commit");
    if (rc == JOBQ_ECONN && *n > 0) rc = claim_outcome(db, s, *jobs, *n, rc);
    if (rc != JOBQ_OK) {
      jobq_jobs_free(*jobs, *n);
      *jobs = NULL;
      *n = 0;
    }
  } while (jobq__txn_retry(db, rc, &attempt));
  if (rc == JOBQ_OK) {
    jobq__session_committed(s);
    jobq__session_claimed(s, *jobs, *n);
    if (max > 0) jobq__tally_claimed(s, *jobs, *n);
    jobq__mark_acks(db, acks, nacks, began);
  }
  s->start_now = SIZE_MAX;
  jobq__ack_done(s, acks, nacks, rc);
  if (rc == JOBQ_OK && nacks > 0) rc = jobq__failpoint(db, "ack.after-commit");
  if (rc != JOBQ_OK) {
    /* Committed, but the caller hears of a failure (a failpoint): what
     * it holds is no longer given out. */
    jobq__session_unhanded(s, *jobs, *n);
    jobq_jobs_free(*jobs, *n);
    *jobs = NULL;
    *n = 0;
    for (size_t i = 0; i < nacks; i++) acks[i].status = rc, acks[i].already = 0;
  }
  return rc;
}

void jobq_jobs_free(jobq_job *jobs, size_t n) {
  if (jobs == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(jobs[i].queue);
    free(jobs[i].payload);
    free(jobs[i].key);
  }
  free(jobs);
}
