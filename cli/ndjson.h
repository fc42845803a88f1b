/*
 * ndjson.h - parsing one line of `jobq put --ndjson` into a job
 * (cli/ndjson.c).
 */
#ifndef JOBQ_CLI_NDJSON_H
#define JOBQ_CLI_NDJSON_H

#include <jansson.h>
#include <stddef.h>

#include "jobq.h"

/* A parsed line: its options, whose strings point into json; a payload
 * given in base64 is decoded into decoded. */
struct ndjson_job {
  jobq_put_opts opts;
  json_t *json;
  char *decoded;
};

/* Parses len bytes of text (one line, without its newline) into job, on
 * top of the defaults in base.  Returns 0, or -1 with a one-line message
 * in err (errlen bytes; it names the field and what is expected).  Either
 * way, release job with ndjson_job_release(). */
int ndjson_parse(const char *text, size_t len, const jobq_put_opts *base,
                 struct ndjson_job *job, char *err, size_t errlen);
void ndjson_job_release(struct ndjson_job *job);

#endif
