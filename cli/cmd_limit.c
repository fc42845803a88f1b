/*
 * cmd_limit.c - `jobq limit`: shows, sets or removes a queue's limits:
 * how many of its jobs may run at once across every machine, how many
 * of one ordering key, and how many of the queue's or of one key's jobs
 * may start in a period of the database clock.  The database keeps
 * them and every claim enforces them (jobq.h, jobq_set_limits).
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq limit QUEUE [--running N|none] [--running-per-key N|none]\n"
    "                  [--rate N/PERIOD|none] [--rate-per-key N/PERIOD|none]\n"
    "                  [--clear]\n"
    "\n"
    "Limits the queue across every worker and machine: --running N, at most\n"
    "N of its jobs claimed at once; --running-per-key N, at most N of one\n"
    "ordering key (the queue's keys then limit and no longer order: a job\n"
    "put with a key is ready at once); --rate N/PERIOD (100/1s, 10/1m), at\n"
    "most N claimed in any PERIOD of the database clock (up to 1d);\n"
    "--rate-per-key N/PERIOD, at most N of one ordering key claimed in any\n"
    "PERIOD (keys still order; jobs without a key are not counted).  'none'\n"
    "removes one limit, --clear all of them; the other limits stay as they\n"
    "are.  Without options, prints the queue's limits, how many of its jobs\n"
    "run now and were claimed in the last period, how many keys used their\n"
    "whole rate, and whether a limit holds ready jobs back.\n";

/* Option's "N/PERIOD" into *n and *period_ms, or 2 after a message. */
static int parse_rate(const char *option, const char *text, int64_t *n,
                      int64_t *period_ms) {
  if (jobq_parse_rate(text, n, period_ms) == JOBQ_OK) return 0;
  char shown[CLI_QUOTE_BUF];
  cli_error(
      "invalid %s '%s': expected N/PERIOD, N from 1 to %d and PERIOD from 1ms to 1d, "
      "like 100/1s or 10/1m",
      option, cli_quote(shown, text), JOBQ_LIMIT_MAX);
  return CLI_EXIT_USAGE;
}

/* "250ms", "1s", "1m", "1h" or "1d" for ms, as short as it says. */
static void period_text(int64_t ms, char *out, size_t len) {
  static const struct { int64_t ms; const char *unit; } units[] = {
      {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (ms % units[i].ms == 0) {
      snprintf(out, len, "%lld%s", (long long)(ms / units[i].ms), units[i].unit);
      return;
    }
  snprintf(out, len, "%lldms", (long long)ms);
}

/* A rate as JSON: {"count": N, "period_ms": MS}, or null for none. */
static json_t *rate_json(int64_t n, int64_t period_ms) {
  if (n == 0) return json_null();
  json_t *rate = cli_json_object();
  cli_json_set(rate, "count", json_integer(n));
  cli_json_set(rate, "period_ms", json_integer(period_ms));
  return rate;
}

static void show(const char *queue, const jobq_limits *l) {
  char period[32] = "", key_period[32] = "";
  if (l->rate > 0) period_text(l->rate_period_ms, period, sizeof period);
  if (l->rate_per_key > 0)
    period_text(l->rate_per_key_period_ms, key_period, sizeof key_period);
  if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, "queue", json_string(queue));
    cli_json_set(o, "running", l->running > 0 ? json_integer(l->running) : json_null());
    cli_json_set(o, "running_per_key",
                 l->running_per_key > 0 ? json_integer(l->running_per_key) : json_null());
    cli_json_set(o, "rate", rate_json(l->rate, l->rate_period_ms));
    cli_json_set(o, "rate_per_key",
                 rate_json(l->rate_per_key, l->rate_per_key_period_ms));
    cli_json_set(o, "running_now", json_integer(l->running_now));
    cli_json_set(o, "claimed_now", json_integer(l->claimed_now));
    cli_json_set(o, "keys_full_now", json_integer(l->keys_full_now));
    cli_json_set(o, "held", json_boolean(l->held));
    cli_json_print(o);
    return;
  }
  if (l->running == 0 && l->rate == 0 && l->running_per_key == 0 &&
      l->rate_per_key == 0) {
    printf("%s: no limits\n", queue);
    return;
  }
  printf("%s:", queue);
  const char *sep = " ";
  if (l->running > 0) {
    printf("%srunning %lld/%lld", sep, (long long)l->running_now, (long long)l->running);
    sep = ", ";
  }
  if (l->running_per_key > 0) {
    printf("%s%lld per key", sep, (long long)l->running_per_key);
    sep = ", ";
  }
  if (l->rate > 0) {
    printf("%srate %lld/%lld per %s", sep, (long long)l->claimed_now, (long long)l->rate,
           period);
    sep = ", ";
  }
  if (l->rate_per_key > 0)
    printf("%srate %lld per %s per key (%lld %s used it)", sep,
           (long long)l->rate_per_key, key_period, (long long)l->keys_full_now,
           l->keys_full_now == 1 ? "key" : "keys");
  printf("%s\n", l->held ? " (held back)" : "");
}

