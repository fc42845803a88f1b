/*
 * inspect.c - what an operator reads: one job (show), pages of jobs
 * (list), per-queue counts (stats) and the sessions, plus the names of
 * job states.  Reads run outside any transaction and never lock.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const state_names[] = {
    NULL, "ready", "running", "waiting", "done", "dead", "cancelled", "pending"};

const char *jobq_state_name(int state) {
  if (state < JOBQ_STATE_READY || state > JOBQ_STATE_PENDING) return NULL;
  return state_names[state];
}

int jobq_state_parse(const char *name) {
  if (name == NULL) return 0;
  if (strcmp(name, "scheduled") == 0) return JOBQ_STATE_READY;
  for (int i = JOBQ_STATE_READY; i <= JOBQ_STATE_PENDING; i++)
    if (strcmp(name, state_names[i]) == 0) return i;
  return 0;
}

/* Refuses a handle that is not connected; clears the last error. */
static int readable(jobq *db) {
  int rc = jobq__ready(db);
  if (rc == JOBQ_OK) {
    jobq__ok(db);
    jobq__need(db, JOBQ__ROLE_READER);
  }
  return rc;
}

/* Reads one row of the columns of HOT_INFO/DONE_INFO (lib/sql.c); with
 * data, the payload and result follow them. */
static void read_info(jobq *db, jobq_rows *r, jobq_job_info *v, int with_data,
                      int *failed) {
  memset(v, 0, sizeof *v);
  size_t len;
  v->id = jobq__col_int(db, r, 0);
  v->queue = jobq__col_text(db, r, 1, failed);
  v->state = jobq_state_parse(db->store->col_bytes(r, 2, &len));
  v->priority = (int)jobq__col_int(db, r, 3);
  v->run_at_ms = jobq__col_int(db, r, 4);
  v->key = jobq__col_text(db, r, 5, failed);
  v->barrier = (int)jobq__col_int(db, r, 6);
  v->unique_key = jobq__col_text(db, r, 7, failed);
  v->payload_len = (size_t)jobq__col_int(db, r, 8);
  v->result_len = (size_t)jobq__col_int(db, r, 9);
  v->attempts = (int)jobq__col_int(db, r, 10);
  v->max_attempts = (int)jobq__col_int(db, r, 11);
  v->timeout_ms = jobq__col_int(db, r, 12);
  v->backoff_ms = jobq__col_int(db, r, 13);
  v->session = jobq__col_text(db, r, 14, failed);
  v->claim = jobq__col_text(db, r, 15, failed);
  v->created_at_ms = jobq__col_int(db, r, 16);
  v->claimed_at_ms = jobq__col_int(db, r, 17);
  v->finished_at_ms = jobq__col_int(db, r, 18);
  v->last_error = jobq__col_text(db, r, 19, failed);
  v->cancel_requested = (int)jobq__col_int(db, r, 20);
  v->prev_lost = (int)jobq__col_int(db, r, 21);
  v->part = jobq__col_null(db, r, 22) ? -1 : (int)jobq__col_int(db, r, 22);
  if (with_data) {
    v->payload = jobq__col_bytes(db, r, 23, &len, failed);
    v->result = jobq__col_bytes(db, r, 24, &len, failed);
  }
}

static int check_id(jobq *db, int64_t id) {
  if (id <= 0)
    return jobq__fail(db, JOBQ_EINVAL, "invalid job id '%lld': expected a positive integer",
                      (long long)id);
  return JOBQ_OK;
}

