/*
 * metrics.c - the queue database's figures in the Prometheus text format
 * (version 0.0.4), for GET /metrics and `jobq stats --prometheus`.
 *
 * Gauges come from what the database holds now (jobs per queue and
 * state, the oldest ready job's age, the queue's parts and those without
 * a live owner, the live sessions and what each holds); counters from
 * the sessions' figures kept per minute (jobq_tally_totals()), which
 * only grow, so any number of `jobq web` give the same numbers and a
 * restart of one resets nothing.  Names follow Prometheus' conventions:
 * a jobq_ prefix, _total counters, base units (seconds).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "web.h"

/* A label value: backslash, double quote and newline escaped. */
static void label(struct web_buf *b, const char *v) {
  for (const char *p = v ? v : ""; *p; p++) {
    if (*p == '\\') web_buf_add(b, "\\\\", 2);
    else if (*p == '"') web_buf_add(b, "\\\"", 2);
    else if (*p == '\n') web_buf_add(b, "\\n", 2);
    else web_buf_add(b, p, 1);
  }
}

static void head(struct web_buf *b, const char *name, const char *type, const char *help) {
  web_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{queue="q"} value */
static void by_queue(struct web_buf *b, const char *name, const char *queue, int64_t v) {
  web_buf_printf(b, "%s{queue=\"", name);
  label(b, queue);
  web_buf_printf(b, "\"} %lld\n", (long long)v);
}

static void seconds(struct web_buf *b, int64_t ms) {
  web_buf_printf(b, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
}

static void queues(struct web_buf *b, const jobq_queue_stats *st, size_t n) {
  head(b, "jobq_jobs", "gauge",
       "Jobs per queue and state (done, dead and cancelled: archived, until pruned).");
  static const char *const states[] = {"ready", "scheduled", "waiting",  "pending",
                                       "running", "done",   "dead",     "cancelled"};
  for (size_t i = 0; i < n; i++) {
    const int64_t v[] = {st[i].ready, st[i].scheduled, st[i].waiting, st[i].pending,
                         st[i].running, st[i].done,     st[i].dead,    st[i].cancelled};
    for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
      web_buf_add(b, "jobq_jobs{queue=\"", 17);
      label(b, st[i].name);
      web_buf_printf(b, "\",state=\"%s\"} %lld\n", states[k], (long long)v[k]);
    }
  }
  head(b, "jobq_queue_paused", "gauge", "1 when the queue is paused.");
  for (size_t i = 0; i < n; i++) by_queue(b, "jobq_queue_paused", st[i].name, st[i].paused);
  head(b, "jobq_queue_parts", "gauge", "How many parts the queue is split into (1: one piece).");
  for (size_t i = 0; i < n; i++) by_queue(b, "jobq_queue_parts", st[i].name, st[i].parts);
  head(b, "jobq_queue_parts_unowned", "gauge",
       "Parts of the queue with no live owner: their jobs wait until a worker takes them.");
  for (size_t i = 0; i < n; i++)
    by_queue(b, "jobq_queue_parts_unowned", st[i].name, st[i].parts_unowned);
  head(b, "jobq_oldest_ready_age_seconds", "gauge",
       "How long the oldest job ready to run has been due (0 when none).");
  for (size_t i = 0; i < n; i++) {
    web_buf_add(b, "jobq_oldest_ready_age_seconds{queue=\"", 37);
    label(b, st[i].name);
    web_buf_add(b, "\"} ", 3);
    seconds(b, st[i].ready > 0 ? st[i].oldest_ready_ms : 0);
    web_buf_add(b, "\n", 1);
  }
}

/* Gauge name of the period (at offset period of jobq_limits) of each
 * queue of l[0..n) that has the rate at offset rate. */
static void periods(struct web_buf *b, const char *name, const char *help,
                    const jobq_limits *l, size_t n, size_t rate, size_t period) {
  int any = 0;
  for (size_t i = 0; i < n; i++) {
    const char *at = (const char *)&l[i];
    if (*(const int64_t *)(at + rate) <= 0) continue;
    if (!any++) head(b, name, "gauge", help);
    web_buf_add(b, name, strlen(name));
    web_buf_add(b, "{queue=\"", 8);
    label(b, l[i].queue);
    web_buf_add(b, "\"} ", 3);
    seconds(b, *(const int64_t *)(at + period));
    web_buf_add(b, "\n", 1);
  }
}

/* The queues' limits: each gauge for the queues that have that limit,
 * and whether a limit holds a queue back now. */
static void limits(struct web_buf *b, const jobq_limits *l, size_t n) {
  static const struct {
    const char *name, *help;
    size_t offset;
  } g[] = {
      {"jobq_queue_limit_running", "At most this many of the queue's jobs run at once.",
       offsetof(jobq_limits, running)},
      {"jobq_queue_limit_running_per_key",
       "At most this many jobs of one ordering key of the queue run at once.",
       offsetof(jobq_limits, running_per_key)},
      {"jobq_queue_limit_rate",
       "At most this many of the queue's jobs start in any rate period.",
       offsetof(jobq_limits, rate)},
      {"jobq_queue_limit_rate_per_key",
       "At most this many jobs of one ordering key of the queue start in any rate period per key.",
       offsetof(jobq_limits, rate_per_key)},
      {"jobq_queue_keys_full",
       "How many ordering keys of the queue started all their rate per key in its last period.",
       offsetof(jobq_limits, keys_full_now)},
  };
  if (n == 0) return;
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    int any = 0;
    for (size_t i = 0; i < n; i++) {
      int64_t v = *(const int64_t *)((const char *)&l[i] + g[k].offset);
      if (v <= 0) continue;
      if (!any++) head(b, g[k].name, "gauge", g[k].help);
      by_queue(b, g[k].name, l[i].queue, v);
    }
  }
  periods(b, "jobq_queue_limit_rate_period_seconds", "The queue's rate period.", l, n,
          offsetof(jobq_limits, rate), offsetof(jobq_limits, rate_period_ms));
  periods(b, "jobq_queue_limit_rate_per_key_period_seconds",
          "The queue's rate period per key.", l, n, offsetof(jobq_limits, rate_per_key),
          offsetof(jobq_limits, rate_per_key_period_ms));
  head(
      b, "jobq_queue_held_by_limit", "gauge",
      "1 when a job of the queue is ready to run but its running or rate limit, or its key's "
      "rate, is full.");
  for (size_t i = 0; i < n; i++) by_queue(b, "jobq_queue_held_by_limit", l[i].queue, l[i].held);
}

