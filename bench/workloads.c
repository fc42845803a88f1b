/*
 * workloads.c - the standard workloads of `jobq bench`, each on
 * queues of its own: enqueue (single and batched puts), drain (library
 * claimers, a persistent foreman, a fork-per-job foreman, each verified
 * exactly once), latency (put to start on an idle foreman), scale (claimer
 * processes from 1 to 64), backlog (the claim rate beside a large ready
 * backlog or a large archive), keys (the jobs of one ordering key, put
 * and worked in order), failures (batches failed, to run again later
 * or dead) and after (jobs put after others).  Also the hidden worker
 * modes that the
 * `jobq work` children run.  The bare-SQL ceiling is in ceiling.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "output.h"
#include "util.h"

#define DEFAULT_CONCURRENCY 4

static int64_t concurrency(const struct bench_config *cfg) {
  return cfg->concurrency > 0 ? cfg->concurrency : DEFAULT_CONCURRENCY;
}

static int interrupted(struct bench_run *run) {
  return bench_fail(run, "interrupted");
}

/* ---------------------------------------------------------------- enqueue */

int bench_enqueue(const struct bench_config *cfg, jobq *db,
                  struct bench_report *rep, struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "enqueue", q);
  /* One transaction per put costs a commit each: a tenth as many. */
  int64_t single = cfg->jobs / 10 < 100 ? 100 : cfg->jobs / 10;
  if (single > cfg->jobs) single = cfg->jobs;
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = q;
  o.payload = "x";
  o.payload_len = 1;
  struct cli_progress bar;
  cli_progress_start(&bar, "enqueue (single):", "jobs", single);
  double t0 = bench_now();
  for (int64_t i = 0; i < single && !bench_stop; i++) {
    int64_t id;
    int rc = jobq_put(db, &o, &id, NULL);
    if (rc != JOBQ_OK) {
      cli_progress_end(&bar);
      return bench_lib_fail(run, db, rc, "single put");
    }
    cli_progress_update(&bar, i + 1, i + 1);
  }
  double t1 = bench_now();
  cli_progress_end(&bar);
  if (bench_stop) return interrupted(run);
  bench_add(rep, "enqueue", "single", "throughput", (double)single / (t1 - t0), "jobs/s");

  size_t batch = cfg->batch > 0 ? (size_t)cfg->batch : 1000;
  jobq_put_opts *opts = cli_xmalloc(batch * sizeof *opts);
  int64_t *ids = cli_xmalloc(batch * sizeof *ids);
  for (size_t i = 0; i < batch; i++) opts[i] = o;
  cli_progress_start(&bar, "enqueue (batched):", "jobs", cfg->jobs);
  int rc = JOBQ_OK;
  t0 = bench_now();
  for (int64_t done = 0; done < cfg->jobs && rc == JOBQ_OK && !bench_stop;) {
    size_t k = cfg->jobs - done < (int64_t)batch ? (size_t)(cfg->jobs - done) : batch;
    rc = jobq_put_many(db, opts, k, ids, NULL);
    done += (int64_t)k;
    cli_progress_update(&bar, done, done);
  }
  t1 = bench_now();
  cli_progress_end(&bar);
  if (rc != JOBQ_OK || bench_stop) {
    free(opts);
    free(ids);
    return rc != JOBQ_OK ? bench_lib_fail(run, db, rc, "batched put") : interrupted(run);
  }
  char variant[48];
  snprintf(variant, sizeof variant, "batched (%zu)", batch);
  bench_add(rep, "enqueue", variant, "throughput", (double)cfg->jobs / (t1 - t0), "jobs/s");

  /* The same again, each job with a unique key of its own. */
  char (*keys)[24] = cli_xmalloc(batch * sizeof *keys);
  cli_progress_start(&bar, "enqueue (unique keys):", "jobs", cfg->jobs);
  t0 = bench_now();
  for (int64_t done = 0; done < cfg->jobs && rc == JOBQ_OK && !bench_stop;) {
    size_t k = cfg->jobs - done < (int64_t)batch ? (size_t)(cfg->jobs - done) : batch;
    for (size_t i = 0; i < k; i++) {
      snprintf(keys[i], sizeof keys[i], "u%lld", (long long)(done + (int64_t)i));
      opts[i].unique_key = keys[i];
    }
    rc = jobq_put_many(db, opts, k, ids, NULL);
    done += (int64_t)k;
    cli_progress_update(&bar, done, done);
  }
  t1 = bench_now();
  cli_progress_end(&bar);
  free(keys);
  free(opts);
  free(ids);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "batched put with unique keys");
  if (bench_stop) return interrupted(run);
  snprintf(variant, sizeof variant, "unique keys (%zu)", batch);
  bench_add(rep, "enqueue", variant, "throughput", (double)cfg->jobs / (t1 - t0), "jobs/s");
  return BENCH_OK;
}

/* ---------------------------------------------------------------- drain */

/* Every job of queue ended done exactly once: n archived as done, none
 * left unfinished, none dead or cancelled. */
static int verify(jobq *db, const char *queue, int64_t n, const char *variant,
                  struct bench_run *run) {
  jobq_queue_stats st;
  int got = bench_queue_stats(db, queue, &st);
  if (got < 0) return bench_lib_fail(run, db, got, "reading the stats");
  if (got == 0) return bench_fail(run, "%s: queue '%s' is missing", variant, queue);
  int64_t left = st.ready + st.scheduled + st.waiting + st.pending + st.running;
  if (st.done != n || left != 0 || st.dead != 0 || st.cancelled != 0)
    return bench_fail(run,
                      "%s: not every job ended done exactly once: %lld of %lld done, "
                      "%lld unfinished, %lld dead, %lld cancelled",
                      variant, (long long)st.done, (long long)n, (long long)left,
                      (long long)st.dead, (long long)st.cancelled);
  return BENCH_OK;
}

/* Drains the n jobs of queue q with the library's claimer processes
 * (label: their progress bar) and checks that each ended done once;
 * *rate gets jobs per second. */
static int drain_claimers(const struct bench_config *cfg, jobq *db, const char *q, int64_t n,
                          const char *label, const char *variant, double *rate,
                          struct bench_run *run) {
  struct bench_claimer c = {.url = cfg->url, .queue = q,
                            .batch = cfg->batch > 0 ? (size_t)cfg->batch : 100, .total = n,
                            .shared = bench_shared_new()};
  double secs;
  int bad = bench_claimers(&c, (int)concurrency(cfg), label, &secs);
  bench_shared_free(c.shared);
  if (bench_stop) return interrupted(run);
  if (bad) return bench_fail(run, "%s: a claimer process failed", variant);
  if (verify(db, q, n, variant, run) != BENCH_OK) return BENCH_FAILED;
  *rate = (double)n / secs;
  return BENCH_OK;
}

