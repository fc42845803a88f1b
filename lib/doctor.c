/*
 * doctor.c - jobq_doctor(): what an operator should know about a queue
 * database, each finding with what to do about it.  The checks every
 * store shares are here (the database's identity, the clocks, sessions,
 * dead jobs); each store adds its engine's own (durability settings,
 * server version, vacuum and bloat).  Only reads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct jobq__checks {
  jobq_check *v;
  size_t n, cap;
  int failed;
};

int jobq__check_add(jobq__checks *c, int level, const char *name,
                    const char *advice, const char *fmt, ...) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    jobq_check *v = realloc(c->v, cap * sizeof *v);
    if (v == NULL) {
      c->failed = 1;
      return JOBQ_ENOMEM;
    }
    c->v = v;
    c->cap = cap;
  }
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  jobq_check *k = &c->v[c->n];
  int failed = 0;
  k->name = jobq__strdup(name, &failed);
  k->level = level;
  k->detail = jobq__strdup(detail, &failed);
  k->advice = jobq__strdup(advice, &failed);
  c->n++;
  if (failed) c->failed = 1;
  return failed ? JOBQ_ENOMEM : JOBQ_OK;
}

void jobq_checks_free(jobq_check *v, size_t n) {
  if (v == NULL) return;
  for (size_t i = 0; i < n; i++) {
    free(v[i].name);
    free(v[i].detail);
    free(v[i].advice);
  }
  free(v);
}

static int64_t host_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The identity, and this host's clock against the database's. */
static int check_identity(jobq *db, jobq__checks *c) {
  jobq_identity id;
  int64_t before = host_now_ms();
  int rc = jobq_identity_get(db, &id);
  int64_t after = host_now_ms();
  if (rc != JOBQ_OK) return rc;
  jobq__check_add(c, JOBQ_CHECK_OK, "identity", NULL,
                  "queue id %s, epoch %lld, job sequence %lld, schema version %d",
                  id.queue_id, (long long)id.epoch, (long long)id.seq, id.schema_version);
  /* The database read its clock somewhere between before and after. */
  int64_t skew = id.now_ms - (before + after) / 2, rtt = after - before;
  int64_t abs_skew = skew < 0 ? -skew : skew;
  if (abs_skew <= 1000 + rtt)
    jobq__check_add(c, JOBQ_CHECK_OK, "clock", NULL,
                    "this host's clock is within %lldms of the database's",
                    (long long)(abs_skew + rtt));
  else
    jobq__check_add(c, abs_skew > 60000 ? JOBQ_CHECK_FAIL : JOBQ_CHECK_WARN, "clock",
                    "synchronise the clocks (chrony, systemd-timesyncd): jobq decides "
                    "with the database's clock, but --at times, logs and ages read on "
                    "this host are off by as much",
                    "this host's clock is %lldms %s the database's", (long long)abs_skew,
                    skew > 0 ? "behind" : "ahead of");
  return JOBQ_OK;
}

/* Sessions expired without a reaper, or close to expiring. */
static int check_sessions(jobq *db, jobq__checks *c) {
  jobq_session_info *s;
  size_t n;
  int rc = jobq_sessions(db, &s, &n);
  if (rc != JOBQ_OK) return rc;
  int64_t now = 0;
  rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  size_t expired = 0, late = 0;
  char names[256] = "";
  size_t used = 0;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    int64_t left = s[i].expires_at_ms - now;
    int is_late = !s[i].expired && left < s[i].lease_ms / 3;
    expired += s[i].expired != 0;
    late += is_late;
    if ((s[i].expired || is_late) && used < sizeof names - 64)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s (%s, pid %lld)",
                               used ? ", " : "", s[i].name, s[i].host, (long long)s[i].pid);
  }
  jobq_sessions_free(s, n);
  if (rc != JOBQ_OK) return rc;
  if (expired > 0)
    jobq__check_add(c, JOBQ_CHECK_WARN, "sessions",
                    "their jobs come back when a live worker heartbeats; with none "
                    "running, run 'jobq reap'",
                    "%zu of %zu sessions expired and not yet reaped: %s", expired, n, names);
  else if (late > 0)
    jobq__check_add(c, JOBQ_CHECK_WARN, "sessions",
                    "a worker that heartbeats less than every lease/3, or waits on the "
                    "database, loses its jobs when the lease runs out: look at its host, "
                    "or give it a longer lease",
                    "%zu of %zu sessions are close to expiring: %s", late, n, names);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "sessions", NULL, "%zu live sessions, none near expiry",
                    n);
  return JOBQ_OK;
}

/* Dead jobs waiting for an operator. */
static int check_dead(jobq *db, jobq__checks *c) {
  jobq_queue_stats *q;
  size_t n;
  int rc = jobq_stats(db, &q, &n);
  if (rc != JOBQ_OK) return rc;
  int64_t dead = 0, queues = 0;
  for (size_t i = 0; i < n; i++) {
    dead += q[i].dead;
    queues += q[i].dead > 0;
  }
  jobq_stats_free(q, n);
  if (dead > 0)
    jobq__check_add(c, JOBQ_CHECK_WARN, "dead jobs",
                    "see why with 'jobq ls --state dead' and 'jobq show ID'; then "
                    "'jobq retry ID' or 'jobq retry --dead', or prune them",
                    "%lld dead jobs in %lld queues", (long long)dead, (long long)queues);
  else
    jobq__check_add(c, JOBQ_CHECK_OK, "dead jobs", NULL, "no dead jobs");
  return JOBQ_OK;
}

int jobq_doctor(jobq *db, jobq_check **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__need(db, JOBQ__ROLE_READER);
  jobq__checks c = {0};
  rc = check_identity(db, &c);
  if (rc == JOBQ_OK) rc = db->store->doctor(db, &c);
  if (rc == JOBQ_OK) rc = jobq__marks_doctor(db, &c);
  if (rc == JOBQ_OK) rc = check_sessions(db, &c);
  if (rc == JOBQ_OK) rc = check_dead(db, &c);
  if (rc == JOBQ_OK && c.failed) rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (rc != JOBQ_OK) {
    jobq_checks_free(c.v, c.n);
    return rc;
  }
  jobq__ok(db);
  *out = c.v;
  *n = c.n;
  return JOBQ_OK;
}
