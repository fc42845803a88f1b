/*
 * cmd_cancel.c - `jobq cancel`: cancels jobs by id.  A ready or waiting
 * job is archived as cancelled at once; a running job gets a cancel
 * request that its worker sees on its next heartbeat.
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq cancel ID...\n"
    "\n"
    "Cancels each job: a ready, scheduled or waiting job is archived as\n"
    "cancelled at once ('job ID cancelled'); a running job is asked to stop\n"
    "and ends as cancelled when its worker sees the request ('job ID cancel\n"
    "requested (running)').  A dead job that blocks its ordering key is\n"
    "marked cancelled so the key proceeds.  A job that cannot be cancelled\n"
    "is reported and the exit status is the worst of all.\n";

static int cancel_one(jobq *db, int64_t id, const char **word,
                      const char **text) {
  int now = 0;
  int rc = jobq_cancel(db, id, &now);
  *word = now ? "cancelled" : "cancel_requested";
  *text = now ? "cancelled" : "cancel requested (running)";
  return rc;
}

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (argc == 1) {
    cli_error("missing job ids: expected 'jobq cancel ID...'");
    return CLI_EXIT_USAGE;
  }
  return cli_each_job(argc - 1, argv + 1, cancel_one);
}

const struct cli_command cli_cmd_cancel = {
    "cancel", "cancel jobs, or ask their workers to stop them", run};