static int drain_library(const struct bench_config *cfg, jobq *db,
                         struct bench_report *rep, struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "drain-library", q);
  int rc = bench_fill(db, q, cfg->jobs, "x", "drain (filling):");
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "filling the queue");
  if (bench_stop) return interrupted(run);
  double rate;
  int status = drain_claimers(cfg, db, q, cfg->jobs, "drain (library):", "library", &rate, run);
  if (status == BENCH_OK) bench_add(rep, "drain", "library", "throughput", rate, "jobs/s");
  return status;
}

/* Raises m->peak_kib to pid's peak resident memory so far (VmHWM) and
 * m->anon_kib to its private memory now (RssAnon), when /proc tells. */
static void sample_memory(pid_t pid, struct bench_memory *m) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  long kib;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1 && kib > m->peak_kib) m->peak_kib = kib;
    if (sscanf(line, "RssAnon: %ld kB", &kib) == 1 && kib > m->anon_kib) m->anon_kib = kib;
  }
  fclose(f);
}

int bench_drain_foreman(const struct bench_config *cfg, jobq *db,
                        struct bench_run *run, const char *name,
                        const char *variant, int64_t n,
                        const char *const *args, double *seconds,
                        struct bench_memory *mem) {
  char q[BENCH_QUEUE_BUF], label[64];
  bench_queue(cfg, name, q);
  snprintf(label, sizeof label, "%s (filling):", run->name);
  int rc = bench_fill(db, q, n, "x", label);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "filling the queue");
  if (bench_stop) return interrupted(run);
  const char *argv[32];
  size_t k = 0;
  argv[k++] = "--until-empty";
  argv[k++] = "-q";
  argv[k++] = q;
  for (size_t i = 0; args[i] != NULL && k + 1 < sizeof argv / sizeof argv[0]; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  snprintf(label, sizeof label, "%s (%s):", run->name, variant);
  double t0 = bench_now();
  pid_t pid = bench_foreman(cfg, argv);
  if (pid < 0) return bench_fail(run, "%s: cannot start 'jobq work'", variant);
  /* Progress from the queue's stats, and the foreman's memory, while it
   * works. */
  struct cli_progress bar;
  cli_progress_start(&bar, label, "jobs", n);
  int status = -1;
  memset(mem, 0, sizeof *mem);
  for (;;) {
    sample_memory(pid, mem);
    int st;
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) {
      status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (bench_stop) {
      status = bench_wait(pid, 0);
      break;
    }
    if (bar.on) {
      jobq_queue_stats s;
      if (bench_queue_stats(db, q, &s) == 1) cli_progress_update(&bar, s.done, s.done);
    }
    bench_sleep(0.01);
  }
  *seconds = bench_now() - t0;
  cli_progress_end(&bar);
  if (bench_stop) return interrupted(run);
  if (status != 0) {
    bench_fail(run, "%s: 'jobq work' ended with exit status %d", variant, status);
    bench_log_tail(cfg, run->why, sizeof run->why);
    return BENCH_FAILED;
  }
  return verify(db, q, n, variant, run);
}

int bench_drain(const struct bench_config *cfg, jobq *db,
                struct bench_report *rep, struct bench_run *run) {
  run->verified = 0;
  if (drain_library(cfg, db, rep, run) != BENCH_OK) return BENCH_FAILED;
  char c[24];
  snprintf(c, sizeof c, "%lld", (long long)concurrency(cfg));
  const char *persistent[] = {"--persistent", "-c", c, "--", cfg->self,
                              "--internal-worker", NULL};
  double secs;
  struct bench_memory mem;
  if (bench_drain_foreman(cfg, db, run, "drain-persistent", "persistent", cfg->jobs,
                          persistent, &secs, &mem) != BENCH_OK)
    return BENCH_FAILED;
  bench_add(rep, "drain", "persistent", "throughput", (double)cfg->jobs / secs, "jobs/s");
  /* The same with 1, 2 and 3 database connections (--connections). */
  for (int conns = 1; conns <= 3; conns++) {
    char n[12], name[32], variant[32];
    snprintf(n, sizeof n, "%d", conns);
    snprintf(name, sizeof name, "drain-conns%d", conns);
    snprintf(variant, sizeof variant, "persistent c%d", conns);
    const char *args[] = {"--connections", n, "--persistent", "-c", c, "--", cfg->self,
                          "--internal-worker", NULL};
    if (bench_drain_foreman(cfg, db, run, name, variant, cfg->jobs, args, &secs, &mem) !=
        BENCH_OK)
      return BENCH_FAILED;
    bench_add(rep, "drain", variant, "throughput", (double)cfg->jobs / secs, "jobs/s");
  }
  int64_t few = cfg->jobs / 20 < 200 ? 200 : cfg->jobs / 20;
  const char *fork_args[] = {"-c", c, "--", "/bin/true", NULL};
  if (bench_drain_foreman(cfg, db, run, "drain-fork", "fork", few, fork_args, &secs,
                          &mem) != BENCH_OK)
    return BENCH_FAILED;
  bench_add(rep, "drain", "fork", "throughput", (double)few / secs, "jobs/s");
  run->verified = 1;
  return BENCH_OK;
}

/* ---------------------------------------------------------------- latency */

/* Waits until queue has want jobs done (or the time is up). */
static int wait_done(jobq *db, const char *queue, int64_t want, double timeout,
                     struct bench_run *run, const char *variant) {
  double until = bench_now() + timeout;
  while (!bench_stop) {
    jobq_queue_stats st;
    int got = bench_queue_stats(db, queue, &st);
    if (got < 0) return bench_lib_fail(run, db, got, "reading the stats");
    if (got == 1 && st.done + st.dead >= want) {
      if (st.dead > 0)
        return bench_fail(run, "%s: %lld jobs failed", variant, (long long)st.dead);
      return BENCH_OK;
    }
    if (bench_now() > until)
      return bench_fail(run, "%s: only %lld of %lld jobs were done after %.0f s",
                        variant, (long long)(got == 1 ? st.done : 0),
                        (long long)want, timeout);
    bench_sleep(0.02);
  }
  return interrupted(run);
}

