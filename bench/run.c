/*
 * run.c - the machinery the workloads of `jobq bench` share: clocks,
 * the run's own queues and their purge at the end (even after a failure
 * or an interrupt), filling a queue in large transactions, forked child
 * processes that count in shared memory (the claimers among them, with
 * latency histograms by the minute), and `jobq work` children with their
 * log.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "output.h"
#include "util.h"

volatile sig_atomic_t bench_stop;

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t bench_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !bench_stop) {
  }
}

void bench_pace(double t0, int64_t i, double rate) {
  double at = t0 + (double)i / rate;
  double now = bench_now();
  if (at > now) bench_sleep(at - now);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void bench_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double bench_percentile(const double *v, size_t n, double p) {
  if (n == 0) return 0;
  size_t i = (size_t)(p / 100 * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* ---------------------------------------------------------------- failures */

int bench_fail(struct bench_run *run, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(run->why, sizeof run->why, fmt, ap);
  va_end(ap);
  run->status = BENCH_FAILED;
  return BENCH_FAILED;
}

int bench_lib_fail(struct bench_run *run, jobq *db, int rc, const char *what) {
  const char *msg = jobq_errmsg(db);
  return bench_fail(run, "%s: %s", what, msg[0] != '\0' ? msg : jobq_strerror(rc));
}

/* ---------------------------------------------------------------- queues */

#define MAX_QUEUES 32
static char queues[MAX_QUEUES][BENCH_QUEUE_BUF];
static size_t nqueues;

const char *bench_queue(const struct bench_config *cfg, const char *name,
                        char *buf) {
  snprintf(buf, BENCH_QUEUE_BUF, "bench.%ld.%s", cfg->pid, name);
  for (size_t i = 0; i < nqueues; i++)
    if (strcmp(queues[i], buf) == 0) return buf;
  if (nqueues < MAX_QUEUES) snprintf(queues[nqueues++], BENCH_QUEUE_BUF, "%s", buf);
  return buf;
}

