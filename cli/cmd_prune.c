/*
 * cmd_prune.c - `jobq prune`: deletes archived jobs (done, dead,
 * cancelled) that finished longer ago than a given duration, of every
 * queue or one, in parts (jobq_prune_jobs), with a count, a progress bar
 * on a terminal, a dry run and a quiet mode.
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq prune --older-than D [--queue QUEUE] [--dry-run] [--quiet]\n"
    "\n"
    "Deletes the archived jobs (done, dead, cancelled) that finished more\n"
    "than D ago (like 7d or 12h), of every queue or of QUEUE, and prints how\n"
    "many: 'pruned N jobs'.  Unfinished jobs, and a dead job that blocks its\n"
    "ordering key, are kept.  It works in transactions of about 10000 jobs,\n"
    "with a progress bar on a terminal.  Without --queue, the records of\n"
    "failed attempts as old go too.\n";

static int count_jobs(jobq *db, const jobq_bulk_opts *o, int64_t *n, void *ms) {
  return jobq_prune_jobs(db, *(const int64_t *)ms, o, n);
}

static int run(int argc, char **argv) {
  const char *older = NULL, *queue = NULL;
  int dry_run = 0, quiet = 0;
  const struct cli_option options[] = {
      CLI_STRING(0, "older-than", &older, "D",
                 "only jobs that finished more than D ago (required)"),
      CLI_STRING('q', "queue", &queue, "QUEUE", "only this queue's jobs"),
      CLI_FLAG(0, "dry-run", &dry_run, "count the jobs it would delete; delete nothing"),
      CLI_FLAG(0, "quiet", &quiet, "print nothing but errors (for scripts)"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "'jobq prune --older-than D'"))
    return CLI_EXIT_USAGE;
  if (older == NULL) {
    cli_error("missing --older-than: expected a duration like 7d");
    return CLI_EXIT_USAGE;
  }
  int64_t ms;
  if (cli_parse_duration("--older-than", older, 0, INT64_MAX, &ms))
    return CLI_EXIT_USAGE;
  if (queue != NULL && cli_check_queue("--queue", queue)) return CLI_EXIT_USAGE;
  jobq_bulk_opts o;
  jobq_bulk_opts_init(&o);
  o.queue = queue;
  o.dry_run = dry_run;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  struct cli_progress bar;
  int64_t count = 0;
  cli_progress_bulk(db, &o, quiet, &bar, "jobq prune:", count_jobs, &ms);
  rc = jobq_prune_jobs(db, ms, &o, &count);
  cli_progress_end(&bar);
  rc = cli_print_bulk(db, rc, quiet, dry_run, "pruned", "prune", count);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_prune = {
    "prune", "delete archived jobs older than a duration", run};
