/*
 * builtin.h - the commands of the jobq program and what they share.
 *
 * To add a command, do these 5 things:
 *
 *   1. Create cli/cmd_NAME.c with the skeleton every command has: a usage
 *      string, a table of options (struct cli_option, cli/options.h), a
 *      parse step (cli_parse_options, then checks of the values that name
 *      the option), the work (cli_open, the library calls), and the return
 *      of an exit status (CLI_EXIT_*).  Print data on stdout through
 *      cli/output.h (a table, or one JSON document when cli_global.json),
 *      and messages on stderr through cli_error()/cli_lib_error().
 *   2. Define `const struct cli_command cli_cmd_NAME` at the end of that
 *      file: its name, a one-line summary and its run function.
 *   3. Declare it below with the others.
 *   4. Add &cli_cmd_NAME to the commands[] table in cli/jobq.c, where it is
 *      listed in `jobq --help` in that order.
 *   5. Document it: a section in man/jobq.1 and docs/commands/NAME.md.
 *
 * Commands never call exit(): they return a status, and jobq.c flushes
 * stdout and returns it from main().
 */
#ifndef JOBQ_CLI_BUILTIN_H
#define JOBQ_CLI_BUILTIN_H

#include "options.h"
#include "output.h"
#include "util.h"

struct cli_command {
  const char *name;
  const char *summary;  /* one line for `jobq --help` */
  /* argv[0] is the command name; returns an exit status.  `jobq help
   * NAME` runs it with the single argument --help. */
  int (*run)(int argc, char **argv);
};

extern const struct cli_command cli_cmd_init;
extern const struct cli_command cli_cmd_put;
extern const struct cli_command cli_cmd_work;
extern const struct cli_command cli_cmd_stats;
extern const struct cli_command cli_cmd_ls;
extern const struct cli_command cli_cmd_show;
extern const struct cli_command cli_cmd_sessions;
extern const struct cli_command cli_cmd_retry;
extern const struct cli_command cli_cmd_cancel;
extern const struct cli_command cli_cmd_purge;
extern const struct cli_command cli_cmd_pause;
extern const struct cli_command cli_cmd_resume;
extern const struct cli_command cli_cmd_policy;
extern const struct cli_command cli_cmd_limit;
extern const struct cli_command cli_cmd_parts;
extern const struct cli_command cli_cmd_prune;
extern const struct cli_command cli_cmd_reap;
extern const struct cli_command cli_cmd_epoch;
extern const struct cli_command cli_cmd_cron;
extern const struct cli_command cli_cmd_doctor;
extern const struct cli_command cli_cmd_bench;
extern const struct cli_command cli_cmd_web;

/* The command named name, or NULL (cli/jobq.c). */
const struct cli_command *cli_find_command(const char *name);

#endif
