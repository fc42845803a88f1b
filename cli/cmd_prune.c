/*
 * cmd_prune.c - `jobq prune`: deletes archived jobs (done, dead,
 * cancelled) that finished longer ago than a given duration.
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq prune --older-than D\n"
    "\n"
    "Deletes the archived jobs (done, dead, cancelled) that finished more\n"
    "than D ago (like 7d or 12h), and prints how many: 'pruned N jobs'.\n"
    "Unfinished jobs, and a dead job that blocks its ordering key, are kept.\n";

static int run(int argc, char **argv) {
  const char *older = NULL;
  const struct cli_option options[] = {
      CLI_STRING(0, "older-than", &older, "D",
                 "only jobs that finished more than D ago (required)"),
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

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  int64_t count;
  rc = jobq_prune(db, ms, &count);
  rc = cli_print_parts(db, rc, "pruned", count, "job");
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_prune = {
    "prune", "delete archived jobs older than a duration", run};
