/*
 * cmd_cron.c - `jobq cron`: periodic jobs.  Schedules live in the
 * database (jobq_cron_add and the rest, include/jobq.h); every foreman
 * puts the jobs of the slots due with its heartbeat, and `jobq cron run`
 * does it for a machine without one, once or in a loop.  One command with
 * subcommands (add, ls, rm, pause, resume, run), each with the skeleton of
 * a command: usage, options, parse, work, status.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builtin.h"
#include "jobopts.h"

static const char usage[] =
    "usage: jobq cron add NAME [options] SPEC [PAYLOAD | -]\n"
    "   or: jobq cron ls\n"
    "   or: jobq cron rm NAME...\n"
    "   or: jobq cron pause NAME...\n"
    "   or: jobq cron resume NAME...\n"
    "   or: jobq cron run [--loop]\n"
    "\n"
    "Periodic jobs.  A schedule puts a job at each of its slots: SPEC is five\n"
    "cron fields (minute hour day-of-month month day-of-week, like '*/15 * *\n"
    "* *' or '0 3 * * mon-fri'), @hourly, @daily, @weekly, @monthly,\n"
    "@yearly, or @every D (like @every 30s).  Every running foreman puts the\n"
    "jobs of the slots due; 'jobq cron run' does it on a machine without one.\n"
    "Each slot is put once, however many of them run.  Run 'jobq cron\n"
    "COMMAND --help' for the options of each.\n";

static const char add_usage[] =
    "usage: jobq cron add NAME [options] SPEC [PAYLOAD | -]\n"
    "\n"
    "Adds the schedule NAME, which puts a job with PAYLOAD (none when it is\n"
    "absent; stdin for '-') into its queue at each slot of SPEC, read on the\n"
    "clock of --tz.  Prints its first slot.  A schedule of that name is\n"
    "refused unless --replace is given.  When nothing ran at some slots, the\n"
    "latest of them is put once when something runs again (never a burst),\n"
    "or, with --skip-missed, nothing for a slot found more than a minute\n"
    "late.  Around daylight-saving changes it runs as cron does: a job at a\n"
    "fixed time that the clock skips runs at the change, and once when the\n"
    "clock repeats it; a job with '*' in its minute or hour follows the\n"
    "clock.\n";

static const char ls_usage[] =
    "usage: jobq cron ls\n"
    "\n"
    "Lists the schedules: name, queue, spec and zone, next slot, last slot\n"
    "put, and whether it is paused; with --json, everything of each.\n";

static const char rm_usage[] =
    "usage: jobq cron rm NAME...\n"
    "\n"
    "Deletes the schedules; the jobs they put stay.  Prints 'removed NAME'.\n";

static const char pause_usage[] =
    "usage: jobq cron pause NAME...\n"
    "\n"
    "Stops the schedules from putting jobs.  Prints 'paused NAME'.\n";

static const char resume_usage[] =
    "usage: jobq cron resume NAME...\n"
    "\n"
    "Starts paused schedules again from their next slot after now (the\n"
    "slots of the pause are not put).  Prints 'resumed NAME'.\n";

static const char run_usage[] =
    "usage: jobq cron run [--loop]\n"
    "\n"
    "Puts the jobs of the slots due now, on the database clock, and prints\n"
    "each ('put job ID of NAME (slot TIME)').  With --loop it goes on until\n"
    "SIGINT or SIGTERM, waking for each slot: for a machine with no foreman\n"
    "('jobq work' does this with its heartbeat).  Any number may run at\n"
    "once, here and on other machines: each slot is put once.\n";

/* ---------------------------------------------------------------- add */

