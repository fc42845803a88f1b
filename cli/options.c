/*
 * options.c - the one option parser of the jobq program.  Each command
 * hands in its table of options; the global options (--db, --db-file,
 * --json, --max-payload, --help, --version) are looked up after it, so
 * they work before the command name (cli_parse_global) and after it.  Unknown names
 * get a "did you mean" from the closest known one.  The value parsers at
 * the end turn option text into numbers, durations and times with
 * messages that name the option and say what was expected.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "output.h"
#include "util.h"

static int help_flag, version_flag;

static const struct cli_option global_options[] = {
    CLI_STRING(0, "db", &cli_global.db, "URL",
               "the queue database (default: --db-file, $JOBQ_DB, "
               "$JOBQ_DB_FILE, the systemd credential jobq-db, else "
               "sqlite:jobq.db)"),
    CLI_STRING(0, "db-file", &cli_global.db_file, "FILE",
               "the queue database's URL on the first line of FILE, so that "
               "no password is on the command line"),
    CLI_FLAG(0, "json", &cli_global.json, "print data as one JSON document"),
    CLI_STRING(0, "max-payload", &cli_global.max_payload, "SIZE",
               "the largest payload to accept, like 4MiB (default 1MiB)"),
    CLI_FLAG('h', "help", &help_flag, "show this help and exit"),
    CLI_FLAG(0, "version", &version_flag, "print the version and exit"),
    CLI_END};

/* ---------------------------------------------------------------- suggestions */

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and swaps of neighbours each count one. */
static size_t edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return (size_t)-1;
  size_t d[65][65];
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++) {
    for (size_t j = 1; j <= m; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  }
  return d[n][m];
}

const char *cli_suggest(const char *word, const char *const *cands, size_t n) {
  size_t len = strlen(word) - strspn(word, "-");
  size_t limit = len < 4 ? 1 : len < 9 ? 2 : 3;
  const char *best = NULL, *prefixed = NULL;
  size_t best_d = (size_t)-1, nprefixed = 0;
  for (size_t i = 0; i < n; i++) {
    size_t d = edit_distance(word, cands[i]);
    if (d < best_d) {
      best_d = d;
      best = cands[i];
    }
    if (len >= 2 && strncmp(cands[i], word, strlen(word)) == 0) {
      prefixed = cands[i];
      nprefixed++;
    }
  }
  if (best != NULL && best_d <= limit) return best;
  return nprefixed == 1 ? prefixed : NULL;
}

/* ---------------------------------------------------------------- parsing */

static size_t count_options(const struct cli_option *opts) {
  size_t n = 0;
  while (opts != NULL && opts[n].type != CLI_OPT_END) n++;
  return n;
}

static const struct cli_option *find_long(const struct cli_option *opts,
                                          const char *name, size_t len) {
  for (size_t i = 0; opts != NULL && opts[i].type != CLI_OPT_END; i++)
    if (strlen(opts[i].long_name) == len &&
        strncmp(opts[i].long_name, name, len) == 0)
      return &opts[i];
  return NULL;
}

static const struct cli_option *find_short(const struct cli_option *opts,
                                           char c) {
  for (size_t i = 0; opts != NULL && opts[i].type != CLI_OPT_END; i++)
    if (opts[i].short_name == c) return &opts[i];
  return NULL;
}

/* The message for an unknown option, with the closest known one. */
static int unknown_option(const char *arg, size_t len,
                          const struct cli_option *opts) {
  char shown[CLI_QUOTE_BUF], name[80];
  snprintf(name, sizeof name, "%.*s", (int)(len < 79 ? len : 79), arg);
  size_t n = count_options(opts), ng = count_options(global_options);
  char **cands = cli_xmalloc((n + ng + 1) * sizeof *cands);
  for (size_t i = 0; i < n + ng; i++) {
    const struct cli_option *o = i < n ? &opts[i] : &global_options[i - n];
    size_t l = strlen(o->long_name) + 3;
    cands[i] = cli_xmalloc(l);
    snprintf(cands[i], l, "--%s", o->long_name);
  }
  const char *best =
      name[1] == '-' ? cli_suggest(name, (const char *const *)cands, n + ng) : NULL;
  /* Option errors are the program's: "jobq: unknown option ...". */
  const char *cmd = cli_command_name();
  cli_set_command(NULL);
  if (best != NULL)
    cli_error("unknown option '%s': did you mean '%s'?", cli_quote(shown, name),
              best);
  else
    cli_error("unknown option '%s': expected one of the options listed by "
              "'jobq%s%s --help'",
              cli_quote(shown, name), cmd ? " " : "", cmd ? cmd : "");
  cli_set_command(cmd);
  for (size_t i = 0; i < n + ng; i++) free(cands[i]);
  free(cands);
  return CLI_EXIT_USAGE;
}

