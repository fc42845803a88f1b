/*
 * put.c - enqueueing: one job or many in one transaction, all or none,
 * validated before any SQL runs.
 */
#include <string.h>

#include "internal.h"

void jobq_put_opts_init(jobq_put_opts *o) {
  memset(o, 0, sizeof *o);
  o->queue = JOBQ_DEFAULT_QUEUE;
  o->max_attempts = JOBQ_DEFAULT_MAX_ATTEMPTS;
  o->backoff_ms = JOBQ_DEFAULT_BACKOFF_MS;
}

/* index_names: prefix messages with "job N: " (jobq_put_many). */
static int put(jobq *db, const jobq_put_opts *opts, size_t n, int64_t *ids,
               unsigned char *existed, int index_names) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  if (opts == NULL || ids == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid arguments: opts and ids are required");
  for (size_t i = 0; i < n; i++) {
    int rc = jobq__check_put(db, &opts[i], index_names ? (long)i : -1);
    if (rc != JOBQ_OK) return rc;
  }
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    jobq_put_opts o = opts[i];
    if (o.queue == NULL) o.queue = JOBQ_DEFAULT_QUEUE;
    int ex = 0;
    rc = db->store->put(db, &o, &ids[i], &ex);
    if (existed != NULL) existed[i] = (unsigned char)ex;
  }
  return jobq__txn_end(db, rc);
}

int jobq_put(jobq *db, const jobq_put_opts *opts, int64_t *id, int *existed) {
  unsigned char ex = 0;
  int rc = put(db, opts, 1, id, &ex, 0);
  if (existed != NULL) *existed = ex;
  return rc;
}

int jobq_put_many(jobq *db, const jobq_put_opts *opts, size_t n, int64_t *ids,
                  unsigned char *existed) {
  return put(db, opts, n, ids, existed, 1);
}