static int cron_add(int argc, char **argv) {
  struct cli_job_args a;
  memset(&a, 0, sizeof a);
  const char *tz = NULL;
  int skip_missed = 0, replace = 0;
  const struct cli_option options[] = {
      CLI_JOB_WHAT_OPTIONS(&a),
      CLI_STRING(0, "tz", &tz, "ZONE",
                 "read SPEC on the clock of ZONE, like Europe/Berlin (default UTC)"),
      CLI_FLAG(0, "skip-missed", &skip_missed,
               "put nothing for a slot found more than a minute late"),
      CLI_FLAG(0, "replace", &replace, "change the schedule NAME if there is one"),
      CLI_JOB_HOW_OPTIONS(&a),
      CLI_END};
  int rc = cli_parse_options(add_usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc < 3) {
    cli_error("missing %s: expected 'jobq cron add NAME SPEC [PAYLOAD]'",
              argc < 2 ? "name and spec" : "spec");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 3, "NAME SPEC [PAYLOAD] (quote SPEC: it has spaces)"))
    return CLI_EXIT_USAGE;
  jobq_cron_opts o;
  jobq_cron_opts_init(&o);
  o.name = argv[1];
  o.spec = argv[2];
  o.tz = tz;
  o.skip_missed = skip_missed;
  o.replace = replace;
  if (cli_check_queue("schedule name", o.name)) return CLI_EXIT_USAGE;
  if ((rc = cli_job_check(&a, &o.job)) != 0) return rc;
  if ((rc = cli_check_max_payload()) != 0) return rc;
  char *data = NULL;
  if (argc > 3 && strcmp(argv[3], "-") == 0) {
    size_t max = cli_payload_limit(), len;
    int r = cli_read_all(stdin, max, &data, &len);
    if (r != 0) {
      if (r < 0) cli_error("cannot read the payload from stdin: %s", cli_strerror(errno));
      if (r > 0) cli_error("payload on stdin is over the limit of %zu bytes", max);
      return r < 0 ? CLI_EXIT_ERROR : CLI_EXIT_USAGE;
    }
    o.job.payload = data;
    o.job.payload_len = len;
  } else if (argc > 3) {
    o.job.payload = argv[3];
    o.job.payload_len = strlen(argv[3]);
  }

  jobq *db;
  if ((rc = cli_open(&db)) != 0) {
    free(data);
    return rc;
  }
  int64_t next = 0;
  int replaced = 0;
  rc = jobq_cron_add(db, &o, &next, &replaced);
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else if (cli_global.json) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "name", json_string(o.name));
    cli_json_set(doc, "replaced", json_boolean(replaced));
    cli_json_set(doc, "next_at", cli_json_time(next));
    cli_json_print(doc);
  } else {
    char when[CLI_TIME_BUF];
    printf("%s %s: next slot %s\n", replaced ? "replaced" : "added", o.name,
           cli_fmt_time(when, next));
  }
  jobq_close(db);
  free(data);
  return rc;
}

/* ---------------------------------------------------------------- ls */

static json_t *info_json(const jobq_cron_info *c) {
  const jobq_put_opts *j = &c->job;
  json_t *o = cli_json_object();
  cli_json_set(o, "name", json_string(c->name));
  cli_json_set(o, "queue", json_string(j->queue));
  cli_json_set(o, "spec", json_string(c->spec));
  cli_json_set(o, "tz", json_string(c->tz));
  cli_json_set(o, "paused", json_boolean(c->paused));
  cli_json_set(o, "skip_missed", json_boolean(c->skip_missed));
  cli_json_set(o, "next_at", cli_json_time(c->next_ms));
  cli_json_set(o, "last_at", cli_json_time(c->last_ms));
  cli_json_set(o, "last_error", cli_json_str(c->last_error));
  cli_json_bytes(o, "payload", j->payload, j->payload_len);
  cli_json_set(o, "priority", json_integer(j->priority));
  cli_json_set(o, "key", cli_json_str(j->key));
  cli_json_set(o, "barrier", json_boolean(j->barrier));
  cli_json_set(o, "unique", cli_json_str(j->unique_key));
  cli_json_set(o, "max_attempts", json_integer(j->max_attempts));
  cli_json_set(o, "timeout_ms", json_integer(j->timeout_ms));
  cli_json_set(o, "backoff_ms", json_integer(j->backoff_ms));
  cli_json_set(o, "created_at", cli_json_time(c->created_at_ms));
  cli_json_set(o, "updated_at", cli_json_time(c->updated_at_ms));
  return o;
}

