/*
 * cmd_init.c - `jobq init`: creates the queue database's schema, or
 * migrates an older one, and prints the identity it has (SQLite databases
 * are also set up on first use; init makes it explicit, and is how another
 * engine's database is prepared).
 */
#include "builtin.h"

static const char usage[] =
    "usage: jobq init [--print-roles]\n"
    "\n"
    "Creates the schema of the queue database named by --db (or migrates an\n"
    "older one) and prints its identity: queue id, epoch, job sequence,\n"
    "schema version and database clock.  Running it again changes nothing.\n"
    "\n"
    "  --print-roles  print SQL that creates least-privilege roles (producer,\n"
    "                 worker, admin, reader) instead, for the database's owner\n"
    "                 to run (PostgreSQL and MariaDB/MySQL)\n";

static int run(int argc, char **argv) {
  int print_roles = 0;
  const struct cli_option options[] = {
      CLI_FLAG(0, "print-roles", &print_roles, "print SQL for least-privilege roles"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  if (cli_check_args(argc, argv, 0, "no arguments")) return CLI_EXIT_USAGE;

  jobq *db;
  if ((rc = cli_open(&db)) != 0) return rc;
  if (print_roles) {
    char *sql = NULL;
    rc = jobq_roles_sql(db, &sql);
    if (rc != JOBQ_OK)
      rc = cli_lib_error(db, rc);
    else
      fputs(sql, stdout);
    free(sql);
    jobq_close(db);
    return rc;
  }
  /* The database works, but not as durably as jobq promises. */
  if (jobq_warning(db) != NULL) fprintf(stderr, "warning: %s\n", jobq_warning(db));
  jobq_identity id;
  rc = jobq_init(db);
  if (rc == JOBQ_OK) rc = jobq_identity_get(db, &id);
  if (rc != JOBQ_OK) {
    rc = cli_lib_error(db, rc);
  } else {
    cli_print_identity(&id);
  }
  jobq_close(db);
  return rc;
}

const struct cli_command cli_cmd_init = {
    "init", "create or migrate the queue database's schema", run};