/* Prints one table of options for --help. */
static void print_options(FILE *out, const char *title,
                          const struct cli_option *opts) {
  if (count_options(opts) == 0) return;
  fprintf(out, "\n%s:\n", title);
  for (size_t i = 0; opts[i].type != CLI_OPT_END; i++) {
    const struct cli_option *o = &opts[i];
    char spec[64];
    snprintf(spec, sizeof spec, "%c%c%s--%s%s%s", o->short_name ? '-' : ' ',
             o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ",
             o->long_name, o->argh ? " " : "", o->argh ? o->argh : "");
    if (strlen(spec) <= 24)
      fprintf(out, "  %-24s  %s\n", spec, o->help);
    else
      fprintf(out, "  %s\n  %-24s  %s\n", spec, "", o->help);
  }
}

void cli_print_global_help(FILE *out) {
  print_options(out, "global options (before or after the command)",
                global_options);
}

/* Applies one option; arg is the whole argument, value what followed "="
 * or the short letter (NULL when nothing did). */
static int take(const struct cli_option *o, const char *arg, const char *value,
                int *i, int argc, char **argv) {
  char shown[CLI_QUOTE_BUF];
  if (o->type == CLI_OPT_FLAG) {
    if (value != NULL) {
      cli_error("option '--%s' takes no value: expected '--%s' alone",
                o->long_name, o->long_name);
      return CLI_EXIT_USAGE;
    }
    *(int *)o->value = 1;
    return CLI_PARSED;
  }
  if (value == NULL) {
    if (*i + 1 >= argc) {
      cli_error("missing value after '%s': expected %s %s",
                cli_quote(shown, arg), arg, o->argh);
      return CLI_EXIT_USAGE;
    }
    value = argv[++*i];
  }
  if (o->type == CLI_OPT_LIST) {
    struct cli_list *list = o->value;
    list->items = cli_xrealloc(list->items, (list->n + 1) * sizeof *list->items);
    list->items[list->n++] = value;
    return CLI_PARSED;
  }
  *(const char **)o->value = value;
  return CLI_PARSED;
}

/* How far parse() reads: every argument (options anywhere), or up to the
 * first argument for the program's own options (no --help text of a
 * command) or a command that runs another command. */
enum parse_mode { PARSE_ALL, PARSE_GLOBAL, PARSE_HEAD };

/* The parser behind the entry points. */
static int parse(const char *usage, const struct cli_option *opts, int *argc,
                 char **argv, enum parse_mode mode, int *next) {
  int stop_at_arg = mode != PARSE_ALL;
  int nargs = 1, dashdash = 0;
  help_flag = version_flag = 0;
  int i;
  for (i = 1; i < *argc; i++) {
    char *arg = argv[i];
    /* "-" is stdin and "-5" a (negative) number: arguments, not options. */
    if (dashdash || arg[0] != '-' || arg[1] == '\0' ||
        isdigit((unsigned char)arg[1])) {
      if (stop_at_arg) break;
      argv[nargs++] = arg;
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      dashdash = 1;
      continue;
    }
    const struct cli_option *o;
    const char *value = NULL;
    int rc;
    if (arg[1] == '-') {
      const char *name = arg + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      o = find_long(opts, name, len);
      if (o == NULL) o = find_long(global_options, name, len);
      if (o == NULL) return unknown_option(arg, len + 2, opts);
      if (eq != NULL) value = eq + 1;
      char shown_name[80];
      snprintf(shown_name, sizeof shown_name, "--%s", o->long_name);
      rc = take(o, shown_name, value, &i, *argc, argv);
    } else {
      o = find_short(opts, arg[1]);
      if (o == NULL) o = find_short(global_options, arg[1]);
      if (o == NULL || (o->type == CLI_OPT_FLAG && arg[2] != '\0'))
        return unknown_option(arg, strlen(arg), opts);
      if (arg[2] != '\0') value = arg + 2;
      char shown_name[4] = {'-', arg[1], '\0', '\0'};
      rc = take(o, shown_name, value, &i, *argc, argv);
    }
    if (rc != CLI_PARSED) return rc;
  }
  if (mode == PARSE_GLOBAL) {
    *next = i;
    if (version_flag && !help_flag) {
      printf("jobq %s\n", JOBQ_VERSION);
      return CLI_EXIT_OK;
    }
    return CLI_PARSED;
  }
  if (help_flag) {
    fputs(usage, stdout);
    print_options(stdout, "options", opts);
    cli_print_global_help(stdout);
    return CLI_EXIT_OK;
  }
  if (version_flag) {
    printf("jobq %s\n", JOBQ_VERSION);
    return CLI_EXIT_OK;
  }
  if (mode == PARSE_HEAD)
    *next = i;
  else
    *argc = nargs;
  return CLI_PARSED;
}

