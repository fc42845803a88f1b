/*
 * fuzz_ndjson.c - libFuzzer target for one line of `jobq put --ndjson`
 * (cli/ndjson.c).  A line either becomes a job or gets a message; a job's
 * payload is within what the line could hold, and its fields are in the
 * ranges the line reader promises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jobq_put_opts base;
  jobq_put_opts_init(&base);
  struct ndjson_job job;
  char err[512];
  err[0] = '\0';
  int rc = ndjson_parse((const char *)data, size, &base, &job, err, sizeof err);
  if (rc == 0) {
    if (job.opts.payload_len > size) abort();
    if (job.opts.priority < JOBQ_PRIORITY_MIN || job.opts.priority > JOBQ_PRIORITY_MAX)
      abort();
    if (job.opts.delay_ms < 0 || job.opts.timeout_ms < 0 || job.opts.backoff_ms < 0)
      abort();
  } else if (err[0] == '\0') {
    abort(); /* a refusal always says why */
  }
  ndjson_job_release(&job);
  return 0;
}