static int parse_ns(const void *p, size_t len, int64_t *out) {
  char text[32];
  if (p == NULL || len == 0 || len >= sizeof text) return -1;
  memcpy(text, p, len);
  text[len] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v <= 0) return -1;
  *out = v;
  return 0;
}

/* Reads every done job of queue: put time (payload) to start (result). */
static int collect(jobq *db, const char *queue, double **out, size_t *nout,
                   struct bench_run *run) {
  size_t n = 0, alloc = 0;
  double *v = NULL;
  jobq_list_opts lo = {queue, JOBQ_STATE_DONE, 0, 500, 0, NULL};
  for (;;) {
    jobq_job_info *list;
    size_t k;
    int rc = jobq_list(db, &lo, &list, &k);
    if (rc != JOBQ_OK) {
      free(v);
      return bench_lib_fail(run, db, rc, "listing the jobs");
    }
    for (size_t i = 0; i < k; i++) {
      lo.after_id = list[i].id;
      jobq_job_info *j;
      if ((rc = jobq_show(db, list[i].id, &j)) != JOBQ_OK) {
        jobq_info_free(list, k);
        free(v);
        return bench_lib_fail(run, db, rc, "reading a job");
      }
      int64_t put, start;
      if (parse_ns(j->payload, j->payload_len, &put) == 0 &&
          parse_ns(j->result, j->result_len, &start) == 0) {
        if (n == alloc) {
          alloc = alloc ? 2 * alloc : 256;
          v = cli_xrealloc(v, alloc * sizeof *v);
        }
        v[n++] = (double)(start - put) / 1e6;
      }
      jobq_info_free(j, 1);
    }
    jobq_info_free(list, k);
    if (k < lo.limit) break;
  }
  *out = v;
  *nout = n;
  return BENCH_OK;
}

/* Puts n stamped jobs at rate per second to an idle foreman started with
 * args, then reports the percentiles of put to start. */
static int latency_run(const struct bench_config *cfg, jobq *db,
                       struct bench_report *rep, struct bench_run *run,
                       const char *variant, int64_t n, const char *const *args) {
  char q[BENCH_QUEUE_BUF], name[32], label[64];
  snprintf(name, sizeof name, "latency-%s", variant);
  bench_queue(cfg, name, q);
  const char *argv[32];
  size_t k = 0;
  argv[k++] = "-q";
  argv[k++] = q;
  for (size_t i = 0; args[i] != NULL; i++) argv[k++] = args[i];
  argv[k] = NULL;
  pid_t pid = bench_foreman(cfg, argv);
  if (pid < 0) return bench_fail(run, "%s: cannot start 'jobq work'", variant);
  jobq_put_opts o;
  jobq_put_opts_init(&o);
  o.queue = q;
  /* A first job that is not measured: the foreman and its worker are up
   * and idle once it is done. */
  o.payload = "warm-up";
  o.payload_len = 7;
  int64_t id;
  int rc = jobq_put(db, &o, &id, NULL);
  int status = rc != JOBQ_OK ? bench_lib_fail(run, db, rc, "put")
                             : wait_done(db, q, 1, 30, run, variant);
  if (status == BENCH_OK) bench_sleep(0.2);
  snprintf(label, sizeof label, "latency (%s):", variant);
  struct cli_progress bar;
  cli_progress_start(&bar, label, "jobs", n);
  double t0 = bench_now();
  for (int64_t i = 0; i < n && status == BENCH_OK && !bench_stop; i++) {
    bench_pace(t0, i, bench_latency_rate(cfg));
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)bench_wall_ns());
    o.payload = text;
    o.payload_len = strlen(text);
    if ((rc = jobq_put(db, &o, &id, NULL)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "put");
    cli_progress_update(&bar, i + 1, i + 1);
  }
  cli_progress_end(&bar);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) status = wait_done(db, q, n + 1, 30, run, variant);
  kill(pid, SIGTERM);
  int st = bench_wait(pid, 0);
  if (status != BENCH_OK) return status;
  if (st != 0) {
    bench_fail(run, "%s: 'jobq work' ended with exit status %d", variant, st);
    bench_log_tail(cfg, run->why, sizeof run->why);
    return BENCH_FAILED;
  }
  /* How often the idle foreman claimed in vain between the puts. */
  long long claims, empty;
  if (bench_log_claims(cfg, &claims, &empty) == 0 && claims > 0)
    bench_add(rep, "latency", variant, "empty claims", 100.0 * (double)empty / (double)claims,
              "%");
  double *v = NULL;
  size_t nv = 0;
  if (collect(db, q, &v, &nv, run) != BENCH_OK) return BENCH_FAILED;
  if (nv != (size_t)n) {
    free(v);
    return bench_fail(run, "%s: %zu of %lld jobs have a start time", variant, nv,
                      (long long)n);
  }
  bench_sort(v, nv);
  bench_add(rep, "latency", variant, "p50", bench_percentile(v, nv, 50), "ms");
  bench_add(rep, "latency", variant, "p99", bench_percentile(v, nv, 99), "ms");
  bench_add(rep, "latency", variant, "max", v[nv - 1], "ms");
  free(v);
  return BENCH_OK;
}

double bench_latency_rate(const struct bench_config *cfg) {
  return cfg->rate > 0 ? (double)cfg->rate : BENCH_LATENCY_RATE;
}

int64_t bench_latency_jobs(const struct bench_config *cfg) {
  return cfg->seconds > 0 ? (int64_t)(bench_latency_rate(cfg) * (double)cfg->seconds)
         : cfg->jobs / 10 > 500 ? 500
         : cfg->jobs / 10 < 20  ? 20
                                : cfg->jobs / 10;
}

int bench_latency(const struct bench_config *cfg, jobq *db,
                  struct bench_report *rep, struct bench_run *run) {
  int64_t n = bench_latency_jobs(cfg);
  const char *persistent[] = {"--persistent", "-c", "1", "--", cfg->self,
                              "--internal-worker-stamp", NULL};
  if (latency_run(cfg, db, rep, run, "persistent", n, persistent) != BENCH_OK)
    return BENCH_FAILED;
  int64_t few = n / 5 < 10 ? 10 : n / 5;
  const char *fork_args[] = {"-c", "1", "--", cfg->self, "--internal-stamp",
                             NULL};
  return latency_run(cfg, db, rep, run, "fork", few, fork_args);
}

/* ---------------------------------------------------------------- scale */

