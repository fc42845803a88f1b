/*
 * cmd_reap.c - `jobq reap`: deletes expired sessions now (workers do this
 * on their own as they heartbeat); their jobs go back to ready.
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq reap\n"
    "\n"
    "Deletes the sessions whose lease has expired on the database clock and\n"
    "puts their jobs back to ready, then prints how many sessions went:\n"
    "'reaped N sessions'.  Nothing is reaped when no session at all has\n"
    "heartbeated for a lease (the database itself was stalled).\n";

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  int64_t count;
  rc = jobq_reap(db, &count);
  if (rc != JOBQ_OK)
    rc = cli_lib_error(db, rc);
  else
    cli_print_count("reaped", count, "session");
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_reap = {
    "reap", "end expired sessions now and free their jobs", run};
