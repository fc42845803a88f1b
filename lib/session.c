/*
 * session.c - a worker's session: a row with a lease on the database clock
 * that the worker heartbeats.  Opening and heartbeating also do this
 * worker's share of reaping sessions whose lease expired (with the stall
 * guard, in the store), so dead workers' jobs come back within seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void jobq_session_opts_init(jobq_session_opts *o) {
  memset(o, 0, sizeof *o);
  o->name = "worker";
  o->lease_ms = JOBQ_DEFAULT_LEASE_MS;
}

static int not_in_caller_txn(jobq *db, const char *what) {
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE,
                      "%s inside a caller's transaction: expected it outside "
                      "jobq_begin/jobq_commit, so that it commits at once",
                      what);
  return JOBQ_OK;
}

int jobq_session_open(jobq *db, const jobq_session_opts *opts,
                      jobq_session **out) {
  *out = NULL;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__ok(db);
  jobq_session_opts def;
  if (opts == NULL) {
    jobq_session_opts_init(&def);
    opts = &def;
  }
  int rc = not_in_caller_txn(db, "a session open");
  if (rc != JOBQ_OK) return rc;
  if (opts->lease_ms < 100 || opts->lease_ms > 86400000)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid lease '%lldms': expected 100ms to 1d",
                      (long long)opts->lease_ms);
  const char *name = opts->name ? opts->name : "worker";
  if (strlen(name) == 0 || strlen(name) >= sizeof((jobq_session *)0)->name)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid session name '%.40s': expected 1 to 127 bytes", name);
  jobq_session *s = calloc(1, sizeof *s);
  if (s == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  s->db = db;
  s->lease_ms = opts->lease_ms;
  snprintf(s->name, sizeof s->name, "%s", name);
  jobq__random_hex(s->id, JOBQ_SESSION_ID_LEN / 2);

  rc = jobq__txn_begin(db);
  if (rc == JOBQ_OK) {
    rc = jobq__identity_check(db);
    if (rc == JOBQ_OK) {
      s->epoch = db->epoch;
      rc = db->store->session_insert(db, s);
    }
    if (rc == JOBQ_OK) rc = db->store->reap(db, s->lease_ms, 1, NULL);
    rc = jobq__txn_end(db, rc);
  }
  if (rc != JOBQ_OK) {
    free(s);
    return rc;
  }
  *out = s;
  return JOBQ_OK;
}

void jobq_session_close(jobq_session *s) {
  if (s == NULL) return;
  jobq *db = s->db;
  if (db->txn_depth == 0 && jobq__txn_begin(db) == JOBQ_OK)
    jobq__txn_end(db, db->store->session_delete(db, s->id));
  free(s);
}

const char *jobq_session_id(const jobq_session *s) { return s->id; }
int64_t jobq_session_lease_ms(const jobq_session *s) { return s->lease_ms; }

void jobq_session_set_in_flight(jobq_session *s, int64_t in_flight) {
  s->in_flight = in_flight;
}

int jobq_heartbeat(jobq_session *s, int64_t **cancel, size_t *ncancel) {
  if (cancel != NULL) *cancel = NULL;
  if (ncancel != NULL) *ncancel = 0;
  if (s == NULL) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  int rc = not_in_caller_txn(db, "a heartbeat");
  if (rc != JOBQ_OK) return rc;
  rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  rc = jobq__identity_check(db);
  if (rc == JOBQ_OK && db->epoch != s->epoch)
    rc = jobq__fail(db, JOBQ_EEXPIRED,
                    "session '%s' belongs to epoch %lld, the database is at "
                    "epoch %lld: open a new session",
                    s->id, (long long)s->epoch, (long long)db->epoch);
  if (rc == JOBQ_OK) rc = db->store->heartbeat(db, s);
  if (rc == JOBQ_OK) rc = db->store->reap(db, s->lease_ms, 1, NULL);
  int64_t *ids = NULL;
  size_t n = 0;
  if (rc == JOBQ_OK && cancel != NULL)
    rc = db->store->cancel_list(db, s->id, &ids, &n);
  rc = jobq__txn_end(db, rc);
  if (rc != JOBQ_OK) {
    free(ids);
    return rc;
  }
  if (cancel != NULL) {
    *cancel = ids;
    *ncancel = n;
  }
  return JOBQ_OK;
}

int jobq_reap(jobq *db, int64_t *count) {
  if (count != NULL) *count = 0;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  /* The guard is the longest lease of any session. */
  rc = db->store->reap(db, -1, 0, count);
  return jobq__txn_end(db, rc);
}
