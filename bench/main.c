/*
 * main.c - jobq-bench, the program behind `jobq bench` (which runs it as
 * git runs its helpers, cli/cmd_bench.c): runs standard workloads against
 * a queue database and reports what they measured.  It is a program of
 * its own that uses libjobq through include/jobq.h alone, as any user
 * does, and the command line's options and output (cli/options.h,
 * output.h, util.h).  This file has the usage, the options and their
 * checks, the choice of database (a temporary SQLite file unless --db or
 * $JOBQ_DB names one), the order of the workloads, the cleanup after each
 * one (also after a failure or an interrupt), and the outputs.  The
 * workloads are in workloads.c and ceiling.c, the outputs in report.c.
 * `jobq-bench --internal-worker`, `--internal-worker-stamp` and
 * `--internal-stamp` are what the `jobq work` children of the workloads
 * run, not for people.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"
#include "options.h"
#include "output.h"
#include "sql.h"
#include "util.h"

static const char usage[] =
    "usage: jobq bench [--workload NAME|all] [--jobs N] [--concurrency N]\n"
    "                  [--batch N] [--backlog N] [--seconds S] [--rate N]\n"
    "                  [--limit running|per-key|rate|rate-per-key] [--parts K]\n"
    "                  [--json] [--csv FILE] [--plot FILE.svg]\n"
    "\n"
    "Runs standard workloads against the queue database and prints what\n"
    "they measured: enqueue (single and batched puts), drain (library\n"
    "claimers, a persistent foreman and a fork-per-job foreman, each\n"
    "checked exactly once), latency (put to start on an idle foreman), scale\n"
    "(1 to 64 claimer processes), backlog (claims beside a large backlog or\n"
    "archive), keys (the jobs of one ordering key, put and worked in order),\n"
    "failures (batches of jobs failed, to run again later or dead; the\n"
    "jobs of a session given back at its close, and sent back by a reap\n"
    "when its worker is killed holding them),\n"
    "ceiling (bare SQL claims without jobq, deleted in the same\n"
    "transaction, fenced in a second one, and archived as well; on\n"
    "PostgreSQL and SQLite also the latency floor of a bare put and claim),\n"
    "foreman (the peak memory of `jobq work` at -c 64, the CPU and wakeups\n"
    "of an idle one) and, only when named, soak (a steady load for\n"
    "--seconds: claim times and table sizes, first and last), after\n"
    "(jobs put after others, put and drained, beside jobs without) and\n"
    "skew (half the jobs of one hot ordering key, drained by --concurrency\n"
    "claimers, default 8, with the queue whole and in parts).\n"
    "Without --db or $JOBQ_DB it works on a temporary SQLite file, deleted\n"
    "at the end.  It uses queues of its own (bench.PID.*) and deletes their\n"
    "jobs at the end, also after a failure or an interrupt.  First it\n"
    "says on stderr what it runs on: the machine, the server and how long\n"
    "a 4 KiB write and its flush take on this machine's disk.\n";

/* The names below, as the messages list them. */
#define WORKLOAD_LIST \
  "enqueue, drain, latency, scale, backlog, keys, failures, ceiling, foreman, soak, after, " \
  "skew"
static const char *const workload_names[] = {"enqueue", "drain",    "latency", "scale",
                                             "backlog", "keys",     "failures", "ceiling",
                                             "foreman", "soak",     "after",   "skew"};
static const bench_workload_fn workload_fns[] = {
    bench_enqueue, bench_drain,    bench_latency, bench_scale,       bench_backlog,
    bench_keys,    bench_failures, bench_ceiling, bench_foreman_use, bench_soak,
    bench_after,   bench_skew};
/* soak is long, after and skew measures of one feature: only when named. */
static const int in_all[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
#define NWORKLOADS (sizeof workload_names / sizeof workload_names[0])
_Static_assert(NWORKLOADS <= BENCH_MAX_RUNS, "a report holds a run of every workload");
_Static_assert(sizeof workload_fns / sizeof workload_fns[0] == NWORKLOADS &&
                   sizeof in_all / sizeof in_all[0] == NWORKLOADS,
               "a function and an all-flag for every workload");

static void on_signal(int sig) {
  (void)sig;
  bench_stop = 1;
}

/* Parses --workload into want[]; 0 or 2 after a message. */
static int parse_workloads(const char *text, int *want) {
  char shown[CLI_QUOTE_BUF];
  memset(want, 0, NWORKLOADS * sizeof *want);
  if (text == NULL || strcmp(text, "all") == 0) {
    for (size_t i = 0; i < NWORKLOADS; i++) want[i] = in_all[i];
    return 0;
  }
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    size_t i = 0;
    while (i < NWORKLOADS &&
           (strlen(workload_names[i]) != len || strncmp(workload_names[i], p, len) != 0))
      i++;
    if (i == NWORKLOADS) {
      char word[64];
      snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), p);
      const char *best = cli_suggest(word, workload_names, NWORKLOADS);
      if (best != NULL)
        cli_error("invalid --workload '%s': unknown workload '%s', did you mean '%s'?",
                  cli_quote(shown, text), word, best);
      else
        cli_error("invalid --workload '%s': expected all, or a comma list of " WORKLOAD_LIST,
                  cli_quote(shown, text));
      return CLI_EXIT_USAGE;
    }
    want[i] = 1;
    if (p[len] == '\0') break;
    p += len + 1;
  }
  return 0;
}