static void counters(struct web_buf *b, const jobq_tally *t, size_t n) {
  static const struct {
    const char *name, *help;
    size_t offset;
  } c[] = {
      {"jobq_claimed_jobs_total", "Jobs claimed by workers.", offsetof(jobq_tally, claimed)},
      {"jobq_completions_total", "Jobs completed.", offsetof(jobq_tally, done)},
      {"jobq_failures_total", "Attempts that failed (retried or dead).",
       offsetof(jobq_tally, failed)},
      {"jobq_retries_total", "Jobs put back to run again after a failure or on request.",
       offsetof(jobq_tally, retried)},
      {"jobq_deaths_total", "Jobs that failed with no attempts left.", offsetof(jobq_tally, dead)},
      {"jobq_worker_cancellations_total", "Running jobs that ended as cancelled.",
       offsetof(jobq_tally, cancelled)},
  };
  for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
    head(b, c[k].name, "counter", c[k].help);
    for (size_t i = 0; i < n; i++)
      if (t[i].queue[0] != '\0')
        by_queue(b, c[k].name, t[i].queue, *(const int64_t *)((const char *)&t[i] + c[k].offset));
  }
  head(b, "jobq_claims_empty_total", "counter",
       "Claims that found no job: many of them mean more workers than work.");
  int64_t empty = 0;
  for (size_t i = 0; i < n; i++) empty += t[i].empty_claims;
  web_buf_printf(b, "jobq_claims_empty_total %lld\n", (long long)empty);

  head(b, "jobq_pickup_wait_seconds", "histogram",
       "How long claimed jobs had been due before a worker picked them up.");
  for (size_t i = 0; i < n; i++) {
    if (t[i].queue[0] == '\0') continue;
    int64_t cum = 0;
    for (int k = 0; k < JOBQ_WAIT_BUCKETS; k++) {
      cum += t[i].wait[k];
      web_buf_add(b, "jobq_pickup_wait_seconds_bucket{queue=\"", 39);
      label(b, t[i].queue);
      web_buf_add(b, "\",le=\"", 6);
      if (k < JOBQ_WAIT_BUCKETS - 1) seconds(b, jobq_wait_bound_ms(k));
      else web_buf_add(b, "+Inf", 4);
      web_buf_printf(b, "\"} %lld\n", (long long)cum);
    }
    web_buf_add(b, "jobq_pickup_wait_seconds_sum{queue=\"", 36);
    label(b, t[i].queue);
    web_buf_add(b, "\"} ", 3);
    seconds(b, t[i].wait_ms);
    web_buf_add(b, "\n", 1);
    by_queue(b, "jobq_pickup_wait_seconds_count", t[i].queue, cum);
  }
}

