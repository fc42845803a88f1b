/*
 * admin.c - the calls behind the operator's commands: show, list, stats,
 * sessions, retry, cancel, pause, resume, key policy and prune.  Each
 * validates its input and runs in one transaction; reads go straight to
 * the store.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const state_names[] = {
    NULL, "ready", "running", "waiting", "done", "dead", "cancelled"};

const char *jobq_state_name(int state) {
  if (state < JOBQ_STATE_READY || state > JOBQ_STATE_CANCELLED) return NULL;
  return state_names[state];
}

int jobq_state_parse(const char *name) {
  if (name == NULL) return 0;
  if (strcmp(name, "scheduled") == 0) return JOBQ_STATE_READY;
  for (int i = JOBQ_STATE_READY; i <= JOBQ_STATE_CANCELLED; i++)
    if (strcmp(name, state_names[i]) == 0) return i;
  return 0;
}

static int check_id(jobq *db, int64_t id) {
  if (id <= 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid job id '%lld': expected a positive integer",
                      (long long)id);
  return JOBQ_OK;
}

/* Runs a store call that reads; refuses a handle that is not connected. */
#define READ_CALL(db, call)                                               \
  do {                                                                    \
    if ((db) == NULL) return JOBQ_EINVAL;                                 \
    jobq__ok(db);                                                         \
    if ((db)->store == NULL || (db)->conn == NULL)                        \
      return jobq__fail(db, JOBQ_EINVAL, "the handle is not connected");  \
    return (call);                                                        \
  } while (0)

int jobq_show(jobq *db, int64_t id, jobq_job_info **out) {
  *out = NULL;
  if (db != NULL && check_id(db, id) != JOBQ_OK) return JOBQ_EINVAL;
  READ_CALL(db, db->store->show(db, id, out));
}

int jobq_list(jobq *db, const jobq_list_opts *opts, jobq_job_info **out,
              size_t *n) {
  *out = NULL;
  *n = 0;
  jobq_list_opts o;
  memset(&o, 0, sizeof o);
  if (opts != NULL) o = *opts;
  if (o.limit == 0) o.limit = 100;
  if (db == NULL) return JOBQ_EINVAL;
  if (o.queue != NULL && jobq_check_queue(db, o.queue) != JOBQ_OK) return JOBQ_EINVAL;
  if (o.state != 0 && jobq_state_name(o.state) == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid state '%d'", o.state);
  if (o.limit > 1000000)
    return jobq__fail(db, JOBQ_EINVAL, "invalid limit '%zu': expected 1 to 1000000", o.limit);
  READ_CALL(db, db->store->list(db, &o, out, n));
}

void jobq_info_free(jobq_job_info *v, size_t n) {
  if (v == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(v[i].queue);
    free(v[i].key);
    free(v[i].unique_key);
    free(v[i].payload);
    free(v[i].result);
    free(v[i].session);
    free(v[i].claim);
    free(v[i].last_error);
  }
  free(v);
}

int jobq_stats(jobq *db, jobq_queue_stats **out, size_t *n) {
  *out = NULL;
  *n = 0;
  READ_CALL(db, db->store->stats(db, out, n));
}

void jobq_stats_free(jobq_queue_stats *v, size_t n) {
  if (v == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(v[i].name);
    free(v[i].key_policy);
  }
  free(v);
}

int jobq_sessions(jobq *db, jobq_session_info **out, size_t *n) {
  *out = NULL;
  *n = 0;
  READ_CALL(db, db->store->sessions(db, out, n));
}

void jobq_sessions_free(jobq_session_info *v, size_t n) {
  if (v == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(v[i].id);
    free(v[i].name);
    free(v[i].host);
  }
  free(v);
}

int jobq_retry(jobq *db, int64_t id) {
  if (db == NULL) return JOBQ_EINVAL;
  if (check_id(db, id) != JOBQ_OK) return JOBQ_EINVAL;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  return jobq__txn_end(db, db->store->retry(db, id));
}

int jobq_retry_dead(jobq *db, const char *queue, int64_t *count) {
  if (count != NULL) *count = 0;
  if (db == NULL) return JOBQ_EINVAL;
  if (queue != NULL && jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  int64_t c = 0;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  rc = jobq__txn_end(db, db->store->retry_dead(db, queue, &c));
  if (rc == JOBQ_OK && count != NULL) *count = c;
  return rc;
}

int jobq_cancel(jobq *db, int64_t id, int *now) {
  int dummy;
  if (now == NULL) now = &dummy;
  *now = 0;
  if (db == NULL) return JOBQ_EINVAL;
  if (check_id(db, id) != JOBQ_OK) return JOBQ_EINVAL;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  return jobq__txn_end(db, db->store->cancel(db, id, now));
}

static int set_queue(jobq *db, const char *queue, int paused, const char *policy) {
  if (db == NULL) return JOBQ_EINVAL;
  if (jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  return jobq__txn_end(db, db->store->set_queue(db, queue, paused, policy));
}

int jobq_pause(jobq *db, const char *queue) { return set_queue(db, queue, 1, NULL); }
int jobq_resume(jobq *db, const char *queue) { return set_queue(db, queue, 0, NULL); }

int jobq_set_key_policy(jobq *db, const char *queue, const char *policy) {
  if (db == NULL) return JOBQ_EINVAL;
  if (policy == NULL || (strcmp(policy, "block") != 0 && strcmp(policy, "skip") != 0))
    return jobq__fail(db, JOBQ_EINVAL, "invalid key policy '%s': expected block or skip",
                      policy ? policy : "");
  return set_queue(db, queue, -1, policy);
}

int jobq_prune(jobq *db, int64_t older_than_ms, int64_t *count) {
  if (count != NULL) *count = 0;
  if (db == NULL) return JOBQ_EINVAL;
  if (older_than_ms < 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid age '%lldms': expected zero or more",
                      (long long)older_than_ms);
  int64_t c = 0;
  int rc = jobq__txn_begin(db);
  if (rc != JOBQ_OK) return rc;
  rc = jobq__txn_end(db, db->store->prune(db, older_than_ms, &c));
  if (rc == JOBQ_OK && count != NULL) *count = c;
  return rc;
}
