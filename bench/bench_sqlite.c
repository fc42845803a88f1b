/*
 * bench_sqlite.c - throughput of the embedded SQLite store through the
 * public API, with the durable defaults (WAL, synchronous=FULL: every
 * commit waits for the disk).
 *
 * Phases, each timed on its own:
 *   put, single       jobq_put(), one transaction per job
 *   put, batch 1000   jobq_put_many() of 1000 jobs per transaction
 *   claim+complete    one session; claim B jobs, acknowledge the B with one
 *                     jobq_ack_many(); for B = 1, 10 and 100
 * The single puts feed the B = 1 phase (queue "b1"); the batched puts feed
 * B = 10 and B = 100 (queues "b10" and "b100").  At the end it checks that
 * every job it put was claimed exactly once and ended done, by its own
 * count of claims and by jobq_stats(), and exits 1 if not.
 *
 * usage: bench_sqlite [--db URL] [--jobs N] [--single N]
 *   --db URL     default: a fresh file in a new directory under $TMPDIR or
 *                /tmp, removed at the end; a given database must have no
 *                queues named b1, b10 or b100
 *   --jobs N     jobs for each of the B = 10 and B = 100 phases (default
 *                50000)
 *   --single N   jobs for the single-put and B = 1 phases (default 5000;
 *                they cost one or two disk flushes per job)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobq.h"

#define PUT_BATCH 1000
#define MAX_JOBS 10000000

/* Every id the bench put, sorted (ids only grow), with a claim count each. */
struct ledger {
  int64_t *ids;
  unsigned *claims;
  size_t n, cap;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(jobq *db, const char *what) {
  fprintf(stderr, "bench_sqlite: %s: %s\n", what, jobq_errmsg(db));
  exit(1);
}

static void ledger_add(struct ledger *l, int64_t id) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4096;
    l->ids = realloc(l->ids, l->cap * sizeof *l->ids);
    l->claims = realloc(l->claims, l->cap * sizeof *l->claims);
    if (!l->ids || !l->claims) {
      fputs("bench_sqlite: out of memory\n", stderr);
      exit(1);
    }
  }
  if (l->n && id <= l->ids[l->n - 1]) {
    fprintf(stderr, "bench_sqlite: job id %" PRId64 " after %" PRId64
                    ": expected ids to grow\n", id, l->ids[l->n - 1]);
    exit(1);
  }
  l->ids[l->n] = id;
  l->claims[l->n++] = 0;
}

/* Counts a claim of id; returns 0, or -1 when the bench never put it. */
static int ledger_claim(struct ledger *l, int64_t id) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == l->n || l->ids[lo] != id)
    return -1;
  l->claims[lo]++;
  return 0;
}

static void put_opts(jobq_put_opts *o, const char *queue, const char *payload) {
  jobq_put_opts_init(o);
  o->queue = queue;
  o->payload = payload;
  o->payload_len = strlen(payload);
}

static void row(const char *phase, size_t jobs, double secs) {
  printf("%-26s %9zu %9.2f %12.0f\n", phase, jobs, secs,
         secs > 0 ? (double)jobs / secs : 0.0);
  fflush(stdout);
}

static double phase_single_put(jobq *db, struct ledger *l, size_t n) {
  jobq_put_opts o;
  put_opts(&o, "b1", "{\"user\":42,\"action\":\"resize\"}");
  double t0 = now_s();
  for (size_t i = 0; i < n; i++) {
    int64_t id;
    if (jobq_put(db, &o, &id, NULL) != JOBQ_OK)
      die(db, "put");
    ledger_add(l, id);
  }
  return now_s() - t0;
}

/* n jobs into each of the two queues, PUT_BATCH per transaction. */
static double phase_batch_put(jobq *db, struct ledger *l, size_t n) {
  static jobq_put_opts opts[PUT_BATCH];
  static int64_t ids[PUT_BATCH];
  const char *queues[] = {"b10", "b100"};
  double t0 = now_s();
  for (size_t q = 0; q < 2; q++) {
    for (size_t done = 0; done < n;) {
      size_t k = n - done < PUT_BATCH ? n - done : PUT_BATCH;
      for (size_t i = 0; i < k; i++)
        put_opts(&opts[i], queues[q], "{\"user\":42,\"action\":\"resize\"}");
      if (jobq_put_many(db, opts, k, ids, NULL) != JOBQ_OK)
        die(db, "put_many");
      for (size_t i = 0; i < k; i++)
        ledger_add(l, ids[i]);
      done += k;
    }
  }
  return now_s() - t0;
}

/* Claims batch jobs at a time from queue until it is empty and completes
 * each batch with one jobq_ack_many(); *count gets the jobs done. */
