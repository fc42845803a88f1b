/*
 * bench.h - what the files of `jobq bench` share: the settings of a run
 * (main.c fills them from the options), the measurements the
 * workloads add to a report (workloads.c, ceiling.c), the
 * report's outputs (report.c), and the helpers every workload uses:
 * the queues of the run and their cleanup, forked claimer processes with
 * counters in shared memory, `jobq work` children, and clocks.
 */
#ifndef JOBQ_BENCH_H
#define JOBQ_BENCH_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "jobq.h"

enum bench_store { BENCH_SQLITE, BENCH_POSTGRES, BENCH_MYSQL };

/* What the run ran on (machine.c). */
struct bench_machine {
  long cores;
  double memory;          /* bytes; 0 when unknown */
  char cpu[128];          /* "" when unknown */
  char system[256];       /* "Linux 6.1.0 (x86_64)" */
  char server[256];       /* `jobq doctor`'s "server" check: "PostgreSQL 15.18" */
  char durability[512];   /* and its "durability" check */
  char flush_dir[PATH_MAX];
  double flush_ms;        /* a 4 KiB write and its flush there; -1: not measured */
  double flush_idle_ms;   /* the same after a pause asleep; -1: not measured */
  char flush_why[PATH_MAX + 64]; /* why not */
};

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
  int64_t rate;           /* --rate, or 0 */
  char self[PATH_MAX];    /* this program, for the workers of children */
  char jobq[PATH_MAX];    /* the jobq program, for `jobq work` children */
  char dir[PATH_MAX];     /* a temporary folder of the run (logs) */
  long pid;               /* in the names of the run's queues */
  struct bench_machine machine;
};

/* Reads what the run runs on into cfg->machine, the disk's flush
 * measured in the SQLite database's folder, or the run's own (cfg->dir)
 * for a server, whose disk may be another machine's. */
void bench_machine_read(struct bench_config *cfg, jobq *db);
/* Three lines on stderr. */
void bench_machine_print(const struct bench_config *cfg);
/* One line, for a drawing. */
void bench_machine_summary(const struct bench_machine *m, char *buf, size_t size);
/* An object for the JSON document. */
struct json_t *bench_machine_json(const struct bench_machine *m);

/* ---------------------------------------------------------------- report */

struct bench_result {
  char workload[32];
  char variant[48];
  char metric[32];    /* "throughput", "p50", "ratio", ... */
  double value;
  char unit[16];      /* "jobs/s", "ms", "x", "%" */
  int series;         /* one point of a series (bench_add_series) */
};

enum bench_status { BENCH_OK = 0, BENCH_FAILED, BENCH_SKIPPED, BENCH_INTERRUPTED };

/* One workload's outcome. */
struct bench_run {
  const char *name;
  int status;          /* enum bench_status */
  char why[512];       /* the error, or why it does not apply */
  int verified;        /* drain: every job done exactly once; -1: n/a */
  double seconds;      /* how long it ran */
};

#define BENCH_MAX_RUNS 16 /* every workload once (main.c checks) */

struct bench_report {
  struct bench_run runs[BENCH_MAX_RUNS];
  size_t nruns;
  struct bench_result *results;
  size_t nresults, alloc;
};

void bench_add(struct bench_report *r, const char *workload,
               const char *variant, const char *metric, double value,
               const char *unit);
/* One point of a series (a soak's every window): in the JSON document
 * and the CSV file, and a line of the drawing, not in the table. */
