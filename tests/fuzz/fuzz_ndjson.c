/*
 * fuzz_ndjson.c - libFuzzer target for the input of `jobq put --ndjson`
 * (cli/ndjson.c): the input is read line by line as the command reads it
 * (blank lines skipped, lines bounded), and every line that is not blank
 * is parsed.  A line either becomes a job or gets a message; a job's
 * payload is within what its line could hold, and its fields are in the
 * ranges the line reader promises.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small, so that the fuzzer also meets lines over the limit. */
#define MAX_LINE 4096

static void one_line(const char *text, size_t len, const jobq_put_opts *base) {
  struct ndjson_job job;
  char err[512];
  err[0] = '\0';
  int rc = ndjson_parse(text, len, base, &job, err, sizeof err);
  if (rc == 0) {
    const jobq_put_opts *o = &job.opts;
    if (o->payload_len > len) abort();
    if (o->priority < JOBQ_PRIORITY_MIN || o->priority > JOBQ_PRIORITY_MAX) abort();
    if (o->delay_ms < 0 || o->delay_ms > JOBQ_DURATION_MAX_MS) abort();
    if (o->timeout_ms < 0 || o->timeout_ms > JOBQ_DURATION_MAX_MS) abort();
    if (o->backoff_ms < 0 || o->backoff_ms > JOBQ_BACKOFF_CAP_MS) abort();
    if (o->run_at_ms < 0 || o->run_at_ms > JOBQ_TIME_MAX_MS) abort();
    if (o->delay_ms > 0 && o->run_at_ms > 0) abort();
  } else if (err[0] == '\0' || strchr(err, '\n') != NULL) {
    abort(); /* a refusal always says why, on one line */
  }
  ndjson_job_release(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jobq_put_opts base;
  jobq_put_opts_init(&base);
  FILE *f = fmemopen(size > 0 ? (void *)data : (void *)"", size, "r");
  if (f == NULL) return 0;
  struct ndjson_reader in;
  ndjson_reader_init(&in, f, MAX_LINE);
  const char *text;
  size_t len;
  long last = 0;
  int got;
  while ((got = ndjson_next(&in, &text, &len)) > 0) {
    if (in.line <= last) abort(); /* lines are numbered in order */
    last = in.line;
    if (in.bytes > (int64_t)size) abort();
    if (got == 2) continue; /* too long: the command refuses it */
    if (len == 0 || len > MAX_LINE || text[len] != '\0') abort();
    if (strspn(text, " \t\r") == len && memchr(text, '\0', len) == NULL) abort();
    one_line(text, len, &base);
  }
  if (got < 0) abort();
  ndjson_reader_release(&in);
  fclose(f);
  return 0;
}
