/*
 * claim.c - taking ready jobs for a session: one short transaction for a
 * whole batch, refused when the database's identity changed or the
 * session is gone.
 */
#include <stdlib.h>

#include "internal.h"

#define CLAIM_MAX 10000

int jobq_claim(jobq_session *s, const char *const *queues, size_t nq,
               size_t max, jobq_job **jobs, size_t *n) {
  *jobs = NULL;
  *n = 0;
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
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
  if (max == 0) return JOBQ_OK;
  if (max > CLAIM_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid claim size '%zu': expected 1 to %d",
                      max, CLAIM_MAX);
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  rc = jobq__identity_check(db);
  if (rc == JOBQ_OK && db->epoch != s->epoch)
    rc = jobq__fail(db, JOBQ_EEXPIRED,
                    "session '%s' belongs to epoch %lld, the database is at "
                    "epoch %lld: open a new session",
                    s->id, (long long)s->epoch, (long long)db->epoch);
  if (rc == JOBQ_OK) rc = db->store->claim(db, s, queues, nq, max, jobs, n);
  rc = jobq__txn_end(db, rc);
  if (rc != JOBQ_OK) {
    jobq_jobs_free(*jobs, *n);
    *jobs = NULL;
    *n = 0;
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
