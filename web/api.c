/*
 * api.c - the JSON API behind the dashboard: what each page reads (GET
 * /api/overview, queue, job, sessions, dead) and the actions (POST
 * /api/pause, resume, retry-dead, retry, cancel).  Each answer is one
 * JSON document; an error is {"error": message} with the library's
 * message, which names what went wrong (a database role that may only
 * read gets its "permission denied" here).  Every text of a job
 * (payload, key, error) goes out as a JSON string or, when it is not
 * UTF-8, as hex: the page shows it as text, never as markup.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web.h"

#define PAGE_MAX 500
#define PREVIEW_MAX 65536

void web_reply_error(struct web_reply *r, int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_decref(r->json);
  r->status = status;
  /* The message may quote bad input: as JSON it is only text. */
  r->json = json_object();
  json_t *m = json_string(msg);
  if (m == NULL) m = json_string("an error whose message is not UTF-8");
  json_object_set_new(r->json, "error", m);
}

/* The library's error as a reply. */
static void lib_error(struct web_reply *r, jobq *db, int rc) {
  /* A read-only database, or a role that may not do it (the reader's):
   * the database's refusal, not ours. */
  int status = rc == JOBQ_EINVAL      ? 400
               : rc == JOBQ_ENOTFOUND ? 404
               : rc == JOBQ_ESTATE    ? 409
               : rc == JOBQ_EREADONLY || rc == JOBQ_EDENIED ? 403
               : rc == JOBQ_EBUSY || rc == JOBQ_ECONN ? 503
                                                       : 500;
  const char *msg = jobq_errmsg(db);
  web_reply_error(r, status, "%s", *msg ? msg : jobq_strerror(rc));
}

/* text as a JSON string; JSON null for NULL or text that is not UTF-8. */
static json_t *str(const char *text) {
  json_t *v = text ? json_string(text) : NULL;
  return v ? v : json_null();
}

/* A job's bytes: {"text": ...} when UTF-8, else {"hex": ...}, cut at
 * PREVIEW_MAX with "truncated". */
static json_t *bytes(const void *p, size_t len) {
  size_t n = len > PREVIEW_MAX ? PREVIEW_MAX : len;
  json_t *o = json_object();
  json_t *t = json_stringn(p ? p : "", n);
  /* A cut in the middle of a character is not the payload's fault. */
  for (size_t back = 1; t == NULL && back < 4 && n == PREVIEW_MAX && back <= n; back++)
    t = json_stringn(p, n - back);
  if (t != NULL) {
    json_object_set_new(o, "text", t);
  } else {
    char *hex = malloc(2 * n + 1);
    for (size_t i = 0; hex && i < n; i++)
      snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)p)[i]);
    if (hex) hex[2 * n] = '\0';
    json_object_set_new(o, "hex", str(hex));
    free(hex);
  }
  json_object_set_new(o, "length", json_integer((json_int_t)len));
  json_object_set_new(o, "truncated", json_boolean(len > n));
  return o;
}

static json_t *job_json(const jobq_job_info *j, int with_data) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_integer(j->id));
  json_object_set_new(o, "queue", str(j->queue));
  json_object_set_new(o, "state", str(jobq_state_name(j->state)));
  json_object_set_new(o, "priority", json_integer(j->priority));
  json_object_set_new(o, "run_at_ms", json_integer(j->run_at_ms));
  json_object_set_new(o, "key", str(j->key));
  json_object_set_new(o, "barrier", json_boolean(j->barrier));
  json_object_set_new(o, "unique_key", str(j->unique_key));
  json_object_set_new(o, "attempts", json_integer(j->attempts));
  json_object_set_new(o, "max_attempts", json_integer(j->max_attempts));
  json_object_set_new(o, "timeout_ms", json_integer(j->timeout_ms));
  json_object_set_new(o, "session", str(j->session));
  json_object_set_new(o, "created_at_ms", json_integer(j->created_at_ms));
  json_object_set_new(o, "claimed_at_ms", json_integer(j->claimed_at_ms));
  json_object_set_new(o, "finished_at_ms", json_integer(j->finished_at_ms));
  json_object_set_new(o, "last_error", str(j->last_error));
  json_object_set_new(o, "cancel_requested", json_boolean(j->cancel_requested));
  json_object_set_new(o, "prev_lost", json_boolean(j->prev_lost));
  json_object_set_new(o, "part", j->part >= 0 ? json_integer(j->part) : json_null());
  json_object_set_new(o, "payload_length", json_integer((json_int_t)j->payload_len));
  if (with_data) {
    json_object_set_new(o, "payload", bytes(j->payload, j->payload_len));
    if (j->result != NULL) json_object_set_new(o, "result", bytes(j->result, j->result_len));
  }
  return o;
}

