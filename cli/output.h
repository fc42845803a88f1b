/*
 * output.h - how jobq commands show data: aligned tables on stdout (the
 * same whether or not stdout is a terminal, never coloured), one compact
 * JSON document per command with --json, times and durations for people,
 * payloads that may not be text, the shared shape of a job in tables and
 * JSON, and a progress bar on stderr for long work.
 */
#ifndef JOBQ_CLI_OUTPUT_H
#define JOBQ_CLI_OUTPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jobq.h"

/* ---------------------------------------------------------------- tables */

struct cli_column {
  const char *name;   /* the header, upper case */
  int right;          /* right-aligned (numbers) */
};

struct cli_table {
  const struct cli_column *cols;
  size_t ncols;
  char **cells;       /* row-major, ncols per row */
  size_t ncells, alloc;
};

void cli_table_init(struct cli_table *t, const struct cli_column *cols,
                    size_t ncols);
/* Appends the next cell (rows fill left to right, top to bottom). */
void cli_table_cell(struct cli_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints the header and the rows on stdout, columns two spaces apart, no
 * trailing spaces. */
void cli_table_print(const struct cli_table *t);
void cli_table_release(struct cli_table *t);

/* One "label  value" line of a record (show, init, epoch): the labels
 * padded to one column. */
void cli_field(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- JSON */

/* json_object() that stops the program when memory runs out. */
json_t *cli_json_object(void);
/* Prints "VERB N NOUNs" ("NOUN" when N is 1), or {"VERB":N} with --json:
 * the result of prune, reap, retry --dead. */
void cli_print_count(const char *verb, int64_t n, const char *noun);
/* The outcome of a command that works in parts, one transaction each
 * ("pruned", 120 jobs): the count as cli_print_count() prints it; after
 * a library error rc, the error and, when some parts went through, how
 * many on stderr.  Returns the exit status. */
int cli_print_parts(jobq *db, int rc, const char *verb, int64_t n, const char *noun);
/* The outcome of a command over many jobs (purge, prune, cancel
 * --queue): as cli_print_parts() ("purged", 120), or "would VERB N jobs"
 * for a dry run (verb: "purge"), with --json {"purged":N,"dry_run":B};
 * nothing on success when quiet. */
int cli_print_bulk(jobq *db, int rc, int quiet, int dry_run, const char *done,
                   const char *verb, int64_t n);
/* Prints doc compact, newline-terminated, on stdout and frees it. */
void cli_json_print(json_t *doc);
/* json_object_set_new() that stops the program when memory runs out. */
void cli_json_set(json_t *obj, const char *key, json_t *value);
/* A string, or null when s is NULL. */
json_t *cli_json_str(const char *s);
/* An RFC 3339 time, or null when ms is 0. */
json_t *cli_json_time(int64_t ms);
/* Sets key to the bytes as a string when they are valid UTF-8 without
 * NUL, else key_base64 to their base64; key is null when data is NULL. */
void cli_json_bytes(json_t *obj, const char *key, const void *data,
                    size_t len);

/* ---------------------------------------------------------------- times */

#define CLI_TIME_BUF 32
/* "2026-11-22T10:00:00.000Z" (RFC 3339, UTC, milliseconds). */
const char *cli_fmt_time(char *buf, int64_t ms);
/* An exact duration: "250ms", "30s", "1m30s", "1h", "1d2h"; "0s". */
const char *cli_fmt_duration(char *buf, int64_t ms);
/* A rough one for ages: the largest whole unit ("3s", "2m", "5h", "2d"),
 * "0s" under a second. */
const char *cli_fmt_age(char *buf, int64_t ms);
/* "in 2m" when at is after now, "3s ago" otherwise. */
const char *cli_fmt_relative(char *buf, int64_t at_ms, int64_t now_ms);

/* ---------------------------------------------------------------- bytes */

/* Valid UTF-8 (no overlongs, no surrogates). */
int cli_utf8_valid(const void *data, size_t len);
/* The length of the valid UTF-8 sequence at p (n bytes left), or 0. */
size_t cli_utf8_seq(const unsigned char *p, size_t n);
/* Valid UTF-8 without control characters (NUL, newline, DEL, ...). */
int cli_is_plain_text(const void *data, size_t len);
/* Control characters, backslashes and invalid UTF-8 bytes escaped as \n,
 * \t, \r, \\ and \xHH.  Caller frees. */
char *cli_escape(const void *data, size_t len);
/* Cuts s in place to at most max characters, the last three "...";
 * max 0 leaves it whole. */
void cli_cut(char *s, size_t max);
/* cli_escape() of a C string, or a copy of if_null when s is NULL. */
char *cli_escape_str(const char *s, const char *if_null);
/* Standard base64 with padding (common/base64.h), NUL-terminated.
 * Caller frees. */
char *cli_base64(const void *data, size_t len);

/* ---------------------------------------------------------------- jobs */

/* A job's state as shown: jobq_state_name(), or "scheduled" for a ready
 * job whose run_at is after now_ms (the database clock). */
const char *cli_job_state(const jobq_job_info *job, int64_t now_ms);
/* The job as a JSON object (every field; payload and result only when
 * bodies is set). */
json_t *cli_job_json(const jobq_job_info *job, int64_t now_ms, int bodies);

/* The database's identity (init, epoch): the database URL (redacted),
 * queue id, epoch, job sequence, schema version and database clock, as
 * fields or as one JSON object. */
void cli_print_identity(const jobq_identity *id);

/* ---------------------------------------------------------------- terminal */

int cli_stdout_is_tty(void);
/* The width of the terminal on stdout, or 0 when it is not one. */
int cli_term_width(void);

/* A progress bar on stderr, drawn only when it has a label and stderr is
 * a terminal, and at most ten times a second. */
struct cli_progress {
  int on;
  const char *label;  /* "jobq put:" */
  const char *unit;   /* what items counts: "jobs" */
  int64_t total;      /* bytes expected, or 0 when unknown */
  double last;        /* when it was last drawn (monotonic seconds) */
};
void cli_progress_start(struct cli_progress *p, const char *label,
                        const char *unit, int64_t total);
/* done: bytes of total so far; items: how many units. */
void cli_progress_update(struct cli_progress *p, int64_t done, int64_t items);
/* Erases the bar. */
void cli_progress_end(struct cli_progress *p);
/* For a command over many jobs (purge, prune, cancel --queue): on a
 * terminal (stderr), unless quiet, --json or a dry run, counts the jobs
 * with count (the call itself, given o with dry_run set, and arg) and
 * makes o draw bar, labelled label, as the call reports its parts. */
void cli_progress_bulk(jobq *db, jobq_bulk_opts *o, int quiet, struct cli_progress *bar,
                       const char *label,
                       int (*count)(jobq *, const jobq_bulk_opts *, int64_t *, void *),
                       void *arg);
/* Erases any bar on the screen, so that a message starts on a clean
 * line (cli_error does this). */
void cli_progress_erase(void);

#endif