static int run(int argc, char **argv) {
  const char *running = NULL, *per_key = NULL, *rate = NULL, *key_rate = NULL;
  int clear = 0;
  const struct cli_option options[] = {
      CLI_STRING(0, "running", &running, "N",
                 "at most N jobs claimed at once ('none': no limit)"),
      CLI_STRING(
          0, "running-per-key", &per_key, "N",
          "at most N jobs of one ordering key claimed at once; keys then do not order "
          "('none': no limit)"),
      CLI_STRING(0, "rate", &rate, "N/PERIOD",
                 "at most N jobs claimed in any PERIOD, like 100/1s ('none': no limit)"),
      CLI_STRING(0, "rate-per-key", &key_rate, "N/PERIOD",
                 "at most N jobs of one ordering key claimed in any PERIOD, like 5/1m "
                 "('none': no limit)"),
      CLI_FLAG(0, "clear", &clear, "remove every limit of the queue"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc < 2) {
    cli_error("missing queue: expected 'jobq limit QUEUE [options]'");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 1, "'jobq limit QUEUE [options]'"))
    return CLI_EXIT_USAGE;
  const char *queue = argv[1];
  if (cli_check_queue("queue name", queue)) return CLI_EXIT_USAGE;
  int setting = running != NULL || per_key != NULL || rate != NULL || key_rate != NULL;
  if (clear && setting) {
    cli_error("invalid --clear with another limit: expected one or the other");
    return CLI_EXIT_USAGE;
  }
  int64_t n_running = -1, n_per_key = -1, n_rate = -1, period = 0, n_key_rate = -1,
          key_period = 0;
  if (running != NULL && strcmp(running, "none") == 0) n_running = 0;
  else if (running != NULL && cli_parse_int("--running", running, 1, JOBQ_LIMIT_MAX, &n_running))
    return CLI_EXIT_USAGE;
  if (per_key != NULL && strcmp(per_key, "none") == 0) n_per_key = 0;
  else if (per_key != NULL &&
           cli_parse_int("--running-per-key", per_key, 1, JOBQ_LIMIT_MAX, &n_per_key))
    return CLI_EXIT_USAGE;
  if (rate != NULL && strcmp(rate, "none") == 0) n_rate = 0;
  else if (rate != NULL && parse_rate("--rate", rate, &n_rate, &period) != 0)
    return CLI_EXIT_USAGE;
  if (key_rate != NULL && strcmp(key_rate, "none") == 0)
    n_key_rate = 0;
  else if (key_rate != NULL &&
           parse_rate("--rate-per-key", key_rate, &n_key_rate, &key_period) != 0)
    return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  jobq_limits *cur = NULL, none = {0};
  size_t n = 0;
  rc = jobq_limits_list(db, queue, &cur, &n);
  const jobq_limits *was = n > 0 ? &cur[0] : &none;
  if (rc == JOBQ_OK && (clear || setting)) {
    /* The limits not named stay as they are. */
    jobq_limits set = {.running = was->running,
                       .rate = was->rate,
                       .rate_period_ms = was->rate_period_ms,
                       .running_per_key = was->running_per_key,
                       .rate_per_key = was->rate_per_key,
                       .rate_per_key_period_ms = was->rate_per_key_period_ms};
    if (clear) set = none;
    if (n_running >= 0) set.running = n_running;
    if (n_per_key >= 0) set.running_per_key = n_per_key;
    if (n_rate >= 0) set.rate = n_rate, set.rate_period_ms = period;
    if (n_key_rate >= 0)
      set.rate_per_key = n_key_rate, set.rate_per_key_period_ms = key_period;
    rc = jobq_set_limits(db, queue, &set);
    jobq_limits_free(cur, n);
    cur = NULL;
    n = 0;
    if (rc == JOBQ_OK) rc = jobq_limits_list(db, queue, &cur, &n);
    was = n > 0 ? &cur[0] : &none;
  }
  if (rc != JOBQ_OK) rc = cli_lib_error(db, rc);
  else show(queue, was);
  jobq_limits_free(cur, n);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_limit = {
    "limit",
    "show or set how many of a queue's or a key's jobs run at once or start per period",
    run};
