/*
 * options.h - command-line options for every jobq command: a table of
 * options per command, one parser that also knows the global options (so
 * they work before or after the command name), generated --help text, "did
 * you mean" suggestions by edit distance, and the parsers of option values
 * (integers, job ids, durations, times, sizes, queue names) whose messages
 * name the option and say what was expected.
 */
#ifndef JOBQ_CLI_OPTIONS_H
#define JOBQ_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cli_opt_type { CLI_OPT_END = 0, CLI_OPT_FLAG, CLI_OPT_STRING, CLI_OPT_LIST };

/* The values of a repeatable option, in the order given.  items is
 * allocated by the parser (free() it); the strings are argv's. */
struct cli_list {
  const char **items;
  size_t n;
};

struct cli_option {
  enum cli_opt_type type;
  char short_name;        /* 'q' for -q, or 0 */
  const char *long_name;  /* "queue" for --queue */
  void *value;            /* FLAG: int *, set to 1; STRING: const char **,
                             the last one given wins; LIST: struct
                             cli_list *, each one given is appended */
  const char *argh;       /* STRING: the value's name in --help ("QUEUE") */
  const char *help;
};

#define CLI_FLAG(s, l, v, h) {CLI_OPT_FLAG, (s), (l), (v), NULL, (h)}
#define CLI_STRING(s, l, v, a, h) {CLI_OPT_STRING, (s), (l), (v), (a), (h)}
#define CLI_LIST(s, l, v, a, h) {CLI_OPT_LIST, (s), (l), (v), (a), (h)}
#define CLI_END {CLI_OPT_END, 0, NULL, NULL, NULL, NULL}

/* What cli_parse_options() returns when the command should go on. */
#define CLI_PARSED (-1)

/*
 * Parses argv[1..*argc) (argv[0] is the command name) against opts and the
 * global options.  "--" ends the options; "-" is an argument.  The
 * arguments that are not options are moved to argv[1..] and *argc becomes
 * 1 + their number.  Returns CLI_PARSED, or the status to exit with: 0
 * when --help (usage, then the options, on stdout) or --version was
 * printed, 2 after a message on an unknown option or a missing value.
 * usage is the command's synopsis and description.
 */
int cli_parse_options(const char *usage, const struct cli_option *opts,
                      int *argc, char **argv);

/*
 * For commands that run another command (jobq work): like
 * cli_parse_options(), but the options end at the first argument that is
 * not one, or after "--", so that the other command's own options are
 * left alone.  *next is set to the index of that first argument (argc
 * when there is none); argv is not reordered.
 */
int cli_parse_options_head(const char *usage, const struct cli_option *opts,
                           int argc, char **argv, int *next);

/*
 * The program's own options, before the command name: parses argv[1..]
 * up to the first argument that is not an option and sets *next to its
 * index (argc when there is none).  Returns CLI_PARSED, 2 after a message,
 * or 0 when --version was printed.  *help is set by --help/-h.
 */
int cli_parse_global(int argc, char **argv, int *next, int *help);
/* Prints the global options' part of a --help text. */
void cli_print_global_help(FILE *out);

/* Checks that at most max arguments are left after the options: 0, or
 * "unexpected argument 'X': expected EXPECTED" and 2. */
int cli_check_args(int argc, char **argv, int max, const char *expected);

/*
 * The candidate closest to word by edit distance (a swap of two letters
 * counts as one edit), or the one candidate word is a prefix of; NULL
 * when none is close enough to be a likely typo.
 */
const char *cli_suggest(const char *word, const char *const *cands, size_t n);

/* Value parsers.  Each returns 0, or prints "invalid WHAT 'TEXT': expected
 * ..." and returns 2 (CLI_EXIT_USAGE).  what is the option as the user
 * knows it: "--priority", "job id", "queue name". */
int cli_parse_int(const char *what, const char *text, int64_t min, int64_t max,
                  int64_t *out);
/* A job id: a positive integer ("invalid job id 'x': expected a positive
 * integer"). */
int cli_parse_id(const char *text, int64_t *id);
/* A duration like 250ms, 30s, 1m30s within [min_ms, max_ms]. */
int cli_parse_duration(const char *what, const char *text, int64_t min_ms,
                       int64_t max_ms, int64_t *ms);
/* A time: RFC 3339 / ISO 8601 with a zone (2026-11-22T10:00:00Z,
 * 2026-11-22T10:00:00.250+02:00) or @UNIXSECONDS, into Unix ms (> 0). */
int cli_parse_time(const char *what, const char *text, int64_t *ms);
/* The same without a message: 0, or -1 with *why set to what was wrong. */
int cli_time_from_text(const char *text, int64_t *ms, const char **why);
/* A size like 1MiB, 512KiB or 1048576 (bytes) within [min, max]. */
int cli_parse_size(const char *what, const char *text, int64_t min,
                   int64_t max, int64_t *bytes);
/* A queue name (jobq_check_queue). */
int cli_check_queue(const char *what, const char *name);

#endif
