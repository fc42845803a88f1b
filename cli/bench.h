/*
 * bench.h - what the files of `jobq bench` share: the settings of a run
 * (cmd_bench.c fills them from the options), the measurements the
 * workloads add to a report (bench_workloads.c, bench_ceiling.c), the
 * report's outputs (bench_report.c), and the helpers every workload uses:
 * the queues of the run and their cleanup, forked claimer processes with
 * counters in shared memory, `jobq work` children, and clocks.
 */
#ifndef JOBQ_CLI_BENCH_H
#define JOBQ_CLI_BENCH_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "jobq.h"

enum bench_store { BENCH_SQLITE, BENCH_POSTGRES, BENCH_MYSQL };

/* The settings of a run.  Counts left 0 were not given: each workload
 * picks its own default then. */
struct bench_config {
  const char *url;        /* the database the workloads open */
  char *shown;            /* url with the password redacted */
  const char *child_db;   /* --db for `jobq work` children; NULL: they
                             inherit $JOBQ_DB as the user set it */
  int store;              /* enum bench_store */
  int64_t jobs;           /* --jobs, or the store's default */
  int64_t concurrency;    /* --concurrency, or 0 */
  int64_t batch;          /* --batch, or 0 */
  int64_t backlog;        /* --backlog, default 1,000,000 */
  int64_t seconds;        /* --seconds, or 0 */
  char self[PATH_MAX];    /* this program, for children */
  char dir[PATH_MAX];     /* a temporary folder of the run (logs) */
  long pid;               /* in the names of the run's queues */
};

/* ---------------------------------------------------------------- report */

struct bench_result {
  char workload[32];
  char variant[48];
  char metric[32];    /* "throughput", "p50", "ratio", ... */
  double value;
  char unit[16];      /* "jobs/s", "ms", "x", "%" */
};

enum bench_status { BENCH_OK = 0, BENCH_FAILED, BENCH_NA, BENCH_SKIPPED, BENCH_INTERRUPTED };

/* One workload's outcome. */
struct bench_run {
  const char *name;
  int status;          /* enum bench_status */
  char why[512];       /* the error, or why it does not apply */
  int verified;        /* drain: every job done exactly once; -1: n/a */
  double seconds;      /* how long it ran */
};

#define BENCH_MAX_RUNS 8

struct bench_report {
  struct bench_run runs[BENCH_MAX_RUNS];
  size_t nruns;
  struct bench_result *results;
  size_t nresults, alloc;
};

void bench_add(struct bench_report *r, const char *workload,
               const char *variant, const char *metric, double value,
               const char *unit);
/* The value of a measurement, or -1 when there is none. */
double bench_find(const struct bench_report *r, const char *workload,
                  const char *variant, const char *metric);
void bench_report_release(struct bench_report *r);

/* stdout: the table, or one JSON document with --json. */
void bench_print(const struct bench_config *cfg, const struct bench_report *r);
/* One row per measurement; 0, or -1 with errno set. */
int bench_write_csv(FILE *f, const struct bench_report *r);
/* Throughputs and latency percentiles as an SVG drawing; 0 or -1. */
int bench_write_svg(FILE *f, const struct bench_config *cfg,
                    const struct bench_report *r);

/* ---------------------------------------------------------------- workloads */

/*
 * Each workload runs on db (the parent's handle), adds its measurements
 * and returns BENCH_OK, BENCH_NA (run->why says why), or BENCH_FAILED
 * after writing its error to run->why.  It leaves its queues registered
 * with bench_queue() for the caller to purge.
 */
typedef int (*bench_workload_fn)(const struct bench_config *cfg, jobq *db,
                                 struct bench_report *rep,
                                 struct bench_run *run);
int bench_enqueue(const struct bench_config *, jobq *, struct bench_report *,
                  struct bench_run *);
int bench_drain(const struct bench_config *, jobq *, struct bench_report *,
                struct bench_run *);
int bench_latency(const struct bench_config *, jobq *, struct bench_report *,
                  struct bench_run *);