static int count(const char *what, const char *text, int64_t min, int64_t max,
                 int64_t *out) {
  if (text == NULL) return 0;
  return cli_parse_int(what, text, min, max, out);
}

/* Whether s ends with suffix (any case). */
static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && strcasecmp(s + n - k, suffix) == 0;
}

static int store_of(const char *url) {
  if (strncasecmp(url, "postgres", 8) == 0) return BENCH_POSTGRES;
  if (strncasecmp(url, "mysql", 5) == 0 || strncasecmp(url, "mariadb", 7) == 0)
    return BENCH_MYSQL;
  return BENCH_SQLITE;
}

/* The jobq program for the `jobq work` children into cfg->jobq: beside
 * this one (the build folder), else where `make install` puts it from
 * here (PREFIX/libexec/jobq/jobq-bench, PREFIX/bin/jobq).  0, or 1 after
 * a message. */
static int find_jobq(struct bench_config *cfg) {
  static const char *const places[] = {"%.*s/jobq", "%.*s/../../bin/jobq"};
  const char *slash = strrchr(cfg->self, '/');
  int dir = slash != NULL ? (int)(slash - cfg->self) : 0;
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
    snprintf(cfg->jobq, sizeof cfg->jobq, places[i], dir, cfg->self);
    if (access(cfg->jobq, X_OK) == 0) return 0;
  }
  cli_error("cannot find the jobq program beside %s nor in %.*s/../../bin: "
            "expected them together, as make builds and installs them",
            cfg->self, dir, cfg->self);
  return 1;
}

/* Removes the run's temporary folder and the files in it. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

static FILE *open_output(const char *what, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    char shown[CLI_QUOTE_BUF];
    cli_error("cannot write %s '%s': %s", what, cli_quote(shown, path),
              cli_strerror(errno));
  }
  return f;
}

/* Runs the chosen workloads in order, each followed by the purge of its
 * queues; returns the exit status. */
static int run_workloads(struct bench_config *cfg, jobq *db, const int *want,
                         struct bench_report *rep) {
  int status = CLI_EXIT_OK;
  for (size_t i = 0; i < NWORKLOADS; i++) {
    if (!want[i]) continue;
    struct bench_run *run = &rep->runs[rep->nruns++];
    memset(run, 0, sizeof *run);
    run->name = workload_names[i];
    run->verified = -1;
    if (bench_stop) {
      run->status = BENCH_SKIPPED;
      snprintf(run->why, sizeof run->why, "interrupted before it started");
      continue;
    }
    double t0 = bench_now();
    run->status = workload_fns[i](cfg, db, rep, run);
    run->seconds = bench_now() - t0;
    if (run->status == BENCH_FAILED && bench_stop) {
      run->status = BENCH_INTERRUPTED;
    } else if (run->status == BENCH_FAILED) {
      char *line = cli_escape(run->why, strlen(run->why));
      cli_error("%s: %s", run->name, line);
      free(line);
      status = CLI_EXIT_ERROR;
    } else if (run->status == BENCH_SKIPPED) {
      cli_error("%s: not run: %s", run->name, run->why);
    }
    if (bench_cleanup(db) != 0) status = CLI_EXIT_ERROR;
  }
  /* The library drain as a share of what bare SQL claims reach: in one
   * transaction, fenced in two, and archived as well. */
  static const char *const shares[][2] = {{"bare sql", "of ceiling"},
                                          {"fenced sql", "of fenced ceiling"},
                                          {"archived sql", "of archived ceiling"}};
  double lib = bench_find(rep, "drain", "library", "throughput");
  for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++) {
    double ceiling = bench_find(rep, "ceiling", shares[i][0], "throughput");
    if (lib > 0 && ceiling > 0)
      bench_add(rep, "drain", "library", shares[i][1], 100 * lib / ceiling, "%");
  }
  /* Batched enqueue as a share of the bare bulk INSERT of the same rows. */
  double insert = bench_find(rep, "ceiling", "bare insert", "throughput");
  for (size_t i = 0; i < rep->nresults && insert > 0; i++) {
    const struct bench_result *r = &rep->results[i];
    if (strcmp(r->workload, "enqueue") == 0 && strncmp(r->variant, "batched", 7) == 0 &&
        strcmp(r->metric, "throughput") == 0) {
      char variant[sizeof r->variant];
      double share = 100 * r->value / insert;
      snprintf(variant, sizeof variant, "%s", r->variant);
      bench_add(rep, "enqueue", variant, "of bare insert", share, "%");
      break;
    }
  }
  /* And the persistent foreman's start latency over the bare SQL's. */
  double p50 = bench_find(rep, "latency", "persistent", "p50");
  double floor = bench_find(rep, "ceiling", "latency floor", "p50");
  if (p50 > 0 && floor > 0)
    bench_add(rep, "latency", "persistent", "p50 over floor", p50 / floor, "x");
  return status;
}

