/*
 * jobq.c - the entry point of the jobq program: the program's own options
 * (which may also follow the command name), the table of commands and the
 * dispatch to one of them, `jobq help`, and the final check that stdout
 * was written.  Each command lives in its own cli/cmd_NAME.c; builtin.h
 * says how to add one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "builtin.h"

static const struct cli_command *const commands[] = {
    &cli_cmd_init,   &cli_cmd_put,    &cli_cmd_work,     &cli_cmd_stats,
    &cli_cmd_ls,     &cli_cmd_show,   &cli_cmd_sessions, &cli_cmd_retry,
    &cli_cmd_cancel, &cli_cmd_purge,  &cli_cmd_pause,    &cli_cmd_resume,
    &cli_cmd_policy, &cli_cmd_limit,  &cli_cmd_parts,  &cli_cmd_prune,  &cli_cmd_reap,     &cli_cmd_cron,
    &cli_cmd_epoch,  &cli_cmd_doctor, &cli_cmd_web,      &cli_cmd_bench,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

const struct cli_command *cli_find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

static void usage(FILE *out) {
  fputs("usage: jobq [--db URL] [--json] [--max-payload SIZE] COMMAND [ARGS]\n"
        "\n"
        "jobq is a durable job queue whose only coordinator is an SQL\n"
        "database.\n"
        "\n"
        "commands:\n",
        out);
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "  %-10s %s\n", "help", "show the help of a command");
  cli_print_global_help(out);
  fputs("\nexit status: 0 ok, 1 error, 2 bad usage or input, 75 temporary "
        "failure\n"
        "run 'jobq help COMMAND' for the options of a command\n",
        out);
}

static int unknown_command(const char *name) {
  const char *names[NCOMMANDS + 1];
  for (size_t i = 0; i < NCOMMANDS; i++) names[i] = commands[i]->name;
  names[NCOMMANDS] = "help";
  char shown[CLI_QUOTE_BUF];
  const char *best = cli_suggest(name, names, NCOMMANDS + 1);
  if (best != NULL) {
    cli_error("unknown command '%s': did you mean '%s'?", cli_quote(shown, name),
              best);
  } else {
    char list[512];
    size_t o = 0;
    for (size_t i = 0; i <= NCOMMANDS && o < sizeof list; i++)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                            names[i]);
    cli_error("unknown command '%s': expected one of %s", cli_quote(shown, name),
              list);
  }
  return CLI_EXIT_USAGE;
}

/* jobq help [COMMAND]: the same text as COMMAND --help. */
static int help(int argc, char **argv) {
  if (argc == 1) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (argc > 2) {
    cli_error("expected one command name after 'help', got %d", argc - 1);
    return CLI_EXIT_USAGE;
  }
  if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  const struct cli_command *cmd = cli_find_command(argv[1]);
  if (cmd == NULL) return unknown_command(argv[1]);
  char help_flag[] = "--help";
  char *args[] = {argv[1], help_flag, NULL};
  cli_set_command(cmd->name);
  return cmd->run(2, args);
}

/* Makes sure everything printed reached stdout. */
static int finish(int status) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    int e = errno;
    cli_set_command(NULL);
    cli_error("cannot write to stdout: %s", cli_strerror(e));
    return status == CLI_EXIT_OK ? CLI_EXIT_ERROR : status;
  }
  return status;
}

int main(int argc, char **argv) {
  int next, want_help;
  int rc = cli_parse_global(argc, argv, &next, &want_help);
  if (rc != CLI_PARSED) return finish(rc);
  if (want_help && next < argc) {
    /* jobq --help CMD: the command's help, as jobq help CMD. */
    char help_word[] = "help";
    char *args[] = {help_word, argv[next], NULL};
    return finish(help(2, args));
  }
  if (want_help) {
    usage(stdout);
    return finish(CLI_EXIT_OK);
  }
  if (next >= argc) {
    usage(stderr);
    return finish(CLI_EXIT_USAGE);
  }
  const char *name = argv[next];
  if (strcmp(name, "help") == 0) return finish(help(argc - next, argv + next));
  const struct cli_command *cmd = cli_find_command(name);
  if (cmd == NULL) return finish(unknown_command(name));
  cli_set_command(cmd->name);
  return finish(cmd->run(argc - next, argv + next));
}
