/*
 * ndjson.h - the input of `jobq put --ndjson` (cli/ndjson.c): read a line
 * at a time, blank lines skipped, and each line parsed into a job.
 */
#ifndef JOBQ_CLI_NDJSON_H
#define JOBQ_CLI_NDJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobq.h"

/* A parsed line: its options, whose strings point into json; a payload
 * given in base64 is decoded into decoded.  opts.after is after (room
 * for n_after ids and the places of after_index besides), and
 * opts.after_index is after_index: places of earlier jobs of the input,
 * from 0, which the command turns into ids or places in its batch. */
struct ndjson_job {
  jobq_put_opts opts;
  json_t *json;
  char *decoded;
  int64_t *after;
  size_t *after_index;
};

/* Parses len bytes of text (one line, without its newline) into job, on
 * top of the defaults in base.  Returns 0, or -1 with a one-line message
 * in err (errlen bytes; it names the field and what is expected).  Either
 * way, release job with ndjson_job_release(). */
int ndjson_parse(const char *text, size_t len, const jobq_put_opts *base,
                 struct ndjson_job *job, char *err, size_t errlen);
void ndjson_job_release(struct ndjson_job *job);

/* Reads NDJSON from f a line at a time.  A line ends at a newline or at
 * the end of the input; one that holds nothing but spaces, tabs and
 * carriage returns is blank and skipped, wherever it is. */
struct ndjson_reader {
  FILE *f;
  size_t max;      /* the longest line, in bytes */
  char *buf;       /* the last line, NUL-terminated */
  size_t cap;
  long line;       /* the number of the last line read, from 1 */
  int64_t bytes;   /* bytes read so far, newlines included */
};

void ndjson_reader_init(struct ndjson_reader *r, FILE *f, size_t max);
/* The next line that is not blank, without its newline: 1 with *text
 * (valid until the next call) and *len; 0 at the end of the input; 2 for
 * a line longer than max bytes (the rest of it is read and dropped); -1
 * on a read error (errno says which).  r->line is that line's number. */
int ndjson_next(struct ndjson_reader *r, const char **text, size_t *len);
/* Frees the line buffer; f stays open. */
void ndjson_reader_release(struct ndjson_reader *r);

#endif
