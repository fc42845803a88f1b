/*
 * fuzz_duration.c - libFuzzer target for the small text formats every
 * interface shares: durations ("1m30s"), sizes ("512KiB") and times
 * ("2026-11-22T10:00:00Z", "@1795000000").  A value that parses must be
 * sane: a duration or a size is never negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobq.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  int64_t v;
  if (jobq_parse_duration(text, &v) == JOBQ_OK && v < 0) abort();
  if (jobq_parse_size(text, &v) == JOBQ_OK && v < 0) abort();
  const char *why;
  (void)cli_time_from_text(text, &v, &why);
  free(text);
  return 0;
}