void bench_add_series(struct bench_report *r, const char *workload,
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
 * and returns BENCH_OK, or BENCH_FAILED after writing its error to
 * run->why.  It leaves its queues registered with bench_queue() for the
 * caller to purge.
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
int bench_keys(const struct bench_config *, jobq *, struct bench_report *,
               struct bench_run *);
int bench_after(const struct bench_config *, jobq *, struct bench_report *,
                struct bench_run *);
int bench_skew(const struct bench_config *, jobq *, struct bench_report *,
               struct bench_run *);
/* The kinds of a skew run's jobs: the hot key's, the other keys' of its
 * part, and those of the other parts. */
enum { BENCH_SKEW_HOT, BENCH_SKEW_NEAR, BENCH_SKEW_FAR };
struct bench_claimer;
/* In a claimer of a skew run (c->hot set): notes the n jobs it claimed
 * at bench_now() time now. */
void bench_skew_note(const struct bench_claimer *c, const jobq_job *jobs, size_t n, double now);
int bench_failures(const struct bench_config *, jobq *, struct bench_report *,
                    struct bench_run *);
int bench_ceiling(const struct bench_config *, jobq *, struct bench_report *,
                  struct bench_run *);
/* The bare bulk INSERT of insert.c (PostgreSQL and MariaDB/MySQL): adds
 * "ceiling", "bare insert", its rows a second; nothing on SQLite. */
int bench_insert_ceiling(const struct bench_config *, jobq *, struct bench_report *,
                         struct bench_run *);
/* The protocols of ceiling.c: a claim and its delete in one
 * transaction; fenced, in two; archived, fenced with each row moved to an
 * archive table by its delete. */
enum bench_ceiling_mode { BENCH_BARE, BENCH_FENCED, BENCH_ARCHIVED };
/* The bare-SQL ceiling of ceiling.c with procs claimers taking batch
 * rows at a time from rows rows (PostgreSQL and MariaDB/MySQL) by protocol
 * mode (enum bench_ceiling_mode): *rate gets rows per second.  Its own
 * tables, dropped at the end. */
int bench_ceiling_rate(const struct bench_config *cfg, jobq *db, int procs, size_t batch,
                       int mode, int64_t rows, const char *label, double *rate,
                       struct bench_run *run);
/* The latency floor of ceiling.c (PostgreSQL and SQLite): a stamped
 * row put in one durable commit, BENCH_LATENCY_RATE a second, as the
 * latency workload puts its jobs, and claimed by a listener woken by the
 * put (NOTIFY, or its write to SQLite's log) in one durable commit, with
 * nothing of jobq in between.
 * Adds "ceiling", "latency floor", p50/p99/max in ms. */
int bench_latency_floor(const struct bench_config *cfg, jobq *db,
                        struct bench_report *rep, struct bench_run *run);
int bench_foreman_use(const struct bench_config *, jobq *, struct bench_report *,
                      struct bench_run *);
int bench_soak(const struct bench_config *, jobq *, struct bench_report *,
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

/* --limit: the limit bench_fill() sets on its queue before it fills it,
 * so that drain and scale measure what a limit costs the claim.  Each is
 * high enough never to hold a job back: running, a million at once; per
 * key, a million of one key at once, every job with a key of its own;
 * rate, a billion a second; rate per key, a billion of one key a second,
 * every job with a key of its own. */
enum bench_limit {
  BENCH_LIMIT_NONE,
  BENCH_LIMIT_RUNNING,
  BENCH_LIMIT_PER_KEY,
  BENCH_LIMIT_RATE,
  BENCH_LIMIT_RATE_PER_KEY
};
extern int bench_limit;
/* --parts: scale's queue in this many parts per claimer (0: one part);
 * its claimers join the queue before they start, and beat once after. */
extern int bench_parts;

/* Puts n jobs on queue with payload, in transactions of 1000, with a
 * progress bar labelled label (none when NULL); JOBQ_OK or the error
 * (message on db).  The queue gets the --limit first. */
int bench_fill(jobq *db, const char *queue, int64_t n, const char *payload,
               const char *label);
/* The same, every job with the ordering key key (NULL: none), or with
 * each: a key of its own, key followed by the job's number. */
int bench_fill_key(jobq *db, const char *queue, const char *key, int each, int64_t n,
                   const char *payload, const char *label);
/* n jobs with payload "x" on their one and only attempt (max_attempts
 * 1): a failure makes them dead.  key (NULL: none): each job a key of its
 * own, key followed by the job's number. */
int bench_fill_last(jobq *db, const char *queue, const char *key, int64_t n,
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
  atomic_llong empty_ready;  /* empty claims before a claim that found jobs */
  atomic_llong failed;       /* children that hit an error */
  atomic_llong ready;        /* children connected, waiting to start */
  atomic_llong put;          /* jobs put by a producer child */
  /* skew: when the first claim began, and when the last of each kind of
   * job was claimed (BENCH_SKEW_*), in microseconds of bench_now(). */
  atomic_llong first_us, last_us[3];
  int go[2];                 /* a pipe: its write end closes when all are ready */
};
struct bench_shared *bench_shared_new(void);
void bench_shared_free(struct bench_shared *s);
/* In a bench_fork() child: waits up to seconds for the start (all children
 * ready).  1 once they may start, 0 on timeout, -1 when bench_stop is set.
 * The children sleep in poll(): the ones connected first do not take the
 * processor from the ones still connecting. */
int bench_await_go(const struct bench_shared *s, double seconds);

/* Claim times by window of time (a minute, say), in shared memory:
 * window w's count of claims that took about bench_bin_ms(b) is
 * count[w * BENCH_BINS + b].  Bins grow by 5 %, from 1 us; the last
 * window takes any later claim. */
#define BENCH_BINS 400
#define BENCH_BIN_GROWTH 1.05
struct bench_hist {
  size_t windows;
  double window;              /* seconds */
  double t0;                  /* bench_now() when window 0 began */
  atomic_llong count[];
};
struct bench_hist *bench_hist_new(size_t windows, double window);
void bench_hist_free(struct bench_hist *h);
size_t bench_bin(double seconds);
/* The upper bound of a bin, in ms. */
double bench_bin_ms(size_t bin);
/* Percentile p (0..100) of window w's claims in ms, 0 with none; *n gets
 * how many there were. */
double bench_hist_percentile(const struct bench_hist *h, size_t w, double p,
                             long long *n);

/* How a claimer child works: claim batch jobs of queue, completing the
 * last batch in the same transaction (jobq_ack_claim); total is what was
 * put.  With until (bench_now() seconds) it keeps going until then,
 * pausing 1 ms after an empty claim, and adds the time of every claim
 * that got jobs to hist (when not NULL). */
struct bench_claimer {
  const char *url, *queue;
  size_t batch;
  int64_t total;
  int count_empty;           /* scale: keep claiming while jobs are left */
  struct bench_shared *shared;
  double until;
  struct bench_hist *hist;
  /* skew: the hot key (NULL: none) and its part of parts, whose jobs'
   * claims bench_skew_note() times by kind. */
  const char *hot;
  int hot_part, parts;
};
/* A claimer as a bench_fork() child: arg is a struct bench_claimer. */
int bench_claimer_child(const void *arg, int index);
/* Forks n claimers and waits for them, drawing progress from the shared
 * counter.  The children connect and open their sessions first; *seconds
 * gets the time from when all of them were ready to when the last one
 * ended.  0 when every child succeeded, -1 otherwise. */
int bench_claimers(const struct bench_claimer *c, int n, const char *label,
                   double *seconds);

/* What a forked child runs (index: 0 to n - 1); its exit status.  It adds
 * 1 to shared->ready once connected and waits for shared->go. */
typedef int (*bench_child_fn)(const void *arg, int index);
/* Forks one child running fn(arg, index), with SIGINT and SIGTERM setting
 * its bench_stop; its pid, or -1 after a message (bench_stop is set). */
pid_t bench_spawn(bench_child_fn fn, const void *arg, int index,
                  struct bench_shared *shared);
/* Forks n children running fn(arg, index), starts them all at once
 * (shared->go) when all are ready, shows progress from shared->claimed
 * out of total under label, calls tick(ctx) (when not NULL) every 5 ms
 * while they run, and waits for them all; SIGINT or SIGTERM (bench_stop)
 * is passed on.  *seconds: from the start to the last exit.  0 when every
 * child exited 0, -1 otherwise. */
int bench_fork(int n, bench_child_fn fn, const void *arg, struct bench_shared *shared,
               const char *label, int64_t total, void (*tick)(void *), void *ctx,
               double *seconds);

/* Starts `jobq [--db URL] work ARGS...` (argv NULL-terminated), stdout to
 * /dev/null, stderr to the run's log file; returns its pid once the child
 * has exec'd (or failed to, exiting 127), or -1. */
pid_t bench_foreman(const struct bench_config *cfg, const char *const *args);
/* Waits for pid (sending SIGTERM once when bench_stop is set or after
 * timeout_s, if > 0); returns its exit status, 128 + a signal, or -1. */
int bench_wait(pid_t pid, double timeout_s);
/* Appends the tail of the foreman log to buf (for error messages). */
void bench_log_tail(const struct bench_config *cfg, char *buf, size_t size);
/* The claims the last foreman made and how many found nothing, from its
 * last words in its log; 0, or -1 when it did not say. */
int bench_log_claims(const struct bench_config *cfg, long long *claims, long long *empty);

/* A foreman's memory in KiB, 0 where /proc did not tell: its peak
 * resident set (VmHWM: with the pages of shared libraries and of files it
 * maps, which other processes share), and the most private memory
 * (RssAnon) seen in samples 10 ms apart. */
struct bench_memory {
  long peak_kib, anon_kib;
};

/* Drains n no-op jobs of a new queue (bench_queue(cfg, name)) with
 * `jobq work --until-empty -q QUEUE ARGS...` (args NULL-terminated) and
 * checks that every one ended done exactly once.  *seconds gets the time
 * from the foreman's start to its exit, *mem its memory.  BENCH_OK or
 * BENCH_FAILED (variant names it in run->why). */
int bench_drain_foreman(const struct bench_config *cfg, jobq *db,
                        struct bench_run *run, const char *name,
                        const char *variant, int64_t n,
                        const char *const *args, double *seconds,
                        struct bench_memory *mem);

/* Sleeps s seconds, or less when bench_stop is set. */
void bench_sleep(double s);

/* The latency workloads put their jobs at this rate, one at a time,
 * unless --rate says otherwise (bench_latency_rate). */
#define BENCH_LATENCY_RATE 50.0
double bench_latency_rate(const struct bench_config *cfg);
/* How many jobs they put (--seconds, or a tenth of --jobs, 20 to 500). */
int64_t bench_latency_jobs(const struct bench_config *cfg);
/* Sleeps until the time of put i of a series begun at t0 (bench_now()),
 * rate puts a second. */
void bench_pace(double t0, int64_t i, double rate);

/* Sorts v in place; the percentile p (0..100) of n sorted values (0 with
 * none). */
void bench_sort(double *v, size_t n);
double bench_percentile(const double *v, size_t n, double p);

/* The queue's stats entry: 1 found, 0 none, < 0 error. */
int bench_queue_stats(jobq *db, const char *queue, jobq_queue_stats *out);

#endif