/* A limit, or null when there is none (0). */
static json_t *limit_value(int64_t v) { return v > 0 ? json_integer(v) : json_null(); }

/* Queue's limits from l[0..n) (the queues that have one), or null. */
static json_t *limits_json(const char *queue, const jobq_limits *l, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(l[i].queue, queue) != 0) continue;
    if (l[i].running <= 0 && l[i].rate <= 0 && l[i].running_per_key <= 0 &&
        l[i].rate_per_key <= 0)
      break;
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:b}", "running",
                     limit_value(l[i].running), "rate", limit_value(l[i].rate),
                     "rate_period_ms",
                     limit_value(l[i].rate > 0 ? l[i].rate_period_ms : 0),
                     "running_per_key", limit_value(l[i].running_per_key), "rate_per_key",
                     limit_value(l[i].rate_per_key), "rate_per_key_period_ms",
                     limit_value(l[i].rate_per_key > 0 ? l[i].rate_per_key_period_ms : 0),
                     "running_now", (json_int_t)l[i].running_now, "claimed_now",
                     (json_int_t)l[i].claimed_now, "keys_full_now",
                     (json_int_t)l[i].keys_full_now, "held", l[i].held);
  }
  return json_null();
}

static json_t *stats_json(const jobq_queue_stats *q, const jobq_limits *l, size_t nl) {
  return json_pack(
      "{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:o, s:o, s:i, s:i}",
      "name", str(q->name), "ready", (json_int_t)q->ready, "scheduled",
      (json_int_t)q->scheduled, "waiting", (json_int_t)q->waiting, "pending",
      (json_int_t)q->pending, "running", (json_int_t)q->running, "done",
      (json_int_t)q->done, "dead", (json_int_t)q->dead, "cancelled",
      (json_int_t)q->cancelled, "paused", q->paused, "oldest_ready_ms",
      (json_int_t)q->oldest_ready_ms, "key_policy", str(q->key_policy), "limits",
      limits_json(q->name, l, nl), "parts", q->parts, "parts_unowned", q->parts_unowned);
}

/* Queue's parts as `jobq parts --json` names them, each with its owner's
 * name and machine while its session row lasts, in *out (an empty list
 * for a queue in one part).  On error *out is NULL. */
static int owners_json(jobq *db, const char *queue, json_t **out) {
  *out = NULL;
  int parts;
  jobq_part *v = NULL;
  size_t n = 0, nss = 0;
  jobq_session_info *ss = NULL;
  int rc = jobq_parts(db, queue, &parts, &v, &n);
  if (rc == JOBQ_OK && n > 0) rc = jobq_sessions(db, &ss, &nss);
  if (rc == JOBQ_OK) *out = json_array();
  for (size_t i = 0; rc == JOBQ_OK && i < n; i++) {
    const jobq_session_info *s = NULL;
    for (size_t k = 0; v[i].session != NULL && s == NULL && k < nss; k++)
      if (strcmp(ss[k].id, v[i].session) == 0) s = &ss[k];
    json_array_append_new(
        *out,
        json_pack("{s:i, s:o, s:o, s:o, s:b, s:I, s:I}", "part", v[i].part, "session",
                  str(v[i].session), "session_name", str(s ? s->name : NULL),
                  "session_host", str(s ? s->host : NULL), "live", v[i].live, "since_ms",
                  (json_int_t)v[i].since_ms, "ready", (json_int_t)v[i].ready));
  }
  jobq_sessions_free(ss, nss);
  jobq_parts_free(v, n);
  return rc;
}

/* A positive integer argument, or 0 when absent; -1 (with a reply) when
 * malformed. */
static int64_t int_arg(struct web_reply *r, web_arg_fn arg, void *ctx, const char *name) {
  const char *v = arg(ctx, name);
  if (v == NULL || *v == '\0') return 0;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || n <= 0) {
    web_reply_error(r, 400, "invalid %s '%.40s': expected a positive integer", name, v);
    return -1;
  }
  return n;
}

/* The queue argument, checked; NULL (with a reply) when bad or, if
 * needed, missing. */