/* name{session="n",host="h",id="i"} value */
static void by_session(struct web_buf *b, const char *name, const jobq_session_info *s,
                       int64_t v) {
  web_buf_printf(b, "%s{session=\"", name);
  label(b, s->name);
  web_buf_add(b, "\",host=\"", 8);
  label(b, s->host);
  web_buf_printf(b, "\",id=\"%s\"} %lld\n", s->id, (long long)v);
}

static void sessions(struct web_buf *b, const jobq_session_info *s, size_t n, int64_t now) {
  size_t live = 0;
  for (size_t i = 0; i < n; i++) live += !s[i].expired;
  head(b, "jobq_sessions", "gauge", "Live sessions (workers and foremen).");
  web_buf_printf(b, "jobq_sessions %zu\n", live);
  head(b, "jobq_sessions_expired", "gauge", "Sessions whose lease expired, not yet reaped.");
  web_buf_printf(b, "jobq_sessions_expired %zu\n", n - live);
  head(b, "jobq_session_jobs_claimed", "gauge", "Jobs a session holds.");
  for (size_t i = 0; i < n; i++) by_session(b, "jobq_session_jobs_claimed", &s[i], s[i].claimed);
  head(b, "jobq_session_jobs_in_flight", "gauge", "Jobs a session's workers run, as it reported.");
  for (size_t i = 0; i < n; i++)
    by_session(b, "jobq_session_jobs_in_flight", &s[i], s[i].in_flight);
  head(b, "jobq_session_completions_total", "counter", "Jobs a session completed.");
  for (size_t i = 0; i < n; i++) by_session(b, "jobq_session_completions_total", &s[i], s[i].done);
  head(b, "jobq_session_failures_total", "counter", "Attempts that failed in a session.");
  for (size_t i = 0; i < n; i++) by_session(b, "jobq_session_failures_total", &s[i], s[i].failed);
  head(b, "jobq_session_heartbeat_age_seconds", "gauge", "Time since a session's last heartbeat.");
  for (size_t i = 0; i < n; i++) {
    web_buf_add(b, "jobq_session_heartbeat_age_seconds{session=\"", 44);
    label(b, s[i].name);
    web_buf_add(b, "\",host=\"", 8);
    label(b, s[i].host);
    web_buf_printf(b, "\",id=\"%s\"} ", s[i].id);
    int64_t age = now - s[i].heartbeat_at_ms;
    seconds(b, age > 0 ? age : 0);
    web_buf_add(b, "\n", 1);
  }
}

int web_figures_read(jobq *db, int64_t since_ms, struct web_figures *f) {
  memset(f, 0, sizeof *f);
  int rc = jobq_identity_get(db, &f->id);
  if (rc == JOBQ_OK) rc = jobq_stats(db, &f->queues, &f->nqueues);
  if (rc == JOBQ_OK) rc = jobq_limits_list(db, NULL, &f->limits, &f->nlimits);
  if (rc == JOBQ_OK)
    rc = since_ms < 0 ? jobq_tally_totals(db, &f->tallies, &f->ntallies)
                      : jobq_tally_minutes(db, since_ms, &f->tallies, &f->ntallies);
  if (rc == JOBQ_OK) rc = jobq_sessions(db, &f->sessions, &f->nsessions);
  return rc;
}

void web_figures_release(struct web_figures *f) {
  jobq_stats_free(f->queues, f->nqueues);
  jobq_limits_free(f->limits, f->nlimits);
  jobq_tallies_free(f->tallies, f->ntallies);
  jobq_sessions_free(f->sessions, f->nsessions);
  memset(f, 0, sizeof *f);
}

int web_metrics(jobq *db, struct web_buf *out) {
  struct web_figures f;
  int rc = web_figures_read(db, -1, &f);
  if (rc == JOBQ_OK) {
    queues(out, f.queues, f.nqueues);
    limits(out, f.limits, f.nlimits);
    counters(out, f.tallies, f.ntallies);
    sessions(out, f.sessions, f.nsessions, f.id.now_ms);
    head(out, "jobq_epoch", "gauge", "The queue database's epoch (raised by jobq epoch bump).");
    web_buf_printf(out, "jobq_epoch %lld\n", (long long)f.id.epoch);
  }
  web_figures_release(&f);
  return rc;
}