int bench_scale(const struct bench_config *cfg, jobq *db,
                struct bench_report *rep, struct bench_run *run) {
  int64_t least = cfg->jobs / 5 < 200 ? 200 : cfg->jobs / 5;
  size_t batch = cfg->batch > 0 ? (size_t)cfg->batch : 10;
  for (int procs = 1; procs <= 64; procs *= 2) {
    if (cfg->concurrency > 0 && procs > cfg->concurrency) break;
    /* A fifth of --jobs (at least 200), or a fiftieth of it for each
     * claimer when that is more: at 64, a fifth was 156 jobs each, and
     * the first claims of 64 new connections (their plans, their
     * caches) took much of the level. */
    int64_t per = procs * (cfg->jobs / 50) > least ? procs * (cfg->jobs / 50) : least;
    char q[BENCH_QUEUE_BUF], name[32], label[64];
    snprintf(name, sizeof name, "scale-%d", procs);
    bench_queue(cfg, name, q);
    int rc = JOBQ_OK;
    if (bench_parts > 0) {
      int parts = procs * bench_parts > JOBQ_PARTS_MAX ? JOBQ_PARTS_MAX : procs * bench_parts;
      /* One claimer is the queue as it is. */
      if (parts > 1 && (rc = jobq_set_parts(db, q, parts)) != JOBQ_OK)
        return bench_lib_fail(run, db, rc, "splitting the queue");
    }
    rc = bench_fill(db, q, per, "x", "scale (filling):");
    if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "filling the queue");
    if (bench_stop) return interrupted(run);
    struct bench_claimer c = {.url = cfg->url, .queue = q, .batch = batch, .total = per,
                              .count_empty = 1, .shared = bench_shared_new()};
    snprintf(label, sizeof label, "scale (%d):", procs);
    double secs;
    int bad = bench_claimers(&c, procs, label, &secs);
    long long claims = atomic_load(&c.shared->claims);
    long long empty = atomic_load(&c.shared->empty_ready);
    bench_shared_free(c.shared);
    if (bench_stop) return interrupted(run);
    char variant[48];
    snprintf(variant, sizeof variant, "%d claimer%s", procs, procs > 1 ? "s" : "");
    if (bad) return bench_fail(run, "%s: a claimer process failed", variant);
    if (verify(db, q, per, variant, run) != BENCH_OK) return BENCH_FAILED;
    bench_add(rep, "scale", variant, "throughput", (double)per / secs, "jobs/s");
    bench_add(rep, "scale", variant, "empty claims",
              claims > 0 ? 100.0 * (double)empty / (double)claims : 0, "%");
    /* What the bare SQL does with as many claimers on this machine, and
     * the protocol jobq must run (fenced, archived) as bare SQL. */
    double top, archived;
    snprintf(label, sizeof label, "scale (%d, bare sql):", procs);
    if (bench_ceiling_rate(cfg, db, procs, batch, BENCH_BARE, per, label, &top, run) != BENCH_OK)
      return BENCH_FAILED;
    snprintf(label, sizeof label, "scale (%d, archived sql):", procs);
    if (bench_ceiling_rate(cfg, db, procs, batch, BENCH_ARCHIVED, per, label, &archived, run) !=
        BENCH_OK)
      return BENCH_FAILED;
    bench_add(rep, "scale", variant, "ceiling", top, "jobs/s");
    bench_add(rep, "scale", variant, "share of ceiling", 100.0 * (double)per / secs / top, "%");
    bench_add(rep, "scale", variant, "archived ceiling", archived, "jobs/s");
    bench_add(rep, "scale", variant, "share of archived ceiling",
              100.0 * (double)per / secs / archived, "%");
    /* Each level on its own queue, the one before gone. */
    if ((rc = jobq_purge(db, q, NULL)) != JOBQ_OK)
      return bench_lib_fail(run, db, rc, "removing the jobs");
  }
  return BENCH_OK;
}

/* ---------------------------------------------------------------- backlog */

/* Opens a session named bench on db; JOBQ_OK or the error. */
static int session(jobq *db, jobq_session **s) {
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = "bench";
  so.lease_ms = BENCH_LEASE_MS;
  return jobq_session_open(db, &so, s);
}

/* Jobs a backlog round puts back at a time, so that the queue keeps its
 * size to within this many while the round runs. */
enum { REFILL = 100 };

/* Claims and completes want jobs of queue in batches of 10 on a session
 * of its own, putting back each REFILL taken (not timed); *rate gets jobs
 * per second of the claims' time. */
static int claim_rate(jobq *db, const char *queue, int64_t want, double *rate,
                      struct bench_run *run) {
  const char *const qs[] = {queue};
  jobq_ack acks[10];
  jobq_session *s;
  int rc = session(db, &s);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  int64_t done = 0, taken = 0;
  int status = BENCH_OK;
  double busy = 0, t0 = bench_now();
  while (done < want && !bench_stop && status == BENCH_OK) {
    jobq_job *jobs;
    size_t n;
    size_t max = want - done < 10 ? (size_t)(want - done) : 10;
    if ((rc = jobq_claim(s, qs, 1, max, &jobs, &n)) != JOBQ_OK) {
      status = bench_lib_fail(run, db, rc, "claim");
      break;
    }
    if (n == 0)
      status = bench_fail(run, "the queue ran out of jobs after %lld", (long long)done);
    for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    if (n > 0 && (rc = jobq_ack_many(s, acks, n)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "complete");
    jobq_jobs_free(jobs, n);
    done += (int64_t)n;
    taken += (int64_t)n;
    if (status == BENCH_OK && (taken >= REFILL || done == want)) {
      busy += bench_now() - t0;
      if ((rc = bench_fill(db, queue, taken, "x", NULL)) != JOBQ_OK)
        status = bench_lib_fail(run, db, rc, "filling the queue");
      taken = 0;
      t0 = bench_now();
    }
  }
  jobq_session_close(s);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) *rate = (double)done / busy;
  return status;
}

/* Claims up to max jobs of queue on s, heartbeating first when a third
 * of the lease has passed since *beat; with ack, acknowledges it in the
 * claim's transaction (jobq_ack_claim) and fails unless it took effect.
 * BENCH_OK or the failure. */
