/*
 * cmd_cancel.c - `jobq cancel`: cancels jobs by id, or every unfinished
 * job of a queue (by state and ordering key: jobq_cancel_jobs, in parts,
 * with a count, a progress bar on a terminal, a dry run and a quiet
 * mode).  A ready or waiting job is archived as cancelled at once; a
 * running job gets a cancel request that its worker sees on its next
 * heartbeat.
 */
#include <string.h>

#include "builtin.h"
#include "jobopts.h"

static const char usage[] =
    "usage: jobq cancel ID...\n"
    "   or: jobq cancel --queue QUEUE [--state S] [--key K] [--dry-run] [--quiet]\n"
    "\n"
    "Cancels each job: a ready, scheduled, waiting or pending job is\n"
    "archived as cancelled at once ('job ID cancelled'), and the pending\n"
    "jobs put after it with it; a running job is asked to stop and ends as\n"
    "cancelled when its worker sees the request ('job ID cancel requested\n"
    "(running)').  A dead job that blocks its ordering key is marked\n"
    "cancelled so the key proceeds.  A job that cannot be cancelled is\n"
    "reported and the exit status is the worst of all.\n"
    "\n"
    "With --queue, every unfinished job of QUEUE, or those in state S\n"
    "(ready, scheduled, running, waiting, pending) and of ordering key K, in\n"
    "transactions of about 1000 jobs with a progress bar on a terminal;\n"
    "prints 'cancelled N jobs, asked M running jobs to stop'.\n";

static int cancel_one(jobq *db, int64_t id, const char **word,
                      const char **text) {
  int now = 0;
  int rc = jobq_cancel(db, id, &now);
  *word = now ? "cancelled" : "cancel_requested";
  *text = now ? "cancelled" : "cancel requested (running)";
  return rc;
}

static int count_jobs(jobq *db, const jobq_bulk_opts *o, int64_t *n, void *arg) {
  (void)arg;
  int64_t cancelled = 0, requested = 0;
  int rc = jobq_cancel_jobs(db, o, &cancelled, &requested);
  *n = cancelled + requested;
  return rc;
}

static int cancel_queue(jobq_bulk_opts *o, int quiet) {
  jobq *db;
  int rc = cli_open(&db);
  if (rc != 0) return rc;
  struct cli_progress bar;
  int64_t cancelled = 0, requested = 0;
  cli_progress_bulk(db, o, quiet, &bar, "jobq cancel:", count_jobs, NULL);
  rc = jobq_cancel_jobs(db, o, &cancelled, &requested);
  cli_progress_end(&bar);
  if (rc != JOBQ_OK) {
    rc = cli_print_parts(db, rc, "cancelled", cancelled + requested, "job");
  } else if (quiet) {
  } else if (cli_global.json) {
    json_t *doc = cli_json_object();
    cli_json_set(doc, "cancelled", json_integer(cancelled));
    cli_json_set(doc, "cancel_requested", json_integer(requested));
    cli_json_set(doc, "dry_run", json_boolean(o->dry_run));
    cli_json_print(doc);
  } else {
    printf("%scancel%s %lld job%s, %s %lld running job%s to stop\n",
           o->dry_run ? "would " : "", o->dry_run ? "" : "led", (long long)cancelled,
           cancelled == 1 ? "" : "s", o->dry_run ? "ask" : "asked", (long long)requested,
           requested == 1 ? "" : "s");
  }
  jobq_close(db);
  return rc;
}

static int run(int argc, char **argv) {
  const char *queue = NULL, *state = NULL, *key = NULL;
  int dry_run = 0, quiet = 0;
  const struct cli_option options[] = {
      CLI_STRING('q', "queue", &queue, "QUEUE", "every unfinished job of QUEUE"),
      CLI_STRING('s', "state", &state, "S",
                 "with --queue: only jobs in S: ready, scheduled, running, waiting, pending"),
      CLI_STRING(0, "key", &key, "K", "with --queue: only jobs of ordering key K"),
      CLI_FLAG(0, "dry-run", &dry_run, "with --queue: count the jobs; cancel nothing"),
      CLI_FLAG(0, "quiet", &quiet, "with --queue: print nothing but errors"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  char shown[CLI_QUOTE_BUF];
  if (queue == NULL) {
    const char *alone = state ? "--state" : key ? "--key" : dry_run ? "--dry-run" : quiet ? "--quiet" : NULL;
    if (alone != NULL) {
      cli_error("%s needs --queue: expected 'jobq cancel --queue QUEUE %s ...'", alone, alone);
      return CLI_EXIT_USAGE;
    }
    if (argc == 1) {
      cli_error("missing job ids: expected 'jobq cancel ID...' or 'jobq cancel --queue QUEUE'");
      return CLI_EXIT_USAGE;
    }
    return cli_each_job(argc - 1, argv + 1, cancel_one);
  }
  if (argc > 1) {
    cli_error("unexpected argument '%s': with --queue the jobs are chosen by --state and --key",
              cli_quote(shown, argv[1]));
    return CLI_EXIT_USAGE;
  }
  if (cli_check_queue("--queue", queue)) return CLI_EXIT_USAGE;
  jobq_bulk_opts o;
  jobq_bulk_opts_init(&o);
  o.queue = queue;
  o.key = key;
  o.dry_run = dry_run;
  if (state != NULL) {
    o.state = jobq_state_parse(state);
    if (o.state != JOBQ_STATE_READY && o.state != JOBQ_STATE_RUNNING &&
        o.state != JOBQ_STATE_WAITING && o.state != JOBQ_STATE_PENDING) {
      cli_error("invalid --state '%s': expected one of ready, scheduled, running, waiting, "
                "pending",
                cli_quote(shown, state));
      return CLI_EXIT_USAGE;
    }
    if (o.state == JOBQ_STATE_READY) o.scheduled = strcmp(state, "scheduled") == 0 ? 1 : -1;
  }
  if (key != NULL && cli_check_key("--key", key)) return CLI_EXIT_USAGE;
  return cancel_queue(&o, quiet);
}

const struct cli_command cli_cmd_cancel = {
    "cancel", "cancel jobs, or ask their workers to stop them", run};
