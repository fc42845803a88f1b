/*
 * cmd_purge.c - `jobq purge`: deletes every job of a queue that is not
 * running, unfinished and archived, in parts (jobq_purge_jobs), with a
 * count, a progress bar on a terminal, a dry run and a quiet mode.
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq purge [--dry-run] [--quiet] QUEUE\n"
    "\n"
    "Deletes every job of QUEUE that is not running, for good: ready,\n"
    "scheduled and waiting jobs, and the archived (done, dead, cancelled)\n"
    "ones; the jobs put after it began stay.  Prints 'purged N jobs'.  It\n"
    "works in transactions of about 10000 jobs, with a progress bar on a\n"
    "terminal.  Refused while a job of the queue runs as it starts: pause the\n"
    "queue and let its workers finish, or cancel them first.  The queue\n"
    "stays, with its pause state and key policy.\n";

static int count_jobs(jobq *db, const jobq_bulk_opts *o, int64_t *n, void *arg) {
  (void)arg;
  return jobq_purge_jobs(db, o, n);
}

static int run(int argc, char **argv) {
  int dry_run = 0, quiet = 0;
  const struct cli_option options[] = {
      CLI_FLAG(0, "dry-run", &dry_run, "count the jobs it would delete; delete nothing"),
      CLI_FLAG(0, "quiet", &quiet, "print nothing but errors (for scripts)"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 1, "one QUEUE")) return CLI_EXIT_USAGE;
  if (argc < 2) {
    cli_error("missing queue: expected 'jobq purge QUEUE'");
    return CLI_EXIT_USAGE;
  }
  if (cli_check_queue("queue name", argv[1])) return CLI_EXIT_USAGE;
  jobq_bulk_opts o;
  jobq_bulk_opts_init(&o);
  o.queue = argv[1];
  o.dry_run = dry_run;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  struct cli_progress bar;
  int64_t count = 0;
  cli_progress_bulk(db, &o, quiet, &bar, "jobq purge:", count_jobs, NULL);
  rc = jobq_purge_jobs(db, &o, &count);
  cli_progress_end(&bar);
  rc = cli_print_bulk(db, rc, quiet, dry_run, "purged", "purge", count);
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_purge = {
    "purge", "delete every job of a queue that is not running", run};