int cli_parse_options(const char *usage, const struct cli_option *opts,
                      int *argc, char **argv) {
  return parse(usage, opts, argc, argv, PARSE_ALL, NULL);
}

int cli_parse_options_head(const char *usage, const struct cli_option *opts,
                           int argc, char **argv, int *next) {
  return parse(usage, opts, &argc, argv, PARSE_HEAD, next);
}

int cli_parse_global(int argc, char **argv, int *next, int *help) {
  int rc = parse(NULL, NULL, &argc, argv, PARSE_GLOBAL, next);
  *help = help_flag;
  return rc;
}

int cli_check_args(int argc, char **argv, int max, const char *expected) {
  char shown[CLI_QUOTE_BUF];
  if (argc - 1 <= max) return 0;
  cli_error("unexpected argument '%s': expected %s", cli_quote(shown, argv[max + 1]),
            expected);
  return CLI_EXIT_USAGE;
}

/* ---------------------------------------------------------------- values */

static int bad_value(const char *what, const char *text, const char *expected) {
  char shown[CLI_QUOTE_BUF];
  cli_error("invalid %s '%s': expected %s", what, cli_quote(shown, text),
            expected);
  return CLI_EXIT_USAGE;
}

int cli_parse_int(const char *what, const char *text, int64_t min, int64_t max,
                  int64_t *out) {
  char expected[96];
  if (max == INT64_MAX && min == 1)
    snprintf(expected, sizeof expected, "a positive integer");
  else if (max == INT64_MAX && min == 0)
    snprintf(expected, sizeof expected, "zero or a positive integer");
  else if (max == INT64_MAX)
    snprintf(expected, sizeof expected, "an integer of at least %lld",
             (long long)min);
  else
    snprintf(expected, sizeof expected, "an integer from %lld to %lld",
             (long long)min, (long long)max);
  char *end;
  errno = 0;
  long long v = 0;
  if (text[0] != '\0' && !isspace((unsigned char)text[0]))
    v = strtoll(text, &end, 10);
  if (text[0] == '\0' || isspace((unsigned char)text[0]) || *end != '\0' ||
      errno == ERANGE || v < min || v > max)
    return bad_value(what, text, expected);
  *out = v;
  return 0;
}

int cli_parse_id(const char *text, int64_t *id) {
  return cli_parse_int("job id", text, 1, INT64_MAX, id);
}

/* Whether text has the shape of a duration, NUMBER UNIT repeated, so that
 * jobq_parse_duration() refusing it means the value was too large. */
static int duration_shaped(const char *t) {
  static const char *const units[] = {"ms", "s", "m", "h", "d"};
  if (*t == '\0') return 0;
  while (*t != '\0') {
    size_t n = strspn(t, "0123456789");
    if (n == 0) return 0;
    t += n;
    size_t u;
    for (u = 0; u < sizeof units / sizeof units[0]; u++)
      if (strncmp(t, units[u], strlen(units[u])) == 0) break;
    if (u == sizeof units / sizeof units[0]) return 0;
    t += strlen(units[u]);
  }
  return 1;
}

