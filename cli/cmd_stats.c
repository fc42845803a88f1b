/*
 * cmd_stats.c - `jobq stats`: per queue, how many jobs are ready,
 * scheduled, waiting, running, done, dead and cancelled, whether it is
 * paused, how old its oldest ready job is, its key policy and whether
 * a limit holds it back; once, or with --watch again every interval until
 * interrupted.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../web/web.h"
#include "builtin.h"

static const char usage[] =
    "usage: jobq stats [--watch [--interval D]] [--json | --prometheus]\n"
    "\n"
    "Prints one line per queue: jobs ready to run now, scheduled for later,\n"
    "waiting for their ordering key or a barrier, pending until the jobs\n"
    "they were put after are done (--after), running, and the archived\n"
    "done, dead and cancelled ones (until pruned); whether the queue is\n"
    "paused, the age of its oldest ready job, its key policy, and its limits\n"
    "(jobq limit): '-' for none, 'held' when they hold ready jobs back; and\n"
    "its parts (jobq parts) with how many have no live owner.  With\n"
    "--watch, prints again every interval (the screen is redrawn on a\n"
    "terminal; with --json, one document per line) until interrupted.\n"
    "With --prometheus, prints what `jobq web` serves at /metrics, in\n"
    "Prometheus' text format (for node_exporter's textfile collector).\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

/* The queue's limits among lim[0..nl), or NULL. */
static const jobq_limits *limits_of(const char *queue, const jobq_limits *lim, size_t nl) {
  for (size_t i = 0; i < nl; i++)
    if (strcmp(lim[i].queue, queue) == 0) return &lim[i];
  return NULL;
}

