/*
 * cmd_retry.c - `jobq retry`: puts dead or cancelled jobs back to run with
 * a fresh attempt count, keeping their ids and payloads: the jobs named by
 * id, or with --dead every dead job (of one queue with -q).
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq retry ID...\n"
    "   or: jobq retry --dead [-q QUEUE]\n"
    "\n"
    "Puts dead or cancelled jobs back to ready with a fresh attempt count,\n"
    "keeping their ids and payloads.  With ids, prints 'job ID retried' for\n"
    "each; a job that cannot be retried (unfinished, done, pruned) is\n"
    "reported and the exit status is the worst of all.  With --dead,\n"
    "retries every dead job, of QUEUE or of all queues, and prints how many.\n";

static int retry_one(jobq *db, int64_t id, const char **word,
                     const char **text) {
  *word = *text = "retried";
  return jobq_retry(db, id);
}

static int retry_dead(const char *queue) {
  jobq *db;
  int rc = cli_open(&db);
  if (rc != 0) return rc;
  int64_t count;
  rc = jobq_retry_dead(db, queue, &count);
  rc = cli_print_parts(db, rc, "retried", count, "job");
  jobq_close(db);
  return rc;
}

static int run(int argc, char **argv) {
  const char *queue = NULL;
  int dead = 0;
  const struct cli_option options[] = {
      CLI_FLAG(0, "dead", &dead, "retry every dead job"),
      CLI_STRING('q', "queue", &queue, "QUEUE", "with --dead: only this queue's"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (dead && argc > 1) {
    cli_error("--dead and job ids were both given: expected one or the other");
    return CLI_EXIT_USAGE;
  }
  if (!dead && queue != NULL) {
    cli_error("--queue needs --dead: expected 'jobq retry --dead -q QUEUE'");
    return CLI_EXIT_USAGE;
  }
  if (dead) {
    if (queue != NULL && cli_check_queue("--queue", queue)) return CLI_EXIT_USAGE;
    return retry_dead(queue);
  }
  if (argc == 1) {
    cli_error("missing job ids: expected 'jobq retry ID...' or 'jobq retry --dead'");
    return CLI_EXIT_USAGE;
  }
  return cli_each_job(argc - 1, argv + 1, retry_one);
}

const struct cli_command cli_cmd_retry = {
    "retry", "run dead or cancelled jobs again", run};
