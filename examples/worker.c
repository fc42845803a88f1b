/*
 * worker.c - a complete worker process on the jobq C API, and the worker
 * that `make demo` runs four of.
 *
 * It opens one session, claims jobs in batches from the queues it is given,
 * "works" each job by what its payload says, and acknowledges the whole
 * batch in one transaction with jobq_ack_many().  The payloads it knows:
 *
 *   sleep:MS     sleeps MS milliseconds, then completes (heartbeating
 *                meanwhile; a cancel request or SIGTERM cuts it short)
 *   fail         fails every time (dead once its attempts are spent)
 *   fail-once    fails on attempt 1, completes on attempt 2
 *   anything     completes with the result "len=N", N the payload's length
 *
 * It heartbeats every lease/3 (checked before each claim and each job, and
 * during a sleep), so jobs longer than a lease are never taken from it.
 * Jobs of the batch whose cancel an operator requested are handed back, and
 * so end as cancelled.  It exits 0 once its queues have had nothing ready,
 * scheduled, running or waiting for --idle (so retries waiting out their
 * backoff are still run; paused queues do not count).  On SIGTERM or SIGINT
 * it stops after the job in hand (a sleep is cut short and handed back),
 * acknowledges what it finished, closes its session (every job it still
 * holds goes back to ready at once, its attempt not spent) and exits 0.
 * When the database was swapped or restored from a backup (JOBQ_EIDENTITY)
 * it claims nothing until an operator runs `jobq epoch bump`, then goes on
 * with a new session.  With --log FILE it appends one line per job it runs, before the job is
 * acknowledged: "id queue key attempt payload", tab-separated.
 *
 * usage: worker [--db URL] [--name N] [-q QUEUE]... [--batch N]
 *               [--idle D] [--lease D] [--log FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobq.h"

#define MAX_QUEUES 64
#define MAX_BATCH 1000
#define RESULT_MAX 64
#define POLL_MIN_MS 5
#define POLL_MAX_MS 100

static volatile sig_atomic_t stopping;

struct worker {
  const char *url;
  const char *name;
  const char *queues[MAX_QUEUES];
  size_t nq;
  size_t batch;
  int64_t idle_ms;
  int64_t lease_ms;
  int log_fd;

  jobq *db;
  jobq_session *session;
  int64_t last_beat_ms;
  int identity_refused; /* claims refused (JOBQ_EIDENTITY) until a bump */
  int64_t done, failed, lost, cancelled;
};

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps ms milliseconds, or less when SIGTERM or SIGINT arrives: returns
 * 0 after the full sleep, -1 when cut short by a stop. */
static int sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  if (stopping)
    return -1;
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    if (stopping)
      return -1;
  return 0;
}

static void usage(FILE *to) {
  fputs("usage: worker [--db URL] [--name N] [-q QUEUE]... [--batch N]\n"
        "              [--idle D] [--lease D] [--log FILE]\n"
        "  --db URL      queue database (default $JOBQ_DB or sqlite:jobq.db)\n"
        "  --name N      session name shown by `jobq sessions` (default worker)\n"
        "  -q QUEUE      claim from QUEUE; repeatable (default: every queue)\n"
        "  --batch N     jobs per claim and per ack transaction (default 10)\n"
        "  --idle D      exit after the queues were empty for D (default 1s)\n"
        "  --lease D     session lease (default 5s); heartbeat every lease/3\n"
        "  --log FILE    append one line per job run to FILE\n",
        to);
}

static int parse_count(const char *opt, const char *text, size_t max,
                       size_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < 1 || (unsigned long long)v > max) {
    fprintf(stderr, "worker: invalid %s '%s': expected a number from 1 to %zu\n",
            opt, text, max);
    return -1;
  }
  *out = (size_t)v;
  return 0;
}

static int parse_duration(const char *opt, const char *text, int64_t *out) {
  if (jobq_parse_duration(text, out) != JOBQ_OK) {
    fprintf(stderr, "worker: invalid %s '%s': expected a duration like 1s\n",
            opt, text);
    return -1;
  }
  return 0;
}

