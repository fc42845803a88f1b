/*
 * parse.c - the small text formats every interface shares: durations
 * ("250ms", "30s", "1m30s"), rate limits ("100/1s") and sizes ("512KiB",
 * "1MiB").
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int jobq_parse_duration(const char *text, int64_t *ms) {
  static const struct {
    const char *unit;
    int64_t ms;
  } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
               {"d", 86400000}};
  if (text == NULL || *text == '\0') return JOBQ_EINVAL;
  /* Zero is zero in any unit: the one number that needs none. */
  if (strcmp(text, "0") == 0) {
    *ms = 0;
    return JOBQ_OK;
  }
  const char *p = text;
  int64_t total = 0;
  while (*p != '\0') {
    if (!isdigit((unsigned char)*p)) return JOBQ_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno == ERANGE || v > INT64_MAX) return JOBQ_EINVAL;
    int64_t mult = 0;
    size_t ulen = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
      size_t n = strlen(units[i].unit);
      /* "m" must not swallow the "m" of "ms". */
      if (strncmp(end, units[i].unit, n) == 0 && n > ulen &&
          !(n == 1 && end[0] == 'm' && end[1] == 's')) {
        mult = units[i].ms;
        ulen = n;
      }
    }
    if (mult == 0) return JOBQ_EINVAL;
    if ((int64_t)v > (INT64_MAX - total) / mult) return JOBQ_EINVAL;
    total += (int64_t)v * mult;
    p = end + ulen;
  }
  *ms = total;
  return JOBQ_OK;
}

int jobq_parse_rate(const char *text, int64_t *count, int64_t *period_ms) {
  if (text == NULL || !isdigit((unsigned char)text[0])) return JOBQ_EINVAL;
  errno = 0;
  char *slash;
  unsigned long long n = strtoull(text, &slash, 10);
  if (errno == ERANGE || *slash != '/' || n < 1 || n > JOBQ_LIMIT_MAX) return JOBQ_EINVAL;
  const char *p = slash + 1;
  char period[32];
  /* "100/s" reads as 100/1s. */
  if (strlen(p) + 2 > sizeof period) return JOBQ_EINVAL;
  snprintf(period, sizeof period, "%s%s", isdigit((unsigned char)p[0]) ? "" : "1", p);
  int64_t ms;
  if (jobq_parse_duration(period, &ms) != JOBQ_OK || ms < 1 || ms > JOBQ_LIMIT_PERIOD_MAX)
    return JOBQ_EINVAL;
  *count = (int64_t)n;
  *period_ms = ms;
  return JOBQ_OK;
}

int jobq_parse_size(const char *text, int64_t *bytes) {
  static const struct {
    const char *unit;
    int64_t mult;
  } units[] = {{"", 1},          {"B", 1},
               {"KiB", 1024},    {"MiB", 1024 * 1024},
               {"GiB", 1024LL * 1024 * 1024},
               {"KB", 1000},     {"MB", 1000 * 1000},
               {"GB", 1000LL * 1000 * 1000},
               {"k", 1024},      {"K", 1024},
               {"M", 1024 * 1024}, {"G", 1024LL * 1024 * 1024}};
  if (text == NULL || !isdigit((unsigned char)*text)) return JOBQ_EINVAL;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno == ERANGE || v > INT64_MAX) return JOBQ_EINVAL;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(end, units[i].unit) == 0) {
      if ((int64_t)v > INT64_MAX / units[i].mult) return JOBQ_EINVAL;
      *bytes = (int64_t)v * units[i].mult;
      return JOBQ_OK;
    }
  }
  return JOBQ_EINVAL;
}
