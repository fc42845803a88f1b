/*
 * ack.c - acknowledgements: complete, fail, retry later, release and
 * extend, fenced by (job, session, claim token), many in one transaction.
 * The decision of where an acknowledged job goes (backoff, dead after the
 * last attempt, cancelled when a cancel was requested) is made here once
 * for every store.
 */
#include <string.h>

#include "internal.h"

/* The longest error text kept on a job; longer ones keep their tail. */
#define ERROR_MAX 65536

int64_t jobq__backoff_ms(int64_t base_ms, int attempt, uint64_t rnd) {
  if (base_ms <= 0) return 0;
  int64_t d = base_ms;
  for (int i = 1; i < attempt && d < JOBQ_BACKOFF_CAP_MS; i++) d *= 2;
  if (d > JOBQ_BACKOFF_CAP_MS) d = JOBQ_BACKOFF_CAP_MS;
  /* jitter in [0.5, 1.5) */
  double j = 0.5 + (double)(rnd >> 11) / (double)(1ULL << 53);
  return (int64_t)((double)d * j);
}

void jobq__ack_plan(const jobq_ack_row *row, const jobq_ack *a, uint64_t rnd,
                    jobq_ack_plan *p) {
  memset(p, 0, sizeof *p);
  if (a->kind != JOBQ_ACK_COMPLETE) {
    p->error = a->data;
    p->error_len = a->len;
    if (p->error_len > ERROR_MAX) {
      p->error += p->error_len - ERROR_MAX;
      p->error_len = ERROR_MAX;
    }
  }
  switch (a->kind) {
    case JOBQ_ACK_COMPLETE:
      p->state = JOBQ_STATE_DONE;
      return;
    case JOBQ_ACK_RELEASE:
      p->error = NULL;
      p->error_len = 0;
      p->state = row->cancel_requested ? JOBQ_STATE_CANCELLED : JOBQ_STATE_READY;
      p->spend = 0;
      return;
    case JOBQ_ACK_FAIL:
    case JOBQ_ACK_RETRY:
      if (a->kind == JOBQ_ACK_RETRY && p->error == NULL) {
        p->error = "retry requested";
        p->error_len = strlen(p->error);
      }
      if (row->cancel_requested) {
        p->state = JOBQ_STATE_CANCELLED;
      } else if (row->attempts >= row->max_attempts) {
        p->state = JOBQ_STATE_DEAD;
      } else {
        p->state = JOBQ_STATE_READY;
        p->spend = 1;
        p->delay_ms = a->retry_in_ms >= 0
                          ? a->retry_in_ms
                          : jobq__backoff_ms(row->backoff_ms, row->attempts, rnd);
      }
      return;
  }
}

void jobq_ack_init(jobq_ack *a, const jobq_job *job, jobq_ack_kind kind) {
  memset(a, 0, sizeof *a);
  a->id = job->id;
  memcpy(a->claim, job->claim, sizeof a->claim);
  a->kind = kind;
  a->retry_in_ms = -1;
}

int jobq_ack_many(jobq_session *s, jobq_ack *acks, size_t n) {
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  for (size_t i = 0; i < n; i++) {
    jobq_ack *a = &acks[i];
    a->status = JOBQ_ELOST;
    a->already = 0;
    a->outcome = 0;
    if (a->kind < JOBQ_ACK_COMPLETE || a->kind > JOBQ_ACK_RELEASE)
      return jobq__fail(db, JOBQ_EINVAL, "ack %zu: invalid kind '%d': expected a jobq_ack_kind", i, (int)a->kind);
    if (a->data == NULL && a->len > 0)
      return jobq__fail(db, JOBQ_EINVAL, "ack %zu: data is NULL with length %zu", i, a->len);
    if (a->kind == JOBQ_ACK_COMPLETE && a->len > db->max_payload)
      return jobq__fail(db, JOBQ_ETOOBIG,
                        "ack %zu: result of %zu bytes is over the limit of %zu bytes",
                        i, a->len, db->max_payload);
    if (a->retry_in_ms > 100LL * 365 * 86400000)
      return jobq__fail(db, JOBQ_EINVAL, "ack %zu: invalid retry delay '%lldms'", i,
                        (long long)a->retry_in_ms);
  }
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = db->store->ack(db, s, &acks[i]);
  rc = jobq__txn_end(db, rc);
  if (rc != JOBQ_OK) {
    for (size_t i = 0; i < n; i++) acks[i].status = rc, acks[i].already = 0;
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    if (acks[i].status != JOBQ_OK || acks[i].already) continue;
    if (acks[i].outcome == JOBQ_STATE_DONE) s->done++;
    else if (acks[i].kind == JOBQ_ACK_FAIL) s->failed++;
  }
  return JOBQ_OK;
}

static int ack_one(jobq_session *s, const jobq_job *job, jobq_ack_kind kind,
                   const void *data, size_t len, int64_t retry_in_ms,
                   int *already) {
  if (s == NULL || job == NULL) return JOBQ_EINVAL;
  jobq_ack a;
  jobq_ack_init(&a, job, kind);
  a.data = data;
  a.len = len;
  a.retry_in_ms = retry_in_ms;
  int rc = jobq_ack_many(s, &a, 1);
  if (already != NULL) *already = a.already;
  if (rc != JOBQ_OK) return rc;
  if (a.status == JOBQ_ELOST)
    return jobq__fail(s->db, JOBQ_ELOST,
                      "job %lld: claim '%s' is no longer held by this session: "
                      "the job was released, reaped or acknowledged under another claim",
                      (long long)job->id, job->claim);
  return a.status;
}

int jobq_complete(jobq_session *s, const jobq_job *job, const void *result,
                  size_t len, int *already) {
  return ack_one(s, job, JOBQ_ACK_COMPLETE, result, len, -1, already);
}

int jobq_fail(jobq_session *s, const jobq_job *job, const char *error) {
  return ack_one(s, job, JOBQ_ACK_FAIL, error, error ? strlen(error) : 0, -1, NULL);
}

int jobq_retry_later(jobq_session *s, const jobq_job *job, int64_t delay_ms,
                     const char *reason) {
  return ack_one(s, job, JOBQ_ACK_RETRY, reason, reason ? strlen(reason) : 0,
                 delay_ms < 0 ? -1 : delay_ms, NULL);
}

int jobq_release(jobq_session *s, const jobq_job *job) {
  return ack_one(s, job, JOBQ_ACK_RELEASE, NULL, 0, -1, NULL);
}

int jobq_extend(jobq_session *s, const jobq_job *job, int64_t ms) {
  if (s == NULL || job == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  if (ms < 0 || ms > 100LL * 365 * 86400000)
    return jobq__fail(db, JOBQ_EINVAL, "invalid extension '%lldms': expected zero or more",
                      (long long)ms);
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  rc = db->store->extend(db, s, job, ms);
  /* A cancel request still moves the deadline: commit it. */
  if (rc == JOBQ_ECANCELLED) {
    rc = jobq__txn_end(db, JOBQ_OK);
    return rc == JOBQ_OK ? jobq__fail(db, JOBQ_ECANCELLED,
                                      "job %lld: an operator asked to cancel it",
                                      (long long)job->id)
                         : rc;
  }
  return jobq__txn_end(db, rc);
}
