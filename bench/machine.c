/*
 * machine.c - what a run of `jobq bench` ran on, so that its figures
 * can be read against another machine's: the cores, memory, processor and
 * system of this machine, the store's server and durability as `jobq
 * doctor` reports them, and how long this machine's disk takes to flush a
 * small write, which bounds every durable commit of a database on it:
 * back to back, as in a drain, and after a pause, as in the latency
 * workload, where the machine has gone idle between jobs.
 */
#include <errno.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "output.h"
#include "util.h"

#define FLUSH_WRITES 200
#define FLUSH_BLOCK 4096
#define FLUSH_IDLE_WRITES 30
#define FLUSH_IDLE_PAUSE 0.02 /* s: the latency workload puts 50 jobs a second */

/* The first "model name" of /proc/cpuinfo, or "". */
static void cpu_model(char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || colon == NULL) continue;
    colon += 1 + strspn(colon + 1, " \t");
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(buf, size, "%s", colon);
    break;
  }
  fclose(f);
}

/* The median time (ms) of writes blocks appended to a new file in dir,
 * each followed by fdatasync() (as a database's log is written) and, when
 * pause is not 0, each after that many seconds asleep; -1 with why set
 * when the folder does not allow it. */
static double flush_ms(const char *dir, int writes, double pause, char *why, size_t len) {
  /* A name of its own: an SQLite database's folder is the user's. */
  static const char unique[] = "XXXXXX"; /* mkstemp() fills it in */
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/jobq-bench-flush.%s", dir, unique);
  int fd = mkstemp(path);
  if (fd < 0) {
    snprintf(why, len, "cannot make a file in '%s': %s", dir, cli_strerror(errno));
    return -1;
  }
  static const char block[FLUSH_BLOCK];
  double ms[FLUSH_WRITES];
  int n = 0;
  for (; n < writes && n < FLUSH_WRITES; n++) {
    if (pause > 0) bench_sleep(pause);
    double t0 = bench_now();
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block || fdatasync(fd) != 0) {
      snprintf(why, len, "cannot write '%s': %s", path, cli_strerror(errno));
      break;
    }
    ms[n] = (bench_now() - t0) * 1000;
  }
  close(fd);
  unlink(path);
  if (n < writes) return -1;
  bench_sort(ms, (size_t)n);
  return bench_percentile(ms, (size_t)n, 50);
}

/* The detail of the check named name in checks, or "". */
static const char *check_detail(const jobq_check *checks, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(checks[i].name, name) == 0 && checks[i].detail != NULL)
      return checks[i].detail;
  return "";
}

void bench_machine_read(struct bench_config *cfg, jobq *db) {
  struct bench_machine *m = &cfg->machine;
  memset(m, 0, sizeof *m);
  m->cores = sysconf(_SC_NPROCESSORS_ONLN);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  m->memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
  cpu_model(m->cpu, sizeof m->cpu);
  struct utsname u;
  if (uname(&u) == 0) snprintf(m->system, sizeof m->system, "%s %s (%s)", u.sysname, u.release,
                               u.machine);
  jobq_check *checks = NULL;
  size_t n = 0;
  if (jobq_doctor(db, &checks, &n) == JOBQ_OK) {
    snprintf(m->server, sizeof m->server, "%s", check_detail(checks, n, "server"));
    snprintf(m->durability, sizeof m->durability, "%s",
             check_detail(checks, n, "durability"));
  }
  jobq_checks_free(checks, n);
  /* An SQLite database's own folder; a server's disk may be another
   * machine's, so the run's folder on this one. */
  snprintf(m->flush_dir, sizeof m->flush_dir, "%s", cfg->dir);
  const char *file = cfg->store == BENCH_SQLITE ? sqlite3_db_filename(jobq_native(db), "main")
                                                : NULL;
  if (file != NULL && file[0] != '\0') {
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", file);
    snprintf(m->flush_dir, sizeof m->flush_dir, "%s", dirname(copy));
  }
  m->flush_ms = flush_ms(m->flush_dir, FLUSH_WRITES, 0, m->flush_why, sizeof m->flush_why);
  m->flush_idle_ms = m->flush_ms < 0 ? -1
                                     : flush_ms(m->flush_dir, FLUSH_IDLE_WRITES, FLUSH_IDLE_PAUSE,
                                                m->flush_why, sizeof m->flush_why);
}

void bench_machine_print(const struct bench_config *cfg) {
  const struct bench_machine *m = &cfg->machine;
  cli_error("machine: %ld cores%s%s%s, %.1f GiB of memory, %s", m->cores,
            m->cpu[0] ? " (" : "", m->cpu, m->cpu[0] ? ")" : "", m->memory / (1 << 30),
            m->system[0] ? m->system : "an unknown system");
  if (m->server[0])
    cli_error("server: %s%s%s", m->server, m->durability[0] ? "; " : "", m->durability);
  if (m->flush_ms >= 0 && m->flush_idle_ms >= 0)
    cli_error("disk: a 4 KiB write and its flush take %.3f ms in '%s' (median of %d), "
              "%.3f ms after %.0f ms asleep (median of %d)",
              m->flush_ms, m->flush_dir, FLUSH_WRITES, m->flush_idle_ms,
              FLUSH_IDLE_PAUSE * 1000, FLUSH_IDLE_WRITES);
  else
    cli_error("disk: not measured: %s", m->flush_why);
}

void bench_machine_summary(const struct bench_machine *m, char *buf, size_t size) {
  char flush[96] = "";
  if (m->flush_ms >= 0 && m->flush_idle_ms >= 0)
    snprintf(flush, sizeof flush, "; disk flush %.3f ms, %.3f after a pause", m->flush_ms,
             m->flush_idle_ms);
  snprintf(buf, size, "%ld cores%s%s%s, %.1f GiB, %s%s%s%s", m->cores, m->cpu[0] ? " (" : "",
           m->cpu, m->cpu[0] ? ")" : "", m->memory / (1 << 30), m->system,
           m->server[0] ? "; " : "", m->server, flush);
}

json_t *bench_machine_json(const struct bench_machine *m) {
  json_t *o = cli_json_object();
  cli_json_set(o, "cores", json_integer(m->cores));
  cli_json_set(o, "memory_bytes", json_integer((json_int_t)m->memory));
  cli_json_set(o, "cpu", cli_json_str(m->cpu));
  cli_json_set(o, "system", cli_json_str(m->system));
  cli_json_set(o, "server", cli_json_str(m->server));
  cli_json_set(o, "durability", cli_json_str(m->durability));
  cli_json_set(o, "flush_dir", cli_json_str(m->flush_dir));
  cli_json_set(o, "flush_ms", m->flush_ms >= 0 ? json_real(m->flush_ms) : json_null());
  cli_json_set(o, "flush_idle_ms",
               m->flush_idle_ms >= 0 ? json_real(m->flush_idle_ms) : json_null());
  return o;
}