static int claim_beating(jobq *db, jobq_session *s, const char *queue, size_t max,
                         jobq_ack *ack, double *beat, jobq_job **jobs, size_t *n,
                         struct bench_run *run) {
  const char *const qs[] = {queue};
  int rc;
  if (bench_now() - *beat > BENCH_LEASE_MS / 3000.0) {
    if ((rc = jobq_heartbeat(s, NULL, NULL)) != JOBQ_OK)
      return bench_lib_fail(run, db, rc, "heartbeat");
    *beat = bench_now();
  }
  if (ack == NULL) {
    if ((rc = jobq_claim(s, qs, 1, max, jobs, n)) != JOBQ_OK)
      return bench_lib_fail(run, db, rc, "claim");
    return BENCH_OK;
  }
  if ((rc = jobq_ack_claim(s, ack, 1, qs, 1, max, jobs, n)) != JOBQ_OK)
    return bench_lib_fail(run, db, rc, "acknowledge and claim");
  if (ack->status != JOBQ_OK) {
    /* The call went through: db's last error is not this ack's. */
    jobq_jobs_free(*jobs, *n);
    return bench_fail(run, "the completion of job %lld in the next claim's transaction: %s",
                      (long long)ack->id, jobq_strerror(ack->status));
  }
  return BENCH_OK;
}

/* Archives every ready job of queue as done, 1000 at a time, as fast as
 * the library goes: one claim and one acknowledgement per 1000. */
static int archive_all(jobq *db, const char *queue, int64_t total,
                       struct bench_run *run) {
  jobq_session *s;
  int rc = session(db, &s);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  jobq_ack *acks = cli_xmalloc(1000 * sizeof *acks);
  struct cli_progress bar;
  cli_progress_start(&bar, "backlog (archiving):", "jobs", total);
  int64_t done = 0;
  int status = BENCH_OK;
  double beat = bench_now();
  while (!bench_stop && status == BENCH_OK) {
    jobq_job *jobs;
    size_t n;
    if ((status = claim_beating(db, s, queue, 1000, NULL, &beat, &jobs, &n, run)) != BENCH_OK)
      break;
    for (size_t i = 0; i < n; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    if (n > 0 && (rc = jobq_ack_many(s, acks, n)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "complete");
    jobq_jobs_free(jobs, n);
    if (n == 0) break;
    done += (int64_t)n;
    cli_progress_update(&bar, done, done);
  }
  cli_progress_end(&bar);
  free(acks);
  jobq_session_close(s);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  return status;
}

/* The claim rate of queue, measured ROUNDS times over measure jobs each,
 * the queue kept at its size (claim_rate): rates[] gets the rounds'
 * rates, sorted.  A round of 500 jobs lasted 45 ms on PostgreSQL, and
 * such rounds' rates moved by a third from run to run. */
enum { ROUNDS = 5 };
static int claim_rounds(jobq *db, const char *queue, int64_t measure,
                        double rates[ROUNDS], struct bench_run *run) {
  for (int i = 0; i < ROUNDS; i++) {
    int status = claim_rate(db, queue, measure, &rates[i], run);
    if (status != BENCH_OK) return status;
  }
  bench_sort(rates, ROUNDS);
  return BENCH_OK;
}

/* The rows of one variant: its median rate, its ratio to base's (none
 * when base is NULL: the base itself), and its slowest round (the first
 * claims beside a fresh backlog may plan anew). */
static void backlog_rows(struct bench_report *rep, const char *variant,
                         const double rates[ROUNDS], const double *base) {
  double median = rates[ROUNDS / 2];
  bench_add(rep, "backlog", variant, "throughput", median, "jobs/s");
  if (base != NULL)
    bench_add(rep, "backlog", variant, "ratio", median / base[ROUNDS / 2], "x");
  bench_add(rep, "backlog", variant, "slowest round", rates[0], "jobs/s");
}

int bench_backlog(const struct bench_config *cfg, jobq *db,
                  struct bench_report *rep, struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "backlog", q);
  /* Rounds of a tenth of --jobs: about half a second each at the
   * defaults, whatever the store. */
  const int64_t base = 1000, measure = cfg->jobs / 10 > 500 ? cfg->jobs / 10 : 500;
  double r_base[ROUNDS], r_ready[ROUNDS], r_archived[ROUNDS];
  int status = BENCH_OK;
  int rc = bench_fill(db, q, base, "x", "backlog (filling):");
  if (rc != JOBQ_OK) status = bench_lib_fail(run, db, rc, "filling the queue");
  if (status == BENCH_OK) status = claim_rounds(db, q, measure, r_base, run);
  /* 1000 ready, then the backlog on top. */
  if (status == BENCH_OK &&
      (rc = bench_fill(db, q, cfg->backlog, "x", "backlog (filling):")) != JOBQ_OK)
    status = bench_lib_fail(run, db, rc, "filling the queue");
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) status = claim_rounds(db, q, measure, r_ready, run);
  /* Everything archived, then 1000 ready beside the archive. */
  if (status == BENCH_OK) status = archive_all(db, q, base + cfg->backlog, run);
  if (status == BENCH_OK && (rc = bench_fill(db, q, base, "x", "backlog (filling):")) != JOBQ_OK)
    status = bench_lib_fail(run, db, rc, "filling the queue");
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) status = claim_rounds(db, q, measure, r_archived, run);
  if (status != BENCH_OK) return status;
  char ready[48], archived[48];
  snprintf(ready, sizeof ready, "%lld ready", (long long)cfg->backlog);
  snprintf(archived, sizeof archived, "%lld archived", (long long)cfg->backlog);
  backlog_rows(rep, "1000 ready", r_base, NULL);
  backlog_rows(rep, ready, r_ready, r_base);
  backlog_rows(rep, archived, r_archived, r_base);
  return BENCH_OK;
}

/* ---------------------------------------------------------------- after */

/* n jobs of queue q put 1000 to a transaction, with deps each after the
 * job of its place in the batch before, then drained by one session 100
 * at a time (claim, then acknowledge): *put and *drain get the rates. */