static const char *queue_arg(struct web_reply *r, jobq *db, web_arg_fn arg, void *ctx,
                             int needed) {
  const char *q = arg(ctx, "queue");
  if (q == NULL || *q == '\0') {
    if (needed) web_reply_error(r, 400, "missing queue: expected ?queue=NAME");
    return NULL;
  }
  int rc = jobq_check_queue(db, q);
  if (rc != JOBQ_OK) {
    lib_error(r, db, rc);
    return NULL;
  }
  return q;
}

/* ---------------------------------------------------------------- pages */

static void overview(jobq *db, struct web_reply *r) {
  struct web_figures f;
  /* Every minute kept (JOBQ_TALLY_KEEP_MIN), of which the last hour goes
   * out: the database clock is known only with the read. */
  int rc = web_figures_read(db, 0, &f);
  if (rc != JOBQ_OK) {
    lib_error(r, db, rc);
    web_figures_release(&f);
    return;
  }
  json_t *queues = json_array(), *minutes = json_array(), *bounds = json_array();
  for (size_t i = 0; i < f.nqueues; i++)
    json_array_append_new(queues, stats_json(&f.queues[i], f.limits, f.nlimits));
  int64_t first = f.id.now_ms / 60000 - 59;
  for (size_t i = 0; i < f.ntallies; i++) {
    const jobq_tally *t = &f.tallies[i];
    if (t->minute < first) continue;
    json_t *w = json_array();
    for (int b = 0; b < JOBQ_WAIT_BUCKETS; b++) json_array_append_new(w, json_integer(t->wait[b]));
    json_array_append_new(
        minutes, json_pack("{s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "minute",
                           (json_int_t)t->minute, "queue", str(t->queue), "claimed",
                           (json_int_t)t->claimed, "empty_claims", (json_int_t)t->empty_claims,
                           "done", (json_int_t)t->done, "failed", (json_int_t)t->failed,
                           "retried", (json_int_t)t->retried, "dead", (json_int_t)t->dead,
                           "cancelled", (json_int_t)t->cancelled, "wait_ms",
                           (json_int_t)t->wait_ms, "wait", w));
  }
  for (int b = 0; b < JOBQ_WAIT_BUCKETS - 1; b++)
    json_array_append_new(bounds, json_integer(jobq_wait_bound_ms(b)));
  size_t live = 0;
  for (size_t i = 0; i < f.nsessions; i++) live += !f.sessions[i].expired;
  r->json = json_pack("{s:I, s:I, s:o, s:o, s:o, s:I, s:s, s:I}", "now_ms",
                      (json_int_t)f.id.now_ms, "epoch", (json_int_t)f.id.epoch, "queues", queues,
                      "minutes", minutes, "wait_bounds_ms", bounds, "sessions", (json_int_t)live,
                      "queue_id", f.id.queue_id, "schema_version",
                      (json_int_t)f.id.schema_version);
  web_figures_release(&f);
}

/* A page of jobs: the list, and where the next page starts. */
static json_t *page(jobq *db, jobq_list_opts *lo, int *rc) {
  jobq_job_info *v;
  size_t n;
  size_t want = lo->limit;
  lo->limit = want + 1;
  *rc = jobq_list(db, lo, &v, &n);
  if (*rc != JOBQ_OK) return NULL;
  json_t *jobs = json_array();
  for (size_t i = 0; i < n && i < want; i++) json_array_append_new(jobs, job_json(&v[i], 0));
  json_t *o = json_pack("{s:o, s:o}", "jobs", jobs, "next_after",
                        n > want ? json_integer(v[want - 1].id) : json_null());
  jobq_info_free(v, n);
  return o;
}