int bench_cleanup(jobq *db) {
  int status = 0;
  for (size_t i = 0; i < nqueues; i++) {
    /* A child that died holding jobs leaves them running until its
     * session's lease runs out and it is reaped: wait for that. */
    double until = bench_now() + BENCH_LEASE_MS / 1000.0 + 5;
    int rc;
    while ((rc = jobq_purge(db, queues[i], NULL)) == JOBQ_EBUSY && bench_now() < until) {
      int64_t n;
      jobq_reap(db, &n);
      struct timespec ts = {0, 200 * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (rc != JOBQ_OK) {
      cli_lib_error(db, rc);
      cli_error("could not remove the jobs of queue '%s'", queues[i]);
      status = -1;
    }
    /* Nor do the parts of scale and skew, or a limit of --limit. */
    if ((rc = jobq_set_parts(db, queues[i], 1)) != JOBQ_OK) {
      cli_lib_error(db, rc);
      cli_error("could not put queue '%s' back in one part", queues[i]);
      status = -1;
    }
    if (bench_limit != BENCH_LIMIT_NONE &&
        (rc = jobq_set_limits(db, queues[i], &(jobq_limits){0})) != JOBQ_OK) {
      cli_lib_error(db, rc);
      cli_error("could not remove the limit of queue '%s'", queues[i]);
      status = -1;
    }
  }
  nqueues = 0;
  return status;
}

int bench_queue_stats(jobq *db, const char *queue, jobq_queue_stats *out) {
  jobq_queue_stats *st;
  size_t n;
  int rc = jobq_stats(db, &st, &n);
  if (rc != JOBQ_OK) return rc;
  int found = 0;
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n && !found; i++) {
    if (strcmp(st[i].name, queue) != 0) continue;
    *out = st[i];
    out->name = NULL;
    out->key_policy = NULL;
    found = 1;
  }
  jobq_stats_free(st, n);
  return found;
}

/* ---------------------------------------------------------------- filling */

/* bench_fill_key() with max_attempts (0: the default) for every job. */
static int fill(jobq *db, const char *queue, const char *key, int each, int max_attempts,
                int64_t n, const char *payload, const char *label) {
  enum { CHUNK = 1000 };
  static jobq_put_opts opts[CHUNK];
  static int64_t ids[CHUNK];
  static char keys[CHUNK][48];
  for (size_t i = 0; i < CHUNK; i++) {
    jobq_put_opts_init(&opts[i]);
    opts[i].queue = queue;
    opts[i].key = key != NULL && each ? keys[i] : key;
    opts[i].payload = payload;
    opts[i].payload_len = strlen(payload);
    if (max_attempts > 0) opts[i].max_attempts = max_attempts;
  }
  struct cli_progress bar;
  cli_progress_start(&bar, label, "jobs", n);
  int rc = JOBQ_OK;
  for (int64_t done = 0; done < n && rc == JOBQ_OK && !bench_stop;) {
    size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
    for (size_t i = 0; key != NULL && each && i < k; i++)
      snprintf(keys[i], sizeof keys[i], "%s%lld", key, (long long)(done + (int64_t)i));
    rc = jobq_put_many(db, opts, k, ids, NULL);
    done += (int64_t)k;
    cli_progress_update(&bar, done, done);
  }
  cli_progress_end(&bar);
  return rc;
}

int bench_limit = BENCH_LIMIT_NONE;
int bench_parts = 0;

int bench_fill(jobq *db, const char *queue, int64_t n, const char *payload,
               const char *label) {
  jobq_limits l = {0};
  if (bench_limit == BENCH_LIMIT_RUNNING) l.running = 1000000;
  if (bench_limit == BENCH_LIMIT_PER_KEY) l.running_per_key = 1000000;
  if (bench_limit == BENCH_LIMIT_RATE) l.rate = 1000000000, l.rate_period_ms = 1000;
  if (bench_limit == BENCH_LIMIT_RATE_PER_KEY)
    l.rate_per_key = 1000000000, l.rate_per_key_period_ms = 1000;
  if (bench_limit != BENCH_LIMIT_NONE) {
    int rc = jobq_set_limits(db, queue, &l);
    if (rc != JOBQ_OK) return rc;
  }
  int keyed = bench_limit == BENCH_LIMIT_PER_KEY ||
              bench_limit == BENCH_LIMIT_RATE_PER_KEY;
  return fill(db, queue, keyed ? "k" : NULL, keyed, 0, n, payload, label);
}

int bench_fill_key(jobq *db, const char *queue, const char *key, int each, int64_t n,
                   const char *payload, const char *label) {
  return fill(db, queue, key, each, 0, n, payload, label);
}

int bench_fill_last(jobq *db, const char *queue, const char *key, int64_t n,
                    const char *label) {
  return fill(db, queue, key, key != NULL, 1, n, "x", label);
}

/* ---------------------------------------------------------------- claimers */

struct bench_shared *bench_shared_new(void) {
  void *p = mmap(NULL, sizeof(struct bench_shared), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) cli_oom();
  struct bench_shared *s = p;
  atomic_init(&s->claimed, 0);
  atomic_init(&s->claims, 0);
  atomic_init(&s->empty_ready, 0);
  atomic_init(&s->failed, 0);
  atomic_init(&s->ready, 0);
  atomic_init(&s->put, 0);
  atomic_init(&s->first_us, 0);
  for (int i = 0; i < 3; i++) atomic_init(&s->last_us[i], 0);
  if (pipe2(s->go, O_CLOEXEC) != 0) {
    cli_error("cannot make a pipe: %s", cli_strerror(errno));
    exit(CLI_EXIT_ERROR);
  }
  return s;
}

void bench_shared_free(struct bench_shared *s) {
  if (s == NULL) return;
  for (int i = 0; i < 2; i++)
    if (s->go[i] >= 0) close(s->go[i]);
  munmap(s, sizeof *s);
}

int bench_await_go(const struct bench_shared *s, double seconds) {
  struct pollfd p = {s->go[0], POLLIN, 0};
  double until = bench_now() + seconds;
  while (!bench_stop) {
    double left = until - bench_now();
    if (left <= 0) return 0;
    int n = poll(&p, 1, left > 60 ? 60000 : (int)(left * 1000) + 1);
    if (n > 0) return 1;  /* the write end closed: end of file */
    if (n < 0 && errno != EINTR) return 1;
  }
  return -1;
}

/* Adds one claim's time to the histogram of the window it began in. */
static void record(const struct bench_claimer *c, double began, double took) {
  if (c->hist == NULL) return;
  double at = (began - c->hist->t0) / c->hist->window;
  size_t w = at < 0 ? 0 : (size_t)at;
  if (w >= c->hist->windows) w = c->hist->windows - 1;
  atomic_fetch_add(&c->hist->count[w * BENCH_BINS + bench_bin(took)], 1);
}

/* One claimer process: its own handle and session.  Returns its exit
 * status (0: all claimed jobs completed). */
int bench_claimer_child(const void *arg, int index) {
  const struct bench_claimer *c = arg;
  (void)index;
  jobq *db;
  int rc = jobq_open(c->url, &db);
  jobq_session *s = NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = "bench";
  so.lease_ms = BENCH_LEASE_MS;
  if (rc == JOBQ_OK) rc = jobq_session_open(db, &so, &s);
  const char *const qs[] = {c->queue};
  if (rc == JOBQ_OK && bench_parts > 0) rc = jobq_parts_join(s, qs, 1);
  atomic_fetch_add(&c->shared->ready, 1);
  /* Waiting for the others to connect: the session stays alive. */
  while (rc == JOBQ_OK && bench_await_go(c->shared, BENCH_LEASE_MS / 3000.0) == 0)
    rc = jobq_heartbeat(s, NULL, NULL);
  /* All have joined: a beat gives each its share of the parts. */
  if (rc == JOBQ_OK && bench_parts > 0) rc = jobq_heartbeat(s, NULL, NULL);
  double beat = bench_now();
  jobq_ack *acks = cli_xmalloc(c->batch * sizeof *acks);
  /* A worker's rhythm: the last batch's completions go with the next
   * claim, one transaction for both. */
  size_t pending = 0;
  long long empties = 0;  /* empty claims since the last jobs */
  long long seen = 0;     /* the claimers' jobs at the last wait */
  double pause = 0.001;   /* the next wait, in seconds */
  /* With no progress at all for this long, something is wrong. */
  double stuck = bench_now() + 60;
  while (rc == JOBQ_OK && !bench_stop) {
    if (c->until > 0 && bench_now() >= c->until) break;
    if (bench_now() - beat > BENCH_LEASE_MS / 3000.0) {
      if ((rc = jobq_heartbeat(s, NULL, NULL)) != JOBQ_OK) break;
      beat = bench_now();
    }
    jobq_job *jobs;
    size_t n;
    double began = bench_now();
    rc = jobq_ack_claim(s, acks, pending, qs, 1, c->batch, &jobs, &n);
    /* Busy is temporary (SQLite's one writer among many): go again, as a
     * worker would, while there is progress. */
    if (rc == JOBQ_EBUSY && bench_now() < stuck) {
      rc = JOBQ_OK;
      continue;
    }
    for (size_t i = 0; i < pending && rc == JOBQ_OK; i++)
      if (acks[i].status != JOBQ_OK) rc = acks[i].status;
    if (rc != JOBQ_OK) break;
    pending = 0;
    atomic_fetch_add(&c->shared->claims, 1);
    if (n == 0) {
      jobq_jobs_free(jobs, n);
      if (c->until > 0) {
        /* A steady load: the queue is empty until the producer's next
         * batch. */
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
        stuck = bench_now() + 60;
        continue;
      }
      if (!c->count_empty || atomic_load(&c->shared->claimed) >= c->total) break;
      /* Nothing in the claimer's own parts while others' hold jobs, or
       * (skew) nothing it may take while others run the hot key: it
       * waits, as a foreman does, 1 ms and longer each time up to 50
       * ms, looking without a claim's write lock
       * (jobq_session_next_due), and counts no empty claim; stuck only
       * when no claimer makes progress. */
      int64_t due = 0;
      if (c->hot != NULL ||
          (bench_parts > 0 && jobq_session_next_due(s, qs, 1, &due) == JOBQ_OK && due != 0)) {
        long long all = atomic_load(&c->shared->claimed);
        if (all != seen) stuck = bench_now() + 60;
        seen = all;
        if (bench_now() > stuck) {
          rc = JOBQ_EBUSY;
          break;
        }
        bench_sleep(pause);
        pause = pause * 2 < 0.05 ? pause * 2 : 0.05;
        continue;
      }
      /* Counted once a later claim finds jobs: they were there to take.
       * At the end, the last jobs are held by other claimers' claims
       * still in flight, and an empty claim then is not one. */
      empties++;
      if (bench_now() > stuck) {
        rc = JOBQ_EBUSY;
        break;
      }
      continue;
    }
    record(c, began, bench_now() - began);
    if (c->hot != NULL) bench_skew_note(c, jobs, n, began);
    atomic_fetch_add(&c->shared->claimed, (long long)n);
    if (empties > 0) atomic_fetch_add(&c->shared->empty_ready, empties);
    empties = 0;
    pause = 0.001;
    stuck = bench_now() + 60;
    for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    pending = n;
    jobq_jobs_free(jobs, n);
  }
  /* The last completions, on their own. */
  if (rc == JOBQ_OK && pending > 0) rc = jobq_ack_many(s, acks, pending);
  if (rc != JOBQ_OK && !bench_stop) cli_lib_error(db, rc);
  free(acks);
  jobq_session_close(s);
  jobq_close(db);
  return rc == JOBQ_OK ? 0 : 1;
}

static void child_signal(int sig) {
  (void)sig;
  bench_stop = 1;
}

pid_t bench_spawn(bench_child_fn fn, const void *arg, int index,
                  struct bench_shared *shared) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    cli_error("cannot start a child process: %s", cli_strerror(errno));
    bench_stop = 1;
    return -1;
  }
  if (pid == 0) {
    close(shared->go[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = child_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    _exit(fn(arg, index));
  }
  return pid;
}

int bench_fork(int n, bench_child_fn fn, const void *arg, struct bench_shared *shared,
               const char *label, int64_t total, void (*tick)(void *), void *ctx,
               double *seconds) {
  pid_t *pids = cli_xmalloc((size_t)n * sizeof *pids);
  int started = 0, bad = 0;
  for (; started < n; started++) {
    pid_t pid = bench_spawn(fn, arg, started, shared);
    if (pid < 0) {
      bad = 1;
      break;
    }
    pids[started] = pid;
  }
  struct cli_progress bar;
  cli_progress_start(&bar, label, "jobs", total);
  int left = started, sent = 0;
  double t0 = 0;
  while (left > 0) {
    if (t0 == 0 && (atomic_load(&shared->ready) >= started || left < started)) {
      /* All connected (or one already gave up): the clock starts. */
      t0 = bench_now();
      close(shared->go[1]);
      shared->go[1] = -1;
    }
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int i = 0; i < started; i++) {
        if (pids[i] != pid) continue;
        pids[i] = 0;
        left--;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bad = 1;
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (bench_stop && !sent) {
      for (int i = 0; i < started; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
      sent = 1;
    }
    if (tick != NULL && t0 > 0) tick(ctx);
    long long done = atomic_load(&shared->claimed);
    cli_progress_update(&bar, done, done);
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  *seconds = bench_now() - (t0 > 0 ? t0 : bench_now());
  cli_progress_end(&bar);
  free(pids);
  if (bad) atomic_fetch_add(&shared->failed, 1);
  return bad || bench_stop ? -1 : 0;
}

int bench_claimers(const struct bench_claimer *c, int n, const char *label,
                   double *seconds) {
  return bench_fork(n, bench_claimer_child, c, c->shared, label, c->total, NULL, NULL, seconds);
}

/* ---------------------------------------------------------------- histograms */

size_t bench_bin(double seconds) {
  double us = seconds * 1e6;
  if (us <= 1) return 0;
  size_t b = (size_t)(log(us) / log(BENCH_BIN_GROWTH)) + 1;
  return b < BENCH_BINS ? b : BENCH_BINS - 1;
}

double bench_bin_ms(size_t bin) {
  return pow(BENCH_BIN_GROWTH, (double)bin) / 1e3;
}

struct bench_hist *bench_hist_new(size_t windows, double window) {
  size_t size = sizeof(struct bench_hist) + windows * BENCH_BINS * sizeof(atomic_llong);
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) cli_oom();
  struct bench_hist *h = p;
  h->windows = windows;
  h->window = window;
  h->t0 = bench_now();
  for (size_t i = 0; i < windows * BENCH_BINS; i++) atomic_init(&h->count[i], 0);
  return h;
}

void bench_hist_free(struct bench_hist *h) {
  if (h != NULL)
    munmap(h, sizeof(struct bench_hist) + h->windows * BENCH_BINS * sizeof(atomic_llong));
}

double bench_hist_percentile(const struct bench_hist *h, size_t w, double p,
                             long long *n) {
  const atomic_llong *c = &h->count[w * BENCH_BINS];
  long long total = 0;
  for (size_t b = 0; b < BENCH_BINS; b++) total += atomic_load(&c[b]);
  if (n != NULL) *n = total;
  if (total == 0) return 0;
  long long want = (long long)(p / 100 * (double)total + 0.5), seen = 0;
  if (want < 1) want = 1;
  for (size_t b = 0; b < BENCH_BINS; b++) {
    seen += atomic_load(&c[b]);
    if (seen >= want) return bench_bin_ms(b);
  }
  return bench_bin_ms(BENCH_BINS - 1);
}

/* ---------------------------------------------------------------- foremen */

static void log_path(const struct bench_config *cfg, char *buf, size_t size) {
  snprintf(buf, size, "%s/work.log", cfg->dir);
}

pid_t bench_foreman(const struct bench_config *cfg, const char *const *args) {
  const char *argv[64];
  size_t n = 0;
  argv[n++] = cfg->jobq;
  if (cfg->child_db != NULL) {
    argv[n++] = "--db";
    argv[n++] = cfg->child_db;
  }
  argv[n++] = "work";
  for (size_t i = 0; args[i] != NULL && n + 1 < sizeof argv / sizeof argv[0]; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  char log[PATH_MAX + 16];
  log_path(cfg, log, sizeof log);
  /* Closed by the exec: the caller never sees (or measures) the copy of
   * this process that runs until then. */
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    cli_error("cannot start 'jobq work': %s", cli_strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    cli_error("cannot start 'jobq work': %s", cli_strerror(errno));
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return -1;
  }
  if (pid == 0) {
    close(exec_pipe[0]);
    int null = open("/dev/null", O_RDWR);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
    }
    if (fd >= 0) dup2(fd, 2);
    execv(cfg->jobq, (char *const *)argv);
    _exit(127);
  }
  close(exec_pipe[1]);
  char byte;
  while (read(exec_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  return pid;
}

int bench_wait(pid_t pid, double timeout_s) {
  double until = timeout_s > 0 ? bench_now() + timeout_s : 0;
  int sent = 0;
  for (;;) {
    int status;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    }
    if (got < 0 && errno != EINTR) return -1;
    if (!sent && (bench_stop || (until > 0 && bench_now() > until))) {
      kill(pid, SIGTERM);
      sent = 1;
    }
    bench_sleep(0.01);
  }
}

int bench_log_claims(const struct bench_config *cfg, long long *claims, long long *empty) {
  char log[PATH_MAX + 16], line[1024];
  log_path(cfg, log, sizeof log);
  FILE *f = fopen(log, "r");
  if (f == NULL) return -1;
  int found = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    const char *at = strstr(line, " claims, ");
    if (at == NULL) continue;
    while (at > line && at[-1] >= '0' && at[-1] <= '9') at--;
    if (sscanf(at, "%lld claims, %lld empty", claims, empty) == 2) found = 0;
  }
  fclose(f);
  return found;
}

void bench_log_tail(const struct bench_config *cfg, char *buf, size_t size) {
  char log[PATH_MAX + 16];
  log_path(cfg, log, sizeof log);
  FILE *f = fopen(log, "r");
  if (f == NULL) return;
  char tail[256];
  long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
  fseek(f, end > (long)sizeof tail - 1 ? end - (long)sizeof tail + 1 : 0, SEEK_SET);
  size_t got = fread(tail, 1, sizeof tail - 1, f);
  fclose(f);
  tail[got] = '\0';
  while (got > 0 && (tail[got - 1] == '\n' || tail[got - 1] == '\r')) tail[--got] = '\0';
  const char *last = strrchr(tail, '\n');
  last = last ? last + 1 : tail;
  if (last[0] == '\0') return;
  char *esc = cli_escape(last, strlen(last));
  size_t o = strlen(buf);
  if (o < size) snprintf(buf + o, size - o, " (its log: %s)", esc);
  free(esc);
}