static int after_run(jobq *db, const char *q, int64_t n, int deps, double *put,
                     double *drain, struct bench_run *run) {
  enum { BATCH = 1000 };
  jobq_put_opts *o = cli_xmalloc(BATCH * sizeof *o);
  int64_t *ids = cli_xmalloc(BATCH * sizeof *ids), *prev = cli_xmalloc(BATCH * sizeof *prev);
  int rc = JOBQ_OK, status = BENCH_OK;
  struct cli_progress bar;
  cli_progress_start(&bar, "after (putting):", "jobs", n);
  double t0 = bench_now();
  for (int64_t done = 0; done < n && rc == JOBQ_OK && !bench_stop; done += BATCH) {
    size_t b = n - done < BATCH ? (size_t)(n - done) : BATCH;
    for (size_t i = 0; i < b; i++) {
      jobq_put_opts_init(&o[i]);
      o[i].queue = q;
      o[i].payload = "x";
      o[i].payload_len = 1;
      o[i].after = deps && done > 0 ? &prev[i] : NULL;
      o[i].n_after = deps && done > 0;
    }
    rc = jobq_put_many(db, o, b, ids, NULL);
    memcpy(prev, ids, b * sizeof *ids);
    cli_progress_update(&bar, done + (int64_t)b, done + (int64_t)b);
  }
  *put = (double)n / (bench_now() - t0);
  cli_progress_end(&bar);
  free(o);
  free(ids);
  free(prev);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "put");
  if (bench_stop) return interrupted(run);
  jobq_session *s;
  if ((rc = session(db, &s)) != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  cli_progress_start(&bar, "after (draining):", "jobs", n);
  double beat = bench_now();
  t0 = beat;
  for (int64_t done = 0; done < n && status == BENCH_OK && !bench_stop;) {
    jobq_job *jobs;
    size_t got;
    status = claim_beating(db, s, q, 100, NULL, &beat, &jobs, &got, run);
    if (status != BENCH_OK) break;
    if (got == 0) {
      status = bench_fail(run, "after: nothing to claim after %lld of %lld jobs",
                          (long long)done, (long long)n);
      break;
    }
    jobq_ack acks[100];
    for (size_t i = 0; i < got; i++) jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_COMPLETE);
    if ((rc = jobq_ack_many(s, acks, got)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "acknowledge");
    jobq_jobs_free(jobs, got);
    done += (int64_t)got;
    cli_progress_update(&bar, done, done);
  }
  *drain = (double)n / (bench_now() - t0);
  cli_progress_end(&bar);
  jobq_session_close(s);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) status = verify(db, q, n, "after", run);
  return status;
}

int bench_after(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
                struct bench_run *run) {
  int64_t n = cfg->jobs / 5 < 1000 ? 1000 : cfg->jobs / 5;
  for (int deps = 0; deps < 2; deps++) {
    char q[BENCH_QUEUE_BUF], variant[64];
    bench_queue(cfg, deps ? "after" : "after-none", q);
    double put = 0, drain = 0;
    int status = after_run(db, q, n, deps, &put, &drain, run);
    if (status != BENCH_OK) return status;
    snprintf(variant, sizeof variant, deps ? "%lld, each after one job" : "%lld, none after",
             (long long)n);
    bench_add(rep, "after", variant, "put", put, "jobs/s");
    bench_add(rep, "after", variant, "drain", drain, "jobs/s");
  }
  return BENCH_OK;
}

/* ---------------------------------------------------------------- keys */

/* One session works the key's jobs, one at a time as the key allows,
 * checking that they come in the order put: each completed, then the
 * next claimed, or with together each completed in the transaction that
 * claims the next (jobq_ack_claim, as the foreman does).  tenth[0] and
 * tenth[1] get the rates of the first and the last tenth of them. */
static int drain_key(jobq *db, const char *queue, int64_t n, int together, double *rate,
                     double tenth[2], struct bench_run *run) {
  jobq_session *s;
  int rc = session(db, &s);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  struct cli_progress bar;
  cli_progress_start(&bar, "keys (draining):", "jobs", n);
  int64_t done = 0, last = 0, slice = n / 10;
  int status = BENCH_OK;
  double t0 = bench_now(), beat = t0, first_end = t0, last_start = t0;
  jobq_job *held = NULL;  /* together: the job the next claim completes */
  while (done < n && !bench_stop && status == BENCH_OK) {
    jobq_ack ack;
    if (held != NULL) jobq_ack_init(&ack, held, JOBQ_ACK_COMPLETE);
    jobq_job *jobs;
    size_t got;
    status = claim_beating(db, s, queue, 10, held != NULL ? &ack : NULL, &beat, &jobs, &got, run);
    jobq_jobs_free(held, held != NULL);
    held = NULL;
    if (status != BENCH_OK) break;
    if (got != 1)
      status = bench_fail(run, "a claim of the key's jobs got %zu after %lld, expected 1", got,
                          (long long)done);
    else if (jobs[0].id <= last)
      status = bench_fail(run, "job %lld of the key came after job %lld", (long long)jobs[0].id,
                          (long long)last);
    else if (together && done + 1 < n)
      held = jobs;
    else if ((rc = jobq_complete(s, &jobs[0], NULL, 0, NULL)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "complete");
    if (got > 0) last = jobs[0].id;
    if (held == NULL) jobq_jobs_free(jobs, got);
    done += (int64_t)got;
    if (done == slice) first_end = bench_now();
    if (done == n - slice) last_start = bench_now();
    cli_progress_update(&bar, done, done);
  }
  jobq_jobs_free(held, held != NULL);
  double t1 = bench_now();
  cli_progress_end(&bar);
  jobq_session_close(s);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status != BENCH_OK) return status;
  *rate = (double)n / (t1 - t0);
  tenth[0] = (double)slice / (first_end - t0);
  tenth[1] = (double)slice / (t1 - last_start);
  return BENCH_OK;
}