int jobq_show(jobq *db, int64_t id, jobq_job_info **out) {
  *out = NULL;
  int rc = readable(db);
  if (rc != JOBQ_OK || (rc = check_id(db, id)) != JOBQ_OK) return rc;
  /* The hot table first: a job being archived is found in one or the
   * other. */
  static const int where[] = {JOBQ_Q_SHOW_HOT, JOBQ_Q_SHOW_DONE};
  for (int i = 0; i < 2; i++) {
    jobq_rows *r;
    int got = jobq__sql_row(db, where[i], &r, SQL_ARGS(V_INT(id)));
    if (got < 0) return got;
    if (got == 0) continue;
    jobq_job_info *v = malloc(sizeof *v);
    int failed = v == NULL;
    if (v != NULL) read_info(db, r, v, 1, &failed);
    jobq__rows_done(db, r);
    if (failed) {
      jobq_info_free(v, v ? 1 : 0);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    *out = v;
    return JOBQ_OK;
  }
  return jobq__fail(db, JOBQ_ENOTFOUND, "no job with id %lld: never put, or pruned",
                    (long long)id);
}

int jobq_list(jobq *db, const jobq_list_opts *opts, jobq_job_info **out,
              size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = readable(db);
  if (rc != JOBQ_OK) return rc;
  jobq_list_opts o;
  memset(&o, 0, sizeof o);
  if (opts != NULL) o = *opts;
  if (o.limit == 0) o.limit = 100;
  if (o.queue != NULL && jobq_check_queue(db, o.queue) != JOBQ_OK) return JOBQ_EINVAL;
  if (o.state != 0 && jobq_state_name(o.state) == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "invalid state '%d'", o.state);
  if (o.limit > 1000000)
    return jobq__fail(db, JOBQ_EINVAL, "invalid limit '%zu': expected 1 to 1000000", o.limit);
  jobq_rows *r;
  if (o.state == 0)
    rc = jobq__sql_query(db, JOBQ_Q_LIST_ALL, &r,
                         SQL_ARGS(V_INT(o.after_id), V_TEXT(o.queue), V_INT((int64_t)o.limit),
                                  V_TEXT(o.key)));
  else if (o.state <= JOBQ_STATE_WAITING || o.state == JOBQ_STATE_PENDING)
    rc = jobq__sql_query(db, JOBQ_Q_LIST_HOT, &r,
                         SQL_ARGS(V_INT(o.after_id), V_TEXT(o.queue), V_INT((int64_t)o.limit),
                                  V_TEXT(jobq_state_name(o.state)),
                                  V_INT(o.state == JOBQ_STATE_READY && o.scheduled),
                                  V_TEXT(o.key)));
  else
    rc = jobq__sql_query(db, JOBQ_Q_LIST_DONE, &r,
                         SQL_ARGS(V_INT(o.after_id), V_TEXT(o.queue), V_INT((int64_t)o.limit),
                                  V_TEXT(jobq_state_name(o.state)), V_TEXT(o.key)));
  if (rc != JOBQ_OK) return rc;
  size_t cap = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 32;
      jobq_job_info *v = realloc(*out, cap * sizeof *v);
      if (v == NULL) {
        failed = 1;
        break;
      }
      *out = v;
    }
    read_info(db, r, &(*out)[(*n)++], 0, &failed);
  }
  jobq__rows_done(db, r);
  if (got < 0 || failed) {
    jobq_info_free(*out, *n);
    *out = NULL;
    *n = 0;
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  return JOBQ_OK;
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

/* Adds one STATS_HOT row (queue, state, due, count, oldest run_at, now)
 * to the queue it names. */
static void add_hot(jobq *db, jobq_rows *r, jobq_queue_stats *v, size_t nv) {
  size_t len;
  const char *queue = db->store->col_bytes(r, 0, &len);
  for (size_t i = 0; i < nv; i++) {
    if (strcmp(v[i].name ? v[i].name : "", queue) != 0) continue;
    int64_t count = jobq__col_int(db, r, 3);
    if (jobq__col_is(db, r, 1, "running")) {
      v[i].running += count;
    } else if (jobq__col_is(db, r, 1, "waiting")) {
      v[i].waiting += count;
    } else if (jobq__col_is(db, r, 1, "pending")) {
      v[i].pending += count;
    } else if (!jobq__col_int(db, r, 2)) {
      v[i].scheduled += count;
    } else {
      v[i].ready += count;
      int64_t age = jobq__col_int(db, r, 5) - jobq__col_int(db, r, 4);
      v[i].oldest_ready_ms = age > 0 ? age : 0;
    }
    return;
  }
}

int jobq_stats(jobq *db, jobq_queue_stats **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = readable(db);
  if (rc != JOBQ_OK) return rc;
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_STATS_QUEUES, &r, SQL_ARGS())) != JOBQ_OK) return rc;
  jobq_queue_stats *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_queue_stats *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_queue_stats *q = &v[nv++];
    memset(q, 0, sizeof *q);
    q->name = jobq__col_text(db, r, 0, &failed);
    q->paused = (int)jobq__col_int(db, r, 1);
    q->key_policy = jobq__col_text(db, r, 2, &failed);
    q->done = jobq__col_int(db, r, 3);
    q->dead = jobq__col_int(db, r, 4);
    q->cancelled = jobq__col_int(db, r, 5);
    q->parts = (int)jobq__col_int(db, r, 6);
    q->parts_unowned = (int)jobq__col_int(db, r, 7);
  }
  jobq__rows_done(db, r);
  if (got >= 0 && !failed) {
    got = jobq__sql_query(db, JOBQ_Q_STATS_HOT, &r, SQL_ARGS());
    if (got == JOBQ_OK) {
      while ((got = jobq__rows_next(db, r)) == 1) add_hot(db, r, v, nv);
      jobq__rows_done(db, r);
    }
  }
  if (got < 0 || failed) {
    jobq_stats_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
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
  int rc = readable(db);
  if (rc != JOBQ_OK) return rc;
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_SESSIONS, &r, SQL_ARGS())) != JOBQ_OK) return rc;
  jobq_session_info *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_session_info *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_session_info *x = &v[nv++];
    memset(x, 0, sizeof *x);
    x->id = jobq__col_text(db, r, 0, &failed);
    x->name = jobq__col_text(db, r, 1, &failed);
    x->host = jobq__col_text(db, r, 2, &failed);
    x->pid = jobq__col_int(db, r, 3);
    x->epoch = jobq__col_int(db, r, 4);
    x->started_at_ms = jobq__col_int(db, r, 5);
    x->heartbeat_at_ms = jobq__col_int(db, r, 6);
    x->expires_at_ms = jobq__col_int(db, r, 7);
    x->lease_ms = jobq__col_int(db, r, 8);
    x->in_flight = jobq__col_int(db, r, 9);
    x->done = jobq__col_int(db, r, 10);
    x->failed = jobq__col_int(db, r, 11);
    x->claimed = jobq__col_int(db, r, 12);
    x->expired = (int)jobq__col_int(db, r, 13);
  }
  jobq__rows_done(db, r);
  if (got >= 0 && !failed) got = jobq__parts_of_sessions(db, v, nv);
  if (got < 0 || failed) {
    jobq_sessions_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

void jobq_sessions_free(jobq_session_info *v, size_t n) {
  if (v == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(v[i].id);
    free(v[i].name);
    free(v[i].host);
    jobq__session_parts_free(&v[i]);
  }
  free(v);
}
