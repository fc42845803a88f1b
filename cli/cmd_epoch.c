/*
 * cmd_epoch.c - `jobq epoch` shows the database's identity (queue id,
 * epoch, job sequence, database clock); `jobq epoch bump` starts a new
 * epoch after a restore from backup or a failover to an asynchronous
 * replica, ending every session so workers register again.
 */
#include <string.h>

#include "builtin.h"

static const char usage[] =
    "usage: jobq epoch\n"
    "   or: jobq epoch bump\n"
    "\n"
    "Without an argument, prints the queue database's identity: queue id,\n"
    "epoch, job sequence (the highest job id given), schema version and the\n"
    "database clock.\n"
    "\n"
    "'bump' is for after a restore from backup or a failover to a replica\n"
    "that may have missed writes, which workers refuse (the job sequence went\n"
    "back, or a completion acknowledged to them is missing: 'jobq doctor'\n"
    "lists them).  Once this database is the one to use, it ends every\n"
    "session (their running jobs go back to ready) and starts a new epoch, so\n"
    "that workers may claim again.  Prints the new epoch.\n";

static int run(int argc, char **argv) {
  const struct cli_option options[] = {CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  char shown[CLI_QUOTE_BUF];
  if (argc >= 2 && strcmp(argv[1], "bump") != 0) {
    cli_error("unknown argument '%s': expected 'bump' or nothing",
              cli_quote(shown, argv[1]));
    return CLI_EXIT_USAGE;
  }
  if (cli_check_args(argc, argv, 1, "'bump' alone")) return CLI_EXIT_USAGE;
  int bump = argc == 2;

  jobq *db;
  if ((rc = bump ? cli_open(&db) : cli_open_readonly(&db)) != 0) return rc;
  if (bump) {
    int64_t epoch;
    rc = jobq_epoch_bump(db, &epoch);
    if (rc != JOBQ_OK) {
      rc = cli_lib_error(db, rc);
    } else {
      if (cli_global.json) {
        json_t *o = cli_json_object();
        cli_json_set(o, "epoch", json_integer(epoch));
        cli_json_print(o);
      } else {
        printf("epoch %lld\n", (long long)epoch);
      }
      cli_error("warning: every session was ended and their jobs went back "
                "to ready: workers register new sessions");
    }
  } else {
    jobq_identity id;
    rc = jobq_identity_get(db, &id);
    if (rc != JOBQ_OK)
      rc = cli_lib_error(db, rc);
    else
      cli_print_identity(&id);
  }
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_epoch = {
    "epoch", "show the queue's identity, or start a new epoch (bump)", run};