int bench_keys(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
               struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "keys", q);
  int64_t n = cfg->jobs / 10 < 200 ? 200 : cfg->jobs / 10;
  run->verified = 0;
  double t0 = bench_now();
  int rc = bench_fill_key(db, q, "k", 0, n, "x", "keys (filling):");
  double put = (double)n / (bench_now() - t0), drain = 0, tenth[2] = {0, 0};
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "keyed put");
  if (bench_stop) return interrupted(run);
  int status = drain_key(db, q, n, 0, &drain, tenth, run);
  if (status == BENCH_OK) status = verify(db, q, n, "keys", run);
  if (status != BENCH_OK) return status;
  char variant[64];
  snprintf(variant, sizeof variant, "%lld on one key", (long long)n);
  bench_add(rep, "keys", variant, "put", put, "jobs/s");
  bench_add(rep, "keys", variant, "drain", drain, "jobs/s");
  bench_add(rep, "keys", variant, "drain, first tenth", tenth[0], "jobs/s");
  bench_add(rep, "keys", variant, "drain, last tenth", tenth[1], "jobs/s");
  bench_add(rep, "keys", variant, "first tenth / last", tenth[0] / tenth[1], "x");
  /* The same, each job completed in the transaction that claims the
   * next: one commit a job instead of two. */
  bench_queue(cfg, "keys-acked", q);
  if ((rc = bench_fill_key(db, q, "k", 0, n, "x", "keys (filling):")) != JOBQ_OK)
    return bench_lib_fail(run, db, rc, "keyed put");
  if (bench_stop) return interrupted(run);
  status = drain_key(db, q, n, 1, &drain, tenth, run);
  if (status == BENCH_OK) status = verify(db, q, n, "keys", run);
  if (status != BENCH_OK) return status;
  snprintf(variant, sizeof variant, "%lld on one key, acked with the next claim", (long long)n);
  bench_add(rep, "keys", variant, "drain", drain, "jobs/s");
  bench_add(rep, "keys", variant, "first tenth / last", tenth[0] / tenth[1], "x");
  /* As many jobs, each with a key of its own, drained as the library
   * drain does. */
  bench_queue(cfg, "keys-each", q);
  t0 = bench_now();
  rc = bench_fill_key(db, q, "k", 1, n, "x", "keys (filling):");
  put = (double)n / (bench_now() - t0);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "keyed put");
  if (bench_stop) return interrupted(run);
  status = drain_claimers(cfg, db, q, n, "keys (draining):", "keys", &drain, run);
  if (status != BENCH_OK) return status;
  snprintf(variant, sizeof variant, "%lld, a key each", (long long)n);
  bench_add(rep, "keys", variant, "put", put, "jobs/s");
  bench_add(rep, "keys", variant, "drain, library", drain, "jobs/s");
  run->verified = 1;
  return BENCH_OK;
}

/* ---------------------------------------------------------------- failures */

/* One session claims the n jobs of queue in batches of 100 and fails each
 * batch with jobq_ack_many(), to run again in an hour, or dead on their
 * last attempt; every failure must have taken effect with the outcome
 * expected.  *rate gets failures per second of the acknowledgements'
 * time. */
static int fail_all(jobq *db, const char *queue, int64_t n, int outcome, double *rate,
                    struct bench_run *run) {
  enum { BATCH = 100 };
  jobq_ack acks[BATCH];
  jobq_session *s;
  int rc = session(db, &s);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  int64_t done = 0;
  int status = BENCH_OK;
  double busy = 0, beat = bench_now();
  while (done < n && !bench_stop && status == BENCH_OK) {
    jobq_job *jobs;
    size_t k;
    if ((status = claim_beating(db, s, queue, BATCH, NULL, &beat, &jobs, &k, run)) != BENCH_OK)
      break;
    if (k == 0)
      status = bench_fail(run, "the queue ran out of jobs after %lld", (long long)done);
    for (size_t i = 0; i < k; i++) {
      jobq_ack_init(&acks[i], &jobs[i], JOBQ_ACK_FAIL);
      acks[i].data = "bench: failed on purpose";
      acks[i].len = strlen(acks[i].data);
      acks[i].retry_in_ms = 3600000;
    }
    double t0 = bench_now();
    if (k > 0 && (rc = jobq_ack_many(s, acks, k)) != JOBQ_OK)
      status = bench_lib_fail(run, db, rc, "fail");
    busy += bench_now() - t0;
    for (size_t i = 0; i < k && status == BENCH_OK; i++)
      if (acks[i].status != JOBQ_OK || acks[i].outcome != outcome)
        status = bench_fail(run, "the failure of job %lld: %s, outcome %d", (long long)acks[i].id,
                            jobq_strerror(acks[i].status), acks[i].outcome);
    jobq_jobs_free(jobs, k);
    done += (int64_t)k;
  }
  jobq_session_close(s);
  if (status == BENCH_OK && bench_stop) status = interrupted(run);
  if (status == BENCH_OK) *rate = (double)done / busy;
  return status;
}

/* The lease of a session whose worker the bench kills: reaped this long
 * after its last claim. */
enum { LOST_LEASE_MS = 1000 };

/* Claims every job of queue (n) on session s, 1000 at a time with a
 * heartbeat before each, as a worker that starts only half of what it
 * takes at once does; *got gets how many it took. */
static int take_all(jobq_session *s, const char *queue, int64_t n, int64_t *got) {
  const char *const qs[] = {queue};
  *got = 0;
  while (*got < n && !bench_stop) {
    int rc = jobq_heartbeat(s, NULL, NULL);
    if (rc != JOBQ_OK) return rc;
    jobq_session_start_now(s, 500);
    jobq_job *jobs;
    size_t k;
    if ((rc = jobq_claim(s, qs, 1, 1000, &jobs, &k)) != JOBQ_OK) return rc;
    jobq_jobs_free(jobs, k);
    if (k == 0) break;
    *got += (int64_t)k;
  }
  return JOBQ_OK;
}

struct lost_worker {
  const char *url, *queue;
  int64_t n;
};

/* A worker that claims every job of the queue and is killed holding
 * them (SIGKILL); exits otherwise only on failure. */
static int lost_worker(const void *arg, int index) {
  (void)index;
  const struct lost_worker *w = arg;
  jobq *db = NULL;
  jobq_session *s = NULL;
  jobq_session_opts so;
  jobq_session_opts_init(&so);
  so.name = "bench-lost";
  so.lease_ms = LOST_LEASE_MS;
  int64_t got = 0;
  int rc = jobq_open(w->url, &db);
  if (rc == JOBQ_OK) rc = jobq_session_open(db, &so, &s);
  if (rc == JOBQ_OK) rc = take_all(s, w->queue, w->n, &got);
  if (rc != JOBQ_OK) {
    cli_lib_error(db, rc);
    return 1;
  }
  if (got == w->n) raise(SIGKILL);
  return 2;
}

/* The n jobs of queue, all ready again, none running. */
static int all_back(jobq *db, const char *queue, int64_t n, const char *variant,
                    struct bench_run *run) {
  jobq_queue_stats st;
  int rc = bench_queue_stats(db, queue, &st);
  if (rc < 0) return bench_lib_fail(run, db, rc, "stats");
  if (st.ready != n || st.running != 0)
    return bench_fail(run, "%s: %lld of %lld jobs ready again, %lld still running", variant,
                      (long long)st.ready, (long long)n, (long long)st.running);
  return BENCH_OK;
}

/* A session holding the n jobs of queue ends: closed by its worker, which
 * gives them back; then killed, its jobs sent back by the reap that finds
 * its lease ran out.  Jobs per second of the close's and of the reap's
 * time. */