static double phase_claim(jobq *db, struct ledger *l, const char *queue,
                          size_t batch, size_t *count) {
  jobq_session *s;
  if (jobq_session_open(db, NULL, &s) != JOBQ_OK)
    die(db, "session_open");
  jobq_ack *acks = calloc(batch, sizeof *acks);
  if (!acks) {
    fputs("bench_sqlite: out of memory\n", stderr);
    exit(1);
  }
  const char *queues[] = {queue};
  *count = 0;
  double t0 = now_s(), last_beat = t0;
  for (;;) {
    /* Heartbeat every lease/3, as a worker would (it is part of the cost). */
    if (now_s() - last_beat > (double)jobq_session_lease_ms(s) / 3000.0) {
      if (jobq_heartbeat(s, NULL, NULL) != JOBQ_OK)
        die(db, "heartbeat");
      last_beat = now_s();
    }
    jobq_job *jobs;
    size_t n;
    if (jobq_claim(s, queues, 1, batch, &jobs, &n) != JOBQ_OK)
      die(db, "claim");
    if (n == 0) {
      jobq_jobs_free(jobs, n);
      break;
    }
    for (size_t i = 0; i < n; i++) {
      if (ledger_claim(l, jobs[i].id) < 0) {
        fprintf(stderr, "bench_sqlite: claimed job %" PRId64
                        " that the bench did not put\n", jobs[i].id);
        exit(1);
      }
      jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
      acks[i].data = "ok";
      acks[i].len = 2;
    }
    if (jobq_ack_many(s, acks, n) != JOBQ_OK)
      die(db, "ack_many");
    for (size_t i = 0; i < n; i++)
      if (acks[i].status != JOBQ_OK || acks[i].already ||
          acks[i].outcome != JOBQ_STATE_DONE) {
        fprintf(stderr, "bench_sqlite: ack of job %" PRId64 ": status %s, "
                        "already %d, outcome %s: expected a fresh done\n",
                acks[i].id, jobq_err_name(acks[i].status), acks[i].already,
                jobq_state_name(acks[i].outcome) ? jobq_state_name(acks[i].outcome) : "?");
        exit(1);
      }
    *count += n;
    jobq_jobs_free(jobs, n);
  }
  double secs = now_s() - t0;
  free(acks);
  jobq_session_close(s);
  return secs;
}

/* Checks that queue holds exactly want done jobs and nothing else. */
static int check_queue(const jobq_queue_stats *st, size_t n, const char *queue,
                       size_t want) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(st[i].name, queue))
      continue;
    if (st[i].done == (int64_t)want && st[i].ready + st[i].scheduled +
                                               st[i].waiting + st[i].running +
                                               st[i].dead + st[i].cancelled ==
                                           0)
      return 0;
    fprintf(stderr, "bench_sqlite: queue '%s': %" PRId64 " done, %" PRId64
                    " ready, %" PRId64 " scheduled, %" PRId64 " waiting, %"
                    PRId64 " running, %" PRId64 " dead, %" PRId64
                    " cancelled: expected %zu done and nothing else\n",
            queue, st[i].done, st[i].ready, st[i].scheduled, st[i].waiting,
            st[i].running, st[i].dead, st[i].cancelled, want);
    return -1;
  }
  fprintf(stderr, "bench_sqlite: queue '%s' missing from the stats\n", queue);
  return -1;
}

static size_t parse_jobs(const char *opt, const char *text) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < 1 || v > MAX_JOBS) {
    fprintf(stderr, "bench_sqlite: invalid %s '%s': expected 1 to %d\n", opt,
            text, MAX_JOBS);
    exit(2);
  }
  return (size_t)v;
}

int main(int argc, char **argv) {
  const char *url = NULL;
  size_t njobs = 50000, nsingle = 5000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      url = argv[++i];
    else if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
      njobs = parse_jobs("--jobs", argv[++i]);
    else if (!strcmp(argv[i], "--single") && i + 1 < argc)
      nsingle = parse_jobs("--single", argv[++i]);
    else {
      fprintf(stderr, "usage: bench_sqlite [--db URL] [--jobs N] [--single N]\n");
      return 2;
    }
  }

  /* The default: a new directory under $TMPDIR (or /tmp). */
  char dir[4096] = "", path[4200] = "", urlbuf[4300];
  if (url == NULL) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/jobq-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
      fprintf(stderr, "bench_sqlite: cannot make a temporary directory '%s': %s\n",
              dir, strerror(errno));
      return 1;
    }
    snprintf(path, sizeof path, "%s/bench.db", dir);
    snprintf(urlbuf, sizeof urlbuf, "sqlite:%s", path);
    url = urlbuf;
  }

  jobq *db;
  if (jobq_open(url, &db) != JOBQ_OK)
    die(db, "open");
  char *safe = jobq_url_redact(url);
  printf("jobq %s, SQLite store at %s\n", JOBQ_VERSION, safe ? safe : "?");
  free(safe);
  printf("%-26s %9s %9s %12s\n", "phase", "jobs", "seconds", "jobs/s");

  struct ledger l = {0};
  row("put, single", nsingle, phase_single_put(db, &l, nsingle));
  row("put, batch 1000", 2 * njobs, phase_batch_put(db, &l, njobs));

  size_t got;
  const char *names[] = {"claim+complete, batch 1", "claim+complete, batch 10",
                         "claim+complete, batch 100"};
  const char *queues[] = {"b1", "b10", "b100"};
  size_t batches[] = {1, 10, 100};
  size_t want[] = {nsingle, njobs, njobs};
  int bad = 0;
  for (size_t p = 0; p < 3; p++) {
    double secs = phase_claim(db, &l, queues[p], batches[p], &got);
    row(names[p], got, secs);
    if (got != want[p]) {
      fprintf(stderr, "bench_sqlite: %s: %zu jobs done, expected %zu\n",
              names[p], got, want[p]);
      bad = 1;
    }
  }

  /* Every job claimed exactly once, and the database agrees. */
  for (size_t i = 0; i < l.n; i++)
    if (l.claims[i] != 1) {
      fprintf(stderr, "bench_sqlite: job %" PRId64 " claimed %u times\n",
              l.ids[i], l.claims[i]);
      bad = 1;
    }
  jobq_queue_stats *st;
  size_t nst;
  if (jobq_stats(db, &st, &nst) != JOBQ_OK)
    die(db, "stats");
  for (size_t p = 0; p < 3; p++)
    if (check_queue(st, nst, queues[p], want[p]))
      bad = 1;
  jobq_stats_free(st, nst);
  jobq_close(db);
  free(l.ids);
  free(l.claims);

  if (*path) {
    char side[sizeof path + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rmdir(dir);
  }
  if (bad)
    return 1;
  printf("verified: %zu jobs, each claimed once and done once\n", l.n);
  return 0;
}