/* Returns 0, or 2 for a usage error (after printing it). */
static int parse_args(struct worker *w, int argc, char **argv) {
  static const char *const with_value[] = {
      "--db", "--name", "-q", "--queue", "--batch", "--idle", "--lease", "--log",
  };
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    int known = 0;
    for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
      known |= !strcmp(a, with_value[k]);
    if (!known) {
      fprintf(stderr, "worker: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "worker: option '%s' needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--db")) {
      w->url = v;
    } else if (!strcmp(a, "--name")) {
      w->name = v;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--queue")) {
      if (w->nq == MAX_QUEUES) {
        fprintf(stderr, "worker: too many queues: at most %d\n", MAX_QUEUES);
        return 2;
      }
      if (jobq_check_queue(NULL, v) != JOBQ_OK) {
        fprintf(stderr,
                "worker: invalid queue name '%s': expected "
                "[a-z0-9][a-z0-9_.-]{0,62}\n",
                v);
        return 2;
      }
      w->queues[w->nq++] = v;
    } else if (!strcmp(a, "--batch")) {
      if (parse_count("--batch", v, MAX_BATCH, &w->batch))
        return 2;
    } else if (!strcmp(a, "--idle")) {
      if (parse_duration("--idle", v, &w->idle_ms))
        return 2;
    } else if (!strcmp(a, "--lease")) {
      if (parse_duration("--lease", v, &w->lease_ms))
        return 2;
      if (w->lease_ms < 100) {
        fprintf(stderr, "worker: invalid --lease '%s': expected at least 100ms\n",
                v);
        return 2;
      }
    } else { /* --log */
      if (w->log_fd >= 0)
        close(w->log_fd);
      w->log_fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (w->log_fd < 0) {
        fprintf(stderr, "worker: cannot open --log '%s': %s\n", v,
                strerror(errno));
        return 2;
      }
    }
  }
  return 0;
}

/* Opens a new session; returns 0 or -1 after printing why. */
static int session_start(struct worker *w) {
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = w->name;
  so.lease_ms = w->lease_ms;
  int rc = jobq_session_open(w->db, &so, &w->session);
  if (rc != JOBQ_OK) {
    fprintf(stderr, "worker %s: cannot open a session: %s\n", w->name,
            jobq_errmsg(w->db));
    return -1;
  }
  w->last_beat_ms = now_ms();
  return 0;
}

/* Heartbeats when a third of the lease has passed since the last one.
 * Jobs of the current batch whose cancel was requested are flagged in
 * cancel[] (indexes into jobs).  Returns 0, or -1 when the session expired:
 * the batch's claims are gone and a new session has been opened (or could
 * not be: then w->session is NULL). */
static int maybe_heartbeat(struct worker *w, const jobq_job *jobs, size_t n,
                           unsigned char *cancel) {
  if (now_ms() - w->last_beat_ms < w->lease_ms / 3)
    return 0;
  int64_t *ids = NULL;
  size_t nids = 0;
  int rc = jobq_heartbeat(w->session, &ids, &nids);
  if (rc == JOBQ_EEXPIRED) {
    fprintf(stderr, "worker %s: session expired; opening a new one\n",
            w->name);
    jobq_session_close(w->session);
    w->session = NULL;
    w->lost += (int64_t)n;
    session_start(w);
    return -1;
  }
  if (rc != JOBQ_OK) {
    /* Temporary (busy, unreachable): try again next time round; the lease
     * leaves two more chances.  An identity refusal was said already. */
    if (rc != JOBQ_EIDENTITY || !w->identity_refused)
      fprintf(stderr, "worker %s: heartbeat failed: %s\n", w->name,
              jobq_errmsg(w->db));
    return 0;
  }
  w->last_beat_ms = now_ms();
  for (size_t i = 0; i < nids; i++)
    for (size_t j = 0; j < n; j++)
      if (jobs[j].id == ids[i])
        cancel[j] = 1;
  free(ids);
  return 0;
}

static void log_job(const struct worker *w, const jobq_job *job) {
  if (w->log_fd < 0)
    return;
  char line[1024];
  int len = snprintf(line, sizeof line, "%" PRId64 "\t%s\t%s\t%d\t%.*s\n",
                     job->id, job->queue, job->key ? job->key : "-",
                     job->attempt, (int)(job->payload_len > 200 ? 200 : job->payload_len),
                     (const char *)job->payload);
  if (len > (int)sizeof line - 1)
    len = (int)sizeof line - 1;
  /* One write on an O_APPEND file: lines of concurrent workers never mix. */
  if (write(w->log_fd, line, (size_t)len) != len)
    fprintf(stderr, "worker %s: cannot write the log: %s\n", w->name,
            strerror(errno));
}

/* The batch in hand, for heartbeats in the middle of a job. */
struct batch {
  const jobq_job *jobs;
  size_t n;
  unsigned char *cancel; /* cancel[i]: an operator asked to cancel jobs[i] */
};

/* Sleeps ms for job i of b, heartbeating every lease/3 meanwhile, so a job
 * longer than the lease keeps its claim.  Returns 0 after the full sleep,
 * 1 when the job's cancel was requested or the worker is stopping, -1 when
 * the session expired. */
static int sleep_job(struct worker *w, const struct batch *b, size_t i,
                     int64_t ms) {
  int64_t until = now_ms() + ms;
  for (;;) {
    int64_t left = until - now_ms();
    if (left <= 0)
      return 0;
    int64_t slice = w->lease_ms / 3 < left ? w->lease_ms / 3 : left;
    if (sleep_ms(slice) < 0)
      return 1;
    if (maybe_heartbeat(w, b->jobs, b->n, b->cancel) < 0)
      return -1;
    if (b->cancel[i])
      return 1;
  }
}