static void print_stats(const jobq_queue_stats *st, size_t n, const jobq_limits *lim,
                        size_t nl) {
  char age[CLI_TIME_BUF];
  if (cli_global.json) {
    json_t *list = json_array();
    if (list == NULL) cli_oom();
    for (size_t i = 0; i < n; i++) {
      json_t *o = cli_json_object();
      if (json_array_append_new(list, o) != 0) cli_oom();
      cli_json_set(o, "name", cli_json_str(st[i].name));
      cli_json_set(o, "ready", json_integer(st[i].ready));
      cli_json_set(o, "scheduled", json_integer(st[i].scheduled));
      cli_json_set(o, "waiting", json_integer(st[i].waiting));
      cli_json_set(o, "running", json_integer(st[i].running));
      cli_json_set(o, "done", json_integer(st[i].done));
      cli_json_set(o, "dead", json_integer(st[i].dead));
      cli_json_set(o, "cancelled", json_integer(st[i].cancelled));
      cli_json_set(o, "pending", json_integer(st[i].pending));
      cli_json_set(o, "paused", json_boolean(st[i].paused));
      cli_json_set(o, "oldest_ready_ms", json_integer(st[i].oldest_ready_ms));
      cli_json_set(o, "key_policy", cli_json_str(st[i].key_policy));
      cli_json_set(o, "parts", json_integer(st[i].parts));
      cli_json_set(o, "parts_unowned", json_integer(st[i].parts_unowned));
      const jobq_limits *l = limits_of(st[i].name, lim, nl);
      cli_json_set(o, "limited", json_boolean(l != NULL));
      cli_json_set(o, "held_by_limit", json_boolean(l != NULL && l->held));
    }
    json_t *doc = cli_json_object();
    cli_json_set(doc, "queues", list);
    cli_json_print(doc);
    return;
  }
  static const struct cli_column cols[] = {
      {"QUEUE", 0},   {"READY", 1},  {"SCHEDULED", 1}, {"WAITING", 1},
      {"PENDING", 1}, {"RUNNING", 1}, {"DONE", 1},   {"DEAD", 1},      {"CANCELLED", 1},
      {"PAUSED", 0},  {"OLDEST", 1}, {"POLICY", 0},     {"LIMIT", 0},   {"PARTS", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  for (size_t i = 0; i < n; i++) {
    cli_table_cell(&t, "%s", st[i].name);
    cli_table_cell(&t, "%lld", (long long)st[i].ready);
    cli_table_cell(&t, "%lld", (long long)st[i].scheduled);
    cli_table_cell(&t, "%lld", (long long)st[i].waiting);
    cli_table_cell(&t, "%lld", (long long)st[i].pending);
    cli_table_cell(&t, "%lld", (long long)st[i].running);
    cli_table_cell(&t, "%lld", (long long)st[i].done);
    cli_table_cell(&t, "%lld", (long long)st[i].dead);
    cli_table_cell(&t, "%lld", (long long)st[i].cancelled);
    cli_table_cell(&t, "%s", st[i].paused ? "yes" : "no");
    cli_table_cell(&t, "%s", st[i].ready > 0 ? cli_fmt_age(age, st[i].oldest_ready_ms)
                                             : "-");
    cli_table_cell(&t, "%s", st[i].key_policy ? st[i].key_policy : "block");
    const jobq_limits *l = limits_of(st[i].name, lim, nl);
    cli_table_cell(&t, "%s", l == NULL ? "-" : l->held ? "held" : "set");
    /* Parts: the count, and how many have no live owner. */
    if (st[i].parts > 1)
      cli_table_cell(&t, "%d (%d unowned)", st[i].parts, st[i].parts_unowned);
    else
      cli_table_cell(&t, "-");
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

/* Sleeps ms unless a signal asks to stop first. */
static void pause_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int run(int argc, char **argv) {
  const char *interval = NULL;
  int watch = 0, prometheus = 0;
  const struct cli_option options[] = {
      CLI_FLAG('w', "watch", &watch, "print again every interval until interrupted"),
      CLI_STRING(0, "interval", &interval, "D", "with --watch: how often (default 1s)"),
      CLI_FLAG(0, "prometheus", &prometheus, "print the metrics of /metrics in Prometheus' text format"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;
  int64_t every = 1000;
  if (prometheus && (watch || cli_global.json)) {
    cli_error("--prometheus prints once, alone: expected 'jobq stats --prometheus'");
    return CLI_EXIT_USAGE;
  }
  if (interval != NULL && !watch) {
    cli_error("--interval needs --watch: expected 'jobq stats --watch --interval D'");
    return CLI_EXIT_USAGE;
  }
  if (interval != NULL &&
      cli_parse_duration("--interval", interval, 100, 86400000, &every))
    return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  if (prometheus) {
    struct web_buf b = {0};
    int err = web_metrics(db, &b);
    if (err != JOBQ_OK) rc = cli_lib_error(db, err);
    else if (b.p == NULL) cli_oom();
    else fwrite(b.p, 1, b.len, stdout);
    free(b.p);
    jobq_close(db);
    return rc;
  }
  if (watch) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }
  int tty = cli_stdout_is_tty();
  char d[CLI_TIME_BUF];
  do {
    jobq_queue_stats *st;
    size_t n;
    jobq_limits *lim = NULL;
    size_t nl = 0;
    int err = jobq_stats(db, &st, &n);
    if (err == JOBQ_OK && (err = jobq_limits_list(db, NULL, &lim, &nl)) != JOBQ_OK)
      jobq_stats_free(st, n);
    if (err != JOBQ_OK) {
      rc = cli_lib_error(db, err);
      /* A busy or unreachable database may come back: keep watching. */
      if (!watch || rc != CLI_EXIT_TEMP) break;
    } else {
      rc = CLI_EXIT_OK;
      if (watch && tty && !cli_global.json)
        printf("\033[H\033[2Jevery %s, until interrupted\n\n",
               cli_fmt_duration(d, every));
      print_stats(st, n, lim, nl);
      jobq_stats_free(st, n);
      jobq_limits_free(lim, nl);
      if (watch && !tty && !cli_global.json) putchar('\n');
      fflush(stdout);
    }
    if (watch) pause_ms(every);
  } while (watch && !stop);
  jobq_close(db);
  /* Interrupting --watch is how it ends: that is success. */
  return stop && rc == CLI_EXIT_TEMP ? CLI_EXIT_OK : rc;
}

const struct cli_command cli_cmd_stats = {
    "stats", "counts of jobs per queue and state", run};
