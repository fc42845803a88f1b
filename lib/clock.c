/*
 * clock.c - the monotonic clock, for intervals that a change of the
 * wall clock must not stretch or cut short.
 */
#include <time.h>

#include "internal.h"

int64_t jobq__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