static void print_infos(const jobq_cron_info *v, size_t n, int64_t now) {
  if (cli_global.json) {
    json_t *doc = cli_json_object(), *arr = json_array();
    if (arr == NULL) cli_oom();
    for (size_t i = 0; i < n; i++)
      if (json_array_append_new(arr, info_json(&v[i])) != 0) cli_oom();
    cli_json_set(doc, "schedules", arr);
    cli_json_print(doc);
    return;
  }
  static const struct cli_column cols[] = {{"NAME", 0}, {"QUEUE", 0}, {"SPEC", 0},
                                           {"TZ", 0},   {"NEXT", 0},  {"LAST", 0},
                                           {"STATE", 0}};
  struct cli_table t;
  cli_table_init(&t, cols, sizeof cols / sizeof cols[0]);
  for (size_t i = 0; i < n; i++) {
    const jobq_cron_info *c = &v[i];
    char next[CLI_TIME_BUF], last[CLI_TIME_BUF];
    char *spec = cli_escape_str(c->spec, "");
    cli_table_cell(&t, "%s", c->name);
    cli_table_cell(&t, "%s", c->job.queue);
    cli_table_cell(&t, "%s", spec);
    cli_table_cell(&t, "%s", c->tz);
    cli_table_cell(&t, "%s", c->paused ? "-" : cli_fmt_relative(next, c->next_ms, now));
    cli_table_cell(&t, "%s", c->last_ms ? cli_fmt_relative(last, c->last_ms, now) : "-");
    if (c->last_error != NULL) {
      char *err = cli_escape_str(c->last_error, "");
      cli_cut(err, 60);
      cli_table_cell(&t, "%s: %s", c->paused ? "paused, error" : "error", err);
      free(err);
    } else {
      cli_table_cell(&t, "%s", c->paused ? "paused" : "active");
    }
    free(spec);
  }
  cli_table_print(&t);
  cli_table_release(&t);
}

static int cron_ls(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(ls_usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;
  jobq *db;
  if ((rc = cli_open_readonly(&db)) != 0) return rc;
  int64_t now;
  jobq_cron_info *v = NULL;
  size_t n = 0;
  if ((rc = cli_db_now(db, &now)) == 0) {
    int err = jobq_cron_list(db, &v, &n);
    if (err != JOBQ_OK)
      rc = cli_lib_error(db, err);
    else
      print_infos(v, n, now);
  }
  jobq_cron_info_free(v, n);
  jobq_close(db);
  return rc;
}

/* ---------------------------------------------------------------- rm, pause, resume */

/* One of them for each name: act and the word it prints. */
static int cron_each(int argc, char **argv, const char *use,
                     int (*act)(jobq *, const char *), const char *word) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(use, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc < 2) {
    cli_error("missing schedule names: expected 'jobq cron %s NAME...'", argv[0]);
    return CLI_EXIT_USAGE;
  }
  for (int i = 1; i < argc; i++)
    if (cli_check_queue("schedule name", argv[i])) return CLI_EXIT_USAGE;
  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  json_t *arr = cli_global.json ? json_array() : NULL;
  if (cli_global.json && arr == NULL) cli_oom();
  for (int i = 1; i < argc; i++) {
    int err = act(db, argv[i]);
    if (err != JOBQ_OK) rc = cli_worst(rc, cli_lib_error(db, err));
    if (arr != NULL) {
      json_t *o = cli_json_object();
      cli_json_set(o, "name", json_string(argv[i]));
      cli_json_set(o, "status", json_string(err == JOBQ_OK ? word : "error"));
      if (err != JOBQ_OK) cli_json_set(o, "error", json_string(jobq_errmsg(db)));
      if (json_array_append_new(arr, o) != 0) cli_oom();
    } else if (err == JOBQ_OK) {
      printf("%s %s\n", word, argv[i]);
    }
  }
  if (arr != NULL) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "schedules", arr);
    cli_json_print(doc);
  }
  jobq_close(db);
  return rc;
}

static int cron_rm(int argc, char **argv) {
  return cron_each(argc, argv, rm_usage, jobq_cron_remove, "removed");
}
static int cron_pause(int argc, char **argv) {
  return cron_each(argc, argv, pause_usage, jobq_cron_pause, "paused");
}
static int cron_resume(int argc, char **argv) {
  return cron_each(argc, argv, resume_usage, jobq_cron_resume, "resumed");
}

/* ---------------------------------------------------------------- run */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

