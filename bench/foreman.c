/*
 * foreman.c - the `foreman` workload of `jobq bench`: what one
 * `jobq work` costs the machine it runs on.  Its peak resident memory
 * (VmHWM) at -c 64, forking a job per slot and with 64 persistent workers,
 * and the CPU time and wakeups of an idle foreman (every thread of it,
 * from /proc/PID/task) over --seconds, 10 by default.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "bench.h"
#include "output.h"

#define SLOTS "64"
#define WARMUP_S 3.0          /* the poll backs off to its idle period */
#define IDLE_S 10.0

/* CPU time (ns) and context switches of every thread of pid so far;
 * -1 when /proc does not tell. */
static int proc_use(pid_t pid, int64_t *cpu_ns, int64_t *switches) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *d = opendir(path);
  if (d == NULL) return -1;
  *cpu_ns = 0;
  *switches = 0;
  int seen = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char file[400], line[256];
    snprintf(file, sizeof file, "%s/%s/schedstat", path, e->d_name);
    FILE *f = fopen(file, "r");
    if (f == NULL) continue;
    long long run = 0;
    int ok = fscanf(f, "%lld", &run) == 1;
    fclose(f);
    if (!ok) continue;
    *cpu_ns += run;
    seen = 1;
    snprintf(file, sizeof file, "%s/%s/status", path, e->d_name);
    if ((f = fopen(file, "r")) == NULL) continue;
    while (fgets(line, sizeof line, f) != NULL) {
      long long v;
      if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1 ||
          sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1)
        *switches += v;
    }
    fclose(f);
  }
  closedir(d);
  return seen ? 0 : -1;
}

/* A foreman with nothing to do: -c 4 on a queue that stays empty. */
static int idle(const struct bench_config *cfg, struct bench_report *rep,
                struct bench_run *run) {
  char q[BENCH_QUEUE_BUF];
  bench_queue(cfg, "idle", q);
  const char *args[] = {"-q", q, "-c", "4", "--", "/bin/true", NULL};
  pid_t pid = bench_foreman(cfg, args);
  if (pid < 0) return bench_fail(run, "idle: cannot start 'jobq work'");
  double span = cfg->seconds > 0 ? (double)cfg->seconds : IDLE_S;
  struct cli_progress bar;
  cli_progress_start(&bar, "foreman (idle):", "s", (int64_t)(WARMUP_S + span));
  bench_sleep(WARMUP_S);
  int64_t cpu0, sw0, cpu1, sw1;
  int bad = proc_use(pid, &cpu0, &sw0);
  double t0 = bench_now();
  for (double left = span; left > 0 && !bench_stop; left -= 1) {
    bench_sleep(left < 1 ? left : 1);
    int64_t at = (int64_t)(WARMUP_S + span - left + 1);
    cli_progress_update(&bar, at, at);
  }
  double t1 = bench_now();
  cli_progress_end(&bar);
  bad = bad || proc_use(pid, &cpu1, &sw1);
  kill(pid, SIGTERM);
  int status = bench_wait(pid, 30);
  if (bench_stop) return bench_fail(run, "interrupted");
  if (bad || status != 0) {
    bench_fail(run, "idle: 'jobq work' %s (exit status %d)",
               bad ? "ended early" : "did not stop cleanly", status);
    bench_log_tail(cfg, run->why, sizeof run->why);
    return BENCH_FAILED;
  }
  double secs = t1 - t0;
  bench_add(rep, "foreman", "idle -c 4", "CPU", (double)(cpu1 - cpu0) / 1e9 / secs * 100,
            "%");
  bench_add(rep, "foreman", "idle -c 4", "wakeups", (double)(sw1 - sw0) / secs, "/s");
  return BENCH_OK;
}

static void add_memory(struct bench_report *rep, const char *variant,
                       const struct bench_memory *m) {
  if (m->peak_kib > 0)
    bench_add(rep, "foreman", variant, "peak RSS", (double)m->peak_kib / 1024, "MiB");
  if (m->anon_kib > 0)
    bench_add(rep, "foreman", variant, "peak private", (double)m->anon_kib / 1024, "MiB");
}

int bench_foreman_use(const struct bench_config *cfg, jobq *db,
                      struct bench_report *rep, struct bench_run *run) {
  run->verified = 0;
  double secs;
  struct bench_memory mem;
  /* Jobs long enough that all 64 slots are busy at once, each slot
   * twice. */
  const char *fork_args[] = {"-c", SLOTS, "--", "/bin/sleep", "0.1", NULL};
  if (bench_drain_foreman(cfg, db, run, "fork-64", "fork -c " SLOTS, 128, fork_args,
                          &secs, &mem) != BENCH_OK)
    return BENCH_FAILED;
  add_memory(rep, "fork -c " SLOTS, &mem);
  int64_t n = cfg->jobs / 5 < 640 ? 640 : cfg->jobs / 5;
  const char *persistent[] = {"--persistent", "-c", SLOTS, "--", cfg->self,
                              "--internal-worker", NULL};
  if (bench_drain_foreman(cfg, db, run, "persistent-64", "persistent -c " SLOTS, n,
                          persistent, &secs, &mem) != BENCH_OK)
    return BENCH_FAILED;
  add_memory(rep, "persistent -c " SLOTS, &mem);
  run->verified = 1;
  return idle(cfg, rep, run);
}