/* Runs job i of the batch and fills its acknowledgement.  result is
 * RESULT_MAX bytes that the ack points into.  Returns 0, or -1 when the
 * session expired meanwhile (the batch's claims are gone). */
static int work(struct worker *w, const struct batch *b, size_t i,
                jobq_ack *ack, char *result) {
  const jobq_job *job = &b->jobs[i];
  const char *p = job->payload; /* NUL-terminated by the library */
  log_job(w, job);
  if (!strncmp(p, "sleep:", 6)) {
    char *end;
    long long ms = strtoll(p + 6, &end, 10);
    if (end == p + 6 || *end || ms < 0) {
      jobq_ack_init(ack, job, JOBQ_ACK_FAIL);
      ack->data = "bad payload: expected sleep:MS";
      ack->len = strlen(ack->data);
      return 0;
    }
    int r = sleep_job(w, b, i, ms);
    if (r < 0)
      return -1;
    if (r > 0) {
      /* Stopped or cancelled in the middle: hand the job back.  It runs
       * again later, or ends as cancelled when that was asked. */
      jobq_ack_init(ack, job, JOBQ_ACK_RELEASE);
      return 0;
    }
    jobq_ack_init(ack, job, JOBQ_ACK_COMPLETE);
    ack->len = (size_t)snprintf(result, RESULT_MAX, "slept %lldms", ms);
    ack->data = result;
  } else if (!strcmp(p, "fail") || (!strcmp(p, "fail-once") && job->attempt == 1)) {
    jobq_ack_init(ack, job, JOBQ_ACK_FAIL);
    ack->len = (size_t)snprintf(result, RESULT_MAX, "failed on purpose (attempt %d of %d)",
                                job->attempt, job->max_attempts);
    ack->data = result;
  } else {
    jobq_ack_init(ack, job, JOBQ_ACK_COMPLETE);
    ack->len = (size_t)snprintf(result, RESULT_MAX, "len=%zu", job->payload_len);
    ack->data = result;
  }
  return 0;
}

/* Claims one batch, works it and acknowledges it.  Returns the number of
 * jobs claimed, or a negative jobq error after printing it. */
static int run_batch(struct worker *w) {
  jobq_job *jobs = NULL;
  size_t n = 0;
  int rc = jobq_claim(w->session, w->nq ? w->queues : NULL, w->nq, w->batch,
                      &jobs, &n);
  if (rc == JOBQ_EIDENTITY) {
    /* The database was swapped or went back in time.  Claim nothing until
     * an operator bumps the epoch; then the session is gone (EEXPIRED) and
     * a new one starts. */
    if (!w->identity_refused)
      fprintf(stderr, "worker %s: not claiming: %s\n", w->name,
              jobq_errmsg(w->db));
    w->identity_refused = 1;
    return rc;
  }
  if (rc != JOBQ_OK) {
    if (!jobq_err_temporary(rc) && rc != JOBQ_EEXPIRED)
      fprintf(stderr, "worker %s: claim failed: %s\n", w->name,
              jobq_errmsg(w->db));
    return rc;
  }
  if (w->identity_refused) {
    fprintf(stderr, "worker %s: claiming again\n", w->name);
    w->identity_refused = 0;
  }
  if (n == 0) {
    jobq_jobs_free(jobs, n);
    return 0;
  }
  jobq_session_set_in_flight(w->session, (int64_t)n);

  jobq_ack *acks = calloc(n, sizeof *acks);
  char(*results)[RESULT_MAX] = calloc(n, RESULT_MAX);
  unsigned char *cancel = calloc(n, 1);
  if (!acks || !results || !cancel) {
    fprintf(stderr, "worker %s: out of memory\n", w->name);
    free(acks), free(results), free(cancel);
    jobq_jobs_free(jobs, n);
    return JOBQ_ENOMEM;
  }

  /* Work the batch in claim order.  A job not started (stopping, or cancel
   * requested) is released: back to ready at once, its attempt not spent
   * (or cancelled, when that was asked). */
  struct batch b = {jobs, n, cancel};
  int expired = 0;
  for (size_t i = 0; i < n && !expired; i++) {
    if (maybe_heartbeat(w, jobs, n, cancel) < 0) {
      expired = 1;
    } else if (stopping || cancel[i]) {
      jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_RELEASE);
    } else if (work(w, &b, i, &acks[i], results[i]) < 0) {
      expired = 1;
    }
  }

  if (!expired) {
    rc = jobq_ack_many(w->session, acks, n);
    if (rc != JOBQ_OK) {
      /* Nothing was written; the jobs come back when the lease runs out
       * (or at once when the session is closed) and run again. */
      fprintf(stderr, "worker %s: ack of %zu jobs failed: %s\n", w->name, n,
              jobq_errmsg(w->db));
      w->lost += (int64_t)n;
    } else {
      for (size_t i = 0; i < n; i++) {
        if (acks[i].status == JOBQ_ELOST)
          w->lost++;
        else if (acks[i].outcome == JOBQ_STATE_CANCELLED)
          w->cancelled++;
        else if (acks[i].kind == JOBQ_ACK_COMPLETE)
          w->done++;
        else if (acks[i].kind == JOBQ_ACK_FAIL)
          w->failed++;
      }
    }
  }
  if (w->session)
    jobq_session_set_in_flight(w->session, 0);
  free(acks);
  free(results);
  free(cancel);
  jobq_jobs_free(jobs, n);
  return (int)n;
}