int cli_parse_duration(const char *what, const char *text, int64_t min_ms,
                       int64_t max_ms, int64_t *ms) {
  char expected[96], d[CLI_TIME_BUF];
  int64_t v;
  if (jobq_parse_duration(text, &v) != JOBQ_OK) {
    size_t len = strlen(text);
    if (text[0] == '-')
      return bad_value(what, text, "a duration of zero or more, like 5s");
    if (len > 0 && isdigit((unsigned char)text[len - 1]) &&
        strspn(text, "0123456789smhd") == len)
      return bad_value(what, text,
                       "a unit after the number, like 5s (ms, s, m, h or d)");
    if (!duration_shaped(text))
      return bad_value(what, text, "a duration like 250ms, 30s, 5m or 1h30m");
    v = INT64_MAX; /* too large: said below as the range */
    if (max_ms == INT64_MAX)
      return bad_value(what, text, "a duration that fits in 64-bit milliseconds");
  }
  if (v < min_ms) {
    snprintf(expected, sizeof expected, "a duration of at least %s",
             cli_fmt_duration(d, min_ms));
    return bad_value(what, text, expected);
  }
  if (v > max_ms) {
    snprintf(expected, sizeof expected, "a duration of at most %s",
             cli_fmt_duration(d, max_ms));
    return bad_value(what, text, expected);
  }
  *ms = v;
  return 0;
}

int cli_parse_size(const char *what, const char *text, int64_t min,
                   int64_t max, int64_t *bytes) {
  char expected[96];
  int64_t v;
  if (jobq_parse_size(text, &v) != JOBQ_OK)
    return bad_value(what, text, "a size like 1MiB, 512KiB or 1048576 (bytes)");
  if (v < min || v > max) {
    snprintf(expected, sizeof expected, "a size from %lld to %lld bytes",
             (long long)min, (long long)max);
    return bad_value(what, text, expected);
  }
  *bytes = v;
  return 0;
}

/* Reads exactly n digits at *p into *v. */
static int digits(const char **p, int n, int *v) {
  int r = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i])) return -1;
    r = r * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *v = r;
  return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : days[m - 1];
}

/* Fractional seconds after '.': the first three digits are kept. */
static int fraction(const char **p, int64_t *ms) {
  size_t n = strspn(*p, "0123456789");
  if (n == 0) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < 3; i++) v = v * 10 + (i < n ? (*p)[i] - '0' : 0);
  *p += n;
  *ms = v;
  return 0;
}

int cli_time_from_text(const char *text, int64_t *ms, const char **why) {
  static const char *const like =
      "a time like 2026-11-22T10:00:00Z, 2026-11-22T12:00:00.5+02:00 or "
      "@UNIXSECONDS";
  const char *p = text;
  int64_t frac = 0, secs;
  *why = like;
  if (*p == '@') {
    p++;
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 12) return -1;
    secs = 0;
    for (size_t i = 0; i < n; i++) secs = secs * 10 + (p[i] - '0');
    p += n;
    if (*p == '.' && (p++, fraction(&p, &frac) != 0)) return -1;
    if (*p != '\0') return -1;
  } else {
    int y, mo, d, h, mi, s = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d))
      return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi)) return -1;
    if (*p == ':' && (p++, digits(&p, 2, &s) != 0)) return -1;
    if (*p == '.' && (p++, fraction(&p, &frac) != 0)) return -1;
    int offset = 0;
    if (*p == 'Z' || *p == 'z') {
      p++;
    } else if (*p == '+' || *p == '-') {
      int sign = *p++ == '-' ? -1 : 1, oh, om;
      if (digits(&p, 2, &oh)) return -1;
      if (*p == ':') p++;
      if (digits(&p, 2, &om)) return -1;
      if (oh > 23 || om > 59) {
        *why = "a zone offset from -23:59 to +23:59";
        return -1;
      }
      offset = sign * (oh * 3600 + om * 60);
    } else if (*p == '\0') {
      *why = "a time zone at the end: Z (UTC) or an offset like +02:00";
      return -1;
    }
    if (*p != '\0') return -1;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
        h > 23 || mi > 59 || s > 60) {
      *why = "a real date and time of day from 1970 on";
      return -1;
    }
    secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
  }
  if (secs * 1000 + frac <= 0) {
    *why = "a time after 1970-01-01T00:00:00Z";
    return -1;
  }
  if (secs * 1000 + frac > JOBQ_TIME_MAX_MS) {
    *why = "a time up to 9999-12-31T23:59:59.999Z";
    return -1;
  }
  *ms = secs * 1000 + frac;
  return 0;
}

int cli_parse_time(const char *what, const char *text, int64_t *ms) {
  const char *why;
  if (cli_time_from_text(text, ms, &why) != 0) return bad_value(what, text, why);
  return 0;
}

int cli_check_queue(const char *what, const char *name) {
  if (jobq_check_queue(NULL, name) == JOBQ_OK) return 0;
  return bad_value(what, name,
                   "1 to 63 characters of a-z, 0-9, '_', '.', '-', starting "
                   "with a letter or digit");
}
