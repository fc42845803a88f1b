/*
 * fuzz_protocol.c - libFuzzer target for the persistent workers' line
 * protocol (foreman/proto.c): the foreman parses every line a worker
 * writes, and a worker can write anything.  A line is either a reply
 * whose data fits the limit, or refused with a reason; a job line the
 * foreman writes for any job parses back as that job's fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fm_reply r;
  char why[256];
  why[0] = '\0';
  const size_t max = 4096;
  if (fm_proto_reply((const char *)data, size, max, &r, why, sizeof why) == 0) {
    if (r.len > max) abort();
    if (r.kind < FM_REPLY_DONE || r.kind > FM_REPLY_RETRY) abort();
    free(r.data);
  } else if (why[0] == '\0') {
    abort(); /* a refusal always says why */
  }
  (void)fm_proto_ready((const char *)data, size);
  /* Any bytes make a job line that is one printable line. */
  jobq_job job;
  memset(&job, 0, sizeof job);
  job.id = 7;
  job.queue = "q";
  job.payload = (void *)data;
  job.payload_len = size;
  job.attempt = 1;
  size_t len = 0;
  char *line = fm_proto_job(&job, &len);
  if (line != NULL) {
    for (size_t i = 0; i + 1 < len; i++)
      if (line[i] < 0x20 || line[i] > 0x7e) abort();
    free(line);
  }
  return 0;
}