static void queue_page(jobq *db, web_arg_fn arg, void *ctx, struct web_reply *r, int dead) {
  jobq_list_opts lo = {0};
  lo.queue = queue_arg(r, db, arg, ctx, !dead);
  if (r->json != NULL) return;
  const char *state = arg(ctx, "state");
  if (dead) {
    lo.state = JOBQ_STATE_DEAD;
  } else if (state != NULL && *state != '\0' && strcmp(state, "all") != 0) {
    lo.state = jobq_state_parse(state);
    if (lo.state == 0) {
      web_reply_error(r, 400, "invalid state '%.40s': expected ready, scheduled, waiting, "
                              "pending, running, done, dead, cancelled or all", state);
      return;
    }
    lo.scheduled = strcmp(state, "scheduled") == 0;
  }
  const char *key = arg(ctx, "key");
  lo.key = key != NULL && *key != '\0' ? key : NULL;
  int64_t after = int_arg(r, arg, ctx, "after"), limit = int_arg(r, arg, ctx, "limit");
  if (after < 0 || limit < 0) return;
  lo.after_id = after;
  lo.limit = limit > 0 && limit <= PAGE_MAX ? (size_t)limit : 50;
  int rc;
  json_t *o = page(db, &lo, &rc);
  if (o == NULL) {
    lib_error(r, db, rc);
    return;
  }
  if (lo.queue != NULL) {
    jobq_queue_stats *st = NULL;
    jobq_limits *l = NULL;
    size_t n = 0, nl = 0;
    if ((rc = jobq_stats(db, &st, &n)) != JOBQ_OK ||
        (rc = jobq_limits_list(db, lo.queue, &l, &nl)) != JOBQ_OK) {
      jobq_stats_free(st, n);
      json_decref(o);
      lib_error(r, db, rc);
      return;
    }
    json_t *q = NULL, *owners = NULL;
    for (size_t i = 0; i < n; i++)
      if (strcmp(st[i].name, lo.queue) == 0) q = stats_json(&st[i], l, nl);
    jobq_stats_free(st, n);
    jobq_limits_free(l, nl);
    if (q != NULL && (rc = owners_json(db, lo.queue, &owners)) != JOBQ_OK) {
      json_decref(q);
      json_decref(o);
      lib_error(r, db, rc);
      return;
    }
    if (q != NULL) {
      json_object_set_new(q, "owners", owners);
      json_object_set_new(o, "queue", q);
    }
  }
  r->json = o;
}

static void job_page(jobq *db, web_arg_fn arg, void *ctx, struct web_reply *r) {
  int64_t id = int_arg(r, arg, ctx, "id");
  if (id < 0) return;
  if (id == 0) {
    web_reply_error(r, 400, "missing id: expected ?id=N");
    return;
  }
  jobq_job_info *j;
  int rc = jobq_show(db, id, &j);
  if (rc != JOBQ_OK) {
    lib_error(r, db, rc);
    return;
  }
  jobq_attempt *a;
  size_t na;
  if ((rc = jobq_attempts(db, id, &a, &na)) != JOBQ_OK) {
    jobq_info_free(j, 1);
    lib_error(r, db, rc);
    return;
  }
  json_t *attempts = json_array();
  for (size_t i = 0; i < na; i++)
    json_array_append_new(
        attempts, json_pack("{s:i, s:o, s:o, s:o, s:o, s:I, s:I}", "attempt", a[i].attempt,
                            "outcome", str(a[i].outcome), "error", str(a[i].error), "session",
                            str(a[i].session), "host", str(a[i].host), "claimed_at_ms",
                            (json_int_t)a[i].claimed_at_ms, "ended_at_ms",
                            (json_int_t)a[i].ended_at_ms));
  /* The session of a running job (or of the last attempt), while it
   * lives: its name and machine. */
  json_t *session = json_null();
  jobq_session_info *ss;
  size_t nss;
  if (j->session != NULL && jobq_sessions(db, &ss, &nss) == JOBQ_OK) {
    for (size_t i = 0; i < nss; i++)
      if (strcmp(ss[i].id, j->session) == 0) {
        json_decref(session);
        session = json_pack("{s:o, s:o, s:o, s:I}", "id", str(ss[i].id), "name", str(ss[i].name),
                            "host", str(ss[i].host), "pid", (json_int_t)ss[i].pid);
      }
    jobq_sessions_free(ss, nss);
  }
  /* The jobs it was put after, and those put after it. */
  json_t *links = json_array();
  jobq_job_link *l;
  size_t nl;
  if (jobq_links(db, id, &l, &nl) == JOBQ_OK) {
    for (size_t i = 0; i < nl; i++)
      json_array_append_new(
          links, json_pack("{s:I, s:b, s:o, s:b}", "id", (json_int_t)l[i].id, "child",
                           l[i].child, "state",
                           l[i].state ? json_string(jobq_state_name(l[i].state)) : json_null(),
                           "any_outcome", l[i].any_outcome));
    free(l);
  }
  r->json = json_pack("{s:o, s:o, s:o, s:o}", "job", job_json(j, 1), "attempts", attempts,
                      "session", session, "links", links);
  jobq_attempts_free(a, na);
  jobq_info_free(j, 1);
}

