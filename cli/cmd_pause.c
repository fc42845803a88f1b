/*
 * cmd_pause.c - `jobq pause` and `jobq resume`: stop and restart the
 * claiming of a queue's jobs.  Both are the same command but for the
 * library call, so they share this file and its one skeleton.
 */
#include <string.h>

#include "builtin.h"

static const char pause_usage[] =
    "usage: jobq pause QUEUE\n"
    "\n"
    "Stops workers from claiming the queue's jobs; running jobs go on, and\n"
    "jobs can still be put.  Prints 'paused QUEUE'.  Undo with 'jobq resume'.\n";

static const char resume_usage[] =
    "usage: jobq resume QUEUE\n"
    "\n"
    "Lets workers claim the jobs of a paused queue again.  Prints\n"
    "'resumed QUEUE'.\n";

static int run_either(int argc, char **argv, int pause) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(pause ? pause_usage : resume_usage, options, &argc,
                             argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 1, "one QUEUE")) return CLI_EXIT_USAGE;
  if (argc < 2) {
    cli_error("missing queue: expected 'jobq %s QUEUE'", argv[0]);
    return CLI_EXIT_USAGE;
  }
  const char *queue = argv[1];
  if (cli_check_queue("queue name", queue)) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  rc = pause ? jobq_pause(db, queue) : jobq_resume(db, queue);
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, "queue", json_string(queue));
    cli_json_set(o, "paused", json_boolean(pause));
    cli_json_print(o);
  } else {
    printf("%s %s\n", pause ? "paused" : "resumed", queue);
  }
  jobq_close(db);
  return rc;
}

static int run_pause(int argc, char **argv) { return run_either(argc, argv, 1); }
static int run_resume(int argc, char **argv) { return run_either(argc, argv, 0); }

const struct cli_command cli_cmd_pause = {
    "pause", "stop workers from claiming a queue's jobs", run_pause};
const struct cli_command cli_cmd_resume = {
    "resume", "let workers claim a paused queue's jobs again", run_resume};
