/*
 * util.h - what every jobq command shares besides options and output: the
 * global settings, the exit statuses and the mapping of library errors to
 * them, the one-line messages on stderr, opening the database, bounded
 * reading of outside input, and memory allocation that stops the program
 * when memory runs out.
 */
#ifndef JOBQ_CLI_UTIL_H
#define JOBQ_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobq.h"

enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_ERROR = 1,  /* the command failed (not found, database error) */
  CLI_EXIT_USAGE = 2,  /* bad usage or bad input: the same call fails again */
  CLI_EXIT_TEMP = 75   /* temporary failure (EX_TEMPFAIL): try again later */
};

/* The global options, wherever they were given on the command line. */
struct cli_global {
  const char *db;           /* --db; NULL: see cli_db_url() */
  const char *db_file;      /* --db-file */
  int json;                 /* --json */
  const char *max_payload;  /* --max-payload, as given */
};
extern struct cli_global cli_global;

/* The command messages are about ("put"), or NULL for the program. */
void cli_set_command(const char *name);
const char *cli_command_name(void);

/* Prints "jobq CMD: MESSAGE" (or "jobq: MESSAGE") and a newline on
 * stderr.  Messages are lower case, with no final period. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* strerror(err) starting in lower case, as messages do. */
const char *cli_strerror(int err);

/* The exit status for a library error code (0 for JOBQ_OK). */
int cli_exit_code(int err);
/* Of two exit statuses, the worse: usage (2) over error (1) over
 * temporary (75) over success; a temporary failure alone may go away. */
int cli_worst(int a, int b);
/* Prints jobq_errmsg(db) as a message and returns cli_exit_code(rc). */
int cli_lib_error(jobq *db, int rc);

/*
 * The database URL the global options and the environment name: --db,
 * else the first line of --db-file, else $JOBQ_DB, else the first line of
 * $JOBQ_DB_FILE, else the systemd credential jobq-db
 * ($CREDENTIALS_DIRECTORY/jobq-db), else sqlite:jobq.db.  A file that
 * cannot be read or holds no URL, or both --db and --db-file, stop the
 * program with a message and exit status 2.
 */
const char *cli_db_url(void);
/* Whether anything names the database (else it is sqlite:jobq.db). */
int cli_db_named(void);
/* Takes the password of --db URL out of the program's arguments, where
 * every user's `ps` shows them (the URL itself stays known to
 * cli_db_url()).  For a long-running command: call after its options are
 * parsed. */
void cli_hide_db_password(void);
/* Checks --max-payload; 0 or 2 after a message.  Commands that read a
 * payload call this before reading; cli_open() calls it too. */
int cli_check_max_payload(void);
/* The largest payload the database will take, for bounding input before
 * it is handed to the library: --max-payload, else the URL's max_payload
 * option, else the library default. */
size_t cli_payload_limit(void);

/*
 * Opens the database of the global options and applies --max-payload.
 * Returns 0 with *out set, or prints the library's message, closes the
 * handle and returns the exit status (*out is NULL).
 */
int cli_open(jobq **out);
/* The same for a command that only reads (jobq_open_readonly()): it
 * writes nothing, works on a read-only file or server, and refuses a
 * file that is no jobq database. */
int cli_open_readonly(jobq **out);

/* Reads all of f into a new buffer (*data, NUL-terminated; free()).
 * Returns 0, 1 when there are more than max bytes (nothing is kept), or
 * -1 with errno set on a read error. */
int cli_read_all(FILE *f, size_t max, char **data, size_t *len);

/* The text for a message: s with control characters escaped and cut
 * after 64 bytes with "...".  buf needs 300 bytes. */
#define CLI_QUOTE_BUF 300
const char *cli_quote(char *buf, const char *s);

/* malloc, realloc and strdup that stop the program with "out of memory"
 * (exit 1) instead of returning NULL. */
void *cli_xmalloc(size_t n);
void *cli_xrealloc(void *p, size_t n);
char *cli_xstrdup(const char *s);
/* Stops the program after an allocation failed elsewhere (jansson). */
void cli_oom(void) __attribute__((noreturn));

/* The database clock in Unix ms (jobq_identity_get); 0 or the exit status
 * after a message. */
int cli_db_now(jobq *db, int64_t *now_ms);

/*
 * For the commands that act on job ids one by one (retry, cancel): checks
 * every id first (nothing is done when one is not a positive integer),
 * opens the database, then calls act for each id in order.  act returns a
 * jobq error code and on success sets *word (JSON: "retried",
 * "cancel_requested") and *text (people: "retried", "cancel requested
 * (running)").  Prints "job ID TEXT" per id on stdout, or with --json
 * {"jobs":[{"id":ID,"status":WORD}, {"id":ID,"status":"error",
 * "error":MESSAGE}]}; each failure is also a message on stderr.  Returns
 * the worst exit status of all ids.
 */
typedef int (*cli_job_action)(jobq *db, int64_t id, const char **word,
                              const char **text);
int cli_each_job(int nids, char **ids, cli_job_action act);

#endif