static void sessions_page(jobq *db, struct web_reply *r) {
  jobq_session_info *ss;
  size_t n;
  int rc = jobq_sessions(db, &ss, &n);
  if (rc != JOBQ_OK) {
    lib_error(r, db, rc);
    return;
  }
  jobq_job_info *run = NULL;
  size_t nrun = 0;
  jobq_list_opts lo = {0};
  lo.state = JOBQ_STATE_RUNNING;
  lo.limit = 10000;
  if ((rc = jobq_list(db, &lo, &run, &nrun)) != JOBQ_OK) {
    jobq_sessions_free(ss, n);
    lib_error(r, db, rc);
    return;
  }
  jobq_identity id;
  int64_t now = jobq_identity_get(db, &id) == JOBQ_OK ? id.now_ms : 0;
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *jobs = json_array();
    for (size_t k = 0; k < nrun; k++)
      if (run[k].session != NULL && strcmp(run[k].session, ss[i].id) == 0)
        json_array_append_new(jobs, json_pack("{s:I, s:o, s:I}", "id", (json_int_t)run[k].id,
                                              "queue", str(run[k].queue), "claimed_at_ms",
                                              (json_int_t)run[k].claimed_at_ms));
    /* Its parts per queue, as `jobq sessions --json` has them. */
    json_t *parts = json_object();
    for (size_t q = 0; q < ss[i].nparts; q++) {
      json_t *l = json_array();
      for (size_t k = 0; k < ss[i].parts[q].n; k++)
        json_array_append_new(l, json_integer(ss[i].parts[q].parts[k]));
      json_object_set_new(parts, ss[i].parts[q].queue, l);
    }
    json_array_append_new(
        list,
        json_pack(
            "{s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o, s:o}",
            "id", str(ss[i].id), "name", str(ss[i].name), "host", str(ss[i].host), "pid",
            (json_int_t)ss[i].pid, "started_at_ms", (json_int_t)ss[i].started_at_ms,
            "heartbeat_at_ms", (json_int_t)ss[i].heartbeat_at_ms, "lease_ms",
            (json_int_t)ss[i].lease_ms, "claimed", (json_int_t)ss[i].claimed, "in_flight",
            (json_int_t)ss[i].in_flight, "done", (json_int_t)ss[i].done, "failed",
            (json_int_t)ss[i].failed, "expired", ss[i].expired, "jobs", jobs, "parts",
            parts));
  }
  r->json = json_pack("{s:I, s:o}", "now_ms", (json_int_t)now, "sessions", list);
  jobq_info_free(run, nrun);
  jobq_sessions_free(ss, n);
}

void web_api_get(jobq *db, const char *path, web_arg_fn arg, void *ctx, struct web_reply *r) {
  r->status = 200;
  r->json = NULL;
  if (strcmp(path, "overview") == 0) overview(db, r);
  else if (strcmp(path, "queue") == 0) queue_page(db, arg, ctx, r, 0);
  else if (strcmp(path, "dead") == 0) queue_page(db, arg, ctx, r, 1);
  else if (strcmp(path, "job") == 0) job_page(db, arg, ctx, r);
  else if (strcmp(path, "sessions") == 0) sessions_page(db, r);
  else web_reply_error(r, 404, "no such API call");
}

/* ---------------------------------------------------------------- actions */

void web_api_post(jobq *db, const char *path, web_arg_fn arg, void *ctx, struct web_reply *r) {
  r->status = 200;
  r->json = NULL;
  int rc;
  if (strcmp(path, "pause") == 0 || strcmp(path, "resume") == 0 ||
      strcmp(path, "retry-dead") == 0) {
    const char *q = queue_arg(r, db, arg, ctx, 1);
    if (q == NULL) return;
    int64_t count = 0;
    rc = strcmp(path, "pause") == 0    ? jobq_pause(db, q)
         : strcmp(path, "resume") == 0 ? jobq_resume(db, q)
                                       : jobq_retry_dead(db, q, &count);
    if (rc == JOBQ_OK)
      r->json = json_pack("{s:s, s:o, s:I}", "done", path, "queue", str(q), "count",
                          (json_int_t)count);
  } else if (strcmp(path, "retry") == 0 || strcmp(path, "cancel") == 0) {
    int64_t id = int_arg(r, arg, ctx, "id");
    if (id < 0) return;
    if (id == 0) {
      web_reply_error(r, 400, "missing id: expected ?id=N");
      return;
    }
    int now = 1;
    rc = strcmp(path, "retry") == 0 ? jobq_retry(db, id) : jobq_cancel(db, id, &now);
    if (rc == JOBQ_OK)
      r->json = json_pack("{s:s, s:I, s:b}", "done", path, "id", (json_int_t)id, "now", now);
  } else {
    web_reply_error(r, 404, "no such action");
    return;
  }
  if (rc != JOBQ_OK) lib_error(r, db, rc);
}