/* Prints what a run did; returns 1 when a slot's job could not be put. */
static int print_slots(const jobq_cron_slot *s, size_t n, int64_t wait_ms, int loop) {
  int failed = 0;
  json_t *arr = cli_global.json && !loop ? json_array() : NULL;
  if (cli_global.json && !loop && arr == NULL) cli_oom();
  for (size_t i = 0; i < n; i++) {
    char when[CLI_TIME_BUF];
    cli_fmt_time(when, s[i].slot_ms);
    failed |= s[i].error != NULL;
    if (s[i].error != NULL) cli_error("schedule %s, slot %s: %s", s[i].name, when, s[i].error);
    if (cli_global.json) {
      json_t *o = cli_json_object();
      cli_json_set(o, "name", json_string(s[i].name));
      cli_json_set(o, "slot", cli_json_time(s[i].slot_ms));
      cli_json_set(o, "id", s[i].id ? json_integer(s[i].id) : json_null());
      cli_json_set(o, "existed", json_boolean(s[i].existed));
      cli_json_set(o, "skipped", json_boolean(s[i].skipped));
      cli_json_set(o, "error", cli_json_str(s[i].error));
      if (arr == NULL)
        cli_json_print(o);
      else if (json_array_append_new(arr, o) != 0)
        cli_oom();
    } else if (s[i].skipped) {
      printf("skipped the missed slot %s of %s\n", when, s[i].name);
    } else if (s[i].existed) {
      printf("job %lld of %s (slot %s) already existed: its unique key is taken\n",
             (long long)s[i].id, s[i].name, when);
    } else if (s[i].error == NULL) {
      printf("put job %lld of %s (slot %s)\n", (long long)s[i].id, s[i].name, when);
    }
  }
  if (arr != NULL) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "slots", arr);
    cli_json_set(doc, "wait_ms", wait_ms >= 0 ? json_integer(wait_ms) : json_null());
    cli_json_print(doc);
  } else if (!loop && n == 0 && !cli_global.json) {
    char in[CLI_TIME_BUF];
    if (wait_ms >= 0)
      printf("no slot due: the next is %s\n", cli_fmt_relative(in, wait_ms, 0));
    else
      printf("no slot due: there is no active schedule\n");
  }
  if (loop) fflush(stdout);
  return failed;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL); /* a signal ends it early */
}

/* How long a loop sleeps at most: schedules added elsewhere are seen
 * within this. */
#define LOOP_WAIT_MAX_MS 1000

static int cron_run(int argc, char **argv) {
  int loop = 0;
  const struct cli_option options[] = {
      CLI_FLAG(0, "loop", &loop, "go on until SIGINT or SIGTERM, waking for each slot"),
      CLI_END};
  int rc = cli_parse_options(run_usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;
  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  if (loop) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }
  int64_t pause_ms = 0;
  do {
    jobq_cron_slot *slots = NULL;
    size_t n = 0;
    int64_t wait_ms = -1;
    int err = jobq_cron_run(db, &slots, &n, &wait_ms);
    if (err == JOBQ_OK) {
      if (print_slots(slots, n, wait_ms, loop) && !loop) rc = CLI_EXIT_ERROR;
      pause_ms = wait_ms >= 0 && wait_ms < LOOP_WAIT_MAX_MS ? wait_ms : LOOP_WAIT_MAX_MS;
    } else {
      rc = cli_lib_error(db, err);
      /* A loop outlives what may heal (a restart of the server). */
      if (!loop || rc != CLI_EXIT_TEMP) loop = 0;
      pause_ms = 5000;
    }
    jobq_cron_slots_free(slots, n);
    if (loop && !stop_signal) sleep_ms(pause_ms);
  } while (loop && !stop_signal);
  if (stop_signal) rc = CLI_EXIT_OK;
  jobq_close(db);
  return rc;
}

/* ---------------------------------------------------------------- command */

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
} subs[] = {{"add", cron_add},     {"ls", cron_ls},         {"rm", cron_rm},
            {"pause", cron_pause}, {"resume", cron_resume}, {"run", cron_run}};
#define NSUBS (sizeof subs / sizeof subs[0])

static int run(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    const struct cli_option options[] = {CLI_END};
    int rc = cli_parse_options(usage, options, &argc, argv);
    if (rc != CLI_PARSED) return rc;
    if (argc < 2) {
      cli_error("missing command: expected one of add, ls, rm, pause, resume, run");
      return CLI_EXIT_USAGE;
    }
  }
  static char name[32];
  for (size_t i = 0; i < NSUBS; i++) {
    if (strcmp(argv[1], subs[i].name) != 0) continue;
    snprintf(name, sizeof name, "cron %s", subs[i].name);
    cli_set_command(name);
    return subs[i].run(argc - 1, argv + 1);
  }
  const char *names[NSUBS];
  for (size_t i = 0; i < NSUBS; i++) names[i] = subs[i].name;
  char shown[CLI_QUOTE_BUF];
  const char *best = cli_suggest(argv[1], names, NSUBS);
  if (best != NULL)
    cli_error("unknown command '%s': did you mean '%s'?", cli_quote(shown, argv[1]), best);
  else
    cli_error("unknown command '%s': expected one of add, ls, rm, pause, resume, run",
              cli_quote(shown, argv[1]));
  return CLI_EXIT_USAGE;
}

const struct cli_command cli_cmd_cron = {
    "cron", "periodic jobs: add, list, pause and run schedules", run};