static int end_holding(const struct bench_config *cfg, jobq *db, const char *queue, int64_t n,
                       struct bench_report *rep, struct bench_run *run) {
  static const char closed[] = "given back at close", lost[] = "sent back, worker lost";
  jobq_session *s;
  int64_t got = 0;
  int rc = session(db, &s);
  if (rc == JOBQ_OK) rc = take_all(s, queue, n, &got);
  if (rc != JOBQ_OK) {
    jobq_session_close(s);
    return bench_lib_fail(run, db, rc, "claiming every job");
  }
  double t0 = bench_now();
  jobq_session_close(s);
  double secs = bench_now() - t0;
  int status = got == n ? all_back(db, queue, n, closed, run)
                        : bench_fail(run, "%s: claimed %lld of %lld jobs", closed,
                                     (long long)got, (long long)n);
  if (status != BENCH_OK) return status;
  bench_add(rep, "failures", closed, "throughput", (double)n / secs, "jobs/s");

  /* This process's session, opened first, shows the reap a database
   * that is alive, not stalled; the worker's lease runs out first. */
  if ((rc = session(db, &s)) != JOBQ_OK) return bench_lib_fail(run, db, rc, "session");
  struct bench_shared *shared = bench_shared_new();
  struct lost_worker w = {cfg->url, queue, n};
  pid_t pid = bench_spawn(lost_worker, &w, 0, shared);
  int wst = 0;
  if (pid > 0) waitpid(pid, &wst, 0);
  bench_shared_free(shared);
  enum { WAIT_MS = LOST_LEASE_MS + 300 };
  struct timespec ts = {WAIT_MS / 1000, WAIT_MS % 1000 * 1000000L};
  while (!bench_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  int64_t reaped = 0;
  t0 = bench_now();
  rc = bench_stop ? JOBQ_OK : jobq_reap(db, &reaped);
  secs = bench_now() - t0;
  jobq_session_close(s);
  if (bench_stop) return interrupted(run);
  if (pid < 0 || !WIFSIGNALED(wst) || WTERMSIG(wst) != SIGKILL)
    return bench_fail(run, "%s: the worker failed before it held every job", lost);
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "reaping");
  if (reaped != 1)
    return bench_fail(run, "%s: %lld sessions reaped, not 1", lost, (long long)reaped);
  if ((status = all_back(db, queue, n, lost, run)) != BENCH_OK) return status;
  bench_add(rep, "failures", lost, "throughput", (double)n / secs, "jobs/s");
  return BENCH_OK;
}

int bench_failures(const struct bench_config *cfg, jobq *db, struct bench_report *rep,
                   struct bench_run *run) {
  /* Jobs with attempts left go back for later (scheduled); jobs on their
   * only attempt die, then are retried; so do jobs of a key each, whose
   * keys each dead head holds (the queue's default policy, 'block'). */
  static const struct {
    const char *queue, *variant, *key;
    int last, outcome;
  } kinds[] = {{"failures", "run again later", NULL, 0, JOBQ_STATE_READY},
               {"failures-dead", "dead", NULL, 1, JOBQ_STATE_DEAD},
               {"failures-keys", "dead, a key each", "k", 1, JOBQ_STATE_DEAD}};
  int64_t n = cfg->jobs / 10 < 200 ? 200 : cfg->jobs / 10;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    char q[BENCH_QUEUE_BUF];
    bench_queue(cfg, kinds[i].queue, q);
    int rc = kinds[i].last ? bench_fill_last(db, q, kinds[i].key, n, "failures (filling):")
                           : bench_fill(db, q, n, "x", "failures (filling):");
    if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "filling the queue");
    double rate;
    int status = fail_all(db, q, n, kinds[i].outcome, &rate, run);
    if (status != BENCH_OK) return status;
    jobq_queue_stats st;
    if ((rc = bench_queue_stats(db, q, &st)) < 0) return bench_lib_fail(run, db, rc, "stats");
    int64_t got = kinds[i].last ? st.dead : st.scheduled;
    if (got != n)
      return bench_fail(run, "%s: %lld of %lld failed jobs counted so", kinds[i].variant,
                        (long long)got, (long long)n);
    bench_add(rep, "failures", kinds[i].variant, "throughput", rate, "jobs/s");
    if (!kinds[i].last || kinds[i].key != NULL) continue;
    /* Then the dead ones retried, all at once, as an operator does once
     * the cause is mended. */
    int64_t count = 0;
    double t0 = bench_now();
    if ((rc = jobq_retry_dead(db, q, &count)) != JOBQ_OK)
      return bench_lib_fail(run, db, rc, "retrying the dead jobs");
    double secs = bench_now() - t0;
    if ((rc = bench_queue_stats(db, q, &st)) < 0) return bench_lib_fail(run, db, rc, "stats");
    if (count != n || st.ready != n || st.dead != 0)
      return bench_fail(run, "retried from dead: %lld retried, %lld ready, %lld dead of %lld",
                        (long long)count, (long long)st.ready, (long long)st.dead,
                        (long long)n);
    bench_add(rep, "failures", "retried from dead", "throughput", (double)n / secs, "jobs/s");
  }
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "failures-ended", q);
  int rc = bench_fill(db, q, n, "x", "failures (filling):");
  if (rc != JOBQ_OK) return bench_lib_fail(run, db, rc, "filling the queue");
  return end_holding(cfg, db, q, n, rep, run);
}

/* ---------------------------------------------------------------- workers */

/* Standard base64 of a short text into out (4/3 of it, plus a NUL). */
static void base64(const char *in, char *out) {
  char *b = cli_base64(in, strlen(in));
  snprintf(out, 64, "%s", b);
  free(b);
}

int bench_internal_worker(int stamp) {
  static char line[1 << 20];
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  fputs("ready\n", stdout);
  fflush(stdout);
  while (fgets(line, sizeof line, stdin) != NULL) {
    int64_t t = bench_wall_ns();
    long long id;
    if (sscanf(line, "job %lld ", &id) != 1) return 1;
    if (stamp) {
      char text[32], enc[64];
      snprintf(text, sizeof text, "%lld", (long long)t);
      base64(text, enc);
      printf("done %lld %s\n", id, enc);
    } else {
      printf("done %lld\n", id);
    }
    fflush(stdout);
  }
  return 0;
}

int bench_internal_stamp(void) {
  printf("%lld", (long long)bench_wall_ns());
  return 0;
}
