/*
 * fuzz_cron.c - libFuzzer target for the schedules of periodic jobs
 * (jobq_cron_next): the first byte picks a zone (with and without
 * daylight saving, half-hour offsets), the next eight a time, the rest is
 * the spec.  A spec that parses gives a slot after the time and within
 * the range of times, the slot after it is later still, and the slot
 * after just before a slot is that slot; a refused one says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const zones[] = {"UTC", "America/New_York", "Europe/Berlin",
                                    "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham",
                                    "America/Santiago", "Mars/Olympus"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 9) return 0;
  static jobq *msgs;
  if (msgs == NULL) jobq_open("none:", &msgs); /* a handle only for messages */
  const char *tz = zones[data[0] % (sizeof zones / sizeof zones[0])];
  uint64_t t = 0;
  memcpy(&t, data + 1, 8);
  int64_t after = (int64_t)(t % (uint64_t)(JOBQ_TIME_MAX_MS - 400LL * 86400000));
  char *spec = malloc(size - 9 + 1);
  if (spec == NULL) return 0;
  memcpy(spec, data + 9, size - 9);
  spec[size - 9] = '\0';
  int64_t next = 0, again = 0, same = 0;
  int rc = jobq_cron_next(msgs, spec, tz, after, &next);
  if (rc != JOBQ_OK) {
    if (rc != JOBQ_EINVAL || jobq_errmsg(msgs)[0] == '\0') abort();
  } else {
    if (next <= after || next > JOBQ_TIME_MAX_MS) abort();
    if (jobq_cron_next(msgs, spec, tz, next, &again) == JOBQ_OK && again <= next) abort();
    if (jobq_cron_next(msgs, spec, tz, next - 1, &same) != JOBQ_OK || same != next) abort();
  }
  free(spec);
  return 0;
}