static int is_mine(const struct worker *w, const char *queue) {
  if (w->nq == 0)
    return 1;
  for (size_t i = 0; i < w->nq; i++)
    if (!strcmp(w->queues[i], queue))
      return 1;
  return 0;
}

/* 1 when none of the worker's queues has an unfinished job (ready,
 * scheduled, running or waiting), 0 when some has, -1 on error.  Paused
 * queues do not count: nothing can be claimed from them until they are
 * resumed. */
static int queues_empty(struct worker *w) {
  jobq_queue_stats *st = NULL;
  size_t n = 0;
  if (jobq_stats(w->db, &st, &n) != JOBQ_OK) {
    fprintf(stderr, "worker %s: stats failed: %s\n", w->name,
            jobq_errmsg(w->db));
    return -1;
  }
  int empty = 1;
  for (size_t i = 0; i < n; i++)
    if (is_mine(w, st[i].name) && !st[i].paused &&
        st[i].ready + st[i].scheduled + st[i].running + st[i].waiting > 0)
      empty = 0;
  jobq_stats_free(st, n);
  return empty;
}

int main(int argc, char **argv) {
  struct worker w = {
      .url = getenv("JOBQ_DB") ? getenv("JOBQ_DB") : "sqlite:jobq.db",
      .name = "worker",
      .batch = 10,
      .idle_ms = 1000,
      .lease_ms = JOBQ_DEFAULT_LEASE_MS,
      .log_fd = -1,
  };
  int rc = parse_args(&w, argc, argv);
  if (rc)
    return rc;

  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  int64_t start = now_ms();
  if (jobq_open(w.url, &w.db) != JOBQ_OK) {
    char *safe = jobq_url_redact(w.url);
    fprintf(stderr, "worker %s: cannot open '%s': %s\n", w.name,
            safe ? safe : "", jobq_errmsg(w.db));
    free(safe);
    jobq_close(w.db);
    return 1;
  }
  if (session_start(&w) < 0) {
    jobq_close(w.db);
    return 1;
  }

  int64_t empty_since = -1; /* when the queues were first seen empty */
  int64_t poll = POLL_MIN_MS;
  int status = 0;
  while (!stopping) {
    if (!w.session && session_start(&w) < 0) {
      status = 1;
      break;
    }
    if (maybe_heartbeat(&w, NULL, 0, NULL) < 0)
      continue;
    rc = run_batch(&w);
    if (rc > 0) {
      empty_since = -1;
      poll = POLL_MIN_MS;
      continue;
    }
    if (rc == JOBQ_EEXPIRED) {
      fprintf(stderr, "worker %s: session expired; opening a new one\n",
              w.name);
      jobq_session_close(w.session);
      w.session = NULL;
      continue;
    }
    if (rc < 0 && !jobq_err_temporary(rc) && rc != JOBQ_EIDENTITY) {
      status = 1; /* access denied, schema refused, database error: said why */
      break;
    }
    /* Nothing claimable: done for good, or only for now? */
    int empty = rc == 0 ? queues_empty(&w) : 0;
    if (empty < 0) {
      status = 1;
      break;
    }
    if (empty) {
      if (empty_since < 0)
        empty_since = now_ms();
      if (now_ms() - empty_since >= w.idle_ms)
        break;
    } else {
      empty_since = -1;
    }
    sleep_ms(rc == JOBQ_EIDENTITY ? 1000 : poll);
    poll = poll * 2 > POLL_MAX_MS ? POLL_MAX_MS : poll * 2;
  }

  jobq_session_close(w.session); /* releases whatever it still holds */
  jobq_close(w.db);
  if (w.log_fd >= 0)
    close(w.log_fd);
  printf("worker %s: %" PRId64 " done, %" PRId64 " failed, %" PRId64
         " cancelled, %" PRId64 " lost in %.1fs%s\n",
         w.name, w.done, w.failed, w.cancelled, w.lost,
         (double)(now_ms() - start) / 1000.0, stopping ? " (stopped by signal)" : "");
  return status;
}