int bench_scale(const struct bench_config *, jobq *, struct bench_report *,
                struct bench_run *);
int bench_backlog(const struct bench_config *, jobq *, struct bench_report *,
                  struct bench_run *);
int bench_ceiling(const struct bench_config *, jobq *, struct bench_report *,
                  struct bench_run *);

/* The hidden modes that `jobq work` children run: a persistent worker
 * answering each job at once (with stamp, the time its line arrived, in
 * Unix ns, as the result), and a job printing the time it started. */
int bench_internal_worker(int stamp);
int bench_internal_stamp(void);

/* ---------------------------------------------------------------- helpers */

/* Set by SIGINT/SIGTERM: every loop stops, then the run cleans up. */
extern volatile sig_atomic_t bench_stop;

/* Monotonic seconds, and the wall clock in Unix ns. */
double bench_now(void);
int64_t bench_wall_ns(void);

/* Writes "bench.PID.NAME" into buf (BENCH_QUEUE_BUF bytes) and remembers
 * the queue for bench_cleanup(). */
#define BENCH_QUEUE_BUF 64
const char *bench_queue(const struct bench_config *cfg, const char *name,
                        char *buf);
/* Purges every remembered queue (waiting out the lease of a session that
 * died holding jobs); 0, or -1 after a message. */
int bench_cleanup(jobq *db);

/* Fails the run: formats the error into run->why; returns BENCH_FAILED. */
int bench_fail(struct bench_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same with jobq_errmsg(db) after what. */
int bench_lib_fail(struct bench_run *run, jobq *db, int rc, const char *what);

/* Puts n jobs on queue with payload, in transactions of 1000, with a
 * progress bar labelled label; JOBQ_OK or the error (message on db). */
int bench_fill(jobq *db, const char *queue, int64_t n, const char *payload,
               const char *label);

/* The lease of the run's own sessions: long, so that a claimer starved of
 * CPU or of the SQLite write lock among 64 others is not reaped while it
 * waits; a run's cleanup waits this long for the jobs of a child that
 * died without ending its session. */
#define BENCH_LEASE_MS 30000

/* Counters the forked claimers share (MAP_SHARED). */
struct bench_shared {
  atomic_llong claimed;      /* jobs claimed by all children */
  atomic_llong claims;       /* claim calls */
  atomic_llong empty_ready;  /* empty claims while jobs were left */
  atomic_llong failed;       /* children that hit an error */
  atomic_llong ready;        /* children connected, waiting to start */
  atomic_int go;             /* set once all are ready: start claiming */
};
struct bench_shared *bench_shared_new(void);
void bench_shared_free(struct bench_shared *s);

/* How a claimer child works: claim batch jobs of queue (jobq_claim), then
 * complete them with jobq_ack_many; total is what was put. */
struct bench_claimer {
  const char *url, *queue;
  size_t batch;
  int64_t total;
  int count_empty;           /* scale: keep claiming while jobs are left */
  struct bench_shared *shared;
};
/* Forks n claimers and waits for them, drawing progress from the shared
 * counter.  The children connect and open their sessions first; *seconds
 * gets the time from when all of them were ready to when the last one
 * ended.  0 when every child succeeded, -1 otherwise. */
int bench_claimers(const struct bench_claimer *c, int n, const char *label,
                   double *seconds);

/* Starts `jobq [--db URL] work ARGS...` (argv NULL-terminated), stdout to
 * /dev/null, stderr to the run's log file; returns its pid or -1. */
pid_t bench_foreman(const struct bench_config *cfg, const char *const *args);
/* Waits for pid (sending SIGTERM once when bench_stop is set or after
 * timeout_s, if > 0); returns its exit status, 128 + a signal, or -1. */
int bench_wait(pid_t pid, double timeout_s);
/* Appends the tail of the foreman log to buf (for error messages). */
void bench_log_tail(const struct bench_config *cfg, char *buf, size_t size);

/* The queue's stats entry: 1 found, 0 none, < 0 error. */
int bench_queue_stats(jobq *db, const char *queue, jobq_queue_stats *out);

#endif