static int run(int argc, char **argv) {
  cli_set_command("bench");
  if (argc == 2 && strcmp(argv[1], "--internal-worker") == 0)
    return bench_internal_worker(0);
  if (argc == 2 && strcmp(argv[1], "--internal-worker-stamp") == 0)
    return bench_internal_worker(1);
  if (argc == 2 && strcmp(argv[1], "--internal-stamp") == 0) return bench_internal_stamp();
  const char *workload = NULL, *jobs = NULL, *conc = NULL, *batch = NULL;
  const char *backlog = NULL, *seconds = NULL, *rate = NULL, *csv = NULL, *plot = NULL,
             *limit = NULL, *parts = NULL;
  const struct cli_option options[] = {
      CLI_STRING('w', "workload", &workload, "NAME",
                 "all (default: every one but soak), or a comma list of " WORKLOAD_LIST),
      CLI_STRING('n', "jobs", &jobs, "N",
                 "jobs per drain (default 100000 on SQLite, 50000 on servers); the "
                 "other workloads scale from it"),
      CLI_STRING('c', "concurrency", &conc, "N",
                 "claimer processes or workers, 1 to 256 (default 4); caps scale"),
      CLI_STRING(0, "batch", &batch, "N",
                 "jobs per claim (drain 100, scale 10) or per put (enqueue 1000), "
                 "1 to 1000"),
      CLI_STRING(0, "backlog", &backlog, "N",
                 "ready and archived jobs of the backlog workload (default 1000000)"),
      CLI_STRING(0, "seconds", &seconds, "S",
                 "how long latency puts jobs, at 50 a second (default: 500 jobs), "
                 "an idle foreman is watched (default 10) and soak runs "
                 "(default 1800)"),
      CLI_STRING(0, "rate", &rate, "N", "jobs a second that soak puts (default 5000) and latency (default 50)"),
      CLI_STRING(0, "limit", &limit, "KIND",
                 "a limit on the queues that drain, scale and the others fill, never "
                 "reached, to measure its cost: running, per-key (every job a key of its "
                 "own), rate or rate-per-key (every job a key of its own) (default none)"),
      CLI_STRING(0, "parts", &parts, "K",
                 "scale splits its queue into K parts per claimer (jobq parts), 1 to 16 "
                 "(default: one part; skew: one part per claimer)"),
      CLI_STRING(0, "csv", &csv, "FILE", "also write one row per measurement to FILE"),
      CLI_STRING(0, "plot", &plot, "FILE.svg",
                 "also draw the throughputs and latencies into an SVG file"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;

  struct bench_config cfg;
  memset(&cfg, 0, sizeof cfg);
  int want[NWORKLOADS];
  int64_t parts_per = 0;
  cfg.backlog = 1000000;
  if (parse_workloads(workload, want) ||
      count("--jobs", jobs, 1, 100000000, &cfg.jobs) ||
      count("--concurrency", conc, 1, 256, &cfg.concurrency) ||
      count("--batch", batch, 1, 1000, &cfg.batch) ||
      count("--backlog", backlog, 1, 100000000, &cfg.backlog) ||
      count("--seconds", seconds, 1, 86400, &cfg.seconds) ||
      count("--rate", rate, 1, 10000000, &cfg.rate) ||
      count("--parts", parts, 1, 16, &parts_per))
    return CLI_EXIT_USAGE;
  bench_parts = (int)parts_per;
  static const char *const limits[] = {"none", "running", "per-key", "rate", "rate-per-key"};
  for (int i = 0; limit != NULL && i < 5; i++)
    if (strcmp(limit, limits[i]) == 0) bench_limit = i, limit = NULL;
  if (limit != NULL) {
    char shown[CLI_QUOTE_BUF];
    cli_error("invalid --limit '%s': expected none, running, per-key, rate or rate-per-key",
              cli_quote(shown, limit));
    return CLI_EXIT_USAGE;
  }
  if (plot != NULL && !ends_with(plot, ".svg")) {
    char shown[CLI_QUOTE_BUF];
    cli_error("invalid --plot '%s': expected a file name ending in .svg",
              cli_quote(shown, plot));
    return CLI_EXIT_USAGE;
  }
  if (csv != NULL && csv[0] == '\0') {
    cli_error("invalid --csv '': expected a file name");
    return CLI_EXIT_USAGE;
  }
  ssize_t len = readlink("/proc/self/exe", cfg.self, sizeof cfg.self - 1);
  if (len <= 0) {
    cli_error("cannot find this program in /proc/self/exe: %s", cli_strerror(errno));
    return CLI_EXIT_ERROR;
  }
  cfg.self[len] = '\0';
  if (find_jobq(&cfg)) return CLI_EXIT_ERROR;
  cfg.pid = (long)getpid();
  const char *tmp = getenv("TMPDIR");
  snprintf(cfg.dir, sizeof cfg.dir, "%s/jobq-bench.XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  if (mkdtemp(cfg.dir) == NULL) {
    cli_error("cannot make a temporary folder in '%s': %s",
              tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", cli_strerror(errno));
    return CLI_EXIT_ERROR;
  }

  /* A bare `jobq bench` never touches the user's jobq.db. */
  char temp_url[PATH_MAX + 16];
  int temporary = !cli_db_named();
  if (temporary) {
    snprintf(temp_url, sizeof temp_url, "sqlite:%s/bench.db", cfg.dir);
    cli_global.db = temp_url;
    cfg.child_db = temp_url;
  } else {
    /* NULL: the children find it in the environment as this one did. */
    cfg.child_db = cli_global.db != NULL || cli_global.db_file != NULL ? cli_db_url()
                                                                      : NULL;
  }
  cfg.url = cli_db_url();
  cfg.shown = jobq_url_redact(cfg.url);
  if (cfg.shown == NULL) cli_oom();
  cfg.store = store_of(cfg.url);
  if (cfg.jobs == 0) cfg.jobs = cfg.store == BENCH_SQLITE ? 100000 : 50000;

  FILE *csv_file = NULL, *plot_file = NULL;
  jobq *db = NULL;
  int status = CLI_EXIT_OK;
  if (csv != NULL && (csv_file = open_output("--csv", csv)) == NULL) status = CLI_EXIT_ERROR;
  if (status == 0 && plot != NULL && (plot_file = open_output("--plot", plot)) == NULL)
    status = CLI_EXIT_ERROR;
  if (status == 0) status = cli_open(&db);
  if (status == 0 && bench_sql_load(cfg.store) != 0) status = CLI_EXIT_ERROR;
  /* One clear error, rather than one for each workload, when the database
   * cannot be worked on (no jobq schema, say). */
  int64_t now;
  if (status == 0) status = cli_db_now(db, &now);
  if (status == 0) {
    if (temporary)
      cli_error("using a temporary SQLite database, %s/bench.db, deleted at the end",
                cfg.dir);
    else
      cli_error("using the database %s", cfg.shown);
    bench_machine_read(&cfg, db);
    bench_machine_print(&cfg);
  }

  struct bench_report rep;
  memset(&rep, 0, sizeof rep);
  if (status == 0) {
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    status = run_workloads(&cfg, db, want, &rep);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    bench_print(&cfg, &rep);
    if (csv_file != NULL && bench_write_csv(csv_file, &rep) != 0) {
      cli_error("cannot write --csv '%s': %s", csv, cli_strerror(errno));
      status = cli_worst(status, CLI_EXIT_ERROR);
    }
    if (plot_file != NULL && bench_write_svg(plot_file, &cfg, &rep) != 0) {
      cli_error("cannot write --plot '%s': %s", plot, cli_strerror(errno));
      status = cli_worst(status, CLI_EXIT_ERROR);
    }
    if (bench_stop) {
      cli_error("interrupted: the jobs of the run were removed");
      status = 128 + SIGINT;
    }
  }
  if (csv_file != NULL && fclose(csv_file) != 0 && status == 0) status = CLI_EXIT_ERROR;
  if (plot_file != NULL && fclose(plot_file) != 0 && status == 0) status = CLI_EXIT_ERROR;
  jobq_close(db);
  bench_report_release(&rep);
  remove_dir(cfg.dir);
  free(cfg.shown);
  return status;
}

int main(int argc, char **argv) {
  int status = run(argc, argv);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    cli_error("cannot write to stdout: %s", cli_strerror(errno));
    if (status == CLI_EXIT_OK) status = CLI_EXIT_ERROR;
  }
  return status;
}
